"""Rules of mutagrad/rules/ufuncs.py: every elementwise ufunc rule, np.where and np.clip.

Each rule is checked two ways: its value on WrappedArrays equals numpy's on
plain arrays, and its gradient matches central finite differences. Inputs are
drawn inside each function's domain and away from kinks, ties and jumps, with
broadcasting, 0-d arrays, Python scalars and operator forms (``x + y``,
``2.0 ** x``, ``abs(x)``).
"""

from __future__ import annotations

import operator

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


ANY = floats(-3, 3)
POSITIVE = floats(0.1, 3)
UNIT = floats(-0.9, 0.9)  # inside (-1, 1), away from arcsin's and arctanh's poles
NONZERO = st.one_of(floats(0.2, 3), floats(-3, -0.2))
BASE = floats(0.5, 3)  # power's base: positive, so the exponent's vjp log(x) is finite
# k/4 + 0.1 is never within 0.1 of a GRID_SHIFTED point k/4 + 0.2 (no ties in
# maximum/minimum/clip), and x / d never within 1/60 of an integer for d in
# DIVISORS (remainder and fmod jump there).
GRID = st.integers(-12, 11).map(lambda k: k / 4 + 0.1)
GRID_SHIFTED = st.integers(-12, 11).map(lambda k: k / 4 + 0.2)
DIVISORS = st.sampled_from([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 3.0])

SHAPES = hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)
PAIR_SHAPES = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)


def arrays(elements, shape=SHAPES):
    return hnp.arrays(np.float64, shape, elements=elements)


# -- unary ufuncs --------------------------------------------------------------

UNARY = [
    (np.negative, ANY),
    (np.positive, ANY),
    (np.conjugate, ANY),
    (np.square, ANY),
    (np.reciprocal, NONZERO),
    (np.absolute, NONZERO),
    (np.fabs, NONZERO),
    (np.exp, ANY),
    (np.exp2, ANY),
    (np.expm1, ANY),
    (np.log, POSITIVE),
    (np.log2, POSITIVE),
    (np.log10, POSITIVE),
    (np.log1p, floats(-0.9, 3)),
    (np.sqrt, POSITIVE),
    (np.cbrt, NONZERO),
    (np.sin, ANY),
    (np.cos, ANY),
    (np.tan, floats(-1.2, 1.2)),
    (np.arcsin, UNIT),
    (np.arccos, UNIT),
    (np.arctan, ANY),
    (np.sinh, ANY),
    (np.cosh, ANY),
    (np.tanh, ANY),
    (np.arcsinh, ANY),
    (np.arccosh, floats(1.1, 3)),
    (np.arctanh, UNIT),
    (np.deg2rad, ANY),
    (np.rad2deg, ANY),
    (np.radians, ANY),
    (np.degrees, ANY),
]


@pytest.mark.parametrize(("ufunc", "elements"), UNARY, ids=[u.__name__ for u, _ in UNARY])
@given(data=st.data())
def test_unary_ufunc(ufunc, elements, data):
    check_op(ufunc, data.draw(arrays(elements)))


OPERATORS = [(operator.neg, ANY), (operator.pos, ANY), (abs, NONZERO)]


@pytest.mark.parametrize(("op", "elements"), OPERATORS, ids=["-x", "+x", "abs(x)"])
@given(data=st.data())
def test_unary_operator(op, elements, data):
    check_op(op, data.draw(arrays(elements)))


@given(x=arrays(ANY, hnp.array_shapes(min_dims=1, max_dims=1, max_side=4)))
def test_ufunc_on_a_traced_scalar(x):
    """x[0] is a WrappedScalar; ufuncs and operators on it keep its gradient."""
    check_op(lambda x: np.sin(x[0]) * x[-1] + np.exp(x[0]) / 2.0 - x[-1] ** 2, x)


# -- binary ufuncs -------------------------------------------------------------

