"""Rules of mutagrad/rules/linalg.py: matmul (``@``), vecdot, matvec, vecmat, dot, inner, vdot,
outer, tensordot, trace, multi_dot, kron, cross, polyval, and np.linalg's solve, inv, det,
slogdet, norm, vector_norm, matrix_norm, matrix_power, cholesky, eigh and eigvalsh.

Values on WrappedArrays equal numpy's, and gradients match finite
differences, for 1-D, 2-D and batched operands (with broadcast batch
dimensions), 0-d and Python scalar operands where numpy allows them, integer
and list ``axes`` for tensordot, method forms (``a.dot(b)``) and ``out=``.
The newer rules are also checked to second order (Hessian-vector products),
on well-conditioned matrices and away from the norms' kinks.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rule_checks import check_op, rules_defined_in, weights

import mutagrad
from mutagrad.testing import check_gradient
from numpy_compat import CROSS_TAKES_2D

# -- helpers -------------------------------------------------------------------


ELEMENTS = st.floats(-3, 3, allow_nan=False, allow_infinity=False, allow_subnormal=False)
SIDES = st.integers(1, 3)
SHAPES_UP_TO_2D = hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)


def arrays(shape):
    return hnp.arrays(np.float64, shape, elements=ELEMENTS)


def check_both_and_each(op, a, b):
    """``op`` with both operands traced, then with one of them a captured constant."""
    check_op(op, a, b)
    check_op(lambda a: op(a, b), a)
    check_op(lambda b: op(a, b), b)


# -- matmul --------------------------------------------------------------------


@st.composite
def matmul_operands(draw):
    n, m, k = draw(SIDES), draw(SIDES), draw(SIDES)
    batches = hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=2)
    batch_a, batch_b = draw(batches).input_shapes
    a_shape = (m,) if draw(st.booleans()) else (*batch_a, n, m)
    b_shape = (m,) if draw(st.booleans()) else (*batch_b, m, k)
    return draw(arrays(a_shape)), draw(arrays(b_shape))


@given(operands=matmul_operands(), use_operator=st.booleans())
def test_matmul(operands, use_operator):
    check_both_and_each(operator.matmul if use_operator else np.matmul, *operands)


MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 2)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((2, 2, 3), (3, 4)),  # batched with a matrix: b's cotangent sums over the batch
    ((3,), (2, 3, 4)),  # a vector with a batch
    ((2, 4, 3), (3,)),
    ((2, 1, 2, 3), (3, 3, 2)),  # batch dimensions broadcast against each other
]


@pytest.mark.parametrize(("a_shape", "b_shape"), MATMUL_SHAPES, ids=str)
@given(data=st.data())
def test_matmul_shapes(a_shape, b_shape, data):
    a, b = data.draw(arrays(a_shape)), data.draw(arrays(b_shape))
    check_op(operator.matmul, a, b)


def test_matmul_by_hand():
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0], [6.0]])
    ga, gb = mutagrad.gradient(lambda a, b: np.sum(a @ b), a, b)
    np.testing.assert_array_equal(ga, [[5.0, 6.0], [5.0, 6.0]])
    np.testing.assert_array_equal(gb, [[4.0], [6.0]])


# -- vecdot, matvec, vecmat (gufuncs) -------------------------------------------


@given(data=st.data())
def test_vecdot(data):
    """Broadcast batch dimensions, the core axis anywhere (axis=, negative), keepdims."""
    n = data.draw(SIDES, label="n")
    batches = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=2))
    axis = data.draw(st.integers(-1 - min(map(len, batches.input_shapes)), -1), label="axis")
    x1, x2 = (
        np.moveaxis(data.draw(arrays((*shape, n))), -1, axis) for shape in batches.input_shapes
    )
    keepdims = data.draw(st.booleans(), label="keepdims")
    check_both_and_each(lambda a, b: np.vecdot(a, b, axis=axis, keepdims=keepdims), x1, x2)
    check_op(np.linalg.vecdot, np.moveaxis(x1, axis, -1), np.moveaxis(x2, axis, -1), order=2)


@given(data=st.data())
def test_matvec_and_vecmat(data):
    m, n = data.draw(SIDES, label="m"), data.draw(SIDES, label="n")
    batches = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=2))
    a = data.draw(arrays((*batches.input_shapes[0], m, n)), label="a")
    v = data.draw(arrays((*batches.input_shapes[1], n)), label="v")
    u = data.draw(arrays((*batches.input_shapes[1], m)), label="u")
    check_both_and_each(np.matvec, a, v)
    check_both_and_each(np.vecmat, u, a)
    check_op(lambda a, v, u: np.matvec(a, v) * np.vecmat(u, a)[..., :1], a, v, u, order=2)


def test_vector_gufuncs_with_axes_are_refused():
    x = np.ones((2, 3))
    with pytest.raises(mutagrad.NotDifferentiableError, match="axes="):
        mutagrad.gradient(lambda x: np.sum(np.vecdot(x, x, axes=[(1,), (1,), ()])), x)


# -- dot -----------------------------------------------------------------------


@st.composite
def dot_operands(draw):
    """0-d to 3-d operands: a's last axis meets b's second-to-last (or only) axis."""
    a_ndim, b_ndim = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    m = draw(SIDES)
    if a_ndim == 0 or b_ndim == 0:
        a_shape = tuple(draw(SIDES) for _ in range(a_ndim))
        b_shape = tuple(draw(SIDES) for _ in range(b_ndim))
    else:
        a_shape = (*(draw(SIDES) for _ in range(a_ndim - 1)), m)
        b_shape = (
            (m,) if b_ndim == 1 else (*(draw(SIDES) for _ in range(b_ndim - 2)), m, draw(SIDES))
        )
    return draw(arrays(a_shape)), draw(arrays(b_shape))


@given(operands=dot_operands())
def test_dot(operands):
    check_both_and_each(np.dot, *operands)


@given(operands=dot_operands().filter(lambda ab: ab[0].ndim > 0))
def test_dot_method(operands):
    check_op(lambda a, b: a.dot(b), *operands)


@given(operands=dot_operands().filter(lambda ab: np.ndim(np.dot(*ab)) > 0))
def test_dot_into_out(operands):
    def dot_into(a, b):
        out = np.zeros_like(np.dot(a, b))
        result = np.dot(a, b, out=out)
        assert result is out
        return out

    check_op(dot_into, *operands)


@given(x=arrays(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)), s=ELEMENTS)
def test_dot_and_inner_with_a_python_scalar(x, s):
    check_op(np.dot, s, x)
    check_op(np.dot, x, s)
    check_op(np.inner, s, x)
    check_op(np.inner, x, s)
    # A Python number that is not differentiated reaches the vjps as it is, not as an array.
    check_op(lambda x: np.dot(x, s), x)
    check_op(lambda x: np.dot(s, x), x)
    check_op(lambda x: np.inner(x, s), x)
    check_op(lambda x: np.inner(s, x), x)
    check_op(lambda x: np.tensordot(x, s, 0), x)
    check_op(lambda x: np.tensordot(s, x, axes=0), x)


# -- inner ---------------------------------------------------------------------


@st.composite
def inner_operands(draw):
    """Operands sharing their last axis, or one of them 0-d."""
    a_ndim, b_ndim = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    m = draw(SIDES)
    if a_ndim == 0 or b_ndim == 0:
        a_shape = tuple(draw(SIDES) for _ in range(a_ndim))
        b_shape = tuple(draw(SIDES) for _ in range(b_ndim))
    else:
        a_shape = (*(draw(SIDES) for _ in range(a_ndim - 1)), m)
        b_shape = (*(draw(SIDES) for _ in range(b_ndim - 1)), m)
    return draw(arrays(a_shape)), draw(arrays(b_shape))


@given(operands=inner_operands())
def test_inner(operands):
    check_both_and_each(np.inner, *operands)


# -- vdot ----------------------------------------------------------------------


@given(data=st.data())
def test_vdot(data):
    """numpy flattens both operands (C order, whatever their shapes): any shapes of one size."""
    a = data.draw(arrays(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3)), label="a")
    shape = data.draw(st.sampled_from([a.shape, a.shape[::-1], (a.size,)]), label="b's shape")
    b = data.draw(arrays(shape), label="b")
    check_both_and_each(np.vdot, a, b)
    check_op(np.vdot, np.transpose(a), b, order=2)


# -- outer ---------------------------------------------------------------------

OUTER_SHAPES = hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)


@given(a=arrays(OUTER_SHAPES), b=arrays(OUTER_SHAPES))
def test_outer(a, b):
    """np.outer flattens its operands: the cotangents are reshaped back."""
    check_both_and_each(np.outer, a, b)


@given(a=arrays(OUTER_SHAPES), b=arrays(OUTER_SHAPES))
def test_outer_into_out(a, b):
    def outer_into(a, b):
        out = np.zeros_like(np.outer(a, b))
        result = np.outer(a, b, out=out)
        assert result is out
        return out

    check_op(outer_into, a, b)


# -- tensordot -----------------------------------------------------------------


@st.composite
def tensordot_operands(draw):
    """Operands and an ``axes`` argument: an int, or two lists (any order, maybe negative)."""
    a_ndim, b_ndim = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    k = draw(st.integers(0, min(a_ndim, b_ndim)), label="contracted")
    a_shape = [draw(SIDES) for _ in range(a_ndim)]
    b_shape = [draw(SIDES) for _ in range(b_ndim)]
    if draw(st.booleans(), label="int axes"):
        axes_a, axes_b = list(range(a_ndim - k, a_ndim)), list(range(k))
        axes = k
    else:
        axes_a = draw(st.permutations(range(a_ndim)))[:k]
        axes_b = draw(st.permutations(range(b_ndim)))[:k]
        negative = draw(st.booleans(), label="negative axes")
        axes = (
            [i - a_ndim if negative else i for i in axes_a],
            [j - b_ndim if negative else j for j in axes_b],
        )
    for i, j in zip(axes_a, axes_b):
        b_shape[j] = a_shape[i]
    return draw(arrays(tuple(a_shape))), draw(arrays(tuple(b_shape))), axes


@given(operands=tensordot_operands())
def test_tensordot(operands):
    a, b, axes = operands
    check_both_and_each(lambda a, b: np.tensordot(a, b, axes=axes), a, b)


TENSORDOT_CASES = [
    ((2, 3, 4), (3, 4, 2), 2),  # the default
    ((2, 3, 4), (3, 4, 2), (1, 0)),  # single ints
    ((2, 3, 4), (3, 4, 2), ([2, 1], [1, 0])),
    # Contracting a's first axis: the vjp's axes come out as a 3-cycle of a's axes,
    # which only the inverse permutation puts back (and likewise for b).
    ((2, 3, 4), (4, 2), ([0], [1])),
    ((3, 2), (4, 2, 3), ([1, 0], [1, 2])),
    ((2, 3, 4), (3, 2, 4), ([0, 2], [1, -1])),
]


@pytest.mark.parametrize(("a_shape", "b_shape", "axes"), TENSORDOT_CASES, ids=str)
@given(data=st.data())
def test_tensordot_cases(a_shape, b_shape, axes, data):
    a, b = data.draw(arrays(a_shape)), data.draw(arrays(b_shape))
    check_op(lambda a, b: np.tensordot(a, b, axes), a, b)


# -- trace ---------------------------------------------------------------------


@st.composite
def trace_calls(draw):
    """An array of 2 or 3 dimensions, an offset and two distinct axes (maybe negative)."""
    x = draw(arrays(hnp.array_shapes(min_dims=2, max_dims=3, max_side=3)), label="x")
    axis1, axis2 = draw(st.permutations(range(x.ndim)), label="axes")[:2]
    if draw(st.booleans(), label="negative axes"):
        axis1, axis2 = axis1 - x.ndim, axis2 - x.ndim
    offset = draw(st.integers(-3, 3), label="offset")
    return x, offset, axis1, axis2


@given(call=trace_calls())
def test_trace(call):
    x, offset, axis1, axis2 = call
    check_op(lambda x: np.trace(x, offset, axis1, axis2), x, order=2)
    check_op(lambda x: x.trace(offset=offset, axis1=axis1, axis2=axis2), x)


@given(x=arrays(hnp.array_shapes(min_dims=3, max_dims=3, max_side=3)))
def test_trace_with_dtype_and_out(x):
    def trace_into(x):
        out = np.zeros_like(x, shape=x.shape[2:])
        result = np.trace(x, dtype=np.float64, out=out)
        assert result is out
        return out

    check_op(trace_into, x)


# -- multi_dot -----------------------------------------------------------------


@st.composite
def chains(draw):
    """Two to five matrices that multiply in a chain; the ends are maybe vectors."""
    n = draw(st.integers(2, 5), label="matrices")
    dims = [draw(st.integers(1, 4)) for _ in range(n + 1)]
    shapes = [(dims[i], dims[i + 1]) for i in range(n)]
    if draw(st.booleans(), label="first is a vector"):
        shapes[0] = shapes[0][1:]
    if draw(st.booleans(), label="last is a vector"):
        shapes[-1] = shapes[-1][:1]
    return [draw(arrays(s)) for s in shapes]


@given(matrices=chains())
def test_multi_dot(matrices):
    """numpy's multiplication order, so numpy's rounding: values are equal exactly."""
    check_op(lambda *ms: np.linalg.multi_dot(list(ms)), *matrices, order=2)


@given(matrices=chains().filter(lambda ms: ms[0].ndim == ms[-1].ndim == 2))
def test_multi_dot_into_out(matrices):
    """(numpy's out= needs the 2-D result: vectors at the ends make it refuse.)"""

    def multi_dot_into(*ms):
        out = np.zeros_like(ms[0], shape=np.shape(np.linalg.multi_dot(matrices)))
        result = np.linalg.multi_dot(list(ms), out=out)
        assert result is out
        return out

    check_op(multi_dot_into, *matrices)


def test_chain_order_is_numpys():
    """A chain where the order matters: ((AB)C)D costs far less than the others."""
    from mutagrad.rules.linalg import chain_order

    assert chain_order([10, 100, 5, 50]) == {(0, 1): 0, (1, 2): 1, (0, 2): 1}
    assert chain_order([2, 2, 2, 2])[0, 2] == 0  # ties: the first split, as numpy


# -- solve, inv, det, slogdet --------------------------------------------------


@st.composite
def well_conditioned(draw, batch=True, size=None):
    """Square matrices M + (n + 1) I (diagonally dominant); maybe a row negated (det < 0)."""
    n = size or draw(st.integers(1, 3), label="n")
    shape = (*(draw(st.lists(SIDES, max_size=1)) if batch else ()), n, n)
    a = draw(hnp.arrays(np.float64, shape, elements=st.floats(-1, 1)), label="matrix")
    a = a + (n + 1) * np.eye(n)
    if draw(st.booleans(), label="negative determinant"):
        a[..., 0, :] *= -1
    return a


@st.composite
def solve_operands(draw):
    a = draw(well_conditioned())
    n = a.shape[-1]
    form = draw(st.sampled_from(["vector", "matrix", "batched matrix"]), label="b")
    if form == "vector":
        b_shape = (n,)
    elif form == "matrix":
        b_shape = (n, draw(SIDES))
    else:
        b_shape = (draw(SIDES), *a.shape[:-2], n, draw(SIDES))
    return a, draw(arrays(b_shape), label="b")


@given(operands=solve_operands())
def test_solve(operands):
    a, b = operands
    check_op(np.linalg.solve, a, b, order=2)
    check_op(lambda a: np.linalg.solve(a, b), a)
    check_op(lambda b: np.linalg.solve(a, b), b)


@given(a=well_conditioned())
def test_inv(a):
    check_op(np.linalg.inv, a, order=2)


@given(a=well_conditioned())
def test_det(a):
    check_op(np.linalg.det, a, order=2)


@given(a=well_conditioned())
def test_slogdet(a):
    """The sign is a constant; log|det| has the derivative a^-T."""

    def slogdet(a):
        sign, logabsdet = np.linalg.slogdet(a)
        assert not mutagrad.is_traced(sign) or not np.any(sign != sign)
        return sign * logabsdet

    check_op(slogdet, a, order=2)
    expected = np.linalg.slogdet(a)
    got = mutagrad.withgradient(lambda a: (0.0, np.linalg.slogdet(a)), a).val[1]
    assert type(got) is type(expected) and got._fields == ("sign", "logabsdet")
    np.testing.assert_array_equal(got.sign, expected.sign, strict=True)
    np.testing.assert_array_equal(got.logabsdet, expected.logabsdet, strict=True)


def test_det_by_hand():
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    (g,) = mutagrad.gradient(np.linalg.det, a)  # the cofactor matrix
    np.testing.assert_allclose(g, [[3.0, -0.5], [-1.0, 2.0]])


# -- norm ----------------------------------------------------------------------

PRIMES = np.array([p for p in range(2, 200) if all(p % d for d in range(2, p))], dtype=float)


def distinct_sums(x):
    """x plus tiny offsets (square roots of distinct primes): no two sums of |x| tie."""
    return x + np.sqrt(PRIMES[: x.size]).reshape(x.shape) * 1e-3


def separated(x, axes=(-2, -1), gap=0.05):
    """No near ties among the row sums or the column sums of |x| in each matrix.

    The 1- and inf-norms of a matrix have kinks where two such sums tie; the
    second-order check differences gradients 1e-3 apart, so they must stay clear.
    """
    matrices = np.moveaxis(np.abs(x), axes, (-2, -1))
    for sums in (np.sum(matrices, axis=-2), np.sum(matrices, axis=-1)):
        ordered = np.sort(sums, axis=-1)
        if ordered.shape[-1] > 1 and np.min(np.diff(ordered, axis=-1)) < gap:
            return False
    return True


# Distinct absolute values, at least 0.05 from zero (|x|'s kink).
NORM_ELEMENTS = st.integers(-24, 23).map(lambda k: k / 8 + 0.05)
VECTOR_ORDS = [None, 1, 2, np.inf, -np.inf, 0, 3, 0.5, -1, -2]
MATRIX_ORDS = [None, "fro", 1, -1, np.inf, -np.inf]


@pytest.mark.parametrize("ord", VECTOR_ORDS, ids=str)
@given(data=st.data())
def test_vector_norm(ord, data):
    x = data.draw(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=3),
                             elements=NORM_ELEMENTS, unique=True), label="x")  # fmt: skip
    if x.ndim == 1 and data.draw(st.booleans(), label="no axis"):
        axis = None
    else:
        axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
        axis = (axis,) if data.draw(st.booleans(), label="as a tuple") else axis
    keepdims = data.draw(st.booleans(), label="keepdims")
    check_op(lambda x: np.linalg.norm(x, ord, axis, keepdims), x, order=2)


