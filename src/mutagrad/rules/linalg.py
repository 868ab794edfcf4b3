"""Derivative rules of linear algebra.

Products: matmul (``@``) and the vector gufuncs vecdot, matvec and vecmat, dot,
inner, vdot, outer, tensordot, ``np.linalg.multi_dot``
(numpy's multiplication order, through the dot rule), ``np.trace`` (the sum
of a diagonal view), kron, cross and ``np.linalg.matrix_power`` (numpy's own
steps, through the rules). ``np.linalg``: solve, inv, det, slogdet (the sign of
a real determinant carries no derivative, a complex one's does) and norm
(vector norms of every order; matrix norms 'fro', 1, -1, inf, -inf, and 2, -2,
'nuc' through the singular value decomposition of
mutagrad.rules.factorizations), with its array-API forms vector_norm and
matrix_norm; cholesky, eigh and eigvalsh (numpy reads one triangle of the
matrix, and only that triangle gets a gradient; eigenvectors need distinct
eigenvalues). ``np.polyval`` is numpy's Horner loop.

Every vjp is written with these same functions, so it is differentiable in
turn.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from mutagrad.core.jvps import Derivation, complex_exact, hand, lift, multilinear, through_gradient
from mutagrad.core.registry import ANS, VjpRule, implements, ufunc_rule
from mutagrad.errors import NotDifferentiableError
from mutagrad.rules.factorizations import (
    adjoint,
    columns_read,
    conjugate_if_complex,
    gap_weighted,
    refuse_phase_dependence,
)
from mutagrad.traced.dispatch import apply
from mutagrad.traced.mutation import assign_out
from mutagrad.traced.value import WrappedValue, any_active, unwrap, wrap_constant


def _matmul_vjp_a(g, ans, a, b):
    if b.ndim == 1:
        if a.ndim == 1:
            return g * b
        return np.expand_dims(g, -1) * b
    if a.ndim == 1:
        return np.matmul(b, np.expand_dims(g, -1))[..., 0]
    return np.matmul(g, b.swapaxes(-1, -2))  # the method: numpy's function costs more here


def _matmul_vjp_b(g, ans, a, b):
    if a.ndim == 1:
        if b.ndim == 1:
            return g * a
        return np.expand_dims(a, -1) * np.expand_dims(g, -2)
    if b.ndim == 1:
        return np.matmul(np.swapaxes(a, -1, -2), np.expand_dims(g, -1))[..., 0]
    return np.matmul(a.swapaxes(-1, -2), g)


def _matmul_jvp_batched(tangents, ans, args, kwargs):
    """ta @ b + a @ tb, the batch axis broadcast as a stack axis (matrices only: a vector
    operand is done one direction at a time)."""
    (ta, tb), (a, b) = tangents, args
    if kwargs or np.ndim(a) < 2 or np.ndim(b) < 2:
        return None
    rank = np.ndim(ans)
    total = None if ta is None else np.matmul(lift(ta, rank), b)
    if tb is not None:
        part = np.matmul(a, lift(tb, rank))
        total = part if total is None else total + part
    return total


class _Matmul(Derivation):
    """matmul's jvp: batched for matrices, one direction at a time otherwise."""

    def bind(self, applied, vjps):
        per_direction = multilinear().bind(applied, vjps)

        def matmul_jvp(tangents, ans, args, kwargs):
            t = _matmul_jvp_batched(tangents, ans, args, kwargs)
            return per_direction(tangents, ans, args, kwargs) if t is None else t

        matmul_jvp.kind = "multilinear"
        return complex_exact(matmul_jvp)


ufunc_rule(
    np.matmul, _matmul_vjp_a, _matmul_vjp_b, reads=((1,), (0,)), jvp=_Matmul(),
    handles_complex=True,
)


# -- the vector gufuncs: vecdot, matvec, vecmat (real: their conjugations do nothing) ------


def _refuse_axes(axes):
    if axes is not None:
        raise NotDifferentiableError(
            "the derivative of a vector gufunc (np.vecdot, np.matvec, np.vecmat) with axes= is "
            "not implemented.\n"
            "Fix: move the core dimensions last with np.moveaxis, or pass axis= to np.vecdot."
        )


def _vecdot_vjp(g, ans, x, other, axis=-1, axes=None, keepdims=False, **_):
    # out = sum(x * other, axis): x's elements along the axis meet other's.
    _refuse_axes(axes)
    g_last = np.moveaxis(g, axis, -1) if keepdims else np.expand_dims(g, -1)
    product = g_last * np.moveaxis(other, axis, -1)
    return np.moveaxis(product, -1, normalize_axis_index(axis, np.ndim(x)) - np.ndim(x))


