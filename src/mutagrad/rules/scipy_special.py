"""Derivative rules of ``scipy.special``: its ufuncs, and the Python functions among its names.

Imported on first use (:mod:`mutagrad.rules.first_use`), never by
``import mutagrad``: this module imports SciPy.

* The ufuncs (``gammaln``, ``expit``, ``erf``, ``jv``...) reach mutagrad's
  ``__array_ufunc__`` as numpy's do; their rules are registered here into the
  same table, and the value is always SciPy's own (the ufunc runs on the raw
  data). Each vjp is written with these same ufuncs, so it differentiates
  again: ``digamma``'s derivative is ``polygamma(1, x)``, whose derivative is
  ``polygamma(2, x)``...
* ``polygamma``, ``multigammaln``, ``logsumexp``, ``softmax`` and
  ``log_softmax`` are Python functions that convert their input
  (``np.asarray``, SciPy's array-API namespace): they are rules applied by
  the functions of the same names here, which ``mutagrad.scipy.special``
  exports; their value is SciPy's too.

An argument that is an integer order (``jv``'s ``v`` as ``jn``'s ``n``,
``polygamma``'s ``n``) or a shape parameter without a closed-form derivative
(``betainc``'s ``a`` and ``b``, ``gammainc``'s ``a``) gets no derivative:
differentiating with respect to it is refused by name, while a constant or
integer there is fine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special as special
from scipy.special import _ufuncs

from mutagrad.core.jvps import TRANSPOSED
from mutagrad.core.registry import ANS, VjpRule, nondifferentiable, ufunc_rule
from mutagrad.rules.scipy_support import (
    expand_reduced,
    no_derivative,
    with_rule,
)
from mutagrad.traced.dispatch import apply
from mutagrad.traced.value import unwrap, wrap_constant

TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2
SQRT_TWO_PI = math.sqrt(2 * math.pi)

# The ufuncs whose rules are here, by the name scipy.special gives them (the coverage
# table reads it); psi is digamma, jn is jv.
UFUNCS: dict[str, Any] = {}


def _rule(
    name: str, *vjps: Any, reads: tuple[tuple[Any, ...], ...], handles_complex: bool = False
) -> None:
    ufunc = getattr(special, name)
    rule = ufunc_rule(ufunc, *vjps, reads=reads, handles_complex=handles_complex)
    rule.name = f"scipy.special.{name}"
    UFUNCS[name] = ufunc


def _sign(x: Any) -> Any:
    return np.sign(x)


# -- gamma and its relatives -------------------------------------------------------------

_rule("gammaln", lambda g, ans, x: g * special.digamma(x), reads=((0,),))
_rule("digamma", lambda g, ans, x: g * polygamma(1, x), reads=((0,),))
UFUNCS["psi"] = special.psi
_rule("gamma", lambda g, ans, x: g * ans * special.digamma(x), reads=((0, ANS),))
_rule("rgamma", lambda g, ans, x: -g * ans * special.digamma(x), reads=((0, ANS),))
nondifferentiable(special.gammasgn)  # piecewise constant
_rule(
    "beta",
    lambda g, ans, a, b: g * ans * (special.digamma(a) - special.digamma(a + b)),
    lambda g, ans, a, b: g * ans * (special.digamma(b) - special.digamma(a + b)),
    reads=((0, 1, ANS), (0, 1, ANS)),
)
_rule(
    "betaln",
    lambda g, ans, a, b: g * (special.digamma(a) - special.digamma(a + b)),
    lambda g, ans, a, b: g * (special.digamma(b) - special.digamma(a + b)),
    reads=((0, 1), (0, 1)),
)
# The Hurwitz zeta function, which scipy.special.zeta(x, q) calls (and polygamma through it).
_zeta_rule = ufunc_rule(
    _ufuncs._zeta,
    no_derivative("scipy.special.zeta", "x", "only its derivative in q is implemented"),
    lambda g, ans, s, q: -g * s * _ufuncs._zeta(s + 1, q),
    reads=((), (0, 1)),
)
_zeta_rule.name = "scipy.special.zeta"


def _incomplete_beta_density(a: Any, b: Any, x: Any) -> Any:
    """x^(a-1) (1-x)^(b-1) / B(a, b): the derivative of betainc in x."""
    return np.exp(special.xlogy(a - 1, x) + special.xlog1py(b - 1, -x) - special.betaln(a, b))


def _incomplete_gamma_density(a: Any, x: Any) -> Any:
    """x^(a-1) e^-x / Gamma(a): the derivative of gammainc in x."""
    return np.exp(special.xlogy(a - 1, x) - x - special.gammaln(a))


_SHAPE = "no closed form is implemented"
_rule(
    "betainc",
    no_derivative("scipy.special.betainc", "a", _SHAPE),
    no_derivative("scipy.special.betainc", "b", _SHAPE, position=1),
    lambda g, ans, a, b, x: g * _incomplete_beta_density(a, b, x),
    reads=((), (), (0, 1, 2)),
)
_rule(
    "gammainc",
    no_derivative("scipy.special.gammainc", "a", _SHAPE),
    lambda g, ans, a, x: g * _incomplete_gamma_density(a, x),
    reads=((), (0, 1)),
)
_rule(
    "gammaincc",
    no_derivative("scipy.special.gammaincc", "a", _SHAPE),
    lambda g, ans, a, x: -g * _incomplete_gamma_density(a, x),
    reads=((), (0, 1)),
)

# -- logistic, error function, normal distribution ------------------------------------------

_rule("expit", lambda g, ans, x: g * ans * (1 - ans), reads=((ANS,),))
_rule("logit", lambda g, ans, x: g / (x * (1 - x)), reads=((0,),))
_rule("log_expit", lambda g, ans, x: g * special.expit(-x), reads=((0,),))
# (holomorphic: the same vjps for complex arguments)
_rule("erf", lambda g, ans, x: g * TWO_OVER_SQRT_PI * np.exp(-x * x), reads=((0,),),
      handles_complex=True)  # fmt: skip
_rule("erfc", lambda g, ans, x: -g * TWO_OVER_SQRT_PI * np.exp(-x * x), reads=((0,),),
      handles_complex=True)  # fmt: skip
_rule("erfinv", lambda g, ans, x: g * SQRT_PI_OVER_TWO * np.exp(ans * ans), reads=((ANS,),))
_rule("erfcinv", lambda g, ans, x: -g * SQRT_PI_OVER_TWO * np.exp(ans * ans), reads=((ANS,),))
_rule("ndtr", lambda g, ans, x: g * np.exp(-x * x / 2) / SQRT_TWO_PI, reads=((0,),))
_rule("ndtri", lambda g, ans, p: g * SQRT_TWO_PI * np.exp(ans * ans / 2), reads=((ANS,),))
# d log Phi(x) = phi(x) / Phi(x), as one exponential: finite far into the lower tail.
_rule("log_ndtr", lambda g, ans, x: g * np.exp(-x * x / 2 - ans) / SQRT_TWO_PI,
      reads=((0, ANS),))  # fmt: skip

# -- x log y and entropy -----------------------------------------------------------------------

_rule(
    "xlogy",
    lambda g, ans, x, y: g * np.log(y),
    lambda g, ans, x, y: g * x / y,
    reads=((1,), (0, 1)),
)
_rule(
    "xlog1py",
    lambda g, ans, x, y: g * np.log1p(y),
    lambda g, ans, x, y: g * x / (1 + y),
    reads=((1,), (0, 1)),
)
_rule("entr", lambda g, ans, x: -g * (np.log(x) + 1), reads=((0,),))

# -- Bessel functions ----------------------------------------------------------------------------
# Integer-order ones are written with the real-order ufuncs (jv, yv, iv, ive), so that
# orders n - 1 and n + 1 need no special case: J1' = (J0 - J2) / 2 is exact at 0.

_ORDER = "the order"
_rule("i0", lambda g, ans, x: g * special.i1(x), reads=((0,),))
_rule("i0e", lambda g, ans, x: g * (special.i1e(x) - _sign(x) * ans), reads=((0, ANS),))
_rule("i1", lambda g, ans, x: g * (special.i0(x) + special.iv(2, x)) / 2, reads=((0,),))
_rule(
    "i1e",
    lambda g, ans, x: g * ((special.i0e(x) + special.ive(2, x)) / 2 - _sign(x) * ans),
    reads=((0, ANS),),
)
_rule("j0", lambda g, ans, x: -g * special.j1(x), reads=((0,),))
_rule("j1", lambda g, ans, x: g * (special.j0(x) - special.jv(2, x)) / 2, reads=((0,),))
_rule("y0", lambda g, ans, x: -g * special.y1(x), reads=((0,),))
_rule("y1", lambda g, ans, x: g * (special.y0(x) - special.yv(2, x)) / 2, reads=((0,),))
_rule(
    "jv",
    no_derivative("scipy.special.jv", "v", _ORDER),
    lambda g, ans, v, x: g * (special.jv(v - 1, x) - special.jv(v + 1, x)) / 2,
    reads=((), (0, 1)),
)
UFUNCS["jn"] = special.jn
_rule(
    "yv",
    no_derivative("scipy.special.yv", "v", _ORDER),
    lambda g, ans, v, x: g * (special.yv(v - 1, x) - special.yv(v + 1, x)) / 2,
    reads=((), (0, 1)),
)
_rule(
    "yn",
    no_derivative("scipy.special.yn", "n", _ORDER),
    lambda g, ans, n, x: g * (special.yv(n - 1, x) - special.yv(n + 1, x)) / 2,
    reads=((), (0, 1)),
)
_rule(
    "iv",
    no_derivative("scipy.special.iv", "v", _ORDER),
    lambda g, ans, v, x: g * (special.iv(v - 1, x) + special.iv(v + 1, x)) / 2,
    reads=((), (0, 1)),
)


def _ive_vjp(g: Any, ans: Any, v: Any, x: Any) -> Any:
    # ive = iv e^-|x|: the derivative of iv scaled the same way, less sign(x) ive.
    return g * ((special.ive(v - 1, x) + special.ive(v + 1, x)) / 2 - _sign(x) * ans)


_rule("ive", no_derivative("scipy.special.ive", "v", _ORDER), _ive_vjp, reads=((), (0, 1, ANS)))
_rule(
    "kv",
    no_derivative("scipy.special.kv", "v", _ORDER),
    lambda g, ans, v, x: -g * (special.kv(v - 1, x) + special.kv(v + 1, x)) / 2,
    reads=((), (0, 1)),
)
_rule(
    "kve",
    no_derivative("scipy.special.kve", "v", _ORDER),
    lambda g, ans, v, x: g * (ans - (special.kve(v - 1, x) + special.kve(v + 1, x)) / 2),
    reads=((), (0, 1, ANS)),
)


# -- the Python functions: polygamma, multigammaln, logsumexp, softmax, log_softmax -------------

POLYGAMMA = VjpRule(
    "scipy.special.polygamma",
    special.polygamma,
    (
        no_derivative("scipy.special.polygamma", "n", _ORDER),
        lambda g, ans, n, x: g * polygamma(n + 1, x),
    ),
    ((), (0, 1)),
    jvp=TRANSPOSED,
)
polygamma: Callable[..., Any] = with_rule(  # (annotated: used above, in vjps)
    special.polygamma, POLYGAMMA, lambda n, x: ((n, x), None)
)


def _multigammaln_vjp(g: Any, ans: Any, a: Any, d: Any) -> Any:
    # d/da sum_j gammaln(a - j/2) = sum_j digamma(a - j/2), j = 0..d-1.
    halves = np.arange(int(d)) / 2
    return g * np.sum(special.digamma(np.expand_dims(a, -1) - halves), axis=-1)


MULTIGAMMALN = VjpRule(
    "scipy.special.multigammaln",
    special.multigammaln,
    (_multigammaln_vjp, None),  # d is an integer dimension
    ((0, 1), ()),
    jvp=TRANSPOSED,
)
multigammaln = with_rule(special.multigammaln, MULTIGAMMALN, lambda a, d: ((a, d), None))


def _logsumexp_weights(g, ans, a, b, axis, keepdims, sign):
    """``g * exp(a - ans)`` with ``g`` and ``ans`` back on ``a``'s axes (times the sign of
    the sum for return_sign, whose value is the log of its absolute value)."""
    ndim = np.ndim(a) if b is None else max(np.ndim(a), np.ndim(b))
    weights = expand_reduced(g, ndim, axis, keepdims) * np.exp(
        a - expand_reduced(ans, ndim, axis, keepdims)
    )
    return weights if sign is None else weights * expand_reduced(sign, ndim, axis, keepdims)


def _logsumexp_vjp_a(g, ans, a, b, axis=None, keepdims=False, sign=None):
    weights = _logsumexp_weights(g, ans, a, b, axis, keepdims, sign)
    return weights if b is None else weights * b


def _logsumexp_vjp_b(g, ans, a, b, axis=None, keepdims=False, sign=None):
    return _logsumexp_weights(g, ans, a, b, axis, keepdims, sign)


def _logsumexp_value(a, b, axis=None, keepdims=False, sign=None):
    if sign is None:
        return special.logsumexp(a, axis=axis, b=b, keepdims=keepdims)
    return special.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)[0]


LOGSUMEXP = VjpRule(
    "scipy.special.logsumexp",
    _logsumexp_value,
    (_logsumexp_vjp_a, _logsumexp_vjp_b),
    ((0, 1, ANS), (0, ANS)),
    jvp=TRANSPOSED,
)


def _logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False,
               return_sign: bool = False) -> Any:  # fmt: skip
    params = {"axis": axis, "keepdims": keepdims}
    if not return_sign:
        return apply(LOGSUMEXP, (a, b), params)
    value, sign = special.logsumexp(unwrap(a), axis=axis, b=unwrap(b), keepdims=keepdims,
                                    return_sign=True)  # fmt: skip
    # The sign is piecewise constant: a constant, which the vjps read as a parameter.
    return apply(LOGSUMEXP, (a, b), {**params, "sign": sign}, value), wrap_constant(sign)


logsumexp = with_rule(special.logsumexp, LOGSUMEXP, adapter=_logsumexp)


def _softmax_vjp(g, ans, x, axis=None):
    return ans * (g - np.sum(g * ans, axis=axis, keepdims=True))


SOFTMAX = VjpRule("scipy.special.softmax", special.softmax, (_softmax_vjp,), ((ANS,),),
                  jvp=TRANSPOSED)  # fmt: skip
softmax = with_rule(special.softmax, SOFTMAX, lambda x, axis=None: ((x,), {"axis": axis}))


def _log_softmax_vjp(g, ans, x, axis=None):
    return g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True)


LOG_SOFTMAX = VjpRule(
    "scipy.special.log_softmax", special.log_softmax, (_log_softmax_vjp,), ((ANS,),),
    jvp=TRANSPOSED,
)
log_softmax = with_rule(
    special.log_softmax, LOG_SOFTMAX, lambda x, axis=None: ((x,), {"axis": axis})
)

# The Python functions above, by name (mutagrad.scipy.special exports them; the coverage
# table reads them).
FUNCTIONS: dict[str, Any] = {
    "polygamma": polygamma,
    "multigammaln": multigammaln,
    "logsumexp": logsumexp,
    "softmax": softmax,
    "log_softmax": log_softmax,
}