BINARY = [
    (np.add, ANY, ANY, operator.add),
    (np.subtract, ANY, ANY, operator.sub),
    (np.multiply, ANY, ANY, operator.mul),
    (np.true_divide, ANY, NONZERO, operator.truediv),
    (np.power, BASE, ANY, operator.pow),
    (np.float_power, BASE, ANY, None),
    (np.remainder, GRID, DIVISORS, operator.mod),
    (np.fmod, GRID, DIVISORS, None),
    (np.logaddexp, ANY, ANY, None),
    (np.logaddexp2, ANY, ANY, None),
    (np.arctan2, NONZERO, ANY, None),  # y != 0: away from the branch cut and the origin
    (np.hypot, NONZERO, ANY, None),
    (np.copysign, NONZERO, NONZERO, None),  # away from |x|'s kink and y's change of sign
    (np.nextafter, ANY, ANY, None),
    (np.maximum, GRID, GRID_SHIFTED, None),
    (np.fmax, GRID, GRID_SHIFTED, None),
    (np.minimum, GRID, GRID_SHIFTED, None),
    (np.fmin, GRID, GRID_SHIFTED, None),
]
BINARY_IDS = [u.__name__ for u, *_ in BINARY]


def _binary_op(ufunc, pyop, use_operator):
    return pyop if use_operator and pyop is not None else ufunc


@pytest.mark.parametrize(("ufunc", "x_elements", "y_elements", "pyop"), BINARY, ids=BINARY_IDS)
@given(data=st.data())
def test_binary_ufunc_broadcasting(ufunc, x_elements, y_elements, pyop, data):
    x_shape, y_shape = data.draw(PAIR_SHAPES).input_shapes
    x = data.draw(arrays(x_elements, x_shape), label="x")
    y = data.draw(arrays(y_elements, y_shape), label="y")
    op = _binary_op(ufunc, pyop, data.draw(st.booleans(), label="operator"))
    traced = data.draw(st.sampled_from(["both", "x", "y"]), label="traced")
    if traced == "both":
        check_op(op, x, y)
    elif traced == "x":  # y is a constant captured by the function: only x's vjp runs
        check_op(lambda x: op(x, y), x)
    else:
        check_op(lambda y: op(x, y), y)


@pytest.mark.parametrize(("ufunc", "x_elements", "y_elements", "pyop"), BINARY, ids=BINARY_IDS)
@given(data=st.data())
def test_binary_ufunc_column_with_row(ufunc, x_elements, y_elements, pyop, data):
    """(3, 1) with (4,) broadcasts both ways: both cotangents must be summed back."""
    x = data.draw(arrays(x_elements, (3, 1)), label="x")
    y = data.draw(arrays(y_elements, (4,)), label="y")
    check_op(ufunc, x, y)


@pytest.mark.parametrize(("ufunc", "x_elements", "y_elements", "pyop"), BINARY, ids=BINARY_IDS)
@given(data=st.data())
def test_binary_ufunc_with_python_scalar(ufunc, x_elements, y_elements, pyop, data):
    op = _binary_op(ufunc, pyop, data.draw(st.booleans(), label="operator"))
    if data.draw(st.booleans(), label="scalar first"):
        s = data.draw(x_elements, label="s")
        y = data.draw(arrays(y_elements), label="y")
        grads = check_op(lambda s, y: op(s, y), s, y)  # an operator here is reflected: y.__rop__
        assert isinstance(grads[0], float)
    else:
        x = data.draw(arrays(x_elements), label="x")
        s = data.draw(y_elements, label="s")
        grads = check_op(op, x, s)
        assert isinstance(grads[1], float)


SAME_ARGUMENT = [
    (np.subtract, ANY),
    (np.multiply, ANY),
    (np.true_divide, NONZERO),
    (np.power, BASE),
    (np.hypot, NONZERO),
    (np.arctan2, NONZERO),
    (np.maximum, GRID),  # a tie everywhere: each side gets half
    (np.minimum, GRID),
]


