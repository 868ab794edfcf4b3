"""Derivative rules of ``np.fft``: ``fft``, ``ifft``, ``fft2``, ``ifft2``, ``fftn``, ``ifftn``,
``rfft`` and ``irfft``.

The discrete Fourier transform is linear, and its matrix ``F[j, k] = w**(j*k)``
is symmetric, so (in the convention of JAX and autograd, a pullback is the
transpose, not the adjoint) the pullback of ``fft`` is ``fft`` of the cotangent,
fitted back to the input's length: numpy pads the input with zeros to ``n`` or
crops it, so the cotangent is cropped or padded with zeros the other way.
``norm`` scales by a constant, the same in both directions.

``rfft`` keeps the first ``n//2 + 1`` outputs of ``fft`` of a real input: its
pullback pads the cotangent to ``n`` and keeps the real part of its ``fft``.
``irfft`` reads half a Hermitian spectrum: the imaginary parts of the first
and (for even ``n``) the last entry are ignored, every other entry stands for
itself and its conjugate mirror, so the pullback is ``rfft`` of the cotangent,
conjugated and weighted by 1 or 2, with the scale of the inverse transform.
``rfftn``, ``irfftn``, ``rfft2`` and ``irfft2`` take numpy's steps (one-axis transforms,
in numpy's order) on the traced array, and so do ``hfft`` (``irfft`` of the
conjugate, with the other norm) and ``ihfft`` (the conjugate of ``rfft``).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from mutagrad.core.jvps import linear
from mutagrad.core.registry import VjpRule, implements
from mutagrad.traced.dispatch import apply
from mutagrad.traced.mutation import assign_out

# The norm whose forward scale is the inverse transform's (and the other way round).
DUAL_NORM = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _fitted(c, shape, axes):
    """``c`` cropped or padded with zeros along ``axes`` to the lengths of ``shape``."""
    for axis in axes:
        have, want = c.shape[axis], shape[axis]
        if have > want:
            c = np.take(c, np.arange(want), axis=axis)
        elif have < want:
            widths = [(0, 0)] * c.ndim
            widths[axis] = (0, want - have)
            c = np.pad(c, widths)
    return c


def _axes_of(ndim, s, axes):
    """The axes numpy's n-dimensional transforms act on, as non-negative numbers."""
    if axes is None:
        axes = range(ndim) if s is None else range(-len(s), 0)
    return [normalize_axis_index(a, ndim) for a in axes]


def _one_axis_jvp(transform):
    """The forward rule of a one-axis transform: the same transform of the tangent (it is
    real-linear: ``rfft`` of a real input, ``irfft`` ignoring imaginary parts, too)."""

    def batched(tangents, ans, args, kwargs):
        a, kw = args[0], kwargs or {}
        axis = normalize_axis_index(kw.get("axis", -1), np.ndim(a)) + 1
        return transform(tangents[0], n=kw.get("n"), axis=axis, norm=kw.get("norm"))

    return linear(batched)


def _many_axes_jvp(transform):
    def batched(tangents, ans, args, kwargs):
        a, kw = args[0], kwargs or {}
        axes = [axis + 1 for axis in _axes_of(np.ndim(a), kw.get("s"), kw.get("axes"))]
        return transform(tangents[0], s=kw.get("s"), axes=axes, norm=kw.get("norm"))

    return linear(batched)


def _one_axis_vjp(transform):
    def vjp(g, ans, a, n=None, axis=-1, norm=None):
        return _fitted(transform(g, axis=axis, norm=norm), np.shape(a),
                       [normalize_axis_index(axis, np.ndim(a))])  # fmt: skip

    return vjp


def _many_axes_vjp(transform):
    def vjp(g, ans, a, s=None, axes=None, norm=None):
        axes = _axes_of(np.ndim(a), s, axes)
        return _fitted(transform(g, axes=axes, norm=norm), np.shape(a), axes)

    return vjp


FFT = VjpRule("fft.fft", np.fft.fft, (_one_axis_vjp(np.fft.fft),), ((),),
              jvp=_one_axis_jvp(np.fft.fft), handles_complex=True)  # fmt: skip
IFFT = VjpRule("fft.ifft", np.fft.ifft, (_one_axis_vjp(np.fft.ifft),), ((),),
               jvp=_one_axis_jvp(np.fft.ifft), handles_complex=True)  # fmt: skip
FFTN = VjpRule("fft.fftn", np.fft.fftn, (_many_axes_vjp(np.fft.fftn),), ((),),
               jvp=_many_axes_jvp(np.fft.fftn), handles_complex=True)  # fmt: skip
IFFTN = VjpRule("fft.ifftn", np.fft.ifftn, (_many_axes_vjp(np.fft.ifftn),), ((),),
                jvp=_many_axes_jvp(np.fft.ifftn), handles_complex=True)  # fmt: skip


