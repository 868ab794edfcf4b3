"""Array creation from a traced array (``np.empty_like`` ...) and ``np.copyto``.

``np.empty_like(x)`` and friends return WrappedArrays, so that a buffer
allocated from a traced array and filled in a loop stays on the tape: the
``similar(x)`` pattern that Zygote refuses.
"""

from __future__ import annotations

import numpy as np

from mutagrad.core.mutation import assign
from mutagrad.core.wrapped import (
    WrappedValue,
    any_active,
    apply,
    conversion_message,
    unwrap,
    wrap_constant,
)
from mutagrad.errors import TracerConversionError
from mutagrad.rules import VjpRule, implements


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


@implements(np.copyto)
def copyto(dst, src, casting="same_kind", where=True):
    src_dtype = np.result_type(unwrap(src))
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
