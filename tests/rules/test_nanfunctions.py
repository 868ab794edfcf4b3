"""Rules of mutagrad/rules/nanfunctions.py: nansum, nanprod, nanmean, nanvar, nanstd, nanmax,
nanmin, nancumsum and nancumprod.

Arrays with NaNs in random places (whole groups of them too) give numpy's
values exactly, numpy's warnings, and gradients that match finite
differences on the other elements (a NaN element gets no gradient; finite
differences of a NaN are skipped by comparing only where the input is not
NaN). Second order too.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rule_checks import rules_defined_in, weights

import mutagrad
from mutagrad.testing import check_gradient

# -- helpers -------------------------------------------------------------------


def check_nan_op(op, x, order=2):
    """numpy's values on x (with NaNs); the gradient on x's other elements, NaNs held fixed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = op(x.copy())
        w = weights(np.shape(expected))

        def loss(x):
            out = op(x)
            # NaN outputs (all-NaN groups) carry no gradient: leave them out of the loss.
            finite = np.where(np.isnan(expected), 0.0, out)
            return np.sum(finite * w + finite * finite / 4), out

        (_, got), (g,) = mutagrad.withgradient(loss, x)
        np.testing.assert_array_equal(got, expected, strict=True)
        if g is not None:
            assert np.all(g[np.isnan(x)] == 0), "a NaN element received a gradient"
        # Finite differences of the finite elements only: the NaNs are constants.
        mask = np.isnan(x)

        def of_finite(values):
            return loss(np.where(mask, x, _scatter(values, mask)))[0]

        finite = x[~mask]
        if finite.size:
            check_gradient(of_finite, finite, order=order)


def _scatter(values, mask):
    """An array of mask's shape holding ``values`` where mask is False (0 elsewhere)."""
    positions = np.flatnonzero(~mask.ravel())
    out = np.zeros_like(values, shape=mask.shape)
    flat = np.reshape(out, -1)
    flat[positions] = values
    return np.reshape(flat, mask.shape)


GRID = st.integers(-40, 40).map(lambda k: k / 8 + 0.05)


@st.composite
def with_nans(draw, elements=GRID):
    x = draw(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=3),
                        elements=elements, unique=True))  # fmt: skip
    nans = draw(hnp.arrays(np.bool_, x.shape))
    return np.where(nans, np.nan, x)


@st.composite
def axes(draw, ndim):
    return draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1)))


REDUCTIONS = [np.nansum, np.nanmean, np.nanmax, np.nanmin, np.nanvar, np.nanstd]


@pytest.mark.parametrize("reduction", REDUCTIONS, ids=[f.__name__ for f in REDUCTIONS])
@given(x=with_nans(), data=st.data())
def test_nan_reduction(reduction, x, data):
    axis = data.draw(axes(x.ndim), label="axis")
    keepdims = data.draw(st.sampled_from([np._NoValue, True, False]), label="keepdims")
    check_nan_op(lambda x: reduction(x, axis=axis, keepdims=keepdims), x)


@given(x=with_nans(st.one_of(st.just(0.0), st.floats(0.5, 1.5), st.floats(-1.5, -0.5))),
       data=st.data())  # fmt: skip
def test_nanprod(x, data):
    axis = data.draw(axes(x.ndim), label="axis")
    # (With exact zeros only to first order: see test_prod_with_zeros_to_second_order.)
    check_nan_op(lambda x: np.nanprod(x, axis=axis), x, order=1 if np.any(x == 0) else 2)


CUMULATIVE = [np.nancumsum, np.nancumprod]


@pytest.mark.parametrize("cumulative", CUMULATIVE, ids=[f.__name__ for f in CUMULATIVE])
@given(x=with_nans(st.floats(0.5, 1.5)), data=st.data())
def test_nan_cumulative(cumulative, x, data):
    axis = data.draw(axes(x.ndim), label="axis")
    check_nan_op(lambda x: cumulative(x, axis=axis), x)


@given(x=with_nans())
def test_ddof_dtype_and_out(x):
    def f(x):
        out = np.zeros_like(x, shape=x.shape[1:])
        result = np.nanvar(x, axis=0, ddof=1, dtype=np.float64, out=out)
        assert result is out
        return out + np.nanstd(x, axis=0, correction=1) + np.nansum(x, axis=0, initial=1.0)

    check_nan_op(f, x)


def test_all_nan_groups_warn_as_numpy():
    x = np.array([[np.nan, 1.0], [np.nan, 2.0]])
    with pytest.warns(RuntimeWarning, match="All-NaN slice"):
        (g,) = mutagrad.gradient(lambda x: np.nansum(np.nanmax(x, axis=0)), x)
    np.testing.assert_array_equal(g, [[0.0, 0.0], [0.0, 1.0]])
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        mutagrad.gradient(lambda x: np.nansum(np.nanmean(x, axis=0)), x)


def test_nanstd_of_one_element_has_a_zero_gradient():
    x = np.array([[np.nan, 1.0, 3.0], [2.0, np.nan, np.nan]])
    (g,) = mutagrad.gradient(lambda x: np.sum(np.nanstd(x, axis=1)), x)
    np.testing.assert_array_equal(g[1], [0.0, 0.0, 0.0])


def test_integer_arrays_have_no_nans():
    k = np.array([1, 2, 3])
    check_gradient(lambda k: np.nanmean(k * 1.0) + np.nansum(k) * 0.5, k)


# -- coverage ------------------------------------------------------------------


def test_every_rule_of_the_module_is_tested():
    tested = {*REDUCTIONS, np.nanprod, np.nancumsum, np.nancumprod}
    registered = rules_defined_in("mutagrad.rules.nanfunctions")
    assert registered, "found no rules: did the registry change?"
    missing = {r.__name__ for r in registered - tested}
    assert not missing, f"rules without a test: {sorted(missing)}"
