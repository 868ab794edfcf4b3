"""The pytest plugin mutagrad installs (entry point ``pytest11``: ``mutagrad``).

It registers mutagrad's hypothesis profiles (:mod:`mutagrad.testing.profiles`)
as pytest starts, before hypothesis' own plugin reads
``--hypothesis-profile``, so ``pytest --hypothesis-profile=ci`` (or ``dev``,
``thorough``) works in any suite of a project that installs mutagrad.
Without hypothesis installed it does nothing.
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401
except ModuleNotFoundError:  # nothing to register profiles with
    pass
else:
    from mutagrad.testing.profiles import register_profiles

    register_profiles()
