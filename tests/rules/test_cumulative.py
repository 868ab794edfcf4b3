"""Rules of mutagrad/rules/cumulative.py: cumsum, cumprod, cumulative_sum,
cumulative_prod, diff, ediff1d and trapezoid.

Values on WrappedArrays equal numpy's and gradients match finite differences
for axis None, int and negative int, through the functions and the methods,
with ``dtype=`` and ``out=``; cumprod also with exact zeros (one or several
per slice), where dividing by x would fail. diff: any order ``n``, scalar and
array (traced too) ``prepend=``/``append=``, second order.
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


SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, max_side=3)
ELEMENTS = {
    "cumsum": floats(-3, 3),
    # Products stay moderate, and exact zeros appear.
    "cumprod": st.one_of(st.just(0.0), floats(-1.5, -0.5), floats(0.5, 1.5)),
}
CUMULATIVE = [np.cumsum, np.cumprod]


@pytest.mark.parametrize("cumulative", CUMULATIVE, ids=[f.__name__ for f in CUMULATIVE])
@given(data=st.data())
def test_cumulative_along_an_axis(cumulative, data):
    elements = ELEMENTS[cumulative.__name__]
    x = data.draw(hnp.arrays(np.float64, SHAPES, elements=elements), label="x")
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)), label="axis")
    check_op(lambda x: cumulative(x, axis=axis), x)
    check_op(lambda x: cumulative(x, axis), x)  # axis by position
    method = cumulative.__name__
    check_op(lambda x: getattr(x, method)(axis=axis), x)


@pytest.mark.parametrize("cumulative", CUMULATIVE, ids=[f.__name__ for f in CUMULATIVE])
@given(data=st.data())
def test_cumulative_with_dtype_and_out(cumulative, data):
    elements = ELEMENTS[cumulative.__name__]
    x = data.draw(hnp.arrays(np.float64, SHAPES, elements=elements), label="x")

    def into_out(x):
        out = np.empty_like(x)
        result = cumulative(x, axis=-1, dtype=np.float64, out=out)
        assert result is out
        return out

    check_op(into_out, x)


def test_cumprod_with_zeros_to_second_order():
    x = np.array([[0.0, -1.0], [-1.0, -1.0]])
    check_gradient(lambda x: np.sum(np.cumprod(x, axis=0) ** 2), x, order=2)


def test_cumprod_with_zeros_by_hand():
    x = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    # y = [2, 0, 0, 0, 0]: dy0/dx0 = 1; dy1/dx1 = 2, and every later y has two zeros.
    (g,) = mutagrad.gradient(lambda x: np.sum(np.cumprod(x)), x)
    np.testing.assert_array_equal(g, [1.0, 2.0 + 6.0, 0.0, 0.0, 0.0])


def test_cumsum_by_hand():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    (g,) = mutagrad.gradient(
        lambda x: np.sum(np.cumsum(x, axis=0) * [[1.0, 10.0], [100.0, 1e3]]), x
    )
    np.testing.assert_array_equal(g, [[101.0, 1010.0], [100.0, 1000.0]])


# -- diff ----------------------------------------------------------------------


@st.composite
def edges(draw, x, axis):
    """A prepend= or append= value: nothing, a scalar, or an array matching x but along axis."""
    kind = draw(st.sampled_from(["none", "scalar", "array"]))
    if kind == "none":
        return np._NoValue
    if kind == "scalar":
        return draw(floats(-3, 3))
    shape = list(x.shape)
    shape[axis] = draw(st.integers(1, 2))
    return draw(hnp.arrays(np.float64, tuple(shape), elements=floats(-3, 3)))


@given(data=st.data())
def test_diff(data):
    x = data.draw(hnp.arrays(np.float64, SHAPES, elements=floats(-3, 3)), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    n = data.draw(st.integers(0, 4), label="n")
    before = data.draw(edges(x, axis), label="prepend")
    after = data.draw(edges(x, axis), label="append")
    check_op(lambda x: np.diff(x, n, axis, prepend=before, append=after), x)
    check_gradient(lambda x: np.sum(np.diff(x, n, axis, before, after) ** 2), x, order=2)
    if isinstance(before, np.ndarray):  # a traced prepend= has a gradient too
        check_op(lambda x, before: np.diff(x, n, axis, prepend=before, append=after), x, before)


def test_diff_of_booleans_and_errors_are_numpys():
    def f(x):
        flags = np.diff(x > 0.5)  # booleans differ with !=, as in numpy: a constant
        assert flags.dtype == np.bool_ and not mutagrad.is_traced(flags)
        with pytest.raises(ValueError, match="non-negative"):
            np.diff(x, -1)
        with pytest.raises(ValueError, match="at least one dimensional"):
            np.diff(x[0])
        assert np.diff(x, 0) is x
        return np.sum(np.diff(x)), flags

    x = np.array([0.0, 1.0, 0.2, 0.8])
    value, (g,) = mutagrad.withgradient(f, x)
    np.testing.assert_array_equal(value[1], np.diff(x > 0.5))
    np.testing.assert_array_equal(g, [-1.0, 0.0, 0.0, 1.0])


# -- numpy 2's cumulative_sum and cumulative_prod, ediff1d, trapezoid ------------


@pytest.mark.parametrize("cumulative", [np.cumulative_sum, np.cumulative_prod],
                         ids=["cumulative_sum", "cumulative_prod"])  # fmt: skip
@given(data=st.data())
def test_cumulative_with_an_initial_value(cumulative, data):
    elements = ELEMENTS["cumprod" if cumulative is np.cumulative_prod else "cumsum"]
    x = data.draw(hnp.arrays(np.float64, SHAPES, elements=elements), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    if x.ndim == 1 and data.draw(st.booleans(), label="no axis"):
        axis = None
    include = data.draw(st.booleans(), label="include_initial")
    check_op(lambda x: cumulative(x, axis=axis, include_initial=include), x)
    # (Second order away from zeros: see test_cumprod_with_zeros_to_second_order.)
    nonzero = np.where(x == 0, 0.75, x)
    check_gradient(lambda x: np.sum(cumulative(x, axis=axis) ** 2), nonzero, order=2)


def test_cumulative_sum_checks_its_axis_as_numpy():
    with pytest.raises(ValueError, match="axis"):
        mutagrad.gradient(lambda x: np.sum(np.cumulative_sum(x)), np.ones((2, 2)))


@given(x=hnp.arrays(np.float64, SHAPES, elements=floats(-3, 3)), data=st.data())
def test_ediff1d(x, data):
    ends = st.one_of(st.none(), floats(-3, 3),
                     hnp.arrays(np.float64, st.integers(0, 2), elements=floats(-3, 3)))  # fmt: skip
    begin, end = data.draw(ends, label="to_begin"), data.draw(ends, label="to_end")
    check_op(lambda x: np.ediff1d(x, to_end=end, to_begin=begin), x)
    check_gradient(lambda x: np.sum(np.ediff1d(x, to_begin=begin) ** 2), x, order=2)
    if isinstance(begin, np.ndarray):
        check_op(lambda x, begin: np.ediff1d(x, to_begin=begin), x, begin)


@given(data=st.data())
def test_trapezoid(data):
    y = data.draw(hnp.arrays(np.float64, SHAPES, elements=floats(-3, 3)), label="y")
    axis = data.draw(st.integers(-y.ndim, y.ndim - 1), label="axis")
    n = y.shape[axis]
    check_op(lambda y: np.trapezoid(y, axis=axis), y)
    check_op(lambda y: np.trapezoid(y, dx=0.25, axis=axis), y)
    grid = data.draw(hnp.arrays(np.float64, n, elements=floats(-3, 3)), label="x")
    check_op(lambda y, grid: np.trapezoid(y, grid, axis=axis), y, grid)
    full = data.draw(
        hnp.arrays(np.float64, y.shape, elements=floats(-3, 3)), label="x of y's shape"
    )
    check_op(lambda y, full: np.trapezoid(y, full, axis=axis), y, full)
    # (Halved inputs: this loss has degree 6, and differences of its gradients lose
    # precision on large values.)
    check_gradient(lambda y, full: np.sum(np.trapezoid(y * y, full, axis=axis) ** 2), y / 2,
                   full / 2, order=2)  # fmt: skip


# -- coverage ------------------------------------------------------------------


def test_every_rule_of_the_module_is_tested():
    registered = rules_defined_in("mutagrad.rules.cumulative")
    assert registered, "found no rules: did the registry change?"
    tested = {*CUMULATIVE, np.diff, np.cumulative_sum, np.cumulative_prod, np.ediff1d}
    tested |= {np.trapezoid}
    missing = {getattr(r, "__name__", repr(r)) for r in registered - tested}
    assert not missing, f"rules without a test: {sorted(missing)}"
