"""The helpers people port with (mutagrad/porting.py), against the transforms they stand for."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient

X = np.array([0.5, -1.2, 2.0])
V = np.array([0.3, 0.7, -0.4])


def loss(w, x):
    return np.sum(np.tanh(w * x) ** 2) + np.prod(w)


def test_elementwise_grad_is_the_derivative_of_each_element():
    got = mutagrad.elementwise_grad(np.tanh)(X)
    np.testing.assert_allclose(got, 1 - np.tanh(X) ** 2)
    got = mutagrad.elementwise_grad(lambda a, x: np.sin(a * x), argnum=1)(2.0, X)
    np.testing.assert_allclose(got, 2.0 * np.cos(2.0 * X))


def test_hessian_vector_products_are_the_hessian_times_the_vector():
    hessian = mutagrad.hessian(loss)(X, V)
    np.testing.assert_allclose(mutagrad.hessian_vector_product(loss)(X, V, V), hessian @ V)
    hessian_x = mutagrad.hessian(loss, argnums=1)(X, V)
    np.testing.assert_allclose(mutagrad.hessian_vector_product(loss, argnum=1)(X, V, X),
                               hessian_x @ X)  # fmt: skip
    np.testing.assert_allclose(mutagrad.hvp(lambda w: loss(w, V), (X,), (V,)), hessian @ V)
    both = mutagrad.hvp(loss, (X, V), (V, X))
    blocks = mutagrad.hessian(loss, argnums=(0, 1))(X, V)
    np.testing.assert_allclose(both[0], blocks[0][0] @ V + blocks[0][1] @ X)
    np.testing.assert_allclose(both[1], blocks[1][0] @ V + blocks[1][1] @ X)


def test_make_vjp_has_autograds_shape():
    back, value = mutagrad.make_vjp(loss, argnum=1)(X, V)
    assert value == loss(X, V)
    np.testing.assert_allclose(back(2.0), 2.0 * mutagrad.grad(loss, 1)(X, V))


def test_argnum_is_autograds_spelling_of_argnums():
    np.testing.assert_array_equal(mutagrad.grad(loss, argnum=1)(X, V), mutagrad.grad(loss, 1)(X, V))
    _, g = mutagrad.value_and_grad(loss, argnum=1)(X, V)
    np.testing.assert_array_equal(g, mutagrad.grad(loss, 1)(X, V))
    with pytest.raises(TypeError, match="not both"):
        mutagrad.grad(loss, 1, argnum=1)


def test_ravel_pytree_round_trips_and_differentiates():
    tree = {"w": np.ones((2, 2)), "b": [np.arange(3.0), 2.0], "n": np.array([1, 2])}
    flat, unravel = mutagrad.ravel_pytree(tree)
    assert flat.shape == (10,)
    back = unravel(flat)
    np.testing.assert_array_equal(back["w"], tree["w"])
    assert back["n"].dtype == tree["n"].dtype and back["b"][1] == 2.0

    def f(vector):
        parts = unravel(vector)
        return np.sum(parts["w"] ** 2) + np.sum(parts["b"][0] * 3.0)

    np.testing.assert_allclose(mutagrad.grad(f)(flat)[:7], [2.0] * 4 + [3.0] * 3)
    check_gradient(lambda t: np.sum(mutagrad.flatten({"a": t, "b": (t * 2, t)})[0] ** 2), X)


def test_numpy_random_is_a_module():
    npr = importlib.import_module("mutagrad.numpy.random")
    npr.seed(0)
    assert npr.randn(3).shape == (3,)


def test_in_place_optimizers_minimise_and_differentiate_through_their_steps():
    target = np.array([1.0, -2.0, 0.5])

    def gradient(x, i):
        return 2 * (x - target)

    for optimizer, options in ((mutagrad.sgd, {"steps": 300}),
                               (mutagrad.rmsprop, {"steps": 300, "step_size": 0.05}),
                               (mutagrad.adam, {"steps": 2000, "step_size": 0.01})):  # fmt: skip
        x = np.zeros(3)
        result = optimizer(gradient, x, **options)
        assert result is x  # updated in place
        np.testing.assert_allclose(x, target, atol=2e-2)

    # The steps are in-place writes mutagrad records: the result differentiates in the
    # starting point and the step size (a hyperparameter gradient, through the loop). The
    # gradient's x * x reads the x each step then overwrites: poison mode says so, and
    # snapshot mode copies it just before the write.
    def after_steps(x0, rate):
        x = x0.copy()
        mutagrad.sgd(lambda x, i: 2 * (x - target) * x, x, steps=5, step_size=rate)
        return np.sum(x**2)

    start = np.array([0.3, 0.2, -0.1])
    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(after_steps, start, 0.1)
    check_gradient(after_steps, start, 0.1, mode="snapshot")
    linear = lambda x0, rate: np.sum(mutagrad.adam(lambda x, i: x - target, x0.copy(),  # noqa: E731
                                                   steps=5, step_size=rate) ** 2)  # fmt: skip
    check_gradient(linear, start, 0.1)
