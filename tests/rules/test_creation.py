"""Rules of mutagrad/rules/creation.py: empty_like, zeros_like, ones_like, full_like, copyto.

The ``*_like`` functions return constant WrappedArrays (no derivative) that can
be filled in place with traced values; ``full_like`` keeps the gradient of a
traced fill value (a scalar or a broadcast array) unless the result's dtype is
integral; ``copyto`` writes into WrappedArrays (with ``where=`` and
broadcasting) and refuses to store traced values into raw ndarrays. Values
on WrappedArrays equal numpy's and gradients match finite differences.
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


ELEMENTS = st.floats(-3, 3, allow_nan=False, allow_infinity=False, allow_subnormal=False)
SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, max_side=3)


def arrays(shape=SHAPES):
    return hnp.arrays(np.float64, shape, elements=ELEMENTS)


def inside_gradient(f, x):
    """Run ``f`` on a traced ``x`` and return what it returned next to its scalar."""
    return mutagrad.withgradient(lambda x: (np.sum(x), f(x)), x).val[1]


# -- empty_like, zeros_like, ones_like -----------------------------------------

LIKE = [np.empty_like, np.zeros_like, np.ones_like]


@pytest.mark.parametrize("like", LIKE, ids=[f.__name__ for f in LIKE])
@given(x=arrays(), dtype=st.sampled_from([None, np.float32, np.int64]))
def test_like_functions_give_constants(like, x, dtype):
    def f(x):
        made = like(x, dtype=dtype)
        assert isinstance(made, mutagrad.WrappedArray)
        assert not mutagrad.is_traced(made)
        reshaped = like(x, shape=(2, 1))
        assert not mutagrad.is_traced(reshaped)
        return made, reshaped

    made, reshaped = inside_gradient(f, x)
    want, want_reshaped = like(x, dtype=dtype), like(x, shape=(2, 1))
    assert (made.shape, made.dtype) == (want.shape, want.dtype)
    assert (reshaped.shape, reshaped.dtype) == (want_reshaped.shape, want_reshaped.dtype)
    if like is not np.empty_like:
        np.testing.assert_array_equal(made, want, strict=True)
        np.testing.assert_array_equal(reshaped, want_reshaped, strict=True)


@pytest.mark.parametrize("like", LIKE, ids=[f.__name__ for f in LIKE])
@given(x=arrays())
def test_a_like_buffer_filled_with_traced_values(like, x):
    def f(x):
        buffer = like(x)
        buffer[...] = x * 2.0
        buffer[:1] = np.sin(x[:1])
        return buffer

    check_op(f, x)


@given(x=arrays())
def test_zeros_like_as_an_accumulator(x):
    def f(x):
        total = np.zeros_like(x)
        for k in range(3):
            total += x**k
        return total * np.ones_like(x)

    check_op(f, x)


# -- full_like -----------------------------------------------------------------


@given(x=arrays(), fill=ELEMENTS)
def test_full_like_with_a_constant_fill_value(x, fill):
    def f(x):
        made = np.full_like(x, fill)
        assert not mutagrad.is_traced(made)
        return made * x

    check_op(f, x)


@given(x=arrays())
def test_full_like_with_a_traced_fill_value(x):
    flat = np.ravel
    check_op(lambda x: np.full_like(x, flat(x)[0]), x)  # a WrappedScalar
    check_op(lambda x: np.full_like(x, np.sum(x)) * x, x)
    check_op(lambda x: np.full_like(x, x[0]), x)  # an array, broadcast
    check_op(lambda x: np.full_like(x, flat(x)[-1], shape=(2, 3)), x)
    check_op(lambda x: np.full_like(x, flat(x)[0], np.float64), x)  # dtype by position


@given(x=arrays().filter(lambda x: np.all(np.abs(x - np.round(x)) > 0.01)))
def test_full_like_with_an_integer_dtype_has_no_derivative(x):
    """The fill value is cast to int: locally constant (values stay away from integers)."""

    def f(x):
        made = np.full_like(x, np.ravel(x)[0], dtype=np.int64)
        assert not mutagrad.is_traced(made)
        return made * x

    check_op(f, x)


@given(x=arrays())
def test_full_like_with_float32(x):
    check_op(lambda x: np.full_like(x, np.ravel(x)[0], dtype=np.float32), x, eps=1e-2, atol=1e-3)


def test_full_like_of_a_raw_array_with_a_traced_fill_value_is_refused():
    """numpy dispatches full_like on its prototype only, then copies the fill value into a
    raw array: mutagrad must refuse rather than drop the gradient."""
    prototype = np.zeros((2, 3))
    with pytest.raises(mutagrad.TracerConversionError):
        mutagrad.gradient(lambda s: np.sum(np.full_like(prototype, s)), 1.5)
    (g,) = mutagrad.gradient(lambda s: np.sum(np.full_like(mutagrad.asarray(prototype), s)), 1.5)
    assert g == 6.0


# -- full (like=) ----------------------------------------------------------------


@given(x=arrays())
def test_full_like_keyword_with_a_traced_fill_value(x):
    """numpy dispatches np.full on ``like=``: the fill value's gradient flows (second order)."""
    flat = np.ravel

    def check(f):
        check_op(f, x, order=2)

    check(lambda x: np.full((2, 3), flat(x)[0], like=x))  # a WrappedScalar
    check(lambda x: np.full(x.shape, np.sum(x), like=x) * x)
    check(lambda x: np.full((2, *x.shape), x, like=x))  # an array, broadcast
    check(lambda x: np.full((3,), flat(x)[-1] ** 2, np.float64, "F", like=x))
    check(lambda x: np.full((2,), [flat(x)[0], 1.0], like=x))  # a list holding a traced value


