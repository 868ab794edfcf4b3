"""Rules of mutagrad/rules/ufunc_methods.py: reduce, accumulate, reduceat and outer of every
binary ufunc that has a rule.

Each method of each ufunc is checked on inputs inside its domain and away from
its kinks: the value on WrappedArrays is numpy's, bit for bit (dtype, shape),
and the gradient matches central finite differences, with the keywords each
method takes (axis as an int, a negative int, a tuple and None; keepdims;
dtype; initial, traced or not; where; out). The fold (the sequential chain
rule) is checked against the closed forms where both exist, and the saved
input is overwritten after use (poisoned, or copied in snapshot mode).
"""

from __future__ import annotations

import numpy as np
import pytest
from rule_checks import check_op

import mutagrad
from mutagrad.core.registry import UFUNC_RULES
from mutagrad.rules import ufunc_methods
from mutagrad.testing import check_gradient

RNG = np.random.default_rng(22)
# Positive, away from zero and from each other: inside every domain below (power's base,
# divide's divisor, logaddexp...), and no ties for maximum and minimum.
X = np.array([[0.62, 1.31, 0.87, 1.06], [1.44, 0.71, 1.19, 0.93], [0.55, 1.24, 0.78, 1.52]])
MIXED = X * np.array([1.0, -1.0, 1.0, -1.0])  # signs for copysign, arctan2, minimum...
MASK = np.array([[True, False, True, True], [False, True, True, False], [True, True, False, True]])

# (ufunc, input): every binary ufunc with a rule whose reduce numpy runs on floats.
# remainder and fmod on values below their divisors, away from their jumps.
BINARY = [
    (np.add, MIXED),
    (np.subtract, MIXED),
    (np.multiply, MIXED),
    (np.divide, X),
    (np.power, X),
    (np.float_power, X),
    (np.remainder, X + 2.0),
    (np.fmod, X + 2.0),
    (np.copysign, MIXED),
    (np.logaddexp, MIXED),
    (np.logaddexp2, MIXED),
    (np.arctan2, X),
    (np.hypot, MIXED),
    (np.maximum, MIXED),
    (np.minimum, MIXED),
    (np.fmax, MIXED),
    (np.fmin, MIXED),
]
IDS = [u.__name__ for u, _ in BINARY]
# The ufuncs numpy reduces over several axes at once (associative and commutative).
REORDERABLE = {np.add, np.multiply, np.logaddexp, np.logaddexp2, np.hypot,
               np.maximum, np.minimum, np.fmax, np.fmin}  # fmt: skip


def left_fold(ufunc, x, axis=0, initial=None, where=None):
    """``ufunc.reduce`` as numpy documents it, one lane at a time: the left fold of the
    elements ``where`` selects, from ``initial`` (for a single axis or None)."""
    x = np.ravel(x) if axis is None else np.moveaxis(x, axis, -1)
    where = np.ones(x.shape, bool) if where is None else np.moveaxis(where, axis, -1)
    out = np.empty(x.shape[:-1])
    for lane in np.ndindex(out.shape):
        values = [v for v, keep in zip(x[lane], where[lane]) if keep]
        acc = values.pop(0) if initial is None else initial
        for v in values:
            acc = ufunc(acc, v)
        out[lane] = acc
    return out


def check_reduce(ufunc, x, **kwargs):
    """``ufunc.reduce(x, **kwargs)`` differentiates where numpy computes the left fold, and
    is refused where it does not (numpy 2.2 to 2.5: power and arctan2 of three or more
    elements along a contiguous axis)."""
    kwargs.setdefault("axis", 0)
    if np.allclose(ufunc.reduce(x, **kwargs), left_fold(ufunc, x, **kwargs), rtol=1e-12):
        check_op(lambda x: ufunc.reduce(x, **kwargs), x)
    else:
        with pytest.raises(mutagrad.NotDifferentiableError, match="not the fold"):
            check_op(lambda x: ufunc.reduce(x, **kwargs), x)


