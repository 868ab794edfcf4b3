"""Derivative rules of cumulative operations: cumsum and cumprod (and numpy 2's
cumulative_sum and cumulative_prod); diff and ediff1d, their inverses; trapezoid."""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from mutagrad.core.jvps import complex_exact, hand
from mutagrad.core.registry import ANS, VjpRule, implements
from mutagrad.traced.dispatch import apply
from mutagrad.traced.mutation import assign_out
from mutagrad.traced.value import WrappedValue, unwrap


def _reverse_cumsum(g, axis: int):
    return np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)


def _cumsum_vjp(g, ans, x, axis=None, dtype=None):
    if axis is None:
        return np.reshape(_reverse_cumsum(g, 0), x.shape)
    return _reverse_cumsum(g, axis)


def _cumprod_vjp(g, ans, x, axis=None, dtype=None):
    if axis is None:
        return np.reshape(_cumprod_vjp(g, np.ravel(ans), np.ravel(x), 0), x.shape)
    if not np.any(x == 0):
        return _reverse_cumsum(g * ans, axis) / x
    # With zeros, d y_k / d x_j = prod_{i<j} x_i * prod_{j<i<=k} x_i: the first factor is
    # an exclusive cumulative product; the sum over k is the backward recurrence
    # S_j = g_j + x_{j+1} S_{j+1}.
    xs = np.moveaxis(x, axis, -1)
    gs = np.moveaxis(g, axis, -1)
    n = xs.shape[-1]
    ones = np.ones((*xs.shape[:-1], 1), dtype=np.result_type(xs, gs))
    before = np.concatenate([ones, np.cumprod(xs[..., :-1], axis=-1)], axis=-1)
    tail = [gs[..., n - 1]]
    for j in range(n - 2, -1, -1):
        tail.append(gs[..., j] + xs[..., j + 1] * tail[-1])
    after = np.stack(tail[::-1], axis=-1)
    return np.moveaxis(before * after, -1, axis)


@complex_exact  # (linear)
@hand
def _cumsum_jvp(tangents, ans, args, kwargs):
    """cumsum is linear: the cumulative sum of the tangent along the same axis."""
    t = tangents[0]
    axis = (kwargs or {}).get("axis")
    if axis is None:
        return np.cumsum(np.reshape(t, (t.shape[0], -1)), axis=1)
    return np.cumsum(t, axis=normalize_axis_index(axis, np.ndim(args[0])) + 1)


@complex_exact  # (the product rule, holomorphic)
@hand
def _cumprod_jvp(tangents, ans, args, kwargs):
    """y_j = y_{j-1} x_j, so dy_j = dy_{j-1} x_j + y_{j-1} dx_j, along the axis (exact
    with zeros, as the vjp's recurrence is)."""
    t, x = tangents[0], args[0]
    axis = (kwargs or {}).get("axis")
    if axis is None:
        t, x, ans, axis = np.reshape(t, (t.shape[0], -1)), np.ravel(x), np.ravel(ans), 0
    axis = normalize_axis_index(axis, np.ndim(x))
    xs, ys, ts = np.moveaxis(x, axis, -1), np.moveaxis(ans, axis, -1), np.moveaxis(t, axis + 1, -1)
    if xs.shape[-1] == 0:
        return np.moveaxis(ts, -1, axis + 1)
    steps = [ts[..., 0]]
    for j in range(1, xs.shape[-1]):
        steps.append(steps[-1] * xs[..., j] + ys[..., j - 1] * ts[..., j])
    return np.moveaxis(np.stack(steps, axis=-1), -1, axis + 1)


CUMSUM = VjpRule(
    "cumsum",
    lambda x, axis=None, dtype=None: np.cumsum(x, axis, dtype),
    (_cumsum_vjp,),
    ((),),
    jvp=_cumsum_jvp,
    handles_complex=True,
)
CUMPROD = VjpRule(
    "cumprod",
    lambda x, axis=None, dtype=None: np.cumprod(x, axis, dtype),
    (_cumprod_vjp,),
    ((0, ANS),),
    jvp=_cumprod_jvp,
    handles_complex=True,  # (products only: holomorphic)
)


