"""Order statistics: median, percentile, quantile, and their NaN-ignoring versions.

Each output is one sorted element of its group, or a weighted mix of two
neighbours (``(1 - w) * s[i] + w * s[i + 1]``). Which neighbours and which
weight depend only on the group size, ``q`` and ``method``, so numpy computes
them itself: the same function applied to ``0, 1, ..., n - 1`` returns
``i + w``. The forward value is numpy's own; the pullback sends ``(1 - w) * g``
and ``w * g`` to the elements that sort to positions ``i`` and ``i + 1`` of
their group (ties may go to either of the tied elements: the same values).
The pullback is linear in ``g`` with constant positions, written with
:func:`~mutagrad.rules.rearrange.scatter_flat`, so it differentiates again
(to zero almost everywhere, as it should).

nanmedian, nanpercentile and nanquantile take numpy's own value too. Each
group's statistic is that of its ``m`` non-NaN elements, so positions and
weights come from ``0, 1, ..., m - 1`` group by group; NaNs sort last, so
they are never among the neighbours and get no gradient. An all-NaN group
gives NaN (with numpy's warning) and a zero gradient.
"""

from __future__ import annotations

import numpy as np

from mutagrad.core.jvps import hand
from mutagrad.core.registry import VjpRule, implements
from mutagrad.errors import NotDifferentiableError
from mutagrad.rules.rearrange import index_map, scatter_flat
from mutagrad.rules.reductions import reduced_axes
from mutagrad.traced.dispatch import apply
from mutagrad.traced.mutation import assign_out
from mutagrad.traced.value import WrappedValue, any_active, unwrap, wrap_constant


def _order_statistic_vjp(g, ans, x, lower, upper, weight):
    return scatter_flat(g * (1 - weight), lower, x.shape, x.dtype) + scatter_flat(
        g * weight, upper, x.shape, x.dtype
    )


def _picked(t, positions):
    """Each direction's tangent at flat positions ``positions`` (shaped like the output)."""
    return np.reshape(t, (t.shape[0], -1))[:, positions]


@hand
def _order_statistic_jvp(tangents, ans, args, kwargs):
    """The same mix of the same two sorted neighbours, of the tangent."""
    t, w = tangents[0], kwargs["weight"]
    return _picked(t, kwargs["lower"]) * (1 - w) + _picked(t, kwargs["upper"]) * w


@hand
def _nan_order_statistic_jvp(tangents, ans, args, kwargs):
    t = tangents[0]
    mixed = (_picked(t, kwargs["lower"]) * kwargs["lower_weight"]
             + _picked(t, kwargs["upper"]) * kwargs["upper_weight"])  # fmt: skip
    all_nan = kwargs["all_nan"]
    return mixed if all_nan is None else np.where(all_nan, 0.0, mixed)


_RULES = {
    name: VjpRule(name, None, (_order_statistic_vjp,), ((),), jvp=_order_statistic_jvp)
    for name in ("median", "percentile", "quantile")
}


def _groups_in_order(data, axis):
    """Each group that ``axis`` reduces, as a last axis, and its elements in sorted order.

    Returns the kept axes, their shape, the group size ``n``, the values
    (kept shape + ``(n,)``) and the flat positions of each group's elements
    in stable sorted order (NaNs last).
    """
    axes = list(reduced_axes(axis, data.ndim))
    kept = [i for i in range(data.ndim) if i not in axes]
    kept_shape = tuple(data.shape[i] for i in kept)
    n = int(np.prod([data.shape[i] for i in axes], dtype=np.int64))
    values = np.reshape(np.transpose(data, kept + axes), (*kept_shape, n))
    positions = np.reshape(np.transpose(index_map(data.shape), kept + axes), (*kept_shape, n))
    in_order = np.take_along_axis(positions, np.argsort(values, axis=-1, kind="stable"), axis=-1)
    return kept, kept_shape, n, values, in_order


