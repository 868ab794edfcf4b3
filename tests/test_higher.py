"""jacobian, withjacobian, hessian, hessian_reverse, diaghessian; nested differentiation.

Jacobians are compared with central finite differences of every output
element; Hessians with finite differences of the gradient and with
``check_gradient(order=2)``. Second derivatives through mutating code follow
the mode of the inner call, like first derivatives.
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient, numerical_gradient

RNG = np.random.default_rng(7)


def finite_difference_jacobian(f, x, eps=1e-6):
    """J[k, i] = ∂f(x).flat[k] / ∂x.flat[i] by central differences, on plain ndarrays."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(f(x.copy()))
    jac = np.zeros((y.size, x.size))
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = eps
        up = np.asarray(f(x + step.reshape(x.shape)))
        down = np.asarray(f(x - step.reshape(x.shape)))
        jac[:, i] = (up - down).ravel() / (2 * eps)
    return jac


def finite_difference_hessian(f, x, eps=1e-4):
    def grad(v):
        return numerical_gradient(f, v, eps=1e-6)[0]

    return finite_difference_jacobian(lambda v: grad(v), x, eps)


# -- jacobian ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "f, shape",
    [
        (lambda x: np.sin(x) * x[0], (4,)),
        (lambda x: np.cumsum(x**2), (5,)),
        (lambda x: x @ x.T, (2, 3)),  # a 2-D output, a 2-D argument
        (lambda x: np.exp(x).sum(axis=0), (3, 2)),
        (lambda x: np.tanh(x[::2] * x[1::2]), (6,)),
    ],
)
def test_jacobian_matches_finite_differences(f, shape):
    x = RNG.standard_normal(shape)
    (jac,) = mutagrad.jacobian(f, x)
    want = finite_difference_jacobian(f, x)
    assert jac.shape == want.shape
    np.testing.assert_allclose(jac, want, atol=1e-6)


def test_jacobian_of_a_mutating_function():
    def running_products(x):
        out = np.empty_like(x)
        acc = x[0] * 1.0
        out[0] = acc
        for i in range(1, len(x)):
            acc = acc * x[i]
            out[i] = acc
        return out

    x = np.array([1.5, -0.5, 2.0, 0.7])
    (jac,) = mutagrad.jacobian(running_products, x)
    np.testing.assert_allclose(jac, finite_difference_jacobian(running_products, x), atol=1e-6)
    (strict,) = mutagrad.jacobian(lambda x: np.cumprod(x), x, mode="strict")
    np.testing.assert_allclose(strict, jac, atol=1e-12)


def test_jacobian_of_several_arguments_and_their_kinds():
    a, b = np.array([1.0, 2.0]), np.array([[1.0, 2.0], [3.0, 4.0]])
    ja, jb, jc, jname = mutagrad.jacobian(lambda a, b, c, name: b @ a * c, a, b, 2.0, "label")
    np.testing.assert_array_equal(ja, 2 * b)
    np.testing.assert_array_equal(jb, [[2.0, 4.0, 0, 0], [0, 0, 2.0, 4.0]])
    np.testing.assert_array_equal(jc, b @ a)
    assert jname is None


def test_unused_argument_gives_zeros_and_constant_output_gives_zeros():
    _, jb = mutagrad.jacobian(lambda a, b: a * 2, np.ones(2), np.ones(3))
    np.testing.assert_array_equal(jb, np.zeros((2, 3)))
    (jc,) = mutagrad.jacobian(lambda a: np.ones(3), np.ones(2))
    np.testing.assert_array_equal(jc, np.zeros((3, 2)))


def test_scalar_output_and_scalar_argument():
    (j,) = mutagrad.jacobian(lambda x: x**3, 2.0)
    np.testing.assert_array_equal(j, [12.0])
    (j,) = mutagrad.jacobian(lambda x: np.sum(x**2), np.array([1.0, 2.0]))
    np.testing.assert_array_equal(j, [[2.0, 4.0]])
    (j,) = mutagrad.jacobian(lambda x: x * 2, np.array(3.0))  # 0-d array: a 1x1 matrix
    np.testing.assert_array_equal(j, [[2.0]])


def test_jacobian_keeps_float32():
    (j,) = mutagrad.jacobian(lambda x: x * x, np.ones(3, dtype=np.float32))
    assert j.dtype == np.float32


