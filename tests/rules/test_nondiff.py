"""Rules of mutagrad/rules/nondiff.py (functions whose outputs carry no derivative), and
the error for a numpy function that has no rule at all.

Every non-differentiable function is called on traced arrays inside a gradient
call: it works, returns numpy's value, returns nothing traced, and adds nothing
to the gradient (checked exactly, and against finite differences with inputs
away from every jump). A function without a rule that mutagrad cannot trace
through raises MissingRuleError naming it.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mutagrad
from mutagrad.core.registry import FUNCTION_RULES, NONDIFFERENTIABLE, UFUNC_RULES
from mutagrad.rules.first_use import home_of
from mutagrad.testing import check_gradient

# k/4 + 0.1 is at least 0.1 from every multiple of 0.25 and 0.05 from the threshold 0.3
# used below, so signs, floors, roundings and comparisons are locally constant. Distinct
# values: no ties for argmax, argsort or comparisons of x with flip(x).
GRID = st.integers(-12, 11).map(lambda k: k / 4 + 0.1)
X = hnp.arrays(
    np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=3), elements=GRID, unique=True
)
K = hnp.arrays(
    np.int64, hnp.array_shapes(min_dims=1, max_dims=1, max_side=4), elements=st.integers(0, 7)
)


def weights(shape):
    n = int(np.prod(shape, dtype=np.int64))
    return (np.linspace(0.5, 1.5, n) * (-1.0) ** np.arange(n)).reshape(shape)


def leaves(value):
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


def contribution(result):
    """A number that depends on ``result``: if it carried a derivative, it would show."""
    total = 0.0
    for leaf in leaves(result):
        if not isinstance(leaf, (np.dtype, type)):
            total = total + np.sum(leaf) * 0.75
    return total


def assert_same(got, want):
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    elif isinstance(want, (np.dtype, type)):
        assert got == want
    else:
        np.testing.assert_array_equal(got, want, strict=True)


def check_no_derivative(call, *args):
    """``call`` on traced ``args`` gives numpy's value, nothing traced and no gradient."""
    expected = call(*[np.copy(a) for a in args])
    w = weights(args[0].shape)

    def f(x, *rest):
        result = call(x, *rest)
        for leaf in leaves(result):
            assert not mutagrad.is_traced(leaf)
        return np.sum(x * w) + contribution(result), result

    value, grads = mutagrad.withgradient(f, *args)
    assert_same(value[1], expected)
    np.testing.assert_array_equal(grads[0], w)  # exactly: x * w's gradient, nothing more
    for g in grads[1:]:
        assert g is None or not np.any(g)
    return f


# -- functions of float arrays -------------------------------------------------

