"""The gradient API: gradient, withgradient, pullback, modes, conversions, threads.

The Zygote examples of the seed documents are reproduced with the same
numbers (row-major where Julia is column-major).
"""

from __future__ import annotations

import operator
import threading

import numpy as np
import pytest

import mutagrad
from mutagrad.core.engine import STATE
from mutagrad.core.modes import MODE, POISON
from mutagrad.testing import check_gradient

# -- Zygote's documented examples ---------------------------------------------


def test_gradient_of_product_of_three_numbers():
    assert mutagrad.gradient(lambda a, b, c: a * b * c, 2.0, 3.0, 5.0) == (15.0, 10.0, 6.0)


def test_gradient_of_sum_of_squares():
    (g,) = mutagrad.gradient(lambda x: np.sum(x**2), np.array([7.0, 11.0, 13.0]))
    np.testing.assert_array_equal(g, [14.0, 22.0, 26.0])


def test_integer_arguments_get_float_gradients_and_axes_get_none():
    def f(x, y, d):
        p = x.shape[d]
        return np.sum(x**p + y)

    gx, gy, gd = mutagrad.gradient(f, np.array([7, 11]), 0, 0)
    np.testing.assert_array_equal(gx, [14.0, 22.0])
    assert gx.dtype == np.float64
    assert gy == 2.0 and isinstance(gy, float)
    assert gd is None


def test_withgradient_returns_value_and_gradient():
    y, grad = mutagrad.withgradient(operator.truediv, 1, 2)
    assert y == 0.5
    assert grad == (0.5, -0.25)
    assert grad == mutagrad.gradient(operator.truediv, 1, 2)


def test_withgradient_differentiates_first_element_of_a_tuple():
    result = mutagrad.withgradient(lambda x: (np.sum(x * x), x.shape), np.array([1.0, 2.0]))
    assert result.val[0] == 5.0 and result.val[1] == (2,)
    np.testing.assert_array_equal(result.grad[0], [2.0, 4.0])


# -- what gradient returns ---------------------------------------------------


def test_unused_and_non_numeric_arguments_get_none():
    grads = mutagrad.gradient(lambda x, name, y: np.sum(x), np.ones(2), "label", np.ones(3))
    np.testing.assert_array_equal(grads[0], [1.0, 1.0])
    assert grads[1] is None
    assert grads[2] is None


def test_constant_output_gives_none():
    assert mutagrad.gradient(lambda x: 3.0, np.ones(2)) == (None,)


def test_array_output_is_refused_with_a_pointer_to_jacobian():
    with pytest.raises(mutagrad.MutagradError, match="jacobian"):
        mutagrad.gradient(lambda x: x * 2, np.ones(3))


def test_float32_gradient_keeps_its_dtype():
    (g,) = mutagrad.gradient(lambda x: np.sum(x * x), np.ones(3, dtype=np.float32))
    assert g.dtype == np.float32


def test_returned_gradient_is_a_fresh_writable_array():
    (g,) = mutagrad.gradient(lambda x: np.sum(x), np.ones(3))
    g[0] = 5.0  # a broadcast view from sum's pullback would refuse this
    assert g[0] == 5.0


def test_structured_arguments():
    grads = mutagrad.gradient(
        lambda a, t: np.sum(a * t[0]) + t[1], np.array([1.0, 2.0, 3.0]), (4.0, 5.0)
    )
    np.testing.assert_array_equal(grads[0], [4.0, 4.0, 4.0])
    assert grads[1] == (6.0, 1.0)


# -- pullback ------------------------------------------------------------------


def test_pullback_can_be_called_many_times():
    x = np.array([1.0, 2.0, 3.0])
    y, back = mutagrad.pullback(lambda x: np.sin(x) * x, x)
    np.testing.assert_allclose(y, np.sin(x) * x)
    first = back(np.ones(3))[0]
    second = back(np.ones(3))[0]
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, np.cos(x) * x + np.sin(x))
    np.testing.assert_allclose(back(2 * np.ones(3))[0], 2 * first)


def test_pullback_is_immune_to_later_changes_of_the_callers_array():
    x = np.array([1.0, 2.0, 3.0])
    _, back = mutagrad.pullback(lambda x: x * x, x)
    x[:] = 100.0
    np.testing.assert_array_equal(back(np.ones(3))[0], [2.0, 4.0, 6.0])


