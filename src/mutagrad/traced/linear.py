"""``linearize``'s linear map: forward mode's tangent steps, recorded once and replayed.

``linearize(f, *primals)`` runs ``f`` once at a forward level that carries a
:class:`Journal` (``ForwardTrace.journal``). Every step that makes or writes a
tangent at that level goes through the journal, which performs it as forward
mode always does and records it as a step of a program that is linear in the
seed tangents:

* a rule's jvp, with the primal values it reads (the output and the arguments);
* the zeros or the copy a base's tangent storage needs (laid out as the base,
  or made the base's own before a write);
* a view of a base's tangent (a view's tangent is the same view of its base's);
* an element or advanced-index read of a tangent;
* a write of a tangent at a place of another (``y[i] = v``, ``out=``, ``np.add.at``).

``f_jvp`` replays those steps on the caller's tangents, any number of
directions at once: no value is recomputed and ``f`` does not run again.

Mutation. A primal value a recorded jvp reads may be overwritten later, inside
``f`` (``y[i] = ...``, ``x.sort()``) or after it returns (a traced array ``f``
kept). A value in a traced array's memory is held as a capture in snapshot
mode's policy (:class:`_KeptValue`): read in place, and copied just before the
first write that overlaps it, by the write path's own machinery. A raw ndarray
(a constant, whose writes no version sees) is copied when it is read. The
replay therefore reads every value as it was when the rule ran.

Tangent arrays are named by identity. A tangent that comes from a path the
journal does not record (an rrule's forward rule, a snapshot's copy of a
tangent inside a nested gradient call) makes the journal give up
(:attr:`Journal.given_up`); ``f_jvp`` then runs ``f`` again in forward mode.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from mutagrad.core.engine import EXPORTED
from mutagrad.core.jvps import kind_of
from mutagrad.core.memory import Region, batched_layout, has_layout, layout_buffer, tangent_layout
from mutagrad.core.modes import SNAPSHOT
from mutagrad.core.tangents import Meta
from mutagrad.traced.forward import _place, level_jvp, raw_jvp
from mutagrad.traced.tangents import (
    Borrowed,
    indexed_tangent,
    laid_out,
    set_tangent,
    tangent_of,
    write_tangent,
)
from mutagrad.traced.value import WrappedValue

# One recorded step: it reads and writes the replay's tangents (``env``, by slot),
# for ``width`` directions.
Step = Callable[[list[Any], int], None]


class _KeptValue:
    """A primal value a recorded jvp reads, in the memory of a traced array.

    It sits on the array's list of captures with snapshot mode's policy: a write
    that overlaps it first calls :meth:`keep_old_value`, which copies the data,
    so ``data`` always holds the values as the rule saw them. ``data`` is a
    read-only view (a jvp cannot change what later replays read).
    """

    __slots__ = ("closure", "data", "journal", "key", "mode", "node", "region", "tape")

    def __init__(self, data: np.ndarray, journal: Journal, key: Any):
        self.data = data
        self.region: np.ndarray | None = data  # where the value lives, for overlap checks
        self.journal = journal
        self.key = key
        self.mode = SNAPSHOT  # (write path: mode.overwrite(capture, write))
        self.node = None  # no node of any tape: never an operation's own input
        self.tape = None  # no tape releases it
        self.closure = False

    def keep_old_value(self, write: Any, counted: bool = True) -> None:
        """A write is about to overwrite the value: keep a copy of it."""
        self.detach()
        self.journal.bytes_copied += self.data.nbytes

    def detach(self) -> None:
        """Keep a private copy; no write reaches it any more."""
        data = self.data.copy()
        data.flags.writeable = False
        self.data = data
        self.region = None  # (the write path then drops it from the array's list)
        self.journal.live.pop(self.key, None)


def _stored(holder: WrappedValue, level: Any) -> Any:
    """The array ``holder`` (a base) stores as its tangent at ``level`` (lent: the lent one)."""
    tangents = holder._tangents
    t = tangents.get(level) if tangents is not None else None
    return t.tangent if type(t) is Borrowed else t


def _meta(value: Any) -> Any:
    """An array nothing reads, as its shape and dtype (other values as they are)."""
    return Meta(value.shape, value.dtype) if isinstance(value, np.ndarray) else value


def _read(value: Any) -> Any:
    return value.data if type(value) is _KeptValue else value


def _own_copy(value: Any) -> Any:
    """An index or mask a step replays with: its arrays copied (the caller may change them)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if type(value) is tuple or type(value) is list:
        return type(value)(_own_copy(v) for v in value)
    return value


_PART_VIEW = (
    "f reads or writes a complex array's .real or .imag view, whose tangent steps are not "
    "recorded"
)