def test_full_like_keyword_values_and_dtypes_are_numpys():
    raw = np.array([1.5, -2.0])
    x = mutagrad.asarray(raw)
    for fill, raw_fill, dtype in [
        (3, 3, None),
        (2.5, 2.5, None),
        (x[0], raw[0], None),
        (x[0], raw[0], np.float32),
        (x[1], raw[1], int),
    ]:
        made = np.full((2, 2), fill, dtype, like=x)
        assert isinstance(made, mutagrad.WrappedArray)
        want = np.full((2, 2), raw_fill, dtype)
        np.testing.assert_array_equal(np.asarray(made), want, strict=True)
    made = np.full((2, 3), 1.0, order="F", like=x)
    assert np.asarray(made).flags.f_contiguous


@given(x=arrays().filter(lambda x: np.all(np.abs(x - np.round(x)) > 0.01)))
def test_full_like_keyword_with_an_integer_dtype_has_no_derivative(x):
    def f(x):
        made = np.full(x.shape, np.ravel(x)[0], dtype=np.int64, like=x)
        assert not mutagrad.is_traced(made)
        return made * x

    check_op(f, x)


def test_full_filled_in_place_after_like():
    def f(x):
        y = np.full((2, 3), x[0], like=x)
        y[0, 1] = x[1] ** 2
        return np.sum(y * y)

    check_gradient(f, np.array([1.5, 2.0, -0.5]), order=2)


def test_full_without_like_is_refused():
    """Without ``like=``, numpy never dispatches np.full: it converts the fill value itself."""
    with pytest.raises(mutagrad.TracerConversionError, match=r"np\.full"):
        mutagrad.gradient(lambda s: np.sum(np.full((2, 3), s)), 1.5)
    (g,) = mutagrad.gradient(lambda s: np.sum(np.full((2, 3), s, like=s)), 1.5)
    assert g == 6.0


# -- copyto --------------------------------------------------------------------


@given(data=st.data())
def test_copyto_into_a_buffer(data):
    x = data.draw(arrays(), label="x")
    mask = data.draw(hnp.arrays(np.bool_, x.shape[-1:]), label="where")

    def f(x):
        buffer = np.ones_like(x)
        assert np.copyto(buffer, x**2) is None
        np.copyto(buffer, x[:1] * 3.0, where=mask)  # broadcast source and mask
        np.copyto(buffer[..., :1], 0.5)
        return buffer

    check_op(f, x)


AWAY_FROM_ZERO = st.one_of(st.floats(0.1, 3), st.floats(-3, -0.1))


@given(x=hnp.arrays(np.float64, SHAPES, elements=AWAY_FROM_ZERO), y=arrays())
def test_copyto_into_a_traced_input(x, y):
    """The overwritten elements of x lose their gradient; y's reach the output."""

    def f(x, y):
        np.copyto(x, np.sum(y) * 0.5, where=x > 0)
        return x * 2.0

    check_op(f, x, y)