@pytest.mark.parametrize(
    ("ufunc", "elements"), SAME_ARGUMENT, ids=[u.__name__ for u, _ in SAME_ARGUMENT]
)
@given(data=st.data())
def test_binary_ufunc_of_one_array_twice(ufunc, elements, data):
    """Both vjps add into the same input."""
    check_op(lambda x: ufunc(x, x), data.draw(arrays(elements)))


def test_maximum_of_equal_values_splits_the_gradient():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])
    gx, gy = mutagrad.gradient(lambda x, y: np.sum(np.maximum(x, y)), x, y)
    np.testing.assert_array_equal(gx, [0.5, 1.0, 0.5])
    np.testing.assert_array_equal(gy, [0.5, 0.0, 0.5])


@given(x=arrays(ANY))
def test_power_with_constant_exponents(x):
    """x ** 0, x ** 1 and integer powers of negative bases: the exponent is not traced."""
    check_op(lambda x: x**3 + x**2.0 + np.power(x, 1) + x**0 + np.power(x, np.array(0.0)), x)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_square_vjp_doubles_as_numpy_does(dtype):
    """x ** 2's vjp doubles g * x by a float64 0-d array where numpy would convert the Python 2
    to one: the same bits, subnormal, infinite and nan products included (for an array base
    and a float64 scalar one), and the same overflow, reported by the same ufunc."""
    from mutagrad.rules.ufuncs import _power_base_vjp

    values = np.array([1.5, -0.0, 5e-324, 3e-310, 1e308, -np.inf, np.nan])
    g = np.resize(values, (2, 7))
    with np.errstate(over="ignore"):  # (1e308 is infinite in float16 and float32)
        bases = np.resize(values[::-1], (2, 7)).astype(dtype)
    for x in (bases, np.float64(0.7)):
        with np.errstate(all="ignore"):
            expected = g * x
            expected *= 2
            got = _power_base_vjp(g, None, x, 2)
        assert type(got) is np.ndarray and got.dtype == expected.dtype
        assert got.tobytes() == expected.tobytes()
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="in multiply"):
        _power_base_vjp(np.full(3, 1e308), None, np.ones(3, dtype), 2)


@given(x=arrays(ANY, hnp.array_shapes(min_dims=1, max_dims=1, max_side=4)))
def test_powers_of_elements_read_in_a_loop(x):
    """x[i] ** k in a loop: a float64 scalar base (the vjp's constant-exponent branch, as for
    an array base), zero bases included, against the derivative worked out by hand."""

    def loop(x):
        s = 0.0
        for i in range(len(x)):
            s = s + x[i] ** 2 + x[i] ** 3 + x[i] ** 1 + x[i] ** 0 + x[i] ** np.float64(2.0)
        return s

    np.testing.assert_allclose(mutagrad.gradient(loop, x)[0], 4 * x + 3 * x**2 + 1, rtol=1e-14)
    positive = np.abs(x) + 0.5
    np.testing.assert_allclose(
        mutagrad.gradient(lambda x: sum(x[i] ** 1.5 for i in range(len(x))), positive)[0],
        1.5 * positive**0.5,
        rtol=1e-14,
    )


@given(x=arrays(ANY), k=hnp.arrays(np.int64, 3, elements=st.integers(-3, 3)))
def test_traced_integer_array_times_float_array(x, k):
    """An integer input is differentiable once it meets floats (as in finite differences)."""
    check_op(lambda k, x: np.multiply(k[:, None], np.ravel(x)) + k[:, None] * 0.5, k, x)


@given(data=st.data())
def test_ufunc_dtype_and_casting_keywords_do_not_change_the_rule(data):
    x_shape, y_shape = data.draw(PAIR_SHAPES).input_shapes
    x, y = data.draw(arrays(ANY, x_shape)), data.draw(arrays(NONZERO, y_shape))
    check_op(
        lambda x, y: (
            np.add(x, y, dtype=np.float64)
            + np.multiply(x, y, casting="same_kind")
            + np.true_divide(x, y, dtype="float64", casting="safe")
        ),
        x,
        y,
    )


