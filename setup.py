"""Compile the modules mutagrad._compiled lists with Cython, where it can (pyproject.toml holds
everything else about the package).

Each compiled module is optional: without Cython, without a C compiler, where a module
fails to compile, or with ``MUTAGRAD_PURE=1`` in the environment, the package is the same
plain Python. ``make test`` rebuilds in place what changed (``setup.py build_ext --inplace``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

SOURCE = Path(__file__).parent / "src"
# Written beside the compiled modules: the digest of each one's source as it was compiled
# (mutagrad._compiled loads a compiled module only while its .py still has that digest).
RECORD = "_compiled_sources.json"
DIGESTS: dict[str, str] = {}  # each module's source digest, taken before it is translated


def source_digest(path: str | Path) -> str:
    """What mutagrad._compiled.source_digest computes (the same function, spelled out)."""
    return hashlib.blake2b(Path(path).read_bytes(), digest_size=16).hexdigest()


def compiled_modules() -> list[str]:
    """mutagrad._compiled.MODULES, read without importing the package."""
    tree = ast.parse((SOURCE / "mutagrad" / "_compiled.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "MODULES" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise RuntimeError("mutagrad/_compiled.py has no MODULES")


def extensions() -> list:
    if os.environ.get("MUTAGRAD_PURE", "") not in ("", "0"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    names = compiled_modules()
    sources = [str(Path("src", *name.split("."))) + ".py" for name in names]
    recorded = _recorded()
    for name, source in zip(names, sources, strict=True):
        DIGESTS[name] = source_digest(source)
        if recorded.get(name) != DIGESTS[name]:
            # Cythonize translates a source again only if it is newer than its C file: a
            # source that changed but is not newer (an older file copied back) would keep
            # the old translation.
            Path(source).with_suffix(".c").unlink(missing_ok=True)
    built = cythonize(
        sources,
        # binding: compiled functions keep their names, signatures and docstrings. No typing
        # from annotations: a compiled module behaves exactly as its source (`x: float`
        # would otherwise turn a numpy float64 into a Python float).
        compiler_directives={"language_level": 3, "binding": True, "annotation_typing": False},
        nthreads=os.cpu_count() or 1,
        quiet=True,
    )
    for extension in built:
        extension.optional = True  # (a module that fails to compile stays plain Python)
    return built


def _recorded() -> dict[str, str]:
    """The digests the last build in place recorded."""
    try:
        return json.loads((SOURCE / "mutagrad" / RECORD).read_text())
    except (OSError, ValueError):
        return {}


class BuildRecordingSources(build_ext):
    """build_ext that records, for each module it built or found up to date, its source's
    digest; a module that failed to compile (optional) is left out, so it loads as source."""

    def run(self) -> None:
        self.compiled_sources: dict[str, str] = {}
        super().run()
        package = os.path.join("src" if self.inplace else self.build_lib, "mutagrad")
        if self.extensions and os.path.isdir(package):
            with open(os.path.join(package, RECORD), "w") as out:
                json.dump(dict(sorted(self.compiled_sources.items())), out, indent=1)

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        super().build_extension(ext)  # (raises where it fails: then nothing is recorded)
        self.compiled_sources[ext.name] = DIGESTS[ext.name]


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildRecordingSources})
