"""Derivative rules of numpy's 1-d signal functions, which numpy computes in C.

* ``np.correlate`` (every mode) and ``np.convolve`` (numpy's steps: the longer
  operand first, then a correlation with the other one reversed). Both are
  bilinear: the pullback of the full correlation ``c[k] = sum_i a[i] v[i - k + m - 1]``
  is a convolution of the cotangent with ``v`` and a reversed correlation of
  the cotangent with ``a``, after the cotangent of a ``'valid'`` or ``'same'``
  result is placed where it sits in the full one. For complex values numpy's
  correlate conjugates ``v`` (its convolve does not): the rule is the
  correlation without that conjugate, applied to ``conj(v)``.
* ``np.interp``: piecewise linear in ``x``, ``xp`` and ``fp`` (and in ``left``
  and ``right``, where they are used); which piece an ``x`` falls in is
  piecewise constant. ``period=`` is refused.

The vjps are written with these rules, ``np.pad`` and the scatter of the
rearrangement rules, so they differentiate again.
"""

from __future__ import annotations

import numpy as np

from mutagrad.core.jvps import TRANSPOSED, multilinear
from mutagrad.core.registry import VjpRule, implements
from mutagrad.errors import NotDifferentiableError
from mutagrad.rules.rearrange import gather_flat, scatter_flat
from mutagrad.traced.dispatch import apply
from mutagrad.traced.value import WrappedValue, any_active, unwrap

MODES = {"valid": 0, "same": 1, "full": 2, "v": 0, "s": 1, "f": 2}


def _start_in_full(n: int, m: int, mode) -> int:
    """Where np.correlate(a, v, mode) (len(a) = n, len(v) = m) starts in the full result."""
    mode = MODES.get(mode, mode)
    if mode == 2:
        return 0
    if mode == 0:
        return min(n, m) - 1
    # 'same': numpy centres the output on the longer operand.
    return (m - 1) // 2 if n >= m else n // 2


def _full_cotangent(g, n, m, mode):
    start = _start_in_full(n, m, mode)
    return np.pad(np.ravel(g), (start, n + m - 1 - start - np.size(g)))


def _conjugate_if_complex(x):
    return np.conjugate(x) if np.result_type(x).kind == "c" else x


def _correlation(a, w, mode):
    """``sum_i a[i + k] w[i]``: numpy's correlate without its conjugate of ``w``."""
    return np.correlate(a, _conjugate_if_complex(w), mode)


def _correlate_vjp_a(g, ans, a, w, mode="valid"):
    full = _full_cotangent(g, np.size(a), np.size(w), mode)
    return np.reshape(np.convolve(full, np.ravel(w), "valid"), np.shape(a))


def _correlate_vjp_w(g, ans, a, w, mode="valid"):
    full = _full_cotangent(g, np.size(a), np.size(w), mode)
    return np.reshape(np.flip(_correlation(full, np.ravel(a), "valid")), np.shape(w))


# The correlation without conjugates, bilinear (holomorphic in each operand), so its
# pullbacks are the transposes for complex values too; numpy's correlate is it of
# (a, conj(v)) and numpy's convolve of (a, v reversed).
CORRELATE = VjpRule(
    "correlate",
    _correlation,
    (_correlate_vjp_a, _correlate_vjp_w),
    ((1,), (0,)),
    jvp=multilinear(),
    handles_complex=True,
)


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    # (numpy's values: the conjugate of a complex v is conjugated back in the rule's)
    value = np.correlate(unwrap(a), unwrap(v), mode)
    return apply(CORRELATE, (a, _conjugate_if_complex(v)), {"mode": mode}, value)


@implements(np.convolve)
def convolve(a, v, mode="full"):
    value = np.convolve(unwrap(a), unwrap(v), mode)  # (numpy's checks and its values)
    a = np.atleast_1d(a if isinstance(a, WrappedValue) else np.asarray(a))
    v = np.atleast_1d(v if isinstance(v, WrappedValue) else np.asarray(v))
    if len(v) > len(a):
        a, v = v, a
    return apply(CORRELATE, (a, np.flip(v)), {"mode": mode}, value)