# -- np.where ------------------------------------------------------------------

TRIPLE_SHAPES = hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=3)


@given(data=st.data())
def test_where_with_broadcasting(data):
    c_shape, x_shape, y_shape = data.draw(TRIPLE_SHAPES).input_shapes
    condition = data.draw(hnp.arrays(np.bool_, c_shape), label="condition")
    x = data.draw(arrays(ANY, x_shape), label="x")
    y = data.draw(arrays(ANY, y_shape), label="y")
    check_op(lambda x, y: np.where(condition, x, y), x, y)
    check_op(lambda x: np.where(condition, x, 2.5), x)
    check_op(lambda y: np.where(condition, -1.0, y), y)


@given(x=arrays(GRID, hnp.array_shapes(min_dims=1, max_dims=3, max_side=3)))
def test_where_with_a_traced_condition(x):
    """x > 0 is a traced boolean: a constant, usable as np.where's condition."""
    check_op(lambda x: np.where(x > 0, x**2, -x), x)
    check_op(lambda x: np.where(x[..., :1] > 0.5, x, 3.0 * x), x)


@given(x=arrays(GRID, hnp.array_shapes(min_dims=1, max_dims=3, max_side=3)))
def test_where_with_only_a_condition_is_nonzero(x):
    def f(x):
        found = np.where(x > 0)
        assert isinstance(found, tuple)
        assert not any(mutagrad.is_traced(i) for i in found)
        return np.sum(x), *found

    got = mutagrad.withgradient(f, x).val[1:]
    expected = np.where(x > 0)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e, strict=True)


@given(
    x=arrays(ANY, (3, 1)),
    y=arrays(ANY, (4,)),
    condition=hnp.arrays(np.bool_, (3, 4)),
)
def test_where_column_with_row(x, y, condition):
    check_op(lambda x, y: np.where(condition, x, y), x, y)


# -- np.sinc and np.nan_to_num ---------------------------------------------------


@given(x=arrays(st.one_of(st.just(0.0), st.floats(-1e-3, 1e-3), ANY)))
def test_sinc(x):
    """numpy's value (exactly 1 at 0), and sinc's derivatives at and near 0 too."""
    check_op(np.sinc, x)
    check_gradient(lambda x: np.sum(np.sinc(x) ** 2), x, order=2)


@given(
    x=arrays(st.one_of(ANY, st.sampled_from([np.nan, np.inf, -np.inf]))),
    options=st.fixed_dictionaries({"posinf": ANY, "neginf": ANY}, optional={"nan": ANY}),
)
def test_nan_to_num(x, options):  # fmt: skip
    """Finite elements pass through (slope 1); replaced ones are constants.

    (posinf and neginf are always given: the default, the largest float, overflows the
    finite differences.)
    """
    finite = np.isfinite(x)

    def f(values):
        full = np.where(finite, 0.0, x)  # the non-finite elements, held fixed
        full = full + np.where(finite, values, 0.0)
        return np.nan_to_num(full, **options)

    check_op(f, np.where(finite, x, 0.0))
    (g,) = mutagrad.gradient(lambda x: np.sum(np.nan_to_num(x, **options)), x)
    np.testing.assert_array_equal(g, finite * 1.0)

    def in_place(values):
        y = f(values) * 1.0
        result = np.nan_to_num(y, copy=False, **options)
        assert result is y
        return y

    if x.ndim:  # (numpy cannot replace in place in a 0-d result, a scalar)
        check_op(in_place, np.where(finite, x, 0.0))


# -- np.select -----------------------------------------------------------------


@given(data=st.data())
def test_select(data):
    """The first condition that holds picks its choice; elsewhere the default."""
    # numpy's select takes its result's shape from the first condition and choice: the
    # conditions (from x) have the full shape, the choices broadcast to it.
    shapes = data.draw(PAIR_SHAPES)
    x = data.draw(arrays(GRID, shapes.result_shape), label="x")
    y = data.draw(arrays(ANY, shapes.input_shapes[1]), label="y")
    default = data.draw(st.one_of(ANY, arrays(ANY, shapes.input_shapes[0])), label="default")
    check_op(lambda x, y: np.select([x > 0.5, x < -0.5], [x * y, 2.0], default), x, y)
    check_op(lambda x, d: np.select([x > 0], [x], d), x, default)


