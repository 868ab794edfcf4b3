"""In-place writes on WrappedArrays: versions, poisoning, snapshots, write nodes.

Every path that changes an array's elements (``x[i] = v``, ``x += v``, ufuncs
with ``out=``, ``fill``, ``np.copyto``, ``ufunc.at``, in-place sort, ...) ends
in the same three steps:

1. :func:`prepare_write` – refuse it (strict mode, frozen Buffer, read-only
   handle), copy borrowed memory (the caller's array is never written), and
   deal with every live capture whose memory overlaps the written place:
   poison it (``poison`` mode), or copy its old data out (``snapshot`` mode,
   and always for a capture made by the writing operation itself, which must
   not poison its own input).
2. numpy performs the write on the raw memory; the base's version grows by one.
3. :func:`commit` records a WRITE node so the base's current value on the tape
   is "old value with this place replaced".

A write whose old value no pullback reads poisons nothing and costs no copy:
that is the "easy case" the design exists for.
"""

from __future__ import annotations

from collections.abc import Callable
from sys import _getframe
from threading import get_ident
from types import FrameType
from typing import Any, cast

import numpy as np
from numpy import generic, ndarray  # (by name: see mutagrad.core.record)

from mutagrad.core.engine import (
    EXPORTED,
    RUNNING,
    Node,
    Trace,
    VjpRule,
    WriteRecord,
    current_trace,
    refuse_other_thread_write,
)
from mutagrad.core.memory import Region, copy_keeping_layout, layout_buffer
from mutagrad.core.record import push, record, save_output
from mutagrad.core.regions import (
    COMPLEX_FROM_PARTS,
    FANCY_INDEX,
    MASK_INDEX,
    NO_INDEX,
    WRITE,
    complex_elements,
    is_imaginary_part,
)
from mutagrad.core.registry import NONDIFFERENTIABLE, UFUNC_RULES, rule_found_on_miss
from mutagrad.diagnostics.messages import (
    conversion_message,
    missing_rule_message,
    view_stored_by_c_code_message,
)
from mutagrad.diagnostics.sites import (
    Site,
    format_site,
    user_site,
    user_site_from,
    with_article,
    writes_by_setitem_call,
)
from mutagrad.errors import (
    FrozenBufferError,
    MissingRuleError,
    MutagradError,
    NotDifferentiableError,
    TracerConversionError,
)
from mutagrad.traced import indexing
from mutagrad.traced.aliases import refuse_write_through
from mutagrad.traced.forward import forward_into, forward_result, forward_write, inputs_kept
from mutagrad.traced.value import (
    ALIASED,
    BORROWED,
    BUFFER,
    DETACHED,
    FROZEN,
    READONLY,
    SHARED_INPUT,
    THAWED,
    WrappedArray,
    WrappedValue,
    any_active,
    array_like,
    check_thread,
    holds_wrapped,
    is_active,
    make_view,
    node_of,
    operand,
    runs_elsewhere,
    stack_sequence,
    tangents_among,
    truncates,
    unwrap,
)

# --------------------------------------------------------------------------
# Step 1: permission, copy-on-write, captures.


def describe_array(w: WrappedArray) -> str:
    kind = "view" if w._base is not None else "array"
    return f"{w.dtype} {kind} of shape {w.shape}"


def prepare_write(w: WrappedArray, operation: str, trace: Trace | None) -> WrappedArray:
    """Check that ``w`` may be written and make its memory ours; return its base."""
    base = w._base if w._base is not None else w
    if trace is None:
        check_thread(w, operation)
    elif trace.thread != get_ident():
        # A thread that runs with the call's context (contextvars.copy_context().run):
        # its reads are recorded, but two threads writing views of one array at once
        # would each read the base's node before the other replaced it.
        refuse_other_thread_write(trace, operation, user_site(3))
    if w._flags & (READONLY | DETACHED):
        if w._flags & READONLY:
            raise MutagradError(
                f"{operation} on a value handed to a pullback: those are read-only, since the "
                "backward pass may read them again.\nFix: compute on a copy (v = v.copy()) "
                "or out of place."
            )
        if trace is not None:
            raise NotDifferentiableError(
                f"{operation} through a view that carries no derivative (from "
                "ignore_derivatives or a dtype-changing x.view()).\n"
                "Fix: write to the original array."
            )
    flags = base._flags
    if flags & ALIASED:  # a user rule's output over its argument's memory
        refuse_write_through(w, operation)
    if flags & SHARED_INPUT:
        raise NotDifferentiableError(
            f"{operation} on an argument whose array shares memory with another argument of "
            f"the same gradient call, at\n{format_site(user_site())}\n"
            "In numpy the write would show through the other argument too; mutagrad "
            "differentiates each argument as an array of its own, so it refuses the write.\n"
            "Fix: pass copies (f(x, x.copy())), or pass the array once and take views of it in f."
        )
    thawed = w._flags & THAWED
    if flags & FROZEN and not thawed:
        raise FrozenBufferError(
            f"{operation} on a Buffer after buffer.copy() froze it, at\n"
            f"{format_site(user_site())}\n"
            "Copying a Buffer hands its memory to the returned array without a copy, so it\n"
            "cannot change afterwards.\n"
            "Fix: write everything before calling copy(), or start a new Buffer."
        )
    if trace is not None:
        buffer = bool(flags & BUFFER) and not thawed
        trace.mode.check_write(operation, lambda: (describe_array(w), user_site(3)), buffer)
    if not w._raw.flags.writeable and not flags & BORROWED:
        raise ValueError("assignment destination is read-only")
    if flags & BORROWED:
        if not w._raw.flags.writeable:
            raise ValueError("assignment destination is read-only")
        copy_on_write(base)
    return base


def _rebased(view: ndarray, old_low: int, buffer: ndarray, dtype: Any = None) -> ndarray:
    """``view`` of memory that started at ``old_low``, moved to the same place in ``buffer``
    (as ``dtype``, of the same item size; default ``view``'s), read-only where it is."""
    offset = view.__array_interface__["data"][0] - old_low
    moved = ndarray(view.shape, view.dtype if dtype is None else dtype, buffer, offset,
                    view.strides)  # fmt: skip
    if not view.flags.writeable:
        moved.flags.writeable = False
    return moved


def copy_on_write(base: WrappedArray) -> None:
    """Give ``base`` its own copy of the caller's memory before its first write.

    Views follow the base into the new memory; captures keep reading the
    caller's memory (which never changes) but track overlap in the new one.
    """
    new, old_low, buffer = copy_keeping_layout(base._raw)
    base._raw = new
    base._flags &= ~BORROWED
    for view in base._views or ():
        view._raw = _rebased(view._raw, old_low, buffer)
        if view._views is not None:  # an aliased output (mutagrad.traced.aliases): its views
            for v in view._views:
                v._raw = _rebased(v._raw, old_low, buffer)
            view._views = None
    for c in base._captures or ():
        if c.region is not None:
            c.region = _rebased(c.region, old_low, buffer)
    base._views = None


