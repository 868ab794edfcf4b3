"""mutagrad.scipy.linalg (mutagrad/rules/scipy_linalg.py): SciPy's solvers, factorizations and
matrix functions, differentiated to second order, with SciPy's values."""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient, check_rule

scipy_linalg = pytest.importorskip("scipy.linalg")
from mutagrad.scipy import linalg  # noqa: E402  (after the skip without SciPy)

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 3))
SPD = A @ A.T + 3 * np.eye(3)
TRIANGULAR = np.tril(A) + 3 * np.eye(3)
B = RNG.standard_normal((3, 2))
V = RNG.standard_normal(3)


def squared(f):
    return lambda *args: np.sum(f(*args) ** 2)


def assert_scipy_value(fn, want, *args):
    got = mutagrad.withgradient(lambda *a: (np.sum(fn(*a)[0] if isinstance(fn(*a), tuple)
                                                   else fn(*a)), fn(*a)), *args).val[1]  # fmt: skip
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):  # fmt: skip
        np.testing.assert_array_equal(g, w, strict=True)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_solve_triangular(lower, trans, unit_diagonal):
    a = TRIANGULAR if lower else TRIANGULAR.T
    kwargs = {"lower": lower, "trans": trans, "unit_diagonal": unit_diagonal}
    assert_scipy_value(lambda a, b: linalg.solve_triangular(a, b, **kwargs),
                       scipy_linalg.solve_triangular(a, B, **kwargs), a, B)  # fmt: skip
    for b in (B, V):
        check_rule(linalg.solve_triangular, a, b, fn_kwargs=kwargs)
    check_gradient(squared(lambda a, b: linalg.solve_triangular(a, b, **kwargs)), a, B, order=2)


@pytest.mark.parametrize("kwargs", [{}, {"assume_a": "sym"}, {"assume_a": "pos", "lower": True},
                                    {"transposed": True}])  # fmt: skip
def test_solve(kwargs):
    assert_scipy_value(lambda a, b: linalg.solve(a, b, **kwargs),
                       scipy_linalg.solve(SPD, B, **kwargs), SPD, B)  # fmt: skip
    check_rule(linalg.solve, SPD, B, fn_kwargs=kwargs)
    check_rule(linalg.solve, SPD, V, fn_kwargs=kwargs)
    check_gradient(squared(lambda a, b: linalg.solve(a, b, **kwargs)), SPD, B, order=2)


def test_inv_det_sylvester_banded():
    general = A + 3 * np.eye(3)
    for fn, want in ((linalg.inv, scipy_linalg.inv), (linalg.det, scipy_linalg.det)):
        assert_scipy_value(fn, want(general), general)
        check_rule(fn, general)
        check_gradient(squared(fn), general, order=2)
    q = RNG.standard_normal((3, 3))
    assert_scipy_value(linalg.solve_sylvester, scipy_linalg.solve_sylvester(A, SPD, q), A, SPD, q)
    check_rule(linalg.solve_sylvester, A, SPD, q)
    check_gradient(squared(linalg.solve_sylvester), A, SPD, q, order=2)
    ab = RNG.standard_normal((3, 5))
    ab[1] += 4
    b = RNG.standard_normal(5)
    assert_scipy_value(lambda ab, b: linalg.solve_banded((1, 1), ab, b),
                       scipy_linalg.solve_banded((1, 1), ab, b), ab, b)  # fmt: skip
    check_gradient(squared(lambda ab, b: linalg.solve_banded((1, 1), ab, b)), ab, b, order=2)


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_and_cho_solve(lower):
    assert_scipy_value(lambda a: linalg.cholesky(a, lower=lower),
                       scipy_linalg.cholesky(SPD, lower=lower), SPD)  # fmt: skip
    check_rule(linalg.cholesky, SPD, fn_kwargs={"lower": lower})
    check_gradient(squared(lambda a: linalg.cholesky(a, lower=lower)), SPD, order=2)
    factor = mutagrad.withgradient(lambda a: (0.0, linalg.cho_factor(a, lower=lower)), SPD).val[1]
    want = scipy_linalg.cho_factor(SPD, lower=lower)
    np.testing.assert_array_equal(factor[0], want[0], strict=True)
    assert factor[1] == want[1]
    check_gradient(squared(lambda a: linalg.cho_factor(a, lower=lower)[0]), SPD)
    solve = lambda a, b: linalg.cho_solve(linalg.cho_factor(a, lower=lower), b)  # noqa: E731
    check_gradient(squared(solve), SPD, B, order=2)


def test_lu():
    general = A + 3 * np.eye(3)
    check_gradient(squared(lambda a: linalg.lu_factor(a)[0]), general, order=2)
    for trans in (0, 1):
        solve = lambda a, b, trans=trans: linalg.lu_solve(linalg.lu_factor(a), b, trans=trans)  # noqa: E731
        assert_scipy_value(solve, scipy_linalg.lu_solve(scipy_linalg.lu_factor(general), B,
                                                        trans=trans), general, B)  # fmt: skip
        check_gradient(squared(solve), general, B, order=2)
        check_gradient(squared(solve), general, V)


@pytest.mark.parametrize("name", ["expm", "sqrtm", "logm"])
def test_matrix_functions(name):
    fn, matrix = getattr(linalg, name), A / 2 if name == "expm" else SPD
    assert_scipy_value(fn, getattr(scipy_linalg, name)(matrix), matrix)
    check_rule(fn, matrix)
    check_gradient(squared(fn), matrix, order=2)


@pytest.mark.parametrize("lower", [True, False])
def test_eigh(lower):
    assert_scipy_value(lambda a: linalg.eigh(a, lower=lower),
                       scipy_linalg.eigh(SPD, lower=lower), SPD)  # fmt: skip
    check_gradient(lambda a: np.sum(linalg.eigh(a, lower=lower)[0] ** 3), SPD, order=2)
    check_gradient(lambda a: np.sum(linalg.eigh(a, lower=lower)[1][:, 0] * V) ** 2, SPD, order=2)


def test_svd():
    assert_scipy_value(linalg.svd, scipy_linalg.svd(A), A)
    check_rule(linalg.svd, A, fn_kwargs={"compute_uv": False})

    def loss(a):
        u, s, vh = linalg.svd(a)
        return np.sum(u[:, :2] * B) ** 2 + np.sum(s**3) + np.sum(vh * A)

    check_gradient(loss, A, order=2)
    check_gradient(lambda b: np.sum(linalg.svd(b, full_matrices=False)[0] * B) ** 2, B)


def test_float32_is_kept_and_differentiated():
    single = SPD.astype(np.float32)
    tolerances = {"atol": 2e-2, "rtol": 2e-2, "eps": 1e-3}
    b = B.astype(np.float32)
    cases = [(linalg.solve, (single, b)), (linalg.inv, (single,)), (linalg.cholesky, (single,)),
             (linalg.expm, (single / 8,)), (linalg.solve_triangular, (np.tril(single), b))]
    for fn, args in cases:
        want = getattr(scipy_linalg, fn.__name__)(*args)
        assert want.dtype == np.float32
        assert_scipy_value(fn, want, *args)
        check_rule(fn, *args, **tolerances)