def _part_view(view: Any, base: Any) -> bool:
    """``view`` is ``base.real`` or ``base.imag`` (or a view of one): another dtype over the
    same memory, whose tangent is a part of the base's (see mutagrad.traced.tangents)."""
    return bool(view.dtype != base.dtype)


class Journal:
    """The tangent steps of one forward level (``linearize``'s run), to replay without ``f``.

    ``slots`` count the tangent arrays the steps make; ``seeds`` and
    ``outputs`` say which slots are the arguments' tangents and the outputs'.
    ``bytes_copied``: values copied because a write was about to overwrite them;
    ``constants_copied``: raw ndarrays copied when a jvp read them.
    """

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.slots = 0
        self.seeds: list[int | None] = []
        # Per output leaf: a slot, ("zeros", shape, dtype) for an output without a tangent,
        # or None for a leaf that has no derivative at all.
        self.outputs: list[Any] = []
        self.given_up: str | None = None
        self.bytes_copied = 0
        self.constants_copied = 0
        self.level: Any = None
        # The slot of each tangent array of the run, by identity (checked by a weak reference:
        # a dead array's id may be reused).
        self._names: dict[int, tuple[weakref.ref, int]] = {}
        # Captures not yet copied, by (base, version, memory): one per value, however often read.
        self.live: dict[tuple[Any, ...], tuple[weakref.ref, _KeptValue]] = {}
        self._kept: list[_KeptValue] = []

    # -- naming the run's tangents ------------------------------------------------------

    def seed(self, t: np.ndarray | None) -> None:
        """The next argument leaf's tangent, as the run was seeded (None: no derivative)."""
        self.seeds.append(None if t is None else self._new(t))

    def _new(self, t: Any) -> int:
        slot = self.slots
        self.slots += 1
        self._names[id(t)] = (weakref.ref(t), slot)
        return slot

    def _slot(self, t: Any) -> int | None:
        entry = self._names.get(id(t))
        if entry is not None and entry[0]() is t:
            return entry[1]
        self.give_up("a tangent made on a path linearize does not record")
        return None

    def give_up(self, reason: str) -> None:
        """Stop recording: ``f_jvp`` will run ``f`` again (``reason`` says why)."""
        if self.given_up is None:
            self.given_up = reason
        if self.level is not None:
            self.level.journal = None
        for c in self._kept:
            c.region = None  # inert: the next write to its array drops it
        self.steps, self._kept, self._names, self.live = [], [], {}, {}

    def _storage(self, holder: WrappedValue, before: Any, after: Any) -> int | None:
        """The slot of ``after``, the tangent ``holder`` now stores, which was ``before``:
        the same array, or zeros or a copy a tangent function just made (recorded)."""
        if after is before:
            return self._slot(after)
        shape, dtype, layout = holder._raw.shape, after.dtype, tangent_layout(holder._raw)
        slot = self._new(after)
        if before is None:

            def zeros(env: list[Any], width: int) -> None:
                env[slot] = layout_buffer((width, *shape), dtype, layout)

            self.steps.append(zeros)
            return slot
        source = self._slot(before)
        if source is None:
            return None

        def copy(env: list[Any], width: int) -> None:
            buffer = layout_buffer((width, *shape), dtype, layout)
            buffer[...] = env[source]
            env[slot] = buffer

        self.steps.append(copy)
        return slot

    def _view(self, t: Any, source: int, region: Region) -> int:
        """Name ``t``, ``region`` of every slice of the array in slot ``source``."""
        slot = self._new(t)
        layout = batched_layout(region.layout)

        def view(env: list[Any], width: int) -> None:
            buffer = env[source]
            if not has_layout(buffer, layout):
                # (the run's one direction may have been laid out where several are not:
                # the same values, laid out as the region addresses them)
                relaid = layout_buffer(buffer.shape, buffer.dtype, layout)
                relaid[...] = buffer
                env[source] = buffer = relaid
            env[slot] = region.batched_view_of(buffer)

        self.steps.append(view)
        return slot

    def read(self, x: Any, level: Any) -> tuple[Any, int | None]:
        """``x``'s tangent at ``level`` (:func:`tangent_of`) and its slot; ``(None, None)``
        where it has none."""
        if not isinstance(x, WrappedValue):
            return None, None
        holder = x._base if x._base is not None else x
        before = _stored(holder, level)
        t = tangent_of(x, level)
        if t is None:
            return None, None
        after = _stored(holder, level)
        slot = self._storage(holder, before, after)
        if t is after or slot is None:
            return t, slot
        if _part_view(x._raw, holder._raw):
            self.give_up(_PART_VIEW)
            return t, None
        return t, self._view(t, slot, Region(x._raw, holder._raw))

    def region_copy(self, base: WrappedValue, region: Region, level: Any) -> Any:
        """A copy of ``region`` of ``base``'s tangent (what a snapshot keeps), recorded."""
        before = _stored(base, level)
        t = laid_out(base, level)
        source = self._storage(base, before, t)
        view = region.batched_view_of(t)
        copy = view.copy()
        if source is not None:
            viewed = self._view(view, source, region)
            slot = self._new(copy)

            def copied(env: list[Any], width: int) -> None:
                env[slot] = env[viewed].copy()

            self.steps.append(copied)
        return copy

    # -- primal values ----------------------------------------------------------------

    def _keep(self, value: Any, owner: Any) -> Any:
        """``value`` as a replay will read it: held as it is now (see the module docstring)."""
        if isinstance(owner, WrappedValue) and type(value) is np.ndarray:
            base = owner._base if owner._base is not None else owner
            if np.may_share_memory(value, base._raw) and not base._flags & EXPORTED:
                return self._capture(value, base)
        if isinstance(value, WrappedValue):  # (a keyword argument)
            return self._keep(value._raw, value)
        if isinstance(value, np.ndarray):
            copy = value.copy()
            self.constants_copied += copy.nbytes
            return copy
        if type(value) is tuple or type(value) is list:
            return type(value)(self._keep(v, None) for v in value)
        return value

    def _capture(self, data: np.ndarray, base: WrappedValue) -> _KeptValue:
        key = (
            id(base), base._version, data.__array_interface__["data"][0], data.shape,
            data.strides, data.dtype.str,
        )  # fmt: skip
        entry = self.live.get(key)
        if entry is not None and entry[0]() is base:
            return entry[1]
        view = data.view()
        view.flags.writeable = False
        kept = _KeptValue(view, self, key)
        self.live[key] = (weakref.ref(base), kept)
        self._kept.append(kept)
        if base._captures is None:
            base._captures = [kept]
        else:
            base._captures.append(kept)
        return kept

    # -- the steps, performed and recorded ----------------------------------------------

    def result(self, rule: Any, args: Any, raw: Any, out: WrappedValue,
               kwargs: dict[str, Any] | None, level: Any) -> None:  # fmt: skip
        """:func:`mutagrad.traced.forward.forward_result` at ``level``, recorded."""
        reads = [self.read(a, level) for a in args]
        if all(t is None for t, _ in reads):
            return
        tangents = [t for t, _ in reads]
        t = level_jvp(rule, level, tangents, args, raw, out, kwargs)
        if t is None:
            return
        if self.given_up is None:
            owners = args if len(args) == len(raw) else (None,) * len(raw)
            self._jvp(rule, [s for _, s in reads], out, raw, owners, kwargs, t)
        set_tangent(out, level, t)

    def _jvp(self, rule: Any, sources: list[int | None], out: WrappedValue, raw: Any,
             owners: Any, kwargs: dict[str, Any] | None, t: Any) -> int:  # fmt: skip
        """Record a jvp whose output tangent is ``t``: it reads the slots ``sources`` and the
        values ``out`` (the output) and ``raw`` (the arguments, ``owners`` the traced ones)."""
        need, need_ans = self._reads(rule, sources, len(raw))
        ans = self._keep(out._raw, out) if need_ans else _meta(out._raw)
        kept = type(raw)(
            self._keep(r, o) if need is None or need[i] else _meta(r)
            for i, (r, o) in enumerate(zip(raw, owners))
        )
        kw = {k: self._keep(v, v) for k, v in kwargs.items()} if kwargs and rule.params else None
        slot = self._new(t)

        def jvp(env: list[Any], width: int) -> None:
            tangents = [None if s is None else env[s] for s in sources]
            values = type(kept)(_read(v) for v in kept)
            keywords = None if kw is None else {k: _read(v) for k, v in kw.items()}
            result = raw_jvp(rule, tangents, _read(ans), values, keywords, width)
            if result is None:
                raise RuntimeError(
                    f"linearize's f_jvp: the forward rule of {rule.name} gave no tangent where "
                    "it gave one while f ran (a mutagrad bug); jvp(f, primals, tangents) "
                    "gives the derivative"
                )
            env[slot] = result

        self.steps.append(jvp)
        return slot

    @staticmethod
    def _reads(rule: Any, sources: list[int | None], n: int) -> tuple[Any, bool]:
        """What a jvp reads of its ``n`` arguments (None: all) and whether it reads the output.

        An elementwise jvp is its rule's vjps, which declare what they read
        (``VjpRule.reads``), and so is one marked ``reads_declared`` (``np.add``'s); the
        rest arrive as :class:`Meta`, as they do in a pullback, so an undeclared read
        fails loudly. Other jvps keep everything.
        """
        if kind_of(rule.jvp) != "elementwise" and not getattr(rule.jvp, "reads_declared", False):
            return None, True
        active = sum(1 << i for i, s in enumerate(sources) if s is not None)
        return rule.plan(active, n)

    def element(self, w: WrappedValue, key: Any, out: WrappedValue, level: Any) -> None:
        """:func:`mutagrad.traced.forward.forward_element` at ``level``, recorded."""
        t, source = self.read(w, level)
        if t is None:
            return
        new = indexed_tangent(t, key)
        set_tangent(out, level, new)
        if source is None:
            return
        slot = self._new(new)
        index = _own_copy(key)

        def element(env: list[Any], width: int) -> None:
            env[slot] = indexed_tangent(env[source], index)

        self.steps.append(element)

    def write(self, w: WrappedValue, base: WrappedValue, key: Any, mask: Any, winners: Any,
              value: Any, level: Any) -> None:  # fmt: skip
        """:func:`mutagrad.traced.forward.forward_write` at ``level``, recorded."""
        t, source = self.read(value, level)
        tangents = base._tangents
        if t is None and (tangents is None or tangents.get(level) is None):
            return  # zeros written over zeros
        self._write_at(w, base, key, mask, winners, t, source, level)

    def _write_at(self, w: WrappedValue, base: WrappedValue, key: Any, mask: Any, winners: Any,
                  t: Any, source: int | None, level: Any) -> None:  # fmt: skip
        """Write ``t`` (slot ``source``; None: zeros) at ``key`` of ``w``'s tangent, recorded."""
        before = _stored(base, level)
        place = _place(w, base, level, False)
        after = _stored(base, level)
        target = self._storage(base, before, after) if self.given_up is None else None
        if target is None:
            write_tangent(place, key, mask, winners, t)
            return
        if place is not after and _part_view(w._raw, base._raw):
            self.give_up(_PART_VIEW)
            write_tangent(place, key, mask, winners, t)
            return
        if place is not after:
            target = self._view(place, target, Region(w._raw, base._raw))
        write_tangent(place, key, mask, winners, t)
        index, where, order = _own_copy(key), _own_copy(mask), _own_copy(winners)

        def write(env: list[Any], width: int) -> None:
            write_tangent(env[target], index, where, order, None if source is None else env[source])

        self.steps.append(write)

    def into(self, rule: Any, inputs: Any, kept_raw: list[Any], out: WrappedValue,
             base: WrappedValue, kwargs: dict[str, Any] | None, level: Any) -> None:  # fmt: skip
        """:func:`mutagrad.traced.forward.forward_into` at ``level``, recorded."""
        reads = [self.read(a, level) for a in inputs]
        t, slot = None, None
        if rule is not None and any(r is not None for r, _ in reads):
            t = level_jvp(rule, level, [r for r, _ in reads], kept_raw, kept_raw, out, kwargs)
            if t is not None and self.given_up is None:
                slot = self._jvp(rule, [s for _, s in reads], out, kept_raw, inputs, kwargs, t)
        own = base._tangents
        if t is None and (own is None or own.get(level) is None):
            return  # a constant written over a constant
        if out is base:  # the old tangent is gone: the new one is stored as it is
            if t is None:
                assert own is not None
                del own[level]
            else:
                set_tangent(base, level, t)
            return
        self._write_at(out, base, Ellipsis, None, None, t, slot, level)

    # -- the end of the run, and the replay ----------------------------------------------

    def output(self, value: Any, level: Any, tangent: Any) -> None:
        """Name the next output leaf's tangent (after ``f`` returned); ``tangent`` is the one
        the run gave it (zeros where it has none; None where it has no derivative)."""
        t, slot = self.read(value, level)
        if t is not None:
            self.outputs.append(slot)
        elif tangent is not None:
            self.outputs.append(("zeros", tangent.shape[1:], tangent.dtype))
        else:
            self.outputs.append(None)

    def seal(self) -> None:
        """The run is over: forget its tangents (the captures stay on the arrays they read)."""
        self._names = {}
        self.live = {}
        self.level = None

    def replay(self, seeds: list[Any], width: int) -> list[Any]:
        """The outputs' tangents, ``(width,) + shape``, for the arguments' tangents ``seeds``
        (``(width,) + shape`` each, the replay's own: steps may write into them)."""
        env: list[Any] = [None] * self.slots
        for slot, seed in zip(self.seeds, seeds):
            if slot is not None:
                env[slot] = seed
        for step in self.steps:
            step(env, width)
        results = []
        for spec in self.outputs:
            if spec is None or type(spec) is int:
                results.append(None if spec is None else env[spec])
            else:
                results.append(np.zeros((width, *spec[1]), spec[2]))
        return results

    def held_bytes(self) -> int:
        """The memory the journal keeps alive: the arrays its values live in (each counted
        once, whole: a view keeps all of its array) and the constants it copied."""
        roots: dict[int, int] = {}
        for kept in self._kept:
            data = kept.data
            while isinstance(data.base, np.ndarray):
                data = data.base
            roots[id(data)] = data.nbytes
        return sum(roots.values()) + self.constants_copied

