"""Rules of mutagrad/rules/cumulative.py: cumsum and cumprod.

Values on WrappedArrays equal numpy's and gradients match finite differences
for axis None, int and negative int, through the functions and the methods,
with ``dtype=`` and ``out=``; cumprod also with exact zeros (one or several
per slice), where dividing by x would fail.
"""

from __future__ import annotations

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
    registered = rules_defined_in("mutagrad.rules.cumulative")
    assert registered, "found no rules: did the registry change?"
    missing = {getattr(r, "__name__", repr(r)) for r in registered - set(CUMULATIVE)}
    assert not missing, f"rules without a test: {sorted(missing)}"
