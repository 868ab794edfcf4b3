"""Derivative rules of ``scipy.signal``'s convolutions: ``convolve``, ``correlate`` and 2-D forms.

A convolution is bilinear: with the output's cotangent ``g`` placed back into
the 'full' output (zeros where 'same' or 'valid' cut it), each input's
cotangent is the 'valid' convolution of that with the other input flipped on
every axis. ``correlate(a, b)`` is ``convolve(a, b flipped)``. ``convolve`` also takes
HIPS autograd's ``axes=`` and ``dot_axes=`` (convolve over some axes, contract
others), as sums of these convolutions. The vjps call
these same functions, so they differentiate again. The value is SciPy's own
(whichever method it chooses); ``convolve2d``/``correlate2d`` differentiate
with ``boundary='fill'`` and ``fillvalue=0`` (the zero padding of
``convolve``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.signal as signal

from mutagrad.core.jvps import multilinear
from mutagrad.core.registry import VjpRule
from mutagrad.rules.scipy_support import refuse_derivative, with_rule
from mutagrad.traced.dispatch import apply


def _flip(x):
    return np.flip(x, axis=tuple(range(np.ndim(x))))


def _full_cotangent(g, shape1, shape2, mode, late=False):
    """``g`` placed where the ``mode`` output sits in the 'full' output, zeros elsewhere.

    ``late``: correlate2d's 'same' output starts half an element later than
    the others' when the centring is not exact.
    """
    if mode == "full":
        return g
    widths = []
    for n1, n2, n in zip(shape1, shape2, np.shape(g)):
        full = n1 + n2 - 1
        # 'same' is centred on the full output; 'valid' starts after the shorter input's
        # overlap (SciPy swaps the inputs so that the first is the larger).
        start = (full - n + late) // 2 if mode == "same" else min(n1, n2) - 1
        widths.append((start, full - start - n))
    return np.pad(g, widths)


def _convolve_vjp(first: bool, late: bool = False) -> Any:
    def vjp(g, ans, in1, in2, mode="full", method="auto"):
        full = _full_cotangent(g, np.shape(in1), np.shape(in2), mode, late)
        other = in2 if first else in1
        return convolve(full, _flip(other), mode="valid", method=method)

    return vjp


CONVOLVE = VjpRule(
    "scipy.signal.convolve",
    signal.convolve,
    (_convolve_vjp(True), _convolve_vjp(False)),
    ((1,), (0,)),
    jvp=multilinear(),
)


def _bind(in1, in2, mode="full", method="auto"):
    return (in1, in2), {"mode": mode, "method": method}


def _generalized(in1, in2, mode, axes, dot_axes):
    """HIPS autograd's convolve(A, B, axes=, dot_axes=): the convolution over the axes pairs
    ``axes``, summed over the pairs ``dot_axes``; the output has A's other axes, then B's,
    then the convolved ones. Written as sums of (differentiable) convolutions."""
    conv_a, conv_b = (list(a) for a in (axes or (range(np.ndim(in1)), range(np.ndim(in1)))))
    dot_a, dot_b = (list(a) for a in (dot_axes or ((), ())))
    rest_a = [i for i in range(np.ndim(in1)) if i not in conv_a + dot_a]
    rest_b = [i for i in range(np.ndim(in2)) if i not in conv_b + dot_b]
    a = np.transpose(in1, rest_a + dot_a + conv_a)
    b = np.transpose(in2, rest_b + dot_b + conv_b)
    kept_a, kept_b = np.shape(a)[: len(rest_a)], np.shape(b)[: len(rest_b)]
    dots = int(np.prod(np.shape(a)[len(rest_a) : len(rest_a) + len(dot_a)], dtype=int))
    a = np.reshape(a, (-1, dots, *np.shape(a)[len(rest_a) + len(dot_a) :]))
    b = np.reshape(b, (-1, dots, *np.shape(b)[len(rest_b) + len(dot_b) :]))
    rows = [
        np.stack([sum(convolve(a[i, d], b[j, d], mode) for d in range(dots))
                  for j in range(np.shape(b)[0])])
        for i in range(np.shape(a)[0])
    ]  # fmt: skip
    result = np.stack(rows)
    return np.reshape(result, (*kept_a, *kept_b, *np.shape(result)[2:]))


def _convolve_values(in1, in2, mode="full", method="auto", *, axes=None, dot_axes=None):
    if axes is None and dot_axes is None:
        return signal.convolve(in1, in2, mode, method)
    return _generalized(in1, in2, mode, axes, dot_axes)


def _convolve_adapter(rule):
    def adapter(in1, in2, mode="full", method="auto", *, axes=None, dot_axes=None):
        if axes is None and dot_axes is None:
            return apply(rule, (in1, in2), {"mode": mode, "method": method})
        return _generalized(in1, in2, mode, axes, dot_axes)

    return adapter


# scipy.signal.convolve, and (axes=, dot_axes=) HIPS autograd's generalization of it.
convolve = with_rule(_convolve_values, CONVOLVE, adapter=_convolve_adapter(CONVOLVE),
                     name="convolve")  # fmt: skip


def _correlate_vjp(first: bool, late: bool = False) -> Any:
    convolution = _convolve_vjp(first, late)

    def vjp(g, ans, in1, in2, mode="full", method="auto"):
        if first:
            return convolution(g, ans, in1, _flip(in2), mode, method)
        # (in2 only gives its shape here, which flipping keeps.)
        return _flip(convolution(g, ans, in1, in2, mode, method))

    return vjp


CORRELATE = VjpRule(
    "scipy.signal.correlate",
    signal.correlate,
    (_correlate_vjp(True), _correlate_vjp(False)),
    ((1,), (0,)),
    jvp=multilinear(),
)
correlate = with_rule(signal.correlate, CORRELATE, _bind)


def _bind_2d(name: str) -> Any:
    def bind(in1, in2, mode="full", boundary="fill", fillvalue=0):
        if boundary != "fill" or fillvalue != 0:
            refuse_derivative(f"scipy.signal.{name}", "in1 and in2",
                              "only boundary='fill' with fillvalue=0 is implemented")
        return (in1, in2), {"mode": mode}

    return bind


def _two_d_vjp(vjp: Any) -> Any:
    return lambda g, ans, in1, in2, mode="full": vjp(g, ans, in1, in2, mode, "direct")


CONVOLVE2D = VjpRule(
    "scipy.signal.convolve2d",
    lambda in1, in2, mode="full": signal.convolve2d(in1, in2, mode),
    tuple(_two_d_vjp(_convolve_vjp(first)) for first in (True, False)),
    ((1,), (0,)),
    jvp=multilinear(),
)
convolve2d = with_rule(signal.convolve2d, CONVOLVE2D, _bind_2d("convolve2d"))
CORRELATE2D = VjpRule(
    "scipy.signal.correlate2d",
    lambda in1, in2, mode="full": signal.correlate2d(in1, in2, mode),
    tuple(_two_d_vjp(_correlate_vjp(first, late=True)) for first in (True, False)),
    ((1,), (0,)),
    jvp=multilinear(),
)
correlate2d = with_rule(signal.correlate2d, CORRELATE2D, _bind_2d("correlate2d"))

# The functions here by scipy.signal's names (mutagrad.scipy.signal; the coverage table).
FUNCTIONS: dict[str, Any] = {
    "convolve": convolve, "correlate": correlate, "convolve2d": convolve2d,
    "correlate2d": correlate2d,
}
