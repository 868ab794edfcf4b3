"""Derivative rules of numpy's elementwise functions (ufuncs) and ``np.where``/``np.clip``.

Each rule names what its vjps read: ``(0,)`` the first argument, ``(ANS,)``
the output. Reading the output rather than the input (``exp``, ``tanh``,
``sqrt``, the divisor's vjp of ``/``) lets ``np.exp(z, out=z)`` and
``y /= y.sum()`` keep no copy of the overwritten input.
"""

from __future__ import annotations

import numpy as np

from mutagrad.core.wrapped import UFUNC_RULES, apply, unwrap, wrap_constant
from mutagrad.rules import ANS, VjpRule, implements, ufunc_rule

LOG2 = np.log(2.0)
LOG10 = np.log(10.0)


def _where_zero(x, fill):
    """``x`` with exact zeros replaced by ``fill`` (guards log(0) in power's vjp)."""
    return np.where(x == 0, fill, x)


# -- arithmetic ---------------------------------------------------------------

ufunc_rule(np.add, lambda g, ans, x, y: g, lambda g, ans, x, y: g, reads=((), ()))
ufunc_rule(np.subtract, lambda g, ans, x, y: g, lambda g, ans, x, y: -g, reads=((), ()))
ufunc_rule(
    np.multiply,
    lambda g, ans, x, y: g * y,
    lambda g, ans, x, y: g * x,
    reads=((1,), (0,)),
)
ufunc_rule(
    np.true_divide,
    lambda g, ans, x, y: g / y,
    lambda g, ans, x, y: -g * ans / y,
    reads=((1,), (ANS, 1)),
)
ufunc_rule(np.negative, lambda g, ans, x: -g, reads=((),))
ufunc_rule(np.positive, lambda g, ans, x: g, reads=((),))
ufunc_rule(np.conjugate, lambda g, ans, x: g, reads=((),))
ufunc_rule(
    np.power,
    lambda g, ans, x, y: g * y * x ** np.where(y, y - 1, 1.0),
    lambda g, ans, x, y: g * np.log(_where_zero(x, 1.0)) * ans,
    reads=((0, 1), (0, ANS)),
)
ufunc_rule(np.square, lambda g, ans, x: g * 2 * x, reads=((0,),))
ufunc_rule(np.reciprocal, lambda g, ans, x: -g * ans * ans, reads=((ANS,),))
ufunc_rule(
    np.remainder,
    lambda g, ans, x, y: g,
    lambda g, ans, x, y: -g * np.floor_divide(x, y),
    reads=((), (0, 1)),
)
ufunc_rule(
    np.fmod,
    lambda g, ans, x, y: g,
    lambda g, ans, x, y: -g * np.trunc(x / y),
    reads=((), (0, 1)),
)
ufunc_rule(
    np.ldexp,
    lambda g, ans, x, exponent: np.ldexp(g, exponent),
    lambda g, ans, x, exponent: None,  # an integer exponent: no derivative
    reads=((1,), ()),
)
ufunc_rule(np.absolute, lambda g, ans, x: g * np.sign(x), reads=((0,),))
ufunc_rule(np.fabs, lambda g, ans, x: g * np.sign(x), reads=((0,),))

# -- exponentials and logarithms ---------------------------------------------

ufunc_rule(np.exp, lambda g, ans, x: g * ans, reads=((ANS,),))
ufunc_rule(np.exp2, lambda g, ans, x: g * ans * LOG2, reads=((ANS,),))
ufunc_rule(np.expm1, lambda g, ans, x: g * (ans + 1), reads=((ANS,),))
ufunc_rule(np.log, lambda g, ans, x: g / x, reads=((0,),))
ufunc_rule(np.log2, lambda g, ans, x: g / (x * LOG2), reads=((0,),))
ufunc_rule(np.log10, lambda g, ans, x: g / (x * LOG10), reads=((0,),))
ufunc_rule(np.log1p, lambda g, ans, x: g / (x + 1), reads=((0,),))
ufunc_rule(np.sqrt, lambda g, ans, x: g * 0.5 / ans, reads=((ANS,),))
ufunc_rule(np.cbrt, lambda g, ans, x: g / (3 * ans * ans), reads=((ANS,),))
ufunc_rule(
    np.logaddexp,
    lambda g, ans, x, y: g * np.exp(x - ans),
    lambda g, ans, x, y: g * np.exp(y - ans),
    reads=((0, ANS), (1, ANS)),
)
ufunc_rule(
    np.logaddexp2,
    lambda g, ans, x, y: g * np.exp2(x - ans),
    lambda g, ans, x, y: g * np.exp2(y - ans),
    reads=((0, ANS), (1, ANS)),
)

# -- trigonometric and hyperbolic --------------------------------------------

