"""Second derivatives through every rule module: ``check_gradient(order=2)``.

A pullback must be written with numpy functions that have rules themselves,
so that an enclosing gradient call can differentiate it (reverse over
reverse): a vjp calling a function without a rule raises, and one that
drops a dependence gives a wrong Hessian. Each case below is checked
against differences of gradients along a random direction. The losses are
nonlinear in the rule's output, so even for linear rules the check
exercises the pullback of the pullback. Inputs sit inside every domain and
away from kinks, ties and ill-conditioning.

The list covers every module of mutagrad.rules (a test fails when a module
has no case).
"""

from __future__ import annotations

import pkgutil

import numpy as np
import pytest

import mutagrad.rules
from mutagrad.testing import check_gradient
from numpy_compat import EIG_IS_COMPLEX, needs_real_eig

RNG = np.random.default_rng(20240607)
X = RNG.uniform(0.3, 0.9, (2, 3))  # inside (0, 1): every domain below
Y = RNG.uniform(0.3, 0.9, (2, 3))
W = RNG.standard_normal((2, 3))
SQUARE = RNG.uniform(-0.5, 0.5, (3, 3)) + 3 * np.eye(3)  # well conditioned
BATCH = RNG.uniform(-0.5, 0.5, (2, 3, 3)) + 3 * np.eye(3)
VECTOR = RNG.uniform(0.3, 0.9, 5)
TALL = np.array([[3.0, 0.4], [0.3, 1.5], [0.2, -0.3]])  # singular values far apart
WITH_NAN = np.where([[False, True, False], [False, False, False]], np.nan, X)
EIGEN = np.array([[1.0, 0.2, 0.1], [0.3, 2.0, -0.2], [0.1, 0.1, 3.5]])  # real, far apart


def quadratic(out):
    """A loss whose Hessian involves the rule's Jacobian: sum(w * out + out**2)."""
    w = np.cos(np.arange(np.size(out)) + 1.0).reshape(np.shape(out))
    return np.sum(w * out + out * out)


def _setitem(x):
    y = np.zeros_like(x)
    y[0] = x[1] ** 2
    y[:, 1] += x[0, 1] * x[:, 2]
    y[[1, 1], [0, 2]] = x[0, :2] * 3.0
    return quadratic(y)


def _inplace(x):
    y = x * 1.0
    np.put(y, [0, 4], x[1, :2] ** 2)
    np.add.at(y, ([0, 0, 1], [1, 1, 2]), x[0] ** 2)
    np.putmask(y, W > 0, x * 2.0)
    y.sort(axis=1)
    return quadratic(y)


def _creation(x):
    y = np.empty_like(x)
    y[...] = np.sin(x)
    z = np.full_like(x, x[0, 0])
    np.copyto(z, x**2, where=W > 0)
    v = np.full(x.shape, x[1, 2] ** 2, like=x)  # numpy dispatches np.full on like=
    v[0] = x[0] * x[1, 1]
    return quadratic(y * z + v)


# (module, name, function, arguments)
EIG_CASE = "eig"  # skipped where this numpy's eig is complex (issue 22)

