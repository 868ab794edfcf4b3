"""How a MutagradError reaches the user: naming their line, without mutagrad's own frames.

:func:`api_boundary` decorates the public entry points (``gradient``,
``grad``, ``jacobian``, ``defvjp``, ...). When a :class:`MutagradError`
leaves one of them:

* its message gets the user's ``file:line`` and source line if it names no
  location yet (the innermost frame of the traceback outside mutagrad and
  numpy: the line of ``f`` that did it, or the call of the entry point);
* the frames of mutagrad's machinery are removed from its traceback, so that
  it ends at the user's line instead of in ``api.py``, ``engine.py`` and
  ``wrapped.py``, and a note says so. ``MUTAGRAD_TRACEBACK_FILTERING=off`` in
  the environment keeps every frame (read at each error, so it can be set
  while a session runs).

Only MutagradErrors are filtered: any other exception leaving mutagrad may be
a bug in it, and keeps the frames a bug report needs. pytest hides the one
frame the boundary itself adds (``__tracebackhide__``).
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, TypeVar

from mutagrad.diagnostics.sites import (
    Site,
    describe_site,
    format_site,
    innermost_user_site,
    user_site_from,
    user_site_in,
)
from mutagrad.errors import MutagradError, TracerConversionError, last_conversion_error

FILTERING_VARIABLE = "MUTAGRAD_TRACEBACK_FILTERING"
HIDDEN_FRAMES_NOTE = (
    "(mutagrad removed its internal frames from this traceback; "
    f"set {FILTERING_VARIABLE}=off to show them)"
)

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# Parts of the package that are user-facing code rather than machinery: the
# testing helpers hide themselves from pytest instead, and the report runs
# the user's programs.
_NOT_MACHINERY = (
    os.path.join(_PACKAGE_DIR, "testing") + os.sep,
    os.path.join(_PACKAGE_DIR, "report") + os.sep,
)
# What describe_site writes: "file:line (in function)".
_LOCATION = re.compile(r":\d+ \(in [^)]*\)")
_UNKNOWN_LOCATION = describe_site(None)

Function = TypeVar("Function", bound=Callable[..., Any])


def api_boundary(fn: Function, arguments: tuple[Any, Any, Any] | None = None) -> Function:
    """Decorate a public entry point: MutagradErrors leave it located and filtered.

    ``arguments``: ``(prepare, release, variable)`` for an entry point that
    builds a gradient call on its arguments (see
    :func:`mutagrad.freezing.proving_boundary`): ``prepare(args)`` runs first
    (its caller's caller is the entry point's); what it returns, if not None,
    is held in the context variable ``variable`` while ``fn`` runs and given
    to ``release`` after.
    """

    prepare: Any
    release: Any
    variable: Any
    prepare, release, variable = arguments if arguments is not None else (None, None, None)

    @functools.wraps(fn)
    def entry_point(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # read by pytest: this frame is mutagrad's
        prepared = prepare(args) if prepare is not None else None
        token = variable.set(prepared) if prepared is not None else None
        try:
            return fn(*args, **kwargs)
        except MutagradError as error:
            # The same error object, its traceback filtered in place; a bare raise adds no
            # entry for this frame (`raise error` would show it above the user's line).
            for_the_user(error, sys._getframe(1))
            raise
        finally:
            if token is not None:
                variable.reset(token)
                release(prepared)

    return entry_point  # type: ignore[return-value]


def conversion_hidden_by(error: BaseException) -> TracerConversionError | None:
    """The TracerConversionError that numpy replaced with ``error``, if it did.

    numpy's C code catches the error a traced value's ``__float__`` raises
    and raises its own without context. If the last conversion error was
    raised at the same line of the user's code as ``error``, it is the cause.
    """
    last = last_conversion_error()
    if last is None or error.__traceback__ is None:
        return None
    tb = error.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    site = user_site_from(tb.tb_frame)
    return last if site is not None and site == user_site_in(last.stack) else None


def filtering_enabled() -> bool:
    """Whether internal frames are removed (``MUTAGRAD_TRACEBACK_FILTERING`` is not off)."""
    value = os.environ.get(FILTERING_VARIABLE, "").strip().lower()
    return value not in ("off", "0", "false", "no")


def for_the_user(error: MutagradError, caller: FrameType | None) -> MutagradError:
    """``error`` with the user's line in its message and, unless disabled, a filtered traceback.

    ``caller`` is the frame that called the entry point: the user's line when
    the traceback holds none (an error raised after ``f`` returned).
    """
    traceback = error.__traceback__
    name_user_line(error, innermost_user_site(traceback) or user_site_from(caller))
    if filtering_enabled():
        filtered = without_internal_frames(traceback)
        if filtered is not traceback:
            error = error.with_traceback(filtered)
            notes = getattr(error, "__notes__", ())
            if HIDDEN_FRAMES_NOTE not in notes and hasattr(error, "add_note"):  # Python 3.11+
                error.add_note(HIDDEN_FRAMES_NOTE)
    return error


def name_user_line(error: MutagradError, site: Site | None) -> None:
    """Append the user's ``site`` to a message that names no location.

    A message that already names a site (a PoisonedCaptureError names two)
    is left alone; one that could not find the user's frame when it was
    written says ``<unknown location>``, which is replaced.
    """
    if not error.args or not isinstance(error.args[0], str):
        return
    message = error.args[0]
    if site is None or (_LOCATION.search(message) and _UNKNOWN_LOCATION not in message):
        return
    if _UNKNOWN_LOCATION in message:
        message = message.replace(_UNKNOWN_LOCATION, describe_site(site))
    else:  # the location goes before the fixes, if the message has any
        what, fixes_start, fixes = message.partition("\nFix")
        message = f"{what}\n  at {format_site(site, indent='')}{fixes_start}{fixes}"
    error.args = (message, *error.args[1:])


def is_machinery(filename: str) -> bool:
    """Whether a frame in ``filename`` belongs to mutagrad's machinery."""
    return filename.startswith(_PACKAGE_DIR) and not filename.startswith(_NOT_MACHINERY)


def without_internal_frames(traceback: TracebackType | None) -> TracebackType | None:
    """``traceback`` without mutagrad's frames (the same object if it has none)."""
    kept = []
    entry = traceback
    removed = False
    while entry is not None:
        if is_machinery(entry.tb_frame.f_code.co_filename):
            removed = True
        else:
            kept.append(entry)
        entry = entry.tb_next
    if not removed:
        return traceback
    rebuilt = None
    for entry in reversed(kept):
        rebuilt = TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt


__all__ = ["FILTERING_VARIABLE", "api_boundary", "filtering_enabled", "for_the_user"]
