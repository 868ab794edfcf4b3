"""Derivative rules of ``scipy.stats`` distributions: their densities and distribution functions.

SciPy's distribution methods run its generic machinery
(``_distn_infrastructure``: ``np.asarray``, ``argsreduce``, ``np.place``), which
converts its input, so they are not traced through: each method here is a
rule whose forward value is SciPy's own method on the raw data, and whose
vjps are written with numpy and ``scipy.special`` ufuncs (so they
differentiate again).

A continuous family is given by its standard log-density ``L(z, *shapes)``
with ``z = (x - loc) / scale``, and the derivatives of ``L`` in ``z`` and in
each shape parameter. Every method follows from those:

* ``logpdf = L(z) - log(scale)`` and ``pdf = exp(logpdf)``;
* ``cdf``, ``sf`` and their logarithms: their derivative in ``z`` is the
  standard density ``±exp(L(z))`` (divided by the value, for the logarithms);
  in a shape parameter they have no closed form, and differentiating one is
  refused by name.

``poisson`` (discrete: ``logpmf``, ``pmf``, ``cdf``, ``sf`` and logarithms in
``mu``), ``multivariate_normal`` (``logpdf``, ``pdf``, ``entropy`` in ``x``,
``mean`` and ``cov``; SciPy reads the lower triangle of ``cov``, and only it
gets a gradient) and ``dirichlet`` (``logpdf``, ``pdf`` in ``x`` and
``alpha``) are written out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special as special
import scipy.stats as stats

from mutagrad.core.jvps import TRANSPOSED
from mutagrad.core.registry import ANS, VjpRule
from mutagrad.rules.scipy_support import no_derivative, with_rule
from mutagrad.traced.value import WrappedValue

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
LOG_2 = math.log(2.0)
_NO_CLOSED_FORM = "no closed form is implemented"


class Distribution:
    """One distribution's functions that take traced values: ``norm.logpdf(x, loc, scale)``.

    Each function is an attribute named after SciPy's method; the subclasses
    below declare which ones a kind of distribution has.
    """

    def __init__(self, name: str, scipy_distribution: Any, functions: dict[str, Any]):
        self.name = name
        self.scipy = scipy_distribution
        self.functions = functions
        for method, function in functions.items():
            setattr(self, method, function)


class DensityDistribution(Distribution):
    """A distribution with a density: ``dirichlet``."""

    logpdf: Callable[..., Any]
    pdf: Callable[..., Any]


class ContinuousDistribution(DensityDistribution):
    """A continuous family of location and scale, with its distribution functions."""

    cdf: Callable[..., Any]
    logcdf: Callable[..., Any]
    sf: Callable[..., Any]
    logsf: Callable[..., Any]


class MultivariateNormalDistribution(DensityDistribution):
    """``multivariate_normal``: its density and its entropy."""

    entropy: Callable[..., Any]


class DiscreteDistribution(Distribution):
    """A discrete distribution: ``poisson``'s mass and distribution functions."""

    logpmf: Callable[..., Any]
    pmf: Callable[..., Any]
    cdf: Callable[..., Any]
    logcdf: Callable[..., Any]
    sf: Callable[..., Any]
    logsf: Callable[..., Any]


# -- continuous families of location and scale -------------------------------------------


class Family:
    """A continuous family: the standard log-density, and its derivatives in z and the shapes.

    ``log_density(z, *shapes)``, ``d_z(z, *shapes)`` and ``d_shapes[i](z, *shapes)``
    are written with numpy and scipy.special, so the vjps built from them
    differentiate again.
    """

    def __init__(
        self,
        name: str,
        shapes: tuple[str, ...],
        log_density: Callable[..., Any],
        d_z: Callable[..., Any],
        d_shapes: tuple[Callable[..., Any], ...] = (),
    ):
        self.name = name
        self.shapes = shapes
        self.log_density = log_density
        self.d_z = d_z
        self.d_shapes = d_shapes
        self.scipy = getattr(stats, name)