FLOAT_CASES = [
    # comparisons and logic
    (np.equal, lambda x: np.equal(x, np.flip(x))),
    (np.not_equal, lambda x: np.not_equal(x, 0.3)),
    (np.less, lambda x: np.less(x, np.flip(x))),
    (np.less_equal, lambda x: x <= 0.3),
    (np.greater, lambda x: np.greater(x, 0.0)),
    (np.greater_equal, lambda x: x >= np.flip(x)),
    (np.logical_and, lambda x: np.logical_and(x > 0, np.flip(x) < 1)),
    (np.logical_or, lambda x: np.logical_or(x, np.flip(x))),
    (np.logical_xor, lambda x: np.logical_xor(x > 0, x > 1)),
    (np.logical_not, lambda x: np.logical_not(x > 0.5)),
    (np.isfinite, np.isfinite),
    (np.isinf, np.isinf),
    (np.isnan, lambda x: np.isnan(x / 2.0)),
    (np.signbit, np.signbit),
    # piecewise constant
    (np.sign, np.sign),
    (np.floor, np.floor),
    (np.ceil, np.ceil),
    (np.trunc, np.trunc),
    (np.rint, np.rint),
    (np.floor_divide, lambda x: np.floor_divide(x, 0.5) + x // 2.0),
    (np.round, lambda x: np.round(x) + x.round()),
    (np.around, np.around),
    (np.fix, np.fix),
    (np.spacing, np.spacing),
    (np.angle, lambda x: (np.angle(x), np.angle(x, deg=True))),
    # indices, counts and shapes
    (np.argmax, lambda x: (np.argmax(x), np.argmax(x, axis=0), x.argmax(axis=-1))),
    (np.argmin, lambda x: (np.argmin(x), x.argmin(axis=0))),
    (np.argsort, lambda x: (np.argsort(x), x.argsort(axis=0))),
    (np.argpartition, lambda x: np.argpartition(x, 0, axis=None)),
    (
        np.nanargmax,
        lambda x: np.nanargmax(np.where(x < np.max(x, axis=-1, keepdims=True), np.nan, x), axis=-1),
    ),
    (np.nanargmin, lambda x: np.nanargmin(x, axis=0)),
    (np.lexsort, lambda x: (np.lexsort(x), np.lexsort((np.ravel(x), -np.ravel(x))))),
    (np.isin, lambda x: np.isin(x, [0.35, -0.15, 1.1])),
    (np.linalg.matrix_rank, lambda x: np.linalg.matrix_rank(x)),
    (np.argwhere, lambda x: np.argwhere(x > 0)),
    (np.nonzero, lambda x: np.nonzero(x > 0.5) + x.nonzero()),
    (np.flatnonzero, lambda x: np.flatnonzero(x < 0)),
    (
        np.searchsorted,
        lambda x: (np.searchsorted([-1.0, 0.0, 1.0], x), np.searchsorted(np.ravel(x), 0.3)),
    ),
    (np.digitize, lambda x: np.digitize(x, [-1.0, 0.0, 1.0])),
    (np.count_nonzero, lambda x: (np.count_nonzero(x > 0), np.count_nonzero(x > 0, axis=0))),
    (np.shape, np.shape),
    (np.ndim, np.ndim),
    (np.size, np.size),
    (np.result_type, lambda x: np.result_type(x, 1.0)),
    (np.can_cast, lambda x: (np.can_cast(x, np.float32), np.can_cast(x, np.float64))),
    (np.min_scalar_type, lambda x: (np.min_scalar_type(x), np.min_scalar_type(x[0]))),
    (np.may_share_memory, lambda x: np.may_share_memory(x, x[1:])),
    (np.shares_memory, lambda x: (np.shares_memory(x, x.T), np.shares_memory(x, x * 1.0))),
    (np.iscomplexobj, np.iscomplexobj),
    (np.isrealobj, np.isrealobj),
    (np.isclose, lambda x: np.isclose(x, np.flip(x))),
    (np.allclose, lambda x: (np.allclose(x, np.flip(x)), np.allclose(x, x))),
    (np.array_equal, lambda x: (np.array_equal(x, np.flip(x)), np.array_equal(x, x))),
    (np.array_equiv, lambda x: (np.array_equiv(x, x[:1]), np.array_equiv(x, x))),
    (np.any, lambda x: (np.any(x > 0), np.any(x > 1, axis=0), (x < 0).any())),
    (np.all, lambda x: (np.all(x > 0), np.all(x > -1, axis=-1), (x < 2).all())),
    (np.isreal, np.isreal),
    (np.iscomplex, np.iscomplex),
    (np.isneginf, lambda x: np.isneginf(x / 0.5)),
    (np.isposinf, np.isposinf),
    (np.diag_indices_from, lambda x: np.diag_indices_from(np.atleast_2d(x)[:1, :1])),
    (np.tril_indices_from, lambda x: np.tril_indices_from(np.atleast_2d(x), 1)),
    (np.triu_indices_from, lambda x: np.triu_indices_from(np.atleast_2d(x))),
    (np.einsum_path, lambda x: len(np.einsum_path("i...,i...->...", x, x)[0])),
    (np.array_repr, lambda x: len(np.array_repr(x))),
    (np.array_str, lambda x: len(np.array_str(x, precision=3))),
]


@pytest.mark.parametrize(
    ("function", "call"), FLOAT_CASES, ids=[f.__name__ for f, _ in FLOAT_CASES]
)
@given(x=X)
def test_nondifferentiable_function_of_a_traced_array(function, call, x):
    f = check_no_derivative(call, x)
    check_gradient(f, x)


# -- functions of integer arrays -----------------------------------------------

INT_CASES = [
    (np.bitwise_and, lambda k: np.bitwise_and(k, 6) + (k & 3)),
    (np.bitwise_or, lambda k: np.bitwise_or(k, np.flip(k)) + (k | 1)),
    (np.bitwise_xor, lambda k: np.bitwise_xor(k, 5) + (k ^ np.flip(k))),
    (np.invert, lambda k: np.invert(k) + ~k),
    (np.left_shift, lambda k: np.left_shift(k, 2) + (k << 1)),
    (np.right_shift, lambda k: np.right_shift(k, 1) + (k >> 2)),
    (np.bincount, lambda k: np.bincount(k, minlength=3)),
    (np.gcd, lambda k: np.gcd(k, 6)),
    (np.lcm, lambda k: np.lcm(k, np.flip(k))),
    (np.bitwise_count, np.bitwise_count),
    (np.packbits, lambda k: np.packbits(k > 3)),
    (np.unpackbits, lambda k: np.unpackbits(k.astype(np.uint8))),
    (np.unravel_index, lambda k: np.unravel_index(k, (2, 4))),
    (np.ravel_multi_index, lambda k: np.ravel_multi_index((k % 2, k % 3), (2, 3))),
]


@pytest.mark.parametrize(("function", "call"), INT_CASES, ids=[f.__name__ for f, _ in INT_CASES])
@given(x=X, k=K)
def test_nondifferentiable_function_of_a_traced_integer_array(function, call, x, k):
    """k is an input of the gradient call too (traced); the result is an int constant."""
    check_no_derivative(lambda x, k: call(k), x, k)


def test_isnat_of_a_traced_float_array_fails_as_in_numpy():
    """isnat needs datetimes, which are never traced: on floats numpy's own error comes out."""
    x = np.array([0.5, 1.5])
    with pytest.raises(TypeError) as numpy_error:
        np.isnat(x)

    def f(x):
        with pytest.raises(TypeError) as error:
            np.isnat(x)
        assert str(error.value) == str(numpy_error.value)
        dates = mutagrad.asarray(np.array(["2020-01-01", "NaT"], dtype="datetime64[D]"))
        assert np.isnat(dates).tolist() == [False, True]
        return np.sum(x)

    np.testing.assert_array_equal(mutagrad.gradient(f, x)[0], [1.0, 1.0])


def test_control_flow_on_a_nondifferentiable_result():
    def f(x):
        if np.any(x > 1):  # a traced comparison used as a Python bool
            return np.sum(x[np.argmax(x) :] ** 2)
        return np.sum(x)

    x = np.array([0.5, 2.0, 1.5])
    (g,) = mutagrad.gradient(f, x)
    np.testing.assert_array_equal(g, [0.0, 4.0, 3.0])


# -- functions without a rule --------------------------------------------------

SYMMETRIC = np.array([[2.0, 0.5], [0.5, 1.0]])
# Functions numpy dispatches to mutagrad and that have no rule yet, the first of which is
# tested (each will get one in time: the list keeps the test meaningful until then).
WITHOUT_RULES = [
    ("np.sort_complex", np.sort_complex),
    ("np.lib.scimath.arccos", np.lib.scimath.arccos),
    ("np.fft.hfft", np.fft.hfft),
]
NO_RULE = [
    # (name in the message, registry key, call on a traced 2x2 matrix)
    next(
        (name, f, lambda x, f=f: np.sum(np.abs(f(x))))
        for name, f in WITHOUT_RULES
        if f not in FUNCTION_RULES
    ),
]


@pytest.mark.parametrize(("name", "key", "call"), NO_RULE, ids=[n for n, _, _ in NO_RULE])
def test_a_function_without_a_rule_raises_missing_rule_error(name, key, call):
    registries = (FUNCTION_RULES, UFUNC_RULES, NONDIFFERENTIABLE)
    assert not any(key in r for r in registries), f"{name} has a rule now: pick another function"
    with pytest.raises(mutagrad.MissingRuleError, match=re.escape(name)) as error:
        mutagrad.gradient(call, SYMMETRIC)
    assert isinstance(error.value, NotImplementedError)
    # On constants (nothing traced) the function just runs.
    expected = call(SYMMETRIC.copy())
    (g,) = mutagrad.gradient(lambda x: np.sum(x) + call(mutagrad.asarray(SYMMETRIC)), SYMMETRIC)
    np.testing.assert_array_equal(g, np.ones((2, 2)))
    np.testing.assert_allclose(call(mutagrad.asarray(SYMMETRIC)), expected)


# -- coverage ------------------------------------------------------------------


def test_every_nondifferentiable_function_is_tested():
    tested = {f for f, _ in FLOAT_CASES} | {f for f, _ in INT_CASES} | {np.isnat}
    numpy_ones = {
        f
        for f in NONDIFFERENTIABLE
        if (isinstance(f, np.ufunc) or getattr(f, "__module__", "").startswith("numpy"))
        and home_of(f) is None  # SciPy's ufuncs are tested with their rules
    }
    assert numpy_ones, "found no non-differentiable functions: did the registry change?"
    missing = {getattr(f, "__name__", repr(f)) for f in numpy_ones - tested}
    assert not missing, f"non-differentiable functions without a test: {sorted(missing)}"