def overlaps(a: ndarray, b: ndarray, max_work: int = 1000) -> bool:
    """Whether ``a`` and ``b`` share an element; when numpy cannot tell within
    ``max_work``, conservatively yes."""
    if a is b:
        return True
    try:
        # (numpy's stub allows max_work -1 and 0 only; the function takes any bound)
        return bool(np.shares_memory(a, b, max_work=max_work))  # type: ignore[arg-type]
    except np.exceptions.TooHardError:
        return True


def refuse_overlapping(
    target: Any, values: Any, what: str, why_and_fix: str, max_work: int = 1000
) -> None:
    """Raise if any traced array among ``values`` shares memory with ``target``.

    For the writes numpy performs element by element or piece by piece, where
    a value may be read after the same write changed it: the tape records
    every value as read first, so such a write is refused rather than
    recorded with another meaning. ``what`` names the write, ``why_and_fix``
    says why and what to do instead.
    """
    if not isinstance(target, WrappedValue) or type(target._raw) is not ndarray:
        return
    for x in values:
        if (
            isinstance(x, WrappedValue)
            and type(x._raw) is ndarray
            and overlaps(x._raw, target._raw, max_work)
        ):
            raise NotDifferentiableError(
                f"{what}, at\n{format_site(user_site())}\n{why_and_fix}"
            )


# The integer type of each item size: memory cells numbered in an array laid out as the
# written one, so numpy's own call on the numbers takes the path it takes on the data.
_CELL_NUMBERS: dict[int, type[np.signedinteger[Any]]] = {
    1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64,
}


def copy_as_numpy_does(
    w: WrappedArray, values: Any, perform: Callable[[ndarray, Any], None],
    operation: str,
) -> bool:  # fmt: skip
    """Write ``values`` into ``w`` as numpy's element-by-element copy ``perform(target, values)``
    does, when ``values`` shares memory with ``w``; False (nothing done) when it does not.

    numpy's ``x.flat[k] = v``, ``np.place`` and ``np.fill_diagonal`` copy one
    element at a time without buffering, so a value may be read after the same
    call overwrote it. The memory both share is numbered cell by cell, in an
    integer array of the same item size laid out byte for byte as the data,
    and ``perform`` runs on those numbers: afterwards each cell holds the
    number of the cell whose *original* value numpy leaves there (copies of
    copies included). The write is then one advanced-index assignment of
    those original values, gathered from ``values`` before it, which every
    path already records and differentiates.
    """
    return copy_several_as_numpy_does(w, [values], lambda t, v: perform(t, v[0]), operation)


