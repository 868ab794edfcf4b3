"""Order statistics: median, percentile, quantile.

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
"""

from __future__ import annotations

import numpy as np

from mutagrad.core.dispatch import apply
from mutagrad.core.mutation import assign_out
from mutagrad.core.wrapped import WrappedValue, any_active, unwrap, wrap_constant
from mutagrad.errors import NotDifferentiableError
from mutagrad.rules.rearrange import index_map, scatter_flat
from mutagrad.rules.reductions import reduced_axes
from mutagrad.rules.registry import VjpRule, implements


def _order_statistic_vjp(g, ans, x, lower, upper, weight):
    return scatter_flat(g * (1 - weight), lower, x.shape, x.dtype) + scatter_flat(
        g * weight, upper, x.shape, x.dtype
    )


_RULES = {
    name: VjpRule(name, None, (_order_statistic_vjp,), ((),))
    for name in ("median", "percentile", "quantile")
}


def _order_statistic(name, a, result, axis, position):
    """Record numpy's ``result`` with the pullback described in the module docstring.

    ``position(n)`` is the statistic of ``0, 1, ..., n - 1`` (one value per ``q``).
    """
    data = a._data
    axes = list(reduced_axes(axis, data.ndim))
    kept = [i for i in range(data.ndim) if i not in axes]
    kept_shape = tuple(data.shape[i] for i in kept)
    n = int(np.prod([data.shape[i] for i in axes], dtype=np.int64))
    if n == 0 or data.dtype.kind not in "fc":
        return wrap_constant(result)
    virtual = np.asarray(position(n), dtype=np.float64)
    lower = np.clip(np.floor(virtual).astype(np.intp), 0, n - 1)
    upper = np.minimum(lower + 1, n - 1)
    weight = virtual - lower
    # Each group's elements as a last axis: their values and their flat positions.
    values = np.reshape(np.transpose(data, kept + axes), (*kept_shape, n))
    positions = np.reshape(np.transpose(index_map(data.shape), kept + axes), (*kept_shape, n))
    in_order = np.take_along_axis(positions, np.argsort(values, axis=-1, kind="stable"), axis=-1)
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
                if any_active((a,)):
                    raise NotDifferentiableError(
                        f"np.{name}(..., weights=) is not supported on traced arrays.\n"
                        "Fix: pass mutagrad.ignore_derivatives(a) if no gradient should "
                        "flow, or compute the weighted quantile from np.sort and np.cumsum."
                    )
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
