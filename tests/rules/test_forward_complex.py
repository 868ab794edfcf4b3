"""Forward mode with complex values (issue 23): complex tangents in JAX's convention.

The tangent of a complex value is complex, and ``jvp`` gives the derivative as
a real-linear map: along a complex direction ``t`` it is the limit of
``(f(z + h t) - f(z - h t)) / 2h``, holomorphic or not. Every case of
``test_complex.CASES`` (each rule marked for complex values in reverse mode)
is checked here in forward mode against that central difference of numpy and
against reverse mode through the pairing of JAX's convention,
``Re(sum(u * J t)) == Re(sum(vjp(u) * t))``; then the writes (a buffer filled
in a loop, the parts written through ``z.real``/``z.imag`` after a capture,
``+=`` on a copy of an argument), ``jacfwd(..., holomorphic=True)``, real
inputs with complex outputs, and forward over reverse through complex
intermediates.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_complex import CASES, HPD, ROW, M, Z, complex_array

import mutagrad as mg

# The rules forward mode may refuse by name, and why: every output's tangent is computed as
# the operation runs, so a factor with no derivative is refused even where the loss does not
# read it (reverse mode refuses it only when the loss reaches it): the extra columns of a
# complete QR's or a full SVD's factor of a non-square matrix are an arbitrary basis, and
# complex singular vectors have a phase numpy picks (their transposed pullback meets it).
BASIS, PHASE = "an arbitrary orthonormal basis", "changes with their phase"
MAY_REFUSE = {"linalg.qr": (BASIS,), "linalg.svd": (BASIS, PHASE)}


def _direction(x, rng):
    """A random direction for ``x``: complex for a complex value, real for a real one."""
    x = np.asarray(x)
    t = rng.standard_normal(x.shape)
    return t + 1j * rng.standard_normal(x.shape) if x.dtype.kind == "c" else t


def _central(function, args, directions, h):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (numpy's ComplexWarning of a cast, as in f itself)
        plus = function(*(a + h * t for a, t in zip(args, directions)))
        minus = function(*(a - h * t for a, t in zip(args, directions)))
    return (np.asarray(plus) - np.asarray(minus)) / (2 * h)


def _forward(function, args, directions):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mg.jvp(function, tuple(np.copy(a) for a in args), tuple(directions))


def _differentiable(args):
    return [a for a in args if np.asarray(a).dtype.kind in "fc"]


@pytest.mark.parametrize(
    ("name", "function", "args"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_every_complex_rule_forward_against_finite_differences_and_reverse(name, function, args):
    rng = np.random.default_rng(len(name) + 7)
    args = tuple(np.asarray(a) if isinstance(a, (complex, float)) else a for a in args)
    moving = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind in "fc"]
    directions = [_direction(a, rng) if i in moving else np.zeros_like(a)
                  for i, a in enumerate(args)]  # fmt: skip
    try:
        value, tangent = _forward(function, args, directions)
    except mg.MutagradError as error:
        assert name in MAY_REFUSE, error
        assert any(reason in str(error) for reason in MAY_REFUSE[name]), error
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected_value = function(*(np.copy(a) for a in args))
    np.testing.assert_array_equal(value, expected_value)  # numpy's values, bit for bit
    # Two steps: the rounding error of the smaller and the truncation error of the larger
    # bound the difference; the tangent must be within both's spread of the finer one.
    fine, coarse = (_central(function, args, directions, h) for h in (1e-6, 1e-4))
    scale = max(1.0, float(np.max(np.abs(fine), initial=0.0)))
    tolerance = 1e-5 * scale + 10 * float(np.max(np.abs(fine - coarse), initial=0.0))
    assert np.asarray(tangent).shape == np.shape(expected_value)
    assert np.max(np.abs(tangent - fine), initial=0.0) <= tolerance, (tangent, fine)
    # Reverse mode, paired with the tangent as JAX pairs them: Re(sum(u * J t)) for a random
    # output cotangent u (complex for a complex output) equals Re(sum(vjp(u) * t)).
    u = _direction(expected_value, rng)
    _, pullback = mg.vjp(function, *args)
    cotangents = pullback(u)
    paired_forward = np.real(np.sum(u * tangent))
    paired_reverse = sum(
        np.real(np.sum(np.asarray(cotangents[i]) * directions[i])) for i in moving
    )
    assert paired_forward == pytest.approx(paired_reverse, rel=1e-8, abs=1e-8 * scale)


# -- the non-holomorphic steps, one by one -----------------------------------------------


@pytest.mark.parametrize(
    ("f", "jvp"),
    [
        (np.conj, lambda z, t: np.conj(t)),
        (np.real, lambda z, t: np.real(t)),
        (np.imag, lambda z, t: np.imag(t)),
        (np.abs, lambda z, t: np.real(np.conj(z) * t) / np.abs(z)),
        (lambda z: np.abs(z) ** 2, lambda z, t: 2 * np.real(np.conj(z) * t)),
        (np.angle, lambda z, t: np.imag(t / z)),
        (np.sign, lambda z, t: 1j * np.imag(t / z) * z / np.abs(z)),
    ],
)
def test_the_derivative_as_a_real_linear_map(f, jvp):
    t = complex_array(Z.shape, seed=40)
    np.testing.assert_allclose(mg.jvp(f, (Z,), (t,))[1], jvp(Z, t), rtol=1e-12, atol=1e-14)


def test_the_tangent_of_a_real_value_is_real_and_a_complex_one_for_it_is_refused():
    x = np.array([0.5, -1.0])
    _, t = mg.jvp(lambda x: np.abs(np.exp(1j * x) * (x + 2j)), (x,), (np.ones(2),))
    assert t.dtype == np.float64
    with pytest.raises(TypeError, match=r"complex tangent .* for a real primal"):
        mg.jvp(np.sin, (x,), (np.ones(2) * 1j,))
    # a complex primal takes a real tangent (a real direction), cast
    _, t = mg.jvp(np.square, (ROW,), (np.ones(3),))
    np.testing.assert_allclose(t, 2 * ROW)


# -- writes: tangents written beside complex values ---------------------------------------


def _fill(z):
    out = np.zeros_like(z)  # a complex buffer, filled element by element
    for i in range(z.size):
        out[i] = z[i] * z[(i + 1) % z.size] + np.conj(z[i])
    out[1:] += out[:-1] * 1j  # an overlapping write, buffered as numpy buffers it
    return np.abs(out) + out.real


def _imag_written_after_capture(z):
    y = z * 2
    s = y * y  # (saves y)
    y.imag[1:] = z.real[:-1] ** 2  # a part written through a view: y's elements change
    v = y.real  # a view made before the next write, read after it
    y.real[0] = 3 * s[0].imag
    return s + y + v


def _in_place_on_a_copy_of_the_argument(z):
    c = z.copy()
    c += z**2
    c *= 1j
    c.real += 3 * c.imag  # an in-place ufunc into one part
    c.imag *= c.real
    c.imag = np.sin(z.real)  # the setter
    np.exp(c, out=c)
    return c


def _argument_written(z):
    z[0] = z[1] * z[2]  # a write into the caller's (copied) argument
    z.imag[2] = 0.0
    return z * np.conj(z[::-1])


def _real_buffer_and_casts(z):
    b = np.zeros_like(z.real)
    b[:] = np.abs(z)
    c = np.zeros_like(z)
    c.real = b
    c[1] = z[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (numpy's ComplexWarning: a cast keeps the real part)
        r = (z * 1j).astype(float)
    return c * r


@pytest.mark.parametrize(
    "f",
    [_fill, _imag_written_after_capture, _in_place_on_a_copy_of_the_argument, _argument_written,
     _real_buffer_and_casts],
)  # fmt: skip
def test_writes_of_complex_values_against_finite_differences(f):
    z = complex_array((4,), seed=41)
    t = complex_array((4,), seed=42)
    before = z.copy()
    value, tangent = mg.jvp(f, (z,), (t,))
    np.testing.assert_array_equal(z, before)  # the caller's array is not written
    np.testing.assert_array_equal(value, f(z.copy()))
    fine = _central(lambda z: f(z.copy()), (z,), (t,), 1e-6)
    np.testing.assert_allclose(tangent, fine, rtol=1e-6, atol=1e-7)
    # the same program in reverse mode (snapshot mode: it keeps what the writes overwrite)
    u = _direction(value, np.random.default_rng(43))
    (c,) = mg.vjp(f, z, mode="snapshot")[1](u)
    assert np.real(np.sum(u * tangent)) == pytest.approx(np.real(np.sum(c * t)), rel=1e-9)


# -- Jacobians ------------------------------------------------------------------------------


def test_holomorphic_jacfwd_is_jacrevs_and_checks_holomorphy():
    def f(z):
        return np.cumprod(np.sin(z)) + np.linalg.solve(M + np.diag(z), z) + np.fft.fft(z * z)

    z = ROW * 0.5
    forward = mg.jacfwd(f, holomorphic=True)(z)
    np.testing.assert_allclose(forward, mg.jacrev(f, holomorphic=True)(z), rtol=1e-10)
    t = complex_array((3,), seed=44)
    np.testing.assert_allclose(forward @ t, mg.jvp(f, (z,), (t,))[1], rtol=1e-10)
    with pytest.raises(mg.NotDifferentiableError, match="not holomorphic"):
        mg.jacfwd(lambda z: z * np.abs(z), holomorphic=True)(z)
    with pytest.raises(mg.NotDifferentiableError, match="holomorphic=True"):
        mg.jacfwd(f)(z)  # a complex argument without it: refused, as JAX's jacfwd
    with pytest.raises(mg.NotDifferentiableError, match="an argument is real"):
        mg.jacfwd(f, holomorphic=True)(z.real)


def test_a_real_argument_and_a_complex_output_give_the_complex_jacobian():
    x = np.array([0.3, -1.1, 2.0])

    def f(x):
        return np.fft.rfft(x * x) * np.exp(1j * x[:2])

    j = mg.jacfwd(f)(x)
    assert j.dtype.kind == "c" and j.shape == (2, 3)
    columns = [_central(f, (x,), (e,), 1e-6) for e in np.eye(3)]
    np.testing.assert_allclose(j, np.stack(columns, axis=-1), rtol=1e-7, atol=1e-9)
    # reverse mode's rows of the real and imaginary parts are its real and imaginary parts
    np.testing.assert_allclose(j.real, mg.jacrev(lambda x: np.real(f(x)))(x), rtol=1e-12)
    np.testing.assert_allclose(j.imag, mg.jacrev(lambda x: np.imag(f(x)))(x), rtol=1e-12)


# -- second order through complex intermediates ---------------------------------------------


def _loss(x):
    z = np.exp(1j * x) * (x + 2j)
    w = np.fft.fft(z)
    y = np.zeros_like(w)
    for i in range(x.size):
        y[i] = w[i] * np.conj(w[(i + 1) % x.size])
    y.imag[:2] *= 3
    a = np.outer(z, z[::-1]) + 3 * np.eye(x.size)
    return (np.sum(np.abs(y) ** 2) + np.sum(np.angle(z)) + np.real(np.sum(np.linalg.solve(a, z)))
            + np.linalg.slogdet(a)[1])  # fmt: skip


def test_forward_over_reverse_of_a_real_loss_of_complex_intermediates():
    x = np.array([0.4, -0.7, 1.3, 0.2])
    v = np.array([1.0, -0.5, 0.25, 2.0])
    reverse = mg.hessian_reverse(_loss, x)
    _, forward_over_reverse = mg.jvp(mg.grad(_loss), (x,), (v,))  # no fallback: forward itself
    np.testing.assert_allclose(forward_over_reverse, reverse @ v, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(mg.hvp(_loss, (x,), (v,)), reverse @ v, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(mg.hessian(_loss)(x), reverse, rtol=1e-9, atol=1e-10)
    # reverse over forward, and forward over forward, of the directional derivative
    directional = lambda x: mg.jvp(_loss, (x,), (v,))[1]  # noqa: E731
    np.testing.assert_allclose(mg.grad(directional)(x), reverse @ v, rtol=1e-9, atol=1e-10)
    assert mg.jvp(directional, (x,), (v,))[1] == pytest.approx(v @ reverse @ v, rel=1e-9)


def test_a_transposed_rule_gives_j_t_not_its_conjugate():
    # cholesky's hand-written jvp is for real matrices: complex values meet its vjp transposed
    t = complex_array((3, 3), seed=45)
    t = t + np.conj(t.T)
    _, tangent = mg.jvp(np.linalg.cholesky, (HPD,), (t,))
    np.testing.assert_allclose(tangent, _central(np.linalg.cholesky, (HPD,), (t,), 1e-6),
                               rtol=1e-6, atol=1e-8)  # fmt: skip
    assert not np.allclose(tangent, np.conj(tangent))