def test_jacobian_of_a_fortran_ordered_argument_uses_row_major_columns():
    x = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    (j,) = mutagrad.jacobian(lambda x: x[:, 1:] * 1.0, x)  # a sparse cotangent per row
    want = finite_difference_jacobian(lambda x: x[:, 1:] * 1.0, np.ascontiguousarray(x))
    np.testing.assert_array_equal(j, want.round())


def test_withjacobian_returns_the_value_in_its_own_shape():
    val, (j,) = mutagrad.withjacobian(np.cumsum, np.array([1, 2, 3]))
    np.testing.assert_array_equal(val, [1, 3, 6])
    np.testing.assert_array_equal(j, [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    res = mutagrad.withjacobian(lambda x: x.reshape(2, 2) * 2, np.ones(4))
    assert res.val.shape == (2, 2) and res.grad[0].shape == (4, 4)


def test_jacobian_refuses_a_tuple_output():
    with pytest.raises(mutagrad.MutagradError, match="array or a number"):
        mutagrad.jacobian(lambda x: (x, x), np.ones(2))


def test_jacobian_sweeps_one_tape_many_times_from_one_forward_pass():
    calls = []

    def f(x):
        calls.append(1)
        return np.sin(x) * 2

    mutagrad.jacobian(f, np.ones(50))
    assert len(calls) == 1


def test_jacobian_of_a_poisoned_capture_raises_and_snapshot_is_right():
    def overwrite(x):
        y = x * x
        x.fill(0)
        return y

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.jacobian(overwrite, np.array([1.0, 2.0]))
    (j,) = mutagrad.jacobian(overwrite, np.array([1.0, 2.0]), mode="snapshot")
    np.testing.assert_array_equal(j, np.diag([2.0, 4.0]))


def test_jacobian_inside_a_gradient_is_differentiable():
    def f(x):
        (j,) = mutagrad.jacobian(lambda y: np.sin(y) * y[0], x)
        return np.sum(j**2)

    check_gradient(f, np.array([0.3, -1.2, 2.0]))


def test_nothing_is_left_behind():
    w = mutagrad.array([1.0, 2.0])
    mutagrad.jacobian(lambda x: x * w, np.ones(2))
    mutagrad.hessian(lambda x: np.sum(x * x * w), np.ones(2))
    assert w._node is None and not w._captures


# -- hessian, hessian_reverse, diaghessian -----------------------------------------


@pytest.mark.parametrize(
    "f, x",
    [
        (lambda x: np.sum(np.sin(x) * x**2), RNG.standard_normal(4)),
        (lambda x: np.log(np.sum(np.exp(x))), RNG.standard_normal(5)),
        (lambda x: np.sum((x @ x.T) ** 2), RNG.standard_normal((2, 3))),
        (lambda x: np.prod(x) + np.sum(np.tanh(x)), RNG.standard_normal(3)),
    ],
)
def test_hessian_matches_finite_differences(f, x):
    h = mutagrad.hessian(f, x)
    np.testing.assert_allclose(h, finite_difference_hessian(f, x), atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(h, h.T, atol=1e-12)
    # hessian is forward over reverse, hessian_reverse reverse over reverse: the same
    # derivatives, summed in other orders
    np.testing.assert_allclose(mutagrad.hessian_reverse(f, x), h, rtol=1e-12, atol=1e-14)
    check_gradient(f, x, order=2)


def test_zygote_hessian_docstring_examples():
    # hessian(x -> x[1]*x[2], randn(2)), hessian(x -> sum(x.^3), [1 2; 3 4]), hessian(sin, pi/2)
    np.testing.assert_array_equal(
        mutagrad.hessian(lambda x: x[0] * x[1], RNG.standard_normal(2)), [[0, 1], [1, 0]]
    )
    h = mutagrad.hessian(lambda x: np.sum(x**3), np.array([[1, 2], [3, 4]]))
    np.testing.assert_array_equal(h, np.diag([6.0, 12.0, 18.0, 24.0]))  # row-major x.flat
    assert mutagrad.hessian(np.sin, np.pi / 2) == -1.0
    # hessian(xy -> atan(xy[1], xy[2]), [1, 2])
    h = mutagrad.hessian(lambda xy: np.arctan2(xy[0], xy[1]), np.array([1, 2]))
    np.testing.assert_allclose(h, [[-0.16, -0.12], [-0.12, 0.16]], atol=1e-15)


def test_zygote_diaghessian_docstring_examples():
    (d,) = mutagrad.diaghessian(lambda x: np.sum(x**3), np.array([[1, 2], [3, 4]]))
    np.testing.assert_array_equal(d, [[6.0, 12.0], [18.0, 24.0]])
    dx, dy = mutagrad.diaghessian(
        lambda x, y: np.sum(x * y * y[:, None]), np.array([[1, 22], [333, 4]]),
        np.array([0.5, 0.666]),
    )  # fmt: skip
    np.testing.assert_array_equal(dx, np.zeros((2, 2)))
    np.testing.assert_allclose(dy, [2.0, 8.0])
    da, db = mutagrad.diaghessian(np.arctan2, 1, 2)
    assert (da, db) == (pytest.approx(-0.16), pytest.approx(0.16))
    assert isinstance(da, float)


def test_diaghessian_is_the_diagonal_of_the_hessian_and_skips_other_arguments():
    x = RNG.standard_normal(4)

    def f(x, label):
        return np.sum(np.sin(x) * x[::-1])

    d, none = mutagrad.diaghessian(f, x, "label")
    assert none is None
    np.testing.assert_allclose(d, np.diag(mutagrad.hessian(lambda x: f(x, ""), x)), atol=1e-12)


def test_hessian_of_a_function_that_fills_a_buffer():
    def f(y):
        b = np.empty_like(y)
        for i in range(len(y)):
            b[i] = y[i] ** 3
        return np.sum(b * y)  # sum(y^4)

    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(mutagrad.hessian(f, x), np.diag(12 * x**2), atol=1e-12)
    check_gradient(f, x, order=2)
    with pytest.raises(mutagrad.MutationError):
        mutagrad.hessian(f, x, mode="strict")


def test_mutation_inside_the_inner_trace_follows_the_mode():
    def overwrite_after_use(y):
        z = y * y
        y.fill(0)  # poisons z's saved copy of y in the inner call
        return np.sum(z)

    x = np.array([1.0, 2.0])
    with pytest.raises(mutagrad.MutationError):
        mutagrad.hessian(overwrite_after_use, x, mode="strict")
    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.hessian(overwrite_after_use, x, mode="poison")
    np.testing.assert_array_equal(mutagrad.hessian(overwrite_after_use, x, mode="snapshot"),
                                  2 * np.eye(2))  # fmt: skip


def test_a_write_after_an_inner_gradient_poisons_what_its_recorded_pullback_saved():
    # The inner sweep is recorded by the outer level; it multiplies a traced
    # cotangent by buf, so the outer level saves buf's memory. Writing buf
    # afterwards must poison that (or, in snapshot mode, copy it first).
    def f(x):
        buf = np.zeros_like(x)
        buf[:] = x * 2
        (g,) = mutagrad.gradient(lambda y: np.sum(np.sin(buf * y)), x)  # cos(buf*x) * buf
        buf[0] = 0.0  # after g was computed: f is sum(cos(2x*x) * 2x) all the same
        return np.sum(g)

    x = np.array([0.4, 1.1])
    truth = numerical_gradient(lambda x: np.sum(np.cos(2 * x * x) * 2 * x), x)[0]
    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(f, x)
    with mutagrad.mode("snapshot"):  # both levels
        np.testing.assert_allclose(mutagrad.gradient(f, x)[0], truth, rtol=1e-6)
    with pytest.raises(mutagrad.PoisonedCaptureError):  # the inner call's own mode: poison
        mutagrad.gradient(f, x, mode="snapshot")


def test_third_derivative():
    f = np.sin
    third = mutagrad.gradient(lambda x: mutagrad.hessian(f, x), 0.3)[0]
    assert third == pytest.approx(-np.cos(0.3))


def test_gradient_of_a_hessian_matches_finite_differences():
    check_gradient(lambda x: np.sum(mutagrad.hessian(lambda y: np.sum(np.sin(y) ** 3), x)),
                   np.array([0.3, -1.2, 2.0]))  # fmt: skip


def test_hessian_refuses_a_non_numeric_argument():
    with pytest.raises(TypeError):
        mutagrad.hessian(len, "abc")


def test_hessian_with_a_constant_gradient_is_zero():
    np.testing.assert_array_equal(mutagrad.hessian(lambda x: np.sum(3 * x), np.ones(2)),
                                  np.zeros((2, 2)))  # fmt: skip