def _rfft_vjp(g, ans, a, n=None, axis=-1, norm=None):
    axis = normalize_axis_index(axis, np.ndim(a))
    length = np.shape(a)[axis] if n is None else n
    spectrum = np.fft.fft(g, n=length, axis=axis, norm=norm)  # g padded with zeros to n
    return _fitted(np.real(spectrum), np.shape(a), [axis])


# (a real input and a complex output: numpy raises TypeError for a complex input)
RFFT = VjpRule("fft.rfft", np.fft.rfft, (_rfft_vjp,), ((),), jvp=_one_axis_jvp(np.fft.rfft),
               handles_complex=True)  # fmt: skip


def _irfft_vjp(g, ans, a, n=None, axis=-1, norm=None):
    axis = normalize_axis_index(axis, np.ndim(a))
    length = 2 * (np.shape(a)[axis] - 1) if n is None else n
    c = np.conjugate(np.fft.rfft(g, n=length, axis=axis, norm=DUAL_NORM[norm]))
    weights = np.full(c.shape[axis], 2.0)
    weights[0] = 1.0
    if length % 2 == 0:
        weights[-1] = 1.0  # the Nyquist entry stands for itself alone
    shape = [1] * c.ndim
    shape[axis] = -1
    return _fitted(c * weights.reshape(shape), np.shape(a), [axis])


IRFFT = VjpRule("fft.irfft", np.fft.irfft, (_irfft_vjp,), ((),),
                jvp=_one_axis_jvp(np.fft.irfft), handles_complex=True)  # fmt: skip


def _one_axis(rule, name):
    def adapter(a, n=None, axis=-1, norm=None, out=None):
        return assign_out(apply(rule, (a,), {"n": n, "axis": axis, "norm": norm}), out, name)

    return adapter


def _many_axes(rule, name, default_axes=None):
    def adapter(a, s=None, axes=default_axes, norm=None, out=None):
        return assign_out(apply(rule, (a,), {"s": s, "axes": axes, "norm": norm}), out, name)

    return adapter


implements(np.fft.fft)(_one_axis(FFT, "np.fft.fft"))
implements(np.fft.ifft)(_one_axis(IFFT, "np.fft.ifft"))
implements(np.fft.rfft)(_one_axis(RFFT, "np.fft.rfft"))
implements(np.fft.irfft)(_one_axis(IRFFT, "np.fft.irfft"))
implements(np.fft.fftn)(_many_axes(FFTN, "np.fft.fftn"))
implements(np.fft.ifftn)(_many_axes(IFFTN, "np.fft.ifftn"))
implements(np.fft.fft2)(_many_axes(FFTN, "np.fft.fft2", (-2, -1)))
implements(np.fft.ifft2)(_many_axes(IFFTN, "np.fft.ifft2", (-2, -1)))


def _cooked(shape, s, axes, inverse_real):
    """numpy's lengths and axes of an n-dimensional real transform (its ``_cook_nd_args``)."""
    shapeless = s is None
    if shapeless:
        s = list(shape) if axes is None else [shape[axis] for axis in axes]
    s = list(s)
    if axes is None:
        axes = list(range(-len(s), 0))
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if inverse_real and shapeless:
        s[-1] = (shape[axes[-1]] - 1) * 2
    return s, list(axes)


@implements(np.fft.rfftn)
def rfftn(a, s=None, axes=None, norm=None, out=None):
    s, axes = _cooked(np.shape(a), s, axes, inverse_real=False)
    a = np.fft.rfft(a, s[-1], axes[-1], norm)
    for i in range(len(axes) - 2, -1, -1):
        a = np.fft.fft(a, s[i], axes[i], norm)
    return assign_out(a, out, "np.fft.rfftn")


@implements(np.fft.irfftn)
def irfftn(a, s=None, axes=None, norm=None, out=None):
    s, axes = _cooked(np.shape(a), s, axes, inverse_real=True)
    for i in range(len(axes) - 1):
        a = np.fft.ifft(a, s[i], axes[i], norm)
    return assign_out(np.fft.irfft(a, s[-1], axes[-1], norm), out, "np.fft.irfftn")


@implements(np.fft.rfft2)
def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return rfftn(a, s, axes, norm, out)


@implements(np.fft.irfft2)
def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return irfftn(a, s, axes, norm, out)


@implements(np.fft.hfft)
def hfft(a, n=None, axis=-1, norm=None, out=None):
    if n is None:
        n = (np.shape(a)[axis] - 1) * 2
    result = np.fft.irfft(np.conjugate(a), n, axis, norm=DUAL_NORM[norm])
    return assign_out(result, out, "np.fft.hfft")


@implements(np.fft.ihfft)
def ihfft(a, n=None, axis=-1, norm=None, out=None):
    result = np.conjugate(np.fft.rfft(a, n, axis, norm=DUAL_NORM[norm]))
    return assign_out(result, out, "np.fft.ihfft")
