"""Source locations in the user's code.

Errors must point at the user's line, not at mutagrad's or numpy's internals.
:func:`user_site` walks outward from the caller's frame, skipping frames whose
code lives in mutagrad's engine, its rules or numpy, and returns a cheap
``(code, offset)`` pair (the bytecode offset of the call being made: every
recorded operation stores one, and turning an offset into a line number walks
the code's line table, so that waits until a message needs it);
:func:`site_line` gives the line, :func:`describe_site` ``file:line`` and
:func:`source_line` the source text; :func:`expression_at` parses the
expression a site records, for the modules that read the user's code
(:mod:`~mutagrad.diagnostics.rewrites`, :mod:`~mutagrad.diagnostics.conversions`),
and :func:`writes_by_setitem_call` says whether it is a write spelled as a call.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import linecache
import os
import sys
import tokenize
from itertools import islice
from types import CodeType, FrameType, TracebackType

import numpy

Site = tuple[CodeType, int]  # (code, bytecode offset)

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _library_dirs(name: str) -> list[str]:
    """Where an installed library's code lives, found without importing it (SciPy: an
    error raised inside its code names the user's call into it)."""
    spec = importlib.util.find_spec(name)
    locations = spec.submodule_search_locations if spec is not None else None
    return [os.path.abspath(d) + os.sep for d in locations or ()]

def _package_modules() -> list[str]:
    """mutagrad's own modules and packages, but for the tools that run the user's code:
    a module added to the package is machinery without being listed anywhere."""
    found = []
    for entry in sorted(os.listdir(_PACKAGE_DIR)):
        path = os.path.join(_PACKAGE_DIR, entry)
        if entry in _USER_FACING:
            continue
        if os.path.isdir(path) and os.path.exists(os.path.join(path, "__init__.py")):
            found.append(path + os.sep)
        elif entry.endswith(".py"):
            found.append(path)
    return found


# mutagrad.testing and the report (its corpus runs the user's programs) are user code as
# far as sites are concerned, and so are the examples; everything else in the package is
# machinery. custom.py is too: a function with a custom rule is called from the user's
# line through custom.py's wrappers, and that line is the site.
_USER_FACING = ("testing", "report")
# Where frames are machinery, never the user's code: the package, numpy, SciPy.
_INTERNAL_PREFIXES = (
    *_package_modules(),
    os.path.dirname(os.path.abspath(numpy.__file__)) + os.sep,
    *_library_dirs("scipy"),
    "<__array_function__",
)
# Code already classified, by id: the code itself (held, so that its id is not
# reused) and None for machinery (skipped by the walk), or for the user's code its
# table of bytecode offset -> site. A loop records the same few sites thousands of
# times; every node shares one tuple per call site. (Keyed by id: hashing a code
# object hashes its name, bytecode, constants and names, about 10% of a traced
# np.mean's instructions when the walk passes numpy's and mutagrad's frames.)
_classified: dict[int, tuple[CodeType, dict[int, Site] | None]] = {}


def user_site(depth: int = 2) -> Site | None:
    """Return ``(code, offset)`` of the innermost frame outside mutagrad and numpy."""
    return user_site_from(sys._getframe(depth))


def user_site_from(frame: FrameType | None) -> Site | None:
    """:func:`user_site` starting at ``frame``: cheapest when that is the user's frame."""
    while frame is not None:
        code = frame.f_code
        known = _classified.get(id(code))  # (_user_sites_of, inlined: a call fewer per frame)
        sites = known[1] if known is not None else _classify(code)
        if sites is not None:
            offset = frame.f_lasti
            site = sites.get(offset)
            if site is None:
                site = sites[offset] = (code, offset)
            return site
        frame = frame.f_back
    return None


def global_names(code: CodeType) -> set[str]:
    """The names ``code`` (and the functions and comprehensions in it) may read as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= global_names(const)
    return names


def user_site_in(stack: list[tuple[CodeType, int]]) -> Site | None:
    """:func:`user_site_from` for a snapshot of a stack: ``(code, offset)`` pairs, innermost first.

    A live frame's offset moves on as its code runs; a snapshot keeps where
    each frame was when it was taken.
    """
    for code, offset in stack:
        if _user_sites_of(code) is not None:
            return (code, offset)
    return None


def _classify(code: CodeType) -> dict[int, Site] | None:
    """Remember whether ``code`` is machinery; the user's code gets its table of sites."""
    sites: dict[int, Site] | None = (
        None if code.co_filename.startswith(_INTERNAL_PREFIXES) else {}
    )
    _classified[id(code)] = (code, sites)
    return sites


