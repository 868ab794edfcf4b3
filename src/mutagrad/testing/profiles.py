"""Hypothesis profiles for suites that test code differentiated with mutagrad: ci, dev, thorough.

:func:`register_profiles` registers them; the pytest plugin mutagrad installs
(:mod:`mutagrad.testing.pytest_plugin`) does so when pytest starts, so
``pytest --hypothesis-profile=dev`` works in any suite:

* ``ci`` – 25 examples per test, derandomized: CI, bounded and reproducible;
* ``dev`` – 200, random: more exploration while developing;
* ``thorough`` – 5,000, random: a run before a release (minutes).

None has a deadline: a gradient call traces the function, and its first
call is slower than the next (imports, caches). ``ci`` and ``thorough`` do
not fail a test for drawing slowly or much data (hypothesis' ``too_slow`` and
``data_too_large`` health checks): a program strategy draws a lot by design.
None runs hypothesis' *explain* phase: it lists the lines "always and only
run by failing test cases", and when a check of mutagrad.testing fails those
are the lines that build its report, never the user's; the report itself
says what differs.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PROFILES", "register_profiles"]


def _profiles() -> dict[str, dict[str, Any]]:
    from hypothesis import HealthCheck, Phase

    phases = tuple(phase for phase in Phase if phase is not Phase.explain)
    slow_or_large = [HealthCheck.too_slow, HealthCheck.data_too_large]
    return {
        "ci": {
            "max_examples": 25,
            "derandomize": True,
            "deadline": None,
            "suppress_health_check": slow_or_large,
            "phases": phases,
        },
        "dev": {"max_examples": 200, "deadline": None, "phases": phases},
        "thorough": {
            "max_examples": 5000,
            "deadline": None,
            "suppress_health_check": slow_or_large,
            "phases": phases,
        },
    }


#: The profiles' names; :func:`register_profiles` gives each its settings.
PROFILES = ("ci", "dev", "thorough")


def register_profiles() -> tuple[str, ...]:
    """Register the profiles ``ci``, ``dev`` and ``thorough`` with hypothesis; return their names.

    Load one with ``settings.load_profile("ci")``, or ``pytest --hypothesis-profile=ci``.
    A profile of the same name registered later (in a conftest.py) replaces it.
    """
    from hypothesis import settings

    # Built on hypothesis' defaults, not on whatever profile is loaded when this runs.
    default = settings.get_profile("default")
    for name, options in _profiles().items():
        settings.register_profile(name, parent=default, **options)
    return PROFILES
