"""Derivative rules of numpy's elementwise functions (ufuncs), ``np.where``, ``np.select``,
``np.clip``, ``np.sinc`` and ``np.nan_to_num``.

Each rule names what its vjps read: ``(0,)`` the first argument, ``(ANS,)``
the output. Reading the output rather than the input (``exp``, ``tanh``,
``sqrt``, the divisor's vjp of ``/``) lets ``np.exp(z, out=z)`` and
``y /= y.sum()`` keep no copy of the overwritten input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy import float64, ndarray  # (by name: see mutagrad.core.record)

from mutagrad.core.jvps import ELEMENTWISE, lift, linear
from mutagrad.core.regions import COMPLEX_FROM_PARTS
from mutagrad.core.registry import ANS, UFUNC_RULES, CallRule, VjpRule, implements, ufunc_rule
from mutagrad.traced.dispatch import apply
from mutagrad.traced.value import WrappedValue, unwrap, wrap_constant

LOG2 = np.log(2.0)
LOG10 = np.log(10.0)


def _where_zero(x, fill):
    """``x`` with exact zeros replaced by ``fill`` (guards log(0) in power's vjp)."""
    return np.where(x == 0, fill, x)


# -- arithmetic ---------------------------------------------------------------

def _sum_jvp(ufunc: np.ufunc, negated: bool) -> Any:
    """``t_x + t_y`` (``t_x - t_y``): one pass over fresh memory, where the elementwise
    derivation's ``t_x + (-t_y)`` makes two (at N=1e6 the extra array's pages cost as
    much as the pass). Exact, complex values included; the sum never is an argument's
    tangent itself (a write into one would change the other)."""

    def sum_jvp(tangents: list[Any], ans: Any, args: Any, kwargs: Any) -> Any:
        tx, ty = tangents
        ndim = np.ndim(ans)
        if tx is not None and ty is not None:
            return ufunc(lift(tx, ndim), lift(ty, ndim))
        if ty is not None:
            return -lift(ty, ndim) if negated else lift(ty, ndim).copy()
        return None if tx is None else lift(tx, ndim).copy()

    sum_jvp.reads_declared = True  # type: ignore[attr-defined]  # (nothing: the vjps' reads)
    return linear(sum_jvp)


ufunc_rule(np.add, lambda g, ans, x, y: g, lambda g, ans, x, y: g, reads=((), ()),
           jvp=_sum_jvp(np.add, negated=False))  # fmt: skip
ufunc_rule(np.subtract, lambda g, ans, x, y: g, lambda g, ans, x, y: -g, reads=((), ()),
           jvp=_sum_jvp(np.subtract, negated=True))  # fmt: skip
ufunc_rule(
    np.multiply,
    lambda g, ans, x, y: g * y,
    lambda g, ans, x, y: g * x,
    reads=((1,), (0,)),
)
ufunc_rule(
    np.true_divide,
    lambda g, ans, x, y: g / y,
    # Reads x, not the quotient (as PyTorch, JAX and autograd do): numpy's own
    # code divides in place and then overwrites the quotient (np.corrcoef's
    # c /= stddev, then np.clip(..., out=c)), which poisoned a saved quotient.
    lambda g, ans, x, y: -g * (x / y) / y,
    reads=((1,), (0, 1)),
)
ufunc_rule(np.negative, lambda g, ans, x: -g, reads=((),))
ufunc_rule(np.positive, lambda g, ans, x: g, reads=((),))
# conj's transpose under the pairing Re(u * v) is conj itself (a real g is its own).
ufunc_rule(np.conjugate, lambda g, ans, x: np.conjugate(g), reads=((),), handles_complex=True)


_SCALARS = (int, float, float64, np.int64)


_FLOAT64 = np.dtype(float64)  # (numpy's one instance: ``is`` tells it)
_TWO = np.array(2.0)  # (a 0-d float64 array: no Python number for numpy to convert)
_TWO.flags.writeable = False


def _single_value(g):
    """The value of a raw array broadcast from one scalar (all strides 0), else None."""
    if type(g) is ndarray and g.size and not any(g.strides):
        return g[(0,) * g.ndim]
    return None


def _power_base_vjp(g, ans, x, y):
    kind = type(x)
    if (
        type(y) in _SCALARS
        and (kind is float64 or (kind is ndarray and x.dtype.kind == "f"))
        and y != 0
    ):
        # A constant exponent (x**2): y * x**(y - 1) with numpy's fast scalar powers,
        # in one pass over x when g is a reduction's broadcast scalar. (An element
        # x[i] ** 2 in a loop is a float64 scalar: np.where and the masks below cost
        # it several numpy calls.)
        if y == 1:
            return g
        factor = _single_value(g)
        power = x if y == 2 else x ** (y - 1)
        if factor is not None:
            return power * (y * factor)
        if y == 2 and type(g) is ndarray:  # (g * x) * 2 is g * (2 * x) bit for bit
            # (except where g * x is subnormal: doubling keeps its rounding), with one
            # new array, not two (traced, g * x would be written in place)
            doubled = g * x
            # The same float64 loop with a float64 operand either way: numpy converts the
            # Python 2 (weak) to one for every call, which costs as much as g * x itself.
            # (Not for another dtype, where 2.0 as float64 would promote; nor for a numpy
            # scalar, where numpy's own scalar arithmetic multiplies, and warns, apart.)
            doubled *= _TWO if type(doubled) is ndarray and doubled.dtype is _FLOAT64 else 2
            return doubled
        return g * (y * power)
    # y * x**(y - 1), except 0 * 0**-1 (nan) where x = y = 0: the derivative there is 0.
    # (Guarding on y alone, x**(y or 1), would also be wrong to differentiate in y at y = 0.)
    safe_x = np.where((x == 0) & (y == 0), 1.0, x)
    return g * y * safe_x ** (y - 1)


_ufunc: np.ufunc  # (the loops below reuse it for ufuncs that numpy's stubs type apart)
for _ufunc in (np.power, np.float_power):
    ufunc_rule(
        _ufunc,
        _power_base_vjp,
        lambda g, ans, x, y: g * np.log(_where_zero(x, 1.0)) * ans,
        reads=((0, 1), (0, ANS)),
    )
ufunc_rule(np.square, lambda g, ans, x: g * 2 * x, reads=((0,),))
ufunc_rule(np.reciprocal, lambda g, ans, x: -g * ans * ans, reads=((ANS,),))
REMAINDER = ufunc_rule(
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
def _absolute_vjp(g, ans, x):
    # d|x| = sign(x) dx for real x (0 at the kink); for complex z, Re(conj(z) dz) / |z|,
    # whose transpose multiplies by conj(z) / |z| = conj(sign(z)) (0 at z = 0).
    direction = np.sign(x)
    if np.result_type(direction).kind == "c":
        direction = np.conjugate(direction)
    return g * direction


ufunc_rule(np.absolute, _absolute_vjp, reads=((0,),), handles_complex=True)


class ComplexOnly(CallRule):
    """A ufunc piecewise constant on real numbers and smooth on complex ones (``np.sign``).

    Real arguments give a constant, as a non-differentiable function's do;
    complex arguments are recorded with ``rule``.
    """

    __slots__ = ("rule", "ufunc")

    def __init__(self, ufunc: np.ufunc, rule: VjpRule):
        super().__init__(ufunc.__name__)
        self.ufunc = ufunc
        self.rule = rule

    def call(self, args, kwargs):
        raw = unwrap(args)
        if any(np.result_type(r).kind == "c" for r in raw):
            return apply(self.rule, args, kwargs)
        return wrap_constant(self.ufunc(*raw, **(kwargs or {})), args, raw)


def _complex_sign_vjp(g, ans, z):
    # sign(z) = z / |z| has d/dz = 1 / (2|z|) and d/dconj(z) = -z^2 / (2|z|^3); the
    # transpose of dz -> a dz + b conj(dz) is g -> g a + conj(g) conj(b). At z = 0, where
    # numpy's sign is 0 and no derivative exists, 0 (as absolute's at its kink).
    r = np.abs(z)
    safe = np.where(r == 0, 1.0, r)
    grad = g / (2 * safe) - np.conjugate(g) * np.conjugate(z) ** 2 / (2 * safe**3)
    return np.where(r == 0, 0, grad)


UFUNC_RULES[np.sign] = ComplexOnly(
    np.sign,
    VjpRule("sign", np.sign, (_complex_sign_vjp,), ((0,),), jvp=ELEMENTWISE,
            handles_complex=True),
)


def _angle_vjp(g, ans, z, deg=False):
    # angle = arctan2(y, x): d/dx = -y/|z|^2, d/dy = x/|z|^2, so a real cotangent g
    # gives g (d/dx - i d/dy) = -i g conj(z) / |z|^2 (0 at z = 0, where no derivative exists).
    r2 = np.real(z) ** 2 + np.imag(z) ** 2
    safe = np.where(r2 == 0, 1.0, r2)
    grad = -1j * np.real(g) * np.conjugate(z) / safe
    grad = np.where(r2 == 0, 0, grad)
    return grad * (180 / np.pi) if deg else grad


ANGLE = VjpRule("angle", np.angle, (_angle_vjp,), ((0,),), jvp=ELEMENTWISE, handles_complex=True)


@implements(np.angle)
def angle(z, deg=False):
    # Of a real array, 0 or pi: piecewise constant. Of a complex one, smooth.
    if isinstance(z, WrappedValue) and np.result_type(unwrap(z)).kind == "c":
        return apply(ANGLE, (z,), {"deg": deg} if deg else None)
    return wrap_constant(np.angle(unwrap(z), deg=deg), (z,), (unwrap(z),))
ufunc_rule(np.fabs, lambda g, ans, x: g * np.sign(x), reads=((0,),))
ufunc_rule(
    np.nextafter,
    # x moved by one unit in the last place towards y: x's derivative, none in y.
    lambda g, ans, x, y: g,
    lambda g, ans, x, y: np.zeros(np.shape(y)),
    reads=((), ()),
)
ufunc_rule(
    np.copysign,
    # |x| with y's sign: the derivative of |x| (0 at the kink, as absolute's), times that sign.
    lambda g, ans, x, y: g * np.sign(x) * np.copysign(1.0, y),
    lambda g, ans, x, y: np.zeros(np.shape(y)),  # piecewise constant in y
    reads=((0, 1), ()),
)
ufunc_rule(
    np.heaviside,
    # Piecewise constant in x; where x is exactly 0 the result is h itself.
    lambda g, ans, x, h: np.zeros(np.shape(x)),
    lambda g, ans, x, h: g * (x == 0),
    reads=((), (0,)),
)

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
def _arccosh_vjp(g, ans, x):
    if np.result_type(x).kind == "c":
        # numpy's principal branch, log(z + sqrt(z + 1) sqrt(z - 1)): its derivative is
        # 1 / (sqrt(z - 1) sqrt(z + 1)), which sqrt(z * z - 1) equals only for Re z > 0.
        return g / (np.sqrt(x - 1) * np.sqrt(x + 1))
    return g / np.sqrt(x * x - 1)


ufunc_rule(np.arccosh, _arccosh_vjp, reads=((0,),))
ufunc_rule(np.arctanh, lambda g, ans, x: g / (1 - x * x), reads=((0,),))
for _ufunc in (np.deg2rad, np.radians):
    ufunc_rule(_ufunc, lambda g, ans, x: g * (np.pi / 180), reads=((),))
for _ufunc in (np.rad2deg, np.degrees):
    ufunc_rule(_ufunc, lambda g, ans, x: g * (180 / np.pi), reads=((),))
ufunc_rule(
    np.arctan2,
    lambda g, ans, y, x: g * x / (x * x + y * y),
    lambda g, ans, y, x: -g * y / (x * x + y * y),
    reads=((0, 1), (0, 1)),
)
def _nonzero(ans):
    """``ans`` with its zeros replaced by ones: hypot(0, 0)'s partials are then 0 (x / 1),
    the subgradient np.linalg.norm's rule takes at zero too, rather than 0 / 0."""
    return np.where(ans == 0, 1.0, ans)


ufunc_rule(
    np.hypot,
    lambda g, ans, x, y: g * x / _nonzero(ans),
    lambda g, ans, x, y: g * y / _nonzero(ans),
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
    jvp=ELEMENTWISE,  # (it broadcasts like a ufunc: its Jacobian is diagonal)
)


@implements(np.where)
def where(condition, *values):
    if not values:
        return np.nonzero(condition)
    x, y = values
    return apply(WHERE, (condition, x, y))


@implements(np.sinc)
def sinc(x):
    # numpy's value: sin(y) / y with y = pi x, and y = 0 replaced by the machine epsilon.
    pi_x = np.pi * (x if isinstance(x, WrappedValue) else np.asanyarray(x))
    dtype = np.result_type(pi_x)
    eps = np.finfo(dtype).eps if dtype.kind == "f" else 1e-20
    y = np.where(pi_x, pi_x, eps)
    # Near 0, differentiating sin(y) / y cancels catastrophically (and at 0 numpy's value
    # is a constant). There the value stays numpy's while the derivatives are those of
    # the Taylor polynomial 1 - y^2/6 + y^4/120 (exact to the last bit for |y| < 1e-3):
    # taylor - taylor_constant is exactly 0, but not in its derivatives. Each branch is
    # evaluated only where it is used (1 and 0 elsewhere), so that the branch not taken
    # has finite derivatives: np.where's zero cotangent times an infinity would be NaN.
    near_zero = np.abs(pi_x) < 1e-3
    far = np.where(near_zero, 1.0, y)
    small = np.where(near_zero, pi_x, 0.0)
    square = small * small
    taylor = 1 - square / 6 + square * square / 120
    near_value = unwrap(np.sin(y) / y) + (taylor - unwrap(taylor))
    return np.where(near_zero, near_value, np.sin(far) / far)


@implements(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    dtype = np.result_type(unwrap(x))
    if not isinstance(x, WrappedValue) or dtype.kind not in "fc":
        # Exact types have no NaN.
        return wrap_constant(np.nan_to_num(unwrap(x), copy=True, nan=nan, posinf=posinf,
                                           neginf=neginf))  # fmt: skip
    if dtype.kind == "c":
        result = _complex_nan_to_num(x, dtype, nan, posinf, neginf)
    else:
        info = np.finfo(dtype)
        high = info.max if posinf is None else posinf
        low = info.min if neginf is None else neginf
        result = np.where(np.isnan(x), nan, x)
        result = np.where(np.isposinf(x), high, result)
        result = np.where(np.isneginf(x), low, result)
        result = result if np.result_type(result) == dtype else result.astype(dtype)
    if not copy:  # numpy replaces in place: a recorded write
        from mutagrad.traced.mutation import assign

        assign(x, Ellipsis, result, "np.nan_to_num(..., copy=False)")
        return x
    return result


def _complex_nan_to_num(x, dtype, nan, posinf, neginf):
    """numpy replaces in each part on its own; the parts are joined bit for bit."""
    parts = [nan_to_num(part(x), nan=nan, posinf=posinf, neginf=neginf)
             for part in (np.real, np.imag)]  # fmt: skip
    raw = np.empty(np.shape(unwrap(x)), dtype)
    raw.real, raw.imag = unwrap(parts[0]), unwrap(parts[1])
    return apply(COMPLEX_FROM_PARTS, tuple(parts), None, raw[()] if raw.ndim == 0 else raw)


@implements(np.select)
def select(condlist, choicelist, default=0):
    # numpy fills the default, then copies each choice where its condition holds,
    # the first condition last (so it wins): the same as nested np.where.
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    dtype = np.result_type(*(unwrap(c) for c in choicelist), unwrap(default))
    for condition in condlist:
        if np.result_type(unwrap(condition)) != np.bool_:
            raise TypeError("invalid entry in condlist: should be boolean ndarray")
    shape = np.broadcast_shapes(*(np.shape(c) for c in (*condlist, *choicelist)))
    if not isinstance(default, WrappedValue):
        default = np.asarray(default, dtype)
    result = np.broadcast_to(default, shape)
    for condition, choice in zip(condlist[::-1], choicelist[::-1]):
        result = np.where(condition, choice, result)
    return result if np.result_type(result) == dtype else result.astype(dtype)


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
    jvp=ELEMENTWISE,
)


@implements(np.clip)
def clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue, max=np._NoValue,
         **kwargs):  # fmt: skip
    from mutagrad.traced.mutation import assign_out

    lo = a_min if a_min is not np._NoValue else (None if min is np._NoValue else min)
    hi = a_max if a_max is not np._NoValue else (None if max is np._NoValue else max)
    return assign_out(apply(CLIP, (a, lo, hi), kwargs or None), out, "np.clip")


# -- ufuncs with several outputs -------------------------------------------------------


class MultipleOutputs(CallRule):
    """A ufunc with several outputs: computed once, each output recorded with its own rule.

    ``rules[i]`` is the rule of output ``i`` (``None`` when it carries no derivative).
    """

    __slots__ = ("rules", "ufunc")

    def __init__(self, ufunc: np.ufunc, rules: tuple[VjpRule | None, ...]):
        super().__init__(ufunc.__name__)
        self.ufunc = ufunc
        self.rules = rules

    def call(self, args, kwargs):
        outputs = self.ufunc(*unwrap(args), **(kwargs or {}))
        return tuple(
            wrap_constant(out, args, unwrap(args)) if rule is None else apply(rule, args, None, out)
            for rule, out in zip(self.rules, outputs)
        )


def _register_outputs(ufunc, *rules):
    UFUNC_RULES[ufunc] = MultipleOutputs(ufunc, rules)


_register_outputs(
    np.modf, VjpRule("modf", np.modf, (lambda g, ans, x: g,), ((),), jvp=ELEMENTWISE), None
)
_register_outputs(
    np.divmod,
    None,
    VjpRule("divmod", np.divmod, REMAINDER.vjps, REMAINDER.reads, jvp=ELEMENTWISE),
)
_register_outputs(
    np.frexp,
    VjpRule(
        "frexp",
        np.frexp,
        (lambda g, ans, x: np.ldexp(g, -np.frexp(x)[1]),),
        ((0,),),
        jvp=ELEMENTWISE,
    ),
    None,
)


# -- complex values -----------------------------------------------------------------
# These rules' vjps multiply by f'(z) as written, unconjugated, which for these
# holomorphic functions (and the selections, piecewise the identity) is JAX's
# convention for complex values too; tests/rules/test_complex.py checks each one
# against finite differences in the real and the imaginary direction.
HOLOMORPHIC = (
    np.add, np.subtract, np.multiply, np.true_divide, np.negative, np.positive,
    np.power, np.float_power, np.square, np.reciprocal,
    np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10, np.log1p, np.sqrt,
    np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan,
    np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh,
    np.maximum, np.minimum, np.fmax, np.fmin,
)  # fmt: skip
for _ufunc in HOLOMORPHIC:
    UFUNC_RULES[_ufunc].handles_complex = True
for _rule in (WHERE, CLIP):
    _rule.handles_complex = True
