"""Forward mode (issue 23): jvp, jacfwd, linearize, forward_jacobian, defjvp.

Every result is checked against two oracles: reverse mode (``jacrev``) and
central finite differences; every value against numpy's, bit for bit. Every
write path writes after the tangent of the written array was formed.
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad as mg
from mutagrad.testing.finite_differences import directional_derivative

RNG = np.random.default_rng(23)
X = RNG.uniform(0.5, 1.5, 6)


def check_forward_mode(f, x=X, rtol=1e-9):
    """jacfwd(f)(x) == jacrev(f)(x); jvp along a random v == J v == finite differences;
    the value at the forward level is numpy's, bit for bit; the argument is untouched."""
    before = x.copy()
    expected = f(x.copy())
    jr = mg.jacrev(f, mode="snapshot")(x)  # (snapshot: poison mode refuses some of them)
    jf = mg.jacfwd(f)(x)
    np.testing.assert_allclose(jf, jr, rtol=rtol, atol=1e-12)
    v = RNG.normal(size=np.shape(x))
    out, t = mg.jvp(f, (x,), (v,))
    np.testing.assert_array_equal(out, expected, strict=True)
    np.testing.assert_allclose(t, np.tensordot(jr, v, axes=np.ndim(x)), rtol=rtol, atol=1e-12)
    w = RNG.normal(size=np.shape(expected))
    fd = directional_derivative(lambda z: float(np.sum(f(z) * w)), [x], 0, v)
    np.testing.assert_allclose(np.sum(t * w), fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(x, before)
    return jf


# -- programs ----------------------------------------------------------------------------


def loop_program(x):
    y = np.zeros_like(x)
    for i in range(len(x)):
        y[i] = x[i] * (y[i - 1] if i else 1.0) + np.sin(x[i])
    return y


PROGRAMS = {
    "ufuncs": lambda x: np.sin(x) * x + np.exp(-x) / (1 + x**2),
    "power": lambda x: x**x,
    "reductions": lambda x: np.concatenate(
        [np.sum(x.reshape(2, 3) ** 2, axis=0), np.mean(x, keepdims=True), np.prod(x, keepdims=True)]
    ),
    "extrema": lambda x: np.max(x.reshape(3, 2), axis=1) - np.min(x),
    "var_std": lambda x: np.var(x.reshape(2, 3), axis=1) + np.std(x),
    "cumulative": lambda x: np.cumsum(x) * np.cumprod(x),
    "matmul": lambda x: (x.reshape(2, 3) @ x.reshape(3, 2)).ravel(),
    "matvec": lambda x: x.reshape(2, 3) @ x[:3],
    "dot_outer": lambda x: np.dot(x, x) * np.outer(x[:2], x[2:4]).ravel(),
    "einsum": lambda x: np.einsum("ij,jk->ik", x.reshape(2, 3), x.reshape(3, 2)).ravel(),
    "tensordot": lambda x: np.tensordot(x.reshape(2, 3), x.reshape(3, 2), axes=1).ravel(),
    "views": lambda x: x.reshape(2, 3).T.ravel() * x[::-1],
    "stack": lambda x: np.stack([x, x * 2], axis=1).ravel(),
    "where_clip": lambda x: np.where(x > 1, x**2, x) + np.clip(x, 0.8, 1.2),
    "gathers": lambda x: np.take(x, [0, 0, 5]) + np.sort(x * x[::-1])[:3] + np.roll(x, 2)[:3],
    "linalg": lambda x: np.linalg.solve(np.diag(x[:3]) + 1, x[3:])
    + np.linalg.det(x[:4].reshape(2, 2))
    + np.linalg.inv(np.outer(x[:2], x[2:4]) + np.eye(2)).ravel()[:3],
    "norm": lambda x: np.linalg.norm(x) * x + np.linalg.norm(x.reshape(2, 3), axis=1).sum(),
    "slogdet": lambda x: np.linalg.slogdet(x[:4].reshape(2, 2) + 2 * np.eye(2))[1] * x,
    "loop": loop_program,
    "factorizations": lambda x: _factorizations(x),
}


def _factorizations(x):
    m = np.zeros_like(x, shape=(3, 3))
    m[np.triu_indices(3)] = x  # numpy reads one triangle: the other holds its own values
    m[np.tril_indices(3, -1)] = 0.1 * x[:3]
    a = m + 4 * np.eye(3)
    values, vectors = np.linalg.eigh(a)
    return np.concatenate([np.linalg.cholesky(a).ravel(), values, (vectors * vectors[0]).ravel(),
                           np.linalg.cholesky(a, upper=True)[0]])  # fmt: skip


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_agree_with_reverse_mode_and_differences(name):
    check_forward_mode(PROGRAMS[name])


# -- every write path, after the written array's tangent was formed -----------------------


def _setitem(x):
    y = x * 2.0
    y[1:4] = x[:3] ** 2
    y[0] = np.sin(x[5])
    y[5] = 0.0  # a constant written over a tangent: zeros there
    return y * x


def _augmented(x):
    y = x.copy()
    y += x**2
    y[2] *= 3.0
    y[3:] -= y[:3]
    y /= 1 + x
    return y


def _through_views(x):
    y = x.copy().reshape(2, 3)
    row = y[0]
    row[1] = 5.0
    y[1] *= y[0]
    y.T[0] = x[:2]
    return y.ravel()


def _out(x):
    y = np.empty_like(x)
    np.multiply(x, x, out=y)
    np.sin(y, out=y)  # input and output the same array
    np.add(y[:3], x[3:], out=y[3:])
    return y


def _add_at(x):
    y = x * 1.0
    np.add.at(y, [0, 0, 3], x[:3])
    np.subtract.at(y, [5, 5], x[4:])
    return y


def _put(x):
    y = x.copy()
    np.put(y, [1, 4], x[:2] ** 2)
    return y


def _copyto(x):
    y = x.copy()
    np.copyto(y, x**3, where=x > 1)
    return y


def _place(x):
    y = x * 1.0
    np.place(y, x > 1, x[:2] * 7.0)
    return y


def _fill_diagonal(x):
    y = np.outer(x[:3], x[3:])
    np.fill_diagonal(y, x[:3])
    return y.ravel()


def _sort_in_place(x):
    y = x * x[::-1]
    y.sort()
    return y


def _fancy_repeats(x):
    y = x.copy()
    y[[0, 0, 2]] = x[3:]  # numpy's last write wins
    y[x > 1] = 2.0 * x[x > 1]
    return y


def _fill(x):
    y = x * 2
    y[:2].fill(3.0)
    return y + x


def _buffer(x):
    b = mg.Buffer(x)
    for i in range(len(x)):
        b[i] = x[i] ** 2 + (b[i - 1] if i else 0.0)
    return b.copy() * 1.0


def _shifted(x):
    y = x * 1.0
    y[1:] = y[:-1]  # an overlapping copy: read before it is written
    return y * x


def _argument_copy_updated(x):
    x = x.copy()
    for _ in range(3):
        x[1:] += 0.5 * x[:-1] ** 2
    return x


def _flat(x):
    y = x * 2
    y.flat[[1, 3]] = x[:2] ** 2
    return y


def _out_where(x):
    y = x.copy()
    np.multiply(x, x, out=y, where=x > 1)
    return y


def _ufunc_methods(x):
    y = x * 1.0
    np.multiply.at(y, [0, 0, 2], x[3:])  # applied in rounds, each through multiply's rule
    return np.concatenate([np.add.reduce(y.reshape(2, 3), axis=1), np.multiply.accumulate(y)])


WRITES = {
    f.__name__.strip("_"): f
    for f in (_setitem, _augmented, _through_views, _out, _add_at, _put, _copyto, _place,
              _fill_diagonal, _sort_in_place, _fancy_repeats, _fill, _buffer, _shifted,
              _argument_copy_updated, _flat, _out_where, _ufunc_methods)
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(WRITES))
def test_every_write_writes_its_tangent(name):
    check_forward_mode(WRITES[name])


def test_a_write_poison_mode_refuses_is_differentiated_forward():
    def f(x):
        y = x.copy()
        z = np.sin(y)  # sin's vjp reads y...
        y[0] = 2.0  # ...which this write overwrites: poison mode refuses the gradient
        return z * y

    with pytest.raises(mg.PoisonedCaptureError):
        mg.jacrev(f)(X)
    jf = mg.jacfwd(f)(X)
    np.testing.assert_allclose(jf, mg.jacrev(f, mode="snapshot")(X), rtol=1e-12)
    _, t = mg.jvp(f, (X,), (np.ones(6),))
    np.testing.assert_allclose(t, jf.sum(axis=1), rtol=1e-12)


def test_the_callers_arrays_are_not_written():
    x, v = X.copy(), np.ones(6)

    def f(x):
        x += 1.0  # the caller's array is borrowed: the write goes to a copy
        return x * x

    _, t = mg.jvp(f, (x,), (v,))
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(v, np.ones(6))
    np.testing.assert_allclose(t, 2 * (X + 1))


def test_the_callers_tangents_are_lent_not_written():
    # A caller's tangent is lent to the level (copied on the first write into its
    # argument), read-only while f runs and writeable again after.
    x, v = X.copy(), RNG.normal(size=6)
    kept = v.copy()

    def f(x):
        x[2] = 5.0  # the argument's value and tangent are copied here
        return x * x

    _, t = mg.jvp(f, (x,), (v,))
    np.testing.assert_array_equal(v, kept)
    assert v.flags.writeable and x.flags.writeable
    expected = 2 * X * kept
    expected[2] = 0.0
    np.testing.assert_allclose(t, expected)
    _, same = mg.jvp(lambda x: x, (x,), (v,))
    assert not np.shares_memory(same, v)  # the caller gets its own tangent back
    _, both = mg.jvp(lambda x: x * x, (x,), (x,))  # one array as primal and tangent
    np.testing.assert_allclose(both, 2 * X * X)
    assert x.flags.writeable


def test_a_tangent_written_while_f_runs_is_refused():
    x, v = X.copy(), np.ones(6)
    outside = v[:]  # a view made before the call

    def through_a_view(x):
        outside[0] = 9.0
        return x * x

    with pytest.raises(mg.NotDifferentiableError, match="a tangent passed to the call changed"):
        mg.jvp(through_a_view, (x,), (v,))
    assert v.flags.writeable
    v[0] = 1.0

    def by_name(x):
        v[1] = 9.0  # read-only while f runs
        return x * x

    with pytest.raises(mg.NotDifferentiableError, match="f wrote into a read-only array"):
        mg.jvp(by_name, (x,), (v,))
    np.testing.assert_array_equal(v, np.ones(6))
    assert v.flags.writeable


# -- the transforms -------------------------------------------------------------------


def test_jvp_takes_pytrees_and_several_arguments():
    def f(p, scale):
        return {"y": p["a"] * p["b"][0] * scale, "z": np.sum(p["b"][0]) * p["b"][1]}

    primals = ({"a": X[:3], "b": (X[3:], 2.0)}, 3.0)
    tangents = ({"a": np.ones(3), "b": (np.zeros(3), 1.0)}, 0.5)
    out, t = mg.jvp(f, primals, tangents)
    y = X[:3] * X[3:] * 3.0
    np.testing.assert_allclose(out["y"], y)
    np.testing.assert_allclose(t["y"], X[3:] * 3.0 + X[:3] * X[3:] * 0.5)
    assert t["z"] == pytest.approx(np.sum(X[3:]))


def test_jacfwd_argnums_and_has_aux():
    def f(a, b):
        return a * b[0] + np.sin(b), a.sum()

    jac, aux = mg.jacfwd(f, argnums=(0, 1), has_aux=True)(X[:3], X[3:])
    ja, jb = mg.jacrev(lambda a, b: f(a, b)[0], argnums=(0, 1))(X[:3], X[3:])
    np.testing.assert_allclose(jac[0], ja)
    np.testing.assert_allclose(jac[1], jb)
    assert aux == pytest.approx(X[:3].sum())


def test_jacfwd_in_chunks_equals_one_pass():
    from mutagrad.forward import _jacobians

    f = PROGRAMS["matmul"]
    _, (whole,) = _jacobians(f, [X], "jacfwd")
    _, (chunked,) = _jacobians(f, [X], "jacfwd", chunk=4)
    np.testing.assert_array_equal(whole, chunked)


def test_linearize_keeps_the_point():
    x = X.copy()
    out, f_jvp = mg.linearize(loop_program, x)
    x[:] = 0.0  # a later change to the caller's array does not move the point
    np.testing.assert_array_equal(out, loop_program(X.copy()))
    v = RNG.normal(size=6)
    np.testing.assert_allclose(f_jvp(v), mg.jacrev(loop_program)(X) @ v, rtol=1e-12)


def test_forward_jacobian_is_zygotes_layout():
    y, j = mg.forward_jacobian(PROGRAMS["matmul"], X)
    np.testing.assert_array_equal(y, PROGRAMS["matmul"](X.copy()))
    np.testing.assert_allclose(j, mg.jacobian(PROGRAMS["matmul"], X)[0].T, rtol=1e-12)


def test_forward_over_reverse_is_the_hessian():
    def f(x):
        y = x.copy()
        y[1:] *= y[:-1]
        return np.sum(np.sin(y) * x)

    v = RNG.normal(size=6)
    _, hv = mg.jvp(mg.grad(f), (X,), (v,))
    h = mg.hessian_reverse(f, X)
    np.testing.assert_allclose(hv, h @ v, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mg.jacfwd(mg.jacrev(f))(X), h, rtol=1e-10, atol=1e-12)


def test_reverse_over_forward_and_forward_over_forward():
    def f(x):
        y = x * 1.0
        y[2:] += np.sin(x[:-2]) * x[2:]  # (a write that poisons nothing the levels save)
        return np.sum(y**3)

    h = mg.hessian_reverse(f, X)
    v = RNG.normal(size=6)
    # reverse over forward: the gradient of the directional derivative is H v
    np.testing.assert_allclose(mg.grad(lambda x: mg.jvp(f, (x,), (v,))[1])(X), h @ v, rtol=1e-10)
    # forward over forward: the directional derivative of the directional derivative
    _, vhv = mg.jvp(lambda x: mg.jvp(f, (x,), (v,))[1], (X,), (v,))
    assert vhv == pytest.approx(v @ h @ v, rel=1e-10)


# -- user rules and refusals -----------------------------------------------------------


def test_defjvp_gives_a_primitive_a_forward_rule():
    @mg.primitive
    def cube(x):
        return x**3

    mg.defvjp(cube, lambda g, ans, x: 3 * x**2 * g)
    with pytest.raises(mg.MissingRuleError, match="defjvp\\(cube"):
        mg.jvp(cube, (X,), (np.ones(6),))
    mg.defjvp(cube, lambda t, ans, x: 3 * x**2 * t)
    np.testing.assert_allclose(mg.jacfwd(lambda x: cube(x) * x)(X),
                               mg.jacrev(lambda x: cube(x) * x)(X))  # fmt: skip


def test_defjvp_needs_the_vjp_rule_first():
    @mg.primitive
    def square(x):
        return x * x

    with pytest.raises(mg.MutagradError, match="defvjp"):
        mg.defjvp(square, lambda t, ans, x: 2 * x * t)


def test_an_rrule_works_forward_by_transposing_its_pullback():
    @mg.primitive
    def scaled_cumsum(x, s):
        return np.cumsum(x) * s

    @mg.rrule(scaled_cumsum)
    def scaled_cumsum_rule(x, s):
        y = np.cumsum(x)

        def back(g):  # ChainRules' form: the function's own cotangent first
            return mg.NoTangent(), np.cumsum((g * s)[::-1])[::-1], np.sum(g * y)

        return y * s, back

    def f(x):
        return scaled_cumsum(x[:4], x[4]) * x[5]

    check_forward_mode(f)


def test_an_rrule_whose_pullback_writes_a_raw_array_works_forward_row_by_row():
    @mg.primitive
    def twice(x):
        return 2 * x

    @mg.rrule(twice)
    def twice_rule(x):
        def back(g):
            out = np.zeros(6)  # a raw array written with the cotangent: not traceable
            out[:] = 2 * g
            return (out,)

        return 2 * x, back

    check_forward_mode(lambda x: twice(x) * x)
    # under another level (a Hessian through it) an rrule is refused by name
    with pytest.raises(mg.MutagradError, match="twice"):
        mg.jvp(mg.grad(lambda x: np.sum(twice(x) ** 2)), (X,), (np.ones(6),))


def test_an_rrule_whose_pullback_is_malformed_is_refused_by_name():
    @mg.primitive
    def halved(x):
        return x / 2

    @mg.rrule(halved)
    def halved_rule(x):
        return x / 2, lambda g: (g / 2, g / 2)  # two cotangents for one argument

    with pytest.raises(mg.MissingForwardRuleError, match="halved"):
        mg.jvp(lambda x: halved(x) + x, (X,), (np.ones(6),))


def test_jacfwd_of_an_integer_result_of_an_integer_argument_is_jacrevs():
    x = np.array([7, 11])
    f = lambda x: np.sum(x**2)  # noqa: E731
    np.testing.assert_array_equal(mg.jacfwd(f)(x), mg.jacrev(f)(x))
    np.testing.assert_array_equal(mg.jacfwd(f)(x), [14.0, 22.0])
    with pytest.raises(mg.NotDifferentiableError, match="integer or boolean"):
        mg.jacfwd(lambda x: np.sum(x > 1.0))(X)


def test_a_rule_not_written_for_complex_values_is_refused_by_name_as_in_reverse_mode():
    z = X + 1j * X[::-1]
    with pytest.raises(mg.NotDifferentiableError, match=r"np\.vecdot has no derivative rule for "
                       "complex values"):  # fmt: skip
        mg.jvp(lambda z: np.vecdot(z, z), (z,), (z,))
    with pytest.raises(mg.NotDifferentiableError, match=r"np\.vecdot"):
        mg.grad(lambda z: np.abs(np.vecdot(z, z)))(z)


def test_hook_passes_the_tangent_and_checkpointed_runs_its_function():
    f = lambda x: mg.hook(lambda g: g * 10, x * 2) * x  # noqa: E731
    np.testing.assert_allclose(mg.jvp(f, (X,), (np.ones(6),))[1], 4 * X)
    g = lambda x: mg.checkpointed(lambda z: np.sin(z) * z, x)  # noqa: E731
    check_forward_mode(g)


def test_conversions_are_refused_as_in_reverse_mode():
    with pytest.raises(mg.TracerConversionError):
        mg.jvp(lambda x: float(x[0]) * x, (X,), (np.ones(6),))


# -- second order, and a forward block inside reverse -----------------------------------


def _mutating_loss(x):
    y = x.copy()
    y[1:] *= y[:-1]
    return np.sum(np.sin(y) * x)


def test_hessian_and_hvp_are_forward_over_reverse_with_reverse_over_reverse_values():
    h = mg.hessian_reverse(_mutating_loss, X)
    np.testing.assert_allclose(mg.hessian(_mutating_loss, X), h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mg.hessian(_mutating_loss)(X), h, rtol=1e-10, atol=1e-12)
    v = RNG.normal(size=6)
    np.testing.assert_allclose(mg.hvp(_mutating_loss, (X,), (v,)), h @ v, rtol=1e-10)
    assert mg.hessian(lambda s: s**3, 2.0) == pytest.approx(12.0)


def test_hessian_falls_back_to_reverse_over_reverse_without_a_forward_rule():
    def f(x):
        return np.sum(np.pad(x, 1) ** 3)  # np.pad has no forward rule yet

    np.testing.assert_allclose(mg.hessian(f, X), mg.hessian_reverse(f, X), rtol=1e-12)
    v = np.ones(6)
    np.testing.assert_allclose(mg.hvp(f, (X,), (v,)), mg.hessian_reverse(f, X) @ v, rtol=1e-12)


def test_forwarddiff_is_f_with_its_jacobian_in_the_pullback():
    def block(z):
        y = np.empty_like(z)
        y[0] = np.sin(z[0])
        for i in range(1, len(z)):  # writes poison mode would refuse to differentiate
            y[i] = y[i - 1] * np.sin(z[i])
            z[i] = 0.0
        return y

    def loss(w):
        return np.sum(mg.forwarddiff(block, w * 1.0) ** 2)

    np.testing.assert_allclose(mg.grad(loss)(X),
                               mg.grad(lambda w: np.sum(block(w * 1.0) ** 2), mode="snapshot")(X),
                               rtol=1e-12)  # fmt: skip
    np.testing.assert_array_equal(mg.forwarddiff(np.sin, X), np.sin(X))


def test_forwarddiff_refuses_what_it_would_lose():
    def closes_over(w):
        c = w[0] * 2
        return np.sum(mg.forwarddiff(lambda z: z * c, w))

    with pytest.raises(mg.NotDifferentiableError, match="other than x"):
        mg.grad(closes_over)(X)
    with pytest.raises(mg.NotDifferentiableError, match="second derivative"):
        mg.hessian_reverse(lambda w: np.sum(mg.forwarddiff(np.sin, w)), X)


def test_a_missing_forward_rule_is_its_own_error_class():
    @mg.primitive
    def halved(x):
        return x / 2

    mg.defvjp(halved, lambda g, ans, x: g / 2, reads=((),))
    with pytest.raises(mg.MissingForwardRuleError):
        mg.jvp(halved, (X,), (X,))
    assert issubclass(mg.MissingForwardRuleError, mg.MissingRuleError)


def test_a_value_with_a_tangent_used_in_another_thread_is_refused():
    import threading

    def f(x):
        box = []
        worker = threading.Thread(target=lambda: box.append(np.cos(x)))
        worker.start()
        worker.join()
        return x * 2  # (box[0] would be a constant: its tangent lost)

    with pytest.raises(mg.NotDifferentiableError, match="thread"):
        mg.jvp(f, (X,), (np.ones(6),))


def test_forward_over_reverse_through_a_value_the_inner_function_closes_over():
    # The inner gradient depends on z only through the closure: z is a constant of the inner
    # tape, saved by its pullback, and its tangent must reach the sweep (it gave 0 before).
    x = np.array([0.3, 1.2, -0.5])
    t = np.array([1.0, 2.0, 3.0])

    def rolled(z):
        return mg.grad(lambda v: np.sum(np.roll(v, 1) * z * z[0]))(np.ones(3))

    h = 1e-6
    expected = (rolled(x + h * t) - rolled(x - h * t)) / (2 * h)
    np.testing.assert_allclose(mg.jvp(rolled, (x,), (t,))[1], expected, rtol=1e-7)
    np.testing.assert_allclose(mg.jacfwd(rolled)(x) @ t, expected, rtol=1e-7)
    np.testing.assert_allclose(mg.jacrev(rolled)(x) @ t, expected, rtol=1e-7)
