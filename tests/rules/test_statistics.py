"""Rules of mutagrad/rules/statistics.py: median, percentile and quantile, and nanmedian,
nanpercentile and nanquantile.

Values on WrappedArrays equal numpy's exactly; gradients and Hessian-vector
products match finite differences, for axis None, an int, a tuple, keepdims,
scalar and array ``q``, every interpolation method, and ``out=``. Inputs are
distinct grid values, so no two elements tie (where the order statistics have
kinks).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import rule_checks
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rule_checks import rules_defined_in

import mutagrad

check_op = functools.partial(rule_checks.check_op, order=2, quadratic=True)

# -- helpers -------------------------------------------------------------------


GRID = st.integers(-40, 40).map(lambda k: k / 8 + 0.05)
X = hnp.arrays(
    np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), elements=GRID, unique=True
)


@st.composite
def axes(draw, ndim):
    """None, one axis (maybe negative) or a tuple of distinct axes."""
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    chosen = draw(st.permutations(range(ndim)))
    return tuple(chosen[: draw(st.integers(1, ndim))])


QS = st.one_of(
    st.floats(0, 1),
    st.lists(st.floats(0, 1), min_size=1, max_size=3).map(np.array),
    st.sampled_from([0.0, 0.5, 1.0]),
)
METHODS = ["linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf",
           "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
           "hazen", "weibull", "median_unbiased", "normal_unbiased"]  # fmt: skip


# -- median --------------------------------------------------------------------


@given(data=st.data())
def test_median(data):
    x = data.draw(X, label="x")
    axis = data.draw(axes(x.ndim), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    check_op(lambda x: np.median(x, axis=axis, keepdims=keepdims), x)


@given(x=X)
def test_median_into_out(x):
    def median_into(x):
        out = np.zeros_like(x, shape=x.shape[1:])
        result = np.median(x, axis=0, out=out)
        assert result is out
        return out

    check_op(median_into, x)


def test_median_by_hand():
    (g,) = mutagrad.gradient(lambda x: np.median(x), np.array([4.0, 1.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.5, 0.5])  # the mean of 2 and 3


# -- percentile and quantile -----------------------------------------------------


@pytest.mark.parametrize("function", [np.quantile, np.percentile], ids=["quantile", "percentile"])
@given(data=st.data())
def test_quantile(function, data):
    x = data.draw(X, label="x")
    q = data.draw(QS, label="q")
    q = q * 100 if function is np.percentile else q
    axis = data.draw(axes(x.ndim), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    method = data.draw(st.sampled_from(METHODS), label="method")
    check_op(lambda x: function(x, q, axis=axis, keepdims=keepdims, method=method), x)


@given(x=X)
def test_quantile_into_out(x):
    def quantile_into(x):
        out = np.zeros_like(x, shape=(2, *x.shape[1:]))
        result = np.quantile(x, [0.25, 0.8], axis=0, out=out)
        assert result is out
        return out

    check_op(quantile_into, x)


def test_quantile_by_hand():
    x = np.array([4.0, 1.0, 3.0, 2.0])
    (g,) = mutagrad.gradient(lambda x: np.quantile(x, 0.5 + 1 / 12), x)  # 2.25: 3/4 of 2.5..3
    np.testing.assert_allclose(g, [0.0, 0.0, 0.75, 0.25])


def test_traced_q_or_weights_are_refused():
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(mutagrad.NotDifferentiableError, match="with respect to q"):
        mutagrad.gradient(lambda q: np.quantile(x, q), 0.5)
    with pytest.raises(mutagrad.NotDifferentiableError, match="weights="):
        mutagrad.gradient(
            lambda x: np.quantile(x, 0.5, method="inverted_cdf", weights=[1, 2, 1]), x
        )
    # Constant weights on a constant array just run.
    got = np.quantile(mutagrad.asarray(x), 0.5, method="inverted_cdf", weights=[1, 2, 1])
    np.testing.assert_array_equal(
        got, np.quantile(x, 0.5, method="inverted_cdf", weights=[1, 2, 1])
    )


# -- nanmedian, nanpercentile and nanquantile ------------------------------------


@st.composite
def with_nans(draw, x, axis):
    """``x`` with some NaNs, each group (over ``axis``) keeping its smallest element."""
    mask = draw(hnp.arrays(np.bool_, x.shape), label="nan mask")
    all_nan = np.all(mask, axis=axis, keepdims=True)
    smallest = x == np.min(x, axis=axis, keepdims=True)
    return np.where(mask & ~(all_nan & smallest), np.nan, x)


@given(data=st.data())
def test_nanmedian(data):
    x = data.draw(X, label="x")
    axis = data.draw(axes(x.ndim), label="axis")
    x = data.draw(with_nans(x, axis))
    keepdims = data.draw(st.booleans(), label="keepdims")
    check_op(lambda x: np.nanmedian(x, axis=axis, keepdims=keepdims), x)


@pytest.mark.parametrize(
    "function", [np.nanquantile, np.nanpercentile], ids=["nanquantile", "nanpercentile"]
)
@given(data=st.data())
def test_nanquantile(function, data):
    x = data.draw(X, label="x")
    q = data.draw(QS, label="q")
    q = q * 100 if function is np.nanpercentile else q
    axis = data.draw(axes(x.ndim), label="axis")
    x = data.draw(with_nans(x, axis))
    keepdims = data.draw(st.booleans(), label="keepdims")
    method = data.draw(st.sampled_from(METHODS), label="method")
    check_op(lambda x: function(x, q, axis=axis, keepdims=keepdims, method=method), x)


@given(x=X)
def test_nan_order_statistics_without_nans_are_the_plain_ones(x):
    check_op(lambda x: np.nanmedian(x, axis=-1) + np.nanquantile(x, 0.3, axis=-1), x)


@given(x=X)
def test_nanquantile_into_out(x):
    def quantile_into(x):
        out = np.zeros_like(x, shape=(2, *x.shape[1:]))
        result = np.nanpercentile(x, [25, 80], axis=0, out=out)
        assert result is out
        out2 = np.zeros_like(x, shape=x.shape[1:])
        assert np.nanmedian(x, axis=0, out=out2) is out2
        return out + out2

    check_op(quantile_into, x)


def test_nanmedian_by_hand():
    x = np.array([4.0, np.nan, 1.0, 3.0, np.nan, 2.0])
    (g,) = mutagrad.gradient(lambda x: np.nanmedian(x), x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0, 0.5, 0.0, 0.5])  # the mean of 2 and 3
    (g,) = mutagrad.gradient(lambda x: np.nanquantile(x, 0.5 + 1 / 12), x)
    np.testing.assert_allclose(g, [0.0, 0.0, 0.0, 0.75, 0.0, 0.25])


@pytest.mark.parametrize(
    "function",
    [
        np.nanmedian,
        lambda x, **k: np.nanquantile(x, [0.2, 0.7], **k),
        lambda x, **k: np.nanpercentile(x, 30, method="nearest", **k),
    ],
    ids=["nanmedian", "nanquantile", "nanpercentile"],
)
def test_all_nan_groups_give_nan_and_no_gradient(function):
    x = np.array([[np.nan, 1.0, 5.0], [np.nan, np.nan, np.nan], [2.0, np.nan, 0.5]])
    with pytest.warns(RuntimeWarning, match="All-NaN slice"):
        expected = function(x, axis=1, keepdims=True)
    with pytest.warns(RuntimeWarning, match="All-NaN slice"):
        value, (g,) = mutagrad.withgradient(
            lambda x: (
                np.nansum(function(x, axis=1, keepdims=True) ** 2),
                function(x, axis=1, keepdims=True),
            ),
            x,
        )
    np.testing.assert_array_equal(value[1], expected)
    np.testing.assert_array_equal(g[1], [0.0, 0.0, 0.0])
    assert np.all(g[np.isnan(x)] == 0.0)
    check = [r for r in (g[0], g[2]) if np.any(r != 0)]
    assert len(check) == 2
    with pytest.warns(RuntimeWarning, match="All-NaN slice"):
        assert np.all(np.isnan(function(mutagrad.asarray(np.full(3, np.nan)))))


def test_nan_traced_q_or_weights_are_refused():
    x = np.array([1.0, np.nan, 3.0])
    with pytest.raises(mutagrad.NotDifferentiableError, match="with respect to q"):
        mutagrad.gradient(lambda q: np.nanquantile(x, q), 0.5)
    with pytest.raises(mutagrad.NotDifferentiableError, match="weights="):
        mutagrad.gradient(
            lambda x: np.nanpercentile(x, 50, method="inverted_cdf", weights=[1, 2, 1]), x
        )
    got = np.nanquantile(mutagrad.asarray(x), 0.5, method="inverted_cdf", weights=[1, 2, 1])
    np.testing.assert_array_equal(
        got, np.nanquantile(x, 0.5, method="inverted_cdf", weights=[1, 2, 1])
    )


# -- coverage ------------------------------------------------------------------


TESTED = {np.median, np.percentile, np.quantile, np.nanmedian, np.nanpercentile, np.nanquantile}


def test_every_rule_of_the_module_is_tested():
    registered = rules_defined_in("mutagrad.rules.statistics")
    assert registered, "found no rules: did the registry change?"
    missing = {r.__name__ for r in registered - TESTED}
    assert not missing, f"rules without a test: {sorted(missing)}"
