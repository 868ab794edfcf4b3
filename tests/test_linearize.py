"""linearize (issue 23): ``f`` runs once, ``f_jvp`` replays the recorded tangent steps.

Oracles: ``jvp`` of the same program (the same rules on the same values: equal
to rounding), central finite differences, and ``jacfwd`` for several
directions at once. Every program mutates; every value a recorded step reads
is overwritten afterwards, inside ``f`` or after ``linearize`` returned, and
``f``'s calls are counted.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mutagrad as mg
from mutagrad.testing.finite_differences import directional_derivative
from test_forward import loop_program as buffer_in_a_loop

RNG = np.random.default_rng(2323)
X = RNG.uniform(0.5, 1.5, 6)


def counted(f):
    def g(*args):
        g.calls += 1
        return f(*args)

    g.calls = 0
    return g


def check_linearize(f, x=X, rtol=1e-12):
    """f_jvp(t) == jvp's tangent == finite differences, f run once, several directions at once
    == jacfwd; the value is numpy's and the caller's array is untouched."""
    before = x.copy()
    g = counted(f)
    out, f_jvp = mg.linearize(g, x)
    assert f_jvp.reruns is None
    np.testing.assert_array_equal(out, f(x.copy()))
    directions = [RNG.normal(size=np.shape(x)) for _ in range(3)]
    got = [f_jvp(v) for v in directions]
    assert g.calls == 1  # f_jvp never ran f
    for v, t in zip(directions, got):
        want = mg.jvp(f, (x,), (v,))[1]
        np.testing.assert_allclose(t, want, rtol=rtol, atol=1e-13)
        w = RNG.normal(size=np.shape(out))
        fd = directional_derivative(lambda z, w=w: float(np.sum(f(z) * w)), [x], 0, v)
        np.testing.assert_allclose(np.sum(t * w), fd, rtol=1e-6, atol=1e-7)
    batch = f_jvp.batched(np.stack(directions))
    np.testing.assert_allclose(batch, np.stack(got), rtol=1e-12, atol=1e-13)
    eye = np.eye(np.size(x)).reshape((np.size(x), *np.shape(x)))
    jacobian = mg.jacfwd(f)(x)
    np.testing.assert_allclose(
        np.moveaxis(f_jvp.batched(eye), 0, -1).reshape(jacobian.shape), jacobian,
        rtol=1e-12, atol=1e-13,
    )  # fmt: skip
    np.testing.assert_array_equal(x, before)
    assert g.calls == 1
    return f_jvp


def copy_updated_in_place(x):
    y = x.copy()
    y *= x  # reads the old y and x
    y[1:] += y[:-1] ** 2  # overlapping read and write
    np.sin(y, out=y)  # out= aliasing the input the jvp reads
    return y * x


def view_written_after_read(x):
    y = x * 1.0
    v = y[1:4]
    s = np.tanh(v)  # tanh's jvp reads its output; sin's below reads v
    c = np.sin(v)
    v *= 10.0  # overwrites what both read
    y[:] = y**2
    return np.concatenate([s, c, v, y])


def sort_in_place(x):
    y = np.exp(x) * x[::-1]
    z = y * y  # reads y
    y.sort()
    return np.concatenate([y, z])


def add_at(x):
    y = x**2
    w = np.cos(y)  # reads y
    np.add.at(y, [0, 0, 3], x[:3])
    np.multiply.at(y, [1, 1], x[4])
    return y + w


def rows_of_a_matrix(x):
    m = np.outer(x, x[:3])
    for i in range(1, m.shape[0]):
        m[i] = np.tanh(m[i - 1]) * m[i]  # each row read, then the next written
    return m.ravel()


def constant_written_inside(x):
    k = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    a = np.tanh(x) * k  # multiply's jvp reads k
    k[:] = -1.0
    return a + np.sum(x * k)


@pytest.mark.parametrize(
    "f",
    [buffer_in_a_loop, copy_updated_in_place, view_written_after_read, sort_in_place, add_at,
     rows_of_a_matrix, constant_written_inside],
    ids=lambda f: f.__name__,
)  # fmt: skip
def test_f_jvp_is_jvp_and_finite_differences(f):
    check_linearize(f)


def test_a_matrix_argument_laid_out_in_fortran_order():
    a = np.asfortranarray(RNG.uniform(0.5, 1.5, (3, 4)))

    def f(a):
        b = a.T * 2.0  # a view of an F-ordered array: its tangent is laid out as it
        b[1] = np.sin(b[0]) * b[2]
        return (b @ a).ravel()

    check_linearize(f, a)


def test_values_changed_after_linearize_returned():
    """A traced array f kept, a constant traced array, the output and the caller's argument
    are written after linearize: the replay reads them as the steps saw them."""
    kept = []
    w = mg.array(np.array([0.5, 0.25, 2.0, 1.0, 3.0, 0.1]))

    def f(x):
        y = x * 2.0
        kept.append(y)
        return np.sin(y) * w

    x = X.copy()
    v = RNG.normal(size=6)
    want = mg.jvp(f, (x,), (v,))[1]
    out, f_jvp = mg.linearize(f, x)
    np.testing.assert_array_equal(f_jvp(v), want)
    kept[-1][:] = 100.0
    w[:] = 9.0
    out[:] = 3.0
    x[:] = 5.0
    np.testing.assert_array_equal(f_jvp(v), want)


def test_a_snapshot_of_a_nested_gradient_call():
    """grad inside linearize: the inner call's z *= z keeps a copy of z and of its tangent."""

    def inner(z):
        z = z * 1.0
        z *= z
        return np.sum(np.cos(z))

    def f(x):
        g = mg.grad(inner)(x)
        return g * x

    check_linearize(f, rtol=1e-11)


