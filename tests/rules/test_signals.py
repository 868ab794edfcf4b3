"""Rules of mutagrad/rules/signals.py: np.correlate, np.convolve and np.interp.

Values on WrappedArrays equal numpy's (numpy computes them in C), and
gradients match finite differences to second order, in every mode and for
every pair of lengths; interp inside, below and above xp, with and without
left= and right=, away from the knots where it has kinks.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rule_checks import check_op, rules_defined_in

import mutagrad

ELEMENTS = st.floats(-2, 2, allow_subnormal=False)
VECTORS = hnp.arrays(np.float64, st.integers(1, 5), elements=ELEMENTS)


@pytest.mark.parametrize("mode", ["valid", "same", "full"])
@given(a=VECTORS, v=VECTORS)
def test_correlate_and_convolve(mode, a, v):
    check_op(lambda a, v: np.correlate(a, v, mode), a, v, order=2)
    check_op(lambda a, v: np.convolve(a, v, mode), a, v, order=2)
    check_op(lambda a: np.convolve(a, v, mode), a)
    check_op(lambda v: np.correlate(a, v, mode), v)


def test_convolve_by_hand():
    (g,) = mutagrad.gradient(lambda a: np.convolve(a, [1.0, 2.0])[1], np.array([3.0, 4.0]))
    np.testing.assert_array_equal(g, [2.0, 1.0])  # a[1] * 1 + a[0] * 2


# Knots 0, 1, 2.5, 3: the points x stay 0.1 away from them.
XP = np.array([0.0, 1.0, 2.5, 3.0])
POINTS = (
    st.integers(-5, 34).map(lambda k: k / 10 + 0.05).filter(lambda x: np.min(np.abs(x - XP)) > 0.04)
)


@given(
    x=hnp.arrays(np.float64, st.integers(1, 5), elements=POINTS),
    fp=hnp.arrays(np.float64, 4, elements=ELEMENTS),
    ends=st.sampled_from([(None, None), (0.25, None), (None, -0.5), (0.25, -0.5)]),
)
def test_interp(x, fp, ends):
    left, right = ends
    check_op(lambda x, xp, fp: np.interp(x, xp, fp, left, right), x, XP, fp, order=2)
    if left is not None and right is not None:
        # (numpy dispatches on x, xp and fp only: a traced left= needs one of them traced.)
        check_op(lambda x, l, r: np.interp(x, XP, fp, l, r), x, left, right)
    check_op(lambda fp: np.interp(float(x[0]), XP, fp), fp)


def test_interp_with_one_point_and_with_a_period():
    check_op(lambda fp: np.interp(np.array([-1.0, 2.0]), [0.5], fp), np.array([3.0]))
    with pytest.raises(mutagrad.NotDifferentiableError, match="period"):
        mutagrad.gradient(lambda fp: np.sum(np.interp([0.5], XP, fp, period=3.0)), np.ones(4))
    np.testing.assert_array_equal(
        np.interp(mutagrad.asarray([0.5]), XP, np.arange(4.0), period=3.0),
        np.interp([0.5], XP, np.arange(4.0), period=3.0),
    )


def test_every_rule_of_the_module_is_tested():
    registered = rules_defined_in("mutagrad.rules.signals")
    assert registered, "found no rules: did the registry change?"
    missing = registered - {np.correlate, np.convolve, np.interp}
    assert not missing, f"rules without a test: {sorted(f.__name__ for f in missing)}"
