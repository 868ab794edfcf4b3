"""numpy's in-place functions on WrappedArrays: put, place, putmask, fill_diagonal,
put_along_axis, ``ufunc.at``, in-place sort.

Each becomes writes the tape understands. Where numpy writes through flat
positions and cycles its values (``np.put``, ``np.place``, ``np.putmask``,
``np.fill_diagonal``), the positions and which value lands where are found by
running the very same numpy call on a probe array of value numbers (on numbered
memory cells where the values share the array's memory, which numpy reads
while it writes: :func:`~mutagrad.traced.mutation.copy_as_numpy_does`); the write
is then an advanced-index assignment of the selected (traced) values, whose
gradient every path already handles. ``np.add.at``/``np.subtract.at`` are
recorded with their own rule; ``ufunc.at`` of any other ufunc with a rule is
applied in rounds, each a gather, the ufunc and a write (repeated indices
applied in numpy's order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mutagrad.core.jvps import hand
from mutagrad.core.regions import FANCY_INDEX, gather
from mutagrad.core.registry import NONDIFFERENTIABLE, UFUNC_RULES, VjpRule, implements
from mutagrad.diagnostics.messages import conversion_message
from mutagrad.diagnostics.sites import format_site, user_site
from mutagrad.errors import NotDifferentiableError, TracerConversionError
from mutagrad.rules.rearrange import index_map, rearranged
from mutagrad.rules.ufunc_methods import elementwise_binary_rule
from mutagrad.traced.indexing import normalize_index
from mutagrad.traced.mutation import assign, copy_as_numpy_does, write_in_place
from mutagrad.traced.value import (
    WrappedArray,
    WrappedValue,
    any_active,
    array_like,
    unwrap,
    wrap_constant,
)


def _raw_target(name: str, a: Any, values: Any) -> bool:
    """True when ``a`` is a raw ndarray: numpy may write it, unless the values are traced."""
    if isinstance(a, WrappedArray):
        return False
    if any_active((values,)):
        raise TracerConversionError(conversion_message(f"{name} into a raw ndarray"))
    return True


def _cycled(values: Any, numbers: np.ndarray) -> Any:
    """``values.flat[numbers % values.size]``, traced when ``values`` is."""
    if isinstance(values, WrappedValue):
        flat = np.ravel(values)
        return flat[numbers % max(flat.size, 1)]
    flat = np.ravel(np.asarray(values))
    return flat[numbers % max(flat.size, 1)]


def _assign_flat(name: str, a: WrappedArray, probe: np.ndarray, values: Any) -> None:
    """Write ``values`` where numpy's probe run put value numbers (``-1``: untouched)."""
    positions = np.flatnonzero(probe >= 0)
    if positions.size == 0:
        return
    key = np.unravel_index(positions, a.shape)
    assign(a, key, _cycled(values, probe.ravel()[positions]), name)


def _value_count(values: Any) -> int:
    return int(np.size(unwrap(values)))


@implements(np.put, np.ndarray.put)
def put(a, ind, v, mode="raise"):
    v = array_like(v)
    if _raw_target("np.put", a, v):
        return np.put(a, unwrap(ind), unwrap(v), mode=mode)
    indices = np.asarray(unwrap(ind))
    probe = np.full(a.shape, -1, dtype=np.intp)
    # Values cycle over the indices, not over the array: number them by index position.
    np.put(probe, indices, np.arange(indices.size), mode=mode)
    _assign_flat("np.put", a, probe, v)
    return None


@implements(np.place)
def place(arr, mask, vals):
    vals = array_like(vals)
    if _raw_target("np.place", arr, vals):
        return np.place(arr, unwrap(mask), unwrap(vals))
    mask = np.asarray(unwrap(mask), dtype=bool)
    if copy_as_numpy_does(arr, vals, lambda t, v: np.place(t, mask, v), "np.place"):
        return None  # values that share the array's memory, copied in numpy's order
    probe = np.full(arr.shape, -1, dtype=np.intp)
    count = int(mask.sum())
    if count and _value_count(vals) == 0:
        raise ValueError("Cannot insert from an empty array!")
    probe[mask] = np.arange(count)
    _assign_flat("np.place", arr, probe, vals)
    return None


