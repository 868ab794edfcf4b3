"""Complex values through every rule that accepts them, in JAX's and HIPS autograd's convention.

A rule marked ``handles_complex`` (see mutagrad.core.engine.Rule) is checked here
with complex arguments by ``mutagrad.testing.check_rule``: for a random complex
output cotangent ``dy`` the pullback equals the gradient of ``Re(sum(f(z) * dy))``
by central differences in the real and the imaginary direction of every element,
combined as ``df/dx - i df/dy``. Every rule marked is listed in ``CASES`` (the
last test checks that none is missing), and a rule not marked refuses complex
values instead of differentiating them.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import mutagrad
from mutagrad.core import regions

try:
    from scipy import special
except ImportError:  # SciPy is optional
    special = None
from mutagrad.core.engine import VjpRule
from mutagrad.rules.factorizations import REAL_EIGENVECTORS
from mutagrad.rules.rearrange import gather_flat
from mutagrad.testing import check_gradient, check_rule
from mutagrad.testing.rule_check import find_rule
from mutagrad.traced.dispatch import apply


def complex_array(shape, seed=0, scale=1.0, shift=0.0):
    rng = np.random.default_rng(seed)
    return scale * (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) + shift


Z = complex_array((2, 3), seed=1)
W = complex_array((2, 3), seed=2)
ROW = complex_array((3,), seed=3)
SMALL = complex_array((2, 3), seed=4, scale=0.3)  # inside arcsin's, arctanh's unit disc
AWAY = complex_array((2, 3), seed=5, scale=0.5, shift=2.0)  # away from log's branch cut
M = complex_array((3, 3), seed=6)
N = complex_array((3, 3), seed=7)
REAL_WITH_COMPLEX_EIGENVALUES = np.array([[1.0, -2.0, 0.5], [1.5, 0.3, 0.0], [0.2, 0.1, -1.0]])
SYM = np.array([[2.0, 0.5, 0.1], [0.5, -1.0, 0.3], [0.1, 0.3, 0.7]])
HPD = np.matmul(np.conj(M.T), M) + np.eye(3)  # Hermitian positive definite


def _second_order_of_roll(z):
    return mutagrad.grad(lambda v: np.real(np.sum(np.roll(v, 1) * z)))(z)


def _joint_svd_product(a, full_matrices):
    """``U S Vh`` and ``U Vh`` of the first min(m, n) singular triples, stacked: complex
    values that do not change with the phase of each triple."""
    k = min(a.shape[-2:])
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    u, vh = u[..., :, :k], vh[..., :k, :]
    return np.stack([np.matmul(u * np.expand_dims(s, -2), vh), np.matmul(u, vh) * s[..., :1, None]])


def _as_numpy_25(a):
    """np.linalg.eig's eigenvectors as numpy >= 2.5 returns them for any matrix: complex."""
    vectors = np.linalg.eig(mutagrad.ignore_derivatives(a))[1].astype(complex)
    return apply(REAL_EIGENVECTORS, (a,), None, np.asarray(vectors))


