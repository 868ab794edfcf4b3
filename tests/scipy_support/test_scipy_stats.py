"""mutagrad.scipy.stats (mutagrad/rules/scipy_stats.py): SciPy's distributions, differentiated.

Values are SciPy's own, bit for bit; check_rule checks every method's rule
against finite differences (and the overwrite checks), check_gradient the
derivative of the derivative.
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient, check_rule

scipy_stats = pytest.importorskip("scipy.stats")
from mutagrad.scipy import stats  # noqa: E402  (after the skip without SciPy)

X = np.array([0.3, -0.8, 1.2])
LOC = np.array([0.1, 0.2, -0.3])
SCALE = np.array([1.5, 0.7, 2.0])
POSITIVE = np.array([0.4, 1.3, 2.2])
SHAPE = np.array([1.5, 2.5, 3.0])
UNIT = np.array([0.2, 0.5, 0.7])
METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
# (distribution, its arguments; the shape parameters follow x)
CASES = {
    "norm": (X, LOC, SCALE),
    "t": (X, np.array([2.5, 3.1, 4.0]), LOC, SCALE),
    "gamma": (POSITIVE, SHAPE, LOC / 4, SCALE),
    "chi2": (POSITIVE, SHAPE, LOC / 4, SCALE),
    "beta": (UNIT, SHAPE, SHAPE[::-1], LOC / 10, SCALE + 1),
}


def assert_scipy_value(fn, want_fn, *args):
    got = mutagrad.withgradient(lambda *a: (np.sum(fn(*a)), fn(*a)), *args).val[1]
    np.testing.assert_array_equal(got, want_fn(*args), strict=True)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_continuous(name, method):
    fn, args = getattr(getattr(stats, name), method), CASES[name]
    x, *shapes, loc, scale = args
    want = getattr(getattr(scipy_stats, name), method)
    assert_scipy_value(lambda x: fn(x, *shapes, loc, scale),
                       lambda x: want(x, *shapes, loc, scale), x)  # fmt: skip
    if method in ("logpdf", "pdf"):
        check_rule(fn, *args)
        check_gradient(lambda *a: np.sum(fn(*a) ** 2), *args, order=2)
    else:  # no derivative in a shape parameter (refused)
        check_rule(fn, *args, wrt=[0, len(shapes) + 1, len(shapes) + 2])
        check_gradient(lambda x, loc, scale: np.sum(fn(x, *shapes, loc, scale) ** 2), x, loc,
                       scale, order=2)  # fmt: skip


def test_keywords_and_defaults_as_scipy_takes_them():
    for call in (lambda x: stats.norm.logpdf(x), lambda x: stats.norm.cdf(x, scale=2.0),
                 lambda x: stats.t.logpdf(x, df=3.0, loc=0.5),
                 lambda x: stats.gamma.pdf(np.abs(x), 2.0, scale=1.5)):  # fmt: skip
        want = call(X)
        got = mutagrad.value_and_grad(lambda x, call=call: np.sum(call(x)))(X)
        assert got[0] == np.sum(want)
        check_gradient(lambda x, call=call: np.sum(call(x) ** 2), X)


def test_a_shape_derivative_of_a_distribution_function_is_refused_by_name():
    with pytest.raises(mutagrad.NotDifferentiableError, match=r"scipy\.stats\.t\.cdf .* df"):
        mutagrad.grad(lambda df: np.sum(stats.t.cdf(X, df)))(np.array([2.5, 3.0, 4.0]))


@pytest.mark.parametrize("method", ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"))
def test_poisson_in_mu(method):
    fn = getattr(stats.poisson, method)
    k, mu = np.array([0.0, 2.0, 5.0]), np.array([1.5, 2.5, 3.0])
    assert_scipy_value(lambda mu: fn(k, mu), lambda mu: getattr(scipy_stats.poisson, method)(k, mu),
                       mu)  # fmt: skip
    check_rule(fn, k, mu, wrt=[1])
    check_gradient(lambda mu: np.sum(fn(k, mu) ** 2), mu, order=2)


COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])
MEAN = np.array([0.1, 0.0, -0.2])
POINTS = np.array([[0.4, -0.2, 0.3], [0.1, 0.5, -1.0]])


@pytest.mark.parametrize("method", ("logpdf", "pdf"))
@pytest.mark.parametrize("x", [POINTS, POINTS[0]], ids=["points", "one"])
def test_multivariate_normal(method, x):
    fn = getattr(stats.multivariate_normal, method)
    assert_scipy_value(fn, getattr(scipy_stats.multivariate_normal, method), x, MEAN, COV)
    check_rule(fn, x, MEAN, COV)  # cov elementwise: SciPy reads its lower triangle
    check_gradient(lambda x, m, c: np.sum(fn(x, m, c) ** 2), x, MEAN, COV, order=2)


def test_multivariate_normal_entropy_and_diagonal_covariances():
    check_rule(stats.multivariate_normal.entropy, MEAN, COV)
    check_gradient(lambda c: stats.multivariate_normal.entropy(MEAN, c) ** 2, COV, order=2)
    diagonal = np.array([1.5, 0.5, 2.0])
    assert_scipy_value(lambda d: stats.multivariate_normal.logpdf(POINTS, MEAN, d),
                       lambda d: scipy_stats.multivariate_normal.logpdf(POINTS, MEAN, d), diagonal)
    check_gradient(lambda d: np.sum(stats.multivariate_normal.logpdf(POINTS, MEAN, d)), diagonal)


def test_multivariate_normal_singular():
    cov = np.zeros((3, 3))
    cov[0, 0] = cov[1, 1] = 1.0

    def f(x, mean):
        x = np.concatenate([x[:2], mean[2:]])
        return stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)

    check_gradient(f, np.array([0.3, -0.4, 0.0]), np.array([0.1, 0.2, 0.0]), order=2)


def test_dirichlet():
    alpha, x = np.array([1.5, 2.5, 3.0]), np.array([0.2, 0.3, 0.5])
    for method in ("logpdf", "pdf"):
        fn = getattr(stats.dirichlet, method)
        assert_scipy_value(fn, getattr(scipy_stats.dirichlet, method), x, alpha)
        # Overwriting x after the call would leave the simplex, which SciPy refuses.
        check_rule(fn, x, alpha, wrt=[1], check_overwrites=False)
        check_gradient(lambda x, a, fn=fn: fn(x / np.sum(x), a) ** 2, x, alpha, order=2)
    points = np.array([[0.2, 0.6], [0.3, 0.1], [0.5, 0.3]])
    check_gradient(lambda a: np.sum(stats.dirichlet.logpdf(points, a)), alpha)


def test_every_other_name_is_scipys():
    assert stats.norm.ppf == scipy_stats.norm.ppf  # bound methods: equal, not identical
    assert stats.dirichlet.rvs == scipy_stats.dirichlet.rvs
    assert stats.expon is scipy_stats.expon
