"""``import mutagrad.numpy as mnp``: numpy, with constructors that return WrappedArrays.

Code that allocates without an array argument (``np.zeros(3)``) gets a raw
ndarray, which cannot hold traced values. Writing ``mnp.zeros(3)`` instead
gives a WrappedArray that can. Every other name is numpy's own: numpy
functions already accept WrappedArrays.
"""

from __future__ import annotations

from typing import Any

import numpy as _np

from mutagrad.api import array, asarray
from mutagrad.core.wrapped import WrappedArray as _WrappedArray


def _constructor(numpy_function: Any) -> Any:
    def make(*args: Any, **kwargs: Any) -> _WrappedArray:
        return _WrappedArray(numpy_function(*args, **kwargs))

    make.__name__ = numpy_function.__name__
    make.__doc__ = f"``np.{numpy_function.__name__}`` returning a WrappedArray."
    return make


zeros = _constructor(_np.zeros)
ones = _constructor(_np.ones)
empty = _constructor(_np.empty)
arange = _constructor(_np.arange)
linspace = _constructor(_np.linspace)
logspace = _constructor(_np.logspace)
eye = _constructor(_np.eye)
identity = _constructor(_np.identity)


def full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C") -> _WrappedArray:
    """``np.full`` returning a WrappedArray; a traced ``fill_value`` keeps its gradient."""
    if isinstance(fill_value, _WrappedArray):
        return _np.full_like(_WrappedArray(_np.empty(shape, dtype=dtype or fill_value.dtype)),
                             fill_value, dtype=dtype)  # fmt: skip
    return _WrappedArray(_np.full(shape, fill_value, dtype=dtype, order=order))


def zeros_like(a: Any, *args: Any, **kwargs: Any) -> _WrappedArray:
    return _WrappedArray(_np.zeros_like(_np.asarray(a) if not isinstance(a, _WrappedArray)
                                        else a._data, *args, **kwargs))  # fmt: skip


def ones_like(a: Any, *args: Any, **kwargs: Any) -> _WrappedArray:
    return _WrappedArray(_np.ones_like(a._data if isinstance(a, _WrappedArray) else a,
                                       *args, **kwargs))  # fmt: skip


def empty_like(a: Any, *args: Any, **kwargs: Any) -> _WrappedArray:
    return _WrappedArray(_np.empty_like(a._data if isinstance(a, _WrappedArray) else a,
                                        *args, **kwargs))  # fmt: skip


def full_like(a: Any, fill_value: Any, *args: Any, **kwargs: Any) -> _WrappedArray:
    prototype = a if isinstance(a, _WrappedArray) else _WrappedArray(_np.asarray(a))
    return _np.full_like(prototype, fill_value, *args, **kwargs)


def __getattr__(name: str) -> Any:
    return getattr(_np, name)


__all__ = [
    "arange", "array", "asarray", "empty", "empty_like", "eye", "full", "full_like",
    "identity", "linspace", "logspace", "ones", "ones_like", "zeros", "zeros_like",
]  # fmt: skip
