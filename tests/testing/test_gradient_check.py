"""check_gradient: passes right gradients, reports wrong ones readably, is fast on large arrays."""

from __future__ import annotations

import time

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import ELEMENTWISE_LIMIT, check_gradient


def wrong_cube(factor: float):
    """A primitive ``x**3`` whose registered derivative is ``factor`` times the true one."""

    @mutagrad.primitive
    def cube(x):
        return x**3

    mutagrad.defvjp(cube, lambda g, ans, x: factor * g * 3 * x**2, reads=((0,),))
    return cube


def test_returns_the_gradient_when_it_is_right():
    grads = check_gradient(lambda x, y: np.sum(np.sin(x) * y), np.array([0.5, 1.0]), 2.0)
    np.testing.assert_allclose(grads[0], 2.0 * np.cos([0.5, 1.0]))
    assert grads[1] == pytest.approx(np.sum(np.sin([0.5, 1.0])))


def test_a_wrong_gradient_is_reported_with_argument_worst_element_and_both_values():
    cube = wrong_cube(1.5)

    def loss(weights, data):
        return np.sum(cube(weights) * data)

    with pytest.raises(AssertionError) as info:
        check_gradient(loss, np.array([1.0, -2.0, 0.5]), np.ones(3))
    report = str(info.value)
    assert "argument 0 (weights): reverse mode and finite differences differ at 3 of 3" in report
    assert "worst element [1]: reverse mode 18.0, finite differences 12.0" in report
    assert "argument 1" not in report  # the data's gradient is right


def test_a_function_that_mutates_its_argument_is_measured_correctly():
    def normalise_in_place(x):
        x -= np.mean(x)
        x *= x
        return np.sum(x)

    x = np.array([1.0, 2.0, 4.0])
    check_gradient(normalise_in_place, x)
    np.testing.assert_array_equal(x, [1.0, 2.0, 4.0])


def test_integers_used_as_indices_have_no_derivative():
    grads = check_gradient(lambda x, i: x[i] ** 2, np.array([1.0, 2.0, 3.0]), 1)
    assert grads[1] is None


def test_zero_dimensional_arrays_stay_arrays():
    grads = check_gradient(lambda x: x[()] ** 2 + np.sum(x * x), np.array(1.5))
    assert np.shape(grads[0]) == () and grads[0] == pytest.approx(6.0)


def test_mode_is_passed_on_and_mutagrad_errors_propagate():
    def overwrite_saved(x):
        y = x * x
        x[...] = 0.0
        return np.sum(y)

    x = np.array([1.0, 2.0])
    with pytest.raises(mutagrad.PoisonedCaptureError):
        check_gradient(overwrite_saved, x)
    with pytest.raises(mutagrad.MutationError):
        check_gradient(overwrite_saved, x, mode="strict")
    check_gradient(overwrite_saved, x, mode="snapshot")


def test_large_arguments_are_checked_along_random_directions_quickly():
    x = np.random.default_rng(0).standard_normal(200_000)
    start = time.perf_counter()
    check_gradient(lambda x: np.sum(np.tanh(x) * x), x)
    assert time.perf_counter() - start < 5.0  # element by element would take minutes


def test_a_wrong_gradient_of_a_large_argument_is_reported_along_a_direction():
    cube = wrong_cube(1.02)
    x = np.random.default_rng(1).standard_normal(ELEMENTWISE_LIMIT + 1)
    with pytest.raises(AssertionError) as info:
        check_gradient(lambda x: np.sum(cube(x)), x)
    report = " ".join(str(info.value).split())
    assert "random direction 1 of 3" in report
    assert f"elementwise_limit={ELEMENTWISE_LIMIT + 1} to compare every element" in report
    with pytest.raises(AssertionError, match="worst element"):
        check_gradient(lambda x: np.sum(cube(x)), x, elementwise_limit=x.size)


def test_second_order_catches_a_vjp_that_is_right_but_not_differentiable():
    @mutagrad.primitive
    def cube(x):
        return x**3

    # Right values, but ignore_derivatives hides x from the second derivative.
    mutagrad.defvjp(
        cube, lambda g, ans, x: g * 3 * mutagrad.ignore_derivatives(x) ** 2, reads=((0,),)
    )
    x = np.array([0.5, 1.0])
    check_gradient(lambda x: np.sum(cube(x)), x)
    with pytest.raises(AssertionError, match="second-order gradient check failed"):
        check_gradient(lambda x: np.sum(cube(x)), x, order=2)


def test_second_order_passes_a_differentiable_vjp():
    check_gradient(lambda x: np.sum(wrong_cube(1.0)(x)), np.array([0.5, -1.0]), order=2)


def test_unsupported_order_is_refused():
    with pytest.raises(ValueError, match="order=1 and order=2"):
        check_gradient(lambda x: np.sum(x), np.ones(2), order=3)