def test_select_errors_are_numpys():
    x = mutagrad.asarray(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="same length"):
        np.select([x > 1], [x, x])
    with pytest.raises(ValueError, match="empty condition list"):
        np.select([], [])
    with pytest.raises(TypeError, match="condlist"):
        np.select([x], [x])


# -- np.clip -------------------------------------------------------------------

HALF_GRID = st.integers(-6, 6).map(lambda k: k / 2)  # bounds: never within 0.1 of GRID


@given(data=st.data())
def test_clip_with_broadcast_bounds(data):
    x_shape, lo_shape, hi_shape = data.draw(TRIPLE_SHAPES).input_shapes
    x = data.draw(arrays(GRID, x_shape), label="x")
    lo = data.draw(arrays(HALF_GRID, lo_shape), label="lo")
    width = data.draw(arrays(st.sampled_from([0.5, 1.0, 2.0]), hi_shape), label="width")
    hi = np.max(lo) + width  # every hi above every lo, as np.clip expects
    check_op(np.clip, x, lo, hi)
    check_op(lambda x: np.clip(x, lo, hi), x)
    check_op(lambda lo, hi: np.clip(x, lo, hi), lo, hi)


@given(
    x=arrays(GRID, hnp.array_shapes(min_dims=1, max_dims=2, max_side=3)),
    lo=HALF_GRID,
    width=st.sampled_from([0.5, 1.0, 3.0]),
)
def test_clip_with_scalar_or_missing_bounds(x, lo, width):
    hi = lo + width
    check_op(np.clip, x, lo, hi)  # Python float bounds are differentiable too
    check_op(lambda x: np.clip(x, None, hi), x)
    check_op(lambda x: np.clip(x, lo, None), x)
    check_op(lambda x, lo: np.clip(x, min=lo), x, lo)
    check_op(lambda x, hi: np.clip(x, max=hi), x, hi)
    check_op(lambda x: x.clip(lo, hi), x)
    check_op(lambda x: x.clip(max=hi), x)


@given(x=arrays(GRID, hnp.array_shapes(min_dims=1, max_dims=2, max_side=3)))
def test_clip_into_out(x):
    def clip_into(x):
        out = np.empty_like(x)
        result = np.clip(x, -1.0, 1.0, out=out)
        assert result is out
        return out

    check_op(clip_into, x)


@given(x=arrays(GRID, hnp.array_shapes(min_dims=1, max_dims=2, max_side=3)))
def test_clip_with_lower_bound_above_upper_bound(x):
    """numpy documents that every element is then a_max: only a_max has a gradient."""
    check_op(np.clip, x, 1.5, -0.5)
    check_op(lambda x, lo, hi: np.clip(x, lo, hi), x, np.full(x.shape, 1.5), -0.5)


# -- ufuncs with several outputs -----------------------------------------------


@given(x=arrays(GRID))
def test_modf(x):
    """The fractional part has slope 1; the integral part carries no derivative."""
    check_op(lambda x: np.modf(x)[0], x)
    check_op(lambda x: np.modf(x)[1], x)
    check_op(lambda x: np.modf(x)[0] * np.modf(x)[1], x)


@given(data=st.data())
def test_divmod(data):
    """The quotient carries no derivative; the remainder has np.remainder's rule."""
    x_shape, y_shape = data.draw(PAIR_SHAPES).input_shapes
    x, y = data.draw(arrays(GRID, x_shape)), data.draw(arrays(DIVISORS, y_shape))
    check_op(lambda x, y: np.divmod(x, y)[1], x, y)
    check_op(lambda x, y: np.divmod(x, y)[0], x, y)
    check_op(lambda x, y: divmod(x, y)[0] * divmod(x, y)[1], x, y)


