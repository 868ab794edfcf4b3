"""Rearrangements: tile, repeat, roll, resize, take, compress, choose, delete, insert,
partition, pad; and append, tril, triu, diag, diagflat written with other rules.

Each of these places copies of input elements into the output. numpy itself
says where: the same function applied to ``np.arange(x.size).reshape(x.shape)``
gives, for every output element, the flat position of its source (an *index
map*). The forward value is numpy's own (so it is bit for bit numpy's), and
the pullback adds the cotangent back into the sources through the index map,
repeated sources accumulating.

That pullback and its adjoint are the two rules :data:`SCATTER_FLAT` and
:data:`GATHER_FLAT`, each the vjp of the other, so rearrangements can be
differentiated to any order.

``np.pad`` is linear along each axis in turn for every mode but ``maximum``,
``minimum`` and ``median`` (``reflect_type="odd"``, ``linear_ramp`` and
``mean`` mix elements rather than copy them). Padding the identity matrix
along one axis gives that axis's matrix, and the pullback applies the
transposes, one axis after another. The statistic modes are written as the
statistic of the edge windows, concatenated: the engine differentiates that.
"""

from __future__ import annotations

import operator
from functools import cache
from typing import Any

import numpy as np

from mutagrad.core.engine import call_rule
from mutagrad.core.jvps import TRANSPOSED, linear
from mutagrad.core.registry import VjpRule, implements
from mutagrad.core.tangents import cotangent_dtype
from mutagrad.errors import NotDifferentiableError
from mutagrad.traced.dispatch import apply
from mutagrad.traced.mutation import assign_out
from mutagrad.traced.value import WrappedValue, any_active, unwrap, wrap_constant

# -- the index-map primitives ----------------------------------------------------------


def _scatter_flat_raw(g, index, shape, dtype):
    """Zeros of ``shape`` with ``g.flat[k]`` added at flat position ``index.flat[k]``."""
    size = int(np.prod(shape, dtype=np.int64))
    positions = np.ravel(index)
    weights = np.ravel(g)
    if np.iscomplexobj(weights):
        total = np.bincount(positions, weights.real, size) + 1j * np.bincount(
            positions, weights.imag, size
        )
    else:
        total = np.bincount(positions, weights, size)
    return np.reshape(total.astype(dtype, copy=False), shape)


def _gather_flat_raw(x, index):
    """``x.ravel()[index]``: the elements at flat positions ``index`` (shaped like ``index``)."""
    return np.ravel(x)[index]


def _gathered(t: Any, index: np.ndarray) -> Any:
    """Each direction's tangent gathered at flat positions ``index``, the batch axis first."""
    return np.reshape(t, (t.shape[0], -1))[:, index]


SCATTER_FLAT = VjpRule(
    "scatter_flat",
    _scatter_flat_raw,
    (lambda c, ans, g, index, shape, dtype: gather_flat(c, index),),
    ((),),
    jvp=linear(),
    handles_complex=True,
)
GATHER_FLAT = VjpRule(
    "gather_flat",
    _gather_flat_raw,
    (lambda g, ans, x, index: scatter_flat(g, index, x.shape, x.dtype),),
    ((),),
    jvp=linear(lambda tangents, ans, args, kwargs: _gathered(tangents[0], kwargs["index"])),
    handles_complex=True,
)


def scatter_flat(g: Any, index: np.ndarray, shape: tuple[int, ...], dtype: Any) -> Any:
    """The adjoint of :func:`gather_flat`: ``g`` added into zeros of ``shape`` through ``index``.

    Runs on raw arrays, and is recorded (so differentiable again) on traced ones.
    """
    kwargs = {"index": index, "shape": tuple(shape), "dtype": cotangent_dtype(np.dtype(dtype))}
    return call_rule(SCATTER_FLAT, (g,), kwargs)


def gather_flat(x: Any, index: np.ndarray) -> Any:
    """``x.ravel()[index]``, recorded on traced arrays."""
    return call_rule(GATHER_FLAT, (x,), {"index": index})