@implements(np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    return assign_out(apply(CUMSUM, (a,), {"axis": axis, "dtype": dtype}), out, "np.cumsum")


@implements(np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    return assign_out(apply(CUMPROD, (a,), {"axis": axis, "dtype": dtype}), out, "np.cumprod")


# -- diff: the inverse of cumsum, written with slicing and subtraction -------------------


@implements(np.diff)
def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    if not isinstance(a, WrappedValue):
        a = np.asanyarray(a)
    if np.ndim(a) == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis_index(axis, np.ndim(a))

    def edge(extra):
        if np.ndim(extra) == 0:
            shape = list(np.shape(a))
            shape[axis] = 1
            return np.broadcast_to(extra, tuple(shape))
        return extra

    if prepend is not np._NoValue or append is not np._NoValue:
        before = [] if prepend is np._NoValue else [edge(prepend)]
        after = [] if append is np._NoValue else [edge(append)]
        a = np.concatenate([*before, a, *after], axis)
    later = (slice(None),) * axis + (slice(1, None),)
    earlier = (slice(None),) * axis + (slice(None, -1),)
    # As numpy: booleans differ (!=), everything else subtracts.
    op = np.not_equal if a.dtype == np.bool_ else np.subtract
    for _ in range(n):
        a = op(a[later], a[earlier])
    return a


def _cumulative(name, cumulate, initial):
    """np.cumulative_sum / np.cumulative_prod: the cumulative op, maybe after an initial value."""

    def adapter(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        # numpy checks the arguments (and computes the value's shape and dtype).
        expected = getattr(np, name)(
            unwrap(x), axis=axis, dtype=dtype, include_initial=include_initial
        )
        x = np.atleast_1d(x)
        axis = 0 if axis is None else normalize_axis_index(axis, np.ndim(x))
        result = cumulate(x, axis=axis, dtype=dtype)
        if include_initial:
            shape = list(np.shape(result))
            shape[axis] = 1
            first = np.full(tuple(shape), initial, dtype=expected.dtype)
            result = np.concatenate([first, result], axis=axis)
        return assign_out(result, out, f"np.{name}")

    adapter.__name__ = name
    return adapter


implements(np.cumulative_sum)(_cumulative("cumulative_sum", np.cumsum, 0))
implements(np.cumulative_prod)(_cumulative("cumulative_prod", np.cumprod, 1))


@implements(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    flat = np.ravel(ary)
    dtype = np.result_type(flat)
    parts = []
    for extra in (to_begin, to_end):
        extra_dtype = None if extra is None else np.asarray(unwrap(extra)).dtype
        if extra is not None and not np.can_cast(extra_dtype, dtype, casting="same_kind"):
            raise TypeError(
                "dtype of `to_begin` or `to_end` must be compatible with input `ary` under "
                "the `same_kind` rule."
            )
    if to_begin is not None:
        parts.append(np.ravel(to_begin))
    parts.append(flat[1:] - flat[:-1])
    if to_end is not None:
        parts.append(np.ravel(to_end))
    result = np.concatenate(parts) if len(parts) > 1 else parts[0]
    return result if np.result_type(result) == dtype else result.astype(dtype)


@implements(np.trapezoid)
def trapezoid(y, x=None, dx=1.0, axis=-1):
    # numpy's formula, step by step (its implementation converts y to a raw array).
    if not isinstance(y, WrappedValue):
        y = np.asanyarray(y)
    if x is None:
        d = dx
    else:
        if not isinstance(x, WrappedValue):
            x = np.asanyarray(x)
        if np.ndim(x) == 1:
            d = np.diff(x)
            shape = [1] * np.ndim(y)
            shape[axis] = np.shape(d)[0]
            d = np.reshape(d, shape)
        else:
            d = np.diff(x, axis=axis)
    later = [slice(None)] * np.ndim(y)
    earlier = [slice(None)] * np.ndim(y)
    later[axis] = slice(1, None)
    earlier[axis] = slice(None, -1)
    return np.sum(d * (y[tuple(later)] + y[tuple(earlier)]) / 2.0, axis)
