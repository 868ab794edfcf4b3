"""Rules of mutagrad/rules/factorizations.py: np.linalg's svd, svdvals, eig, eigvals, qr,
pinv, lstsq and cond.

Values on WrappedArrays equal numpy's, and gradients match finite differences to
second order, for tall, square, wide and batched matrices, every factor and
every mode. The matrices are built with well separated singular values (and
eigenvalues), where singular vectors and eigenvectors are smooth functions of
the matrix; eigenvector and singular vector signs are LAPACK's, smooth there
too. Where the derivative does not exist the rules raise, which is checked
last.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rule_checks import check_op, rules_defined_in

import mutagrad
from mutagrad.testing import check_gradient
from numpy_compat import needs_real_eig

SIDES = st.integers(1, 3)
SEEDS = st.integers(0, 2**32 - 1)


def orthogonal(rng, n, batch):
    q, r = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


@st.composite
def separated_matrices(draw, batch=True, square=False):
    """U diag(s) V^T with singular values 1 apart (1.5, 2.5, ...): smooth factors."""
    m = draw(SIDES, label="m")
    n = m if square else draw(SIDES, label="n")
    shape = tuple(draw(st.lists(st.integers(1, 2), max_size=1), label="batch")) if batch else ()
    rng = np.random.default_rng(draw(SEEDS, label="seed"))
    k = min(m, n)
    s = np.arange(k, 0, -1) + 0.5
    u = orthogonal(rng, m, shape)[..., :, :k]
    v = orthogonal(rng, n, shape)[..., :, :k]
    return np.matmul(u * s, np.swapaxes(v, -1, -2))


@st.composite
def real_eigensystems(draw):
    """P diag(lambda) P^-1 with P near I and real eigenvalues 1 apart, of both signs."""
    n = draw(SIDES, label="n")
    shape = tuple(draw(st.lists(st.integers(1, 2), max_size=1), label="batch"))
    rng = np.random.default_rng(draw(SEEDS, label="seed"))
    p = np.eye(n) + 0.3 * rng.uniform(-1, 1, (*shape, n, n))
    values = np.arange(n) - n / 2 + 0.25
    return np.matmul(p * values, np.linalg.inv(p))


# -- svd -----------------------------------------------------------------------


@given(a=separated_matrices(), full_matrices=st.booleans())
def test_svd(a, full_matrices):
    k = min(a.shape[-2:])

    def factors(a):
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        # The columns past k of a full U (rows of Vh) are an arbitrary basis: not read.
        return np.concatenate([np.ravel(u[..., :, :k] ** 2), np.ravel(s), np.ravel(vh[..., :k, :])])

    check_op(factors, a, order=2)


@given(a=separated_matrices())
def test_svd_result_and_each_factor_alone(a):
    check_op(lambda a: np.linalg.svd(a, full_matrices=False).U, a, order=2)
    check_op(lambda a: np.linalg.svd(a, full_matrices=False).Vh ** 2, a, order=2)
    check_op(lambda a: np.linalg.svd(a)[1], a, order=2)
    expected = np.linalg.svd(a)
    got = mutagrad.withgradient(lambda a: (0.0, np.linalg.svd(a)), a).val[1]
    assert type(got) is type(expected)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e, strict=True)


@given(a=separated_matrices())
def test_svd_factors_written_in_place(a):
    """Each factor is numpy's own array with a node of its own: writes into U and Vh after
    the SVD are traced as writes, and the pullback still reads the factors as computed."""

    def f(a):
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        u *= s[..., None, :]
        vh[..., 0, :] *= 2  # a + s_0 u_0 vh_0, whatever the sign of the pair
        return np.matmul(u, vh) + s[..., :1, None]

    check_op(f, a, order=2)


@given(a=separated_matrices())
def test_singular_values_alone(a):
    """compute_uv=False and svdvals: LAPACK's values-only routine, numpy's values exactly."""
    check_op(lambda a: np.linalg.svd(a, compute_uv=False), a, order=2)
    check_op(np.linalg.svdvals, a, order=2)


@given(a=separated_matrices(batch=False, square=True), compute_uv=st.booleans())
def test_svd_of_a_symmetric_matrix_with_hermitian(a, compute_uv):
    """numpy factorizes the symmetric matrix of a's lower triangle (eigh): its gradient."""
    n = a.shape[-1]
    a = np.dot(a.T, a) - 2.0 * np.eye(n) + np.triu(np.ones((n, n)), 1)  # noise above

    def svd(a):
        result = np.linalg.svd(a, compute_uv=compute_uv, hermitian=True)
        if not compute_uv:
            return result
        u, s, vh = result
        return np.concatenate([np.ravel(u**2), s, np.ravel(vh**2)])

    check_op(svd, a, order=2)


