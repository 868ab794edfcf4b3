"""Source locations in the user's code.

Errors must point at the user's line, not at mutagrad's or numpy's internals.
:func:`user_site` walks outward from the caller's frame, skipping frames whose
code lives in mutagrad's engine, its rules or numpy, and returns a cheap
``(code, offset)`` pair (the bytecode offset of the call being made: every
recorded operation stores one, and turning an offset into a line number walks
the code's line table, so that waits until a message needs it);
:func:`site_line` gives the line, :func:`describe_site` ``file:line`` and
:func:`source_line` the source text.
"""

from __future__ import annotations

import linecache
import os
import sys
from types import CodeType, FrameType, TracebackType

import numpy

Site = tuple[CodeType, int]  # (code, bytecode offset)

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
# Code already classified: machinery (skipped by the walk), or the user's,
# with bytecode offset -> its site. A loop records the same few sites
# thousands of times; every node shares one tuple per call site.
_internal_code: set[CodeType] = set()
_user_sites: dict[CodeType, dict[int, Site]] = {}


def user_site(depth: int = 2) -> Site | None:
    """Return ``(code, offset)`` of the innermost frame outside mutagrad and numpy."""
    return user_site_from(sys._getframe(depth))


def user_site_from(frame: FrameType | None) -> Site | None:
    """:func:`user_site` starting at ``frame``: cheapest when that is the user's frame."""
    while frame is not None:
        code = frame.f_code
        sites = _user_sites.get(code)
        if sites is None and code not in _internal_code:
            sites = _classify(code)
        if sites is not None:
            offset = frame.f_lasti
            site = sites.get(offset)
            if site is None:
                site = sites[offset] = (code, offset)
            return site
        frame = frame.f_back
    return None


def _classify(code: CodeType) -> dict[int, Site] | None:
    """Remember whether ``code`` is machinery; the user's code gets its table of sites."""
    if code.co_filename.startswith(_INTERNAL_PREFIXES):
        _internal_code.add(code)
        return None
    return _user_sites.setdefault(code, {})


def site_line(site: Site | None) -> int | None:
    """The line number of ``site``."""
    if site is None:
        return None
    code, offset = site
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line
    return code.co_firstlineno


def innermost_user_site(traceback: TracebackType | None) -> Site | None:
    """The deepest frame of ``traceback`` in the user's code: where an error was raised."""
    found = None
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if not code.co_filename.startswith(_INTERNAL_PREFIXES):
            found = (code, traceback.tb_lasti)
        traceback = traceback.tb_next
    return found


def describe_site(site: Site | None) -> str:
    """``file:line (in function)``, or a placeholder when no user frame was found."""
    if site is None:
        return "<unknown location>"
    code = site[0]
    return f"{code.co_filename}:{site_line(site)} (in {code.co_name})"


def source_line(site: Site | None) -> str:
    """The stripped source text at ``site``, or an empty string."""
    if site is None:
        return ""
    line = site_line(site)
    return linecache.getline(site[0].co_filename, line).strip() if line is not None else ""


def format_site(site: Site | None, indent: str = "    ") -> str:
    """``file:line`` followed by the source line, for error messages."""
    text = source_line(site)
    where = describe_site(site)
    return f"{indent}{where}\n{indent}    {text}" if text else f"{indent}{where}"