@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=str)
@given(data=st.data())
def test_matrix_norm(ord, data):
    x = data.draw(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=3, max_side=3),
                             elements=NORM_ELEMENTS, unique=True), label="x")  # fmt: skip
    x = distinct_sums(x)
    if x.ndim == 2 and data.draw(st.booleans(), label="no axis"):
        axis = None
    else:
        axis = tuple(data.draw(st.permutations(range(x.ndim)), label="axes")[:2])
    assume(separated(x, (0, 1) if axis is None else axis))
    keepdims = data.draw(st.booleans(), label="keepdims")
    check_op(lambda x: np.linalg.norm(x, ord, axis, keepdims), x, order=2)


@given(x=arrays(hnp.array_shapes(min_dims=0, max_dims=4, max_side=3)), keepdims=st.booleans())
def test_norm_of_every_element(x, keepdims):
    """ord=None and axis=None: the 2-norm of all elements, whatever the dimensions."""
    x = np.abs(x) + 0.5  # away from the origin, where the norm has a kink
    check_op(lambda x: np.linalg.norm(x, keepdims=keepdims), x, order=2)


@pytest.mark.parametrize("ord", [2, -2, "nuc"], ids=str)
@given(x=hnp.arrays(np.float64, (3, 2), elements=st.floats(-2, 2)))
def test_singular_value_norms(ord, x):
    """To second order through np.linalg.svd's rules (distinct singular values)."""
    x = x + np.array([[3.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    singular_values = np.linalg.svd(x, compute_uv=False)
    assume(singular_values[1] > 0.1 and singular_values[0] - singular_values[1] > 0.1)
    check_op(lambda x: np.linalg.norm(x, ord), x, order=2)
    check_op(lambda x: np.linalg.norm(x[None], ord, axis=(2, 1)), x)


def test_norm_by_hand():
    x = np.array([3.0, -4.0])
    np.testing.assert_allclose(mutagrad.gradient(np.linalg.norm, x)[0], [0.6, -0.8])
    np.testing.assert_array_equal(
        mutagrad.gradient(lambda x: np.linalg.norm(x, np.inf), x)[0], [0.0, -1.0]
    )
    (g,) = mutagrad.gradient(np.linalg.norm, np.zeros(2))  # the origin: a zero subgradient
    np.testing.assert_array_equal(g, [0.0, 0.0])


@given(data=st.data())
def test_vector_norm_and_matrix_norm(data):
    """np.linalg's array-API forms: several axes merged into one, keepdims for them too."""
    x = data.draw(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=3, max_side=3),
                             elements=NORM_ELEMENTS, unique=True), label="x")  # fmt: skip
    x = distinct_sums(x)
    ord = data.draw(st.sampled_from([2, 1, np.inf, 3]), label="ord")
    keepdims = data.draw(st.booleans(), label="keepdims")
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1),
                               hnp.valid_tuple_axes(x.ndim, min_size=1)), label="axis")  # fmt: skip
    check_op(lambda x: np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord), x,
             order=2)  # fmt: skip
    matrix_ord = data.draw(st.sampled_from(["fro", 1, np.inf, -1]), label="matrix ord")
    assume(separated(x))
    check_op(lambda x: np.linalg.matrix_norm(x, keepdims=keepdims, ord=matrix_ord), x, order=2)


