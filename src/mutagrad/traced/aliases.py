"""A user's rule whose output shares memory with its argument: numpy's view, kept.

A rule's function (``@primitive`` with ``defvjp``, an ``rrule``) may return a
view of an argument, or the argument itself, as numpy functions do. Copying
it would break numpy's aliasing (a later write to either would not show in
the other: a wrong value), so the output keeps the argument's memory and the
rule's node, and what the rule's derivative cannot follow is refused, as
PyTorch refuses an in-place write to a custom Function's view output:

* a write through the output, or a view of it: refused by name
  (:data:`~mutagrad.traced.value.ALIASED`, checked in
  :func:`mutagrad.traced.mutation.prepare_write`);
* a write to the argument's memory (through any view of its base) that
  overlaps the output: :class:`AliasWatch`, on the base's list of captures,
  sees it. The output then holds values the rule did not compute. On the tape
  it gets a node whose pullback refuses (:class:`StaleRule`): a read that
  reaches no gradient (an ``if``) keeps numpy's value, one that reaches the
  result is refused. At a forward level the write itself is refused, since a
  tangent is used as soon as it is read;
* what pullbacks save of the output is copied when saved (the output is
  ``EXPORTED``: its memory can change behind its own version), so the
  derivative of a value computed from it before the write holds.

The output is an array of its own (not a view of the argument's base): its
views read the rule's node, and at a forward level it carries the rule's
tangent. A rule's output that shares memory with a plain ndarray argument
(the private copy a rule receives) cannot be numpy's alias: refused.

A rule's output may also be memory that is no argument's and that the rule did
not allocate: a view of a global array, the global itself, a cached array
(:func:`held_elsewhere`). Plain numpy code can write it behind its version, so
it is ``EXPORTED`` (:func:`unowned_output`), as ``np.asarray`` makes an array:
what pullbacks save of it is copied when saved, and a differentiated value
written into it is refused (the other holders would read it without its
derivative). The forward values stay numpy's: the output still views that
memory. What mutagrad cannot see is a plain write to it *before* the output is
used: the rule's node then stands for values it did not compute.
"""

from __future__ import annotations

import contextlib
import weakref
from sys import getrefcount
from typing import Any

from numpy import ndarray

from mutagrad.core.engine import EXPORTED, Node, Rule, current_trace
from mutagrad.core.memory import first_sharing
from mutagrad.core.modes import SNAPSHOT
from mutagrad.core.record import push
from mutagrad.diagnostics.messages import (
    aliased_plain_message,
    aliased_read_message,
    aliased_write_message,
)
from mutagrad.diagnostics.sites import Site, user_site
from mutagrad.errors import NotDifferentiableError
from mutagrad.traced.value import ALIASED, BORROWED, WrappedArray, WrappedValue


class AliasWatch:
    """On the captures of the base whose memory a rule's output shares: an overlapping
    write makes the output's values no longer the rule's (:meth:`keep_old_value`).

    It sits on the list with snapshot mode's policy, as a capture that is never
    read: the write path calls :meth:`keep_old_value` and then drops it.
    """

    __slots__ = ("base", "closure", "data", "key", "mode", "name", "node", "output", "region",
                 "site", "tape")  # fmt: skip

    def __init__(self, output: WrappedArray, base: WrappedValue, name: str, site: Site | None,
                 tape: Any):  # fmt: skip
        self.output = weakref.ref(output, self._dropped)
        self.key = id(output)
        self.base = base  # (the base whose versions cover the output's memory)
        self.data = self.region = output._raw  # where the output lives, for overlap checks
        self.name = name
        self.site = site
        self.mode = SNAPSHOT  # (write path: mode.overwrite(capture, write))
        self.node = None  # no node of any tape: never an operation's own input
        self.tape = tape  # the tape whose release drops it (None at a forward level)
        self.closure = False

    def _dropped(self, _: Any) -> None:
        self.region = None  # (the write path then drops it from the base's list)
        _WATCHES.pop(self.key, None)

    def keep_old_value(self, write: Any, counted: bool = True) -> None:
        """``write`` overwrites memory the output shares: its values are no longer the rule's."""
        self.region = None
        out = self.output()
        if out is None:
            return
        trace = current_trace()
        tangents = out._tangents
        if tangents and trace is not None and any(level in tangents for level in trace.forward):
            raise NotDifferentiableError(aliased_read_message(self.name, self.site, write, True))
        node = out._node
        if node is not None:
            stale = Node(StaleRule(self, write), (node,), node.tape, node.tag, out._raw,
                         write.site)  # fmt: skip
            out._node = push(stale, ())
            out._version += 1  # (its views' cached reads are of the rule's node)

    def detach(self) -> None:
        """The base's memory was handed out as a plain array: stop watching (its writes are
        seen by no version, as for the base's own node)."""
        self.region = None


