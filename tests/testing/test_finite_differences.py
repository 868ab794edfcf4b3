"""numerical_gradient and directional_derivative: the reference the checks compare with."""

from __future__ import annotations

import numpy as np
import pytest

from mutagrad.testing import directional_derivative, numerical_gradient


def test_numerical_gradient_of_a_known_function():
    x = np.array([0.3, -1.2, 2.0])
    (g, h) = numerical_gradient(lambda x, s: np.sum(np.sin(x)) * s, x, 2.0)
    np.testing.assert_allclose(g, 2.0 * np.cos(x), rtol=1e-7)
    assert isinstance(h, float) and h == pytest.approx(np.sum(np.sin(x)))


def test_each_call_gets_fresh_copies_so_mutation_is_measured():
    def square_in_place(x):
        x *= x
        return np.sum(x)

    x = np.array([1.0, 3.0])
    (g,) = numerical_gradient(square_in_place, x)
    np.testing.assert_allclose(g, [2.0, 6.0], rtol=1e-7)
    np.testing.assert_array_equal(x, [1.0, 3.0])


def test_non_numbers_and_integer_indices_have_no_derivative():
    grads = numerical_gradient(lambda x, i, name, flag: x[i] * 2.0, np.ones(3), 1, "x", True)
    assert grads[0] is not None and grads[1:] == [None, None, None]


def test_integer_values_used_as_numbers_are_differentiated():
    (g,) = numerical_gradient(lambda n: n**2, 3)
    assert g == pytest.approx(6.0)


def test_zero_dimensional_arrays_stay_arrays():
    (g,) = numerical_gradient(lambda x: x[()] ** 2, np.array(2.0))
    assert isinstance(g, np.ndarray) and g.shape == () and g == pytest.approx(4.0)


def test_wrt_restricts_the_work():
    calls = []

    def f(x, y):
        calls.append(1)
        return np.sum(x) * np.sum(y)

    grads = numerical_gradient(f, np.ones(3), np.ones(2), wrt=(1,))
    assert grads[0] is None and len(calls) == 4


def test_directional_derivative_is_the_gradient_along_the_direction():
    x = np.array([0.3, -1.2, 2.0])
    v = np.array([1.0, 0.5, -2.0])
    d = directional_derivative(lambda x: np.sum(np.sin(x)), (x,), 0, v)
    assert d == pytest.approx(np.dot(np.cos(x), v), rel=1e-7)


def test_directional_derivative_of_an_index_is_none():
    assert directional_derivative(lambda x, i: x[i], (np.ones(3), 1), 1, np.array(1.0)) is None