def test_svd_factor_paths_agree():
    # A factor is a SLICED_FACTOR node on a tape alone and the VjpRule FACTOR under forward
    # levels: the Hessian forward over reverse (FACTOR's jvp and vjp) and reverse over
    # reverse (the sliced nodes, their pullback recorded) must agree, and with finite
    # differences of the gradient.
    a = np.random.default_rng(3).normal(size=(4, 3))

    def loss(a):
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        return np.sum(u[:, :2] ** 2 * s[:2]) + np.sum(s**3) + np.sum(vh[0] * vh[1] ** 2)

    forward_over_reverse = mutagrad.jacfwd(mutagrad.grad(loss))(a)  # (no fallback to reverse)
    reverse_over_reverse = mutagrad.hessian_reverse(loss, a)  # (Zygote's: flattened)
    np.testing.assert_allclose(forward_over_reverse.reshape(12, 12), reverse_over_reverse,
                               rtol=1e-8, atol=1e-10)  # fmt: skip
    grad = mutagrad.grad(loss)
    h = 1e-6
    column = np.zeros_like(a)
    column[1, 2] = h
    numerical = (grad(a + column) - grad(a - column)) / (2 * h)
    np.testing.assert_allclose(reverse_over_reverse[:, 5].reshape(4, 3), numerical, rtol=1e-5,
                               atol=1e-7)  # fmt: skip
    np.testing.assert_allclose(mutagrad.jacfwd(loss)(a), grad(a), rtol=1e-8, atol=1e-12)