# -- interp ------------------------------------------------------------------------------


def _pieces(x, xp):
    """For each x: its piece j (xp[j] <= x <= xp[j + 1]), and masks below and above xp."""
    raw_x, raw_xp = unwrap(x), unwrap(xp)
    below, above = raw_x < raw_xp[0], raw_x > raw_xp[-1]
    j = np.clip(np.searchsorted(raw_xp, raw_x, "right") - 1, 0, max(len(raw_xp) - 2, 0))
    return j, below, above


def _linear_parts(x, xp, fp):
    """Per x: its piece j, the position t in it, the slope, and where x is inside xp."""
    j, below, above = _pieces(x, xp)
    inside = ~below & ~above
    if np.size(xp) < 2:  # a single point: the value is fp[0] everywhere
        return j, np.zeros(np.shape(x)), np.zeros(np.shape(x)), inside, below, above
    lo, hi = gather_flat(xp, j), gather_flat(xp, j + 1)
    width = hi - lo
    slope = (gather_flat(fp, j + 1) - gather_flat(fp, j)) / width
    return j, (x - lo) / width, slope, inside, below, above


def _interp_vjp_x(g, ans, x, xp, fp, left=None, right=None):
    _, _, slope, inside, _, _ = _linear_parts(x, xp, fp)
    return np.where(inside, g * slope, 0.0)


def _interp_vjp_xp(g, ans, x, xp, fp, left=None, right=None):
    # f = fp[j] + (x - xp[j]) * slope: df/dxp[j] = slope (t - 1), df/dxp[j + 1] = -slope t.
    j, t, slope, inside, _, _ = _linear_parts(x, xp, fp)
    inner = np.where(inside, g * slope, 0.0)
    return scatter_flat(inner * (t - 1), j, np.shape(xp), np.float64) + scatter_flat(
        -inner * t, j + 1, np.shape(xp), np.float64
    )


def _interp_vjp_fp(g, ans, x, xp, fp, left=None, right=None):
    j, t, _, inside, below, above = _linear_parts(x, xp, fp)
    inner = np.where(inside, g, 0.0)
    n = np.size(fp)
    result = scatter_flat(inner * (1 - t), j, (n,), np.float64)
    if n > 1:
        result = result + scatter_flat(inner * t, np.minimum(j + 1, n - 1), (n,), np.float64)
    # Outside xp the value is fp's end, unless left= or right= replaces it.
    if left is None:
        result = result + scatter_flat(np.where(below, g, 0.0), np.zeros_like(j), (n,), np.float64)
    if right is None:
        last = np.full_like(j, n - 1)
        result = result + scatter_flat(np.where(above, g, 0.0), last, (n,), np.float64)
    return result


def _interp_vjp_left(g, ans, x, xp, fp, left=None, right=None):
    return np.sum(np.where(_pieces(x, xp)[1], g, 0.0))


def _interp_vjp_right(g, ans, x, xp, fp, left=None, right=None):
    return np.sum(np.where(_pieces(x, xp)[2], g, 0.0))


INTERP = VjpRule(
    "interp",
    np.interp,
    (_interp_vjp_x, _interp_vjp_xp, _interp_vjp_fp, _interp_vjp_left, _interp_vjp_right),
    ((0, 1, 2), (0, 1, 2), (0, 1, 2), (0, 1), (0, 1)),
    jvp=TRANSPOSED,
)


@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    if period is not None:
        if any_active((x, xp, fp, left, right)):
            raise NotDifferentiableError(
                "the derivative of np.interp(..., period=...) is not implemented.\n"
                "Fix: reduce x and xp modulo the period and sort xp yourself, then call "
                "np.interp without period=."
            )
        return np.interp(*unwrap((x, xp, fp, left, right)), period=period)
    return apply(INTERP, (x, xp, fp, left, right))