def copy_several_as_numpy_does(
    w: WrappedArray, values: list[Any], perform: Callable[[ndarray, list[Any]], None],
    operation: str,
) -> bool:  # fmt: skip
    """:func:`copy_as_numpy_does` for a call that copies several values into ``w``
    (``np.concatenate(values, out=w)``, ``w[k] = [v0, v1]``): ``perform(target, values)``.

    The values that share ``w``'s memory are numbered by memory cell; every
    other value (another array, a traced scalar, a number) gets numbers of its
    own past those, so each number names one element of one value.
    """
    data = w._raw
    raws = [v._raw if isinstance(v, WrappedValue) else v for v in values]
    shared = [
        isinstance(r, ndarray) and type(data) is ndarray and overlaps(r, data, 10_000)
        for r in raws
    ]
    if not any(shared):
        return False
    itemsize = data.itemsize
    cell_type = _CELL_NUMBERS.get(itemsize)
    sharing = [data, *(r for r, s in zip(raws, shared) if s)]
    spans = [_byte_span(a) for a in sharing]
    low, high = min(span[0] for span in spans), max(span[1] for span in spans)
    aligned = all(
        (_first_address(a) - low) % itemsize == 0 and all(st % itemsize == 0 for st in a.strides)
        for a in sharing
    )
    others = [np.asarray(r) for r, s in zip(raws, shared) if not s]
    count = (high - low) // itemsize + sum(o.size for o in others)
    other_dtype = next((a.dtype for a in sharing[1:] if a.dtype != data.dtype), None)
    if (
        other_dtype is not None
        or cell_type is None
        or not aligned
        or count > np.iinfo(cell_type).max
    ):
        raise NotDifferentiableError(
            f"{operation} with values that share memory with the array it writes, at\n"
            f"{format_site(user_site())}\nnumpy reads such values while it writes them, one "
            f"element at a time; mutagrad follows that order for values of the array's own "
            f"dtype and item-aligned layout only (here {other_dtype or data.dtype} into "
            f"{data.dtype}).\nFix: pass a copy of the values (values.copy()) if the values as "
            "they were before the call are meant."
        )
    cells = np.arange((high - low) // itemsize, dtype=cell_type)

    # Each array as its cells' numbers, read-only where it is: numpy copies read-only values
    # before it writes (np.place among them), so a sliding window's values are read as they
    # were, a writeable view's as the call goes.
    numbers, next_number = [], cells.size
    for r, s in zip(raws, shared):
        if s:
            numbers.append(_rebased(r, low, cells, cell_type))
        else:
            size = int(np.size(r))
            fresh = np.arange(next_number, next_number + size, dtype=cell_type)
            numbers.append(fresh.reshape(np.shape(r)))
            next_number += size
    # (the target writeable whatever the data's flag: whether the write may happen is
    # decided after, by assign, which refuses it by name)
    target = ndarray(data.shape, cell_type, cells, _first_address(data) - low, data.strides)
    before = target.ravel().copy()
    value_cells = [n.ravel().copy() for n in numbers]
    perform(target, numbers)
    after = target.ravel()
    changed = np.flatnonzero(after != before)
    if changed.size == 0:
        return True
    owner = np.concatenate([np.full(c.size, k) for k, c in enumerate(value_cells)])
    found = _value_positions(np.concatenate(value_cells), after[changed], operation)
    starts = np.cumsum([0] + [c.size for c in value_cells])
    parts, order = [], []
    for k, v in enumerate(values):
        mine = np.flatnonzero(owner[found] == k)
        if mine.size == 0:
            continue
        at = found[mine] - starts[k]
        parts.append(np.ravel(v)[at] if isinstance(v, WrappedValue) else
                     np.ravel(np.asarray(raws[k]))[at])  # fmt: skip
        order.append(mine)
    picked = parts[0] if len(parts) == 1 else np.concatenate(parts)
    if len(parts) > 1:
        picked = picked[np.argsort(np.concatenate(order), kind="stable")]
    assign(w, np.unravel_index(changed, w.shape), picked, operation)
    return True


def _value_positions(value_cells: ndarray, wanted: ndarray, operation: str) -> ndarray:
    """Where in the (flat) values each wanted cell number is."""
    order = np.argsort(value_cells, kind="stable")
    at = np.minimum(np.searchsorted(value_cells, wanted, sorter=order), value_cells.size - 1)
    positions = order[at]
    if not np.array_equal(value_cells[positions], wanted):  # numpy copies values only
        raise NotDifferentiableError(
            f"{operation} left numbers in the array it writes that are not among the values "
            f"given, at\n{format_site(user_site())}\nFix: pass a copy of the values "
            "(values.copy())."
        )
    return positions


def _first_address(a: ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def _byte_span(a: ndarray) -> tuple[int, int]:
    """The lowest address ``a`` touches and one past its highest."""
    start = _first_address(a)
    low = start + sum(st * (n - 1) for st, n in zip(a.strides, a.shape) if st < 0 and n > 0)
    high = start + sum(st * (n - 1) for st, n in zip(a.strides, a.shape) if st > 0 and n > 0)
    return low, high + a.itemsize


class WrittenElements:
    """The elements an advanced-index or masked write really changes, for exact overlap tests.

    ``hits`` is a boolean array laid out like the base (see
    :class:`~mutagrad.core.memory.Region`): a capture overlaps the write if
    its region of ``hits`` holds a True. A write that selects nothing, or
    only elements outside a capture, then poisons nothing.
    """

    __slots__ = ("base_data", "hits")

    def __init__(self, view: ndarray, selected: ndarray, base_data: ndarray):
        self.base_data = base_data
        region = Region(view, base_data)
        self.hits = layout_buffer(base_data.shape, np.dtype(bool), region.layout)
        region.view_of(self.hits)[selected] = True

    def overlaps(self, region: ndarray) -> bool:
        try:
            return bool(Region(region, self.base_data).view_of(self.hits).any())
        except NotDifferentiableError:  # a dtype-reinterpreting view: be conservative
            return True


def _selection(view: ndarray, key: Any, mask: Any) -> ndarray:
    """A boolean array over ``view``: the elements ``view[key] = ...`` (or the mask) writes."""
    if mask is not None:
        return np.broadcast_to(np.asarray(mask, dtype=bool), view.shape)
    selected = np.zeros(view.shape, dtype=bool)
    selected[key] = True
    return selected


def invalidate(
    base: WrappedArray,
    place: ndarray,
    write: WriteRecord,
    own: Node | None,
    written: WrittenElements | None = None,
) -> None:
    """Poison or snapshot every live capture on ``base`` that overlaps ``place``.

    ``written``, for advanced-index and masked writes, says exactly which
    elements of ``place`` change.
    """
    caps = base._captures
    if not caps:
        return
    keep = []
    for c in caps:
        region = c.region
        if (
            region is None
            or not overlaps(region, place)
            or (written is not None and not written.overlaps(region))
        ):
            if region is not None:
                keep.append(c)
            continue
        if c.node is own:
            c.keep_old_value(write, counted=False)  # an operation never poisons its own input
        else:
            c.mode.overwrite(c, write)
    base._captures = keep


# --------------------------------------------------------------------------
# Step 3: the tape.


def _active_node(base: WrappedArray, trace: Trace) -> Node | None:
    n = base._node
    return n if n is not None and n.tape is trace.tape else None


def _covers_base(place: ndarray, base: WrappedArray) -> bool:
    data = base._raw
    if place is data:
        return True
    return (
        place.shape == data.shape
        and place.strides == data.strides
        and place.__array_interface__["data"][0] == data.__array_interface__["data"][0]
    )


def commit(
    base: WrappedArray,
    place: ndarray,
    value_node: Node | None,
    trace: Trace,
    caller: FrameType,
    kind: int = NO_INDEX,
    index: Any = None,
    winners: Any = None,
    site: Site | None = None,
    element: Any = None,
) -> None:
    """Make the base's node "old value with ``place`` replaced by ``value_node``".

    ``site``: where the write is in the user's code, when the caller knows already;
    otherwise found here, if the node needs it, by the walk from ``caller``, the frame
    that asked for the write (:func:`assign`). ``element``: for a write of one element
    through the base itself, its index (the pullback then reads and zeroes that element
    without a Region).
    """
    old_node = _active_node(base, trace)
    if old_node is None and value_node is None:
        return
    if value_node is not None and base._flags & EXPORTED:
        _refuse_exported(site)
    tape = trace.tape
    if (
        old_node is None
        and kind == NO_INDEX
        and value_node.shape == base._raw.shape  # type: ignore[union-attr]  # (not both None)
        and value_node.dtype == base._raw.dtype  # type: ignore[union-attr]  # (a cast is a node)
        and _covers_base(place, base)
    ):
        # Nothing of the old value survives, and it was constant: the value's node is the
        # array's, when it stands for the array's values as they are. A value of another
        # dtype was cast (x written into a complex array): its node's cotangents are of
        # x's dtype, and the array's views would hand it complex ones; the write node
        # below casts them (a real value's cotangent is the real part).
        base._node = value_node
    else:
        tag = (old_node.tag if old_node is not None else 0) | (
            value_node.tag if value_node is not None else 0
        )
        data = base._raw
        if site is None:
            site = user_site_from(caller)
        node = Node(WRITE, (old_node, value_node), tape, tag, data, site)
        kwargs = {
            "view": place,
            "base": data,
            "kind": kind,
            "index": index,
            "winners": winners,
            "element": element,
        }
        base._node = push(node, (), kwargs)
    tape.touch(base)


def _refuse_forward_write_into(base: WrappedArray, site: Site | None) -> None:
    """A value with a tangent written into ``base``: refused where the tangent would be lost
    (memory numpy handed out as a plain array)."""
    if base._flags & EXPORTED:
        _refuse_exported(site)


# --------------------------------------------------------------------------
# The write paths.


def _refuse_exported(site: Site | None) -> None:
    raise NotDifferentiableError(
        "a differentiated value was written into an array whose memory plain numpy code "
        "holds: np.asarray (or np.asfortranarray, np.ascontiguousarray...) handed it to "
        "numpy as a plain array, or a user's rule returned it without allocating it (a "
        "global array, a cached one, or a view of one), "
        f"at\n{format_site(site if site is not None else user_site())}\n"
        "The plain array shows the new values but carries no derivative, so values "
        "computed from it would be silently wrong.\nFix: write into a copy (a = a.copy()), "
        "an array that was never passed to np.asarray, or pass the differentiated array "
        "itself; or return new memory from the rule."
    )


def _write_record(
    base: WrappedValue,
    operation: str,
    key: Any,
    place: ndarray,
    trace: Trace | None,
    caller: FrameType,
    site: Site | None = None,
) -> WriteRecord | None:
    """What the write does, for the captures it poisons and ``explain``'s journal.

    None when nothing will read it: no capture on the base and no journal.
    The record holds the user's site: ``site`` when the caller knows it, else
    the walk from ``caller`` (:func:`assign`); a write that records a node
    takes the record's (:func:`commit`), so the walk is made once at most.
    """
    tape = trace.tape if trace is not None else None
    journal = tape.journal if tape is not None else None
    if not base._captures and journal is None:
        return None
    if site is None:
        site = user_site_from(caller)
    record = WriteRecord(base, operation, site, base._version + 1, key, place)
    if journal is not None:
        assert tape is not None
        journal.append((len(tape.nodes), record))
    return record


# Flags that change what a write does even when no gradient call is active
# (prepare_write): refused (READONLY, SHARED_INPUT, FROZEN, ALIASED) or copied first
# (BORROWED).
# The others (BUFFER, DETACHED, PINNED, THAWED without FROZEN, EXPORTED) only
# matter to a write recorded on a tape.
_UNTRACED_WRITE_FLAGS = READONLY | SHARED_INPUT | FROZEN | BORROWED | ALIASED


def _writes_plainly(w: WrappedArray, base: WrappedArray) -> bool:
    """Whether a write to ``w`` outside any gradient call is numpy's write and a new version.

    That is all :func:`prepare_write`, :func:`invalidate` and the write path do
    when no trace is active, no flag of ``w`` or its base asks for more, and
    no capture lives on the base: a pullback's saved value (``pullback``'s
    ``back`` runs later, outside any trace), an inert capture of a released
    tape (the slow path drops it), or a checkpoint's guard. Nor when a gradient
    call is running (in another thread) and the array's value is on a tape.
    """
    return not (
        (w._flags | base._flags) & _UNTRACED_WRITE_FLAGS
        or base._captures
        or (RUNNING and base._node is not None)
    )


def setitem(w: WrappedArray, index: Any, value: Any) -> None:
    # (the trace first: isinstance would ask a traced scalar its __class__, a Python property)
    if type(index) is int and current_trace() is None and isinstance(value, _NUMBERS):
        # y[i] = number outside any gradient call: _assign_untraced's commonest
        # case, unrolled (an int index is its own normalized index).
        base = w._base
        if base is None:
            base = w
        if not (
            (w._flags | base._flags) & _UNTRACED_WRITE_FLAGS
            or base._captures
            or (RUNNING and base._node is not None)  # (a call's, in another thread?)
        ):
            w._raw[index] = value
            base._version += 1
            return
    if type(value) is WrappedArray and value._base is not None:
        _refuse_view_stored_by_c_code(w, value)
    # This is WrappedArray.__setitem__ itself: frame 1 is the user's, usually, where the
    # walk to the write's site starts (assign). Taken while a gradient call runs only: a
    # write outside one rarely needs its site, and _getframe costs ~270 instructions
    # (without it, assign starts the walk here: the same site, one frame further).
    assign(w, index, value, "__setitem__", None, _getframe(1) if RUNNING else None)


def _subscript_store_opcodes() -> frozenset[int]:
    """The opcodes of the statements that store into a subscript (``a[i] = v``, and from
    Python 3.12 ``a[i:j] = v``), as the frame calling ``__setitem__`` executes them:
    measured on a probe rather than named, as the instruction set changes between versions."""
    seen = set()

    class Probe:
        def __getitem__(self, key: Any) -> int:
            return 0

        def __setitem__(self, key: Any, value: Any) -> None:
            frame = _getframe(1)
            seen.add(frame.f_code.co_code[frame.f_lasti])

    probe = Probe()
    probe[0] = 0
    probe[0:1] = 0
    probe[0] += 1
    probe[0], probe[1] = 0, 0
    return frozenset(seen)


SUBSCRIPT_STORES = _subscript_store_opcodes()


def _refuse_view_stored_by_c_code(w: WrappedArray, value: WrappedArray) -> None:
    """Refuse ``w[k] = value`` by C code, ``value`` a view sharing ``w``'s memory.

    C code that checks for an ndarray in C (numpy's ``shuffle``) does not see
    one in a WrappedArray and falls back to Python's sequence protocol: its
    ``x[i], x[j] = x[j], x[i]`` swaps rows through views, so the second store
    copies back the row the first overwrote, where for an ndarray it swaps
    through a buffer. No Python frame stands between such a write and the
    frame that made the call, which is executing that call, not a subscript
    store. Writes spelled in Python (``a[i] = a[j]``, ``a.__setitem__(i, v)``,
    ``operator.setitem``, numpy's Python code) are numpy's and pass; so do
    1-D shuffles, whose elements are traced scalars, not views.
    """
    base = w._base if w._base is not None else w
    if value._base is not base:
        return
    caller = _getframe(2)  # (the frame whose instruction stored: setitem's caller)
    if caller.f_code.co_code[caller.f_lasti] in SUBSCRIPT_STORES:
        return
    call_site = (caller.f_code, caller.f_lasti)
    if writes_by_setitem_call(call_site) or not overlaps(value._raw, w._raw):
        return
    raise NotDifferentiableError(view_stored_by_c_code_message(call_site, user_site_from(caller)))


# Values a write stores as they are (neither a WrappedValue nor a list).
_NUMBERS = (float, int, generic)


def assign(
    w: WrappedArray, index: Any, value: Any, operation: str, mask: Any = None,
    caller: FrameType | None = None,
) -> None:  # fmt: skip
    """``w[index] = value`` (``np.copyto(w, value, where=mask)`` when ``mask`` is given).

    The steps, each a function below: :func:`_checked_value` (may ``w`` be
    written, and with what: the value, its node), :func:`_landing` (where in
    ``w``'s memory the values land), :func:`_poison` (the captures the write
    overlaps), :func:`_write` (numpy's write, the new version), then
    :func:`commit` (the write's node, inside a gradient call).

    ``caller``: the frame that asked for the write (``x[i] = v``: the user's
    own), where the walk to the user's site starts when the write's record or
    node needs one; by default assign's caller. Never a frame outside the
    user's: the walk goes outward from it.
    """
    trace = current_trace()
    key, basic = indexing.normalize_index(index)
    if trace is None and mask is None and _assign_untraced(w, key, basic, value):
        return
    if caller is None:
        caller = _getframe(1)
    if is_part_view(w):
        _assign_part(w, index, value, operation, mask, caller)
        return
    if (
        operation in _STORES_SEQUENCES
        and mask is None
        and type(value) in (list, tuple)
        and holds_wrapped(value)
        and _sequence_as_numpy_stores_it(w, key, value, operation)
    ):
        return
    value, raw_value, value_node, base = _checked_value(w, value, operation, trace)
    if basic and mask is None and _is_self_assignment(w, key, value):
        return  # y[i] = y[i] (as in `y[:, j] /= s`): numpy copies nothing onto itself
    data = w._raw
    # (a value with a tangent is differentiated as a value with a node is)
    tangent = trace is not None and bool(trace.forward) and tangents_among((value,), trace.forward)
    differentiated = value_node is not None or tangent
    if differentiated and data.dtype.kind in "biu":
        _refuse_truncation(data, raw_value, operation)
    kind, place, index_out, winners, element = _landing(w, data, key, basic, mask,
                                                        differentiated)  # fmt: skip
    write = _poison(base, data, key, kind, place, mask, index_out, operation, trace, caller)
    _write(data, key, raw_value, mask, index_out, place, kind, trace, operation, write)
    base._version += 1
    if trace is not None:
        site = write.site if write is not None else None  # None: commit finds it if it needs it
        commit(base, place, value_node, trace, caller, kind, index_out, winners, site, element)
        if trace.forward:
            if tangent:
                _refuse_forward_write_into(base, site)
            forward_write(w, base, key, index_out if mask is not None else None, winners,
                          value, trace)  # fmt: skip


def is_part_view(w: WrappedArray) -> bool:
    """Whether ``w`` views one part of a complex array's elements (``z.real``, ``z.imag``)."""
    base = w._base
    return base is not None and w._raw.itemsize != base._raw.itemsize and (
        base._raw.dtype.kind == "c"
    )


def _assign_part(
    w: WrappedArray, index: Any, value: Any, operation: str, mask: Any, caller: FrameType,
    own: Node | None = None,
) -> None:  # fmt: skip
    """:func:`assign` into one part of complex elements (``z.real[i] = v``).

    numpy's write, and the poisoning of the captures it overlaps, happen on the
    part (a capture of the other part stays valid); the tape records the write of
    whole elements: the other part is read first (so the old values' gradient
    flows where it should) and the new elements carry both parts' nodes
    (:data:`~mutagrad.core.regions.COMPLEX_FROM_PARTS`). ``caller``: as for :func:`assign`.
    ``own``: the node of the operation whose result is written (its own saved inputs are
    kept, not poisoned).
    """
    trace = current_trace()
    key, basic = indexing.normalize_index(index)
    value, raw_value, _, base = _checked_value(w, value, operation, trace)
    data = w._raw  # (after _checked_value: a borrowed array's memory may have moved)
    elements = complex_elements(data, base._raw)
    if elements is None:  # (is_part_view holds: numpy's part views always fit)
        raise AssertionError("a view of one part of complex elements that they do not fit")
    node = None
    tangent = trace is not None and bool(trace.forward) and tangents_among((value,), trace.forward)
    if trace is not None:
        if tangent:
            _refuse_forward_write_into(base, None)
        imaginary = is_imaginary_part(data, elements)
        node = _parts_node(base, elements, key, mask, value, imaginary, trace)
    differentiated = node is not None or tangent
    kind, place, index_out, winners, _ = _landing(w, data, key, basic, mask, differentiated)
    write = _poison(base, data, key, kind, place, mask, index_out, operation, trace, caller, own)
    _write(data, key, raw_value, mask, index_out, place, kind, trace, operation, write)
    base._version += 1
    if trace is not None:
        whole_place = _landing(w, elements, key, basic, mask, node is not None)[1]
        site = write.site if write is not None else None
        commit(base, whole_place, node, trace, caller, kind, index_out, winners, site)
        if trace.forward:  # (the part's tangent: the same part of the elements' tangents)
            forward_write(w, base, key, index_out if mask is not None else None, winners,
                          value, trace)  # fmt: skip


def _parts_node(
    base: WrappedArray, elements: ndarray, key: Any, mask: Any, value: Any,
    imaginary: bool, trace: Trace,
) -> Node | None:  # fmt: skip
    """The node of the elements a part write leaves: the written part and the other part,
    read now, before the write (None when neither carries a gradient)."""
    whole = make_view(base, elements)
    selected = whole if mask is not None else whole[key]
    other = selected.real if imaginary else selected.imag
    parts = (other, value) if imaginary else (value, other)
    resolved = [operand(p, trace.tape) for p in parts]
    nodes = [n for _, n in resolved]
    if all(n is None for n in nodes):
        return None
    lends = np.empty(np.shape(selected._raw), elements.dtype)  # (its shape and dtype)
    node, _ = record(COMPLEX_FROM_PARTS, parts, [r for r, _ in resolved], nodes, lends,
                     None, trace, user_site(3))  # fmt: skip
    return node


def _checked_value(
    w: WrappedArray, value: Any, operation: str, trace: Trace | None
) -> tuple[Any, Any, Node | None, WrappedArray]:
    """Check the write (:func:`prepare_write`) and resolve the value: ``(value, its raw data,
    its node, w's base)``. A list of traced values is stacked first."""
    if type(value) in (list, tuple) and holds_wrapped(value):
        # (numpy makes an array of x.real = [...]'s list first, where it buffers it)
        if operation != "x.real = ..." or not REAL_SETTER_BUFFERS:
            _refuse_sequence_of_views(w, value, operation)
        value = stack_sequence(value)  # y[:2] = [x[0], x[1]] keeps both gradients
    wrapped_value = isinstance(value, WrappedValue)
    if wrapped_value and trace is None:
        check_thread(value, operation)
    value_node = node_of(value, trace.tape) if wrapped_value and trace is not None else None
    base = prepare_write(w, operation, trace)  # strict mode refuses even a no-op write
    # Read after prepare_write: a view of a borrowed array follows it into its own
    # memory there, and numpy's result for overlapping memory depends on where the
    # value really is (x[::2] = x[2:] on a reversed argument is not buffered).
    if wrapped_value:
        raw_value = value._raw
    else:
        raw_value = unwrap(value) if isinstance(value, (list, tuple)) else value
    return value, raw_value, value_node, base


def _refuse_truncation(data: ndarray, raw_value: Any, operation: str) -> None:
    """Traced floats stored into an integer array: numpy truncates them, which is refused."""
    if np.asarray(raw_value).dtype.kind in "fc":
        raise NotDifferentiableError(
            f"{operation} stores traced floating-point values into "
            f"{with_article(str(data.dtype))} array, which "
            "truncates them; the result has no derivative.\nFix: use a float array, or cast "
            "explicitly (x.astype(int)) if the truncation is intended."
        )


def _landing(
    w: WrappedArray, data: ndarray, key: Any, basic: bool, mask: Any, differentiated: bool
) -> tuple[int, ndarray, Any, Any, Any]:
    """Where the values land: ``(kind of index, the place written, the index, the winners of
    repeated fancy indices (for a value that carries a derivative), the element index of a
    one-element write into the base)``."""
    if mask is not None:
        return MASK_INDEX, data, np.array(mask, dtype=bool), None, None
    if not basic:
        winners = _winners(data, key) if differentiated else None
        return FANCY_INDEX, data, key, winners, None
    place = data[key]
    element = None
    # (Tests of the type, not isinstance, which looks up __class__ of a numpy scalar and
    # an int.) Every axis indexed by an integer: one element.
    if not issubclass(type(place), ndarray):
        place = data[(*key, Ellipsis) if issubclass(type(key), tuple) else (key, Ellipsis)]
        if w._base is None:
            element = key  # an index into the base itself, as the pullback's g is
    return NO_INDEX, place, None, None, element


def _poison(
    base: WrappedArray, data: ndarray, key: Any, kind: int, place: ndarray, mask: Any,
    index_out: Any, operation: str, trace: Trace | None, caller: FrameType,
    own: Node | None = None,
) -> WriteRecord | None:  # fmt: skip
    """Poison (or snapshot) the captures the write overlaps; the write's record, if needed.
    ``caller``: see :func:`assign`. ``own``: the node of the operation whose result is
    written (its inputs are kept)."""
    write = _write_record(base, operation, key, place, trace, caller)
    if write is not None:  # a capture to poison, or explain's journal
        written = None
        if kind != NO_INDEX and base._captures:
            selected = _selection(data, key, index_out if mask is not None else None)
            written = WrittenElements(data, selected, base._raw)
        invalidate(base, place, write, own, written)
    return write


def _write(
    data: ndarray, key: Any, raw_value: Any, mask: Any, index_out: Any, place: ndarray,
    kind: int, trace: Trace | None, operation: str, write: WriteRecord | None,
) -> None:  # fmt: skip
    """numpy's write, refused where it copied overlapping values element by element.

    The tape records the value as read before the write. numpy promises that
    for overlapping memory, but not in every case (a reversed array written
    from itself is copied element by element): keep the old value to check.
    Outside a gradient call nothing is recorded (a capture is poisoned or
    copied whichever values land), so numpy's result stands, as for an ndarray.
    """
    before = (
        raw_value.copy()
        if trace is not None
        and kind == NO_INDEX
        and type(raw_value) is ndarray
        and overlaps(raw_value, place)
        else None
    )
    if mask is None:
        data[key] = raw_value
    else:
        np.copyto(data, raw_value, where=index_out)
    if before is not None and not np.array_equal(
        place, np.broadcast_to(before.astype(place.dtype), place.shape), equal_nan=True
    ):
        raise NotDifferentiableError(
            f"{operation} of values that share memory with the place written, at\n"
            f"{format_site(write.site if write is not None else user_site())}\n"
            "numpy copied them element by element here, so later elements read values the "
            "same write had just replaced; mutagrad records the values as read first.\n"
            "Fix: copy the values (y[k] = v.copy()) if the values before the write are meant."
        )


def _assign_untraced(w: WrappedArray, key: Any, basic: bool, value: Any) -> bool:
    """``w[key] = value`` outside any gradient call, if nothing but numpy's write is needed.

    Returns False, having done nothing, where :func:`assign`'s full path does
    more than write the values and bump the base's version (or, for a
    self-assignment, nothing at all): a flag or a capture
    (:func:`_writes_plainly`); a list or tuple holding WrappedValues (stacked,
    and refused when one is a view of ``w``). Otherwise its effect is the full
    path's exactly: no node is recorded outside a trace, and there is nothing
    to poison.
    """
    base = w._base
    if base is None:
        base = w
    # _writes_plainly, inlined: this runs for every element written outside a trace.
    if (
        (w._flags | base._flags) & _UNTRACED_WRITE_FLAGS
        or base._captures
        or (RUNNING and base._node is not None)
    ):
        return False
    kind = type(value)
    if kind is float or kind is int:
        raw = value
    elif kind is list or kind is tuple:
        if holds_wrapped(value):
            return False
        raw = unwrap(value)
    elif isinstance(value, WrappedValue):
        if runs_elsewhere(value):
            return False  # assign refuses it
        if basic and _is_self_assignment(w, key, value):
            return True  # as the full path: nothing copied, no new version (`y[1:] -= v`)
        raw = value._raw
    else:
        raw = value
    w._raw[key] = raw
    base._version += 1
    return True


def _sequence_leaves(value: Any) -> Any:
    for v in value:
        if type(v) in (list, tuple):
            yield from _sequence_leaves(v)
        else:
            yield v


def _real_setter_buffers() -> bool:
    """Whether the installed numpy's ``x.real = [...]`` converts the list to an array before
    it stores it (numpy 2.2 to 2.4), or stores it element by element as ``x[...] = [...]``
    does (numpy 2.5): asked of numpy, as tests/numpy_compat.py asks it."""
    probe = np.arange(4.0).reshape(2, 2)
    probe.real = [probe[1], probe[0]]
    return bool(probe[1, 0] == 0.0)


REAL_SETTER_BUFFERS = _real_setter_buffers()

# The writes numpy performs from a list element by element (x.real = [...] too where numpy
# does not convert the list to an array first).
_STORES_SEQUENCES = frozenset(
    {"__setitem__", "x.setfield()"} | (set() if REAL_SETTER_BUFFERS else {"x.real = ..."})
)


def _sequence_as_numpy_stores_it(w: WrappedArray, key: Any, value: Any, operation: str) -> bool:
    """``w[key] = [a, b, ...]`` (or ``w.setfield([...], w.dtype)``) where an element shares
    ``w``'s memory, in numpy's order: numpy stores the sequence one element at a time
    (``x[:2] = [x[1], x[0]]`` leaves both rows equal to the old ``x[1]``). False, nothing
    done, where no element shares it."""
    leaves = list(_sequence_leaves(value))
    if not any(isinstance(v, WrappedArray) for v in leaves):
        return False

    def store(target: ndarray, numbered: list[Any]) -> None:
        rebuilt = _with_leaves(value, iter(numbered))
        if operation == "__setitem__":
            target[key] = rebuilt
        elif operation == "x.setfield()":
            target.setfield(rebuilt, target.dtype)
        else:  # x.real = [...] of a real array, on a numpy that stores it element by element
            target.real = rebuilt

    store(np.empty(w.shape, w.dtype), [unwrap(v) for v in leaves])  # numpy's own errors first
    return copy_several_as_numpy_does(w, leaves, store, operation)


def _with_leaves(value: Any, leaves: Any) -> Any:
    """``value`` (nested lists and tuples) with its leaves replaced by ``leaves``, in order."""
    return type(value)(
        _with_leaves(v, leaves) if type(v) in (list, tuple) else next(leaves) for v in value
    )


def _refuse_sequence_of_views(w: WrappedArray, value: Any, operation: str) -> None:
    """Refuse ``w[k] = [a, b]`` where ``a`` or ``b`` is a view of ``w``'s memory.

    numpy stores a sequence element by element, reading each element only
    when it gets to it (``x[:2] = [x[1], x[0]]`` leaves both rows equal to the
    old ``x[1]``); the tape would record the values as read before the write.
    """
    refuse_overlapping(
        w._base if w._base is not None else w,
        _sequence_leaves(value),
        f"{operation} of a list or tuple holding a view of the array written",
        "numpy stores such a sequence one element at a time, so a later element may read "
        "values an earlier one has just overwritten; mutagrad does not reproduce that "
        "order.\nFix: store np.stack([...]) (the values as they were before the write), or "
        "write the elements one statement at a time.",
    )


def _is_self_assignment(w: WrappedArray, key: Any, value: Any) -> bool:
    """Whether ``w[key] = value`` stores a view onto exactly the memory it came from."""
    if not isinstance(value, WrappedValue) or type(value._raw) is not ndarray:
        return False
    base = w._base if w._base is not None else w
    value_base = value._base if value._base is not None else value
    if value_base is not base:
        return False
    place = w._raw[key]
    source = value._raw
    return (
        isinstance(place, ndarray)
        and place.shape == source.shape
        and place.strides == source.strides
        and place.dtype == source.dtype
        # Disjoint bounds (the usual y[2:5] = y[5:8]) answer without building
        # __array_interface__ twice; an empty place may still start where the value does.
        and (not place.size or np.may_share_memory(place, source))
        and place.__array_interface__["data"][0] == source.__array_interface__["data"][0]
    )


def _winners(data: ndarray, key: Any) -> ndarray | None:
    """For an advanced index that repeats positions: which written elements numpy kept.

    numpy keeps one value per repeated position without promising which, so
    ask it: write element numbers through the same index and read them back.
    """
    probe = np.full(data.shape, -1, dtype=np.intp)
    selected_shape = probe[key].shape
    numbers = np.arange(int(np.prod(selected_shape, dtype=np.int64))).reshape(selected_shape)
    probe[key] = numbers
    kept = probe[key] == numbers
    return None if kept.all() else kept


def write_in_place(
    rule: VjpRule | None,
    inputs: tuple[Any, ...],
    out: WrappedArray,
    kwargs: dict[str, Any] | None,
    perform: Callable[[list[Any], ndarray], None],
    operation: str,
    caller: FrameType | None = None,
) -> WrappedArray:
    """Write ``rule(*inputs)`` into ``out`` in place; ``perform(raw_inputs, target)`` writes.

    The rule's node becomes ``out``'s new value. Its own saved inputs that
    alias ``out`` are copied before the write (it must not poison itself);
    a rule reading its output reads ``out`` after the write. ``rule`` is
    ``None`` for a write whose value carries no derivative. The steps: check
    (:func:`prepare_write`), record the operation (:func:`_record_operation`),
    poison what the write overlaps, numpy's write, then record the write.
    Outside a gradient call :func:`_write_in_place_untraced` does the same
    where only numpy's write and a new version are needed. ``caller``: where
    the walk to the user's site starts, as for :func:`assign`.
    """
    trace = current_trace()
    if trace is None and _write_in_place_untraced(inputs, out, perform):
        return out
    if caller is None:
        caller = _getframe(1)
    if is_part_view(out):
        return _write_part_in_place(rule, inputs, out, kwargs, perform, operation, trace, caller)
    base = prepare_write(out, operation, trace)
    tape = trace.tape if trace is not None else None
    inputs = tuple(array_like(a) for a in inputs)
    resolved = [operand(a, tape) for a in inputs]
    raw = [r for r, _ in resolved]
    nodes = [n for _, n in resolved]
    target = out._raw
    node, need_ans, site = _record_operation(rule, inputs, raw, nodes, base, target, kwargs, trace,
                                             caller)  # fmt: skip
    write = _write_record(base, operation, Ellipsis, target, trace, caller, site)
    if write is not None:
        invalidate(base, target, write, node)
    forward = trace is not None and bool(trace.forward)
    if forward:
        assert trace is not None
        rule = _forward_rule(rule, inputs, raw, target, base, trace)
        kept = inputs_kept(rule, inputs, raw, target, trace) if rule is not None else (raw, None)
    perform(raw, target)
    base._version += 1
    if trace is None:
        return out
    if node is not None and need_ans:
        save_output(node, out, trace.mode)
    if node is not None and out._base is None:
        base._node = node  # the op's value is the array's whole new value
        trace.tape.touch(base)
    else:
        commit(base, target, node, trace, caller, site=write.site if write is not None else site)
    if forward:
        forward_into(rule, inputs, kept, out, base, kwargs, trace)
    return out


def _forward_rule(
    rule: Any, inputs: tuple[Any, ...], raw: list[Any], target: ndarray, base: WrappedArray,
    trace: Trace,
) -> Any:  # fmt: skip
    """The rule whose jvp gives an in-place write's tangent; None where the written values
    carry none (no input has a tangent, or floats truncated into an integer array)."""
    if rule is None or not tangents_among(inputs, trace.forward):
        return None
    if target.dtype.kind in "biu" and any(np.result_type(r).kind in "fc" for r in raw):
        return None
    _refuse_forward_write_into(base, None)
    return rule
def _write_part_in_place(
    rule: VjpRule | None, inputs: tuple[Any, ...], out: WrappedArray,
    kwargs: dict[str, Any] | None, perform: Callable[[list[Any], ndarray], None],
    operation: str, trace: Trace | None, caller: FrameType,
) -> WrappedArray:  # fmt: skip
    """:func:`write_in_place` into one part of complex elements (``z.real += v``): the
    operation computed into a copy (numpy's values: numpy buffers an output that overlaps
    an input), then written there by :func:`_assign_part`."""
    inputs = tuple(array_like(a) for a in inputs)
    resolved = [operand(a, trace.tape if trace is not None else None) for a in inputs]
    raw = [r for r, _ in resolved]
    nodes = [n for _, n in resolved]
    result = np.array(out._raw, copy=True)
    perform(raw, result)
    value: Any = result
    node = None
    if trace is not None and rule is not None and not truncates(result, raw, nodes):
        if any(n is not None for n in nodes):
            node, need_ans = record(rule, inputs, raw, nodes, result, kwargs, trace, user_site())
            value = WrappedArray(result, node)
            if need_ans:
                save_output(node, value, trace.mode)
        if trace.forward and tangents_among(inputs, trace.forward):
            # (the inputs' tangents as they are before the part is written)
            wrapped = value if node is not None else WrappedArray(result)
            value = forward_result(rule, inputs, raw, wrapped, kwargs, trace)
    _assign_part(out, Ellipsis, value, operation, None, caller, node)
    return out


def _write_in_place_untraced(
    inputs: tuple[Any, ...], out: WrappedArray, perform: Callable[[list[Any], ndarray], None]
) -> bool:
    """:func:`write_in_place` outside a gradient call when no flag or capture asks for more.

    Returns False, having done nothing, where the full path is needed: a
    flag or a capture (:func:`_writes_plainly`), an input that is a list
    holding WrappedValues (stacked there), or one of a call running in
    another thread (refused there).
    """
    base = out._base if out._base is not None else out
    if not _writes_plainly(out, base):
        return False
    raw_inputs = []
    for a in inputs:
        kind = type(a)
        if (kind is list or kind is tuple) and holds_wrapped(a):
            return False
        if isinstance(a, WrappedValue):
            if RUNNING and runs_elsewhere(a):
                return False
            a = a._raw
        raw_inputs.append(a)
    perform(raw_inputs, out._raw)
    base._version += 1
    return True


def _record_operation(
    rule: VjpRule | None, inputs: tuple[Any, ...], raw: list[Any], nodes: list[Node | None],
    base: WrappedArray, target: ndarray, kwargs: dict[str, Any] | None, trace: Trace | None,
    caller: FrameType,
) -> tuple[Node | None, bool, Site | None]:  # fmt: skip
    """The node of the operation whose result the write stores, if it carries a derivative:
    ``(node, whether its pullback reads the output, the user's site)``, the site walked
    from ``caller`` (:func:`assign`)."""
    if rule is None or all(n is None for n in nodes) or truncates(target, raw, nodes):
        return None, False, None  # (traced floats truncated into an integer array)
    assert trace is not None
    if base._flags & EXPORTED:
        _refuse_exported(None)
    site = user_site_from(caller)
    node, need_ans = record(rule, inputs, raw, nodes, target, kwargs, trace, site)
    return node, need_ans, site


def ufunc_into(
    ufunc: np.ufunc, inputs: tuple[Any, ...], out: WrappedArray, kwargs: dict[str, Any],
    caller: FrameType | None = None,
) -> WrappedArray:
    """``ufunc(*inputs, out=out)`` where ``out`` is a WrappedArray (``x += v`` included).
    ``caller``: where the walk to the user's site starts (:func:`assign`)."""
    rule = UFUNC_RULES.get(ufunc)
    if (
        rule is None
        and ufunc not in NONDIFFERENTIABLE
        and (any_active(inputs) or any_active((out,)))
    ):
        if rule_found_on_miss(ufunc):  # SciPy's, registered when first met
            return ufunc_into(ufunc, inputs, out, kwargs, caller)
        raise MissingRuleError(missing_rule_message(f"np.{ufunc.__name__}"))

    operation = f"np.{ufunc.__name__}(..., out=)"
    if rule is not None and type(rule) is not VjpRule:
        # A user's rrule for the ufunc records its own call: the result, then the write
        # (what numpy's out= of an elementwise function amounts to, buffered).
        assign(out, Ellipsis, rule.call(inputs, kwargs or None), operation, None, caller)
        return out

    def perform(raw: list[Any], target: ndarray) -> None:
        ufunc(*raw, out=target, **kwargs)

    return write_in_place(rule, inputs, out, kwargs or None, perform, operation, caller)


def ufunc_with_out(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict) -> Any:
    """A ufunc call with ``out=``: in place into WrappedArrays, refused into raw arrays."""
    kwargs = dict(kwargs)
    out = kwargs.pop("out")
    outs = out if isinstance(out, tuple) else (out,)
    if not any(isinstance(o, WrappedValue) for o in outs):

        if any_active(inputs):
            raise TracerConversionError(
                conversion_message(f"np.{ufunc.__name__}(..., out=ndarray)")
            )
        return getattr(ufunc, method)(*unwrap(inputs), out=out, **unwrap(kwargs))
    # (reduce's where= selects the elements reduced; its out= is written whole, below)
    if "where" in kwargs and method != "reduce" and (any_active(inputs) or any_active(outs)):
        if method == "outer" and len(inputs) == 2:  # the ufunc of a column and a row
            a, b = (operand_value(x) for x in inputs)
            inputs = (np.reshape(a, np.shape(a) + (1,) * np.ndim(b)), b)
            method = "__call__"
        if method != "__call__" or ufunc.nout != 1 or not isinstance(outs[0], WrappedArray):
            raise NotDifferentiableError(
                f"np.{ufunc.__name__}{'' if method == '__call__' else '.' + method}(..., "
                "out=..., where=...) on traced arrays is supported for a ufunc call with one "
                "output only.\nFix: compute the full result and select: "
                "out[...] = np.where(mask, result, out)."
            )
        return _ufunc_where_into(ufunc, inputs, outs[0], kwargs)
    if method == "__call__" and len(outs) == 1:
        return ufunc_into(ufunc, inputs, outs[0], kwargs)
    results = getattr(ufunc, method)(*inputs, **kwargs)
    results = results if isinstance(results, tuple) else (results,)
    for o, r in zip(outs, results):
        if o is None:
            continue
        if isinstance(o, WrappedValue):
            # (an array: numpy refuses a scalar out= before it asks __array_ufunc__)
            assign(cast(WrappedArray, o), Ellipsis, r, f"np.{ufunc.__name__}(..., out=)")
        else:

            if isinstance(r, WrappedValue) and is_active(r):
                raise TracerConversionError(
                    conversion_message(f"np.{ufunc.__name__}(..., out=ndarray)")
                )
            o[...] = unwrap(r)
    return out


def _ufunc_where_into(
    ufunc: np.ufunc, inputs: tuple[Any, ...], out: WrappedArray, kwargs: dict[str, Any]
) -> WrappedArray:
    """``ufunc(*inputs, out=out, where=mask)``: numpy computes and writes the selected
    elements only, and ``out`` keeps the others.

    So here: the inputs gathered at the selected positions (broadcast to
    ``out``'s shape first), the ufunc of those, and one advanced-index write.
    The elements left out are never computed, so their values (a division by
    zero the mask avoids) reach neither the result nor the gradient. numpy's
    own call on scratch copies runs first: its errors (a shape, a cast) are the
    program's.
    """
    kwargs = dict(kwargs)
    where = unwrap(kwargs.pop("where"))
    ufunc(*unwrap(inputs), out=np.array(out._raw), where=where, **unwrap(kwargs))
    selected = np.nonzero(np.broadcast_to(np.asarray(where, dtype=bool), out.shape))
    picked = [np.broadcast_to(operand_value(x), out.shape)[selected] for x in inputs]
    operation = f"np.{ufunc.__name__}(..., out=..., where=...)"
    assign(out, selected, ufunc(*picked, **kwargs), operation)
    return out


def operand_value(x: Any) -> Any:
    """A ufunc operand as an array: a WrappedValue as it is, anything else numpy's array."""
    return x if isinstance(x, WrappedValue) else np.asarray(array_like(x))


def assign_out(result: Any, out: Any, operation: str) -> Any:
    """Finish a function called with ``out=``: store ``result`` into ``out`` in place."""
    if out is None:
        return result
    if isinstance(out, tuple):
        (out,) = out
    if isinstance(out, WrappedValue):
        # (out= takes arrays: a WrappedScalar fails in the write with numpy's TypeError)
        assign(cast(WrappedArray, out), Ellipsis, result, operation)
        return out

    if isinstance(result, WrappedValue) and is_active(result):
        raise TracerConversionError(conversion_message(f"{operation} with out=ndarray"))
    out[...] = unwrap(result)
    return out