ufunc_rule(
    np.vecdot,
    _vecdot_vjp,
    lambda g, ans, x1, x2, **params: _vecdot_vjp(g, ans, x2, x1, **params),
    reads=((1,), (0,)),
    params=True,
    jvp=multilinear(),
)


def _matvec_vjp_matrix(g, ans, a, v, axes=None, **_):
    _refuse_axes(axes)
    return np.expand_dims(g, -1) * np.expand_dims(v, -2)


def _matvec_vjp_vector(g, ans, a, v, axes=None, **_):
    _refuse_axes(axes)
    return np.matmul(np.expand_dims(g, -2), a)[..., 0, :]


ufunc_rule(np.matvec, _matvec_vjp_matrix, _matvec_vjp_vector, reads=((1,), (0,)), params=True,
           jvp=multilinear())  # fmt: skip
ufunc_rule(
    np.vecmat,
    lambda g, ans, v, a, **params: _matvec_vjp_vector(g, ans, np.swapaxes(a, -1, -2), v, **params),
    lambda g, ans, v, a, **params: np.swapaxes(_matvec_vjp_matrix(g, ans, a, v, **params), -1, -2),
    reads=((1,), (0,)),
    params=True,
    jvp=multilinear(),
)


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
    free_a = [i for i in range(np.ndim(a)) if i not in axes_a]
    free_b = [j for j in range(np.ndim(b)) if j not in axes_b]
    out = np.tensordot(g, b, axes=(list(range(len(free_a), np.ndim(g))), free_b))
    # out's axes: a's free axes, then b's contracted axes in increasing order.
    source = free_a + [axes_a[axes_b.index(j)] for j in sorted(axes_b)]
    return np.transpose(out, np.argsort(source))


def _tensordot_vjp_b(g, a, b, axes_a, axes_b):
    free_a = [i for i in range(np.ndim(a)) if i not in axes_a]
    free_b = [j for j in range(np.ndim(b)) if j not in axes_b]
    out = np.tensordot(a, g, axes=(free_a, list(range(len(free_a)))))
    source = [axes_b[axes_a.index(i)] for i in sorted(axes_a)] + free_b
    return np.transpose(out, np.argsort(source))


TENSORDOT = VjpRule(
    "tensordot",
    lambda a, b, axes=2: np.tensordot(a, b, axes=axes),
    (
        lambda g, ans, a, b, axes=2: _tensordot_vjp_a(
            g, a, b, *tensordot_axes(axes, np.ndim(a), np.ndim(b))
        ),
        lambda g, ans, a, b, axes=2: _tensordot_vjp_b(
            g, a, b, *tensordot_axes(axes, np.ndim(a), np.ndim(b))
        ),
    ),
    ((1,), (0,)),
    jvp=multilinear(),
    handles_complex=True,
)


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    return apply(TENSORDOT, (a, b), {"axes": axes})


# The vjps below ask np.ndim rather than ``.ndim``: an operand may be a Python
# number (np.dot(x, 0.5)), which the engine keeps as it is.


def _dot_axes(a, b):
    return [np.ndim(a) - 1], [max(np.ndim(b) - 2, 0)]