@given(x=arrays(GRID))  # never within 0.02 of a power of two, where the mantissa jumps
def test_frexp(x):
    """The mantissa is x / 2**e: slope 2**-e; the integer exponent carries no derivative."""
    check_op(lambda x: np.frexp(x)[0], x)
    check_op(lambda x: np.frexp(x)[1], x)
    check_op(lambda x: np.frexp(x)[0] * np.frexp(x)[1], x)


MULTIPLE_OUTPUTS = {np.modf, np.divmod, np.frexp}


@given(
    x=arrays(ANY, hnp.array_shapes(min_dims=1, max_dims=2, max_side=3)),
    exponent=hnp.arrays(np.int64, 3, elements=st.integers(-3, 3)),
)
def test_ldexp(x, exponent):
    """x * 2**e: slope 2**e in x; the integer exponent carries no derivative."""
    check_op(lambda x: np.ldexp(x, exponent), np.broadcast_to(x[..., :1], (*x.shape[:-1], 3)))
    check_op(np.ldexp, x, 2)
    check_gradient(lambda x: np.sum(np.ldexp(x, exponent[: x.shape[-1]]) ** 2), x, order=2)


# -- bugs found by second-order checks ---------------------------------------------


@given(data=st.data())
def test_power_to_second_order(data):
    """power's vjp used its traced exponent as np.where's condition (which refused it), and
    replaced x**(y - 1) by x**1 at y = 0, whose derivative in y is wrong there."""
    x_shape, y_shape = data.draw(PAIR_SHAPES).input_shapes
    x = data.draw(arrays(BASE, x_shape), label="x")
    y = data.draw(arrays(st.one_of(st.just(0.0), ANY), y_shape), label="y")
    check_gradient(lambda x, y: np.sum(np.power(x, y)), x, y, order=2)


@given(x=arrays(GRID, hnp.array_shapes(min_dims=1, max_dims=2, max_side=3)))
def test_where_with_a_traced_float_condition(x):
    """A float condition is true where nonzero; no gradient flows into it."""
    check_op(lambda x: np.where(x, x**2, 1.0), x)
    check_gradient(lambda x: np.sum(np.where(x, x**3, 1.0)), x, order=2)


@given(x=arrays(GRID))
def test_frexp_to_second_order(x):
    """frexp's vjp calls np.ldexp, which had no rule to differentiate it again."""
    check_gradient(lambda x: np.sum(np.frexp(x)[0] ** 2), x, order=2)


# -- coverage ------------------------------------------------------------------


def test_heaviside_is_constant_in_x_and_passes_h_through_at_zero():
    x = np.array([-1.0, 0.0, 2.0, 0.0])
    h = np.array([0.5, 0.7, 0.1, 0.3])
    check_op(lambda h: np.heaviside(x, h), h, order=2)
    (g,) = mutagrad.gradient(lambda h: np.sum(np.heaviside(x, h) * np.arange(1.0, 5.0)), h)
    np.testing.assert_array_equal(g, [0.0, 2.0, 0.0, 4.0])
    (g,) = mutagrad.gradient(lambda y: np.sum(np.heaviside(y, 0.5) + y), np.array([-1.0, 2.0]))
    np.testing.assert_array_equal(g, [1.0, 1.0])


def test_every_rule_of_the_module_is_tested():
    tested = {u for u, _ in UNARY} | {u for u, *_ in BINARY} | {np.where, np.select, np.clip}
    tested |= {np.heaviside}
    tested |= {np.sinc, np.nan_to_num}
    tested |= {np.sign, np.angle}  # (on complex values in tests/rules/test_complex.py)
    tested |= MULTIPLE_OUTPUTS | {np.ldexp}
    registered = rules_defined_in("mutagrad.rules.ufuncs")
    assert registered, "found no rules: did the registry change?"
    missing = {getattr(r, "__name__", repr(r)) for r in registered - tested}
    assert not missing, f"rules without a test: {sorted(missing)}"