def test_pullback_raises_when_a_saved_wrapped_array_is_overwritten_later():
    c = mutagrad.array([1.0, 2.0, 3.0])
    _, back = mutagrad.pullback(lambda x: x * c, np.ones(3))
    c[0] = 7.0
    with pytest.raises(mutagrad.PoisonedCaptureError):
        back(np.ones(3))


# -- modes -----------------------------------------------------------------------


def _mutating(x):
    x[0] = 0.0
    return np.sum(x)


def test_mode_per_call_and_per_block():
    x = np.ones(3)
    np.testing.assert_array_equal(mutagrad.gradient(_mutating, x)[0], [0.0, 1.0, 1.0])
    with pytest.raises(mutagrad.MutationError):
        mutagrad.gradient(_mutating, x, mode="strict")
    with mutagrad.mode("strict"), pytest.raises(mutagrad.MutationError):
        mutagrad.gradient(_mutating, x)
    assert MODE.get() is POISON


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="snapshot"):
        mutagrad.gradient(_mutating, np.ones(2), mode="lenient")


def test_state_is_restored_when_f_raises():
    def boom(x):
        np.sin(x)  # something recorded before the error
        raise KeyError("inside f")

    with pytest.raises(KeyError), mutagrad.mode("strict"):
        mutagrad.gradient(boom, np.ones(2))
    assert STATE.get() is None
    assert MODE.get() is POISON
    check_gradient(lambda x: np.sum(np.sin(x)), np.ones(2))


def test_two_threads_differentiate_at_once():
    results: dict[int, np.ndarray] = {}
    barrier = threading.Barrier(2)

    def work(k: int) -> None:
        def f(x):
            barrier.wait()
            total = 0.0
            for i in range(len(x)):
                total = total + x[i] ** (k + 2)
            return total

        results[k] = mutagrad.gradient(f, np.arange(1.0, 6.0))[0]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    x = np.arange(1.0, 6.0)
    np.testing.assert_allclose(results[0], 2 * x)
    np.testing.assert_allclose(results[1], 3 * x**2)


# -- the caller's data -------------------------------------------------------------