@given(a=well_conditioned(), n=st.integers(-3, 5))
def test_matrix_power(a, n):
    """numpy's products in numpy's order (binary powers), so numpy's values exactly."""
    a = a / (a.shape[-1] + 2)  # eigenvalues near 1: powers stay moderate
    # (Hessians of high powers are large: differences of gradients need a looser atol.)
    check_op(lambda a: np.linalg.matrix_power(a, n), a, order=2, atol=1e-4)


@given(data=st.data())
def test_kron(data):
    a = data.draw(arrays(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3)), label="a")
    b = data.draw(arrays(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3)), label="b")
    check_both_and_each(np.kron, a, b)
    check_op(np.kron, a, b, order=2)


@st.composite
def cross_operands(draw):
    """Vectors of 2 or 3 components along some axis, with broadcast leading dimensions."""
    lead = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=2))
    sizes = [2, 3] if CROSS_TAKES_2D else [3]  # numpy 2.5 refuses 2-component vectors
    n_a, n_b = draw(st.sampled_from(sizes)), draw(st.sampled_from(sizes))
    a = draw(arrays((*lead.input_shapes[0], n_a)))
    b = draw(arrays((*lead.input_shapes[1], n_b)))
    axisa = draw(st.integers(0, a.ndim - 1))
    axisb = draw(st.integers(0, b.ndim - 1))
    a, b = np.moveaxis(a, -1, axisa), np.moveaxis(b, -1, axisb)
    out_ndim = len(lead.result_shape) + (0 if n_a == n_b == 2 else 1)
    axisc = draw(st.integers(-1, out_ndim - 1)) if out_ndim else -1
    return a, b, {"axisa": axisa, "axisb": axisb, "axisc": axisc}


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@given(operands=cross_operands())
def test_cross(operands):
    a, b, axes = operands
    check_both_and_each(lambda a, b: np.cross(a, b, **axes), a, b)
    check_op(lambda a, b: np.cross(a, b, **axes), a, b, order=2)


