"""Array creation from a traced array (``np.empty_like`` ...), ``np.copyto``, and
``np.linspace``/``np.logspace`` between traced end points (numpy's arithmetic, step by step).

``np.empty_like(x)`` and friends return WrappedArrays, so that a buffer
allocated from a traced array and filled in a loop stays on the tape: the
``similar(x)`` pattern that Zygote refuses.
"""

from __future__ import annotations

import operator

import numpy as np

from mutagrad.core.jvps import linear
from mutagrad.core.registry import VjpRule, implements
from mutagrad.diagnostics.messages import conversion_message
from mutagrad.errors import TracerConversionError
from mutagrad.traced.dispatch import apply
from mutagrad.traced.mutation import assign
from mutagrad.traced.value import WrappedValue, any_active, array_like, unwrap, wrap_constant


def _like(numpy_function):
    def adapter(prototype, *args, **kwargs):
        return wrap_constant(numpy_function(unwrap(prototype), *unwrap(args), **unwrap(kwargs)))

    adapter.__name__ = numpy_function.__name__
    return adapter


for _fn in (np.empty_like, np.zeros_like, np.ones_like):
    implements(_fn)(_like(_fn))


FULL = VjpRule(
    "full",
    lambda fill_value, shape, dtype=None, order="C": np.full(shape, fill_value, dtype, order),
    (lambda g, ans, fill_value, shape, **kw: g,),
    ((),),
    jvp=linear(),
)


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    data = unwrap(a)
    shape = data.shape if shape is None else shape
    dtype = data.dtype if dtype is None else dtype
    # An integer or boolean result carries no derivative (as in astype): with
    # such a dtype, a traced fill value gives a constant, not a FULL node.
    if (
        isinstance(fill_value, WrappedValue)
        and any_active((fill_value,))
        and np.dtype(dtype).kind in "fc"
    ):
        return apply(FULL, (fill_value, shape), {"dtype": dtype})
    return wrap_constant(np.full_like(data, unwrap(fill_value), dtype=dtype, order=order,
                                      shape=shape))  # fmt: skip


@implements(np.full)
def full(shape, fill_value, dtype=None, order="C", *, device=None):
    """``np.full(shape, fill_value, like=x)`` for a traced ``x``: a WrappedArray.

    numpy dispatches np.full on ``like=`` only; without it, numpy converts a
    traced fill value itself (refused, as any conversion). A traced fill value
    keeps its gradient, as in np.full_like.
    """
    fill_value = array_like(fill_value)
    if dtype is None:
        dtype = np.asarray(unwrap(fill_value)).dtype  # as numpy's np.full
    if (
        isinstance(fill_value, WrappedValue)
        and any_active((fill_value,))
        and np.dtype(dtype).kind in "fc"
    ):
        return apply(FULL, (fill_value, shape), {"dtype": dtype, "order": order})
    return wrap_constant(np.full(shape, unwrap(fill_value), dtype, order, device=device))


@implements(np.copyto)
def copyto(dst, src, casting="same_kind", where=True):
    src = array_like(src)
    raw = unwrap(src)
    # A list of numbers is an array to copyto (np.result_type would read it as a dtype spec).
    src_dtype = np.asarray(raw).dtype if isinstance(raw, (list, tuple)) else np.result_type(raw)
    if not np.can_cast(src_dtype, unwrap(dst).dtype, casting=casting):
        raise TypeError(
            f"Cannot cast array data from {src_dtype!r} to {unwrap(dst).dtype!r} according to "
            f"the rule {casting!r}"
        )
    if isinstance(dst, WrappedValue):
        mask = None if where is True else unwrap(where)
        assign(dst, Ellipsis, src, "np.copyto", mask=mask)
        return None
    if any_active((src,)):
        raise TracerConversionError(conversion_message("np.copyto(ndarray, traced)"))
    np.copyto(dst, unwrap(src), casting=casting, where=unwrap(where))
    return None


# -- linspace and logspace: numpy's arithmetic, step by step -----------------------------


@implements(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):  # fmt: skip
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    start = start if isinstance(start, WrappedValue) else np.asanyarray(start)
    stop = stop if isinstance(stop, WrappedValue) else np.asanyarray(stop)
    inexact = np.result_type(unwrap(start), unwrap(stop))
    inexact = inexact if inexact.kind in "fc" else np.dtype(np.float64)
    integer_dtype = dtype is not None and np.issubdtype(dtype, np.integer)
    dtype = inexact if dtype is None else dtype
    delta = np.subtract(stop, start, dtype=inexact)
    y = np.arange(0, num, dtype=inexact).reshape((-1,) + (1,) * np.ndim(delta))
    if div > 0:
        step = delta / div
        # A denormal step is 0: numpy then divides first.
        y = y / div * delta if np.any(step == 0) else y * step
    else:
        step = np.nan
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        if not isinstance(y, WrappedValue):
            y = wrap_constant(y)
        y[-1, ...] = stop  # the last point is stop exactly (a recorded write)
    if axis != 0:
        y = np.moveaxis(y, 0, axis)
    if integer_dtype:
        y = np.floor(y)
    y = y if np.result_type(y) == np.dtype(dtype) else y.astype(dtype)
    return (y, step) if retstep else y


@implements(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    if not isinstance(base, (float, int)) and np.ndim(base):
        ndmax = np.ndim(np.empty(np.broadcast_shapes(*(np.shape(a) for a in (start, stop, base)))))
        start, stop, base = (
            np.reshape(a, (1,) * (ndmax - np.ndim(a)) + np.shape(a)) for a in (start, stop, base)
        )
        base = np.expand_dims(base, axis=axis)
    y = np.power(base, linspace(start, stop, num=num, endpoint=endpoint, axis=axis))
    return y if dtype is None else y.astype(dtype)
