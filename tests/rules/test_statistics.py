"""Rules of mutagrad/rules/statistics.py: median, percentile and quantile.

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


# -- coverage ------------------------------------------------------------------


def test_every_rule_of_the_module_is_tested():
    registered = rules_defined_in("mutagrad.rules.statistics")
    assert registered, "found no rules: did the registry change?"
    missing = {r.__name__ for r in registered - {np.median, np.percentile, np.quantile}}
    assert not missing, f"rules without a test: {sorted(missing)}"