@pytest.mark.skipif(CROSS_TAKES_2D, reason="this numpy's np.cross takes 2-component vectors")
def test_cross_of_2_component_vectors_is_refused_as_numpy_refuses_it():
    a, b = np.array([1.0, 2.0]), np.array([0.5, -1.0, 3.0])
    with pytest.raises(ValueError) as numpys:
        np.cross(a, b)
    with pytest.raises(ValueError) as ours:
        mutagrad.gradient(lambda a, b: np.sum(np.cross(a, b)), a, b)
    assert str(ours.value) == str(numpys.value)


def test_cross_by_hand():
    x, y = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    gx, gy = mutagrad.gradient(lambda x, y: np.cross(x, y)[2], x, y)  # x0 y1 - x1 y0
    np.testing.assert_array_equal(gx, [1.0, 0.0, 0.0])  # (y1, -y0, 0)
    np.testing.assert_array_equal(gy, [0.0, 1.0, 0.0])  # (-x1, x0, 0)


# -- symmetric matrices: cholesky, eigh, eigvalsh --------------------------------


@st.composite
def symmetric_positive(draw, distinct=False):
    """M M^T + I (well conditioned), batched maybe; the ignored triangle holds noise.

    numpy reads one triangle only, so the noise changes nothing, and the other
    triangle's gradient is zero.
    """
    n = draw(st.integers(1, 3), label="n")
    shape = (*draw(st.lists(SIDES, max_size=1)), n, n)
    m = draw(hnp.arrays(np.float64, shape, elements=st.floats(-1, 1)), label="m")
    a = m @ np.swapaxes(m, -1, -2) + np.eye(n)
    if distinct:  # eigenvalues at least 1 apart: eigenvectors are smooth
        a = a + np.diag(np.arange(n) * 3.0)
    noise = draw(hnp.arrays(np.float64, shape, elements=st.floats(-1, 1)), label="noise")
    return a + np.triu(noise, 1)  # numpy reads the lower triangle by default