# (rule name, function, arguments): the name is the rule's, for the completeness test.
CASES = [
    ("add", np.add, (Z, W)),
    ("add", np.add, (Z, ROW)),  # broadcasting: the cotangent summed back to ROW's shape
    ("add", np.add, (Z, np.arange(3.0))),  # a real operand: the real part of its cotangent
    ("subtract", np.subtract, (Z, W)),
    ("multiply", np.multiply, (Z, W)),
    ("multiply", np.multiply, (Z, np.arange(3.0) + 1)),
    ("divide", np.true_divide, (Z, AWAY)),
    ("negative", np.negative, (Z,)),
    ("positive", np.positive, (Z,)),
    ("conjugate", np.conjugate, (Z,)),
    ("absolute", np.absolute, (Z,)),
    ("power", np.power, (AWAY, W)),
    ("power", np.power, (Z, 3.0)),
    ("float_power", np.float_power, (AWAY, W)),
    ("square", np.square, (Z,)),
    ("reciprocal", np.reciprocal, (AWAY,)),
    ("exp", np.exp, (Z,)),
    ("exp2", np.exp2, (Z,)),
    ("expm1", np.expm1, (Z,)),
    ("log", np.log, (AWAY,)),
    ("log2", np.log2, (AWAY,)),
    ("log10", np.log10, (AWAY,)),
    ("log1p", np.log1p, (AWAY,)),
    ("sqrt", np.sqrt, (AWAY,)),
    ("sin", np.sin, (Z,)),
    ("cos", np.cos, (Z,)),
    ("tan", np.tan, (SMALL,)),
    ("arcsin", np.arcsin, (SMALL,)),
    ("arccos", np.arccos, (SMALL,)),
    ("arctan", np.arctan, (SMALL,)),
    ("sinh", np.sinh, (Z,)),
    ("cosh", np.cosh, (Z,)),
    ("tanh", np.tanh, (SMALL,)),
    ("arcsinh", np.arcsinh, (SMALL,)),
    ("arccosh", np.arccosh, (AWAY,)),
    ("arccosh", np.arccosh, (-AWAY,)),  # the other half plane: where sqrt(z*z - 1) flips sign
    ("arctanh", np.arctanh, (SMALL,)),
    ("maximum", np.maximum, (Z, W)),
    ("minimum", np.minimum, (Z, W)),
    ("fmax", np.fmax, (Z, W)),
    ("fmin", np.fmin, (Z, W)),
    ("arcsin", np.arcsin, (Z,)),  # past the unit disc, off the branch cuts
    ("arccos", np.arccos, (Z,)),
    ("arcsinh", np.arcsinh, (Z,)),
    ("sign", np.sign, (Z,)),
    ("angle", np.angle, (Z,)),
    ("angle", lambda z: np.angle(z, deg=True), (Z,)),
    ("complex from parts", np.nan_to_num, (Z,)),
    ("real", np.real, (Z,)),
    ("imag", np.imag, (Z,)),
    ("where", lambda x, y: np.where(Z.real > 0, x, y), (Z, W)),
    ("clip", lambda x: np.clip(x, -0.5 + 0j, 0.5 + 0j), (Z,)),
    # reductions
    ("sum", np.sum, (Z,)),
    ("sum", lambda z: np.sum(z, axis=0, keepdims=True), (Z,)),
    ("mean", lambda z: np.mean(z, axis=1), (Z,)),
    ("prod", lambda z: np.prod(z, axis=1), (Z,)),
    ("max", np.max, (Z,)),
    ("min", lambda z: np.min(z, axis=0), (Z,)),
    ("add.reduce", np.add.reduce, (Z,)),
    ("multiply.reduce", np.multiply.reduce, (Z,)),
    ("maximum.reduce", np.maximum.reduce, (Z,)),
    ("minimum.reduce", np.minimum.reduce, (Z,)),
    ("var", np.var, (Z,)),
    ("std", lambda z: np.std(z, axis=0), (Z,)),
    # copies, casts and joins
    ("copy", np.copy, (Z,)),
    ("astype", lambda z: z.astype(np.complex128), (Z,)),
    ("astype", lambda x: x.astype(complex) * (1 + 2j), (Z.real,)),
    ("concatenate", lambda a, b: np.concatenate([a, b], axis=1), (Z, W)),
    ("stack", lambda a, b: np.stack([a, b]), (Z, W)),
    # views (numpy views, recorded as reads), and their copying cases
    ("reshape", lambda z: np.reshape(z.T, (6,)), (Z,)),
    ("ravel", lambda z: np.ravel(z.T), (Z,)),
    ("transpose", np.transpose, (Z,)),
    ("swapaxes", lambda z: np.swapaxes(z, 0, 1), (Z,)),
    ("moveaxis", lambda z: np.moveaxis(z, 0, 1), (Z,)),
    ("rollaxis", lambda z: np.rollaxis(z, 1), (Z,)),
    ("squeeze", lambda z: np.squeeze(z[None]), (Z,)),
    ("expand_dims", lambda z: np.expand_dims(z, 0), (Z,)),
    ("diagonal", np.diagonal, (Z,)),
    ("broadcast_to", lambda z: np.broadcast_to(z, (4, 3)), (ROW,)),
    ("flip", np.flip, (Z,)),
    ("fliplr", np.fliplr, (Z,)),
    ("flipud", np.flipud, (Z,)),
    ("rot90", np.rot90, (Z,)),
    ("matrix_transpose", np.matrix_transpose, (Z,)),
    ("real_if_close", np.real_if_close, (Z,)),
    ("complex from parts", lambda z: _written_part(z, 1.5), (Z,)),
    # products and linear algebra: holomorphic (transposes, not adjoints)
    ("matmul", np.matmul, (M, N)),
    ("matmul", np.matmul, (M, ROW)),
    ("matmul", np.matmul, (ROW, M)),
    ("dot", np.dot, (M, N)),
    ("dot", np.dot, (ROW, 2.0 - 1j)),
    ("tensordot", lambda a, b: np.tensordot(a, b, axes=([0], [1])), (M, N)),
    ("inner", np.inner, (M, N)),
    ("outer", np.outer, (ROW, Z)),
    ("vdot", np.vdot, (Z, W)),  # conjugates its first operand
    ("vdot", np.vdot, (Z.real, W)),
    ("einsum", lambda a, b: np.einsum("ij,jk->ik", a, b), (M, N)),
    ("einsum", lambda a: np.einsum("ii->i", a), (M,)),
    ("linalg.solve", np.linalg.solve, (M, ROW)),
    ("linalg.solve", np.linalg.solve, (M, N)),
    ("linalg.inv", np.linalg.inv, (M,)),
    ("linalg.det", np.linalg.det, (M,)),
    ("linalg.slogdet", lambda a: np.linalg.slogdet(a)[1], (M,)),
    ("linalg.slogdet", lambda a: np.linalg.slogdet(a)[0], (np.stack([M, N]),)),  # the phase
    # factorizations and pseudo-inverses: not holomorphic (conjugates inside)
    ("linalg.cholesky", np.linalg.cholesky, (HPD,)),  # numpy reads the lower triangle
    ("linalg.cholesky", lambda a: np.linalg.cholesky(a, upper=True), (np.stack([HPD, HPD.T]),)),
    ("linalg.qr", lambda a: np.stack(np.linalg.qr(a)), (M,)),
    ("linalg.qr", lambda a: np.linalg.qr(a)[0], (complex_array((4, 3), seed=16),)),
    ("linalg.qr", lambda a: np.linalg.qr(a, "r"), (complex_array((2, 4, 3), seed=17),)),
    ("linalg.qr", lambda a: np.linalg.qr(a)[0], (complex_array((3, 5), seed=18),)),  # wide
    ("linalg.qr", lambda a: np.linalg.qr(a)[1], (complex_array((3, 5), seed=18),)),
    ("linalg.qr", lambda a: np.linalg.qr(a, "complete")[1], (complex_array((4, 2), seed=19),)),
    ("linalg.pinv", np.linalg.pinv, (complex_array((4, 3), seed=20),)),
    ("linalg.pinv", np.linalg.pinv, (complex_array((2, 3, 5), seed=21),)),
    ("linalg.pinv", lambda a: np.linalg.pinv(a, hermitian=True), (HPD,)),  # lower triangle
    ("linalg.lstsq", lambda a, b: np.linalg.lstsq(a, b)[0], (complex_array((5, 3), seed=22),
                                                          complex_array((5, 2), seed=23))),
    ("linalg.lstsq", lambda a, b: np.linalg.lstsq(a, b)[0], (complex_array((2, 4), seed=24),
                                                          complex_array((2,), seed=25))),
    ("linalg.lstsq", lambda a, b: np.linalg.lstsq(a, b)[1], (complex_array((5, 3), seed=22),
                                                          complex_array((5, 2), seed=23))),
    ("linalg.lstsq", lambda a, b: np.linalg.lstsq(a, b)[1], (complex_array((5, 3), seed=22),
                                                          complex_array((5,), seed=26))),
    ("cumsum", lambda z: np.cumsum(z, axis=1), (Z,)),
    # numpy's correlate conjugates its second operand, convolve does not
    ("correlate", np.correlate, (complex_array((5,), seed=27), ROW)),
    ("correlate", lambda a, v: np.correlate(a, v, "same"), (ROW, complex_array((5,), seed=28))),
    ("correlate", lambda a, v: np.correlate(a, v, "full"), (ROW.real, ROW)),
    ("correlate", lambda a, v: np.convolve(a, v), (ROW, complex_array((5,), seed=29))),
    ("correlate", lambda a, v: np.convolve(a, v, "same"), (ROW, complex_array((4,), 30).real)),
    ("cumprod", np.cumprod, (Z,)),
    ("pad", lambda z: np.pad(z, ((1, 0), (0, 2)), mode="reflect"), (Z,)),
    ("pad", lambda z, v: np.pad(z, 1, constant_values=v), (Z, 0.5 - 2j)),
    # rearrangements: each output element is one input element
    ("sort", np.sort, (Z,)),
    ("tile", lambda z: np.tile(z, 2), (Z,)),
    ("repeat", lambda z: np.repeat(z, 2, axis=0), (Z,)),
    ("roll", lambda z: np.roll(z, 1), (Z,)),
    ("resize", lambda z: np.resize(z, (4, 2)), (Z,)),
    ("delete", lambda z: np.delete(z, 1, axis=1), (Z,)),
    ("compress", lambda z: np.compress([True, False, True], z, axis=1), (Z,)),
    ("choose", lambda z, w: np.choose([[0, 1, 0], [1, 1, 0]], [z, w]), (Z, W)),
    ("take", lambda z: np.take(z, [4, 0, 0]), (Z,)),
    ("partition", lambda z: np.partition(z.ravel(), 2), (Z,)),
    ("unique", np.unique, (Z,)),
    ("gather_flat", lambda z: gather_flat(z, np.array([2, 0, 0])), (ROW,)),
    # the engine's own rules for views, in higher-order sweeps
    ("gather", lambda z: regions.gather(z, None, regions.BASIC_INDEX, (slice(1, None),)), (ROW,)),
    ("scatter", lambda c: regions.scatter(c, None, regions.BASIC_INDEX, 1, (3,), complex),
     (Z[0, 0],)),
    ("zero_at", lambda z: regions.zero_at(z, None, regions.BASIC_INDEX, (0,)), (ROW,)),
    # np.fft: linear, with a symmetric matrix
    ("fft.fft", np.fft.fft, (Z,)),
    ("fft.fft", lambda z: np.fft.fft(z, n=5, axis=0, norm="ortho"), (Z,)),  # zero-padded
    ("fft.fft", lambda z: np.fft.fft(z, n=2, norm="forward"), (Z,)),  # cropped
    ("fft.ifft", np.fft.ifft, (Z,)),
    ("fft.ifft", lambda z: np.fft.ifft(z, n=4, axis=0), (Z,)),
    ("fft.fftn", np.fft.fftn, (Z,)),
    ("fft.fftn", lambda z: np.fft.fftn(z, s=(3, 2), axes=(0, 1), norm="ortho"), (Z,)),
    ("fft.fftn", np.fft.fft2, (M,)),
    ("fft.ifftn", lambda z: np.fft.ifftn(z, axes=(0,)), (Z,)),
    ("fft.ifftn", lambda z: np.fft.ifft2(z, s=(4, 4)), (M,)),
    ("fft.irfft", np.fft.irfft, (Z,)),
    ("fft.irfft", lambda z: np.fft.irfft(z, n=5, axis=0, norm="ortho"), (Z,)),  # odd n
    ("fft.irfft", lambda z: np.fft.irfft(z, n=8, norm="forward"), (Z,)),  # z zero-padded
    ("fft.irfft", lambda z: np.fft.irfft(z, n=2), (Z,)),  # z cropped
    ("fft.rfft", np.fft.rfft, (Z.real,)),  # (more in test_the_spectrum_of_a_real_signal)
    # eigenvalues: complex ones of a real matrix, and of a complex matrix
    ("linalg.eigvals", np.linalg.eigvals, (REAL_WITH_COMPLEX_EIGENVALUES,)),
    ("linalg.eigvals", np.linalg.eigvals, (M,)),
    ("linalg.eig", lambda a: np.linalg.eig(a)[0], (SYM,)),  # (complex on numpy >= 2.5)
    # real values of complex matrices: singular values, eigenvalues of Hermitian ones
    ("linalg.svd", lambda a: np.linalg.svd(a, compute_uv=False), (M,)),
    ("linalg.svd", np.linalg.svdvals, (np.stack([M, N]),)),
    # the factors of an SVD, one node: what their joint phase leaves alone, u_k vh_k
    ("linalg.svd", lambda a: _joint_svd_product(a, False), (M,)),
    ("linalg.svd", lambda a: _joint_svd_product(a, True), (complex_array((4, 2), seed=11),)),
    ("linalg.svd", lambda a: _joint_svd_product(a, True), (complex_array((2, 2, 4), seed=12),)),
    ("linalg.eigh", np.linalg.eigvalsh, (M,)),  # (numpy reads the lower triangle)
    ("linalg.eigh", lambda a: np.linalg.eigvalsh(a, UPLO="U"), (np.stack([M, N]),)),
    ("linalg.eig (real eigenvectors as complex numbers)", lambda a: _as_numpy_25(a), (SYM,)),
    ("scatter_flat", lambda z: _second_order_of_roll(z), (ROW,)),
]


