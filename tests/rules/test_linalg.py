"""Rules of mutagrad/rules/linalg.py: matmul (``@``), dot, inner, outer and tensordot.

Values on WrappedArrays equal numpy's, and gradients match finite
differences, for 1-D, 2-D and batched operands (with broadcast batch
dimensions), 0-d and Python scalar operands where numpy allows them, integer
and list ``axes`` for tensordot, method forms (``a.dot(b)``) and ``out=``.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mutagrad
from mutagrad.core.wrapped import FUNCTION_RULES, UFUNC_RULES
from mutagrad.testing import check_gradient

# -- helpers -------------------------------------------------------------------


def weights(shape):
    """A fixed cotangent with distinct entries of both signs, so misplaced terms show."""
    n = int(np.prod(shape, dtype=np.int64))
    return (np.linspace(0.5, 1.5, n) * (-1.0) ** np.arange(n)).reshape(shape)


def check_op(op, *args, **tolerances):
    """``op``'s value on WrappedArrays is numpy's, and its gradient matches finite differences."""
    expected = op(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args])
    w = weights(np.shape(expected))

    def loss(*xs):
        out = op(*xs)
        return np.sum(out * w), out

    got = mutagrad.withgradient(loss, *args).val[1]
    np.testing.assert_array_equal(got, expected, strict=True)
    return check_gradient(loss, *args, **tolerances)


ELEMENTS = st.floats(-3, 3, allow_nan=False, allow_infinity=False, allow_subnormal=False)
SIDES = st.integers(1, 3)


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


# -- coverage ------------------------------------------------------------------


def _module_of(rule):
    vjps = getattr(rule, "vjps", None)
    if vjps is None:
        return type(rule).__module__
    return next((v.__module__ for v in vjps if v is not None), None)


def rules_defined_in(module):
    """Functions and ufuncs whose registered rule was written in ``module``."""
    found = {key for key, rule in UFUNC_RULES.items() if _module_of(rule) == module}
    found |= {fn for fn, adapter in FUNCTION_RULES.items() if adapter.__module__ == module}
    return found


def test_every_rule_of_the_module_is_tested():
    tested = {np.matmul, np.dot, np.inner, np.outer, np.tensordot}
    registered = rules_defined_in("mutagrad.rules.linalg")
    assert registered, "found no rules: did the registry change?"
    missing = {getattr(r, "__name__", repr(r)) for r in registered - tested}
    assert not missing, f"rules without a test: {sorted(missing)}"
