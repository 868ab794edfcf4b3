"""The in-place ndarray methods of a traced array, each ending in a write (mutation.assign).

``x.fill(v)``, ``x.partition(kth)``, ``x.byteswap(inplace=True)``,
``x.setfield(...)`` and the ``x.real = ...`` / ``x.imag = ...`` setters are
writes, so the version counter, the captures and strict mode see them as any
write. They are bound to the types by :mod:`mutagrad.traced`; the methods
that write nothing are defined with the types (:mod:`mutagrad.traced.value`).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from mutagrad.diagnostics.messages import refused
from mutagrad.errors import NotDifferentiableError
from mutagrad.traced import mutation
from mutagrad.traced.value import (
    WrappedArray,
    WrappedValue,
    any_active,
    is_active,
    unwrap,
    wrap_constant,
)


def fill(w: WrappedArray, value: Any) -> None:
    """``w.fill(value)``: every element set to ``value``."""
    mutation.assign(w, Ellipsis, value, "fill")


def partition(w: WrappedArray, kth: Any, /, axis: int = -1,
              kind: Literal["introselect"] = "introselect", order: Any = None) -> None:  # fmt: skip
    """``w.partition(kth)``: numpy partitions in place, so ``np.partition``'s result is written
    back into ``w`` (its rule reads only the permutation, so the write poisons nothing
    of its own)."""
    partitioned = np.partition(w, kth, axis=axis, kind=kind, order=order)
    mutation.assign(w, Ellipsis, partitioned, "x.partition()")


def byteswap(w: WrappedValue, inplace: bool = False) -> Any:
    """``w.byteswap(inplace)``: reversed bytes, a new bit pattern with no derivative."""
    swapped = w._raw.byteswap()
    if is_active(w):
        raise NotDifferentiableError(
            "x.byteswap() reinterprets the bytes of a traced array; the numbers it makes "
            "have no derivative.\nFix: to change byte order for storage, byteswap a copy "
            "outside the traced code (np.array(mutagrad.ignore_derivatives(x)).byteswap())."
        )
    if not inplace:
        return wrap_constant(swapped)
    if not isinstance(w, WrappedArray):
        raise ValueError("cannot byteswap a scalar in-place")  # numpy's error
    mutation.assign(w, Ellipsis, swapped, "x.byteswap(inplace=True)")
    return w


def setfield(w: WrappedArray, val: Any, /, dtype: Any, offset: int = 0) -> None:
    """``w.setfield(value, dtype, offset)``: a write; one into part of each element's
    bytes mixes old and new bits, which has no derivative."""
    if np.dtype(dtype) == w.dtype and offset == 0:
        mutation.assign(w, Ellipsis, val, "x.setfield()")
        return
    if is_active(w) or any_active((val,)):
        raise NotDifferentiableError(
            f"x.setfield(value, {np.dtype(dtype)}, {offset}) writes into part of the bytes of "
            f"each element of a {w.dtype} array; with a traced array or value the result has "
            "no derivative.\nFix: write whole elements (x[...] = value) instead."
        )
    updated = w._raw.copy()
    updated.setfield(unwrap(val), dtype, offset)
    mutation.assign(w, Ellipsis, updated, "x.setfield()")


def set_real(w: WrappedValue, value: Any) -> None:
    """``w.real = value``: a write into the real part of every element."""
    _set_part(w, "real", value)


def set_imag(w: WrappedValue, value: Any) -> None:
    """``w.imag = value``: a write into the imaginary part of every element."""
    _set_part(w, "imag", value)


def _set_part(w: WrappedValue, part: str, value: Any) -> None:
    if not isinstance(w, WrappedArray):
        raise refused(f"setting x.{part}", "a WrappedScalar is immutable, as numpy scalars are",
                      "build a new value")  # fmt: skip
    if w.dtype.kind != "c":
        if part == "imag":
            raise TypeError("array does not have imaginary part to set")  # numpy's error
        # The real part of a real array is the array itself.
        mutation.assign(w, Ellipsis, value, "x.real = ...")
        return
    # The write of one part of a complex array, through the view of that part
    # (recorded as a write of whole elements: mutation's part-view path).
    mutation.assign(getattr(w, part), Ellipsis, value, f"x.{part} = ...")
