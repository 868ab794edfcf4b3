"""Which of mutagrad's modules are compiled with Cython, and when a compiled copy may load.

The modules listed in :data:`MODULES` are plain Python, compiled as they are
by ``setup.py`` (Cython, at install): the ``.py`` file is the only source, and
every module runs the same without its compiled copy. Compiling removes the
interpreter's dispatch from the per-call and per-operation paths (issue 25:
about a quarter of the instructions of a small gradient call).

A compiled copy sits beside its source (an editable install builds in place),
and Python's import prefers it. The build records the digest of each source it
compiled (``_compiled_sources.json``, beside them). :func:`install` makes import
take the source instead where

* the environment sets ``MUTAGRAD_PURE=1`` (the fallback, tested in CI), or
* the ``.py`` file's digest is not the one recorded (edited since the build,
  or never compiled by it): the code that runs is always the code on disk.

(Digests, not modification times: installing a wheel gives every file the
time it was unpacked, in any order.)

Not compiled, on purpose: the modules that reason about the interpreter's own
frames and reference counts (``freezing``, ``traced.elision``,
``diagnostics.tracebacks``, ``traced.value``'s conversions, ``errors``). A
compiled function has no Python frame and holds its references in C, so the
counts those proofs were calibrated on would not hold there.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from types import ModuleType

# The modules on the per-call and per-operation paths, by their dotted names.
MODULES = (
    "mutagrad.buffer",
    "mutagrad.call",
    "mutagrad.core.engine",
    "mutagrad.core.memory",
    "mutagrad.core.modes",
    "mutagrad.core.record",
    "mutagrad.core.regions",
    "mutagrad.core.registry",
    "mutagrad.core.trees",
    "mutagrad.diagnostics.sites",
    "mutagrad.rules.reductions",
    "mutagrad.rules.ufuncs",
    "mutagrad.traced.dispatch",
    "mutagrad.traced.flat",
    "mutagrad.traced.indexing",
    "mutagrad.traced.methods",
    "mutagrad.traced.mutation",
    "mutagrad.zygote",
)

# Where the build records the digest of each source it compiled (setup.py writes it).
RECORD = "_compiled_sources.json"

# The file name a compiled module's traceback entries carry (Cython's, relative).
SOURCE_NAMES = frozenset(name.replace(".", "/") + ".py" for name in MODULES)

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def source_path(name: str) -> str:
    """The ``.py`` file of module ``name``."""
    return os.path.join(_ROOT, *name.split(".")) + ".py"


def _compiled_path(name: str) -> str | None:
    """The compiled copy of module ``name`` for this interpreter, if one was built."""
    stem = os.path.join(_ROOT, *name.split("."))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if os.path.exists(stem + suffix):
            return stem + suffix
    return None


def source_digest(path: str) -> str:
    """The digest of a source file the build records (setup.py computes the same)."""
    with open(path, "rb") as source:
        return hashlib.blake2b(source.read(), digest_size=16).hexdigest()


def _recorded() -> dict[str, str]:
    """The digests of the sources the build compiled (none where nothing was built)."""
    try:
        with open(os.path.join(_ROOT, "mutagrad", RECORD)) as record:
            return dict(json.load(record))
    except (OSError, ValueError):
        return {}


def _sources_to_load(pure: bool) -> dict[str, str]:
    """The modules whose source import must take: all with a compiled copy where ``pure``,
    else those whose source is not the one the build compiled."""
    chosen = {}
    recorded = None
    for name in MODULES:
        if _compiled_path(name) is None:
            continue
        source = source_path(name)
        if not pure:
            if recorded is None:
                recorded = _recorded()
            if recorded.get(name) == source_digest(source):
                continue
        chosen[name] = source
    return chosen


class _SourceFirst:
    """A finder ahead of Python's own: the source of the modules in ``sources``."""

    def __init__(self, sources: dict[str, str]):
        self.sources = sources

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        source = self.sources.get(name)
        return importlib.util.spec_from_file_location(name, source) if source else None


def install() -> None:
    """Make import take the source where a compiled copy is stale or ``MUTAGRAD_PURE=1``
    (done when this module is imported: ``mutagrad/__init__.py`` imports it first)."""
    sources = _sources_to_load(os.environ.get("MUTAGRAD_PURE", "") not in ("", "0"))
    if sources:
        sys.meta_path.insert(0, _SourceFirst(sources))


def loaded() -> dict[str, bool]:
    """Whether each compiled-able module that is imported runs compiled."""
    return {
        name: not (module.__file__ or "").endswith(".py")
        for name in MODULES
        if (module := sys.modules.get(name)) is not None
    }


install()
