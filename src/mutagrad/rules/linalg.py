"""Derivative rules of products: matmul (``@``), dot, inner, outer, tensordot."""

from __future__ import annotations

import numpy as np

from mutagrad.core.mutation import assign_out
from mutagrad.core.wrapped import apply
from mutagrad.rules import VjpRule, implements, ufunc_rule


def _matmul_vjp_a(g, ans, a, b):
    if b.ndim == 1:
        if a.ndim == 1:
            return g * b
        return np.expand_dims(g, -1) * b
    if a.ndim == 1:
        return np.matmul(b, np.expand_dims(g, -1))[..., 0]
    return np.matmul(g, np.swapaxes(b, -1, -2))


def _matmul_vjp_b(g, ans, a, b):
    if a.ndim == 1:
        if b.ndim == 1:
            return g * a
        return np.expand_dims(a, -1) * np.expand_dims(g, -2)
    if b.ndim == 1:
        return np.matmul(np.swapaxes(a, -1, -2), np.expand_dims(g, -1))[..., 0]
    return np.matmul(np.swapaxes(a, -1, -2), g)


ufunc_rule(np.matmul, _matmul_vjp_a, _matmul_vjp_b, reads=((1,), (0,)))


def tensordot_axes(axes, ndim_a: int, ndim_b: int) -> tuple[list[int], list[int]]:
    """``np.tensordot``'s ``axes`` argument as two lists of non-negative axes."""
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        return list(range(ndim_a - n, ndim_a)), list(range(n))
    axes_a, axes_b = axes
    axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
    axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    return [a % ndim_a for a in axes_a], [b % ndim_b for b in axes_b]


def _tensordot_vjp_a(g, a, b, axes_a, axes_b):
    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [j for j in range(b.ndim) if j not in axes_b]
    out = np.tensordot(g, b, axes=(list(range(len(free_a), np.ndim(g))), free_b))
    # out's axes: a's free axes, then b's contracted axes in increasing order.
    source = free_a + [axes_a[axes_b.index(j)] for j in sorted(axes_b)]
    return np.transpose(out, np.argsort(source))


def _tensordot_vjp_b(g, a, b, axes_a, axes_b):
    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [j for j in range(b.ndim) if j not in axes_b]
    out = np.tensordot(a, g, axes=(free_a, list(range(len(free_a)))))
    source = [axes_b[axes_a.index(i)] for i in sorted(axes_a)] + free_b
    return np.transpose(out, np.argsort(source))


TENSORDOT = VjpRule(
    "tensordot",
    lambda a, b, axes=2: np.tensordot(a, b, axes=axes),
    (
        lambda g, ans, a, b, axes=2: _tensordot_vjp_a(
            g, a, b, *tensordot_axes(axes, a.ndim, b.ndim)
        ),
        lambda g, ans, a, b, axes=2: _tensordot_vjp_b(
            g, a, b, *tensordot_axes(axes, a.ndim, b.ndim)
        ),
    ),
    ((1,), (0,)),
)


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    return apply(TENSORDOT, (a, b), {"axes": axes})


def _dot_axes(a, b):
    return [a.ndim - 1], [max(b.ndim - 2, 0)]


def _dot_vjp_a(g, ans, a, b):
    if a.ndim == 0 or b.ndim == 0:
        return np.sum(g * b) if a.ndim == 0 else g * b
    return _tensordot_vjp_a(g, a, b, *_dot_axes(a, b))


def _dot_vjp_b(g, ans, a, b):
    if a.ndim == 0 or b.ndim == 0:
        return np.sum(g * a) if b.ndim == 0 else g * a
    return _tensordot_vjp_b(g, a, b, *_dot_axes(a, b))


DOT = VjpRule("dot", np.dot, (_dot_vjp_a, _dot_vjp_b), ((1,), (0,)))


@implements(np.dot)
def dot(a, b, out=None):
    return assign_out(apply(DOT, (a, b)), out, "np.dot")


def _inner_axes(a, b):
    return [a.ndim - 1], [b.ndim - 1]


INNER = VjpRule(
    "inner",
    np.inner,
    (
        lambda g, ans, a, b: (
            g * b if a.ndim == 0 or b.ndim == 0 else _tensordot_vjp_a(g, a, b, *_inner_axes(a, b))
        ),
        lambda g, ans, a, b: (
            g * a if a.ndim == 0 or b.ndim == 0 else _tensordot_vjp_b(g, a, b, *_inner_axes(a, b))
        ),
    ),
    ((1,), (0,)),
)


@implements(np.inner)
def inner(a, b):
    return apply(INNER, (a, b))


OUTER = VjpRule(
    "outer",
    lambda a, b: np.outer(a, b),
    (
        lambda g, ans, a, b: np.reshape(np.matmul(g, np.ravel(b)), a.shape),
        lambda g, ans, a, b: np.reshape(np.matmul(np.ravel(a), g), b.shape),
    ),
    ((1,), (0,)),
)


@implements(np.outer)
def outer(a, b, out=None):
    return assign_out(apply(OUTER, (a, b)), out, "np.outer")