def test_callers_array_is_untouched_when_f_mutates_its_argument():
    x = np.array([1.0, 2.0, 3.0])

    def f(x):
        x[:] = 2 * x
        return np.sum(x)

    np.testing.assert_array_equal(mutagrad.gradient(f, x)[0], [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    assert x.flags.writeable


def test_callers_array_is_read_only_during_the_call_and_restored_after_an_error():
    x = np.array([1.0, 2.0, 3.0])

    def f(y):
        x[0] = 5.0  # through a closure, behind the tape's back
        return np.sum(y)

    with pytest.raises(mutagrad.NotDifferentiableError, match=r"read-only array(.|\n)*argument 0"):
        mutagrad.gradient(f, x)  # numpy's ValueError, explained: which argument, and the fix
    assert x.flags.writeable
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def test_read_only_argument_stays_read_only_in_f():
    x = np.array([1.0, 2.0])
    x.flags.writeable = False

    def f(y):
        y[0] = 1.0
        return np.sum(y)

    with pytest.raises(ValueError, match="read-only"):
        mutagrad.gradient(f, x)
    assert not x.flags.writeable


def test_non_contiguous_argument():
    x = np.arange(12.0).reshape(3, 4)[:, ::2]
    check_gradient(lambda x: np.sum(x.T @ x), x)


# -- conversions ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("convert", "construct", "fix"),
    [
        (lambda x: np.asarray(x), "np.asarray(x) of a traced array", "mnp.asarray(x)"),
        (lambda x: float(x[0]), "float(x[0])", "float(mutagrad.ignore_derivatives(x[0]))"),
        (lambda x: x.tolist(), "x.tolist()", "mutagrad.ignore_derivatives(x).tolist()"),
        (lambda x: np.zeros(3).__setitem__(0, x[0]), "into a raw array", "np.zeros_like(x)"),
        (lambda x: np.add(x, 1.0, out=np.zeros(3)), "np.add into a raw array", "mnp.zeros"),
    ],
    ids=["asarray", "float", "tolist", "store-into-raw", "out-raw"],
)
def test_converting_a_traced_value_raises_naming_the_construct_and_its_fix(
    convert, construct, fix
):
    def f(x):
        convert(x)
        return np.sum(x)

    with pytest.raises(mutagrad.TracerConversionError) as info:
        mutagrad.gradient(f, np.ones(3))
    message = str(info.value)
    assert "test_api.py" in message  # the user's line
    assert construct in message and fix in message


def test_control_flow_shapes_and_integer_indexing_are_allowed():
    def f(x, i):
        total = x[i] * 2.0
        if bool(x[0] > 0) and x.shape == (3,) and len(x) == 3:
            total = total + x[int(i)]
        for row in x:
            total = total + row
        return total

    check_gradient(f, np.array([1.0, 2.0, 3.0]), 1)


def test_ignore_derivatives_allows_conversion_and_drops_the_gradient():
    def f(x):
        raw = np.asarray(mutagrad.ignore_derivatives(x))
        return np.sum(x * raw)

    np.testing.assert_array_equal(mutagrad.gradient(f, np.array([1.0, 2.0]))[0], [1.0, 2.0])


def test_wrapped_array_is_a_constant_outside_gradient_calls():
    w = mutagrad.array([1.0, 2.0])
    assert float(w[0]) == 1.0
    raw = np.asarray(w)
    np.testing.assert_array_equal(raw, [1.0, 2.0])
    assert np.shares_memory(raw, w._raw)  # numpy's alias (see test_soundness.py)
    assert isinstance(np.sin(w), mutagrad.WrappedArray)
    np.testing.assert_array_equal(np.asarray(np.sin(w)), np.sin([1.0, 2.0]))


# -- rules: missing, traced through, custom ----------------------------------------


def test_function_without_rule_names_it_and_the_fix():
    with pytest.raises(mutagrad.MissingRuleError) as info:
        mutagrad.gradient(lambda x: np.sum(np.sort_complex(x).real), np.ones(3))
    assert "np.sort_complex" in str(info.value)
    assert "mutagrad.defvjp" in str(info.value)


def test_numpy_python_implementations_are_traced_through():
    check_gradient(lambda x: np.sum(np.hstack([x, x * 2]) ** 2), np.array([1.0, 2.0]))
    check_gradient(lambda x: np.sum(np.split(x, 3)[1] ** 2), np.arange(6.0))


def test_rrule_for_a_primitive_takes_effect_on_the_next_call():
    @mutagrad.primitive
    def square(x):
        return x * x

    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(mutagrad.gradient(lambda x: np.sum(square(x)), x)[0], [2, 4])

    @mutagrad.rrule(square)
    def square_rule(x):
        y = square(x)
        return y, lambda dy: (mutagrad.NoTangent(), dy * 10.0)

    np.testing.assert_array_equal(mutagrad.gradient(lambda x: np.sum(square(x)), x)[0], [10, 10])


def test_defvjp_for_a_primitive():
    @mutagrad.primitive
    def cube(x):
        return x**3

    mutagrad.defvjp(cube, lambda g, ans, x: g * 3 * x**2, reads=((0,),))
    check_gradient(lambda x: np.sum(cube(x)), np.array([1.0, -2.0]))


def test_rrule_closure_is_poisoned_by_a_later_write():
    @mutagrad.primitive
    def scale(x):
        return 2 * x

    @mutagrad.rrule(scale)
    def scale_rule(x):
        return scale(x), lambda dy: (dy * 2 + 0 * x,)

    def f(x):
        x = x * 1.0
        y = scale(x)
        x[0] = 5.0
        return np.sum(y)

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(f, np.ones(2))


@pytest.fixture
def users_rule_for_sin():
    """A user's rrule for np.sin (scaled by 10, so that its use shows), removed afterwards."""
    from mutagrad.core.registry import UFUNC_RULES

    builtin = UFUNC_RULES[np.sin]

    @mutagrad.rrule(np.sin)
    def sin_rule(x):
        return np.sin(mutagrad.ignore_derivatives(x)), lambda dy: (10.0 * dy * np.cos(x),)

    yield
    UFUNC_RULES[np.sin] = builtin


def test_a_users_ufunc_rule_with_out(users_rule_for_sin):
    x = np.array([0.5, 1.0, 2.0])

    def into_a_buffer(x):
        y = np.zeros_like(x)
        np.sin(x, out=y)
        return np.sum(y * y)

    (g,) = mutagrad.gradient(into_a_buffer, x)
    np.testing.assert_allclose(g, 10.0 * 2 * np.sin(x) * np.cos(x))
    assert into_a_buffer(x) == np.sum(np.sin(x) ** 2)

    def over_its_input(x):
        y = x * 1.0
        np.sin(y, out=y)  # the rule's pullback reads y: the write poisons it
        return np.sum(y)

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(over_its_input, x)
