"""A per-call time limit for the report's runner, and isolation of each call's context.

:func:`time_limit` arms ``SIGALRM`` (``signal.setitimer``) for the duration of a
block and raises :class:`ProgramTimeout` in it when the limit passes, so a
program that hangs is recorded as a timeout and the run goes on. Signals only
reach the main thread, so elsewhere (or on a platform without ``setitimer``)
the block runs without a limit; :func:`limit_available` says which.

:class:`ProgramTimeout` derives from ``BaseException``: a program's own
``except Exception`` (the seeds' ``exception`` has one) cannot swallow it.

:func:`isolated` runs a call in a copy of the current ``contextvars`` context,
so a mode, a trace or an analysis flag that a failing call leaves set cannot
leak into the next call.
"""

from __future__ import annotations

import contextlib
import contextvars
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class ProgramTimeout(BaseException):
    """Raised inside a block run under :func:`time_limit` when its time is up."""

    def __init__(self, seconds: float):
        super().__init__(f"exceeded the time limit of {seconds:g} s")
        self.seconds = seconds


def limit_available() -> bool:
    """Whether :func:`time_limit` can interrupt a call here (main thread, ``setitimer``)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`ProgramTimeout` in the block after ``seconds`` (``None`` or <= 0: no limit)."""
    if seconds is None or seconds <= 0 or not limit_available():
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise ProgramTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def isolated(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` in a copy of the current context (its variables cannot leak)."""
    return contextvars.copy_context().run(call, *args, **kwargs)