CASES = [
    # ufuncs
    ("ufuncs", "exp log sqrt", lambda x: quadratic(np.exp(x) * np.log(x) + np.sqrt(x)), (X,)),
    ("ufuncs", "trigonometric", lambda x: quadratic(np.sin(x) * np.tan(x) + np.arcsin(x)), (X,)),
    ("ufuncs", "hyperbolic", lambda x: quadratic(np.tanh(x) + np.arctanh(x) * np.cosh(x)), (X,)),
    ("ufuncs", "power", lambda x, y: quadratic(np.power(x, y) + x**3), (X, Y)),
    ("ufuncs", "divide", lambda x, y: quadratic(x / y - np.reciprocal(y)), (X, Y)),
    ("ufuncs", "logaddexp", lambda x, y: quadratic(np.logaddexp(x, y) + np.expm1(x)), (X, Y)),
    ("ufuncs", "log1p hypot", lambda x, y: quadratic(np.log1p(x) * np.hypot(x, y)), (X, Y)),
    ("ufuncs", "arctan2", lambda x, y: quadratic(np.arctan2(x, y)), (X, Y)),
    ("ufuncs", "maximum", lambda x, y: quadratic(np.maximum(x, y) * np.fmin(x, y)), (X, Y)),
    # ufunc methods: closed forms, the fold, reduceat and outer
    (
        "ufunc_methods",
        "reduce accumulate",
        lambda x: quadratic(np.logaddexp.reduce(x, axis=0) * np.subtract.reduce(x, axis=1)[0]
                            + np.divide.accumulate(x, axis=0)[-1]),
        (X,),
    ),
    (
        "ufunc_methods",
        "reduceat outer",
        lambda x, y: quadratic(np.hypot.reduceat(x, [0, 2], axis=1).ravel()[:2]
                               + np.arctan2.outer(x[0], y[1])[0, :2]),
        (X, Y),
    ),
    ("ufuncs", "where", lambda x, y: quadratic(np.where(W > 0, x, y**2)), (X, Y)),
    ("ufuncs", "clip", lambda x: quadratic(np.clip(x * 2, 0.7, 1.5)), (X,)),
    ("ufuncs", "copysign", lambda x: quadratic(np.copysign(x * x, W)), (X,)),
    ("ufuncs", "modf frexp", lambda x: quadratic(np.modf(3 * x)[0] + np.frexp(x)[0]), (X,)),
    ("ufuncs", "ldexp", lambda x: quadratic(np.ldexp(x, np.array([1, -1, 2]))), (X,)),
    ("ufuncs", "select", lambda x, y: quadratic(np.select([x > 0.5, y > 0.5], [x * y, y])), (X, Y)),
    # reductions
    ("reductions", "sum mean", lambda x: quadratic(np.sum(x**2, axis=0) * np.mean(x)), (X,)),
    ("reductions", "prod", lambda x: quadratic(np.prod(x, axis=1)), (X,)),
    ("reductions", "max min", lambda x: quadratic(np.max(x, axis=1) - np.min(x)), (X,)),
    ("reductions", "var std", lambda x: quadratic(np.var(x, axis=1) + np.std(x)), (X,)),
    (
        "reductions",
        "ufunc.reduce",
        lambda x: quadratic(np.add.reduce(x**2, axis=1) + np.multiply.reduce(x, axis=1)),
        (X,),
    ),
    (
        "reductions",
        "average",
        lambda x, y: quadratic(np.average(x, axis=1, weights=y) + np.average(x**2)),
        (X, Y),
    ),
    # cumulative
    (
        "cumulative",
        "cumsum cumprod",
        lambda x: quadratic(np.cumsum(x, axis=1) * np.cumprod(x, axis=0)),
        (X,),
    ),
    ("cumulative", "diff", lambda x: quadratic(np.diff(x**2, 2, prepend=0.5)), (X,)),
    (
        "cumulative",
        "trapezoid ediff1d",
        lambda x, y: quadratic(np.trapezoid(x**2, y, axis=1)) + quadratic(np.ediff1d(x * y)),
        (X, Y),
    ),
    # linalg
    ("fft", "rfft and irfft", lambda x: quadratic(np.fft.irfft(np.fft.rfft(x) * 1j, n=5)), (X,)),
    ("fft", "fft", lambda x: quadratic(np.abs(np.fft.fft(x * x, axis=0))), (X,)),
    ("linalg", "matmul", lambda a, b: quadratic(a @ b.T), (X, Y)),
    ("linalg", "dot", lambda a, b: quadratic(np.dot(a, b.T)), (X, Y)),
    ("linalg", "inner", lambda a, b: quadratic(np.inner(a, b)), (X, Y)),
    ("linalg", "outer", lambda u, v: quadratic(np.outer(u, v)), (VECTOR, X[0].copy())),
    ("linalg", "tensordot", lambda a, b: quadratic(np.tensordot(a, b, ([0], [0]))), (X, Y)),
    ("linalg", "trace", lambda a: quadratic(np.trace(a**2) * a), (SQUARE,)),
    (
        "linalg",
        "multi_dot",
        lambda a, v: quadratic(np.linalg.multi_dot([v, a, a, v])),
        (SQUARE, SQUARE[0].copy()),
    ),
    ("linalg", "solve", lambda a, b: quadratic(np.linalg.solve(a, b)), (BATCH, X.T.copy())),
    ("linalg", "inv", lambda a: quadratic(np.linalg.inv(a)), (BATCH,)),
    (
        "linalg",
        "det slogdet",
        lambda a: quadratic(np.linalg.det(a) + np.linalg.slogdet(a)[1]),
        (BATCH,),
    ),
    (
        "linalg",
        "norm",
        lambda x: (
            quadratic(np.linalg.norm(x, axis=1))
            + quadratic(np.linalg.norm(x, 3, axis=0))
            + quadratic(np.linalg.norm(x, "fro"))
        ),
        (X,),
    ),
    (
        "linalg",
        "kron cross matrix_power",
        lambda a, x: (
            quadratic(np.kron(x, a[:2, :2]))
            + quadratic(np.cross(x, x[::-1]))
            + quadratic(np.linalg.matrix_power(a / 3, 3))
        ),
        (SQUARE, X),
    ),
    ("linalg", "vdot", lambda a, b: quadratic(np.vdot(a, b) * a), (X, Y)),
    # factorizations
    (
        "factorizations",
        "svd",
        lambda a: (
            quadratic(np.linalg.svd(a, full_matrices=False)[0] ** 2)
            + quadratic(np.linalg.svd(a)[1])
            + quadratic(np.linalg.svd(a)[2] ** 2)
        ),
        (TALL,),
    ),
    (
        "factorizations",
        "qr",
        lambda a: quadratic(np.linalg.qr(a)[0]) + quadratic(np.linalg.qr(a.T)[1]),
        (TALL,),
    ),
    (
        "factorizations",
        EIG_CASE,
        lambda e: quadratic(np.linalg.eigvals(e)) + quadratic(np.linalg.eig(e)[1] ** 2),
        (EIGEN,),
    ),
    (
        "factorizations",
        "pinv lstsq cond",
        lambda a, b: (
            quadratic(np.linalg.pinv(a))
            + quadratic(np.linalg.lstsq(a, b)[0])
            + quadratic(np.linalg.lstsq(a, b)[1])
            + quadratic(np.linalg.cond(a))
        ),
        (TALL, X[0].copy()),
    ),
    # signals
    (
        "signals",
        "convolve correlate interp",
        lambda v, w: (
            quadratic(np.convolve(v, w[0], "same") + np.correlate(v, w[1] ** 2, "same"))
            + quadratic(np.interp([0.35, 0.8], [0.0, 0.5, 1.0], w[0]))
        ),
        (VECTOR, X),
    ),
    # library
    (
        "library",
        "apply_along_axis vander fftshift tensorinv",
        lambda x, v, a: (
            quadratic(np.apply_along_axis(np.cumprod, 1, x))
            + quadratic(np.vander(v, 3) * np.fft.fftshift(v)[:, None])
            + quadratic(np.linalg.tensorinv(a.reshape(3, 3), ind=1))
        ),
        (X, VECTOR, SQUARE),
    ),
    # shape
    (
        "shape",
        "split",
        lambda x: quadratic(np.hsplit(x, 3)[1] * np.array_split(x, 2)[0] + np.real_if_close(x)),
        (X,),
    ),
    (
        "shape",
        "views",
        lambda x: quadratic(np.transpose(x)[::-1] * np.reshape(x, (3, 2)) + np.flip(x.T, 0)),
        (X,),
    ),
    (
        "shape",
        "copies",
        lambda x: quadratic(np.reshape(x.T, 6) + np.concatenate([x[0], x[1]]) * np.copy(x).ravel()),
        (X,),
    ),
    (
        "shape",
        "stack broadcast_to",
        lambda x: quadratic(np.stack([x, x**2]) * np.broadcast_to(x[0], (2, 2, 3))),
        (X,),
    ),
    ("shape", "rot90 diagonal", lambda a: quadratic(np.rot90(a) @ np.diagonal(a)), (SQUARE,)),
    (
        "shape",
        "block meshgrid",
        lambda x, y: quadratic(np.block([[x, y], [y, x]])) + quadratic(np.meshgrid(x[0], y[1])[1]),
        (X, Y),
    ),
    # indexing
    (
        "indexing",
        "basic, fancy and mask",
        lambda x: quadratic(x[1:, ::2] * 2 + x[[0, 1, 1], [2, 0, 0]].sum() + x[W > 0].sum()),
        (X,),
    ),
    # inplace and creation
    ("inplace", "put, add.at, putmask, sort", _inplace, (X,)),
    (
        "inplace",
        "take_along_axis",
        lambda x: quadratic(np.take_along_axis(x, np.array([[0, 0], [2, 1]]), 1)),
        (X,),
    ),
    ("creation", "empty_like, full_like, copyto", _creation, (X,)),
    ("indexing", "setitem", _setitem, (X,)),
    # nondiff: no derivative, and none in the second-order sweep either
    (
        "nondiff",
        "argmax sign",
        lambda x: quadratic(x[:, np.argmax(x[0])] * np.sign(x.T - 0.5)),
        (X,),
    ),
    # rearrange, einsum, statistics
    (
        "rearrange",
        "tile repeat roll",
        lambda x: quadratic(np.tile(x, 2) + np.repeat(np.roll(x, 2), 2, axis=1)),
        (X,),
    ),
    (
        "rearrange",
        "take partition",
        lambda x: quadratic(np.take(x, [0, 2, 5, 5]) * np.partition(x, 1, axis=None)[:4]),
        (X,),
    ),
    (
        "rearrange",
        "pad",
        lambda x: quadratic(np.pad(x, 2, "reflect", reflect_type="odd") + np.pad(x, 2, "maximum")),
        (X,),
    ),
    (
        "rearrange",
        "insert delete tril diag",
        lambda a, v: (
            quadratic(np.insert(a, 1, v[:3], axis=0) @ np.delete(a, 0, axis=1))
            + quadratic(np.tril(a) + np.diag(v[:3]) + np.choose([0, 2, 1], a))
        ),
        (SQUARE, VECTOR),
    ),
    (
        "einsum",
        "einsum",
        lambda a, b: quadratic(np.einsum("ij,kj->ik", a, b) + np.einsum("ii->i", a[:, :2])),
        (X, Y),
    ),
    (
        "nanfunctions",
        "nansum nanmean nanvar nanmax",
        lambda x: quadratic(
            np.nansum(x, axis=0) * np.nanmean(x)
            + np.nanvar(x, axis=0)
            + np.nanmax(x, axis=0)
            + np.nancumprod(x, axis=1)[0]
        ),
        (X,),
    ),
    (
        "numpy_source",
        "cov gradient polydiv (numpy's code, traced)",
        lambda x: (
            quadratic(np.cov(x))
            + quadratic(np.gradient(x)[1])
            + quadratic(np.polydiv(x[0], x[1])[0])
        ),
        (X,),
    ),
    (
        "numpy_source",
        "histogram2d (numpy's code, traced)",
        lambda x: (
            quadratic(np.concatenate(np.histogram2d(x[0], x[1] ** 2, bins=2)[1:]))
            + quadratic(np.histogram2d(x[0], x[1], bins=2, weights=x[1] * x[0])[0])
        ),
        (X,),
    ),
    (
        "sets",
        "unique unique_all (and intersect1d setxor1d, numpy's code, traced)",
        lambda x: (
            quadratic(np.unique(x) + np.unique(x, axis=1).ravel())
            + quadratic(np.unique_all(x[::-1]).values)
            # common values by construction: each is taken from the first argument
            + quadratic(np.intersect1d(x[0], x.ravel()[1:4]) * np.setxor1d(x[0], x[1, :2])[:2])
        ),
        (X,),
    ),
    (
        "statistics",
        "median quantile",
        lambda x: quadratic(np.median(x, axis=0) * np.quantile(x, 0.3, axis=0)),
        (X,),
    ),
    (
        "statistics",
        "nanmedian nanquantile nanpercentile",
        lambda x: quadratic(
            np.nanmedian(x, axis=1) * np.nanquantile(x, 0.3, axis=1)
            + np.nanpercentile(x, [20, 90], axis=1)
        ),
        (WITH_NAN,),
    ),
]