@pytest.mark.parametrize(("ufunc", "x"), BINARY, ids=IDS)
def test_reduce(ufunc, x):
    check_reduce(ufunc, x)
    check_reduce(ufunc, x, axis=-1)
    check_reduce(ufunc, x[0], initial=0.75)
    check_reduce(ufunc, x, axis=0, initial=0.75, where=MASK)
    check_reduce(ufunc, x.T, axis=1)
    if ufunc in (np.power, np.arctan2):
        return  # numpy does not fold them: refused above along a contiguous axis
    check_op(ufunc.reduce, x)  # axis 0 by default
    check_op(lambda x: ufunc.reduce(x, axis=-1, keepdims=True), x)
    check_op(lambda x: ufunc.reduce(x, 1, None, None, False), x)  # by position
    if ufunc in REORDERABLE:
        check_op(lambda x: ufunc.reduce(x, axis=None), x)
        check_op(lambda x: ufunc.reduce(x, axis=(1, 0), keepdims=True), x)
        check_op(lambda x: ufunc.reduce(x, axis=1, where=MASK, initial=-2.0), x)


@pytest.mark.parametrize(("ufunc", "x"), BINARY, ids=IDS)
def test_a_traced_initial_value_gets_its_gradient(ufunc, x):
    def f(x):
        return ufunc.reduce(x[1:3, 1:], axis=0, initial=x[0, 0] * 0.5 + 0.5)

    check_op(f, x)


@pytest.mark.parametrize(("ufunc", "x"), BINARY, ids=IDS)
def test_accumulate(ufunc, x):
    check_op(ufunc.accumulate, x)
    check_op(lambda x: ufunc.accumulate(x, axis=-1), x)
    check_op(lambda x: ufunc.accumulate(x[1], 0, np.float64), x)


@pytest.mark.parametrize(("ufunc", "x"), BINARY, ids=IDS)
def test_reduceat(ufunc, x):
    check_op(lambda x: ufunc.reduceat(x, [0, 2, 1, 3], axis=1), x)
    check_op(lambda x: ufunc.reduceat(x[:, 0], [0, 2]), x)
    check_op(lambda x: ufunc.reduceat(x.T, [0, 1], axis=1), x)


@pytest.mark.parametrize(("ufunc", "x"), BINARY, ids=IDS)
def test_outer(ufunc, x):
    check_op(lambda x: ufunc.outer(x[0], x[1:, :2]), x)
    check_op(lambda x: ufunc.outer(x[0, 0], x[1]), x)
    check_op(lambda x: ufunc.outer(1.5, x[:, 1]), x)


def test_the_fold_agrees_with_the_closed_forms():
    # The fold (the sequential chain rule) is what every other ufunc gets: on the ufuncs
    # with a closed form, both give the same gradient.
    for ufunc in (np.add, np.multiply, np.maximum, np.logaddexp, np.hypot):
        rule = ufunc_methods.elementwise_binary_rule(ufunc)
        fold = ufunc_methods._reduce_fold_rule(ufunc, rule)
        closed = UFUNC_RULES[(ufunc, "reduce")].plain
        assert closed is not fold
        g = RNG.standard_normal(4)
        ans = ufunc.reduce(MIXED, axis=0)
        for kwargs in ({"axis": 0}, {"axis": 0, "where": MASK, "initial": 0.5}):
            ans = ufunc.reduce(MIXED, **kwargs)
            got = fold.vjps[0](g, ans, MIXED, **kwargs)
            want = closed.vjps[0](g, ans, MIXED, **kwargs)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_out_and_dtype_keywords():
    def f(x):
        y = np.zeros((1, 4), like=x)
        np.logaddexp.reduce(x, axis=0, keepdims=True, out=y)
        z = np.zeros_like(x)
        np.maximum.accumulate(x, axis=1, out=z)
        w = np.zeros(2, like=x)
        np.hypot.reduceat(x[0], [0, 2], out=w)
        v = np.zeros((3, 3), like=x)
        np.subtract.outer(x[:, 0], x[0, :3], out=v)
        return np.sum(y * 2.0) + np.sum(z * z) + np.sum(w) + np.sum(v * v)

    check_op(f, MIXED)