def _order_statistic(name, a, result, axis, position):
    """Record numpy's ``result`` with the pullback described in the module docstring.

    ``position(n)`` is the statistic of ``0, 1, ..., n - 1`` (one value per ``q``).
    """
    data = a._raw
    kept, _, n, _, in_order = _groups_in_order(data, axis)
    if n == 0 or data.dtype.kind not in "fc":
        return wrap_constant(result)
    virtual = np.asarray(position(n), dtype=np.float64)
    lower = np.clip(np.floor(virtual).astype(np.intp), 0, n - 1)
    upper = np.minimum(lower + 1, n - 1)
    weight = virtual - lower
    # numpy puts q's dimensions first, then the kept axes (with keepdims= the ones).
    q_axes = list(range(virtual.ndim))
    moved = list(range(len(kept), len(kept) + virtual.ndim))
    shape = np.shape(result)

    def sources(at):
        return np.reshape(np.moveaxis(in_order[..., at], moved, q_axes), shape)

    params = {
        "lower": sources(lower),
        "upper": sources(upper),
        "weight": np.reshape(weight, weight.shape + (1,) * (len(shape) - weight.ndim)),
    }
    return apply(_RULES[name], (a,), params, result)


def _nan_order_statistic_vjp(g, ans, x, lower, upper, lower_weight, upper_weight, all_nan):
    if all_nan is not None:  # no gradient from an all-NaN group, even a NaN cotangent
        g = np.where(all_nan, 0.0, g)
    return scatter_flat(g * lower_weight, lower, x.shape, x.dtype) + scatter_flat(
        g * upper_weight, upper, x.shape, x.dtype
    )


_NAN_RULES = {
    name: VjpRule(name, None, (_nan_order_statistic_vjp,), ((),), jvp=_nan_order_statistic_jvp)
    for name in ("nanmedian", "nanpercentile", "nanquantile")
}


def _nan_order_statistic(name, a, result, axis, position):
    """As :func:`_order_statistic`, over each group's non-NaN elements only."""
    data = a._raw
    # The stable sort puts NaNs last: a group's m non-NaN elements come first, in order.
    kept, kept_shape, n, values, in_order = _groups_in_order(data, axis)
    if n == 0 or data.dtype.kind not in "fc":
        return wrap_constant(result)
    counts = np.sum(~np.isnan(values), axis=-1)
    q_shape = np.shape(position(1))
    lower = np.zeros((*kept_shape, *q_shape), dtype=np.intp)
    upper = np.zeros_like(lower)
    lower_weight = np.zeros(lower.shape, dtype=np.float64)  # all-NaN groups: no gradient
    upper_weight = np.zeros_like(lower_weight)
    for m in np.unique(counts):
        if m == 0:
            continue
        virtual = np.asarray(position(int(m)), dtype=np.float64)
        low = np.clip(np.floor(virtual).astype(np.intp), 0, m - 1)
        group = counts == m
        lower[group] = low
        upper[group] = np.minimum(low + 1, m - 1)
        lower_weight[group] = 1 - (virtual - low)
        upper_weight[group] = virtual - low
    # numpy puts q's dimensions first, then the kept axes (with keepdims= the ones).
    q_size = int(np.prod(q_shape, dtype=np.int64))
    moved = list(range(len(kept), len(kept) + len(q_shape)))
    q_axes = list(range(len(q_shape)))
    shape = np.shape(result)

    def arranged(array):
        return np.reshape(np.moveaxis(array, moved, q_axes), shape)

    def sources(at):
        flat = np.take_along_axis(in_order, np.reshape(at, (*kept_shape, q_size)), axis=-1)
        return arranged(np.reshape(flat, at.shape))

    params = {
        "lower": sources(lower),
        "upper": sources(upper),
        "lower_weight": arranged(lower_weight),
        "upper_weight": arranged(upper_weight),
        "all_nan": None,
    }
    if np.any(counts == 0):
        empty = np.broadcast_to(np.reshape(counts == 0, (*kept_shape, *(1,) * len(q_shape))),
                                lower.shape)  # fmt: skip
        params["all_nan"] = arranged(empty)
    return apply(_NAN_RULES[name], (a,), params, result)