def _standard(x, loc, scale):
    return (x - loc) / scale


def _method_derivatives(family: Family, method: str) -> tuple[Any, Any, Any]:
    """``(dF/dz, [dF/dshape_i or None], extra dF/dscale)`` of a method, as functions of
    ``(ans, z, shapes, scale)``."""
    L, Lz, Ls = family.log_density, family.d_z, family.d_shapes
    if method == "logpdf":
        return (lambda ans, z, s: Lz(z, *s), [lambda ans, z, s, d=d: d(z, *s) for d in Ls],
                lambda ans, scale: -1 / scale)  # fmt: skip
    if method == "pdf":
        return (lambda ans, z, s: ans * Lz(z, *s),
                [lambda ans, z, s, d=d: ans * d(z, *s) for d in Ls],
                lambda ans, scale: -ans / scale)  # fmt: skip
    density = {
        "cdf": lambda ans, z, s: np.exp(L(z, *s)),
        "sf": lambda ans, z, s: -np.exp(L(z, *s)),
        "logcdf": lambda ans, z, s: np.exp(L(z, *s) - ans),
        "logsf": lambda ans, z, s: -np.exp(L(z, *s) - ans),
    }[method]
    return density, [None] * len(Ls), None


def _family_rule(family: Family, method: str) -> VjpRule:
    """The rule of ``family.method(x, *shapes, loc, scale)``, SciPy's value."""
    n = len(family.shapes)
    d_z, d_shapes, d_scale = _method_derivatives(family, method)
    scipy_method = getattr(family.scipy, method)

    def value(x, *rest):
        *shapes, loc, scale = rest
        return scipy_method(x, *shapes, loc=loc, scale=scale)

    def unpack(args):
        x, *rest = args
        *shapes, loc, scale = rest
        return x, shapes, loc, scale

    def vjp_x(g, ans, *args):
        x, shapes, loc, scale = unpack(args)
        return g * d_z(ans, _standard(x, loc, scale), shapes) / scale

    def vjp_loc(g, ans, *args):
        x, shapes, loc, scale = unpack(args)
        return -g * d_z(ans, _standard(x, loc, scale), shapes) / scale

    def vjp_scale(g, ans, *args):
        x, shapes, loc, scale = unpack(args)
        z = _standard(x, loc, scale)
        c = -g * d_z(ans, z, shapes) * z / scale
        return c if d_scale is None else c + g * d_scale(ans, scale)

    def vjp_shape(i: int) -> Any:
        derivative = d_shapes[i]
        if derivative is None:
            return no_derivative(f"scipy.stats.{family.name}.{method}", family.shapes[i],
                                 _NO_CLOSED_FORM, position=1 + i)  # fmt: skip

        def vjp(g, ans, *args):
            x, shapes, loc, scale = unpack(args)
            return g * derivative(ans, _standard(x, loc, scale), shapes)

        return vjp

    everything = (*range(n + 3), ANS)
    vjps = (vjp_x, *(vjp_shape(i) for i in range(n)), vjp_loc, vjp_scale)
    return VjpRule(f"scipy.stats.{family.name}.{method}", value, vjps, (everything,) * (n + 3),
                   jvp=TRANSPOSED)  # fmt: skip


def _family_binder(family: Family) -> Callable[..., Any]:
    """Calls as SciPy takes them (shapes, loc and scale positional or by name) -> the rule's
    positional arguments ``(x, *shapes, loc, scale)``."""
    names = ("x", *family.shapes, "loc", "scale")
    defaults = {"loc": 0, "scale": 1}

    def bind(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], None]:
        if len(args) > len(names):
            raise TypeError(f"{family.name}: too many arguments ({len(args)})")
        values = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names or key in values:
                raise TypeError(f"{family.name}: unexpected or repeated argument {key!r}")
            values[key] = value
        missing = [k for k in names if k not in values and k not in defaults]
        if missing:
            raise TypeError(f"{family.name}: missing argument(s) {', '.join(missing)}")
        return tuple(values.get(k, defaults.get(k)) for k in names), None

    return bind


