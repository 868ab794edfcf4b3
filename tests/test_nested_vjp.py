"""``vjp`` and ``pullback`` inside a gradient call: reverse over reverse, as in JAX.

The enclosing call differentiates the pullback itself, in the primals and in
the cotangent; every result is checked against finite differences of the
closed-form first derivative, and every capture path is checked with a write
after the capture.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import mutagrad as mg
import mutagrad.numpy as mnp
from mutagrad.testing.finite_differences import numerical_gradient

X = np.array([0.3, 1.2, -0.7])
V = np.array([1.0, 2.0, 0.5])


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_grad_of_a_vjp_in_the_primal_and_the_cotangent():
    def g(x, v):
        _, back = mg.vjp(lambda a: np.sin(a) * a, x)
        return np.sum(back(v)[0] ** 2)

    def closed_form(x, v):
        return np.sum((v * (np.cos(x) * x + np.sin(x))) ** 2)

    got = mg.grad(g, argnums=(0, 1))(X, V)
    want = numerical_gradient(closed_form, X, V)
    _close(got[0], want[0])
    _close(got[1], want[1])


def _fill(a):
    out = mnp.zeros(3)
    for i in range(3):
        out[i] = a[i] * a[(i + 1) % 3]
    return out


@pytest.mark.parametrize("mode", ["poison", "snapshot"])
def test_a_vjp_of_a_function_that_fills_a_buffer_in_place(mode):
    f = _fill

    def g(x, v):
        _, back = mg.vjp(f, x, mode=mode)
        return np.sum(back(v)[0] * x)

    def closed_form(x, v):
        # back(v)[0][j] = v[j] * x[j+1] + v[j-1] * x[j-1]
        d = v * np.roll(x, -1) + np.roll(v, 1) * np.roll(x, 1)
        return np.sum(d * x)

    got = mg.grad(g, argnums=(0, 1), mode=mode)(X, V)
    want = numerical_gradient(closed_form, X, V)
    _close(got[0], want[0])
    _close(got[1], want[1])


def test_strict_mode_refuses_the_fill_inside_a_nested_vjp_as_at_top_level():
    def g(x):
        return np.sum(mg.vjp(_fill, x, mode="strict")[1](V)[0])

    with pytest.raises(mg.MutationError):
        mg.grad(g)(X)


def test_the_value_stays_traced_inside_the_enclosing_call():
    def g(x):
        y, _ = mg.pullback(lambda a: a**3, x)
        return np.sum(y)

    _close(mg.grad(g)(X), 3 * X**2)


def test_back_called_twice_and_at_a_deeper_level():
    def g(x):
        _, back = mg.vjp(lambda a: a * a, x)
        first = np.sum(back(np.ones(3))[0])  # 2 * sum(x)
        # back called again inside a further gradient call, with a cotangent
        # traced at that deeper level: d/dv sum(back(v)[0] * x) = 2 x**2
        inner = mg.grad(lambda v: np.sum(back(v)[0] * x))(np.ones(3))
        return first + np.sum(inner)

    # g = 2 sum(x) + 2 sum(x**2)
    _close(mg.grad(g)(X), 2 + 4 * X)


def test_a_vjp_of_a_vjp_inside_grad():
    # Third order: the second-order check autograd's check_grads runs, one level deeper.
    def g(x, v, u):
        def first(a, w):
            return mg.vjp(lambda b: np.sin(b), a)[1](w)[0]  # w * cos(a)

        _, back = mg.vjp(first, x, v)
        dx, dv = back(u)  # -u v sin(x), u cos(x)
        return np.sum(dx * dx) + np.sum(dv)

    def closed_form(x, v, u):
        return np.sum((u * v * np.sin(x)) ** 2) + np.sum(u * np.cos(x))

    u = np.array([0.4, -1.1, 0.9])
    got = mg.grad(g, argnums=(0, 1, 2))(X, V, u)
    want = numerical_gradient(closed_form, X, V, u)
    for a, b in zip(got, want):
        _close(a, b)


def test_a_closure_value_written_after_the_capture_raises_in_poison_mode():
    def g(x, v):
        w = x * 2.0
        _, back = mg.vjp(lambda a: a * w, x)  # the pullback reads w
        w[0] = 100.0
        return np.sum(back(v)[0])

    with pytest.raises(mg.PoisonedCaptureError):
        mg.grad(g)(X, V)


def test_a_closure_value_written_after_the_capture_keeps_its_gradient_in_snapshot_mode():
    def g(x, v):
        w = x * 2.0
        _, back = mg.vjp(lambda a: a * w, x, mode="snapshot")
        w[0] = 100.0
        return np.sum(back(v)[0]) + np.sum(w)

    def closed_form(x, v):
        w = x * 2.0
        total = np.sum(v * w)
        w[0] = 100.0
        return total + np.sum(w)

    got = mg.grad(g, mode="snapshot")(X, V)
    _close(got, numerical_gradient(closed_form, X, V)[0])


def test_a_write_to_the_primal_after_vjp_does_not_reach_the_pullback():
    # vjp copied its primal: the pullback reads the value x had at the call.
    def g(x, v):
        _, back = mg.vjp(lambda a: a * a, x)
        x[0] = 5.0
        return np.sum(back(v)[0]) + np.sum(x)

    expected = 2 * V + np.array([0.0, 1.0, 1.0])
    _close(mg.grad(g)(X, V), expected)


def test_back_after_the_enclosing_call_returned_raises():
    kept = []

    def g(x):
        y, back = mg.vjp(lambda a: a * a, x)
        kept.append(back)
        return np.sum(y)

    mg.grad(g)(X)
    with pytest.raises(mg.MutagradError, match="after the gradient call"):
        kept[0](V)


def test_a_dropped_pullback_does_not_release_the_enclosing_tape():
    def g(x):
        y, back = mg.vjp(lambda a: a * a, x)
        del back
        gc.collect()
        return np.sum(y * x)

    _close(mg.grad(g)(X), 3 * X**2)


def test_hessian_vector_product_by_grad_of_vjp_matches_the_hessian():
    def f(x):
        return np.sum(np.tanh(x) * x[::-1])

    def hvp(x, v):
        return mg.vjp(mg.grad(f), x)[1](v)[0]

    hessian = mg.hessian(f)(X)
    _close(hvp(X, V), hessian @ V)

    # and a function of that product, differentiated once more
    got = mg.grad(lambda x: np.sum(hvp(x, V) ** 2))(X)
    want = numerical_gradient(lambda x: np.sum((mg.hessian(f)(x) @ V) ** 2), X)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