try:  # SciPy's rule modules, where SciPy is installed (an optional extra)
    import scipy.special as special

    from mutagrad.scipy import linalg as scipy_linalg
    from mutagrad.scipy import signal as scipy_signal
    from mutagrad.scipy import stats as scipy_stats
except ImportError:
    special = None
else:
    CASES += [
        (
            "scipy_special",
            "gammaln expit erf jv",
            lambda x: quadratic(special.gammaln(x + 1) * special.expit(x) + special.erf(x)
                                + special.jv(1, x)),
            (X,),
        ),
        (
            "scipy_stats",
            "norm.logpdf t.cdf",
            lambda x, y: quadratic(scipy_stats.norm.logpdf(x, y, 1.5)
                                   + scipy_stats.t.cdf(x, 3.0, y)),
            (X, Y),
        ),
        (
            "scipy_linalg",
            "solve cholesky expm",
            lambda a: quadratic(scipy_linalg.solve(a, VECTOR[:3]) + scipy_linalg.expm(a / 4)
                                + scipy_linalg.cholesky(a @ a.T)),
            (SQUARE,),
        ),
        ("scipy_signal", "convolve", lambda x, y: quadratic(scipy_signal.convolve(x, y)), (X, Y)),
    ]


@pytest.mark.parametrize(
    ("module", "name", "function", "args"), CASES, ids=[f"{m}: {n}" for m, n, _, _ in CASES]
)
def test_second_order(module, name, function, args):
    if name == EIG_CASE and EIG_IS_COMPLEX:
        pytest.skip(needs_real_eig.kwargs["reason"])
    check_gradient(function, *args, order=2)


def test_every_rule_module_has_a_case():
    # registry, first_use (the loader of SciPy's rules) and scipy_support register no rules.
    modules = {m.name for m in pkgutil.iter_modules(mutagrad.rules.__path__)} - {
        "registry", "first_use", "scipy_support"}  # fmt: skip
    if special is None:
        modules = {m for m in modules if not m.startswith("scipy")}
    missing = modules - {m for m, *_ in CASES}
    assert not missing, f"rule modules without a second-order case: {sorted(missing)}"