CONTINUOUS_METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")


def _continuous(family: Family) -> ContinuousDistribution:
    bind = _family_binder(family)
    functions = {
        method: with_rule(
            getattr(family.scipy, method), _family_rule(family, method), bind, name=method
        )
        for method in CONTINUOUS_METHODS
    }
    return ContinuousDistribution(family.name, family.scipy, functions)


def _t_log_density(z, df):
    return (special.gammaln((df + 1) / 2) - special.gammaln(df / 2)
            - 0.5 * np.log(df * np.pi) - (df + 1) / 2 * np.log1p(z * z / df))  # fmt: skip


def _t_d_df(z, df):
    zz = z * z
    return (0.5 * (special.digamma((df + 1) / 2) - special.digamma(df / 2)) - 0.5 / df
            - 0.5 * np.log1p(zz / df) + 0.5 * (df + 1) * zz / (df * (df + zz)))  # fmt: skip


norm = _continuous(Family(
    "norm", (), lambda z: -z * z / 2 - LOG_SQRT_2PI, lambda z: -z,
))  # fmt: skip
t = _continuous(Family(
    "t", ("df",), _t_log_density, lambda z, df: -(df + 1) * z / (df + z * z), (_t_d_df,),
))  # fmt: skip
gamma = _continuous(Family(
    "gamma",
    ("a",),
    lambda z, a: special.xlogy(a - 1, z) - z - special.gammaln(a),
    lambda z, a: (a - 1) / z - 1,
    (lambda z, a: np.log(z) - special.digamma(a),),
))  # fmt: skip
beta = _continuous(Family(
    "beta",
    ("a", "b"),
    lambda z, a, b: special.xlogy(a - 1, z) + special.xlog1py(b - 1, -z) - special.betaln(a, b),
    lambda z, a, b: (a - 1) / z - (b - 1) / (1 - z),
    (
        lambda z, a, b: np.log(z) - special.digamma(a) + special.digamma(a + b),
        lambda z, a, b: np.log1p(-z) - special.digamma(b) + special.digamma(a + b),
    ),
))  # fmt: skip
chi2 = _continuous(Family(
    "chi2",
    ("df",),
    lambda z, df: special.xlogy(df / 2 - 1, z) - z / 2 - special.gammaln(df / 2) - df / 2 * LOG_2,
    lambda z, df: (df / 2 - 1) / z - 0.5,
    (lambda z, df: 0.5 * np.log(z) - 0.5 * special.digamma(df / 2) - 0.5 * LOG_2,),
))  # fmt: skip


# -- poisson: a discrete distribution, differentiable in mu ------------------------------


def _poisson_log_mass(k, mu):
    return special.xlogy(k, mu) - mu - special.gammaln(k + 1)


def _poisson_d_mu(method: str) -> Callable[..., Any]:
    """d method(k, mu, loc) / d mu, from the mass at floor(k - loc) for the distribution
    functions (cdf = gammaincc(floor(k) + 1, mu))."""

    def derivative(ans, k, mu, loc):
        k = k - loc
        if method == "logpmf":
            return k / mu - 1
        if method == "pmf":
            return ans * (k / mu - 1)
        mass_below = _poisson_log_mass(np.floor(k), mu)
        return {
            "cdf": lambda: -np.exp(mass_below),
            "sf": lambda: np.exp(mass_below),
            "logcdf": lambda: -np.exp(mass_below - ans),
            "logsf": lambda: np.exp(mass_below - ans),
        }[method]()

    return derivative