@implements(np.putmask)
def putmask(a, mask, values):
    values = array_like(values)
    if _raw_target("np.putmask", a, values):
        return np.putmask(a, unwrap(mask), unwrap(values))
    mask = np.broadcast_to(np.asarray(unwrap(mask), dtype=bool), a.shape)
    probe = np.full(a.shape, -1, dtype=np.intp)
    # Values cycle over the whole array's flat positions.
    np.putmask(probe, mask, np.arange(a.size).reshape(a.shape))
    _assign_flat("np.putmask", a, probe, values)
    return None


@implements(np.fill_diagonal)
def fill_diagonal(a, val, wrap=False):
    val = array_like(val)
    if _raw_target("np.fill_diagonal", a, val):
        return np.fill_diagonal(a, unwrap(val), wrap=wrap)
    if copy_as_numpy_does(a, val, lambda t, v: np.fill_diagonal(t, v, wrap=wrap),
                          "np.fill_diagonal"):  # fmt: skip
        return None  # values that share the array's memory, copied in numpy's order
    probe = np.full(a.shape, -1, dtype=np.intp)
    np.fill_diagonal(probe, np.iinfo(np.intp).max, wrap=wrap)  # numpy validates the shape
    positions = np.flatnonzero(probe.ravel() == np.iinfo(np.intp).max)
    probe.ravel()[positions] = np.arange(positions.size)
    _assign_flat("np.fill_diagonal", a, probe, val)
    return None


@implements(np.put_along_axis)
def put_along_axis(arr, indices, values, axis):
    values = array_like(values)
    if _raw_target("np.put_along_axis", arr, values):
        return np.put_along_axis(arr, unwrap(indices), unwrap(values), axis)
    if axis is None:
        indices = np.asarray(unwrap(indices))
        if indices.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        assign(arr, np.unravel_index(indices, arr.shape), values, "np.put_along_axis")
        return None
    # numpy's implementation assigns through an advanced index: trace it.
    return np.put_along_axis._implementation(arr, unwrap(indices), values, axis)


