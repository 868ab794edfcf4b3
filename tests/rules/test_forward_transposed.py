"""Forward rules made by transposing the reverse rule (mutagrad.transposition), and the
bilinear scipy.signal ones (issue 23).

Each function is checked three ways: ``jacfwd`` against ``jacrev``, ``jvp`` along
a random direction against the finite-difference directional derivative (so a
refusal fails the test: check_rule alone counts a missing forward rule as no
finding), and ``check_rule`` (finite differences of the pullback, and
``<dy, J v> == <J^T dy, v>``) where the function takes its argument directly.
Under a second level the transposed rules are refused by name, and hessian falls
back to reverse over reverse.
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad as mg
from mutagrad.testing import check_rule
from mutagrad.testing.finite_differences import directional_derivative
from numpy_compat import needs_real_eig

pytest.importorskip("scipy")
from mutagrad.scipy import linalg, signal, special, stats  # (the traced ones)

RNG = np.random.default_rng(2323)
SQUARE = RNG.normal(size=(3, 3)) + 3 * np.eye(3)
SPD = SQUARE @ SQUARE.T + np.eye(3)
TALL = RNG.normal(size=(4, 3))
VECTOR = RNG.uniform(0.5, 1.5, 6)
UPPER = np.triu(SQUARE) + np.diag([0.5, 1.0, 1.5])  # real, distinct eigenvalues


def matrix(x):
    return np.reshape(x, (3, 3))


# name -> (f of one array, the point)
CASES = {
    "pad constant": (lambda x: np.pad(x, (1, 2), constant_values=0.5) * x[0], VECTOR),
    "pad reflect": (lambda x: np.pad(x, 2, mode="reflect"), VECTOR),
    "pad maximum": (lambda x: np.pad(x, 2, mode="maximum"), VECTOR),
    "insert": (lambda x: np.insert(x[:4], [1, 3], x[4:] ** 2), VECTOR),
    "interp fp": (lambda x: np.interp(np.array([0.3, 1.7, 2.5]), np.arange(4.0), x[:4]), VECTOR),
    "interp x": (lambda x: np.interp(x, np.arange(3.0), np.array([1.0, 3.0, 2.0])), VECTOR),
    "svd values": (lambda x: np.linalg.svd(matrix(x), compute_uv=False), SQUARE.ravel()),
    "svd vectors": (lambda x: np.linalg.svd(matrix(x))[0] * np.linalg.svd(matrix(x))[2][0, 0],
                    SQUARE.ravel()),
    "qr": (lambda x: np.linalg.qr(np.reshape(x, (4, 3)))[0] + np.linalg.qr(
        np.reshape(x, (4, 3)))[1][0, 0], TALL.ravel()),
    "pinv": (lambda x: np.linalg.pinv(np.reshape(x, (4, 3))), TALL.ravel()),
    "lstsq": (lambda x: np.linalg.lstsq(np.reshape(x, (4, 3)), np.arange(4.0))[0], TALL.ravel()),
    "lstsq residuals": (lambda x: np.linalg.lstsq(np.reshape(x, (4, 3)), np.arange(4.0))[1],
                        TALL.ravel()),
    "eigvals": (lambda x: np.sort(np.linalg.eigvals(matrix(x))), UPPER.ravel()),
    "scipy solve_triangular": (lambda x: linalg.solve_triangular(np.triu(matrix(x)), x[:3]),
                               UPPER.ravel()),
    "scipy solve": (lambda x: linalg.solve(matrix(x), x[:3]), SQUARE.ravel()),
    "scipy inv": (lambda x: linalg.inv(matrix(x)), SQUARE.ravel()),
    "scipy det": (lambda x: linalg.det(matrix(x)), SQUARE.ravel()),
    "scipy expm": (lambda x: linalg.expm(matrix(x) / 4), SQUARE.ravel()),
    "scipy sqrtm": (lambda x: linalg.sqrtm(matrix(x)), SPD.ravel()),
    "scipy logm": (lambda x: linalg.logm(matrix(x)), SPD.ravel()),
    "scipy cholesky": (lambda x: linalg.cholesky(matrix(x)), SPD.ravel()),
    "scipy cho_solve": (lambda x: linalg.cho_solve(linalg.cho_factor(matrix(x)), x[:3]),
                        SPD.ravel()),
    "scipy lu_solve": (lambda x: linalg.lu_solve(linalg.lu_factor(matrix(x)), x[:3]),
                       SQUARE.ravel()),
    "scipy eigh": (lambda x: linalg.eigh(matrix(x))[0], SPD.ravel()),
    "scipy svd": (lambda x: linalg.svd(matrix(x), compute_uv=False), SQUARE.ravel()),
    "scipy solve_sylvester": (lambda x: linalg.solve_sylvester(matrix(x), SPD, SQUARE),
                              SPD.ravel()),
    "convolve": (lambda x: signal.convolve(x[:4], x[3:] ** 2), VECTOR),
    "correlate": (lambda x: signal.correlate(x[:4], x[3:], mode="same"), VECTOR),
    "convolve2d": (lambda x: signal.convolve2d(np.reshape(x, (2, 3)), np.reshape(x[:4], (2, 2))),
                   VECTOR),
    "correlate2d": (lambda x: signal.correlate2d(np.reshape(x, (2, 3)), [[1.0, -2.0]]), VECTOR),
    "maximum.accumulate": (lambda x: np.maximum.accumulate(x * x[::-1]), VECTOR),
    "logaddexp.accumulate": (lambda x: np.logaddexp.accumulate(x), VECTOR),
    "add.reduceat": (lambda x: np.add.reduceat(x, [0, 2, 2, 5]), VECTOR),
    "multiply.reduceat": (lambda x: np.multiply.reduceat(x, [0, 3, 1]), VECTOR),
    "maximum.reduceat": (lambda x: np.maximum.reduceat(x * x[::-1], [0, 4]), VECTOR),
    "softmax": (lambda x: special.softmax(x), VECTOR),
    "log_softmax": (lambda x: special.log_softmax(np.reshape(x, (2, 3)), axis=1), VECTOR),
    "logsumexp": (lambda x: special.logsumexp(np.reshape(x, (2, 3)), axis=0, b=x[:3]), VECTOR),
    "multigammaln": (lambda x: special.multigammaln(x + 2, 3), VECTOR),
    "polygamma": (lambda x: special.polygamma(2, x), VECTOR),
    "mvn entropy": (lambda x: stats.multivariate_normal.entropy(np.zeros(3), matrix(x)),
                    SPD.ravel()),
    "norm logpdf": (lambda x: stats.norm.logpdf(x, loc=x[0], scale=2.0), VECTOR),
}  # fmt: skip


# numpy 2.5's eig returns complex values for every matrix, whose tangents forward mode refuses.
_ON_THIS_NUMPY = [pytest.param(name, marks=needs_real_eig) if name.startswith("eig") else name
                  for name in CASES]  # fmt: skip


@pytest.mark.parametrize("name", _ON_THIS_NUMPY)
def test_forward_mode_agrees_with_reverse_mode_and_differences(name):
    f, x = CASES[name]
    expected = f(x.copy())
    jr = np.asarray(mg.jacrev(f)(x))
    jf = np.asarray(mg.jacfwd(f)(x))
    np.testing.assert_allclose(jf, jr, rtol=1e-8, atol=1e-10)
    v = RNG.normal(size=x.shape)
    out, t = mg.jvp(f, (x,), (v,))
    np.testing.assert_array_equal(out, expected)  # numpy's (SciPy's) value, bit for bit
    w = RNG.normal(size=np.shape(expected))
    fd = directional_derivative(lambda z: float(np.sum(f(z) * w)), [x], 0, v)
    np.testing.assert_allclose(np.sum(t * w), fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    ("fn", "args", "kwargs"),
    [
        (np.pad, (VECTOR, 2), {"mode": "symmetric"}),
        (np.linalg.pinv, (TALL,), {}),
        (np.linalg.svd, (SQUARE,), {"compute_uv": False}),
        (linalg.inv, (SQUARE,), {}),
        (linalg.expm, (SQUARE / 4,), {}),
        (linalg.solve, (SQUARE, VECTOR[:3]), {}),
        (signal.convolve, (VECTOR, VECTOR[:3]), {}),
        (special.softmax, (VECTOR,), {}),
        (special.logsumexp, (VECTOR,), {}),
    ],
    ids=lambda p: getattr(p, "__name__", None),
)
def test_check_rule_passes_with_the_transposed_forward_rule(fn, args, kwargs):
    check_rule(fn, *args, fn_kwargs=kwargs)


def test_under_a_second_level_a_transposed_rule_is_refused_by_name():
    f = lambda x: np.sum(np.linalg.pinv(np.reshape(x, (4, 3))) ** 2)  # noqa: E731
    x = TALL.ravel()
    # forward over reverse: the forward level is alone, so the rule runs
    np.testing.assert_allclose(mg.hessian(f)(x), mg.hessian_reverse(f, x), rtol=1e-7,
                               atol=1e-9)  # fmt: skip
    # reverse over forward: the forward level has a level around it
    with pytest.raises(mg.MissingForwardRuleError, match=r"np\.linalg\.pinv"):
        mg.grad(lambda z: np.sum(mg.jvp(f, (z,), (x,))[1]))(x)
