"""The caller's arrays while a call runs: read-only, and where it can be proved, unviewed.

:class:`Frozen` makes a gradient call's array arguments read-only while ``f``
runs, so that a write to them by name raises as numpy raises; the call
borrows their memory instead of copying it. A view made before the call
(``v = a[:]``, a memoryview, ``np.frombuffer``) keeps its own flags, so a
write through it is caught only by the fingerprint that
:class:`~mutagrad.call.GradientCall` compares when ``f`` returns: one pass
over each argument at each end.

:func:`proving_boundary` decorates the public entry points that build a
gradient call on their arguments. Before anything else runs it freezes each
large argument that owns its memory and counts the references to it: every
view of an array holds a reference to the array that owns the memory
(numpy's ``.base``, the exporter of a memoryview), so if the count is no more
than the boundary's own references plus the names that the calling frame
binds to the array, no view exists, and none made later is writeable. The
call then skips that argument's two fingerprint passes and checks only that
it is still read-only when ``f`` returns. numpy decides its own questions
the same way (``ndarray.resize(refcheck=True)``, the elision of temporaries).
The proof is conservative: any reference it cannot account for (a container,
a second name in another frame, a thread's local) leaves the argument to the
fingerprint; it is used only where CPython counts every reference (a build
with the GIL, before 3.14, whose stack borrows references) and only if a
self-test at import finds the counts as expected. What no count can see is a
pointer to the memory taken as a number (``a.ctypes.data``,
``__array_interface__``) and made into an array; writes through such an
array are outside what mutagrad protects.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from contextvars import ContextVar
from types import FrameType
from typing import Any

import numpy as np

from mutagrad.diagnostics.tracebacks import api_boundary


def can_freeze(x: np.ndarray) -> bool:
    """Whether making ``x`` and the arrays it views read-only can be undone afterwards.

    numpy refuses to make a view writeable again while an array it views is
    read-only; so a writeable view of an array that its owner made read-only
    is copied rather than borrowed. (An array another gradient call froze will
    be writeable again: :class:`Frozen` thaws the view after it.)
    """
    seen_writeable = False
    a: Any = x
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            seen_writeable = True
        elif seen_writeable and not frozen_by_a_call(a):
            return False
        a = a.base
    return True


def frozen_by_a_call(a: np.ndarray) -> bool:
    """Whether a running gradient call made ``a`` read-only (the lock is held)."""
    return any(a is frozen for call in _ACTIVE.values() for frozen in call.arrays)


# The Frozen of every running gradient call that made arrays read-only. A call makes
# read-only only what is writeable, and writeable again when it returns; another call
# (a thread, a nested call) that meets such an array read-only copies it instead of
# borrowing it, and freezes nothing: what the first call's thaw leaves unprotected, the
# fingerprint check of every call still sees. A view that numpy will not make writeable
# while its base is frozen waits in _WAITING until the base thaws. One lock orders
# freezing, thawing and the question which read-only array is whose.
_ACTIVE: dict[int, Frozen] = {}


_WAITING: list[np.ndarray] = []


_FREEZING = threading.Lock()


lock, unlock = _FREEZING.acquire, _FREEZING.release  # (freeze and thaw run on every call)


class Frozen:
    """Caller's ndarrays made read-only while a call runs, and writeable again after.

    The one place mutagrad changes a caller's array's flags: a gradient call
    freezes its array arguments, ``checkpointed`` the ndarrays its function
    can reach, so that a write to them by name raises as numpy raises.
    ``freeze``/``thaw`` take the lock; the ``_held`` versions are for a caller
    that holds it (GradientCall, which decides borrowing under it too).
    """

    __slots__ = ("arrays",)

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []  # (its owner may append what it froze itself)

    def freeze(self, arrays: list[np.ndarray]) -> None:
        """Make each array and the arrays it views read-only (see :func:`can_freeze`)."""
        lock()
        try:
            self.freeze_held(arrays)
        finally:
            unlock()

    def freeze_held(self, arrays: list[np.ndarray]) -> None:
        """:meth:`freeze`, the lock held (and what its owner froze itself registered)."""
        frozen = self.arrays
        for x in arrays:
            a: Any = x
            while True:
                if a.flags.writeable:
                    # (write=False, passed by position as numpy's C method takes it (write, align,
                    # uic): half the cost of the keyword, which numpy's stubs alone require)
                    a.setflags(False)
                    frozen.append(a)
                a = a.base
                if a is None or not isinstance(a, np.ndarray):
                    break
        if frozen:
            _ACTIVE[id(self)] = self

    def thaw(self) -> None:
        if not self.arrays:
            return
        lock()
        try:
            self.thaw_held()
        finally:
            unlock()

    def thaw_held(self) -> None:
        if not self.arrays:
            return
        for a in reversed(self.arrays):  # views before the arrays they view
            try:
                a.setflags(True)  # (write=True, see freeze_held)
            except ValueError:  # a base another call still freezes
                _WAITING.append(a)
        self.arrays = []
        del _ACTIVE[id(self)]
        if _WAITING:
            _thaw_waiting()


def _thaw_waiting() -> None:
    """Make writeable the views whose bases no call freezes any more (the lock is held)."""
    still = []
    for a in _WAITING:
        try:
            a.setflags(True)  # type: ignore[call-arg]  # (write=True, see freeze_held)
        except ValueError:
            still.append(a)
    _WAITING[:] = still


# -- the proof that no view exists ------------------------------------------------------------

# Arguments at most this large are fingerprinted instead, which costs less than the proof: the
# proof takes ~5 us (reading the caller's names), two XXH3 passes over 64 KiB ~2.6 us.
PROOF_MINIMUM_BYTES = 1 << 17

_CO_OPTIMIZED = 1  # (inspect.CO_OPTIMIZED: a function's frame, whose names are fast locals)
_NDARRAY = np.ndarray


class Pending:
    """Arrays a proving boundary froze for the gradient call it is about to build.

    ``views``: for each, by id, a view of it made before it was frozen (the
    borrowed input's memory, which ``f``'s writes may reach until it is
    copied); ``unviewed``: the ids of those proved to have no view. The first
    gradient call built afterwards adopts them (``adopted``); the boundary
    thaws them if none did.
    """

    __slots__ = ("adopted", "frozen", "unviewed", "views")

    def __init__(self) -> None:
        self.frozen = Frozen()
        self.views: dict[int, np.ndarray] = {}
        self.unviewed: set[int] = set()
        self.adopted = False

    def view_of(self, x: np.ndarray) -> np.ndarray | None:
        """The view made of ``x`` before it was frozen, if the boundary froze ``x``.

        (An id names one object while it lives, and the Frozen's list keeps ``x`` alive.)
        """
        return self.views.get(id(x))


PENDING: ContextVar[Pending | None] = ContextVar("mutagrad_pending_arguments", default=None)


def _is_candidate(x: Any) -> bool:
    """An argument the proof can be about: a large numeric ndarray over writeable, contiguous
    memory that it owns, or that an array it views owns (``np.linspace``, ``a.reshape``):
    every view of either holds a reference to the owner."""
    if type(x) is not np.ndarray or x.nbytes <= PROOF_MINIMUM_BYTES:
        return False
    flags = x.flags
    if not (flags.writeable and (flags.c_contiguous or flags.f_contiguous)
            and x.dtype.kind in "iufc"):  # fmt: skip
        return False
    owner = x.base
    if owner is None:
        return bool(flags.owndata)
    return (
        type(owner) is np.ndarray and owner.base is None and bool(owner.flags.owndata)
        and bool(owner.flags.writeable)
    )


def _candidates(args: tuple[Any, ...]) -> list[tuple[Any, int]]:
    """``(container, index)`` of each candidate: a positional argument, or an element of a
    tuple or list argument (``jvp(f, (x,), (v,))``). No reference to an array is kept."""
    found = []
    for i in range(len(args)):
        if _is_candidate(args[i]):
            found.append((args, i))
        elif type(args[i]) in (tuple, list):
            container = args[i]
            for j in range(len(container)):
                if _is_candidate(container[j]):
                    found.append((container, j))
    return found


def _references(container: Any, index: int) -> int:
    """The reference count of ``container[index]``, as seen from here."""
    return sys.getrefcount(container[index])


def _names_holding(frame: FrameType, ids: set[int]) -> dict[int, int]:
    """How many names ``frame`` sees (its locals, its module's globals) are bound to each object
    of ``ids``; each holds one reference.

    Before 3.13 reading a function frame's ``f_locals`` copies its fast
    locals into a dict that keeps references to them; the copies are removed
    again, so that each name counts one reference (its slot or its cell) and
    the caller's locals are not kept alive by mutagrad.
    """
    counts = dict.fromkeys(ids, 0)
    names = frame.f_locals
    if type(names) not in _PLAIN_NAMESPACES or type(frame.f_globals) is not dict:
        return counts  # (a class body's own mapping could say anything: no name counts)
    for value in names.values():
        if id(value) in counts:
            counts[id(value)] += 1
    if frame.f_globals is not names:  # (a module's globals, as a function reads them)
        for value in frame.f_globals.values():
            if id(value) in counts:
                counts[id(value)] += 1
    value = None  # (the loop variable would hold the last value)
    code = frame.f_code
    if _SNAPSHOT_LOCALS and code.co_flags & _CO_OPTIMIZED:
        for name in (*code.co_varnames, *code.co_cellvars, *code.co_freevars):
            names.pop(name, None)
    return counts


def _freeze_pending(found: list[tuple[Any, int]]) -> Pending:
    """Views of the candidates (made first: they stay writeable), then the candidates and the
    arrays they view frozen."""
    pending = Pending()
    for container, index in found:
        pending.views[id(container[index])] = container[index].view()
    # (a candidate another thread froze meanwhile stays out of the Frozen's list: the proof
    # skips it; the list made here is gone before anything is counted)
    pending.frozen.freeze([container[index] for container, index in found])
    return pending


def _references_to_owner(container: Any, index: int) -> int:
    """The reference count of ``container[index].base``, as seen from here."""
    return sys.getrefcount(container[index].base)


# The references to a candidate that the proof holds when it counts: its entry in the
# Frozen's list, and for an array that owns its memory, the view in Pending.views. For an
# owner of a candidate's memory: the candidate's base, the view, and the Frozen's entry.
_OWN_REFERENCES = 1
_OWN_REFERENCES_TO_OWNER = 3


def prove_arguments(args: tuple[Any, ...]) -> Pending | None:
    """Freeze the candidate arrays among ``args`` (the boundary's own tuple) and find those
    no view can reach; the names of the boundary's caller may refer to them.

    None where there is nothing to prove, or an enclosing boundary's arrays
    still wait for their call (only mutagrad's own code has run since it
    counted, and its arrays are frozen). Every gradient call pays for the
    first test, so it is kept to a type and a size per argument.
    """
    for a in args:
        kind = type(a)
        if kind is _NDARRAY:
            if a.nbytes > PROOF_MINIMUM_BYTES:
                break
        elif (kind is tuple or kind is list) and any(
            type(b) is _NDARRAY and b.nbytes > PROOF_MINIMUM_BYTES for b in a
        ):
            break
    else:
        return None
    a = None  # (a reference the count would see)
    if not PROOF_ENABLED or PENDING.get() is not None:
        return None
    return _prove(args, sys._getframe(2))  # (2: the boundary's caller)


def _prove(args: tuple[Any, ...], frame: FrameType | None) -> Pending | None:
    found = _candidates(args)
    if not found:
        return None
    pending = _freeze_pending(found)
    frozen_ids = {id(a) for a in pending.frozen.arrays}
    names = _names_holding(frame, frozen_ids) if frame is not None else dict.fromkeys(frozen_ids, 0)
    for container, index in found:
        key = id(container[index])
        if key not in frozen_ids:
            continue
        owns = container[index].base is None
        outside = _references(container, index) - _HELD_BY_CONTAINER - _OWN_REFERENCES - owns
        if outside != names[key]:
            continue
        if owns or _references_to_owner(container, index) - 1 == _OWN_REFERENCES_TO_OWNER:
            pending.unviewed.add(key)
    return pending


def release_pending(pending: Pending) -> None:
    """The boundary returns: its arrays are writeable again unless a call adopted them."""
    if not pending.adopted:
        pending.frozen.thaw()


def proving_boundary(fn: Callable[..., Any]) -> Callable[..., Any]:
    """:func:`~mutagrad.diagnostics.tracebacks.api_boundary` for an entry point that builds a
    gradient call on its arguments before running any of the user's code."""
    return api_boundary(fn, arguments=(prove_arguments, release_pending, PENDING))


def _self_test() -> bool:
    """Whether the counts are what the proof assumes on this interpreter: an array held by
    a name only is proved, one with a view, a second name elsewhere or a container is not."""
    if not _COUNTS_EVERY_REFERENCE:
        return False
    frame = sys._getframe()
    probe = np.ones(PROOF_MINIMUM_BYTES // 4)
    temporary = _proved((np.ones(PROOF_MINIMUM_BYTES // 8 + 1),), None)
    named = _proved((probe,), frame)
    view = probe[:]
    with_view = _proved((probe,), frame)
    del view
    held = [probe]
    in_list = _proved((probe,), frame)
    del held
    shaped = probe.reshape(2, -1)  # a view whose owner only it (and `probe`) refers to
    del probe
    view_of_owner = _proved((shaped,), frame)
    owner_view = np.asarray(shaped.base)[:]
    with_owner_view = _proved((shaped,), frame)
    del owner_view
    sibling = shaped[0]
    with_sibling = _proved((shaped,), frame)
    del sibling
    return (
        temporary and named and not with_view and not in_list
        and view_of_owner and not with_owner_view and not with_sibling
    )


def _proved(args: tuple[Any, ...], frame: FrameType | None) -> bool:
    pending = _prove(args, frame)
    if pending is None:
        return False
    release_pending(pending)
    return bool(pending.unviewed)


# CPython counts every reference where the GIL is on and the stack holds strong references
# (3.14 borrows them on the stack); other interpreters have no getrefcount.
_COUNTS_EVERY_REFERENCE = (
    sys.implementation.name == "cpython"
    and sys.version_info < (3, 14)
    and getattr(sys, "_is_gil_enabled", lambda: True)()
)
# Before 3.13 (PEP 667) f_locals of a function's frame is a dict copy of its locals.
_SNAPSHOT_LOCALS = sys.version_info < (3, 13)


def _function_locals_type() -> type:
    return type(sys._getframe().f_locals)


# What f_locals is for a function's frame (a dict, or from 3.13 a view of the frame) and
# for any other frame without a mapping of its own.
_PLAIN_NAMESPACES = (dict, _function_locals_type())
_HELD_BY_CONTAINER = _references((object(),), 0)  # (the container's reference, and the count's)
PROOF_ENABLED = _self_test()