def test_svd_by_hand():
    a = np.array([[3.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    (g,) = mutagrad.gradient(lambda a: np.linalg.svd(a)[1][0], a)  # u_0 v_0^T
    np.testing.assert_array_equal(g, [[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])


# -- eig, eigvals --------------------------------------------------------------


@needs_real_eig
@given(a=real_eigensystems())
def test_eig(a):
    """Eigenvalues, and unit eigenvectors through functions blind to their signs."""
    check_op(lambda a: np.linalg.eig(a).eigenvalues, a, order=2)
    check_op(lambda a: np.linalg.eig(a)[1] ** 2, a, order=2)
    check_op(np.linalg.eigvals, a, order=2)


@needs_real_eig
def test_eig_result():
    a = np.array([[2.0, 1.0], [0.5, -1.0]])
    expected = np.linalg.eig(a)
    got = mutagrad.withgradient(lambda a: (0.0, np.linalg.eig(a)), a).val[1]
    assert type(got) is type(expected)
    np.testing.assert_array_equal(got.eigenvectors, expected.eigenvectors, strict=True)
    # d lambda = w^T da v / (w^T v), with the left eigenvector w = (1, 1) and the right one
    # v = (1, 0) of the eigenvalue 2.
    (g,) = mutagrad.gradient(lambda a: np.linalg.eigvals(a)[0], np.array([[2.0, 1.0], [0.0, 1.0]]))
    np.testing.assert_allclose(g, [[1.0, 0.0], [1.0, 0.0]], atol=1e-15)


# -- qr ------------------------------------------------------------------------


@st.composite
def full_rank(draw):
    m, n = draw(SIDES, label="m"), draw(SIDES, label="n")
    shape = tuple(draw(st.lists(st.integers(1, 2), max_size=1), label="batch"))
    rng = np.random.default_rng(draw(SEEDS, label="seed"))
    return rng.uniform(-1, 1, (*shape, m, n)) + 3 * np.eye(m, n)


@given(a=full_rank(), mode=st.sampled_from(["reduced", "complete", "r"]))
def test_qr(a, mode):
    k = min(a.shape[-2:])

    def factors(a):
        if mode == "r":
            return np.linalg.qr(a, mode)
        q, r = np.linalg.qr(a, mode)
        return np.concatenate([np.ravel(q[..., :, :k]), np.ravel(r)])

    check_op(factors, a, order=2)
    if mode != "r":
        check_op(lambda a: np.linalg.qr(a, mode).Q[..., :, :k], a)
        check_op(lambda a: np.linalg.qr(a, mode).R, a)


# -- pinv, lstsq, cond ---------------------------------------------------------


@given(a=separated_matrices())
def test_pinv(a):
    check_op(np.linalg.pinv, a, order=2)
    check_op(lambda a: np.linalg.pinv(a, rtol=None), a)


@given(a=separated_matrices(batch=False, square=True))
def test_pinv_of_a_symmetric_matrix_with_hermitian(a):
    n = a.shape[-1]
    a = np.dot(a.T, a) + np.triu(np.ones((n, n)), 1)  # numpy reads the lower triangle
    check_op(lambda a: np.linalg.pinv(a, hermitian=True), a, order=2)


@given(a=separated_matrices(batch=False), seed=SEEDS, columns=st.sampled_from([None, 1, 2]))
def test_lstsq(a, seed, columns):
    m = a.shape[0]
    b = np.random.default_rng(seed).uniform(-1, 1, (m,) if columns is None else (m, columns))

    def solution(a, b):
        x, residuals, rank, s = np.linalg.lstsq(a, b)
        assert rank == min(a.shape)
        return np.concatenate([np.ravel(x), residuals, s])

    check_op(solution, a, b, order=2)
    check_op(lambda a: np.linalg.lstsq(a, b, rcond=None)[0], a)
    check_op(lambda b: np.linalg.lstsq(a, b)[0], b)


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc"], ids=str)
@given(a=separated_matrices(batch=False, square=True))
def test_cond(p, a):
    check_op(lambda a: np.linalg.cond(a, p), a, order=2)


@pytest.mark.parametrize("p", [1, -1, np.inf, -np.inf], ids=str)
def test_cond_with_a_max_norm(p):
    """(A matrix whose and whose inverse's row and column sums of |.| are far from ties.)"""
    a = np.array([[4.0, 1.0, 0.5], [0.25, 3.0, -1.0], [1.5, -0.5, 2.0]])
    check_op(lambda a: np.linalg.cond(a, p), a, order=2)


# -- where the derivative does not exist ----------------------------------------


TALL = np.array([[3.0, 0.5], [0.2, 2.0], [0.1, 0.3]])


def test_svd_full_matrices_extra_columns_are_refused():
    with pytest.raises(mutagrad.NotDifferentiableError, match="arbitrary orthonormal basis"):
        mutagrad.gradient(lambda a: np.sum(np.linalg.svd(a)[0]), TALL)
    with pytest.raises(mutagrad.NotDifferentiableError, match="arbitrary orthonormal basis"):
        mutagrad.gradient(lambda a: np.sum(np.linalg.svd(a)[2]), TALL.T)
    with pytest.raises(mutagrad.NotDifferentiableError, match="arbitrary orthonormal basis"):
        mutagrad.gradient(lambda a: np.sum(np.linalg.qr(a, "complete")[0]), TALL)


def test_complex_eigenvalues_and_eigenvectors_of_a_real_matrix():
    rotation = np.array([[0.0, -1.0], [1.0, 0.1]])
    check_gradient(lambda a: np.sum(np.abs(np.linalg.eigvals(a)) ** 3), rotation)
    check_gradient(lambda a: np.sum(np.abs(np.linalg.eig(a)[1]) * [[1.0, 2.0], [0.5, 3.0]]),
                   rotation)  # fmt: skip
    with pytest.raises(mutagrad.NotDifferentiableError, match="changes with their phase"):
        mutagrad.gradient(lambda a: np.sum(np.real(np.linalg.eig(a)[1])), rotation)
    # Of a constant matrix they are just numpy's values.
    constant = mutagrad.asarray(rotation)
    np.testing.assert_array_equal(np.linalg.eigvals(constant), np.linalg.eigvals(rotation))


def test_qr_raw_is_refused():
    with pytest.raises(mutagrad.NotDifferentiableError, match="Householder"):
        mutagrad.gradient(lambda a: np.sum(np.linalg.qr(a, "raw")[0]), TALL)


def test_cutoffs_that_discard_singular_values_are_refused():
    a = np.array([[3.0, 0.0], [0.0, 1e-3], [0.0, 0.0]])
    with pytest.raises(mutagrad.NotDifferentiableError, match="cutoff discards"):
        mutagrad.gradient(lambda a: np.sum(np.linalg.pinv(a, rcond=1e-2)), a)
    with pytest.raises(mutagrad.NotDifferentiableError, match="cutoff discards"):
        mutagrad.gradient(lambda a: np.sum(np.linalg.lstsq(a, np.ones(3), rcond=1e-2)[0]), a)
    # A cutoff below every singular value keeps the derivative.
    check_op(lambda a: np.linalg.pinv(a, rcond=1e-6), a)


def test_cond_of_a_singular_matrix_is_refused():
    with pytest.raises(mutagrad.NotDifferentiableError, match="singular"):
        mutagrad.gradient(lambda a: np.linalg.cond(a, 1), np.ones((2, 2)))


# -- coverage ------------------------------------------------------------------


def test_every_rule_of_the_module_is_tested():
    tested = {np.linalg.svd, np.linalg.svdvals, np.linalg.eig, np.linalg.eigvals}
    tested |= {np.linalg.qr, np.linalg.pinv, np.linalg.lstsq, np.linalg.cond}
    registered = rules_defined_in("mutagrad.rules.factorizations")
    assert registered, "found no rules: did the registry change?"
    missing = {getattr(r, "__name__", repr(r)) for r in registered - tested}
    assert not missing, f"rules without a test: {sorted(missing)}"


# -- forward mode: the completing columns of a full factor ----------------------------------
# svd(a, full_matrices=True) and qr(a, mode='complete') of a non-square matrix: forward
# mode differentiates the first min(m, n) columns and gives the completing ones a NaN
# tangent, refused by name where it reaches the output.


def _forward_checked(f, a):
    """jvp along a random direction == the reverse gradient's product == central differences;
    jacfwd == jacrev; linearize's f_jvp == jvp."""
    rng = np.random.default_rng(11)
    v = rng.normal(size=a.shape)
    _, t = mutagrad.jvp(f, (a,), (v,))
    (g,) = mutagrad.gradient(f, a, mode="snapshot")
    np.testing.assert_allclose(t, np.sum(g * v), rtol=1e-9, atol=1e-12)
    step = 1e-6
    fd = (f(a + step * v) - f(a - step * v)) / (2 * step)
    np.testing.assert_allclose(t, fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(mutagrad.jacfwd(f)(a), g, rtol=1e-9, atol=1e-12)
    _, f_jvp = mutagrad.linearize(f, a)
    np.testing.assert_allclose(f_jvp(v), t, rtol=1e-12, atol=1e-14)


def _weights(shape):
    return np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape) / 7


def _svd_losses(k):
    return {
        "S alone": lambda a: np.sum(np.linalg.svd(a)[1] ** 3),
        "U[:, :k]": lambda a: np.sum(
            (lambda u: u[..., :, :k] * np.sign(u[..., :1, :k]))(np.linalg.svd(a)[0])
            * _weights((a.shape[-2], k))
        ),
        "reconstruction": lambda a: np.sum(np.sin(_reconstructed(*np.linalg.svd(a), k))),
        # a write over the completing columns before U is read whole: constant zeros there
        "completing columns overwritten": lambda a: _overwritten(a, k),
    }


def _reconstructed(u, s, vh, k):
    return u[..., :, :k] * s[..., None, :] @ vh[..., :k, :]


def _overwritten(a, k):
    u, s, vh = np.linalg.svd(a)
    u[..., :, k:] = 0.0
    vh[..., k:, :] = 0.0
    u = u * np.sign(u[..., :1, :])
    return np.sum(u * _weights(u.shape[-2:])) + np.sum(s) + np.sum(vh**2)


@pytest.mark.parametrize("shape", [(3, 2), (2, 3), (2, 4, 2)], ids=str)
@pytest.mark.parametrize("loss", list(_svd_losses(2)), ids=str)
def test_forward_svd_full_matrices_of_a_non_square_matrix(shape, loss):
    k = min(shape[-2:])
    u, _, vh = np.linalg.svd(np.random.default_rng(5).normal(size=shape), full_matrices=False)
    a = np.matmul(u * (np.arange(k, 0, -1) + 0.5), vh)  # singular values 1 apart: smooth
    _forward_checked(_svd_losses(k)[loss], a)


def test_forward_qr_complete_of_a_tall_matrix():
    a = TALL + 0.1
    _forward_checked(lambda a: np.sum(np.linalg.qr(a, "complete")[0][:, :2] * _weights((3, 2))), a)
    _forward_checked(lambda a: np.sum(np.linalg.qr(a, "complete")[1] ** 2), a)


@pytest.mark.parametrize(
    "f, a",
    [
        (lambda a: np.sum(np.linalg.svd(a)[0] ** 3), TALL),
        (lambda a: np.sum(np.linalg.svd(a)[2] @ np.ones(3)), TALL.T),
        (lambda a: np.sum(np.linalg.qr(a, "complete")[0] * _weights((3, 3))), TALL),
    ],
    ids=["U of a tall matrix", "Vh of a wide matrix", "Q of a tall matrix"],
)
def test_forward_mode_refuses_a_tangent_through_the_completing_columns(f, a):
    v = np.ones_like(a)
    for differentiate in (
        lambda: mutagrad.jvp(f, (a,), (v,)),
        lambda: mutagrad.jacfwd(f)(a),
        lambda: mutagrad.linearize(f, a),
    ):
        with pytest.raises(mutagrad.NotDifferentiableError, match="full_matrices=False") as e:
            differentiate()
        assert "test_factorizations.py" in str(e.value)  # (the user's line of the factorization)


# -- repeated values: the vectors have no derivative there -------------------------------

DIAGONAL_PAIR = np.array([2.0, 2.0, 5.0])  # diag(DIAGONAL_PAIR): two equal values


def _vectors_losses():
    def svd_u(d):
        return np.sum(np.linalg.svd(np.diag(d))[0] * np.arange(9.0).reshape(3, 3))

    def eig_v(d):  # (np.real: numpy 2.5's eig gives complex vectors for every matrix)
        return np.sum(np.real(np.linalg.eig(np.diag(d))[1]) * np.arange(9.0).reshape(3, 3))

    def eigh_v(d):
        return np.sum(np.linalg.eigh(np.diag(d))[1] * np.arange(9.0).reshape(3, 3))

    return {"svd": svd_u, "eig": eig_v, "eigh": eigh_v}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", ["svd", "eig", "eigh"])
def test_vectors_of_repeated_values_are_refused_not_nan(name):
    loss = _vectors_losses()[name]
    with pytest.raises(mutagrad.NotDifferentiableError, match="two of the values are equal"):
        mutagrad.grad(loss)(DIAGONAL_PAIR.copy())
    # forward mode, along a direction that splits the pair
    with pytest.raises(mutagrad.NotDifferentiableError, match="two of the values are equal"):
        mutagrad.jvp(loss, (DIAGONAL_PAIR.copy(),), (np.array([1.0, -1.0, 0.0]),))


def test_what_does_not_read_the_repeated_pair_is_exact():
    # the values alone, and the vector of the value that is not repeated
    np.testing.assert_allclose(
        mutagrad.grad(lambda d: np.sum(np.linalg.svd(np.diag(d))[1] ** 2))(DIAGONAL_PAIR),
        2 * DIAGONAL_PAIR, rtol=1e-12,
    )  # fmt: skip

    def last_vector(d):
        a = np.diag(d) + np.array([[0, 0, 0.5], [0, 0, 0.25], [0.5, 0.25, 0]]) * d[2]
        return np.sum(np.linalg.eigh(a)[1][:, 2] ** 3)

    # diag(2, 2, 5) coupled to the third vector: one of the pair stays 2 exactly
    d = DIAGONAL_PAIR.copy()
    values = np.linalg.eigvalsh(np.diag(d) + np.array([[0, 0, 0.5], [0, 0, 0.25],
                                                       [0.5, 0.25, 0]]) * d[2])  # fmt: skip
    assert np.min(np.abs(np.diff(np.sort(values)))) > 0.1  # (no longer repeated: exact)
    check_gradient(last_vector, d)

    def unread_pair(d):
        return np.sum(np.linalg.eigh(np.diag(d))[1][:, 2] ** 3)  # the pair (2, 2) not read

    np.testing.assert_array_equal(mutagrad.grad(unread_pair)(d), np.zeros(3))


def test_forward_mode_refuses_any_repeated_pair():
    # a forward rule cannot know which vectors the loss will read: the pair is refused even
    # along a direction that keeps it equal (numpy's basis for it may still jump)
    loss = _vectors_losses()["eigh"]
    with pytest.raises(mutagrad.NotDifferentiableError, match="two of the values are equal"):
        mutagrad.jvp(loss, (DIAGONAL_PAIR.copy(),), (np.array([1.0, 1.0, 0.0]),))