@implements(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    if axis is None:
        return np.ravel(arr)[unwrap(indices)]
    return np.take_along_axis._implementation(arr, unwrap(indices), axis)


# -- ufunc.at -------------------------------------------------------------------------

def _at_jvp(ufunc: np.ufunc):
    """``ufunc.at(a, index, b)`` for add and subtract: a's tangent with b's added (or
    subtracted) at the same index, repeats accumulating as the values did."""

    @hand
    def jvp(tangents, ans, args, kwargs):
        ta, tb = tangents
        index = kwargs["index"]
        if ta is not None:
            out = np.copy(ta)
        else:
            out = np.zeros_like(tb, shape=(tb.shape[0], *np.shape(args[0])))
        if tb is not None:
            for direction in range(out.shape[0]):
                ufunc.at(out[direction], index, tb[direction])
        return out

    return jvp


_AT_RULES: dict[np.ufunc, VjpRule] = {
    np.add: VjpRule(
        "add.at",
        np.add.at,
        (
            lambda g, ans, a, b, index: g,
            lambda g, ans, a, b, index: gather(g, None, FANCY_INDEX, index),
        ),
        ((), ()),
        jvp=_at_jvp(np.add),
    ),
    np.subtract: VjpRule(
        "subtract.at",
        np.subtract.at,
        (
            lambda g, ans, a, b, index: g,
            lambda g, ans, a, b, index: -gather(g, None, FANCY_INDEX, index),
        ),
        ((), ()),
        jvp=_at_jvp(np.subtract),
    ),
}


@implements(np.ufunc.at)
def ufunc_at(ufunc: np.ufunc, a: Any, indices: Any, b: Any = None) -> None:
    """``ufunc.at(a, indices, b)``: unbuffered in place, repeated indices applied in turn."""
    name = f"np.{ufunc.__name__}.at"
    b = array_like(b)
    operands = (b,) if b is not None else ()
    if _raw_target(name, a, b):
        ufunc.at(a, unwrap(indices), *unwrap(operands))
        return None
    key, _ = normalize_index(indices)
    if not isinstance(key, tuple) or any(isinstance(k, np.ndarray) for k in key):
        key = key if isinstance(key, tuple) else (key,)
    rule = _AT_RULES.get(ufunc)
    if rule is None and any_active((a, *operands)):
        # (also for a ufunc without derivative: its rule-less write would replace all of a)
        _ufunc_at_in_rounds(ufunc, name, a, key, b)
        return None

    def perform(raw: list[Any], target: np.ndarray) -> None:
        ufunc.at(target, key, *raw[1:])

    write_in_place(rule, (a, *operands), a, {"index": key}, perform, name)
    return None


def _ufunc_at_in_rounds(ufunc: np.ufunc, name: str, a: WrappedArray, key: Any, b: Any) -> None:
    """``ufunc.at`` of any ufunc with a rule: rounds of ``a[k] = ufunc(a[k], b[j])``.

    numpy applies the ufunc once per index, in the index's order, each time to
    the element as the previous ones left it, and reads ``b`` as it was before
    the call (it buffers an operand that overlaps ``a``). Round ``r`` holds
    the ``r``-th occurrence of each position, so no position repeats within a
    round and each element sees its updates in numpy's order; every round is
    a gather, the ufunc and an advanced-index write, each with its own rule.
    """
    # numpy's own call on copies first: its errors (an index out of bounds, a cast it
    # refuses, a ufunc of two outputs) are the program's.
    ufunc.at(np.array(unwrap(a)), key, *([] if b is None else [np.array(unwrap(b))]))
    rule = UFUNC_RULES.get(ufunc) if ufunc.nin == 1 else elementwise_binary_rule(ufunc)
    if type(rule) is not VjpRule and ufunc not in NONDIFFERENTIABLE:
        raise NotDifferentiableError(
            f"{name} on traced arrays needs np.{ufunc.__name__} to have a rule of one vjp "
            f"per argument (mutagrad.defvjp), at\n{format_site(user_site())}\n"
            "Its updates are applied one index at a time, each through that rule.\n"
            f"Fix: give np.{ufunc.__name__} a defvjp rule, or compute the update out of place "
            "and write it with np.add.at."
        )
    shape = np.shape(a)
    positions = np.asarray(np.arange(int(np.prod(shape))).reshape(shape)[key])
    flat = positions.ravel()
    rounds = occurrence(flat)
    picked = [np.flatnonzero(rounds == r) for r in range(rounds.max(initial=-1) + 1)]
    operands: list[tuple[Any, ...]] = [() for _ in picked]
    if b is not None:  # every round's values gathered before any write: numpy reads b as it was
        values = np.reshape(np.broadcast_to(b, positions.shape), -1)
        operands = [(values[chosen],) for chosen in picked]
    for chosen, operand in zip(picked, operands):
        place = np.unravel_index(flat[chosen], shape)
        assign(a, place, ufunc(a[place], *operand), name)


def occurrence(positions: np.ndarray) -> np.ndarray:
    """For each entry, how many equal entries come before it (0 for a first occurrence)."""
    order = np.argsort(positions, kind="stable")
    ranked = positions[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    counts = np.diff(np.r_[starts, ranked.size])
    rank = np.arange(ranked.size) - np.repeat(starts, counts)
    result = np.empty_like(rank)
    result[order] = rank
    return result


# -- sorting ---------------------------------------------------------------------------


@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise NotDifferentiableError(
            "np.sort(..., order=) (structured arrays) has no derivative.\n"
            "Fix: sort plain float arrays (np.argsort on the key field, then take the fields)."
        )
    # numpy's own sort gives the values, bit for bit and in numpy's memory order (an
    # F-ordered input gives an F-ordered result). Each is recorded as a copy of the
    # element a stable sort puts there: equal elements may differ in their bits
    # (0.0 and -0.0, NaNs), which numpy's unstable sort may order either way.
    # The pullback reads only the positions, so sorting in place poisons nothing.
    data = unwrap(a)
    result = np.sort(data, axis=axis, kind=kind, stable=stable)
    if not isinstance(a, WrappedValue):
        return result
    if a.size == 0:
        return wrap_constant(result)
    positions = index_map(np.shape(data))
    if axis is None:
        data, positions, axis = np.ravel(data), np.ravel(positions), -1
    sources = np.argsort(data, axis=axis, kind="stable")
    return rearranged("sort", a, result, np.take_along_axis(positions, sources, axis))


@implements(np.ndarray.sort)
def sort_in_place(x: WrappedArray, axis: int = -1, kind: Any = None, order: Any = None) -> None:
    """``x.sort()``: the sorted values written back into ``x``."""
    assign(x, Ellipsis, sort(x, axis=axis, kind=kind, order=order), "x.sort()")