ufunc_rule(np.sin, lambda g, ans, x: g * np.cos(x), reads=((0,),))
ufunc_rule(np.cos, lambda g, ans, x: -g * np.sin(x), reads=((0,),))
ufunc_rule(np.tan, lambda g, ans, x: g * (1 + ans * ans), reads=((ANS,),))
ufunc_rule(np.arcsin, lambda g, ans, x: g / np.sqrt(1 - x * x), reads=((0,),))
ufunc_rule(np.arccos, lambda g, ans, x: -g / np.sqrt(1 - x * x), reads=((0,),))
ufunc_rule(np.arctan, lambda g, ans, x: g / (1 + x * x), reads=((0,),))
ufunc_rule(np.sinh, lambda g, ans, x: g * np.cosh(x), reads=((0,),))
ufunc_rule(np.cosh, lambda g, ans, x: g * np.sinh(x), reads=((0,),))
ufunc_rule(np.tanh, lambda g, ans, x: g * (1 - ans * ans), reads=((ANS,),))
ufunc_rule(np.arcsinh, lambda g, ans, x: g / np.sqrt(x * x + 1), reads=((0,),))
ufunc_rule(np.arccosh, lambda g, ans, x: g / np.sqrt(x * x - 1), reads=((0,),))
ufunc_rule(np.arctanh, lambda g, ans, x: g / (1 - x * x), reads=((0,),))
ufunc_rule(np.deg2rad, lambda g, ans, x: g * (np.pi / 180), reads=((),))
ufunc_rule(np.rad2deg, lambda g, ans, x: g * (180 / np.pi), reads=((),))
ufunc_rule(
    np.arctan2,
    lambda g, ans, y, x: g * x / (x * x + y * y),
    lambda g, ans, y, x: -g * y / (x * x + y * y),
    reads=((0, 1), (0, 1)),
)
ufunc_rule(
    np.hypot,
    lambda g, ans, x, y: g * x / ans,
    lambda g, ans, x, y: g * y / ans,
    reads=((0, ANS), (1, ANS)),
)

# -- selection -----------------------------------------------------------------


def _max_share(x, y):
    """1 where ``x`` wins a maximum against ``y``, 1/2 on ties, 0 where it loses."""
    return np.where(x > y, 1.0, np.where(x == y, 0.5, 0.0))


def _min_share(x, y):
    return np.where(x < y, 1.0, np.where(x == y, 0.5, 0.0))


for _ufunc, _share in ((np.maximum, _max_share), (np.fmax, _max_share),
                       (np.minimum, _min_share), (np.fmin, _min_share)):  # fmt: skip
    ufunc_rule(
        _ufunc,
        lambda g, ans, x, y, share=_share: g * share(x, y),
        lambda g, ans, x, y, share=_share: g * share(y, x),
        reads=((0, 1), (0, 1)),
    )


WHERE = VjpRule(
    "where",
    np.where,
    (
        # The condition (a traced float used as one too: np.where(y, ...)) is
        # piecewise constant: no gradient flows into it.
        lambda g, ans, condition, x, y: None,
        lambda g, ans, condition, x, y: np.where(condition, g, 0.0),
        lambda g, ans, condition, x, y: np.where(condition, 0.0, g),
    ),
    ((), (0,), (0,)),
)


@implements(np.where)
def where(condition, *values):
    if not values:
        return np.nonzero(condition)
    x, y = values
    return apply(WHERE, (condition, x, y))


def _clip_hits(ans, lo, hi):
    """Where the output sits on the upper bound, on the lower one, and strictly inside.

    Read from the output, not the input, so that ``np.clip(y, lo, hi, out=y)``
    keeps nothing of the ``y`` it overwrites. Where a_min > a_max numpy gives
    a_max, so the upper bound wins ties.
    """
    at_hi = (ans == hi) if hi is not None else np.zeros(np.shape(ans), dtype=bool)
    at_lo = ((ans == lo) & ~at_hi) if lo is not None else np.zeros(np.shape(ans), dtype=bool)
    return at_hi, at_lo, ~(at_hi | at_lo)


CLIP = VjpRule(
    "clip",
    np.clip,
    (
        lambda g, ans, x, lo, hi: np.where(_clip_hits(ans, lo, hi)[2], g, 0.0),
        lambda g, ans, x, lo, hi: np.where(_clip_hits(ans, lo, hi)[1], g, 0.0),
        lambda g, ans, x, lo, hi: np.where(_clip_hits(ans, lo, hi)[0], g, 0.0),
    ),
    ((ANS, 1, 2), (ANS, 1, 2), (ANS, 1, 2)),
    params=False,
)


@implements(np.clip)
def clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue, max=np._NoValue,
         **kwargs):  # fmt: skip
    from mutagrad.core.mutation import assign_out

    lo = a_min if a_min is not np._NoValue else (None if min is np._NoValue else min)
    hi = a_max if a_max is not np._NoValue else (None if max is np._NoValue else max)
    return assign_out(apply(CLIP, (a, lo, hi), kwargs or None), out, "np.clip")


# -- ufuncs with several outputs -------------------------------------------------------


class MultipleOutputs:
    """A ufunc with several outputs: computed once, each output recorded with its own rule.

    ``rules[i]`` is the rule of output ``i`` (``None`` when it carries no derivative).
    """

    def __init__(self, ufunc: np.ufunc, rules: tuple[VjpRule | None, ...]):
        self.ufunc = ufunc
        self.rules = rules
        self.name = ufunc.__name__

    def call(self, args, kwargs):
        outputs = self.ufunc(*unwrap(args), **(kwargs or {}))
        return tuple(
            wrap_constant(out, args, unwrap(args)) if rule is None else apply(rule, args, None, out)
            for rule, out in zip(self.rules, outputs)
        )


def _register_outputs(ufunc, *rules):
    UFUNC_RULES[ufunc] = MultipleOutputs(ufunc, rules)


_register_outputs(np.modf, VjpRule("modf", np.modf, (lambda g, ans, x: g,), ((),)), None)
_register_outputs(
    np.divmod,
    None,
    VjpRule("divmod", np.divmod, UFUNC_RULES[np.remainder].vjps, UFUNC_RULES[np.remainder].reads),
)
_register_outputs(
    np.frexp,
    VjpRule("frexp", np.frexp, (lambda g, ans, x: np.ldexp(g, -np.frexp(x)[1]),), ((0,),)),
    None,
)
