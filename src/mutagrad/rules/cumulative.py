"""Derivative rules of cumulative operations: cumsum and cumprod."""

from __future__ import annotations

import numpy as np

from mutagrad.core.mutation import assign_out
from mutagrad.core.wrapped import apply
from mutagrad.rules import ANS, VjpRule, implements


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


CUMSUM = VjpRule(
    "cumsum", lambda x, axis=None, dtype=None: np.cumsum(x, axis, dtype), (_cumsum_vjp,), ((),)
)
CUMPROD = VjpRule(
    "cumprod",
    lambda x, axis=None, dtype=None: np.cumprod(x, axis, dtype),
    (_cumprod_vjp,),
    ((0, ANS),),
)


@implements(np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    return assign_out(apply(CUMSUM, (a,), {"axis": axis, "dtype": dtype}), out, "np.cumsum")


@implements(np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    return assign_out(apply(CUMPROD, (a,), {"axis": axis, "dtype": dtype}), out, "np.cumprod")
