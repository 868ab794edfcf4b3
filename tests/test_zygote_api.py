"""Every example of the seed's Zygote API page (seeds/003), translated to Python.

Julia is column-major and 1-based; numpy here is row-major and 0-based. So
``dims=2`` becomes ``axis=1``, ``a[1:3]`` becomes ``a[:3]``, ``z'`` (a row)
broadcasts as ``z`` and ``y`` (a column) as ``y[:, None]``, and a Jacobian's
columns follow ``a.flat`` (row-major) where Julia's follow ``vec(a)``.
Values match Zygote's exactly; integer inputs give float gradients.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import mutagrad
import mutagrad.numpy as mnp
from mutagrad import Params

# -- implicit style ----------------------------------------------------------------


def test_gradient_with_implicit_params():
    # g = gradient(Params([x, y])) do; sum(x .* y .* z'); end
    x = mutagrad.array([[1, 2, 3], [4, 5, 6]])
    y = mutagrad.array([7, 8])
    z = mutagrad.array([1, 10, 100])
    g = mutagrad.gradient(lambda: np.sum(x * y[:, None] * z), Params([x, y]))
    np.testing.assert_array_equal(g[x], [[7.0, 70.0, 700.0], [8.0, 80.0, 800.0]])
    assert z not in g  # haskey(g, z) == false: only x and y are parameters
    assert x in g and y in g


def test_params_is_a_container_of_the_arrays_a_zero_argument_function_uses():
    a = mutagrad.array([1.0, 2.0])
    b = mutagrad.array([3.0])
    ps = Params([a, b])
    assert list(ps) == [a, b]
    g = mutagrad.gradient(lambda: np.sum(a * b), ps)
    np.testing.assert_array_equal(g[a], [3.0, 3.0])
    np.testing.assert_array_equal(g[b], [3.0])


def test_grads_is_indexed_by_the_parameter_itself():
    w = mutagrad.array([3.0])
    res = mutagrad.withgradient(lambda: np.sum(w * w), Params([w]))
    assert res.val == 9.0
    np.testing.assert_array_equal(res.grad[w], [6.0])


def test_jacobian_with_implicit_params():
    # Jxy = jacobian(() -> ys[1:2] .+ sum(xs.^2), Params([xs, ys]))
    xs = mutagrad.array([[1, 2], [3, 4]])
    ys = mutagrad.array([5, 7, 9])
    jxy = mutagrad.jacobian(lambda: ys[:2] + np.sum(xs**2), Params([xs, ys]))
    np.testing.assert_array_equal(jxy[ys], [[1, 0, 0], [0, 1, 0]])
    # Julia's columns follow vec(xs) = [1, 3, 2, 4]; ours follow xs.flat = [1, 2, 3, 4].
    np.testing.assert_array_equal(jxy[xs], [[2, 4, 6, 8], [2, 4, 6, 8]])


# -- explicit style ----------------------------------------------------------------


def test_gradient_of_a_product_of_three_numbers():
    # gradient(*, 2.0, 3.0, 5.0)
    assert mutagrad.gradient(lambda a, b, c: a * b * c, 2.0, 3.0, 5.0) == (15.0, 10.0, 6.0)


def test_gradient_of_sum_abs2():
    # gradient(x -> sum(abs2, x), [7.0, 11.0, 13.0])
    (g,) = mutagrad.gradient(lambda x: np.sum(np.abs(x) ** 2), np.array([7.0, 11.0, 13.0]))
    np.testing.assert_array_equal(g, [14.0, 22.0, 26.0])


def test_gradient_with_a_size_argument_gets_nothing_for_it():
    # gradient([7, 11], 0, 1) do x, y, d; p = size(x, d); sum(x.^p .+ y); end
    def f(x, y, d):
        p = x.shape[d]
        return np.sum(x**p + y)

    gx, gy, gd = mutagrad.gradient(f, np.array([7, 11]), 0, 0)
    np.testing.assert_array_equal(gx, [14.0, 22.0])
    assert gy == 2.0 and isinstance(gy, float)
    assert gd is None


def test_withgradient_of_division():
    # y, ∇ = withgradient(/, 1, 2); ∇ == gradient(/, 1, 2)
    y, grad = mutagrad.withgradient(operator.truediv, 1, 2)
    assert y == 0.5
    assert grad == (0.5, -0.25)
    assert grad == mutagrad.gradient(operator.truediv, 1, 2)


def test_jacobian_rows_are_outputs():
    # jacobian(a -> 100*a[1:3].^2, 1:7)[1]
    (j,) = mutagrad.jacobian(lambda a: 100 * a[:3] ** 2, np.arange(1, 8))
    expected = np.zeros((3, 7))
    expected[0, 0], expected[1, 1], expected[2, 2] = 200, 400, 600
    np.testing.assert_array_equal(j, expected)


def test_jacobian_of_a_scalar_argument_is_a_vector():
    # jacobian((a,x) -> a.^2 .* x, [1,2,3], 1)
    ja, jx = mutagrad.jacobian(lambda a, x: a**2 * x, np.array([1, 2, 3]), 1)
    np.testing.assert_array_equal(ja, np.diag([2.0, 4.0, 6.0]))
    np.testing.assert_array_equal(jx, [1.0, 4.0, 9.0])
    assert jx.shape == (3,)


def test_jacobian_of_prod_along_an_axis():
    # jacobian((a,d) -> prod(a, dims=d), [1 2; 3 4; 5 6], 2)
    ja, jd = mutagrad.jacobian(
        lambda a, d: np.prod(a, axis=d), np.array([[1, 2], [3, 4], [5, 6]]), 1
    )
    # Julia prints [2 0 … 0 0; 0 4 … 3 0; 0 0 … 0 5] over vec(a) = [1,3,5,2,4,6].
    np.testing.assert_array_equal(ja, [[2, 1, 0, 0, 0, 0], [0, 0, 4, 3, 0, 0], [0, 0, 0, 0, 6, 5]])
    np.testing.assert_array_equal(jd, [0.0, 0.0, 0.0])  # a number used as an axis


def test_jacobian_gives_nothing_for_a_string():
    # jacobian((a,s) -> a.^length(s), [1,2,3], "str")
    ja, js = mutagrad.jacobian(lambda a, s: a ** len(s), np.array([1, 2, 3]), "str")
    np.testing.assert_array_equal(ja, np.diag([3.0, 12.0, 27.0]))
    assert js is None


def test_jacobian_gives_nothing_for_a_tuple_but_gradient_understands_it():
    # jacobian((a,t) -> sum(a .* t[1]) + t[2], [1,2,3], (4,5))
    def f(a, t):
        return np.sum(a * t[0]) + t[1]

    ja, jt = mutagrad.jacobian(f, np.array([1, 2, 3]), (4, 5))
    np.testing.assert_array_equal(ja, [[4.0, 4.0, 4.0]])  # scalar output: one row
    assert jt is None
    # gradient((a,t) -> sum(a .* t[1]) + t[2], [1,2,3], (4,5))
    ga, gt = mutagrad.gradient(f, np.array([1, 2, 3]), (4, 5))
    np.testing.assert_array_equal(ga, [4.0, 4.0, 4.0])
    assert gt == (6.0, 1.0)


# -- ChainRules: ignore_derivatives, @non_differentiable, rrule --------------------


def test_ignore_derivatives_of_a_closure_runs_it_for_its_effect():
    # ignore_derivatives() do; value = rand(); push!(collection, value); end
    collection = []

    def f(x):
        mutagrad.ignore_derivatives(lambda: collection.append(np.random.default_rng(0).random()))
        return np.sum(x * 2)

    (g,) = mutagrad.gradient(f, np.ones(2))
    np.testing.assert_array_equal(g, [2.0, 2.0])
    assert len(collection) == 1


def test_wrong_grads_example_gives_the_true_gradient_here():
    # ChainRules' wrong_grads: y = ones(3); ignore_derivatives(() -> push!(y, x)); sum(y)
    # has zero gradient in ChainRules. A numpy array cannot grow, so the push is a
    # write into a slot; mutagrad records writes made inside the closure, so the
    # gradient is the true one, 1.
    def wrong_grads(x):
        y = mnp.ones(4)
        mutagrad.ignore_derivatives(lambda: y.__setitem__(3, x))
        return np.sum(y)

    assert mutagrad.gradient(wrong_grads, 2.0) == (1.0,)

    def with_a_list(x):
        y = [1.0, 1.0, 1.0]
        mutagrad.ignore_derivatives(lambda: y.append(x))
        return sum(y)

    assert mutagrad.gradient(with_a_list, 2.0) == (1.0,)


def test_ignore_derivatives_of_an_argument():
    # ignore_derivatives(x) * w
    gx, gw = mutagrad.gradient(lambda x, w: np.sum(mutagrad.ignore_derivatives(x) * w),
                               np.array([1.0, 2.0]), np.array([3.0, 4.0]))  # fmt: skip
    assert gx is None
    np.testing.assert_array_equal(gw, [1.0, 2.0])


def test_non_differentiable_function_has_no_tangent_for_any_argument():
    # @non_differentiable Base.:(==)(a, b); pullback(1.0) == (NoTangent(), NoTangent(), NoTangent())
    @mutagrad.primitive
    def equal(a, b):
        return a == b

    mutagrad.non_differentiable(equal)
    assert mutagrad.gradient(lambda a, b: 1.0 * equal(a, b) + 0.0, 2.0, 3.0) == (None, None)


def test_non_differentiable_length():
    # @non_differentiable Base.length(xs); frule(..., length, [2.0, 3.0]) == (2, NoTangent())
    @mutagrad.primitive
    def length(xs):
        return np.asarray(len(xs))

    mutagrad.non_differentiable(length)
    result = mutagrad.withgradient(lambda xs: length(xs) * 1.0, np.array([2.0, 3.0]))
    assert result.val == 2
    assert result.grad == (None,)


def test_rrule_of_unary_sin():
    # sinx, sin_pullback = rrule(sin, x); sin_pullback(1) == (NoTangent(), cos(x))
    @mutagrad.primitive
    def sin(x):
        return np.sin(x)

    @mutagrad.rrule(sin)
    def sin_rule(x):
        return np.sin(x), lambda dy: (mutagrad.NoTangent(), dy * np.cos(x))

    x = 0.7
    y, g = mutagrad.withgradient(sin, x)
    assert y == np.sin(x)
    assert g == (pytest.approx(np.cos(x)),)


def test_rrule_of_binary_hypot():
    # hypot_pullback(1) == (NoTangent(), x / hypot(x, y), y / hypot(x, y))
    @mutagrad.primitive
    def hypot(x, y):
        return np.hypot(x, y)

    @mutagrad.rrule(hypot)
    def hypot_rule(x, y):
        h = np.hypot(x, y)
        return h, lambda dh: (mutagrad.NoTangent(), dh * x / h, dh * y / h)

    x, y = 0.3, 0.4
    assert mutagrad.gradient(hypot, x, y) == (pytest.approx(0.6), pytest.approx(0.8))