def test_values_keep_numpy_s_dtype_and_shape():
    x32 = MIXED.astype(np.float32)
    for call in (
        lambda x: np.logaddexp.reduce(x, axis=1),
        lambda x: np.subtract.accumulate(x, axis=0),
        lambda x: np.maximum.reduceat(x, [0, 3], axis=1),
        lambda x: np.divide.outer(x[0], x[1]),
        lambda x: np.logaddexp.reduce(x, axis=1, dtype=np.float64),
    ):
        result = mutagrad.withgradient(lambda x, c=call: (np.sum(c(x)), c(x)), x32).val[1]
        np.testing.assert_array_equal(result, call(x32), strict=True)


@pytest.mark.parametrize(
    "method",
    [
        lambda y: np.logaddexp.reduce(y, axis=1),
        lambda y: np.minimum.accumulate(y, axis=0),
        lambda y: np.subtract.reduceat(y, [0, 2], axis=1),
        lambda y: np.divide.outer(y[0], y[1]),
    ],
    ids=["reduce", "accumulate", "reduceat", "outer"],
)
def test_a_value_saved_by_a_method_is_poisoned_or_copied_when_overwritten(method):
    def f(x):
        y = x * 1.0
        total = method(y)
        y[...] = 7.0  # overwrites what the method saved
        return np.sum(total * total)

    with pytest.raises(mutagrad.PoisonedCaptureError, match=r"y\[\.\.\.\] = 7\.0"):
        mutagrad.gradient(f, X)
    check_gradient(f, X, mode="snapshot")


def test_methods_numpy_does_not_have_raise_numpy_s_error():
    with pytest.raises(ValueError, match="only supported for binary functions"):
        mutagrad.gradient(lambda x: np.sum(np.sin.reduce(x)), X)
    with pytest.raises(RuntimeError, match="Reduction not defined"):
        mutagrad.gradient(lambda x: np.sum(np.matmul.reduce(x)), X)


def test_second_order_through_the_fold():
    check_gradient(lambda x: np.sum(np.subtract.accumulate(x, axis=1) ** 3), X, order=2)
    check_gradient(lambda x: np.sum(np.power.reduce(x, axis=0) ** 2), X, order=2)
    check_gradient(lambda x: np.sum(np.arctan2.reduceat(x, [0, 2], axis=1) ** 2), X, order=2)


def test_hypot_at_zero_takes_the_subgradient_norm_takes():
    # hypot(0, 0) has no derivative; its partials there are 0, as np.linalg.norm's rule
    # takes at zero, so a zero that no input moves (t * 0) passes 0, not 0 / 0.
    def f(x):
        zeros = x * 0.0
        return (np.hypot(zeros[0], zeros[1]) + np.hypot.reduce(zeros)
                + np.sum(np.hypot.accumulate(zeros)) + np.sum(np.tanh(x)))  # fmt: skip

    (g,) = mutagrad.gradient(f, X[0])
    np.testing.assert_allclose(g, 1.0 / np.cosh(X[0]) ** 2, rtol=1e-12)


def test_reduce_with_where_into_out():
    # reduce's where= selects the elements reduced; out= is written whole
    def f(x):
        y = np.full(4, 7.0, like=x)
        np.add.reduce(x, axis=0, where=MASK, out=y)
        z = np.full((3, 1), 7.0, like=x)
        np.maximum.reduce(x, axis=1, where=MASK, initial=-1.0, keepdims=True, out=z)
        return np.sum(y * y) + np.sum(z * np.arange(1.0, 4.0)[:, None])

    check_op(f, MIXED)


def test_outer_with_where_into_out():
    def f(x):
        y = np.full((4, 3), 7.0, like=x)
        np.subtract.outer(x[0], x[:, 1], out=y, where=MASK.T)
        return np.sum(y * y)

    check_op(f, MIXED)