class StaleRule(Rule):
    """The node of a rule's output read after a write to the argument memory it shares:
    the sweep refuses to go through it."""

    __slots__ = ("watch", "write")
    handles_complex = True  # (it refuses any value)

    def __init__(self, watch: AliasWatch, write: Any):
        super().__init__(watch.name)
        self.watch = watch
        self.write = write

    def backward(self, node: Node, g: Any, owned: bool, bk: Any) -> None:
        w = self.watch
        raise NotDifferentiableError(aliased_read_message(w.name, w.site, self.write, False))


# The watch of each aliased output, by the output's id: what a refused write names, and
# the base an output of a rule applied to an aliased output shares memory with.
_WATCHES: dict[int, AliasWatch] = {}


def shared_argument(name: str, result: Any, args: Any, guarded: Any) -> WrappedValue | None:
    """The traced argument whose memory ``result``, the output of the user's rule ``name``,
    shares (``guarded``: what the rule received); None if none. A plain ndarray
    argument's (the rule's private copy of it) is refused."""
    i = first_sharing(result, guarded)
    if i is None:
        return None
    if isinstance(args[i], WrappedValue):
        return args[i]
    raise NotDifferentiableError(aliased_plain_message(name, i, user_site()))


def aliased_output(result: Any, source: WrappedValue, node: Node | None,
                   name: str) -> WrappedArray:  # fmt: skip
    """``result``, an ndarray (memory of ``source``), as the traced output of the user's
    rule ``name``, whose node is ``node`` (None at forward levels only)."""
    base = source._base if source._base is not None else source
    watch = _WATCHES.get(id(base)) if base._flags & ALIASED else None
    if watch is not None:  # the output of a rule applied to an aliased output
        base = watch.base
    out = WrappedArray(writable_view(result, source), node)  # (as the value f may return)
    out._flags = ALIASED | EXPORTED
    if base._flags & BORROWED:  # (the caller's memory: a copy-on-write moves the output, and
        assert base._views is not None  # the views taken of it, too)
        base._views.append(out)
        out._views = []
    tape = node.tape if node is not None else None
    watch = AliasWatch(out, base, name, user_site(), tape)
    _WATCHES[id(out)] = watch
    if base._captures is None:
        base._captures = [watch]
    else:
        base._captures.append(watch)
    if tape is not None:
        tape.holds_captures_on(base)  # (its release drops the watch)
    return out


def writable_view(result: ndarray, source: WrappedValue) -> ndarray:
    """``result``, memory of ``source`` computed behind the rule's read-only guard, as
    writable as ``source``'s memory, as numpy's view would be."""
    if not result.flags.writeable and source._raw.flags.writeable:
        # (unless the memory's owner is read-only: a caller's array, during a call)
        with contextlib.suppress(ValueError):
            result.flags.writeable = True
    return result


def refuse_write_through(w: WrappedValue, operation: str) -> None:
    """Refuse ``operation``, a write through ``w``: an aliased output or a view of one."""
    base = w._base if w._base is not None else w
    watch = _WATCHES.get(id(base))
    name, call = (watch.name, watch.site) if watch is not None else ("a rule", None)
    raise NotDifferentiableError(aliased_write_message(operation, name, call, user_site()))


def held_elsewhere(result: Any, pullback: Any = None) -> bool:
    """Whether ``result``, an output of a user's rule that shares no argument's memory,
    may be memory something else holds: a global, a cache, a view of either (anything
    but an array the rule allocated). ``pullback``: an rrule's, whose closure may hold
    ``result`` (those references do not count).

    Called right after the rule returned, with ``result`` held by one local of the
    caller: reference counts then tell, conservatively (every holder of an array, a
    view's ``base`` included, holds a reference; one too many only costs a copy).
    """
    if type(result) is not ndarray:
        return False
    held = _excess(result)
    for cell in getattr(pullback, "__closure__", None) or ():
        with contextlib.suppress(ValueError):  # (an empty cell)
            if cell.cell_contents is result:
                held -= 1
    return held > 0


def _excess(result: ndarray) -> int:
    """References to ``result``'s memory beyond those of a fresh array held by one local
    of :func:`held_elsewhere`'s caller (calibrated at import: :func:`_probe`)."""
    owner = result.base
    if owner is None:
        return getrefcount(result) - _FRESH[0]
    if type(owner) is not ndarray:  # (a buffer: bytes, mmap...)
        return 1
    return getrefcount(owner) - _FRESH[1]


def _probe(result: ndarray) -> int:
    return _excess(result)  # (called as held_elsewhere calls it: one frame between)


def _calibrated() -> tuple[int, int]:
    new = ndarray(1)
    view = ndarray(2)[1:]
    return _probe(new), _probe(view)


_FRESH = (0, 0)
_FRESH = _calibrated()


def unowned_output(out: Any) -> Any:
    """``out``, the wrapped output of a user's rule that :func:`held_elsewhere`, marked as
    memory whose writes no version sees (unless it is a view of an argument)."""
    if isinstance(out, WrappedArray) and out._base is None:
        out._flags |= EXPORTED
    return out