def _poisson(method: str) -> Any:
    scipy_method = getattr(stats.poisson, method)
    derivative = _poisson_d_mu(method)
    name = f"scipy.stats.poisson.{method}"
    rule = VjpRule(
        name,
        lambda k, mu, loc: scipy_method(k, mu, loc=loc),
        (
            no_derivative(name, "k", "a count"),
            lambda g, ans, k, mu, loc: g * derivative(ans, k, mu, loc),
            no_derivative(name, "loc", "an integer shift", position=2),
        ),
        ((), (0, 1, 2, ANS), ()),
        jvp=TRANSPOSED,
    )
    return with_rule(scipy_method, rule, lambda k, mu, loc=0: ((k, mu, loc), None), name=method)


poisson = DiscreteDistribution("poisson", stats.poisson, {
    method: _poisson(method) for method in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf")
})  # fmt: skip


# -- multivariate_normal -----------------------------------------------------------------


def _mT(a):
    return np.swapaxes(a, -1, -2)


def _lower_triangle(symmetric):
    """The cotangent of a matrix of which SciPy reads the lower triangle (scipy.linalg.eigh
    with lower=True): each off-diagonal element read stands for two."""
    return np.tril(symmetric, -1) * 2 + symmetric * np.eye(np.shape(symmetric)[-1])


def _from_lower(cov):
    """The symmetric matrix SciPy sees in ``cov``: its lower triangle, mirrored."""
    return np.tril(cov) + _mT(np.tril(cov, -1))


def _precision(cov, allow_singular):
    # Of the matrix SciPy sees, so that a second derivative in cov reads its lower triangle too.
    symmetric = _from_lower(cov)
    return np.linalg.pinv(symmetric, hermitian=True) if allow_singular else np.linalg.inv(symmetric)


def _mvn_parts(g, x, mean, cov, allow_singular):
    """``(g on x's points, P (x - mean))``: the cotangent with a trailing axis, and the
    precision matrix applied to each point's deviation."""
    scaled = np.matmul(x - mean, _precision(cov, allow_singular))
    return np.expand_dims(g, -1), scaled


def _mvn_vjp_x(g, ans, x, mean, cov, allow_singular=False):
    g_points, scaled = _mvn_parts(g, x, mean, cov, allow_singular)
    return -g_points * scaled


def _mvn_vjp_mean(g, ans, x, mean, cov, allow_singular=False):
    g_points, scaled = _mvn_parts(g, x, mean, cov, allow_singular)
    return g_points * scaled


def _mvn_vjp_cov(g, ans, x, mean, cov, allow_singular=False):
    # d logpdf / d cov = (P r r^T P - P) / 2 for each point r = x - mean, weighted by g.
    g_points, scaled = _mvn_parts(g, x, mean, cov, allow_singular)
    points = np.reshape(scaled, (-1, np.shape(scaled)[-1]))
    weights = np.reshape(g_points, (-1, 1))
    outer = np.matmul(_mT(points * weights), points)
    total = np.sum(weights) * _precision(cov, allow_singular)
    return _lower_triangle((outer - total) / 2)


def _of_density(vjp: Callable[..., Any]) -> Callable[..., Any]:
    """The vjp of pdf = exp(logpdf) from logpdf's: the cotangent times the density."""
    return lambda g, ans, *args, **params: vjp(g * ans, ans, *args, **params)


def _mvn_rule(method: str) -> VjpRule:
    scipy_method = getattr(stats.multivariate_normal, method)
    vjps = (_mvn_vjp_x, _mvn_vjp_mean, _mvn_vjp_cov)
    return VjpRule(
        f"scipy.stats.multivariate_normal.{method}",
        lambda x, mean, cov, allow_singular=False: scipy_method(
            x, mean, cov, allow_singular=allow_singular
        ),
        vjps if method == "logpdf" else tuple(_of_density(v) for v in vjps),
        ((0, 1, 2, ANS),) * 3 if method == "pdf" else ((0, 1, 2),) * 3,
        jvp=TRANSPOSED,
    )


def _square_cov(cov: Any, dim: int) -> Any:
    """``cov`` as the matrix SciPy makes of it: a number times the identity, a diagonal."""
    if np.ndim(cov) == 0:
        return cov * np.eye(dim)
    if np.ndim(cov) == 1:
        return np.diag(cov) if isinstance(cov, WrappedValue) else np.diag(np.asarray(cov, float))
    return cov