def _refuse_traced(name, **arguments):
    for what, value in arguments.items():
        if value is not None and any_active((value,)):
            raise NotDifferentiableError(
                f"np.{name}: the derivative with respect to {what} is not implemented.\n"
                f"Fix: pass mutagrad.ignore_derivatives({what}) if none should flow."
            )


@implements(np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    result = np.median(unwrap(a), axis=axis, keepdims=keepdims)
    if isinstance(a, WrappedValue):
        result = _order_statistic("median", a, result, axis, lambda n: np.median(np.arange(n)))
    return assign_out(result, out, "np.median")


def _refuse_weighted(name, a):
    if any_active((a,)):
        raise NotDifferentiableError(
            f"np.{name}(..., weights=) is not supported on traced arrays.\n"
            "Fix: pass mutagrad.ignore_derivatives(a) if no gradient should "
            "flow, or compute the weighted quantile from np.sort and np.cumsum."
        )


def _quantile_adapter(numpy_function, name):
    def adapter(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):  # fmt: skip
        _refuse_traced(name, q=q, weights=weights)
        q, weights = unwrap(q), unwrap(weights)
        options = {"method": method}
        if interpolation is not None:
            options["interpolation"] = interpolation
        if weights is not None:
            options["weights"] = weights
        result = numpy_function(unwrap(a), q, axis=axis, keepdims=keepdims, **options)
        if isinstance(a, WrappedValue):
            if weights is not None:
                _refuse_weighted(name, a)
                result = wrap_constant(result)
            else:
                method_only = {"method": interpolation or method}

                def position(n):
                    return numpy_function(np.arange(n, dtype=np.float64), q, **method_only)

                result = _order_statistic(name, a, result, axis, position)
        return assign_out(result, out, f"np.{name}")

    adapter.__name__ = name
    return adapter


implements(np.percentile)(_quantile_adapter(np.percentile, "percentile"))
implements(np.quantile)(_quantile_adapter(np.quantile, "quantile"))


_NoValue = np._NoValue


@implements(np.nanmedian)
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=_NoValue):
    options = {} if keepdims is _NoValue else {"keepdims": keepdims}
    result = np.nanmedian(unwrap(a), axis=axis, **options)
    if isinstance(a, WrappedValue):
        result = _nan_order_statistic(
            "nanmedian", a, result, axis, lambda n: np.median(np.arange(n))
        )
    return assign_out(result, out, "np.nanmedian")


def _nan_quantile_adapter(numpy_function, plain_function, name):
    def adapter(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=_NoValue, *, weights=None):  # fmt: skip
        _refuse_traced(name, q=q, weights=weights)
        q, weights = unwrap(q), unwrap(weights)
        options = {"method": method}
        if keepdims is not _NoValue:
            options["keepdims"] = keepdims
        if weights is not None:
            options["weights"] = weights
        result = numpy_function(unwrap(a), q, axis=axis, **options)
        if isinstance(a, WrappedValue):
            if weights is not None:
                _refuse_weighted(name, a)
                result = wrap_constant(result)
            else:

                def position(n):
                    return plain_function(np.arange(n, dtype=np.float64), q, method=method)

                result = _nan_order_statistic(name, a, result, axis, position)
        return assign_out(result, out, f"np.{name}")

    adapter.__name__ = name
    return adapter


implements(np.nanpercentile)(
    _nan_quantile_adapter(np.nanpercentile, np.percentile, "nanpercentile")
)
implements(np.nanquantile)(_nan_quantile_adapter(np.nanquantile, np.quantile, "nanquantile"))