def index_map(shape: tuple[int, ...]) -> np.ndarray:
    """Every element's own flat position: the array numpy rearranges to tell where values go."""
    return np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)


@cache
def _rearrangement_rule(name: str) -> VjpRule:
    return VjpRule(
        name,
        _gather_flat_raw,
        (lambda g, ans, x, index: scatter_flat(g, index, x.shape, x.dtype),),
        ((),),
        jvp=GATHER_FLAT.jvp,
        handles_complex=True,
    )


def rearranged(name: str, a: Any, result: Any, index: np.ndarray) -> Any:
    """Record ``result`` (numpy's output) as the elements of ``a`` at flat positions ``index``."""
    return apply(_rearrangement_rule(name), (a,), {"index": index}, result)


def _rearrangement(numpy_function: Any, name: str):
    """An adapter for a function whose output copies elements of its first argument."""

    def adapter(a: Any, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = unwrap(args), unwrap(kwargs)
        if not isinstance(a, WrappedValue):
            return numpy_function(a, *args, **kwargs)
        result = numpy_function(a._raw, *args, **kwargs)
        if a.size == 0:
            return wrap_constant(result)
        return rearranged(name, a, result, numpy_function(index_map(a.shape), *args, **kwargs))

    adapter.__name__ = name
    return adapter


for _fn in (np.tile, np.repeat, np.roll, np.resize):
    implements(_fn)(_rearrangement(_fn, _fn.__name__))


@implements(np.delete)
def delete(arr, obj, axis=None):
    obj = unwrap(obj)
    if not isinstance(arr, WrappedValue):
        return np.delete(arr, obj, axis=axis)
    result = np.delete(arr._raw, obj, axis=axis)
    if arr.size == 0:
        return wrap_constant(result)
    return rearranged("delete", arr, result, np.delete(index_map(arr.shape), obj, axis=axis))


@implements(np.compress)
def compress(condition, a, axis=None, out=None):
    condition = unwrap(condition)
    result = np.compress(condition, unwrap(a), axis=axis)
    if isinstance(a, WrappedValue) and a.size:
        index = np.compress(condition, index_map(a.shape), axis=axis)
        result = rearranged("compress", a, result, index)
    return assign_out(result, out, "np.compress")


@implements(np.choose)
def choose(a, choices, out=None, mode="raise"):
    a = unwrap(a)
    if not isinstance(choices, WrappedValue):
        # A sequence of arrays: one array of them, choices along its first axis.
        choices = np.stack(broadcast_choices(choices))
    result = np.choose(a, unwrap(choices), mode=mode)
    if isinstance(choices, WrappedValue) and choices.size:
        index = np.choose(a, index_map(choices.shape), mode=mode)
        result = rearranged("choose", choices, result, index)
    return assign_out(result, out, "np.choose")


def broadcast_choices(choices):
    arrays = [c if isinstance(c, WrappedValue) else np.asarray(c) for c in choices]
    return np.broadcast_arrays(*arrays)


@implements(np.append)
def append(arr, values, axis=None):
    # numpy's steps: flatten both when there is no axis, then concatenate.
    if not isinstance(arr, WrappedValue):
        arr = np.asanyarray(arr)
    if axis is None:
        if np.ndim(arr) != 1:
            arr = np.ravel(arr)
        values = np.ravel(values)
        axis = np.ndim(arr) - 1
    return np.concatenate((arr, values), axis=axis)


def _insert_vjp_values(g, ans, arr, values, index):
    chosen = index < 0
    return scatter_flat(g[chosen], -1 - index[chosen], np.shape(values), np.result_type(g))


def _insert_vjp_arr(g, ans, arr, values, index):
    kept = index >= 0
    return scatter_flat(g[kept], index[kept], arr.shape, arr.dtype)


INSERT = VjpRule("insert", None, (_insert_vjp_arr, _insert_vjp_values), ((), ()),
                 jvp=TRANSPOSED)  # fmt: skip


@implements(np.insert)
def insert(arr, obj, values, axis=None):
    obj = unwrap(obj)
    raw_arr, raw_values = unwrap(arr), unwrap(values)
    result = np.insert(raw_arr, obj, raw_values, axis=axis)
    if not any_active((arr, values)) or np.size(raw_arr) + np.size(raw_values) == 0:
        return wrap_constant(result) if isinstance(arr, WrappedValue) else result
    # The index map of arr's elements (>= 0) with values' elements numbered -1, -2, ...:
    # numpy broadcasts and places those numbers exactly as it does the values.
    sources = np.insert(index_map(np.shape(raw_arr)), obj,
                        -1 - index_map(np.shape(raw_values)), axis=axis)  # fmt: skip
    values = values if isinstance(values, WrappedValue) else np.asarray(raw_values)
    return apply(INSERT, (arr, values), {"index": sources}, result)


# -- triangles and diagonals -----------------------------------------------------


def _triangle(name, keep):
    def adapter(m, k=0):
        k = operator.index(k)
        if not isinstance(m, WrappedValue):
            m = np.asanyarray(m)
        mask = keep(np.shape(m)[-2:], k)
        # numpy: where(mask, m, zeros(1, m.dtype)): the same values, and a where rule.
        return np.where(mask, m, np.zeros(1, np.result_type(m)))

    adapter.__name__ = name
    return adapter


# (numpy's own tri(*m.shape[-2:]): one dimension or two, which mypy cannot match to N, M)
implements(np.tril)(_triangle("tril", lambda shape, k: np.tri(*shape, k=k, dtype=bool)))  # type: ignore[call-overload]
implements(np.triu)(_triangle("triu", lambda shape, k: ~np.tri(*shape, k=k - 1, dtype=bool)))  # type: ignore[call-overload]


@implements(np.diag)
def diag(v, k=0):
    if np.ndim(v) == 2:
        return np.diagonal(v, k)
    if np.ndim(v) != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = np.shape(v)[0] + abs(k)
    result = np.zeros_like(v, shape=(n, n))
    rows = np.arange(np.shape(v)[0]) + max(-k, 0)
    result[rows, rows + k] = v  # a recorded write into zeros
    return result


@implements(np.diagflat)
def diagflat(v, k=0):
    return diag(np.ravel(v), k)


@implements(np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    indices = unwrap(indices)
    result = np.take(unwrap(a), indices, axis=axis, mode=mode)
    if isinstance(a, WrappedValue) and a.size:
        index = np.take(index_map(a.shape), indices, axis=axis, mode=mode)
        result = rearranged("take", a, result, index)
    return assign_out(result, out, "np.take")


# -- partition ---------------------------------------------------------------------------


def _sources_along_axis(data: np.ndarray, arranged: np.ndarray, axis: int) -> np.ndarray:
    """For each element of ``arranged`` (a permutation of ``data`` along ``axis``), its source.

    Sorting both (stably) pairs the j-th smallest of one with the j-th smallest
    of the other; tied values may be paired either way, which gives the same
    values and a valid gradient.
    """
    from_data = np.argsort(data, axis=axis, kind="stable")
    from_arranged = np.argsort(arranged, axis=axis, kind="stable")
    sources = np.empty_like(from_data)
    np.put_along_axis(sources, from_arranged, from_data, axis=axis)
    return sources


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        raise NotDifferentiableError(
            "np.partition(..., order=) (structured arrays) has no derivative.\n"
            "Fix: partition plain float arrays (np.argpartition on the key, then take)."
        )
    kth = unwrap(kth)
    if not isinstance(a, WrappedValue):
        return np.partition(a, kth, axis=axis, kind=kind)
    if axis is None:
        a = np.ravel(a)
        axis = -1
    data = a._raw
    result = np.partition(data, kth, axis=axis, kind=kind)
    sources = _sources_along_axis(data, result, axis)
    index = np.take_along_axis(index_map(data.shape), sources, axis=axis)
    return rearranged("partition", a, result, index)


# -- pad ----------------------------------------------------------------------------------


def as_pairs(value: Any, ndim: int) -> np.ndarray:
    """A pad argument (``pad_width``, ``constant_values``...) as an ``(ndim, 2)`` array.

    This is how np.pad reads them: one value for everything, one (before,
    after) pair for every axis, or anything that broadcasts to ``(ndim, 2)``.
    """
    v = np.asarray(value)
    if v.ndim < 3 and v.size == 1:
        return np.full((ndim, 2), v.ravel()[0])
    if v.ndim < 3 and v.size == 2 and v.shape != (2, 1):
        return np.tile(v.ravel(), (ndim, 1))
    return np.broadcast_to(v, (ndim, 2))


def _reduce_pairs(pairs: Any, shape: tuple[int, ...]) -> Any:
    """The adjoint of :func:`as_pairs`: an ``(ndim, 2)`` cotangent summed back to ``shape``."""
    size = int(np.prod(shape, dtype=np.int64))
    if len(shape) < 3 and size == 1:
        return np.reshape(np.sum(pairs), shape)
    if len(shape) < 3 and size == 2 and tuple(shape) != (2, 1):
        return np.reshape(np.sum(pairs, axis=0), shape)
    lead = np.ndim(pairs) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and np.shape(pairs)[lead + i] != 1
    )
    return np.reshape(np.sum(pairs, axis=axes), shape) if axes else pairs


_LINEAR_MODES = ("constant", "empty", "edge", "wrap", "reflect", "symmetric", "linear_ramp", "mean")
_STATISTICS = {"maximum": np.max, "minimum": np.min, "median": np.median}


def _axis_matrices(widths, shape, mode, kwargs):
    """Per padded axis ``(axis, before, length, rows_before, rows_after)``.

    ``rows_*`` are the rows of that axis's matrix (the identity padded by
    np.pad, with the mode's options for that axis) that fill the pads; the
    other rows are the identity. ``None`` for pads that carry no gradient.
    """
    options = {}
    if mode == "linear_ramp":
        options["end_values"] = 0
    elif mode in ("reflect", "symmetric") and "reflect_type" in kwargs:
        options["reflect_type"] = kwargs["reflect_type"]
    elif mode == "mean" and kwargs.get("stat_length") is not None:
        lengths = as_pairs(np.round(np.asarray(kwargs["stat_length"])).astype(np.intp), len(shape))
    matrices = []
    for axis, (before, after) in enumerate(widths):
        if before == 0 and after == 0:
            continue
        n = shape[axis]
        if mode in ("constant", "empty"):
            matrices.append((axis, int(before), n, None, None))
            continue
        if mode == "mean" and kwargs.get("stat_length") is not None:
            options["stat_length"] = (tuple(lengths[axis]), (1, 1))
        padded = np.pad(np.eye(n), ((before, after), (0, 0)), mode, **options)
        rows_before = padded[:before] if before else None
        rows_after = padded[before + n :] if after else None
        matrices.append((axis, int(before), n, rows_before, rows_after))
    return tuple(matrices)


def _along(axis: int, part: slice) -> tuple[slice, ...]:
    return (slice(None),) * axis + (part,)


def _contract(h, rows, axis):
    """``rows.T`` applied to ``h`` along ``axis``."""
    return np.moveaxis(np.tensordot(h, rows, axes=([axis], [0])), -1, axis)


def _pad_vjp(g, ans, x, values, matrices, value_maps):
    h = g
    for axis, before, n, rows_before, rows_after in matrices:
        total = h[_along(axis, slice(before, before + n))]
        if rows_before is not None:
            total = total + _contract(h[_along(axis, slice(0, before))], rows_before, axis)
        if rows_after is not None:
            total = total + _contract(h[_along(axis, slice(before + n, None))], rows_after, axis)
        h = total
    return h


def _pad_values_vjp(g, ans, x, values, matrices, value_maps):
    pairs = np.tensordot(value_maps, g, axes=np.ndim(g))
    return _reduce_pairs(pairs, np.shape(values))


# (linear with real coefficients in x and in the pad values, but not in every mode: maximum)
PAD = VjpRule("pad", np.pad, (_pad_vjp, _pad_values_vjp), ((), ()), handles_complex=True,
              jvp=TRANSPOSED)  # fmt: skip


def _value_maps(shape, widths, mode, key, kwargs):
    """For each (axis, side) of ``constant_values``/``end_values``, the output it makes alone."""
    ndim = len(shape)
    maps = np.zeros((ndim, 2, *(shape[i] + widths[i].sum() for i in range(ndim))))
    for axis in range(ndim):
        for side in range(2):
            unit = np.zeros((ndim, 2))
            unit[axis, side] = 1.0
            maps[axis, side] = np.pad(np.zeros(shape), widths, mode, **{**kwargs, key: unit})
    return maps


def _holds_traced(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_holds_traced(v) for v in value)
    return isinstance(value, WrappedValue) and any_active((value,))


def _nested_array(value: Any) -> Any:
    """Nested lists or tuples of numbers and arrays, some traced, as one traced array."""
    if isinstance(value, (list, tuple)):
        return np.stack([_nested_array(v) for v in value])
    return value if isinstance(value, WrappedValue) else np.asarray(value)


def _pad_by_statistic(a, widths, mode, stat_length):
    """np.pad's statistic modes, axis after axis: the edge windows' statistic, concatenated."""
    statistic = _STATISTICS[mode]
    ndim = np.ndim(a)
    lengths = None
    if stat_length is not None:
        lengths = as_pairs(np.round(np.asarray(stat_length)).astype(np.intp), ndim)
    current = a
    for axis, (before, after) in enumerate(widths):
        if before == 0 and after == 0:
            continue
        n = np.shape(a)[axis]
        left, right = (n, n) if lengths is None else (min(n, lengths[axis][0]),
                                                      min(n, lengths[axis][1]))  # fmt: skip
        left_stat = statistic(current[_along(axis, slice(0, left))], axis=axis, keepdims=True)
        right_stat = left_stat
        if not left == right == n:
            window = current[_along(axis, slice(n - right, n))]
            right_stat = statistic(window, axis=axis, keepdims=True)
        shape = list(np.shape(current))
        pieces = []
        for stat, width in ((left_stat, before), (None, 0), (right_stat, after)):
            if stat is None:
                pieces.append(current)
            elif width:
                shape[axis] = width
                pieces.append(np.broadcast_to(stat, tuple(shape)))
        current = np.concatenate(pieces, axis=axis)
    return current


@implements(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    pad_width = unwrap(pad_width)
    raw_kwargs = unwrap(kwargs)
    if not isinstance(array, WrappedValue):
        return np.pad(array, pad_width, mode, **raw_kwargs)
    data = array._raw
    if callable(mode):
        if any_active((array, *kwargs.values())):
            raise NotDifferentiableError(
                "np.pad with a function as mode runs it on raw arrays, so it is not supported "
                "on traced arrays.\nFix: use a named mode, or build the padding with "
                "np.concatenate."
            )
        return wrap_constant(np.pad(data, pad_width, mode, **raw_kwargs))
    result = np.pad(data, pad_width, mode, **raw_kwargs)  # numpy checks every argument
    widths = as_pairs(np.round(np.asarray(pad_width)).astype(np.intp), data.ndim)
    if mode in _STATISTICS and data.size:
        padded = _pad_by_statistic(array, widths, mode, raw_kwargs.get("stat_length"))
        if padded.dtype != result.dtype:  # an integer array: numpy rounds the statistic
            padded = np.round(padded).astype(result.dtype)
        return padded
    if mode not in _LINEAR_MODES or data.size == 0:
        return wrap_constant(result)
    key = {"constant": "constant_values", "linear_ramp": "end_values"}.get(mode)
    values = kwargs.get(key) if key is not None else None
    if isinstance(values, (list, tuple)) and _holds_traced(values):
        values = _nested_array(values)  # ((a, b), (c, d)) with traced numbers in it
    value_maps = None
    if isinstance(values, WrappedValue) and any_active((values,)):
        value_maps = _value_maps(data.shape, widths, mode, key, raw_kwargs)
    matrices = _axis_matrices(widths, data.shape, mode, raw_kwargs) if any_active((array,)) else ()
    params = {"matrices": matrices, "value_maps": value_maps}
    return apply(PAD, (array, values), params, result)
