"""Rules of mutagrad/rules/reductions.py: sum, mean, prod, max/amax, min/amin, var, std,
average and ``ufunc.reduce`` of add, multiply, maximum and minimum.

Values on WrappedArrays equal numpy's; gradients match finite differences for
axis None, int, negative int and tuple, with and without keepdims, through the
functions and the methods (``x.sum()``, ``x.mean(axis=0)``, ``x.max()``), and
with ``where=``, ``initial=``, ``ddof=`` and ``out=``. max and min inputs have
no ties (ties are checked by hand).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rule_checks import check_op, rules_defined_in

import mutagrad
from mutagrad.testing import check_gradient

# -- helpers -------------------------------------------------------------------


def floats(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, max_side=3)
NONEMPTY_SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, max_side=3)


def arrays(shape=SHAPES, elements=None):
    elements = floats(-3, 3) if elements is None else elements
    return hnp.arrays(np.float64, shape, elements=elements)


@st.composite
def distinct_arrays(draw, shape=SHAPES):
    """Arrays whose values are all at least 0.25 apart: no ties for max and min."""
    shape = draw(shape) if isinstance(shape, st.SearchStrategy) else shape
    n = int(np.prod(shape, dtype=np.int64))
    order = draw(st.permutations(range(n)))
    return (np.array(order, dtype=np.float64) * 0.25 - n / 8 + 0.05).reshape(shape)


# Products stay moderate, and exact zeros (one or several per group) appear.
PROD_ELEMENTS = st.one_of(st.just(0.0), floats(-1.5, -0.5), floats(0.5, 1.5))


@st.composite
def axes(draw, ndim, min_size=0):
    """An ``axis`` argument: None, an int (maybe negative) or a tuple of distinct axes."""
    choices = [st.none(), hnp.valid_tuple_axes(ndim, min_size=min_size)]
    if ndim:
        choices.append(st.integers(-ndim, ndim - 1))
    return draw(st.one_of(choices))


# -- the reduction functions ---------------------------------------------------

REDUCTIONS = [
    (np.sum, arrays),
    (np.mean, arrays),
    (np.prod, lambda shape: arrays(shape, PROD_ELEMENTS)),
    (np.max, distinct_arrays),
    (np.amax, distinct_arrays),
    (np.min, distinct_arrays),
    (np.amin, distinct_arrays),
    (np.var, arrays),
    (np.std, distinct_arrays),  # distinct values: a positive std, where sqrt is smooth
]


@pytest.mark.parametrize(
    ("reduction", "values"), REDUCTIONS, ids=[r.__name__ for r, _ in REDUCTIONS]
)
@given(data=st.data())
def test_reduction_over_axes(reduction, values, data):
    x = data.draw(values(SHAPES))
    axis = data.draw(axes(x.ndim), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    check_op(lambda x: reduction(x, axis=axis, keepdims=keepdims), x)


@pytest.mark.parametrize("reduction", [np.var, np.std], ids=["var", "std"])
@given(data=st.data())
def test_var_and_std_with_ddof(reduction, data):
    x = data.draw(distinct_arrays(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=3)))
    axis = data.draw(axes(x.ndim, min_size=1), label="axis")  # groups of 2 or more
    ddof = data.draw(st.sampled_from([0, 1]), label="ddof")
    check_op(lambda x: reduction(x, axis=axis, ddof=ddof), x)
    check_op(lambda x: reduction(x, axis=axis, correction=ddof, keepdims=True), x)


@given(x=distinct_arrays(NONEMPTY_SHAPES))
def test_reduction_methods(x):
    check_op(lambda x: x.sum(), x)
    check_op(lambda x: x.sum(axis=-1, keepdims=True), x)
    check_op(lambda x: x.mean(axis=0), x)
    check_op(lambda x: x.prod(axis=0), x)
    check_op(lambda x: x.max(), x)
    check_op(lambda x: x.min(axis=-1), x)
    check_op(lambda x: x.var(axis=0), x)
    check_op(lambda x: x.std(), x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("size", [1, 7, 128, 1001, 70_000])
def test_sum_and_mean_fast_paths_equal_numpy_bit_for_bit(dtype, size):
    # np.sum and np.mean of a float array without dtype=/out=/where= skip
    # numpy's Python layers; the value and its type must stay numpy's exactly
    # (float16 means are summed in float32 by numpy and take the general path).
    rng = np.random.default_rng(size)
    x = (rng.standard_normal(size) * 1e3 + 0.1).astype(dtype)
    shaped = x.reshape(-1, 1) if size % 2 else x.reshape(1, -1)

    def values(x, m):
        return (np.sum(x), np.mean(x), np.sum(m, axis=0), np.sum(m, axis=-1, keepdims=True),
                x.sum(), x.mean(), np.mean(m, axis=0))  # fmt: skip

    expected = values(x, shaped)
    got = mutagrad.withgradient(lambda x, m: (np.sum(x), values(x, m)), x, shaped).val[1]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e, strict=True)


def test_sum_and_mean_gradients_survive_writing_the_input_afterwards():
    # The reductions' pullbacks read nothing: overwriting the input after them is
    # an easy case and must not raise, and the gradients are the true ones.
    def loss(x):
        y = x * 1.0
        total = np.sum(y) + 3.0 * np.mean(y) + np.sum(y, axis=0).sum()
        y[...] = 0.0
        return total + np.sum(y)

    x = np.arange(6.0).reshape(2, 3)
    (grad,) = mutagrad.gradient(loss, x)
    np.testing.assert_array_equal(grad, np.full((2, 3), 2.0 + 3.0 / 6))
    check_gradient(loss, x)


@given(x=arrays(NONEMPTY_SHAPES))
def test_sum_and_mean_with_a_mask(x):
    mask = np.arange(x.size).reshape(x.shape) % 3 != 1
    mask[..., 0] = True  # no empty group along the last axis, whose mean would be nan
    check_op(lambda x: np.sum(x, where=mask), x)
    check_op(lambda x: np.sum(x, axis=0, where=mask[:1]), x)
    check_op(lambda x: np.mean(x, axis=-1, where=mask, keepdims=True), x)


@given(x=distinct_arrays(NONEMPTY_SHAPES))
def test_sum_and_mean_with_a_traced_mask(x):
    """x > c is a traced boolean; as a mask it carries no derivative."""
    check_op(lambda x: np.sum(x, where=x > 0), x)
    check_op(lambda x: np.sum(x**2, axis=0, where=x < 0.5), x)
    check_op(lambda x: np.mean(x, where=(x > -1) | (x == np.max(x))), x)


@given(x=distinct_arrays(NONEMPTY_SHAPES), initial=st.sampled_from([-1.0, 0.0, 1.0]))
def test_initial(x, initial):
    """With initial=, max and min of a group may be the initial value: zero gradient there."""
    check_op(lambda x: np.sum(x, axis=0, initial=initial), x)
    check_op(lambda x: np.max(x, axis=-1, initial=initial), x)
    check_op(lambda x: np.min(x, initial=initial, keepdims=True), x)
    check_op(lambda x: np.prod(x, axis=0, initial=initial), x)


@given(x=arrays(NONEMPTY_SHAPES))
def test_reduction_dtype_and_out(x):
    def into_out(x):
        out = np.empty_like(x[..., 0])
        result = np.sum(x, axis=-1, out=out)
        assert result is out
        np.mean(x, axis=-1, dtype=np.float64, out=out)
        return out + np.sum(x, axis=-1, dtype=np.float64)

    check_op(into_out, x)


@given(x=arrays(SHAPES, PROD_ELEMENTS), initial=st.sampled_from([-1.0, 0.0, 2.0]))
def test_prod_with_zeros(x, initial):
    check_op(np.prod, x)
    check_op(lambda x: np.prod(x, initial=initial), x)
    check_op(lambda x: np.multiply.reduce(x, axis=None, initial=initial), x)
    if x.ndim >= 2:
        check_op(lambda x: np.prod(x, axis=(0, -1), keepdims=True), x)


def test_prod_with_zeros_to_second_order():
    x = np.array([[0.0, 1.0], [1.5, 0.5]])
    check_gradient(lambda x: np.sum(np.prod(x, axis=0) ** 2), x, order=2)


def test_prod_with_zeros_by_hand():
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 4.0]])
    (g,) = mutagrad.gradient(lambda x: np.sum(np.prod(x, axis=1)), x)
    np.testing.assert_array_equal(g, [[6.0, 0.0, 0.0], [0.0, 0.0, 0.0], [8.0, 4.0, 2.0]])


def test_max_and_min_share_the_gradient_between_ties():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    (g,) = mutagrad.gradient(lambda x: np.sum(np.max(x, axis=1)), x)
    np.testing.assert_allclose(g, [[0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    x = np.array([[1.0, 3.0, 3.0], [1.0, 2.0, 1.0]])
    (g,) = mutagrad.gradient(lambda x: np.min(x), x)
    np.testing.assert_allclose(g, [[1 / 3, 0.0, 0.0], [1 / 3, 0.0, 1 / 3]])


# -- average -------------------------------------------------------------------


@given(data=st.data())
def test_average(data):
    """Unweighted, weighted (weights of a's shape or of the axis), traced weights too."""
    x = data.draw(arrays(NONEMPTY_SHAPES), label="x")
    keepdims = data.draw(st.sampled_from([np._NoValue, False, True]), label="keepdims")
    axis = data.draw(axes(x.ndim), label="axis")
    check_op(lambda x: np.average(x, axis, keepdims=keepdims), x)
    full = data.draw(arrays(x.shape, floats(0.5, 2)), label="weights")
    check_op(lambda x, w: np.average(x, axis, w, keepdims=keepdims), x, full)
    if isinstance(axis, int):
        along = data.draw(arrays((x.shape[axis],), floats(0.5, 2)), label="weights along axis")
        check_op(lambda x, w: np.average(x, axis, w, keepdims=keepdims), x, along)


@given(x=arrays(hnp.array_shapes(min_dims=2, max_dims=2, max_side=3)))
def test_average_returned(x):
    def f(x):
        mean, total = np.average(x, 0, x * x + 1.0, returned=True)
        plain_mean, count = np.average(x, 1, returned=True)
        return np.concatenate([mean, total, plain_mean, np.ravel(count)])

    check_op(f, x)


def test_average_errors_are_numpys():
    x = mutagrad.asarray(np.ones((2, 3)))
    with pytest.raises(TypeError, match="Axis must be specified"):
        np.average(x, weights=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="Shape of weights"):
        np.average(x, axis=1, weights=[1.0, 2.0])
    with pytest.raises(ZeroDivisionError):
        np.average(x, axis=1, weights=[1.0, -1.0, 0.0])


# -- ufunc.reduce --------------------------------------------------------------

UFUNC_REDUCE = [
    (np.add, arrays),
    (np.multiply, lambda shape: arrays(shape, PROD_ELEMENTS)),
    (np.maximum, distinct_arrays),
    (np.minimum, distinct_arrays),
]


@pytest.mark.parametrize(
    ("ufunc", "values"), UFUNC_REDUCE, ids=[f"{u.__name__}.reduce" for u, _ in UFUNC_REDUCE]
)
@given(data=st.data())
def test_ufunc_reduce(ufunc, values, data):
    x = data.draw(values(NONEMPTY_SHAPES))
    axis = data.draw(axes(x.ndim), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    check_op(lambda x: ufunc.reduce(x, axis=axis, keepdims=keepdims), x)
    check_op(ufunc.reduce, x)  # the default axis is 0
    check_op(lambda x: ufunc.reduce(x, -1), x)  # axis given by position


@given(x=arrays(NONEMPTY_SHAPES))
def test_add_reduce_with_initial(x):
    check_op(lambda x: np.add.reduce(x, axis=0, initial=1.5), x)


# -- core limitations found while testing these rules -------------------------


def test_ufunc_reduce_with_a_mask():
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]])
    mask = np.array([True, False, True])
    check_op(lambda x: np.add.reduce(x, axis=0, where=mask), x)