@given(x=arrays())
def test_copyto_into_a_raw_array(x):
    raw = np.zeros(x.shape)

    def f(x):
        np.copyto(raw, 2.0)  # a constant source: numpy does it
        with pytest.raises(mutagrad.TracerConversionError):
            np.copyto(raw, x)
        return np.sum(x * raw)

    grad = mutagrad.gradient(f, x)[0]
    np.testing.assert_array_equal(raw, np.full(x.shape, 2.0))
    np.testing.assert_array_equal(grad, np.full(x.shape, 2.0))


def test_copyto_checks_casting_like_numpy():
    x = np.array([1.5, 2.5])
    with pytest.raises(TypeError):
        np.copyto(np.zeros(2, dtype=np.int64), x)

    def f(x):
        ints = np.zeros_like(x, dtype=np.int64)
        with pytest.raises(TypeError):
            np.copyto(ints, x)
        with pytest.raises(mutagrad.NotDifferentiableError):  # truncation: cast explicitly
            np.copyto(ints, x, casting="unsafe")
        np.copyto(ints, x.astype(np.int64))
        assert ints.tolist() == [1, 2]
        return np.sum(x) + np.sum(ints)

    np.testing.assert_array_equal(mutagrad.gradient(f, x)[0], [1.0, 1.0])


# -- linspace and logspace -----------------------------------------------------


@given(data=st.data())
def test_linspace(data):
    """Traced end points (scalars or broadcast arrays): numpy's arithmetic, numpy's values."""
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    start = data.draw(arrays(shapes.input_shapes[0]), label="start")
    stop = data.draw(arrays(shapes.input_shapes[1]), label="stop")
    num = data.draw(st.integers(0, 5), label="num")
    endpoint = data.draw(st.booleans(), label="endpoint")
    axis = data.draw(st.integers(-len(shapes.result_shape) - 1, len(shapes.result_shape)))

    def f(start, stop):
        return np.linspace(start, stop, num, endpoint, axis=axis)

    check_op(f, start, stop)
    check_op(lambda start: f(start, stop), start)  # stop a constant
    check_gradient(lambda start, stop: np.sum(f(start, stop) ** 2), start, stop, order=2)


@given(start=ELEMENTS, stop=ELEMENTS)
def test_linspace_step_and_dtype(start, stop):
    check_op(lambda a, b: np.linspace(a, b, 4, retstep=True)[1], start, stop)

    def floored(a, b):
        result = np.linspace(a, b, 3, dtype=int)  # floored: a constant
        assert result.dtype.kind == "i" and not mutagrad.is_traced(result)
        return result

    expected = np.linspace(start, stop, 3, dtype=int)
    np.testing.assert_array_equal(mutagrad.withgradient(lambda a, b: (a + b, floored(a, b)),
                                                        start, stop).val[1], expected)  # fmt: skip


@given(data=st.data())
def test_logspace(data):
    start = data.draw(arrays(hnp.array_shapes(min_dims=0, max_dims=1, max_side=3)))
    stop = data.draw(st.floats(-1, 1), label="stop")
    base = data.draw(st.one_of(st.floats(0.5, 3), arrays(np.shape(start)).map(
        lambda b: np.abs(b) + 0.5)), label="base")  # fmt: skip
    num = data.draw(st.integers(0, 4), label="num")
    start = start / 3  # moderate powers
    check_op(lambda start: np.logspace(start, stop, num, base=base), start)
    if isinstance(base, np.ndarray) and np.ndim(start) == 0:
        check_op(lambda start, base: np.logspace(start, stop, num, base=base, axis=-1), start,
                 base)  # fmt: skip


# -- coverage ------------------------------------------------------------------


def test_every_rule_of_the_module_is_tested():
    tested = {*LIKE, np.full_like, np.full, np.copyto, np.linspace, np.logspace}
    registered = rules_defined_in("mutagrad.rules.creation")
    assert registered, "found no rules: did the registry change?"
    missing = {getattr(r, "__name__", repr(r)) for r in registered - tested}
    assert not missing, f"rules without a test: {sorted(missing)}"


def test_copyto_takes_a_list_of_numbers_as_numpy_does():
    w = mutagrad.array(np.zeros(3))
    np.copyto(w, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(w), [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="same_kind"):  # numpy's casting rule, for a list too
        np.copyto(mutagrad.array(np.zeros(3, dtype=np.int64)), [1.5, 2.0, 3.0])

    def f(x):
        y = np.zeros_like(x)
        np.copyto(y, [1.0, 2.0, 3.0])
        y[0] = x[0] * 2.0
        return np.sum(y * x)

    np.testing.assert_allclose(mutagrad.gradient(f, np.ones(3))[0], [4.0, 2.0, 3.0])