def test_linearize_inside_a_gradient_call_runs_f_again():
    v = RNG.normal(size=6)

    def directional(x):
        _, f_jvp = mg.linearize(lambda z: np.sum(np.sin(z) * z**2), x)
        assert f_jvp.reruns is not None
        return f_jvp(v)

    want = mg.hvp(lambda z: np.sum(np.sin(z) * z**2), (X,), (v,))
    np.testing.assert_allclose(mg.grad(directional)(X), want, rtol=1e-12)


def test_f_jvp_inside_a_gradient_call_runs_f_again():
    _, f_jvp = mg.linearize(buffer_in_a_loop, X)
    assert f_jvp.reruns is None
    # d/dt sum(J t) = J^T 1 = the gradient of sum(f)
    got = mg.grad(lambda t: np.sum(f_jvp(t)))(np.ones(6))
    np.testing.assert_allclose(got, mg.grad(lambda z: np.sum(buffer_in_a_loop(z)))(X), rtol=1e-12)


def test_an_rrule_in_f_runs_f_again_and_batched_refuses():
    @mg.primitive
    def cube(x):
        return x**3

    @mg.rrule(cube)
    def _cube_rule(x):
        return cube(x), lambda g: (3 * x**2 * g,)

    f = counted(lambda x: np.sum(cube(x) * x))
    _, f_jvp = mg.linearize(f, X)
    assert "rrule" in f_jvp.reruns
    v = RNG.normal(size=6)
    np.testing.assert_allclose(f_jvp(v), np.sum(4 * X**3 * v), rtol=1e-12)
    assert f.calls == 2  # (f ran again)
    with pytest.raises(mg.NotDifferentiableError, match=r"f_jvp\.batched"):
        f_jvp.batched(v[None])


def test_f_jvp_checks_its_tangents():
    _, f_jvp = mg.linearize(lambda x, y: x * y, X, X[::-1].copy())
    with pytest.raises(TypeError, match="one tangent per primal"):
        f_jvp(X)
    with pytest.raises(ValueError, match="shape"):
        f_jvp(X, X[:3])
    with pytest.raises(ValueError, match="leading axis of directions"):
        f_jvp.batched(X, X)
    with pytest.raises(ValueError, match="different numbers of directions"):
        f_jvp.batched(np.stack([X, X]), X[None])


def test_the_map_holds_what_the_steps_read():
    """An elementwise jvp keeps only what its vjps read: exp reads its output, not x."""
    x = RNG.normal(size=1000)
    _, f_jvp = mg.linearize(lambda z: np.exp(z) + 1.0, x)
    assert f_jvp.held_bytes() == x.nbytes  # exp's output; + 1.0 reads nothing


def fuzz_programs(count):
    from mutagrad.testing.fuzz import generate
    from mutagrad.testing.fuzz.cli import program_rng

    return [generate(program_rng(23, i), 12) for i in range(count)]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("program", fuzz_programs(120), ids=[str(i) for i in range(120)])
def test_the_fuzzers_programs(program):
    """The fuzzer's mutating programs: f_jvp equals jvp where jvp answers; f runs once."""
    inputs = program.fresh_inputs()
    directions = [RNG.normal(size=x.shape) for x in inputs]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            want = mg.jvp(program.fn, [x.copy() for x in inputs], directions)[1]
        except mg.MutagradError as error:
            with pytest.raises(type(error)):
                mg.linearize(program.fn, *[x.copy() for x in inputs])[1](*directions)
            return
        f = counted(program.fn)
        _, f_jvp = mg.linearize(f, *[x.copy() for x in inputs])
        got = f_jvp(*directions)
    if f_jvp.reruns is None:
        assert f.calls == 1
    else:  # the one fallback a fuzzer program reaches: a complex array's part view
        assert ".real or .imag" in f_jvp.reruns
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * max(1.0, abs(float(want))))


def test_a_complex_arrays_part_view_runs_f_again():
    """Writes through z.real are not recorded: f_jvp runs f again, with jvp's answer."""
    x = RNG.normal(size=5)
    v = RNG.normal(size=5)

    def f(a):
        z = a * 1j
        z.real[...] = a**2
        return np.sum(np.abs(z) ** 2)

    f = counted(f)
    _, f_jvp = mg.linearize(f, x)
    got = f_jvp(v)
    assert ".real or .imag" in f_jvp.reruns and f.calls == 2
    np.testing.assert_allclose(got, mg.jvp(f, (x,), (v,))[1], rtol=1e-12)
    np.testing.assert_allclose(got, np.sum((4 * x**3 + 2 * x) * v), rtol=1e-12)
