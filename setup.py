"""Compile the modules mutagrad._compiled lists with Cython, where it can (pyproject.toml holds
everything else about the package).

Each compiled module is optional: without Cython, without a C compiler, where a module
fails to compile, or with ``MUTAGRAD_PURE=1`` in the environment, the package is the same
plain Python. ``make test`` rebuilds in place what changed (``setup.py build_ext --inplace``).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from setuptools import setup

SOURCE = Path(__file__).parent / "src"


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
    sources = [str(Path("src", *name.split("."))) + ".py" for name in compiled_modules()]
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


setup(ext_modules=extensions())