def _user_sites_of(code: CodeType) -> dict[int, Site] | None:
    """The table of sites of the user's ``code``; None for machinery."""
    known = _classified.get(id(code))
    return known[1] if known is not None else _classify(code)


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


def raised_by_mutagrad(error: BaseException) -> bool:
    """Whether the innermost frame of ``error``'s traceback is mutagrad's own code."""
    traceback = error.__traceback__
    if traceback is None:
        return False
    while traceback.tb_next is not None:
        traceback = traceback.tb_next
    return traceback.tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR + os.sep)


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


def without_comment(line: str) -> str:
    """One line of code without its trailing comment and the padding before it."""
    if "#" not in line:
        return line.strip()
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[: token.start[1]].strip()
    except (tokenize.TokenError, SyntaxError):  # an unfinished statement: its code ends there
        pass
    return line.strip()


def source_code(site: Site | None) -> str:
    """The code at ``site``, without a trailing comment: what a message quotes inline."""
    return without_comment(source_line(site))


def format_site(site: Site | None, indent: str = "    ") -> str:
    """``file:line`` followed by the source line, for error messages."""
    text = source_line(site)
    where = describe_site(site)
    return f"{indent}{where}\n{indent}    {text}" if text else f"{indent}{where}"


# --------------------------------------------------------------------------
# The expression at a site.

NUMPY_MODULE_NAMES = ("np", "numpy")  # the names programs import numpy as


def site_columns(site: Site | None) -> tuple[int, int, int] | None:
    """``(line, start, end)`` of the expression whose evaluation ``site`` records.

    ``start`` and ``end`` are UTF-8 byte offsets into the line, as in
    :mod:`ast`. None when the expression spans several lines or Python keeps
    no column table (before 3.11, or under ``-X no_debug_ranges``).
    """
    if site is None:
        return None
    code, offset = site
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return None
    entry = next(islice(positions(), offset // 2, None), None)
    if entry is None:
        return None
    line, end_line, start, end = entry
    if line is None or line != end_line or start is None or end is None:
        return None
    return line, start, end


def root_name(expression: ast.expr) -> str | None:
    """The name an attribute chain starts from: ``np`` of ``np.linalg.norm``."""
    while isinstance(expression, ast.Attribute):
        expression = expression.value
    return expression.id if isinstance(expression, ast.Name) else None


def expression_at(site: Site | None) -> ast.expr | None:
    """The expression whose evaluation ``site`` records, parsed (None if it cannot be)."""
    columns = site_columns(site)
    if columns is None:
        return None
    line, start, end = columns
    text = linecache.getline(site[0].co_filename, line).encode()  # type: ignore[index]
    try:
        return ast.parse(text[start:end].decode().strip(), mode="eval").body
    except (SyntaxError, UnicodeDecodeError):
        return None


_SETITEM_CALLS: dict[Site, bool] = {}


def writes_by_setitem_call(site: Site) -> bool:
    """Whether the expression at ``site`` is a write the user spelled as a call:
    ``a.__setitem__(i, v)`` or ``operator.setitem(a, i, v)``. Read by the name the call
    is spelled with (``setitem`` or ``__setitem__``: one behind ``functools.partial``
    is not seen); where the expression cannot be read, no."""
    known = _SETITEM_CALLS.get(site)
    if known is None:
        expression = expression_at(site)
        func = expression.func if isinstance(expression, ast.Call) else None
        name = (
            func.attr if isinstance(func, ast.Attribute)
            else func.id if isinstance(func, ast.Name)
            else None
        )  # fmt: skip
        known = _SETITEM_CALLS[site] = name in ("setitem", "__setitem__")
    return known


def is_user_frame(frame: FrameType) -> bool:
    """Whether ``frame`` runs the user's code (not mutagrad's machinery or numpy's)."""
    return _user_sites_of(frame.f_code) is not None


def with_article(word: str) -> str:
    """``word`` with "a" or "an" before it, as read aloud ("an int64", "a uint8")."""
    return f"{'an' if word[:1] in 'aeio' else 'a'} {word}"