if special is not None:  # SciPy's holomorphic functions
    CASES += [
        ("scipy.special.erf", special.erf, (SMALL,)),
        ("scipy.special.erfc", special.erfc, (Z,)),
    ]


def _written_part(z, v):
    z = z * 1.0
    z.imag[0] = v * z.real[1]
    z.real[1:] = z.imag[:-1]
    return z


@pytest.mark.parametrize(
    ("name", "function", "args"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_rule_against_finite_differences(name, function, args):
    if find_rule(function).kind != "none":
        check_rule(function, *args)
        return
    # A lambda around the rule's function: the gradient of Re(sum(f(z) * dy))
    out = np.asarray(function(*args))
    rng = np.random.default_rng(len(name))
    dy = rng.standard_normal(out.shape)
    if out.dtype.kind == "c":
        dy = dy + 1j * rng.standard_normal(out.shape)
    check_gradient(lambda *a: np.real(np.sum(function(*a) * dy)), *args)


# -- the convention, on the examples users try first ------------------------------


def test_the_gradient_of_abs_squared_is_jaxs():
    # JAX and autograd: grad(lambda z: abs(z)**2)(3+4j) == 6-8j (PyTorch gives the conjugate)
    assert mutagrad.grad(lambda z: np.abs(z) ** 2)(3 + 4j) == pytest.approx(6 - 8j)
    (g,) = mutagrad.gradient(lambda z: np.sum(np.abs(z) ** 2), np.array([3 + 4j, 1j]))
    np.testing.assert_allclose(g, [6 - 8j, -2j])


def test_real_and_imaginary_parts():
    z = np.array([3 + 4j, 1 - 2j])
    np.testing.assert_allclose(mutagrad.grad(lambda z: np.sum(z.real**2 + 3 * z.imag))(z),
                               2 * z.real - 3j)  # fmt: skip
    # views of parts of views, read after the array was written
    def f(z):
        z = z * 1.0
        part = z[::-1].imag
        z[0] = 2.0 * z[0]
        return np.sum(part * part)

    check_gradient(f, z)


def test_sign_and_angle_are_constant_on_reals_and_smooth_on_complex_values():
    x = np.array([0.3, -1.2, 0.0])
    for f in (np.sign, np.angle):
        (g,) = mutagrad.gradient(lambda x, f=f: np.sum(f(x) * x), x)
        np.testing.assert_array_equal(g, f(x))  # the piecewise constant's derivative is 0
        check_gradient(
            lambda x, f=f: np.sum(np.abs(f(x * (1 + 2j))) ** 2 + np.real(f(x - 1j))), x[:2]
        )
    # at z = 0 numpy's sign and angle are 0 and have no derivative: 0, as absolute's kink
    (g,) = mutagrad.gradient(lambda z: np.sum(np.real(np.sign(z)) + np.angle(z)), np.zeros(2) + 0j)
    np.testing.assert_array_equal(g, [0, 0])


def test_nan_to_num_replaces_in_each_part():
    z = np.array([complex(np.nan, 1), complex(2, np.inf), 3 - 1j])  # (np.inf * 1j is nan+infj)

    def f(z):
        return np.sum(np.abs(np.nan_to_num(z, nan=0.5, posinf=10.0)) ** 2)

    value, (g,) = mutagrad.withgradient(f, z)
    assert value == f(z)
    # a replaced part is a constant: no derivative in it; the other part keeps its own
    np.testing.assert_allclose(g, [0 - 2j, 4 + 0j, 6 + 2j], rtol=1e-15)


@pytest.mark.parametrize(
    ("transform", "options"),
    [(np.fft.rfft, {}), (np.fft.rfft, {"n": 7, "norm": "ortho"}), (np.fft.rfft, {"n": 3}),
     (np.fft.rfft, {"axis": 0, "norm": "forward"}), (np.fft.fft, {}), (np.fft.fft2, {})],
)  # fmt: skip
def test_the_spectrum_of_a_real_signal(transform, options):
    x = np.random.default_rng(8).standard_normal((4, 5))
    check_rule(transform, x, fn_kwargs=options)
    check_gradient(lambda x: np.sum(np.abs(transform(x, **options)) ** 2), x)
    # and back: a filter in the frequency domain
    check_gradient(lambda x: np.sum(np.fft.irfft(np.fft.rfft(x) * np.arange(3.0), n=5) ** 2), x)


@pytest.mark.parametrize(
    "options",
    [{}, {"ord": "fro"}, {"axis": 1}, {"axis": 0, "ord": 2}, {"ord": 1}, {"ord": np.inf},
     {"axis": 1, "ord": 3}, {"axis": 0, "ord": -np.inf}, {"keepdims": True}, {"axis": (0, 1)}],
)  # fmt: skip
def test_norms_of_complex_arrays_take_numpys_steps(options):
    def f(z):
        return np.sum(np.linalg.norm(z, **options))

    assert mutagrad.withgradient(f, Z)[0] == f(Z)  # numpy's value, bit for bit
    check_gradient(f, Z)


def test_vector_norms_of_any_order():
    for order in (None, 2, 1, 0.5, np.inf):
        check_gradient(lambda z, order=order: np.linalg.norm(z, ord=order), ROW)


@pytest.mark.parametrize(
    "options", [{"ord": 2}, {"ord": "nuc"}, {"ord": -2, "axis": (2, 1), "keepdims": True}]
)
def test_complex_norms_of_singular_values(options):
    def f(a):
        return np.sum(np.linalg.norm(a, **options))

    a = np.stack([M, N]) if "axis" in options else M
    assert mutagrad.withgradient(f, a)[0] == f(a)
    check_gradient(f, a)
    check_gradient(np.linalg.cond, M)


@pytest.mark.parametrize(
    "a", [M, complex_array((5, 3), seed=9), complex_array((2, 3, 4), seed=10), M.real]
)
def test_complex_singular_vectors_through_quantities_their_phase_leaves_alone(a):
    k = min(a.shape[-2:])
    left = np.cos(np.arange(a.shape[-2] * k)).reshape(a.shape[-2], k)
    right = np.sin(np.arange(k * a.shape[-1])).reshape(k, a.shape[-1])

    def f(a):
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        return np.sum(np.abs(u) * left) + np.sum(np.abs(vh) ** 2 * right) + np.sum(s**2)

    check_gradient(f, a)


@pytest.mark.parametrize("factor", [0, 2])
def test_a_loss_that_depends_on_a_singular_vectors_phase_is_refused(factor):
    with pytest.raises(mutagrad.NotDifferentiableError, match=r"changes with their phase"):
        mutagrad.grad(lambda a: np.sum(np.real(np.linalg.svd(a)[factor])))(M)


def test_a_loss_that_depends_on_the_joint_phase_of_u_and_vh_wrongly_is_refused():
    # u_k vh_k is unchanged by the phase, u_k conj(vh_k) turns by exp(2 i t): refused
    def f(a):
        u, _, vh = np.linalg.svd(a)
        return np.sum(np.real(u[0, :] * np.conj(vh[:, 0])))

    with pytest.raises(mutagrad.NotDifferentiableError, match=r"u_k exp\(i t\) with vh_k"):
        mutagrad.grad(f)(M)


def _second_order(f, a, seed=13):
    """Checks the gradient of ``Re(sum(grad(f)(a) * d))`` for a complex ``d`` (reverse over
    reverse) against central differences of that gradient."""
    d = complex_array(a.shape, seed=seed)
    check_gradient(lambda a: np.real(np.sum(mutagrad.grad(f)(a) * d)), a)


@pytest.mark.parametrize(
    "a", [M, complex_array((5, 3), seed=9), complex_array((3, 5), seed=14),
          complex_array((2, 3, 4), seed=10)],
)  # fmt: skip
@pytest.mark.parametrize("full_matrices", [False, True])
def test_complex_singular_vectors_through_their_joint_phase_to_second_order(a, full_matrices):
    k = min(a.shape[-2:])
    weights = complex_array(a.shape, seed=15)

    def f(a):
        # Re(u_0k vh_k,-1) and u @ vh: each u_k with its vh_k, as np.abs(u) on its own
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        u, vh = u[..., :, :k], vh[..., :k, :]
        pairs = np.sum(np.real(u[..., 0, :] * vh[..., :, -1] * (1 + 2j)))
        product = np.abs(np.matmul(u * np.expand_dims(s, -2), vh) * weights) ** 1.5
        return pairs + np.sum(product) + np.sum(np.abs(u) * np.expand_dims(s, -2))

    check_gradient(f, a)
    _second_order(f, a)


@pytest.mark.parametrize("a", [complex_array((5, 3), seed=9), np.stack([M, N])])
def test_complex_singular_values_and_nuclear_norm_to_second_order(a):
    # (the singular values' pullback decomposes a again: U and Vh meet in it)
    _second_order(lambda a: np.sum(np.linalg.svd(a, compute_uv=False) ** 3), a)
    _second_order(lambda a: np.sum(np.linalg.norm(a, ord="nuc", axis=(-2, -1))), a)


def test_roots_and_poly_through_complex_eigenvalues():
    check_gradient(lambda p: np.sum(np.abs(np.roots(p)) ** 2), np.array([1.0, 2.0, 3.0, 4.0]))
    check_gradient(lambda p: np.sum(np.poly(p) ** 2), np.array([1.0, 2.0, 3.5]))


@pytest.mark.parametrize("eig", [np.linalg.eig, np.linalg.eigh, lambda a: np.linalg.eigh(a, "U")])
@pytest.mark.parametrize("a", [REAL_WITH_COMPLEX_EIGENVALUES, M, np.stack([M, N])])
def test_complex_eigenvectors_through_quantities_their_phase_leaves_alone(eig, a):
    weights = np.cos(np.arange(a.shape[-1] ** 2)).reshape(a.shape[-2:])

    def f(a):
        values, vectors = eig(a)
        return np.sum(np.abs(vectors) * weights) + np.sum(np.abs(values))

    check_gradient(f, a)
    check_gradient(lambda a: np.sum(np.abs(eig(a)[1]) ** 2 * weights), a)


@pytest.mark.parametrize("eig", [np.linalg.eig, np.linalg.eigh])
def test_a_loss_that_depends_on_an_eigenvectors_phase_is_refused(eig):
    with pytest.raises(mutagrad.NotDifferentiableError, match=r"changes with their phase"):
        mutagrad.grad(lambda a: np.sum(np.real(eig(a)[1])))(M)


def test_a_users_rule_refuses_complex_values_naming_it_and_the_opt_in():
    @mutagrad.primitive
    def double(x):
        return x * 2

    mutagrad.defvjp(double, lambda g, ans, x: g * 2)
    with pytest.raises(mutagrad.NotDifferentiableError, match=r"^double has no derivative rule") \
            as refused:  # fmt: skip
        mutagrad.grad(lambda z: np.abs(double(z)) ** 2)(1 + 1j)
    assert "defvjp(..., handles_complex=True)" in str(refused.value)

    @mutagrad.primitive
    def tripled(x):
        return x * 3

    @mutagrad.rrule(tripled)
    def _(x):
        return tripled(x), lambda dy: (dy * 3,)

    with pytest.raises(mutagrad.NotDifferentiableError, match=r"rrule for tripled") as refused:
        mutagrad.grad(lambda z: np.abs(tripled(z)) ** 2)(1 + 1j)
    assert "handles_complex=True" in str(refused.value)
    # (mutagrad's own rules are not the user's to mark: their refusal does not suggest it)
    with pytest.raises(mutagrad.NotDifferentiableError) as refused:
        mutagrad.grad(lambda z: np.sum(np.abs(np.interp([0.5], [0.0, 1.0], z))))(ROW[:2])
    assert "handles_complex" not in str(refused.value)


def test_a_users_rule_that_declares_complex_values_is_used_for_them():
    # A holomorphic rule (JAX's convention: the vjp multiplies by f'(z), no conjugate) and
    # one with a conjugate (the vjp of conj is conj of the cotangent), checked against
    # complex central differences.
    @mutagrad.primitive
    def cube(z):
        return z**3

    mutagrad.defvjp(cube, lambda g, ans, z: g * 3 * z**2, reads=((0,),), handles_complex=True)

    @mutagrad.primitive
    def conjugated(z):
        return np.conj(z)

    @mutagrad.rrule(conjugated, handles_complex=True)
    def _(z):
        return np.conj(z), lambda dy: (np.conj(dy),)

    def f(z):
        return np.sum(np.abs(cube(z) + 2j * conjugated(z)) ** 2)

    check_gradient(f, Z)
    check_rule(cube, Z)
    assert mutagrad.grad(lambda z: np.abs(cube(z)) ** 2)(1 + 1j) == pytest.approx(
        mutagrad.grad(lambda z: np.abs(z**3) ** 2)(1 + 1j)
    )


@pytest.mark.parametrize(
    ("transform", "options"),
    [(np.fft.rfftn, {}), (np.fft.rfftn, {"s": (3, 4), "axes": (1, 0)}), (np.fft.rfft2, {}),
     (np.fft.irfftn, {}), (np.fft.irfftn, {"s": (2, 5), "axes": (0, 1)}),
     (np.fft.irfft2, {"axes": (1, 0)})],
)  # fmt: skip
def test_n_dimensional_real_transforms_take_numpys_steps(transform, options):
    x = Z if transform in (np.fft.irfftn, np.fft.irfft2) else Z.real

    def f(x):
        y = transform(x, **options)
        return np.sum(np.abs(y * np.arange(1.0, 1.0 + y.shape[0])[:, None]) ** 2)

    assert mutagrad.withgradient(f, x)[0] == f(x)
    check_gradient(f, x)


@pytest.mark.parametrize(
    ("transform", "options"),
    [(np.fft.hfft, {}), (np.fft.hfft, {"n": 5, "axis": 0, "norm": "ortho"}),
     (np.fft.hfft, {"n": 3, "norm": "forward"}), (np.fft.ihfft, {}),
     (np.fft.ihfft, {"n": 4, "axis": 0}), (np.fft.ihfft, {"n": 2, "norm": "ortho"})],
)  # fmt: skip
def test_hermitian_transforms_take_numpys_steps(transform, options):
    # hfft of a half spectrum (complex), ihfft of a real signal
    x = Z if transform is np.fft.hfft else Z.real
    out = transform(x, **options)
    dy = complex_array(out.shape, seed=31)

    def f(x):
        return np.real(np.sum(transform(x, **options) * dy))

    assert mutagrad.withgradient(lambda x: (f(x), transform(x, **options)), x).val[1].tolist() == (
        out.tolist()
    )
    check_gradient(f, x)


def test_a_real_function_of_a_complex_intermediate():
    x = np.array([0.3, -1.2, 2.0])
    check_gradient(lambda x: np.sum(np.abs(np.exp(1j * x) + x) ** 2), x)
    check_gradient(lambda x: np.sum(np.real(np.exp(1j * x) * (2 - x * 1j))), x)


def test_complex_output_of_gradient_is_refused_with_the_fixes():
    with pytest.raises(mutagrad.NotDifferentiableError, match="holomorphic=True"):
        mutagrad.grad(lambda z: z * z)(1 + 1j)
    with pytest.raises(mutagrad.NotDifferentiableError, match=r"np\.abs\(y\) \*\* 2"):
        mutagrad.gradient(lambda z: np.sum(z * z), Z)


@pytest.mark.parametrize(
    "jacobian",
    [lambda f, z: mutagrad.jacobian(f, z), lambda f, z: mutagrad.jacrev(f)(z)],
    ids=["jacobian", "jacrev"],
)
def test_a_jacobian_of_complex_values_is_refused_as_jaxs_is(jacobian):
    for f, z in [(lambda z: z * z, ROW), (lambda x: x * 1j, ROW.real)]:
        with pytest.raises(mutagrad.NotDifferentiableError, match=r"np\.real\(f\(z\)\)"):
            jacobian(f, z)
    # of a real function of complex values: each row in the gradient's convention
    rows = mutagrad.jacrev(lambda z: np.abs(z) ** 2)(ROW)
    np.testing.assert_allclose(rows, np.diag(2 * np.conj(ROW)))


def test_forward_over_reverse_through_complex_intermediates():
    x = np.array([0.3, -1.2])
    # (tests/test_forward_complex.py checks forward mode's complex rules one by one)
    def f(x):
        return np.sum(np.abs(np.exp(1j * x) * x) ** 2 + np.real(np.exp(2j * x)))

    expected = np.diag(2 - 4 * np.cos(2 * x))
    np.testing.assert_allclose(mutagrad.hessian(f, x), expected, atol=1e-12)
    np.testing.assert_allclose(mutagrad.hvp(f, (x,), (np.ones(2),)), expected.sum(1), atol=1e-12)


def test_holomorphic_derivatives():
    z = 1 + 2j
    assert mutagrad.grad(lambda z: z * z + np.sin(z), holomorphic=True)(z) == pytest.approx(
        2 * z + np.cos(z)
    )
    value, g = mutagrad.value_and_grad(lambda z: np.sum(z**3), holomorphic=True)(Z)
    assert value == np.sum(Z**3)
    np.testing.assert_allclose(g, 3 * Z**2)

    def written(z):  # a write after capture, in poison mode: both sweeps read the same tape
        y = z * 1.0
        y[0] = y[1] * 2j
        return np.sum(y * y)

    np.testing.assert_allclose(
        mutagrad.grad(written, holomorphic=True)(np.array([1 + 1j, 2 + 0j])), [0, -12]
    )


@pytest.mark.parametrize("f", [lambda z: np.conj(z) * z, lambda z: z.real + 0j, np.abs])
def test_holomorphic_true_refuses_a_function_that_is_not(f):
    with pytest.raises(mutagrad.NotDifferentiableError, match="not holomorphic at these"):
        mutagrad.grad(lambda z: f(z) + 0j, holomorphic=True)(1 + 2j)
    with pytest.raises(mutagrad.NotDifferentiableError, match="but an argument is real"):
        mutagrad.grad(lambda z: z * z, holomorphic=True)(1.0)


def test_a_rule_without_complex_support_refuses_complex_values():
    # (np.interp's rule is written for real values: refused by name)
    with pytest.raises(mutagrad.NotDifferentiableError, match=r"np\.interp has no derivative"):
        mutagrad.grad(lambda z: np.sum(np.abs(np.interp([0.5, 1.5], [0.0, 1.0, 2.0], z))))(ROW)


def test_complex_correlation_to_second_order():
    v = complex_array((5,), seed=32)
    _second_order(lambda a: np.sum(np.abs(np.correlate(a, v, "full") * np.convolve(v, a)) ** 2),
                  ROW)  # fmt: skip


def test_writes_through_the_real_and_imaginary_parts():
    z = np.array([3 + 4j, 1 - 2j, 0.5 + 0.25j])

    def one_element(z):
        z = z * 1.0
        z.real[0] = 5.0 * z.imag[1]
        return np.sum(np.abs(z) ** 2)

    def setter(z):
        z = z * 1.0
        z.imag = z.real**2  # power saved z.real: writing z.imag leaves it valid
        return np.sum(np.abs(z) ** 2)

    def in_place(z):
        z = z * 1.0
        z.imag *= z.real
        z.real[1:] += 2.0 * z.imag[:2]  # overwrites the z.real multiply saved
        return np.sum(np.abs(z) ** 2 + z.real)

    def masked(z):
        z = z * 1.0
        np.copyto(z.imag, z.real * 3.0, where=np.array([True, False, True]))
        return np.sum(np.abs(z) ** 2)

    for f in (one_element, setter, masked):
        check_gradient(f, z)
    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(in_place, z)
    check_gradient(in_place, z, mode="snapshot")


def test_a_buffer_filled_part_by_part():
    def f(x):
        z = np.zeros(3, dtype=complex, like=x)
        z.real[:] = x
        z.imag[::2] = x[::2] ** 2
        return np.sum(np.abs(np.exp(z)))

    check_gradient(f, np.array([0.1, -0.3, 0.7]))
    # and the values are numpy's, through the views
    x = mutagrad.array(np.array([1 + 1j, 2j]))
    x.real[1] = 7.0
    np.testing.assert_array_equal(x, [1 + 1j, 7 + 2j])


def test_every_rule_that_handles_complex_values_is_checked_here():
    # Rules made by one factory share their vjps' code (np.unique_values, np.take and
    # np.sort are all rearrangements): checking one of them checks the code of all.
    def code(rule):
        return tuple(getattr(v, "__code__", v) for v in rule.vjps)

    for _, function, args in CASES:
        function(*args)  # (makes the rules a factory makes on first use)
    rules = [r for r in gc.get_objects() if isinstance(r, VjpRule) and r.handles_complex]
    checked = {name for name, _, _ in CASES}
    checked_code = {code(r) for r in rules if r.name in checked}
    missing = {r.name for r in rules if r.trusted and r.name not in checked}
    missing = {name for name in missing
               if not all(code(r) in checked_code for r in rules if r.name == name)}  # fmt: skip
    assert not missing, f"no complex check for {sorted(missing)}"


@pytest.mark.parametrize(
    ("f", "a"),
    [(lambda a: np.sum(np.abs(np.linalg.cholesky(a)) ** 2), HPD),
     (lambda a: np.sum(np.abs(np.linalg.qr(a)[0] * np.linalg.qr(a)[1][0, 1])), M),
     (lambda a: np.real(np.linalg.slogdet(a)[0] * (1 + 2j)) + np.linalg.slogdet(a)[1], M),
     (lambda a: np.sum(np.abs(np.linalg.pinv(a)) ** 2), complex_array((4, 3), seed=20)),
     (lambda a: np.sum(np.abs(np.linalg.lstsq(a, ROW[:2])[0]) ** 2), complex_array((2, 4), 24))],
    ids=["cholesky", "qr", "slogdet", "pinv", "lstsq"],
)  # fmt: skip
def test_complex_factorizations_to_second_order(f, a):
    check_gradient(f, a)
    _second_order(f, a)


@pytest.mark.parametrize(
    "jacobian",
    [lambda f, z: mutagrad.jacobian(f, holomorphic=True)(z),
     lambda f, z: mutagrad.jacrev(f, holomorphic=True)(z),
     lambda f, z: np.reshape(mutagrad.jacobian(f, z, holomorphic=True)[0],
                             np.shape(f(z)) + np.shape(z))],
    ids=["jacobian", "jacrev", "zygote"],
)  # fmt: skip
def test_the_complex_jacobian_of_a_holomorphic_function(jacobian):
    def f(z):
        return np.exp(np.matmul(M, z)) * z[0] + np.linalg.solve(N, z) ** 2

    # df_k/dz_j by complex central differences along the real axis (f is holomorphic)
    step = 1e-6
    expected = np.stack([(f(ROW + step * e) - f(ROW - step * e)) / (2 * step)
                         for e in np.eye(3)], axis=-1)[:2]  # fmt: skip
    got = jacobian(lambda z: f(z)[:2], ROW)
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-8)
    assert jacobian(lambda z: z**3, 1 + 2j) == pytest.approx(3 * (1 + 2j) ** 2)
    for not_holomorphic in (lambda z: np.conj(z) * z, lambda z: np.abs(z) + 0j,
                            lambda z: np.exp(z) + 1e-3 * np.conj(z[::-1])):  # fmt: skip
        with pytest.raises(mutagrad.NotDifferentiableError, match="not holomorphic at these"):
            jacobian(not_holomorphic, ROW)
    with pytest.raises(mutagrad.NotDifferentiableError, match="but an argument is real"):
        jacobian(lambda x: x * 1j, ROW.real)
