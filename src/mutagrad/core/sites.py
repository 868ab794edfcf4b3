"""Source locations in the user's code.

Errors must point at the user's line, not at mutagrad's or numpy's internals.
:func:`user_site` walks outward from the caller's frame, skipping frames whose
code lives in mutagrad's engine, its rules or numpy, and returns a cheap
``(code, lineno)`` pair; :func:`describe_site` turns one into ``file:line`` and
the source text when a message needs it.
"""

from __future__ import annotations

import linecache
import os
import sys
from types import CodeType, TracebackType

import numpy

Site = tuple[CodeType, int]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Modules whose frames are machinery, never the user's code. mutagrad.testing,
# the report corpus and the examples are user code as far as sites are concerned.
_INTERNAL_PREFIXES = (
    os.path.join(_PACKAGE_DIR, "core") + os.sep,
    os.path.join(_PACKAGE_DIR, "rules") + os.sep,
    os.path.join(_PACKAGE_DIR, "api.py"),
    os.path.join(_PACKAGE_DIR, "numpy.py"),
    os.path.join(_PACKAGE_DIR, "buffer.py"),
    os.path.join(_PACKAGE_DIR, "higher.py"),
    os.path.join(_PACKAGE_DIR, "params.py"),
    os.path.join(_PACKAGE_DIR, "control.py"),
    os.path.dirname(os.path.abspath(numpy.__file__)) + os.sep,
    "<__array_function__",
)
_is_internal_code: dict[CodeType, bool] = {}


def user_site(depth: int = 2) -> Site | None:
    """Return ``(code, lineno)`` of the innermost frame outside mutagrad and numpy."""
    frame = sys._getframe(depth)
    while frame is not None:
        code = frame.f_code
        internal = _is_internal_code.get(code)
        if internal is None:
            internal = code.co_filename.startswith(_INTERNAL_PREFIXES)
            _is_internal_code[code] = internal
        if not internal:
            return code, frame.f_lineno
        frame = frame.f_back
    return None


def innermost_user_site(traceback: TracebackType | None) -> Site | None:
    """The deepest frame of ``traceback`` in the user's code: where an error was raised."""
    found = None
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if not code.co_filename.startswith(_INTERNAL_PREFIXES):
            found = (code, traceback.tb_lineno)
        traceback = traceback.tb_next
    return found


def describe_site(site: Site | None) -> str:
    """``file:line (in function)``, or a placeholder when no user frame was found."""
    if site is None:
        return "<unknown location>"
    code, lineno = site
    return f"{code.co_filename}:{lineno} (in {code.co_name})"


def source_line(site: Site | None) -> str:
    """The stripped source text at ``site``, or an empty string."""
    if site is None:
        return ""
    code, lineno = site
    return linecache.getline(code.co_filename, lineno).strip()


def format_site(site: Site | None, indent: str = "    ") -> str:
    """``file:line`` followed by the source line, for error messages."""
    text = source_line(site)
    where = describe_site(site)
    return f"{indent}{where}\n{indent}    {text}" if text else f"{indent}{where}"
