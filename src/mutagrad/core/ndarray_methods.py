"""The ``ndarray`` methods and attributes of WrappedArray that take more than a numpy call.

WrappedArray (``core/wrapped.py``) answers every public attribute of
``np.ndarray``. Most methods hand the array to the numpy function of the same
name; this module holds the others:

* **in-place methods** (``partition``, ``setfield``, ``byteswap(inplace=True)``,
  the ``real``/``imag`` setters) end in :func:`mutagrad.core.mutation.assign`, so
  the version counter, the captures and strict mode see them like any write;
  ``x.shape = ...`` and ``setflags`` change no element and rebind the array's
  memory to a new numpy view of it;
* **exports of the raw data** (``data``, ``tobytes``, ``tofile``, ``dump``,
  ``dumps``): a traced value is refused as ``np.asarray`` refuses it (its
  gradient would be lost); a constant is exported from a read-only view;
* **refusals** (``ctypes``, ``resize``, ``__dlpack__`` without a copy, setting
  ``strides`` or ``dtype``...) name the attribute and the alternative. They
  would hand out memory that numpy could write behind the version counter, or
  reallocate an array under its views and saved values. :func:`missing_attribute`
  refuses, by name, any ndarray attribute that WrappedArray does not define (one
  a later numpy adds), while optional dunders that numpy, ``copy`` and ``pickle``
  probe for (``__array_interface__``, ``__array_struct__``, ``__setstate__``)
  stay plainly absent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mutagrad.core import mutation
from mutagrad.core.engine import STATE, Node, read_only
from mutagrad.core.messages import conversion_message
from mutagrad.core.record import push
from mutagrad.core.regions import VIEW_READ
from mutagrad.core.sites import describe_site, user_site
from mutagrad.core.wrapped import (
    DETACHED,
    PINNED,
    READONLY,
    WrappedArray,
    WrappedValue,
    any_active,
    array_method,
    is_active,
    unwrap,
    wrap_constant,
)
from mutagrad.errors import (
    NotDifferentiableError,
    TracerConversionError,
    UnsupportedAttributeError,
)

# Every public attribute of np.ndarray: the ones WrappedValue does not define are
# refused by name rather than reported as missing.
NDARRAY_ATTRIBUTES = frozenset(name for name in dir(np.ndarray) if not name.startswith("_"))


def refuse(attribute: str, reason: str, instead: str) -> UnsupportedAttributeError:
    """The error for an ndarray attribute mutagrad refuses (the caller raises it)."""
    return UnsupportedAttributeError(
        f"{attribute} is refused on mutagrad's arrays, at {describe_site(user_site())}:\n"
        f"{reason}.\nFix: {instead}."
    )


def _writable_memory_reason(attribute: str) -> str:
    return (
        f"{attribute} hands out the address of the array's memory, and a write through "
        "it would bypass the version counter that keeps gradients right"
    )


@array_method("missing_attribute")
def missing_attribute(w: WrappedValue, name: str) -> AttributeError:
    """What ``w.name`` raises when the class defines no ``name``."""
    if name == "ctypes":
        return refuse(
            "x.ctypes",
            _writable_memory_reason("x.ctypes"),
            "give C code a copy, np.array(x).ctypes (of mutagrad.ignore_derivatives(x) "
            "inside a gradient call), or register the C routine as a rule with "
            "mutagrad.defvjp",
        )
    if name in NDARRAY_ATTRIBUTES and not isinstance(w, WrappedArray):
        # The in-place methods and the ones numpy scalars lack.
        return refuse(
            f"x.{name}",
            "x is a WrappedScalar (what indexing one element returns), immutable like a "
            "numpy scalar (whose fill, put, resize and setflags silently do nothing)",
            "call it on the array the element came from, or on np.reshape(x, (1,))",
        )
    if name in NDARRAY_ATTRIBUTES:
        return refuse(
            f"x.{name}",
            "mutagrad has not checked that it keeps the version counter and gradients right",
            f"call it on a copy outside the traced code (np.array(x).{name}), or open an "
            "issue asking for it",
        )
    return AttributeError(f"{type(w).__name__!r} object has no attribute {name!r}")


# -- exports of the raw data -------------------------------------------------------


@array_method("exported")
def exported(w: WrappedValue, operation: str) -> Any:
    """``w``'s data for numpy to export (bytes, a memoryview, a pickle, a file).

    A traced value is refused like ``np.asarray(x)``: the export carries no
    gradient. A constant comes as a read-only view, so a memoryview of it
    cannot write behind the version counter.
    """
    if is_active(w):
        raise TracerConversionError(conversion_message(operation))
    return read_only(w._raw)


@array_method("dlpack")
def dlpack(w: WrappedArray, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
    """``w.__dlpack__(...)``: only as a copy (``np.from_dlpack(x, copy=True)``)."""
    if copy is not True:
        raise refuse(
            "x.__dlpack__() (np.from_dlpack(x), torch.from_dlpack(x), ...)",
            _writable_memory_reason("DLPack") + "; consumers may ignore its read-only flag",
            "ask for a copy, np.from_dlpack(x, copy=True)",
        )
    # copy=True: a fresh array, so there is no memory left to share.
    data = np.array(exported(w, "__dlpack__ (DLPack export)"))
    return data.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device)


# -- in place ----------------------------------------------------------------------


@array_method("partition_in_place")
def partition_in_place(w: WrappedArray, kth: Any, axis: Any, kind: str, order: Any) -> None:
    """``w.partition(kth)``: numpy partitions in place, so ``np.partition``'s result is written
    back into ``w`` (its rule reads only the permutation, so the write poisons nothing
    of its own)."""
    partitioned = np.partition(w, kth, axis=axis, kind=kind, order=order)
    mutation.assign(w, Ellipsis, partitioned, "x.partition()")


@array_method("byteswap")
def byteswap(w: WrappedValue, inplace: bool) -> Any:
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


def _same_layout(w: WrappedValue, dtype: Any, offset: int) -> bool:
    return np.dtype(dtype) == w.dtype and offset == 0


@array_method("getfield")
def getfield(w: WrappedValue, dtype: Any, offset: int) -> Any:
    """``w.getfield(dtype, offset)``: a view; one reinterpreting the bytes carries no gradient."""
    if _same_layout(w, dtype, offset):
        return w.view() if isinstance(w, WrappedArray) else w
    if is_active(w):
        raise NotDifferentiableError(
            f"x.getfield({np.dtype(dtype)}, {offset}) reinterprets the bytes of a traced "
            f"{w.dtype} array; that has no derivative.\nFix: use x.astype(...) for a "
            "differentiable conversion."
        )
    field = wrap_constant(w._raw.getfield(dtype, offset), (w,), (w._raw,))
    if isinstance(field, WrappedArray):
        # Like x.view(other_dtype): writes through it are refused inside a gradient call.
        field._flags |= DETACHED
    return field


@array_method("setfield")
def setfield(w: WrappedArray, value: Any, dtype: Any, offset: int) -> None:
    """``w.setfield(value, dtype, offset)``: a write; one into part of each element's
    bytes mixes old and new bits, which has no derivative."""
    if _same_layout(w, dtype, offset):
        mutation.assign(w, Ellipsis, value, "x.setfield()")
        return
    if is_active(w) or any_active((value,)):
        raise NotDifferentiableError(
            f"x.setfield(value, {np.dtype(dtype)}, {offset}) writes into part of the bytes of "
            f"each element of a {w.dtype} array; with a traced array or value the result has "
            "no derivative.\nFix: write whole elements (x[...] = value) instead."
        )
    updated = w._raw.copy()
    updated.setfield(unwrap(value), dtype, offset)
    mutation.assign(w, Ellipsis, updated, "x.setfield()")


@array_method("set_part")
def set_part(w: WrappedValue, part: str, value: Any) -> None:
    """``w.real = value`` or ``w.imag = value``: a write into that part of every element."""
    if not isinstance(w, WrappedArray):
        raise refuse(f"setting x.{part}", "a WrappedScalar is immutable, as numpy scalars are",
                     "build a new value")  # fmt: skip
    if w.dtype.kind != "c":
        if part == "imag":
            raise TypeError("array does not have imaginary part to set")  # numpy's error
        # The real part of a real array is the array itself.
        mutation.assign(w, Ellipsis, value, "x.real = ...")
        return
    # A complex array never carries a gradient (mutagrad refuses complex values
    # that do), so this is a write into a constant, through a view of one part.
    mutation.assign(getattr(w, part), Ellipsis, value, f"x.{part} = ...")


@array_method("imag")
def imag(w: WrappedValue) -> Any:
    """``w.imag``: for a real array numpy's read-only zeros (constant); for a complex one a
    view of its imaginary parts."""
    return wrap_constant(w._raw.imag, (w,), (w._raw,))


@array_method("set_shape")
def set_shape(w: WrappedValue, shape: Any) -> None:
    """``w.shape = shape``: numpy's in-place reshape, which never copies.

    A view simply views its memory in the new shape (its next read records it
    from the base, as for any view). An array that owns its memory keeps it;
    its value on the tape becomes a view read of the old value (the pullback
    reshapes the cotangent back), so captures, views and later writes keep
    their meaning.
    """
    if not isinstance(w, WrappedArray):
        raise refuse("setting x.shape", "a WrappedScalar is immutable, as numpy scalars are",
                     "use np.reshape(x, shape)")  # fmt: skip
    if w._flags & (READONLY | PINNED):
        raise refuse("setting x.shape", "this array is a value handed to a pullback, whose "
                     "shape the backward pass relies on", "use x.reshape(shape)")  # fmt: skip
    reshaped = w._raw.view()
    reshaped.shape = shape  # numpy's own rules and errors (never a copy)
    if w._base is not None:
        w._raw = reshaped
        w._node = None  # the cached read has the old shape
        return
    trace = STATE.get()
    old = w._node
    if old is not None:
        if trace is None or old.tape is not trace.tape:
            raise refuse(
                "setting x.shape",
                "x's value is recorded on the tape of another gradient call (one still "
                "running in another thread, or a pullback's), which would not see the new shape",
                "use x = x.reshape(shape)",
            )
        node = Node(VIEW_READ, (old,), trace.tape, old.tag, reshaped, user_site())
        w._node = push(node, (reshaped, w._raw, w._version, w))
        trace.tape.touch(w)
    w._raw = reshaped


@array_method("setflags")
def setflags(w: WrappedArray, write: Any, align: Any, uic: Any) -> None:
    """``w.setflags(...)``: making the array read-only is supported; making it writeable
    again is refused (its memory may be the caller's array, frozen for the call).

    The flags are set on a new numpy view, so other arrays sharing the memory keep
    theirs, as in numpy.
    """
    if write is not None and write:
        if not w._raw.flags.writeable:
            raise refuse(
                "x.setflags(write=True)",
                "mutagrad cannot make a read-only array writeable again: its memory may be "
                "the caller's array or a value a pullback reads",
                "write into a copy, x = x.copy()",
            )
        write = None  # already writeable
    if write is None and align is None and uic is None:
        return
    flagged = w._raw.view()
    flagged.setflags(write=write, align=align, uic=uic)
    w._raw = flagged


@array_method("resize_refused")
def resize_refused() -> UnsupportedAttributeError:
    return refuse(
        "x.resize()",
        "it reallocates the array's memory in place, under every view of it and every "
        "value saved from it",
        "make a new array: x = np.resize(x, shape) repeats the values, "
        "np.pad or np.concatenate pad with zeros",
    )


@array_method("set_attribute_refused")
def set_attribute_refused(attribute: str, instead: str) -> UnsupportedAttributeError:
    return refuse(
        f"setting x.{attribute}",
        "it changes how the array's memory is read, behind the tape's back",
        instead,
    )
