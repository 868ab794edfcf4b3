"""A per-call time limit (for the report and the fuzzer), and isolation of each call's context.

:func:`time_limit` arms ``SIGALRM`` (``signal.setitimer``) for the duration of a
block and raises :class:`ProgramTimeout` in it when the limit passes, so a
program that hangs is recorded as a timeout and the run goes on. Signals only
reach the main thread; in another thread (a dask worker runs its tasks in
threads) a timer thread raises the same exception in the block's thread
instead, with CPython's ``PyThreadState_SetAsyncExc``. Either way the
exception arrives between two bytecodes, as a signal handler's does: a long
call into C finishes first. Where neither works (no ``setitimer`` in the main
thread, another Python than CPython in a thread) the block runs without a
limit; :func:`limit_available` says which.

:class:`ProgramTimeout` derives from ``BaseException``: a program's own
``except Exception`` (the seeds' ``exception`` has one) cannot swallow it.

:func:`isolated` runs a call in a copy of the current ``contextvars`` context,
so a mode, a trace or an analysis flag that a failing call leaves set cannot
leak into the next call.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import platform
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


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _thread_limit_available() -> bool:
    return platform.python_implementation() == "CPython"


def limit_available() -> bool:
    """Whether :func:`time_limit` can interrupt a call here.

    In the main thread with ``setitimer``; in any other thread on CPython.
    """
    if _in_main_thread():
        return hasattr(signal, "setitimer")
    return _thread_limit_available()


def _set_async_exception(thread_id: int, exception: Any) -> int:
    """Raise ``exception`` (a class; ``None`` clears a pending one) in thread ``thread_id``."""
    target = ctypes.c_ulong(thread_id)
    if exception is None:
        return ctypes.pythonapi.PyThreadState_SetAsyncExc(target, None)
    return ctypes.pythonapi.PyThreadState_SetAsyncExc(target, ctypes.py_object(exception))


@contextlib.contextmanager
def _thread_time_limit(seconds: float) -> Iterator[None]:
    """:func:`time_limit` outside the main thread: a timer thread raises the timeout here."""

    class Timeout(ProgramTimeout):  # raised as a class: it must build itself without arguments
        def __init__(self) -> None:
            super().__init__(seconds)

    Timeout.__name__ = Timeout.__qualname__ = ProgramTimeout.__name__
    target = threading.get_ident()
    lock = threading.Lock()
    state = {"armed": True, "fired": False}

    def fire() -> None:
        with lock:
            if state["armed"]:
                state["fired"] = True
                _set_async_exception(target, Timeout)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    finished = False
    try:
        yield
        finished = True
    finally:
        with lock:
            state["armed"] = False
        timer.cancel()
        if finished and state["fired"]:
            # The time ran out as the block ended: the timeout did not arrive in time, so it
            # must not arrive later, in whatever runs next; the block took too long all the same.
            _set_async_exception(target, None)
            raise Timeout()


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`ProgramTimeout` in the block after ``seconds`` (``None`` or <= 0: no limit)."""
    if seconds is None or seconds <= 0 or not limit_available():
        yield
        return
    if not _in_main_thread():
        with _thread_time_limit(seconds):
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