@given(a=symmetric_positive(), upper=st.booleans())
def test_cholesky(a, upper):
    a = np.swapaxes(a, -1, -2) if upper else a  # the noise in the triangle numpy ignores
    check_op(lambda a: np.linalg.cholesky(a, upper=upper), a, order=2)


@given(a=symmetric_positive(distinct=True), uplo=st.sampled_from(["L", "U"]))
def test_eigh(a, uplo):
    """Eigenvalues, and eigenvectors through functions blind to their signs."""
    a = a if uplo == "L" else np.swapaxes(a, -1, -2)
    check_op(lambda a: np.linalg.eigh(a, uplo).eigenvalues, a, order=2)
    check_op(lambda a: np.linalg.eigh(a, UPLO=uplo)[1] ** 2, a, order=2)
    check_op(lambda a: np.linalg.eigvalsh(a, uplo), a, order=2)

    def projector(a):  # v_0 v_0^T
        vectors = np.linalg.eigh(a, uplo).eigenvectors
        return vectors[..., :, :1] * vectors[..., None, :, 0]

    check_op(projector, a, order=2)
    expected = np.linalg.eigh(a, uplo)
    got = mutagrad.withgradient(lambda a: (0.0, np.linalg.eigh(a, uplo)), a).val[1]
    assert type(got) is type(expected)
    np.testing.assert_array_equal(got.eigenvectors, expected.eigenvectors, strict=True)


