"""The Python-convention transforms (grad, value_and_grad, vjp, jacrev, jacobian, hessian).

Expected values and shapes follow JAX's convention and are computed by hand
(JAX is not imported): a bare derivative for an int ``argnums``, a tuple for
a tuple, zeros for an argument the result does not depend on, Jacobians of
shape ``out.shape + in.shape``, Hessian blocks ``in_i.shape + in_j.shape``.
Keyword arguments pass through every entry point, Zygote's included. The
transforms run the report corpus (mutating programs) as Zygote's gradient
does.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import mutagrad
from mutagrad.report.programs import CORPUS

X = np.array([1.0, 2.0, 3.0])
RNG = np.random.default_rng(14)


def weighted_squares(x, y):
    return np.sum(x**2 * y)


# -- grad and value_and_grad ---------------------------------------------------------


def test_grad_of_one_argument_is_a_bare_array_shaped_like_it():
    g = mutagrad.grad(weighted_squares)(X, 2.0)
    assert isinstance(g, np.ndarray) and g.shape == X.shape
    np.testing.assert_allclose(g, 2 * X * 2.0)


def test_grad_with_a_tuple_of_argnums_is_a_tuple_in_that_order():
    gy, gx = mutagrad.grad(weighted_squares, argnums=(1, 0))(X, 2.0)
    np.testing.assert_allclose(gx, 4 * X)
    assert gy == pytest.approx(np.sum(X**2))
    assert isinstance(gy, float)
    (only,) = mutagrad.grad(weighted_squares, argnums=(0,))(X, 2.0)
    np.testing.assert_allclose(only, 4 * X)


def test_negative_argnums_count_from_the_end():
    g = mutagrad.grad(weighted_squares, argnums=-1)(X, 2.0)
    assert g == pytest.approx(np.sum(X**2))


def test_arguments_that_do_not_influence_the_result_get_zeros_of_their_shape_and_dtype():
    def f(x, unused_array, unused_float32, unused_number):
        return np.sum(np.sin(x))

    unused32 = np.ones((2, 2), dtype=np.float32)
    gx, ga, g32, gn = mutagrad.grad(f, argnums=(0, 1, 2, 3))(X, np.ones(4), unused32, 5.0)
    np.testing.assert_allclose(gx, np.cos(X))
    np.testing.assert_array_equal(ga, np.zeros(4))
    assert g32.shape == (2, 2) and g32.dtype == np.float32 and not g32.any()
    assert gn == 0.0 and isinstance(gn, float)
    # Zygote's form keeps None for them.
    assert mutagrad.gradient(f, X, np.ones(4), unused32, 5.0)[1:] == (None, None, None)


def test_a_constant_result_gives_zeros_for_every_argument():
    g = mutagrad.grad(lambda x: 3.0)(X)
    np.testing.assert_array_equal(g, np.zeros(3))


def test_arguments_argnums_leaves_out_are_not_traced():
    seen = {}

    def f(x, axis, table):
        seen["axis"] = mutagrad.is_traced(axis)
        seen["table"] = mutagrad.is_traced(table)
        seen["x"] = mutagrad.is_traced(x)
        return np.sum(np.sum(x * table, axis=axis))

    table = np.arange(6.0).reshape(2, 3)
    g = mutagrad.grad(f)(np.ones((2, 3)), 0, table)
    np.testing.assert_array_equal(g, table)
    assert seen == {"axis": False, "table": False, "x": True}


def test_value_and_grad_returns_the_value_and_the_gradient():
    value, g = mutagrad.value_and_grad(weighted_squares)(X, 2.0)
    assert value == pytest.approx(2.0 * np.sum(X**2))
    np.testing.assert_allclose(g, 4 * X)
    value, (gx, gy) = mutagrad.value_and_grad(weighted_squares, argnums=(0, 1))(X, 2.0)
    np.testing.assert_allclose(gx, 4 * X)
    assert gy == pytest.approx(np.sum(X**2))


def test_has_aux_differentiates_the_first_element_and_returns_the_second_as_is():
    def loss(x):
        y = np.tanh(x)
        return np.sum(y**2), {"activations": y}

    g, aux = mutagrad.grad(loss, has_aux=True)(X)
    np.testing.assert_allclose(g, 2 * np.tanh(X) * (1 - np.tanh(X) ** 2))
    assert type(aux["activations"]) is np.ndarray  # a plain array, not a traced one
    np.testing.assert_allclose(aux["activations"], np.tanh(X))
    (value, aux2), g2 = mutagrad.value_and_grad(loss, has_aux=True)(X)
    assert value == pytest.approx(np.sum(np.tanh(X) ** 2))
    np.testing.assert_allclose(aux2["activations"], np.tanh(X))
    np.testing.assert_allclose(g2, g)


def test_a_tuple_result_without_has_aux_and_a_non_pair_with_it_are_refused():
    with pytest.raises(mutagrad.MutagradError, match="has_aux=True"):
        mutagrad.grad(lambda x: (np.sum(x), x))(X)
    with pytest.raises(mutagrad.MutagradError, match=r"pair \(value, aux\)"):
        mutagrad.grad(lambda x: np.sum(x), has_aux=True)(X)


def test_structured_arguments_get_derivatives_of_the_same_structure_with_zeros():
    def f(params, x):
        return np.sum(params["w"] * x) + params["b"] ** 2

    params = {"w": np.ones(3), "b": 3.0, "unused": np.ones(2)}
    g = mutagrad.grad(f)(params, X)
    assert set(g) == {"w", "b", "unused"}
    np.testing.assert_allclose(g["w"], X)
    assert g["b"] == pytest.approx(6.0)
    np.testing.assert_array_equal(g["unused"], np.zeros(2))


def test_bad_argnums_are_refused_with_type_errors():
    with pytest.raises(TypeError, match="argnums must be an int"):
        mutagrad.grad(weighted_squares, argnums=True)
    with pytest.raises(TypeError, match="argnums must be an int"):
        mutagrad.grad(weighted_squares, argnums="x")
    with pytest.raises(TypeError, match="names argument 2"):
        mutagrad.grad(weighted_squares, argnums=2)(X, 2.0)
    with pytest.raises(ValueError, match="twice"):
        mutagrad.grad(weighted_squares, argnums=(0, -2))(X, 2.0)
    with pytest.raises(TypeError, match="argument 1, a str"):
        mutagrad.grad(lambda x, label: np.sum(x), argnums=(0, 1))(X, "label")


def test_the_mode_applies_to_the_transformed_function():
    def fill_after_use(x):
        x = x * 1.0
        y = x * x
        x[0] = 0.0
        return np.sum(y)

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.grad(fill_after_use)(X)
    with pytest.raises(mutagrad.MutationError):
        mutagrad.grad(fill_after_use, mode="strict")(X)
    np.testing.assert_allclose(mutagrad.grad(fill_after_use, mode="snapshot")(X), 2 * X)


def test_the_transformed_function_keeps_the_name_of_f():
    assert mutagrad.grad(weighted_squares).__name__ == "weighted_squares"
    assert "gradient of weighted_squares" in mutagrad.grad(weighted_squares).__doc__


# -- keyword arguments pass through, undifferentiated ------------------------------------


def penalised(w, data, gamma=1.0):
    return gamma * np.sum((data @ w) ** 2)


def test_keyword_arguments_reach_f_in_every_entry_point():
    w, data, gamma = X, np.eye(3) * 2.0, 3.0
    want = 2 * gamma * data.T @ (data @ w)  # the gradient with respect to w
    np.testing.assert_allclose(mutagrad.gradient(penalised, w, data, gamma=gamma)[0], want)
    val, (gw, _) = mutagrad.withgradient(penalised, w, data, gamma=gamma)
    assert val == pytest.approx(penalised(w, data, gamma))
    np.testing.assert_allclose(gw, want)
    y, back = mutagrad.pullback(penalised, w, data, gamma=gamma)
    assert y == pytest.approx(val)
    np.testing.assert_allclose(back(1.0)[0], want)
    np.testing.assert_allclose(mutagrad.grad(penalised)(w, data, gamma=gamma), want)
    np.testing.assert_allclose(mutagrad.value_and_grad(penalised)(w, data, gamma=gamma)[1], want)
    out, vjp_fn = mutagrad.vjp(penalised, w, data, gamma=gamma)
    assert out == pytest.approx(val)
    np.testing.assert_allclose(vjp_fn(1.0)[0], want)

    def scaled(x, scale=1.0):
        return scale * x**2

    (jz,) = mutagrad.jacobian(scaled, X, scale=2.0)
    np.testing.assert_allclose(jz, np.diag(4 * X))
    np.testing.assert_allclose(mutagrad.jacrev(scaled)(X, scale=2.0), np.diag(4 * X))
    (j,) = mutagrad.withjacobian(scaled, X, scale=2.0).grad
    np.testing.assert_allclose(j, np.diag(4 * X))

    def cubes(x, power=2):
        return np.sum(x**power)

    np.testing.assert_allclose(mutagrad.hessian(cubes, X, power=3), np.diag(6 * X))
    np.testing.assert_allclose(mutagrad.hessian_reverse(cubes, X, power=3), np.diag(6 * X))
    np.testing.assert_allclose(mutagrad.hessian(cubes)(X, power=3), np.diag(6 * X))
    np.testing.assert_allclose(mutagrad.diaghessian(cubes, X, power=3)[0], 6 * X)


def test_keyword_arguments_are_not_differentiated_even_when_they_are_arrays():
    seen = []

    def f(x, *, weights):
        seen.append(mutagrad.is_traced(weights))
        return np.sum(x * weights)

    (g,) = mutagrad.gradient(f, X, weights=np.array([1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(g, [1.0, 0.0, 2.0])
    assert seen == [False]


# -- vjp ---------------------------------------------------------------------------


def test_vjp_returns_the_value_and_a_function_of_the_cotangent():
    a = RNG.standard_normal((2, 3))
    out, vjp_fn = mutagrad.vjp(lambda a, x: a @ x, a, X)
    np.testing.assert_allclose(out, a @ X)
    ct = np.array([1.0, -2.0])
    ga, gx = vjp_fn(ct)
    np.testing.assert_allclose(ga, np.outer(ct, X))
    np.testing.assert_allclose(gx, a.T @ ct)
    ga2, _ = vjp_fn(2 * ct)  # callable again
    np.testing.assert_allclose(ga2, 2 * np.outer(ct, X))


def test_vjp_gives_a_tuple_for_one_primal_and_zeros_for_unused_ones():
    out, vjp_fn = mutagrad.vjp(np.sin, X)
    np.testing.assert_allclose(out, np.sin(X))
    (g,) = vjp_fn(np.ones(3))
    np.testing.assert_allclose(g, np.cos(X))
    _, vjp_fn = mutagrad.vjp(lambda x, unused: x * 2.0, X, np.ones(2))
    gx, gu = vjp_fn(np.ones(3))
    np.testing.assert_array_equal(gx, np.full(3, 2.0))
    np.testing.assert_array_equal(gu, np.zeros(2))


def test_vjp_with_aux_and_a_cotangent_of_the_wrong_shape():
    out, vjp_fn, aux = mutagrad.vjp(lambda x: (x**2, np.sum(x)), X, has_aux=True)
    np.testing.assert_allclose(out, X**2)
    assert aux == pytest.approx(6.0)
    np.testing.assert_allclose(vjp_fn(np.ones(3))[0], 2 * X)
    with pytest.raises(mutagrad.MutagradError, match=r"shaped like the output of f, \(3,\)"):
        vjp_fn(np.ones(4))


# -- jacrev / jacobian -------------------------------------------------------------


def test_jacrev_has_the_shape_out_shape_plus_in_shape():
    a = RNG.standard_normal((4, 3))
    j = mutagrad.jacrev(lambda x: a @ x)(X)
    assert j.shape == (4, 3)
    np.testing.assert_allclose(j, a)
    x2 = RNG.standard_normal((2, 3))
    j2 = mutagrad.jacrev(lambda x: x**2)(x2)
    assert j2.shape == (2, 3, 2, 3)
    want = np.zeros((2, 3, 2, 3))
    for i in range(2):
        for k in range(3):
            want[i, k, i, k] = 2 * x2[i, k]
    np.testing.assert_allclose(j2, want)


def test_jacrev_of_a_scalar_output_is_shaped_like_the_input_and_of_a_number_like_the_output():
    x2 = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(mutagrad.jacrev(lambda x: np.sum(x**2))(x2), 2 * x2)
    j = mutagrad.jacrev(lambda t: t * X)(2.0)
    assert j.shape == (3,)
    np.testing.assert_allclose(j, X)


def test_jacrev_over_several_arguments_and_jacobian_is_the_same_transform():
    def f(a, b):
        return a[:, None] * b[None, :]  # shape (3, 2)

    b = np.array([10.0, 20.0])
    ja, jb = mutagrad.jacrev(f, argnums=(0, 1))(X, b)
    assert ja.shape == (3, 2, 3) and jb.shape == (3, 2, 2)
    for i in range(3):
        for k in range(2):
            np.testing.assert_allclose(ja[i, k], np.eye(3)[i] * b[k])
            np.testing.assert_allclose(jb[i, k], np.eye(2)[k] * X[i])
    ja2, jb2 = mutagrad.jacobian(f, argnums=(0, 1))(X, b)
    np.testing.assert_array_equal(ja2, ja)
    np.testing.assert_array_equal(jb2, jb)


def test_jacobian_with_arguments_is_zygotes_and_the_two_faces_agree():
    x2 = RNG.standard_normal((2, 3))

    def f(x):
        return np.cumsum(x, axis=1) * x

    (zygote,) = mutagrad.jacobian(f, x2)
    assert zygote.shape == (6, 6)
    np.testing.assert_allclose(mutagrad.jacobian(f)(x2).reshape(6, 6), zygote)
    with pytest.raises(TypeError, match="Zygote's form"):
        mutagrad.jacobian(f, x2, argnums=0)


def test_jacrev_with_aux():
    j, aux = mutagrad.jacrev(lambda x: (x * 3.0, "note"), has_aux=True)(X)
    np.testing.assert_allclose(j, 3 * np.eye(3))
    assert aux == "note"


# -- hessian ---------------------------------------------------------------------------


def test_hessian_transform_has_the_shape_x_shape_plus_x_shape():
    x2 = np.array([[1.0, 2.0], [3.0, 4.0]])
    h = mutagrad.hessian(lambda x: np.sum(x**3))(x2)
    assert h.shape == (2, 2, 2, 2)
    want = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for k in range(2):
            want[i, k, i, k] = 6 * x2[i, k]
    np.testing.assert_allclose(h, want)
    # Zygote's form of the same: a square matrix of side x.size.
    np.testing.assert_allclose(mutagrad.hessian(lambda x: np.sum(x**3), x2), want.reshape(4, 4))


def test_hessian_over_several_arguments_gives_every_block():
    def f(x, y, unused):
        return np.sum(x**2) * y**3

    y = 2.0
    blocks = mutagrad.hessian(f, argnums=(0, 1, 2))(X, y, np.ones(2))
    (hxx, hxy, hxu), (hyx, hyy, hyu), (hux, huy, huu) = blocks
    np.testing.assert_allclose(hxx, 2 * y**3 * np.eye(3))
    np.testing.assert_allclose(hxy, 6 * X * y**2)  # shape (3,) + ()
    np.testing.assert_allclose(hyx, hxy)
    assert hyy == pytest.approx(6 * y * np.sum(X**2)) and isinstance(hyy, float)
    assert hxu.shape == (3, 2) and huy.shape == (2,) and huu.shape == (2, 2)
    assert not (hxu.any() or hyu.any() or hux.any() or huy.any() or huu.any())


def test_hessian_agrees_with_grad_of_grad_and_with_finite_differences():
    def f(x):
        y = np.empty_like(x)  # a buffer filled in place
        for i in range(len(x)):
            y[i] = np.sin(x[i]) * x[(i + 1) % len(x)]
        return np.sum(y**2)

    h = mutagrad.hessian(f)(X)
    np.testing.assert_allclose(h, h.T, atol=1e-12)
    eps = 1e-5
    gradient_of_f = mutagrad.grad(f)
    numeric = np.stack(
        [(gradient_of_f(X + eps * e) - gradient_of_f(X - eps * e)) / (2 * eps) for e in np.eye(3)]
    )
    np.testing.assert_allclose(h, numeric, rtol=1e-6, atol=1e-8)
    assert mutagrad.grad(mutagrad.grad(lambda t: t**3))(2.0) == pytest.approx(12.0)


def test_zygotes_hessian_refuses_several_arguments_and_points_at_argnums():
    with pytest.raises(TypeError, match=r"hessian\(f, argnums="):
        mutagrad.hessian(lambda x, y: np.sum(x * y), X, X)


def test_transforms_nest_inside_a_gradient_call():
    def outer(x):
        return x * mutagrad.grad(lambda y: x * y**2)(x)  # x * 2x²

    assert mutagrad.grad(outer)(3.0) == pytest.approx(6 * 3.0**2)
    (g,) = mutagrad.gradient(lambda v: np.sum(mutagrad.jacrev(lambda u: u * v)(v)), X)
    np.testing.assert_allclose(g, np.ones(3))


# -- results without a derivative --------------------------------------------------


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("gradient", lambda f: mutagrad.gradient(f, X)),
        ("withgradient", lambda f: mutagrad.withgradient(f, X)),
        ("grad", lambda f: mutagrad.grad(f)(X)),
        ("value_and_grad", lambda f: mutagrad.value_and_grad(f)(X)),
        ("hessian", lambda f: mutagrad.hessian(f)(X)),
        ("hessian", lambda f: mutagrad.hessian(f, X)),
        ("hessian_reverse", lambda f: mutagrad.hessian_reverse(f, X)),
        ("diaghessian", lambda f: mutagrad.diaghessian(f, X)),
        ("jacrev", lambda f: mutagrad.jacrev(f)(X)),
        ("jacobian", lambda f: mutagrad.jacobian(f, X)),
    ],
)
@pytest.mark.parametrize(
    ("result", "kind"),
    [(lambda x: np.sum(x) > 0, "a bool"), (lambda x: np.argmax(x), "an int64")],
)
def test_a_boolean_or_integer_result_raises_naming_the_function_called(name, call, result, kind):
    with pytest.raises(mutagrad.NotDifferentiableError) as raised:
        call(result)
    message = str(raised.value)
    assert re.match(f"{name} needs f to return (a )?floating-point", message)
    assert kind in message and "Fix:" in message


# -- the same programs as Zygote's gradient ------------------------------------------


def _zeros_for_none(grads, args):
    return [np.zeros(np.shape(a)) if g is None else g for g, a in zip(grads, args)]


@pytest.mark.parametrize("program", CORPUS, ids=[p.name for p in CORPUS])
def test_grad_differentiates_the_corpus_as_zygotes_gradient_does(program):
    numeric = [i for i, a in enumerate(program.args) if isinstance(a, (float, np.ndarray))]
    if not numeric:
        pytest.skip("no floating-point argument")
    try:
        want = mutagrad.gradient(program.function, *program.args)
    except mutagrad.MutagradError as error:
        with pytest.raises(type(error)):
            mutagrad.grad(program.function, argnums=tuple(numeric))(*program.args)
        return
    got = mutagrad.grad(program.function, argnums=tuple(numeric))(*program.args)
    expected = _zeros_for_none([want[i] for i in numeric], [program.args[i] for i in numeric])
    for g, w in zip(got, expected):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_vjps_aux_is_a_copy_so_writing_it_cannot_change_the_cotangents():
    # aux is the argument itself, whose memory np.sin saved for the pullback.
    out, vjp_fn, aux = mutagrad.vjp(lambda x: (np.sum(np.sin(x)), x), X, has_aux=True)
    assert out == pytest.approx(np.sum(np.sin(X)))
    aux[:] = 100.0
    np.testing.assert_allclose(vjp_fn(1.0)[0], np.cos(X))


def test_pullbacks_outputs_are_copies_where_the_pullback_reads_their_memory():
    (y, total), back = mutagrad.pullback(lambda x: (x, np.sum(np.sin(x))), X)
    assert total == pytest.approx(np.sum(np.sin(X)))
    y[:] = 100.0  # y is x, which np.sin saved: a copy is returned, so this changes nothing
    np.testing.assert_allclose(back((None, 1.0))[0], np.cos(X))
    out, vjp_fn = mutagrad.vjp(lambda x: (x, np.sum(np.sin(x))), X)
    out[0][:] = 100.0
    np.testing.assert_allclose(vjp_fn((np.zeros(3), 1.0))[0], np.cos(X))


@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1)])
def test_an_output_of_one_element_counts_as_the_scalar(shape):
    # As autograd and PyTorch take it (JAX raises): np.sum(..., keepdims=True).
    x = np.array([[0.1, 0.2, 0.3]])

    def f(x):
        return np.reshape(np.sum(np.sin(x)), shape)

    np.testing.assert_allclose(mutagrad.grad(f)(x), np.cos(x))
    value, grad = mutagrad.value_and_grad(f)(x)
    assert np.shape(value) == shape
    np.testing.assert_allclose(grad, np.cos(x))
    np.testing.assert_allclose(mutagrad.gradient(f, x)[0], np.cos(x))
    second = mutagrad.grad(lambda x: np.sum(mutagrad.grad(f)(x)))(x)
    np.testing.assert_allclose(second, -np.sin(x))
    with pytest.raises(mutagrad.MutagradError, match=r"shape \(3,\)"):
        mutagrad.grad(lambda x: np.sin(x[0]))(x)