def _mvn_binder(*, entropy: bool) -> Callable[..., Any]:
    def bind(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any] | None]:
        names = ("mean", "cov") if entropy else ("x", "mean", "cov", "allow_singular")
        values = {**dict(zip(names, args)), **kwargs}
        x: Any = values.get("x")  # (None for entropy)
        mean, cov = values.get("mean"), values.get("cov", 1)
        dim = np.shape(mean)[-1] if mean is not None and np.ndim(mean) else (
            np.shape(cov)[-1] if np.ndim(cov) else np.shape(x)[-1])  # fmt: skip
        mean = np.zeros(dim) if mean is None else mean
        cov = _square_cov(cov, dim)
        if entropy:
            return (mean, cov), None
        return (x, mean, cov), {"allow_singular": values.get("allow_singular", False)}

    return bind


def _entropy_vjp_cov(g, ans, mean, cov):
    return _lower_triangle(g * _precision(cov, False) / 2)


MVN_ENTROPY = VjpRule(
    "scipy.stats.multivariate_normal.entropy",
    lambda mean, cov: stats.multivariate_normal.entropy(mean, cov),
    (lambda g, ans, mean, cov: np.zeros(np.shape(mean)), _entropy_vjp_cov),
    ((0,), (1,)),
    jvp=TRANSPOSED,
)

_MVN = stats.multivariate_normal
multivariate_normal = MultivariateNormalDistribution("multivariate_normal", _MVN, {
    "logpdf": with_rule(_MVN.logpdf, _mvn_rule("logpdf"), _mvn_binder(entropy=False),
                        name="logpdf"),
    "pdf": with_rule(_MVN.pdf, _mvn_rule("pdf"), _mvn_binder(entropy=False), name="pdf"),
    "entropy": with_rule(_MVN.entropy, MVN_ENTROPY, _mvn_binder(entropy=True), name="entropy"),
})  # fmt: skip


# -- dirichlet: x has the categories on its first axis (SciPy's layout) --------------------


def _dirichlet_alpha(alpha, x):
    """alpha with axes added so that it broadcasts against x of shape (k,) or (k, n)."""
    return np.reshape(alpha, np.shape(alpha) + (1,) * (np.ndim(x) - 1))


def _dirichlet_vjp_x(g, ans, x, alpha):
    return g * (_dirichlet_alpha(alpha, x) - 1) / x


def _dirichlet_vjp_alpha(g, ans, x, alpha):
    a = _dirichlet_alpha(alpha, x)
    total = g * (np.log(x) - special.digamma(a) + special.digamma(np.sum(alpha)))
    return np.sum(np.reshape(total, (np.shape(total)[0], -1)), axis=1)


def _dirichlet(method: str) -> Any:
    scipy_method = getattr(stats.dirichlet, method)
    vjps = (_dirichlet_vjp_x, _dirichlet_vjp_alpha)
    rule = VjpRule(
        f"scipy.stats.dirichlet.{method}",
        scipy_method,
        vjps if method == "logpdf" else tuple(_of_density(v) for v in vjps),
        ((0, 1, ANS),) * 2 if method == "pdf" else ((0, 1),) * 2,
        jvp=TRANSPOSED,
    )
    return with_rule(scipy_method, rule, lambda x, alpha: ((x, alpha), None), name=method)


dirichlet = DensityDistribution("dirichlet", stats.dirichlet, {
    "logpdf": _dirichlet("logpdf"), "pdf": _dirichlet("pdf"),
})  # fmt: skip

# Every distribution here, by its scipy.stats name (mutagrad.scipy.stats's modules; the
# coverage table).
DISTRIBUTIONS: dict[str, Distribution] = {
    d.name: d for d in (norm, t, gamma, beta, chi2, poisson, multivariate_normal, dirichlet)
}