def test_sum_with_an_integer_dtype_has_no_gradient():
    x = np.array([0.3, 1.7, -2.2])
    (g,) = mutagrad.gradient(lambda x: np.sum(x, dtype=np.int64) * 1.0 + np.sum(x), x)
    np.testing.assert_array_equal(g, [1.0, 1.0, 1.0])


# -- coverage ------------------------------------------------------------------


BINS = np.array([0, 3, 1, 1, 3])


def test_bincount_weights_have_a_gradient_and_counts_none():
    w = np.array([0.5, -1.2, 2.0, 0.3, 1.1])
    check_op(lambda w: np.bincount(BINS, weights=w), w, order=2)
    check_op(lambda w: np.bincount(BINS, w, minlength=6), w)
    counts = mutagrad.gradient(lambda w: np.sum(w) * np.bincount(BINS).sum(), w)[0]
    np.testing.assert_allclose(counts, np.full(5, 5.0))

    def index_written_after(w):
        index = BINS.copy()
        y = np.bincount(index, weights=w * w)
        index[:] = 0  # the pullback keeps its own copy of the bins
        return np.sum(y * np.arange(4.0))

    (g,) = mutagrad.gradient(index_written_after, w)
    np.testing.assert_allclose(g, 2 * w * BINS)


def test_every_rule_of_the_module_is_tested():
    tested = {r for r, _ in REDUCTIONS} | {(u, "reduce") for u, _ in UFUNC_REDUCE}
    tested |= {np.average, np.bincount}
    registered = rules_defined_in("mutagrad.rules.reductions")
    assert registered, "found no rules: did the registry change?"
    missing = {str(r) for r in registered - tested}
    assert not missing, f"rules without a test: {sorted(missing)}"