def _dot_vjp_a(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.sum(g * b) if np.ndim(a) == 0 else g * b
    return _tensordot_vjp_a(g, a, b, *_dot_axes(a, b))


def _dot_vjp_b(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.sum(g * a) if np.ndim(b) == 0 else g * a
    return _tensordot_vjp_b(g, a, b, *_dot_axes(a, b))


DOT = VjpRule("dot", np.dot, (_dot_vjp_a, _dot_vjp_b), ((1,), (0,)), jvp=multilinear(),
              handles_complex=True)  # fmt: skip


@implements(np.dot)
def dot(a, b, out=None):
    return assign_out(apply(DOT, (a, b)), out, "np.dot")


def _inner_axes(a, b):
    return [np.ndim(a) - 1], [np.ndim(b) - 1]


def _has_scalar(a, b):
    return np.ndim(a) == 0 or np.ndim(b) == 0


INNER = VjpRule(
    "inner",
    np.inner,
    (
        lambda g, ans, a, b: (
            g * b if _has_scalar(a, b) else _tensordot_vjp_a(g, a, b, *_inner_axes(a, b))
        ),
        lambda g, ans, a, b: (
            g * a if _has_scalar(a, b) else _tensordot_vjp_b(g, a, b, *_inner_axes(a, b))
        ),
    ),
    ((1,), (0,)),
    jvp=multilinear(),
    handles_complex=True,
)


@implements(np.inner)
def inner(a, b):
    return apply(INNER, (a, b))


VDOT = VjpRule(
    "vdot",
    np.vdot,
    # numpy flattens both operands in C order and conjugates a: sum(conj(a) * b) has no
    # derivative in a but one in conj(a), whose transpose is conj(g * b).
    (
        lambda g, ans, a, b: np.reshape(np.conjugate(g * np.ravel(b)), np.shape(a)),
        lambda g, ans, a, b: np.reshape(g * np.conjugate(np.ravel(a)), np.shape(b)),
    ),
    ((1,), (0,)),
    jvp=multilinear(),
    handles_complex=True,
)


@implements(np.vdot)
def vdot(a, b, /):
    return apply(VDOT, (a, b))


OUTER = VjpRule(
    "outer",
    lambda a, b: np.outer(a, b),
    (
        lambda g, ans, a, b: np.reshape(np.matmul(g, np.ravel(b)), a.shape),
        lambda g, ans, a, b: np.reshape(np.matmul(np.ravel(a), g), b.shape),
    ),
    ((1,), (0,)),
    jvp=multilinear(),
    handles_complex=True,
)


@implements(np.outer)
def outer(a, b, out=None):
    return assign_out(apply(OUTER, (a, b)), out, "np.outer")


# -- trace and multi_dot: written with the rules above ------------------------------


@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    # numpy computes a.diagonal(offset, axis1, axis2).sum(-1, dtype): the same
    # operations here, so the same value, differentiated through the diagonal view.
    total = np.sum(np.diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)
    return assign_out(total, out, "np.trace")


def chain_order(dims: list[int]) -> dict[tuple[int, int], int]:
    """Where to split each sub-chain ``i..j`` of a matrix product to multiply fewest numbers.

    ``dims[i], dims[i + 1]`` is the shape of matrix ``i``. Ties go to the
    first split, as in np.linalg.multi_dot, so the products (and their
    rounding) are numpy's.
    """
    n = len(dims) - 1
    cost = {(i, i): 0 for i in range(n)}
    split: dict[tuple[int, int], int] = {}
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            costs = [cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1]
                     for k in range(i, j)]  # fmt: skip
            cost[i, j] = min(costs)
            split[i, j] = i + costs.index(cost[i, j])  # the first of the cheapest splits
    return split


def _chain_product(arrays, split, i, j):
    if i == j:
        return arrays[i]
    k = split[i, j]
    return np.dot(_chain_product(arrays, split, i, k), _chain_product(arrays, split, k + 1, j))


@implements(np.linalg.multi_dot)
def multi_dot(arrays, *, out=None):
    arrays = [a if isinstance(a, WrappedValue) else np.asarray(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    if len(arrays) == 2:
        return assign_out(np.dot(arrays[0], arrays[1]), out, "np.linalg.multi_dot")
    first, last = np.ndim(arrays[0]), np.ndim(arrays[-1])
    if first == 1:
        arrays[0] = np.atleast_2d(arrays[0])
    if last == 1:
        arrays[-1] = np.atleast_2d(arrays[-1]).T
    for a in arrays:
        if np.ndim(a) != 2:
            raise np.linalg.LinAlgError(
                f"{np.ndim(a)}-dimensional array given. Array must be two-dimensional"
            )
    dims = [np.shape(a)[0] for a in arrays] + [np.shape(arrays[-1])[1]]
    result = _chain_product(arrays, chain_order(dims), 0, len(arrays) - 1)
    if first == 1 and last == 1:
        result = result[0, 0]
    elif first == 1 or last == 1:
        result = np.ravel(result)
    return assign_out(result, out, "np.linalg.multi_dot")


# -- solve, inv, det, slogdet -----------------------------------------------------------


def _mT(a):
    return np.swapaxes(a, -1, -2)


def _solve_transposed(a, g, b_is_vector):
    """``solve(a.T, g)``, with ``g`` a (stack of) vector(s) when ``b`` was one."""
    if b_is_vector:
        return np.linalg.solve(_mT(a), np.expand_dims(g, -1))[..., 0]
    return np.linalg.solve(_mT(a), g)


def _solve_vjp_a(g, ans, a, b):
    # x = a^-1 b, so dx = -a^-1 da x: the cotangent of a is -(a^-T g) x^T.
    vector = b.ndim == 1
    gb = _solve_transposed(a, g, vector)
    if vector:
        return -np.expand_dims(gb, -1) * np.expand_dims(ans, -2)
    return -np.matmul(gb, _mT(ans))


@complex_exact  # (holomorphic)
@hand
def _solve_jvp(tangents, ans, args, kwargs):
    """x = a^-1 b, so dx = a^-1 (db - da x): one more solve with the same matrix, every
    direction a stack entry (a vector b as a column, as numpy reads it)."""
    (ta, tb), (a, b) = tangents, args
    vector = np.ndim(b) == 1
    x = np.expand_dims(ans, -1) if vector else ans
    rhs = None if tb is None else (np.expand_dims(tb, -1) if vector else tb)
    if ta is not None:
        moved = np.matmul(lift(ta, np.ndim(x)), x)
        rhs = -moved if rhs is None else lift(rhs, np.ndim(moved) - 1) - moved
    dx = np.linalg.solve(a, lift(rhs, max(np.ndim(a), np.ndim(rhs) - 1)))
    return dx[..., 0] if vector else dx


SOLVE = VjpRule(
    "linalg.solve",
    np.linalg.solve,
    (_solve_vjp_a, lambda g, ans, a, b: _solve_transposed(a, g, b.ndim == 1)),
    ((0, ANS), (0,)),
    jvp=_solve_jvp,
    handles_complex=True,  # (holomorphic: the transposes, not the adjoints, as JAX's)
)


@implements(np.linalg.solve)
def solve(a, b):
    return apply(SOLVE, (a, b))


INV = VjpRule(
    "linalg.inv",
    np.linalg.inv,
    # d(a^-1) = -a^-1 da a^-1, so the cotangent of a is -a^-T g a^-T.
    (lambda g, ans, a: -np.matmul(_mT(ans), np.matmul(g, _mT(ans))),),
    ((ANS,),),
    jvp=complex_exact(hand(  # (holomorphic)
        lambda tangents, ans, args, kwargs: -np.matmul(ans, np.matmul(tangents[0], ans))
    )),
    handles_complex=True,
)


@implements(np.linalg.inv)
def inv(a):
    return apply(INV, (a,))


def _matrix_axes(ndim, kwargs):
    """The axes det and slogdet reduce (for their forward rules)."""
    return (ndim - 2, ndim - 1), False


def _as_matrix_factor(g):
    return np.expand_dims(np.expand_dims(g, -1), -1)


DET = VjpRule(
    "linalg.det",
    np.linalg.det,
    # Jacobi's formula: d det(a) = det(a) tr(a^-1 da).
    (lambda g, ans, a: _as_matrix_factor(g * ans) * _mT(np.linalg.inv(a)),),
    ((0, ANS),),
    jvp=through_gradient(
        lambda g, ans, a: _as_matrix_factor(g * ans) * _mT(np.linalg.inv(a)), _matrix_axes
    ),
    handles_complex=True,
)


@implements(np.linalg.det)
def det(a):
    return apply(DET, (a,))


LOGABSDET = VjpRule(
    "linalg.slogdet",
    lambda a: np.linalg.slogdet(a)[1],
    # d log|det(a)| = tr(a^-1 da).
    (lambda g, ans, a: _as_matrix_factor(g) * _mT(np.linalg.inv(a)),),
    ((0,),),
    jvp=through_gradient(
        lambda g, ans, a: _as_matrix_factor(g) * _mT(np.linalg.inv(a)), _matrix_axes
    ),
    handles_complex=True,  # (Re tr(a^-1 da) for complex a: the real g times a^-T again)
)
# The sign of a complex determinant is det / |det| = exp(i arg det), smooth where det is
# not 0: d sign = sign * i Im tr(a^-1 da), so abar = i Im(g * sign) a^-T.
def _complex_sign_vjp(g, ans, a):
    return 1j * _as_matrix_factor(np.imag(g * ans)) * _mT(np.linalg.inv(a))


COMPLEX_SIGN = VjpRule(
    "linalg.slogdet",
    lambda a: np.linalg.slogdet(a)[0],
    (_complex_sign_vjp,),
    ((0, ANS),),
    jvp=through_gradient(_complex_sign_vjp, _matrix_axes),  # (not holomorphic: both parts)
    handles_complex=True,
)

SLOGDET_RESULT = type(np.linalg.slogdet(np.eye(1)))


@implements(np.linalg.slogdet)
def slogdet(a):
    sign, logabsdet = np.linalg.slogdet(unwrap(a))
    if np.result_type(sign).kind == "c":
        sign = apply(COMPLEX_SIGN, (a,), None, sign)
    else:  # the sign of a real determinant is piecewise constant: no derivative
        sign = wrap_constant(sign)
    return SLOGDET_RESULT(sign, apply(LOGABSDET, (a,), None, logabsdet))


# -- norm ------------------------------------------------------------------------------


def _norm_kind(ndim: int, ord, axis) -> tuple[str, tuple[int, ...]]:
    """``("vector" | "matrix", axes)`` as np.linalg.norm reads its arguments."""
    if axis is None:
        if ord is None:
            return "all", tuple(range(ndim))
        return ("vector", (0,)) if ndim == 1 else ("matrix", (0, 1))
    if isinstance(axis, (tuple, list)):
        axes = tuple(int(a) % ndim for a in axis)
        return ("vector", axes) if len(axes) == 1 else ("matrix", axes)
    return "vector", (int(axis) % ndim,)


def _extreme_share(values, extreme, axes):
    """1/count where ``values`` equals its group's ``extreme`` (ties share), else 0."""
    hit = values == extreme
    return hit / np.sum(hit, axis=axes, keepdims=True)


def _nonzero(ans):
    return np.where(ans == 0, 1.0, ans)


def _norm_vjp(g, ans, x, ord=None, axis=None, keepdims=False):
    kind, axes = _norm_kind(np.ndim(x), ord, axis)
    g = np.reshape(g, _kept_shape(np.shape(x), axes))
    r = np.reshape(ans, _kept_shape(np.shape(x), axes))
    if kind == "all" or ord in (None, "fro") or (kind == "vector" and ord == 2):
        return g * x / _nonzero(r)
    if kind == "vector":
        if ord == 0:
            return np.zeros(np.shape(x))
        if ord == 1:
            return g * np.sign(x)
        if ord in (np.inf, -np.inf):
            return g * np.sign(x) * _extreme_share(np.abs(x), r, axes)
        p = float(ord)
        return g * np.sign(x) * (np.abs(x) / _nonzero(r)) ** (p - 1)
    row_axis, column_axis = axes
    if ord in (1, -1, np.inf, -np.inf):
        # 1: the largest column sum of |x| (summed over rows); inf: the largest row sum.
        summed = row_axis if ord in (1, -1) else column_axis
        sums = np.sum(np.abs(x), axis=summed, keepdims=True)
        return g * np.sign(x) * _extreme_share(sums, r, axes)
    return _singular_value_vjp(g, x, ord, axes)


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _singular_value_vjp(g, x, ord, axes):
    """Matrix norms 2, -2 and 'nuc': d sigma_i = u_i^T dx v_i (distinct singular values).

    np.linalg.svd has a rule, so this differentiates again.
    """
    moved = np.moveaxis(x, axes, (-2, -1))
    u, _, vh = np.linalg.svd(moved, full_matrices=False)
    if ord == "nuc":
        direction = np.matmul(u, vh)
    elif ord == 2:  # the largest singular value
        direction = u[..., :, :1] * vh[..., :1, :]
    else:  # -2: the smallest
        direction = u[..., :, -1:] * vh[..., -1:, :]
    return np.moveaxis(np.moveaxis(g, axes, (-2, -1)) * direction, (-2, -1), axes)


def _norm_axes(ndim, kwargs):
    return _norm_kind(ndim, kwargs.get("ord"), kwargs.get("axis"))[1], kwargs.get("keepdims", False)


NORM = VjpRule(
    "linalg.norm", np.linalg.norm, (_norm_vjp,), ((0, ANS),),
    jvp=through_gradient(_norm_vjp, _norm_axes),
)  # fmt: skip


@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    if isinstance(x, WrappedValue) and x.dtype.kind == "c" and any_active((x,)):
        return _complex_norm(x, ord, axis, keepdims)
    return apply(NORM, (x,), {"ord": ord, "axis": axis, "keepdims": keepdims})


def _complex_norm(x, ord, axis, keepdims):
    """numpy's steps for a complex array, on the traced array: numpy's values, and the
    derivative through rules that handle complex values."""
    ndim = x.ndim
    if axis is None and (ord is None or (ord in ("f", "fro") and ndim == 2)
                         or (ord == 2 and ndim == 1)):  # fmt: skip
        flat = np.ravel(x, order="K")
        real, imag = flat.real, flat.imag
        result = np.sqrt(np.dot(real, real) + np.dot(imag, imag))
        return np.reshape(result, ndim * [1]) if keepdims else result
    axes = tuple(range(ndim)) if axis is None else axis
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    if ord in (None, "fro", "f") or (ord == 2 and len(axes) == 1):
        return np.sqrt(np.sum((np.conjugate(x) * x).real, axis=axes, keepdims=keepdims))
    if len(axes) == 2 and ord in (2, -2, "nuc"):  # numpy's steps: of the singular values
        rows, columns = (normalize_axis_index(a, ndim) for a in axes)
        values = np.linalg.svd(np.moveaxis(x, (rows, columns), (-2, -1)), compute_uv=False)
        result = {2: np.max, -2: np.min, "nuc": np.sum}[ord](values, axis=-1)
        if keepdims:
            shape = list(x.shape)
            shape[rows] = shape[columns] = 1
            result = np.reshape(result, shape)
        return result
    # numpy takes abs(x) first for every other order: the same from there on.
    return apply(NORM, (np.abs(x),), {"ord": ord, "axis": axis, "keepdims": keepdims})


@implements(np.linalg.vector_norm)
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    # numpy's steps: several axes are moved to the front and merged into one.
    shape = list(np.shape(x))
    if axis is None:
        x, norm_axis = np.ravel(x), 0
    elif isinstance(axis, tuple):
        axes = normalize_axis_tuple(axis, np.ndim(x))
        rest = tuple(i for i in range(np.ndim(x)) if i not in axes)
        merged = int(np.prod([shape[i] for i in axes], dtype=int))
        x = np.reshape(np.transpose(x, axis + rest), (merged, *[shape[i] for i in rest]))
        norm_axis = 0
    else:
        norm_axis = axis
    result = np.linalg.norm(x, axis=norm_axis, ord=ord)
    if keepdims:
        for i in normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape)):
            shape[i] = 1
        result = np.reshape(result, tuple(shape))
    return result


@implements(np.linalg.matrix_norm)
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return np.linalg.norm(x, axis=(-2, -1), keepdims=keepdims, ord=ord)


@implements(np.linalg.matrix_power)
def matrix_power(a, n):
    # numpy's order of products (its implementation converts a to a raw array first).
    if np.ndim(a) < 2 or np.shape(a)[-1] != np.shape(a)[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    n = operator.index(n)
    if n == 0:
        return wrap_constant(np.broadcast_to(np.eye(np.shape(a)[-1], dtype=a.dtype),
                                             np.shape(a)).copy())  # fmt: skip
    if n < 0:
        a, n = np.linalg.inv(a), -n
    if n == 1:
        return a
    if n == 2:
        return np.matmul(a, a)
    if n == 3:
        return np.matmul(np.matmul(a, a), a)
    square = result = None
    while n > 0:
        square = a if square is None else np.matmul(square, square)
        n, bit = divmod(n, 2)
        if bit:
            result = square if result is None else np.matmul(result, square)
    return result


@implements(np.kron)
def kron(a, b):
    # numpy's steps: interleave new axes so that one multiply makes every block.
    a = a if isinstance(a, WrappedValue) else np.asanyarray(a)
    b = b if isinstance(b, WrappedValue) else np.asanyarray(b)
    if np.ndim(a) < np.ndim(b):
        a = np.reshape(a, (1,) * (np.ndim(b) - np.ndim(a)) + np.shape(a))
    nda, ndb = np.ndim(a), np.ndim(b)
    if nda == 0 or ndb == 0:
        return np.multiply(a, b)
    nd = max(nda, ndb)
    a_shape = (1,) * max(0, ndb - nda) + np.shape(a)
    b_shape = (1,) * max(0, nda - ndb) + np.shape(b)
    a = np.expand_dims(a, tuple(range(ndb - nda)))
    b = np.expand_dims(b, tuple(range(nda - ndb)))
    a = np.expand_dims(a, tuple(range(1, nd * 2, 2)))
    b = np.expand_dims(b, tuple(range(0, nd * 2, 2)))
    return np.reshape(np.multiply(a, b), tuple(np.multiply(a_shape, b_shape)))


def _cross_takes_2d() -> bool:
    """Whether this numpy's np.cross takes 2-component vectors (deprecated in numpy 2.0,
    refused from 2.5): asked of numpy itself."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            np.cross(np.ones(2), np.ones(2))
        except ValueError:
            return False
    return True


_CROSS_TAKES_2D = _cross_takes_2d()


@implements(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    a = np.moveaxis(a if isinstance(a, WrappedValue) else np.asarray(a), axisa, -1)
    b = np.moveaxis(b if isinstance(b, WrappedValue) else np.asarray(b), axisb, -1)
    na, nb = np.shape(a)[-1], np.shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if not _CROSS_TAKES_2D and (na, nb) != (3, 3):  # numpy's own refusal
        raise ValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, but they are "
            f"{na} and {nb} dimensional instead."
        )
    # numpy's arithmetic: a missing z component is zero.
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = a0 * b1 - a1 * b0
    if na == nb == 2:
        return z
    if na == 2:
        b2 = b[..., 2]
        x, y = a1 * b2, -(a0 * b2)
    elif nb == 2:
        a2 = a[..., 2]
        x, y = -(a2 * b1), a2 * b0
    else:
        a2, b2 = a[..., 2], b[..., 2]
        x, y = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    result = np.stack(np.broadcast_arrays(x, y, z), axis=-1)
    return np.moveaxis(result, -1, normalize_axis_index(axisc, np.ndim(result)))


# -- polynomials -----------------------------------------------------------------------


@implements(np.polyval)
def polyval(p, x):
    # numpy's Horner loop (its implementation converts p and x to raw arrays first).
    if isinstance(x, np.poly1d) or isinstance(p, np.poly1d):
        return np.polyval(unwrap(p), unwrap(x))
    p = p if isinstance(p, WrappedValue) else np.asarray(p)
    x = x if isinstance(x, WrappedValue) else np.asanyarray(x)
    y = np.zeros_like(x)
    for coefficient in p:
        y = y * x + coefficient
    return y


# -- symmetric matrices: cholesky, eigh, eigvalsh -------------------------------------------


def from_triangle(symmetric, lower):
    """The cotangent of a matrix of which numpy reads one triangle (the other is ignored).

    ``symmetric`` is the cotangent with respect to the symmetric (Hermitian) matrix
    numpy sees: each off-diagonal element read stands for two of its elements. LAPACK
    reads only the real part of a complex diagonal, so its imaginary part gets none.
    """
    n = np.shape(symmetric)[-1]
    triangle = np.tril(symmetric, -1) if lower else np.triu(symmetric, 1)
    diagonal = np.real(symmetric) if np.result_type(symmetric).kind == "c" else symmetric
    return 2 * triangle + diagonal * np.eye(n)


def symmetric_part(m):
    return (m + _mT(m)) / 2


def hermitian_part(m):
    """``(m + m^H) / 2``: the symmetric part of a real ``m``."""
    return (m + adjoint(m)) / 2


def cholesky_vjp(g, ans, a, upper=False):
    # a = L L^H gives L^-1 da L^-H = X + X^H with X = L^-1 dL lower triangular (with a
    # real diagonal, as L's), so dL = L phi(L^-1 da L^-H), phi taking the lower triangle
    # with half the diagonal. Its adjoint in JAX's convention:
    # abar = L^-T herm(phi(L^T Lbar)) conj(L^-1) (L^-T sym(phi(L^T Lbar)) L^-1 for real a).
    # upper=True returns L^H, whose cotangent is Lbar^H.
    lower = adjoint(ans) if upper else ans
    lbar = adjoint(g) if upper else g
    inner = np.matmul(_mT(lower), lbar)
    n = np.shape(inner)[-1]
    phi = np.tril(inner, -1) + inner * (np.eye(n) / 2)
    inverse = np.linalg.inv(lower)
    hermitian = np.matmul(hermitian_part(phi), conjugate_if_complex(inverse))
    return from_triangle(np.matmul(_mT(inverse), hermitian), lower=not upper)


def to_triangle(t, lower):
    """The symmetric matrix numpy sees when it reads one triangle of ``t`` (the other is
    ignored): the tangent of a matrix argument of cholesky or eigh, batched or not."""
    if lower:
        return np.tril(t) + _mT(np.tril(t, -1))
    return np.triu(t) + _mT(np.triu(t, 1))


@hand
def cholesky_jvp(tangents, ans, args, kwargs):
    """dL = L phi(L^-1 da L^-T), phi the lower triangle with half the diagonal (as above)."""
    upper = bool((kwargs or {}).get("upper", False))
    lower = _mT(ans) if upper else ans
    inverse = np.linalg.inv(lower)
    da = to_triangle(tangents[0], lower=not upper)
    inner = np.matmul(inverse, np.matmul(da, _mT(inverse)))
    n = np.shape(inner)[-1]
    dl = np.matmul(lower, np.tril(inner, -1) + inner * (np.eye(n) / 2))
    return _mT(dl) if upper else dl


CHOLESKY = VjpRule(
    "linalg.cholesky", np.linalg.cholesky, (cholesky_vjp,), ((ANS,),), jvp=cholesky_jvp,
    handles_complex=True,
)  # fmt: skip


@implements(np.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    return apply(CHOLESKY, (a,), {"upper": upper} if upper else None)


def _eigenvalues_vjp(g, ans, a, UPLO="L"):
    # d lambda_i = Re(v_i^H da v_i): conj(V) diag(g) V^T, Hermitian (V diag(g) V^T, symmetric,
    # for a real matrix), of which numpy's triangle gets its part.
    _, vectors = np.linalg.eigh(a, UPLO)
    symmetric = np.matmul(conjugate_if_complex(vectors) * np.expand_dims(g, -2), _mT(vectors))
    return from_triangle(symmetric, lower=UPLO.upper() == "L")


def _eigenvectors_vjp(g, ans, a, UPLO="L"):
    # dV = V (F o (V^H da V)) with F_ij = 1 / (lambda_j - lambda_i) off the diagonal (and a
    # phase per vector that numpy picks: refused unless the loss ignores it). With
    # P = V^T g, abar = conj(V) (F o P) V^T, made Hermitian (symmetric for a real matrix)
    # for the triangle numpy reads (distinct eigenvalues).
    # The vectors are the output itself (one node for the vectors the loss read and these,
    # see linalg.eig's rule), the values eigvalsh's (sorted as eigh's).
    values, vectors = np.linalg.eigvalsh(a, UPLO), ans
    p = np.matmul(_mT(vectors), g)
    refuse_phase_dependence(p, "np.linalg.eigh")
    weighted = gap_weighted(values, p, "np.linalg.eigh (its eigenvectors)", columns_read(g))
    symmetric = hermitian_part(
        np.matmul(conjugate_if_complex(vectors), np.matmul(weighted, _mT(vectors)))
    )
    return from_triangle(symmetric, lower=UPLO.upper() == "L")


def _projected(t, a, uplo):
    """``V^T da V`` for each direction, the eigenvectors of ``a`` and its eigenvalues."""
    values, vectors = np.linalg.eigh(a, uplo)
    da = to_triangle(t, lower=uplo.upper() == "L")
    return np.matmul(_mT(vectors), np.matmul(da, vectors)), values, vectors


@hand
def _eigenvalues_jvp(tangents, ans, args, kwargs):
    # d lambda_i = v_i^T da v_i: the diagonal of V^T da V.
    projected, _, _ = _projected(tangents[0], args[0], (kwargs or {}).get("UPLO", "L"))
    return np.diagonal(projected, axis1=-2, axis2=-1)


@hand
def _eigenvectors_jvp(tangents, ans, args, kwargs):
    # dV = V (F o (V^T da V)), F_ij = 1 / (lambda_j - lambda_i) off the diagonal.
    projected, values, vectors = _projected(tangents[0], args[0], (kwargs or {}).get("UPLO", "L"))
    return np.matmul(vectors, gap_weighted(values, projected, "np.linalg.eigh (its eigenvectors)"))


EIGENVALUES = VjpRule(
    "linalg.eigh",
    lambda a, UPLO="L": np.linalg.eigh(a, UPLO)[0],
    (_eigenvalues_vjp,),
    ((0,),),
    jvp=_eigenvalues_jvp,
    handles_complex=True,
)
EIGENVECTORS = VjpRule(
    "linalg.eigh",
    lambda a, UPLO="L": np.linalg.eigh(a, UPLO)[1],
    (_eigenvectors_vjp,),
    ((0, ANS),),
    jvp=_eigenvectors_jvp,
    handles_complex=True,  # (where the loss does not depend on the vectors' phases)
)
EIGH_RESULT = type(np.linalg.eigh(np.eye(1)))


@implements(np.linalg.eigh)
def eigh(a, UPLO="L"):
    values, vectors = np.linalg.eigh(unwrap(a), UPLO)
    params = {"UPLO": UPLO}
    return EIGH_RESULT(
        apply(EIGENVALUES, (a,), params, values), apply(EIGENVECTORS, (a,), params, vectors)
    )


@implements(np.linalg.eigvalsh)
def eigvalsh(a, UPLO="L"):
    return apply(EIGENVALUES, (a,), {"UPLO": UPLO}, np.linalg.eigvalsh(unwrap(a), UPLO))