def test_eigh_by_hand():
    a = np.array([[2.0, 1.0], [1.0, 2.0]])  # eigenvalues 1 and 3
    (g,) = mutagrad.gradient(lambda a: np.linalg.eigvalsh(a)[1], a)  # v v^T, v = (1, 1)/sqrt 2
    np.testing.assert_allclose(g, [[0.5, 0.0], [1.0, 0.5]])  # the upper element is not read


@given(p=arrays(hnp.array_shapes(max_dims=1, max_side=4)), x=arrays(SHAPES_UP_TO_2D))
def test_polyval(p, x):
    check_both_and_each(np.polyval, p, x)
    check_op(np.polyval, p, x, order=2)


# -- engine bugs found while testing these rules ----------------------------------


def test_transposed_cotangent_meets_a_view_read():
    a = np.arange(6.0).reshape(3, 2)
    b = np.arange(12.0).reshape(3, 4)
    w = weights((2, 4))

    def f(a):
        # tensordot's cotangent of a is a transposed (Fortran-ordered) array.
        return np.sum(np.tensordot(a, b, axes=([0], [0])) * w) + np.sum(a[0] * 10.0)

    check_gradient(f, a)


# -- coverage ------------------------------------------------------------------


def test_every_rule_of_the_module_is_tested():
    tested = {np.matmul, np.dot, np.inner, np.vdot, np.outer, np.tensordot, np.trace}
    tested |= {np.vecdot, np.matvec, np.vecmat}
    tested |= {np.linalg.multi_dot, np.linalg.solve, np.linalg.inv, np.linalg.det}
    tested |= {np.linalg.slogdet, np.linalg.norm, np.linalg.vector_norm, np.linalg.matrix_norm}
    tested |= {np.linalg.matrix_power, np.kron, np.cross, np.polyval}
    tested |= {np.linalg.cholesky, np.linalg.eigh, np.linalg.eigvalsh}
    registered = rules_defined_in("mutagrad.rules.linalg")
    assert registered, "found no rules: did the registry change?"
    missing = {getattr(r, "__name__", repr(r)) for r in registered - tested}
    assert not missing, f"rules without a test: {sorted(missing)}"
