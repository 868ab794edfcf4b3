"""The traced value types: WrappedArray (a numpy array with a version number) and WrappedScalar.

A WrappedArray holds a numpy array (``_raw``) and takes part in numpy through
``__array_ufunc__``, ``__array_function__`` and the Python operators, so numpy
code runs on it unchanged. Outside a gradient call it behaves as a constant
array; inside one, operations on it are recorded.

This module is the types' state and everything about them that needs no
module above: attributes, conversions, Python's questions (``isinstance``,
``hash``, ``round``, ``pickle``), the methods that hand the array to the numpy
function of the same name, views, and the helpers every array module uses
(:func:`wrap`, :func:`operand`, :func:`node_of`). The methods that index,
write or dispatch are defined in :mod:`~mutagrad.traced.indexing`,
:mod:`~mutagrad.traced.mutation`, :mod:`~mutagrad.traced.dispatch` and
:mod:`~mutagrad.traced.methods`, and bound to the types by the room's door,
:mod:`mutagrad.traced`. The ndarray methods whose numpy facts are rules
(``x.sort()``, ``x.put()``, ``x.astype()``, ``x.view(dtype)``) are looked up in
:data:`~mutagrad.core.registry.FUNCTION_RULES` by numpy's own method.

Storage and views::

    base  (owns the memory; carries _version, _node, _captures)
      ├── view y[1:3]   (_base -> base; shares memory and version)
      └── view y.T      (_base -> base)

``version`` grows by one on every in-place write to the base or any of its
views. The base's ``_node`` is the tape node of its *current* value; reading a
view records a VIEW_READ node from it (cached until the next write).
"""

from __future__ import annotations

import builtins
import math
import operator
import threading
from sys import _getframe
from types import FrameType, GenericAlias
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy import float64, generic, ndarray  # (by name: see mutagrad.core.record)

from mutagrad.core import engine
from mutagrad.core.engine import (
    EXPORTED,
    RUNNING,
    Node,
    current_trace,
    refuse_other_thread,
    refuse_other_thread_tangent,
)
from mutagrad.core.record import push
from mutagrad.core.regions import (
    IMAG_PART,
    REAL_PART,
    VIEW_READ,
    complex_elements,
    is_imaginary_part,
)
from mutagrad.core.registry import FUNCTION_RULES
from mutagrad.diagnostics.conversions import casts_explicitly
from mutagrad.diagnostics.messages import (
    PLAIN_SUBCLASSES,
    attribute_refused,
    conversion_message,
    forwarddiff_closure_message,
    hash_message,
    integer_bytes_refused,
    integer_store_message,
    iterated_for_bytes_refused,
    pickle_message,
    refused,
    subclass_message,
    writable_memory_reason,
)
from mutagrad.diagnostics.sites import (
    is_user_frame,
    user_site,
    user_site_from,
)
from mutagrad.errors import (
    NotDifferentiableError,
    TracerConversionError,
)

# Flags. On a base: BORROWED (memory is the caller's; copy before the first
# write), BUFFER (a mutagrad.Buffer: writable even in strict mode), FROZEN (a
# Buffer after .copy()). On any WrappedArray: READONLY (a value handed to a
# traced pullback), PINNED (a view whose node is fixed, not read from its base),
# DETACHED (ignore_derivatives: reads carry no gradient), THAWED (the array
# buf.copy() returned, and its views: ordinary arrays over a frozen Buffer).
# SHARED_INPUT: an input of a gradient call whose caller's array shares memory
# with another input's (writes to it are refused). ALIASED: the output of a user's rule
# that shares memory with the rule's argument (mutagrad.traced.aliases: writes through it,
# or its views, are refused). (EXPORTED, 256, is the engine's: mutagrad.core.engine.)
BORROWED = 1
BUFFER = 2
FROZEN = 4
READONLY = 8
PINNED = 16
DETACHED = 32
THAWED = 64
SHARED_INPUT = 128
ALIASED = 512

# The values numpy's stubs allow for the ndarray methods' string keywords.
_OrderKACF = Literal["K", "A", "C", "F"]
_OrderACF = Literal["A", "C", "F"]
_PartitionKind = Literal["introselect"]
_SortSide = Literal["left", "right"]
_ModeKind = Literal["raise", "wrap", "clip"]

# Every public attribute of np.ndarray: the ones WrappedValue does not define are
# refused by name rather than reported as missing (see missing_attribute).
NDARRAY_ATTRIBUTES = frozenset(name for name in dir(ndarray) if not name.startswith("_"))


class WrappedValue:
    """A numpy value whose operations can be traced: the base of WrappedArray and WrappedScalar.

    As numpy separates ``ndarray`` from scalars like ``np.float64``, mutagrad
    separates :class:`WrappedArray` (indexable, writable in place) from
    :class:`WrappedScalar` (what indexing a single element returns; immutable).
    Construct them with :func:`mutagrad.array` (copies) or :func:`mutagrad.asarray`.
    """

    __slots__ = (
        "__weakref__",
        "_base",
        "_captures",
        "_flags",
        "_node",
        "_raw",
        "_tangents",
        "_version",
        "_views",
    )
    __array_priority__ = 1000.0

    def __init__(self, data: Any, node: Node | None = None):
        kind = type(data)
        if (
            kind is not ndarray
            and kind is not float64
            # (isinstance answers numpy's type for a traced value too)
            and (not isinstance(data, generic) or isinstance(data, WrappedValue))
        ):
            if (
                isinstance(data, ndarray)
                and not isinstance(data, WrappedValue)
                and kind not in PLAIN_SUBCLASSES
            ):  # np.matrix, np.ma.MaskedArray: an operation's result, or an argument
                raise NotDifferentiableError(subclass_message(kind, "a value"))
            data = np.asarray(data)
        self._raw = data
        self._node = node
        self._base: WrappedArray | None = None
        self._version = 0
        self._captures: list[Any] | None = None
        self._views: list[WrappedArray] | None = None
        self._flags = 0
        # Forward levels (mutagrad.core.engine.ForwardTrace) to this value's tangent at
        # each; a view's are its base's (mutagrad.traced.tangents).
        self._tangents: dict[Any, Any] | None = None

    # -- numpy attributes -------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._raw.shape

    @shape.setter
    def shape(self, shape: Any) -> None:
        # numpy reshapes in place, without copying: the same memory, a new view of it.
        _set_shape(self, shape)

    @property
    def dtype(self) -> np.dtype:
        return self._raw.dtype

    @dtype.setter
    def dtype(self, dtype: Any) -> None:
        raise attribute_refused("dtype", "x = x.view(dtype), or x.astype(dtype)")

    @property
    def ndim(self) -> int:
        return self._raw.ndim

    @property
    def size(self) -> int:
        return self._raw.size

    @property
    def itemsize(self) -> int:
        return self._raw.itemsize

    @property
    def nbytes(self) -> int:
        return self._raw.nbytes

    @property
    def strides(self) -> tuple[int, ...]:
        return self._raw.strides

    @strides.setter
    def strides(self, strides: Any) -> None:
        raise attribute_refused(
            "strides", "build the view by slicing, reshape, transpose or np.broadcast_to"
        )

    @property
    def flags(self) -> Any:
        return self._raw.flags

    @property
    def base(self) -> WrappedArray | None:
        """The WrappedArray this one is a view of, as ``ndarray.base``."""
        return self._base

    @property
    def version(self) -> int:
        """How many in-place writes the array (and its views) have seen."""
        return (self._base if self._base is not None else self)._version

    @property
    def T(self) -> WrappedArray:
        return np.transpose(self)  # type: ignore[return-value]  # (see "methods" below)

    @property
    def mT(self) -> WrappedArray:
        return np.swapaxes(self, -1, -2)  # type: ignore[return-value]  # (as T)

    # (x.real = v and x.imag = v write: their setters are bound by mutagrad.traced.)
    @property
    def real(self) -> WrappedArray:
        """A view: the array itself for a real one, its real parts for a complex one."""
        return np.real(self)

    @property
    def imag(self) -> Any:
        """For a real array numpy's read-only zeros (constant); for a complex one a view of
        the imaginary parts (for a complex scalar, a number)."""
        raw = self._raw
        if raw.dtype.kind != "c":
            return wrap_constant(raw.imag, (self,), (raw,))
        if isinstance(self, WrappedArray):
            return make_view(self, raw.imag)
        return FUNCTION_RULES[np.imag](self)

    # (A WrappedArray's x.flat, read and written, is bound by mutagrad.traced: traced.flat.)
    @property
    def flat(self) -> Any:
        raise NotDifferentiableError(
            "s.flat of a traced scalar (a WrappedScalar) is not supported.\nFix: use the "
            "scalar s itself, or np.atleast_1d(s) where an array is needed."
        )

    @flat.setter
    def flat(self, value: Any) -> None:
        raise attribute_refused("flat", "a scalar is immutable: build a new value")

    @property
    def data(self) -> memoryview:
        """A read-only memoryview of a constant's data (a traced value is refused)."""
        return exported(self, "x.data").data

    @data.setter
    def data(self, buffer: Any) -> None:
        raise attribute_refused("data", "write the values: x[...] = new_values")

    @property
    def device(self) -> str:
        return self._raw.device

    def __repr__(self) -> str:
        name = type(self).__name__
        body = np.array2string(np.asarray(self._raw), separator=", ", prefix=f"{name}(")
        return f"{name}({body}, version={self.version})"

    def __str__(self) -> str:
        return str(self._raw)

    __hash__ = None  # type: ignore[assignment]

    # -- conversions ---------------------------------------------------------

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> ndarray:
        if is_active(self):
            if dtype is None or not _truncating_cast(self._raw.dtype, dtype):
                raise TracerConversionError(conversion_message("np.asarray / __array__"))
            refuse_integer_store(_getframe(1))
            # np.int64(x), np.asarray(x, dtype=bool): a float cast to integers or
            # booleans is piecewise constant, so it has no derivative (as
            # x.astype(int)); the result is a new array, never an alias of x.
            if copy is False:
                raise ValueError(
                    "Unable to avoid copy while creating an array as requested."
                )  # numpy's answer: a cast copies
            return np.array(self._raw, dtype=dtype)
        data = np.asarray(self._raw)
        if copy:
            return np.array(data, dtype=dtype, copy=True)
        if dtype is not None and np.dtype(dtype) != data.dtype:
            return data.astype(dtype)
        if type(self._raw) is ndarray:
            export(self)
        return data.view()  # the same memory, as numpy's np.asarray(a) is a itself

    def __float__(self) -> float:
        if is_active(self):
            raise TracerConversionError(conversion_message("float()"))
        return float(self._raw)

    def __complex__(self) -> complex:
        if is_active(self):
            raise TracerConversionError(conversion_message("complex()"))
        return complex(self._raw)

    def __int__(self) -> int:
        # Truncation is piecewise constant: int(x[0]) of a traced float has no
        # derivative (as x.astype(int)), and an index or a count needs none.
        # (int() of a complex number is numpy's TypeError.) But numpy
        # also calls this to store a float into an integer array, which is refused
        # as the same store into a WrappedArray is (see refuse_integer_store).
        if self._raw.dtype.kind == "f" and is_active(self):
            refuse_integer_store(_getframe(1))
        return int(self._raw)

    def __index__(self) -> int:
        # Integers used as indices or sizes carry no gradient (NoTangent).
        return operator.index(self._raw)

    def __bool__(self) -> bool:
        # Control flow on a traced value is allowed: it carries no gradient.
        return bool(self._raw)

    def item(self, *args: Any) -> Any:
        if self._raw.dtype.kind in "fc" and is_active(self):
            raise TracerConversionError(conversion_message("x.item()"))
        return self._raw.item(*args)

    def tolist(self) -> Any:
        if self._raw.dtype.kind in "fc" and is_active(self):
            raise TracerConversionError(conversion_message("x.tolist()"))
        return self._raw.tolist()

    def __copy__(self) -> WrappedArray:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> WrappedArray:
        return self.copy()

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        # Explicit, because __class__ answers numpy's type (pickle would check
        # it against the type it rebuilds). A constant pickles as its data; a
        # traced value would arrive without its gradient.
        if is_active(self):
            raise TracerConversionError(pickle_message())
        return (_unpickled, (type(self), self._raw.copy(), self._flags & _PICKLED_FLAGS))

    # -- bound by mutagrad.traced ------------------------------------------------
    #
    # numpy's protocols and the Python operators (mutagrad.traced.dispatch), the
    # in-place methods (mutagrad.traced.methods): declared here for type checkers.

    if TYPE_CHECKING:

        def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any,
                            **kwargs: Any) -> Any: ...  # fmt: skip
        def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any: ...
        def __add__(self, other: Any) -> Any: ...
        def __radd__(self, other: Any) -> Any: ...
        def __sub__(self, other: Any) -> Any: ...
        def __rsub__(self, other: Any) -> Any: ...
        def __mul__(self, other: Any) -> Any: ...
        def __rmul__(self, other: Any) -> Any: ...
        def __truediv__(self, other: Any) -> Any: ...
        def __rtruediv__(self, other: Any) -> Any: ...
        def __pow__(self, other: Any) -> Any: ...
        def __rpow__(self, other: Any) -> Any: ...
        def __matmul__(self, other: Any) -> Any: ...
        def __rmatmul__(self, other: Any) -> Any: ...
        def __neg__(self) -> Any: ...
        def __lt__(self, other: Any) -> Any: ...
        def __gt__(self, other: Any) -> Any: ...
        def __le__(self, other: Any) -> Any: ...
        def __ge__(self, other: Any) -> Any: ...
        def byteswap(self, /, inplace: bool = False) -> Any: ...

    # -- methods ---------------------------------------------------------------
    #
    # Every public attribute of np.ndarray is here (or refused by RefusedAttribute),
    # with the ndarray method's parameters, passed on to the numpy function of
    # the same name; np._NoValue marks a keyword the caller did not give, as in
    # numpy's own functions. array/methods.py holds the ones that take more.
    # numpy's stubs type those functions as returning an ndarray; given a traced
    # value they return what __array_function__ returns, a traced one (hence the
    # ignore[return-value] comments).

    def copy(self, order: _OrderKACF = "C") -> WrappedArray:
        return np.copy(self, order=order)  # type: ignore[return-value]

    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
               copy: bool = True):  # fmt: skip
        # subok: a WrappedArray has no subclass to keep or drop.
        astype = FUNCTION_RULES[ndarray.astype]  # its rule (mutagrad.rules.shape)
        return astype(self, dtype, order=order, casting=casting, copy=copy)

    def reshape(
        self, *shape: Any, order: _OrderACF = "C", copy: bool | None = None
    ) -> WrappedArray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        elif len(shape) == 1 and isinstance(shape[0], (ndarray, WrappedValue)):
            # numpy takes an integer array as the shape (np.kron, np.histogramdd do)
            sizes = np.asarray(unwrap(shape[0]))
            shape = (operator.index(sizes),) if sizes.ndim == 0 else tuple(sizes.tolist())
        return np.reshape(self, shape, order=order, copy=copy)  # type: ignore[return-value]

    def transpose(self, *axes: Any) -> WrappedArray:
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            return np.transpose(self, axes[0] or None)  # type: ignore[return-value]
        return np.transpose(self, axes or None)  # type: ignore[return-value]

    def view(self, dtype: Any = None, type: Any = None) -> Any:
        if type is None and isinstance(dtype, builtins.type) and issubclass(dtype, ndarray):
            dtype, type = None, dtype  # x.view(np.ndarray): numpy reads a class as type=
        if type is not None:
            # An ndarray (subclass) view of the memory is an export: read-only, of a constant.
            raw = exported(self, "x.view(type=...)")
            return raw.view(type) if dtype is None else raw.view(dtype, type)
        return FUNCTION_RULES[ndarray.view](self, dtype)  # its rule (mutagrad.rules.shape)

    def ravel(self, order: _OrderKACF = "C") -> WrappedArray:
        return np.ravel(self, order=order)  # type: ignore[return-value]

    def flatten(self, order: _OrderKACF = "C") -> WrappedArray:
        return np.ravel(self, order=order).copy()  # type: ignore[return-value]

    def squeeze(self, axis: Any = None) -> WrappedArray:
        return np.squeeze(self, axis=axis)  # type: ignore[return-value]

    def swapaxes(self, axis1: int, axis2: int, /) -> WrappedArray:
        return np.swapaxes(self, axis1, axis2)  # type: ignore[return-value]

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> WrappedArray:
        return np.diagonal(self, offset, axis1, axis2)  # type: ignore[return-value]

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
            initial: Any = np._NoValue, where: Any = np._NoValue):  # fmt: skip
        return np.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial,
                      where=where)  # fmt: skip

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
             *, where: Any = np._NoValue):  # fmt: skip
        return np.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)

    def prod(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
             initial: Any = np._NoValue, where: Any = np._NoValue):  # fmt: skip
        return np.prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial,
                       where=where)  # fmt: skip

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False,
            initial: Any = np._NoValue, where: Any = np._NoValue):  # fmt: skip
        return np.max(self, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False,
            initial: Any = np._NoValue, where: Any = np._NoValue):  # fmt: skip
        return np.min(self, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)

    def var(self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
            keepdims: bool = False, *, where: Any = np._NoValue,
            mean: Any = np._NoValue):  # fmt: skip
        return np.var(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                      where=where, mean=mean)  # fmt: skip

    def std(self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
            keepdims: bool = False, *, where: Any = np._NoValue,
            mean: Any = np._NoValue):  # fmt: skip
        return np.std(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                      where=where, mean=mean)  # fmt: skip

    def cumsum(self, axis: Any = None, dtype: Any = None, out: Any = None):
        return np.cumsum(self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis: Any = None, dtype: Any = None, out: Any = None):
        return np.cumprod(self, axis=axis, dtype=dtype, out=out)

    def clip(self, min: Any = None, max: Any = None, out: Any = None, **kwargs: Any):
        return np.clip(self, min, max, out=out, **kwargs)

    def dot(self, other: Any, /, out: Any = None) -> WrappedArray:
        return np.dot(self, other, out=out)

    def argmax(self, axis: Any = None, out: Any = None, *, keepdims: bool = False):
        return np.argmax(self, axis=axis, out=out, keepdims=keepdims)

    def argmin(self, axis: Any = None, out: Any = None, *, keepdims: bool = False):
        return np.argmin(self, axis=axis, out=out, keepdims=keepdims)

    def argsort(self, axis: int = -1, kind: Any = None, order: Any = None, *,
                stable: Any = None) -> Any:  # fmt: skip
        return np.argsort(self, axis=axis, kind=kind, order=order, stable=stable)

    def argpartition(self, kth: Any, /, axis: int = -1, kind: _PartitionKind = "introselect",
                     order: Any = None) -> Any:  # fmt: skip
        return np.argpartition(self, kth, axis=axis, kind=kind, order=order)

    def searchsorted(self, v: Any, /, side: _SortSide = "left", sorter: Any = None) -> Any:
        return np.searchsorted(self, v, side=side, sorter=sorter)

    def nonzero(self) -> Any:
        return np.nonzero(self)

    def compress(self, condition: Any, /, axis: Any = None, out: Any = None) -> Any:
        return np.compress(condition, self, axis=axis, out=out)

    def choose(self, choices: Any, /, out: Any = None, mode: _ModeKind = "raise") -> Any:
        return np.choose(self, choices, out=out, mode=mode)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False, *,
            where: Any = np._NoValue) -> Any:  # fmt: skip
        return np.any(self, axis=axis, out=out, keepdims=keepdims, where=where)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False, *,
            where: Any = np._NoValue) -> Any:  # fmt: skip
        return np.all(self, axis=axis, out=out, keepdims=keepdims, where=where)

    def round(self, decimals: int = 0, out: Any = None) -> Any:
        return np.round(self, decimals=decimals, out=out)

    def repeat(self, repeats: Any, /, axis: Any = None) -> WrappedArray:
        return np.repeat(self, repeats, axis=axis)  # type: ignore[return-value]

    def take(self, indices: Any, /, axis: Any = None, out: Any = None, mode: _ModeKind = "raise"):
        return np.take(self, indices, axis=axis, out=out, mode=mode)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
              out: Any = None):  # fmt: skip
        return np.trace(self, offset, axis1, axis2, dtype, out)

    def conj(self) -> WrappedArray:
        # numpy's method returns the array itself for a real array (the ufunc
        # np.conjugate copies): writes through the result reach it.
        return self if self.dtype.kind != "c" else np.conjugate(self)  # type: ignore[return-value]

    def conjugate(self) -> WrappedArray:
        return self.conj()

    def getfield(self, dtype: Any, offset: int = 0) -> Any:
        """A view; one reinterpreting the bytes carries no gradient."""
        if _same_layout(self, dtype, offset):
            return self.view() if isinstance(self, WrappedArray) else self
        if is_active(self):
            raise NotDifferentiableError(
                f"x.getfield({np.dtype(dtype)}, {offset}) reinterprets the bytes of a traced "
                f"{self.dtype} array; that has no derivative.\nFix: use x.astype(...) for a "
                "differentiable conversion."
            )
        field = wrap_constant(self._raw.getfield(dtype, offset), (self,), (self._raw,))
        if isinstance(field, WrappedArray):
            # Like x.view(other_dtype): writes through it are refused inside a gradient call.
            field._flags |= DETACHED
        return field

    # Exports of the data: refused for a traced value, read-only otherwise.

    def tobytes(self, order: str = "C") -> bytes:
        return exported(self, "x.tobytes()").tobytes(order)

    def tofile(self, fid: Any, /, sep: str = "", format: str = "%s") -> None:
        exported(self, "x.tofile()").tofile(fid, sep=sep, format=format)

    def dump(self, file: Any) -> None:
        exported(self, "x.dump()").dump(file)

    def dumps(self) -> bytes:
        return exported(self, "x.dumps()").dumps()

    def to_device(self, device: Any, /, *, stream: Any = None) -> Any:
        self._raw.to_device(device, stream=stream)  # numpy's check: only "cpu" exists
        return self

    def __array_namespace__(self, *, api_version: Any = None) -> Any:
        # The array API namespace of a WrappedArray is numpy itself: its functions
        # reach the array through __array_function__ and __array_ufunc__.
        return self._raw.__array_namespace__(api_version=api_version)

    def __format__(self, format_spec: str) -> str:
        return format(self._raw, format_spec)  # f"{loss:.3f}", as for a numpy value

    def __rdivmod__(self, other: Any) -> Any:
        return np.divmod(other, self)

    def __class_getitem__(cls, item: Any) -> GenericAlias:  # WrappedArray[...] in annotations
        return GenericAlias(cls, item)



class WrappedArray(WrappedValue):
    """A numpy array with a version number: mutagrad's traced ``ndarray``.

    ``version`` grows by one on every in-place write to the array or any view
    of it. Indexing, ``len``, iteration, ``bytes()`` and the in-place methods live here.
    """

    __slots__ = ()

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        # isinstance(x, np.ndarray) answers as for the ndarray it mirrors (see
        # WrappedValue); type(x) still says WrappedArray.
        return ndarray

    def __len__(self) -> int:
        return len(self._raw)

    def __iter__(self) -> Any:
        if _REFUSED_INDEX.asked is not None:
            _refuse_iteration_for_bytes(self, _getframe(1))
        if self._raw.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self._raw)))

    def __index__(self) -> int:
        try:
            return operator.index(self._raw)
        except TypeError:
            # Not an integer: bytearray(x) goes on to iterate x (see _REFUSED_INDEX).
            caller = _getframe(1)
            _REFUSED_INDEX.asked = (id(self), id(caller), caller.f_lasti)
            raise

    def __bytes__(self) -> bytes:
        """bytes(x), int.from_bytes(x), b"%b" % x: the array's memory, as numpy's buffer
        gives it (``x.tobytes()``, and refused for a traced value as that is)."""
        if self._raw.ndim == 0 and self._raw.dtype.kind in "iu":
            raise integer_bytes_refused()
        return exported(self, "bytes()").tobytes()

    if TYPE_CHECKING:  # bound by mutagrad.traced (indexing, mutation, methods)

        def __getitem__(self, index: Any) -> Any: ...
        def __setitem__(self, index: Any, value: Any) -> None: ...
        def fill(self, /, value: Any) -> None: ...
        def partition(self, kth: Any, /, axis: int = -1, kind: _PartitionKind = "introselect",
                      order: Any = None) -> None: ...  # fmt: skip
        def setfield(self, val: Any, /, dtype: Any, offset: int = 0) -> None: ...

    def __delitem__(self, index: Any) -> None:
        raise ValueError("cannot delete array elements")  # numpy's answer

    def __contains__(self, value: Any) -> bool:
        # numpy's (x == value).any(): a comparison, which carries no gradient.
        return bool(np.any(self == value))

    def sort(self, axis: int = -1, kind: Any = None, order: Any = None, *,
             stable: Any = None) -> None:  # fmt: skip
        # stable= only orders equal elements among themselves: the sorted values,
        # and their gradient, are the same either way.
        FUNCTION_RULES[ndarray.sort](self, axis=axis, kind=kind, order=order)  # (rules.inplace)

    def put(self, indices: Any, values: Any, /, mode: str = "raise") -> None:
        FUNCTION_RULES[ndarray.put](self, indices, values, mode=mode)  # (rules.inplace)

    def setflags(self, *, write: Any = None, align: Any = None, uic: Any = None) -> None:
        """Making the array read-only is supported; making it writeable again is refused
        (its memory may be the caller's array, frozen for the call). The flags are set on a
        new numpy view, so other arrays sharing the memory keep theirs, as in numpy."""
        if write is not None and write:
            if not self._raw.flags.writeable:
                raise refused(
                    "x.setflags(write=True)",
                    "mutagrad cannot make a read-only array writeable again: its memory may "
                    "be the caller's array or a value a pullback reads",
                    "write into a copy, x = x.copy()",
                )
            write = None  # already writeable
        if write is None and align is None and uic is None:
            return
        flagged = self._raw.view()
        flagged.setflags(write=write, align=align, uic=uic)
        self._raw = flagged

    def resize(self, *new_shape: Any, refcheck: bool = True) -> None:
        raise refused(
            "x.resize()",
            "it reallocates the array's memory in place, under every view of it and every "
            "value saved from it",
            "make a new array: x = np.resize(x, shape) repeats the values, "
            "np.pad or np.concatenate pad with zeros",
        )

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:  # fmt: skip
        """Only as a copy (``np.from_dlpack(x, copy=True)``)."""
        if copy is not True:
            raise refused(
                "x.__dlpack__() (np.from_dlpack(x), torch.from_dlpack(x), ...)",
                writable_memory_reason("DLPack") + "; consumers may ignore its read-only flag",
                "ask for a copy, np.from_dlpack(x, copy=True)",
            )
        # copy=True: a fresh array, so there is no memory left to share.
        data = np.array(exported(self, "__dlpack__ (DLPack export)"))
        return data.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._raw.__dlpack_device__()


class WrappedScalar(WrappedValue):
    """A traced numpy scalar (what ``x[i]`` returns for a 1-D ``x``); immutable like ``np.float64``.

    It is deliberately not indexable: numpy stores a non-sequence into an
    array element through ``float()``, which is where mutagrad can refuse a
    traced value instead of letting numpy drop its gradient.
    """

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]  # (as numpy: arrays unhashable, scalars not)
        # numpy scalars are hashable. A traced one is not: a dict or cache keyed
        # by it would match by number alone and hand back another value's gradient.
        if is_active(self):
            raise TracerConversionError(hash_message())
        return hash(self._raw)

    # round(v), math.floor(v), math.ceil(v), math.trunc(v): numpy's answers (a
    # Python int; round(v, n) a numpy scalar). Each is piecewise constant, so
    # the result is a constant whose derivative, zero, is the true one.

    def __round__(self, ndigits: Any = None) -> Any:
        if ndigits is None:
            return round(self._raw)
        return WrappedScalar(round(self._raw, ndigits))

    def __floor__(self) -> int:
        return math.floor(self._raw)

    def __ceil__(self) -> int:
        return math.ceil(self._raw)

    def __trunc__(self) -> int:
        return math.trunc(self._raw)

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        # isinstance(v, float), isinstance(v, np.floating), np.isscalar(v):
        # the numpy scalar type of its dtype answers, as for x[i] of an ndarray.
        return self._raw.dtype.type


# Flags a pickled constant keeps: what kind of array it is (a Buffer, frozen or not).
_PICKLED_FLAGS = BUFFER | FROZEN


def _unpickled(kind: type[WrappedValue], data: Any, flags: int) -> WrappedValue:
    """A constant of ``kind`` holding ``data``: what pickle rebuilds."""
    value = object.__new__(kind)
    WrappedValue.__init__(value, data)
    value._flags = flags
    return value


def refuse_integer_store(caller: FrameType) -> None:
    """Refuse numpy storing a traced float into an integer array: ``buf[i] = v``.

    numpy truncates it (a constant, whose derivative, zero, is right), but the
    same store into a WrappedArray is refused as a likely slip (a buffer made
    with an integer dtype by accident), and one rule holds for both. A cast the
    user wrote, ``int(v)`` or ``np.asarray(v, dtype=int)``, and numpy's own
    Python code converting a value, stay allowed.
    """
    if is_user_frame(caller) and not casts_explicitly(user_site_from(caller)):
        raise TracerConversionError(integer_store_message(user_site_from(caller)))


def _truncating_cast(source: np.dtype, target: Any) -> bool:
    """Whether casting ``source`` values to ``target`` truncates floats (to integers or booleans).

    Such a cast is piecewise constant: its derivative is zero. A cast of an
    integer keeps its value, which mutagrad differentiates as a real number,
    so it is not one.
    """
    return source.kind == "f" and np.dtype(target).kind in "biu"


def wrap(data: Any, node: Node | None = None) -> WrappedValue:
    """The right wrapper for ``data``: WrappedArray for an ndarray, WrappedScalar otherwise."""
    if type(data) is ndarray:
        return WrappedArray(data, node)
    if isinstance(data, generic) and not isinstance(data, WrappedValue):
        return WrappedScalar(data, node)
    return WrappedArray(data, node)  # (which refuses an ndarray subclass)


def truncates(result: Any, raw: Any, nodes: Any) -> bool:
    """An integer result computed from a traced float value: truncation, no derivative.

    Integer arithmetic on traced integers keeps its gradient (integers used as
    numbers are treated as reals, as in Zygote); ``np.sum(x, dtype=int)`` of a
    float ``x`` does not.
    """
    result_type = type(result)
    if result_type is float64 or (result_type is ndarray and result.dtype.kind == "f"):
        return False  # the common case, decided without the lookups below
    kind = getattr(getattr(result, "dtype", None), "kind", "f")
    if kind not in "biu":
        return False
    return any(
        n is not None and getattr(getattr(r, "dtype", None), "kind", "") in "fc"
        for r, n in zip(raw, nodes)
    )


# The constants most operations meet: a Python number, a numpy float, a plain array.
PLAIN_OPERANDS = frozenset({int, float, bool, float64, ndarray})


def operand(x: Any, tape: engine.Tape | None) -> tuple[Any, Node | None]:
    """The raw value of an operand and its node on ``tape`` (None for a constant).

    The one place an argument of a recorded operation is resolved: a view
    reads its base's current node (:func:`node_of`).
    """
    if type(x) in PLAIN_OPERANDS:
        return x, None  # (the isinstance tests below would each look up x.__class__)
    if not isinstance(x, WrappedValue):
        if type(x) is not ndarray and isinstance(x, ndarray):
            check_plain(x)
        return x, None
    if tape is None:
        if RUNNING:  # a gradient call runs: is x its, and are we in another thread?
            check_thread(x, "an operation")
        return x._raw, None
    if x._base is None:
        n = x._node
        return x._raw, n if n is not None and n.tape is tape else None
    return x._raw, node_of(x, tape)



# ---------------------------------------------------------------------------
# The attributes that take more than a numpy call.


class RefusedAttribute:
    """A public ndarray attribute a traced type does not provide: reading it raises the
    refusal that names it (:func:`missing_attribute`).

    A descriptor per name rather than ``__getattr__``: a class with
    ``__getattr__`` keeps CPython from specialising attribute loads on its
    instances, and every traced operation reads ``_raw``, ``_node`` and
    ``_base`` (a third of a traced ``np.mean``'s attribute loads took the slow
    path). Other names, and the optional dunders numpy, copy and pickle probe
    for (``__array_interface__``, ``__setstate__``), are plainly absent.
    """

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __get__(self, w: WrappedValue | None, owner: type | None = None) -> Any:
        if w is None:  # the class itself, as for any attribute it lacks
            raise AttributeError(self.name)
        raise missing_attribute(w, self.name)


def refuse_missing_ndarray_attributes(cls: type) -> None:
    """Give ``cls`` a :class:`RefusedAttribute` for each public ndarray attribute it lacks
    (once every method is bound: see :mod:`mutagrad.traced`)."""
    for name in sorted(NDARRAY_ATTRIBUTES):
        if not any(name in vars(k) for k in cls.__mro__):
            setattr(cls, name, RefusedAttribute(name))


def missing_attribute(w: WrappedValue, name: str) -> AttributeError:
    """What ``w.name`` raises when its class does not provide ``name``."""
    if name == "ctypes":
        return refused(
            "x.ctypes",
            writable_memory_reason("x.ctypes"),
            "give C code a copy, np.array(x).ctypes (of mutagrad.ignore_derivatives(x) "
            "inside a gradient call), or register the C routine as a rule with "
            "mutagrad.defvjp",
        )
    if name in NDARRAY_ATTRIBUTES and not isinstance(w, WrappedArray):
        # The in-place methods and the ones numpy scalars lack.
        return refused(
            f"x.{name}",
            "x is a WrappedScalar (what indexing one element returns), immutable like a "
            "numpy scalar (whose fill, put, resize and setflags silently do nothing)",
            "call it on the array the element came from, or on np.reshape(x, (1,))",
        )
    if name in NDARRAY_ATTRIBUTES:
        return refused(
            f"x.{name}",
            "mutagrad has not checked that it keeps the version counter and gradients right",
            f"call it on a copy outside the traced code (np.array(x).{name}), or open an "
            "issue asking for it",
        )
    return AttributeError(f"{type(w).__name__!r} object has no attribute {name!r}")


def exported(w: WrappedValue, operation: str) -> Any:
    """``w``'s data for numpy to export (bytes, a memoryview, a pickle, a file).

    A traced value is refused like ``np.asarray(x)``: the export carries no
    gradient. A constant comes as a read-only view, so a memoryview of it
    cannot write behind the version counter.
    """
    if is_active(w):
        raise TracerConversionError(conversion_message(operation))
    return engine.read_only(w._raw)


class _RefusedIndex(threading.local):
    """The last WrappedArray that refused to be an integer, and where (per thread).

    ``bytearray(x)`` tries x as a size (``__index__``), then its buffer, then iterates
    it. A WrappedArray has no buffer (a Python class gets one only from ``__buffer__``,
    Python 3.12+, which numpy would consult before ``__array__`` for every conversion),
    so the iteration would give a byte per element where numpy copies the memory. The
    fallback is recognised by its sequence: within one call of the user's (the same
    frame and instruction), the array refuses ``__index__`` and then is iterated.
    ``bytes(x)`` asks ``__bytes__`` first and never gets there; Python code asks the
    two in different instructions. What else matches (a C function trying an integer,
    then iterating; one instruction run twice, as ``for g in (operator.index, list):
    g(x)``) is refused too: an error, never a different number.
    """

    asked: tuple[int, int, int] | None = None


_REFUSED_INDEX = _RefusedIndex()


def _refuse_iteration_for_bytes(w: WrappedArray, caller: FrameType) -> None:
    """Refuse iterating ``w`` if the same call of the user's just asked it for an integer."""
    asked = _REFUSED_INDEX.asked
    _REFUSED_INDEX.asked = None
    if asked == (id(w), id(caller), caller.f_lasti):
        raise iterated_for_bytes_refused()


def _same_layout(w: WrappedValue, dtype: Any, offset: int) -> bool:
    return np.dtype(dtype) == w.dtype and offset == 0


def _set_shape(w: WrappedValue, shape: Any) -> None:
    """``w.shape = shape``: numpy's in-place reshape, which never copies.

    A view simply views its memory in the new shape (its next read records it
    from the base, as for any view). An array that owns its memory keeps it;
    its value on the tape becomes a view read of the old value (the pullback
    reshapes the cotangent back), so captures, views and later writes keep
    their meaning.
    """
    if not isinstance(w, WrappedArray):
        raise refused("setting x.shape", "a WrappedScalar is immutable, as numpy scalars are",
                      "use np.reshape(x, shape)")  # fmt: skip
    if w._flags & (READONLY | PINNED):
        raise refused("setting x.shape", "this array is a value handed to a pullback, whose "
                      "shape the backward pass relies on", "use x.reshape(shape)")  # fmt: skip
    reshaped = w._raw.view()
    reshaped.shape = shape  # numpy's own rules and errors (never a copy)
    if w._base is not None:
        w._raw = reshaped
        w._node = None  # the cached read has the old shape
        return
    trace = current_trace()
    old = w._node
    if old is not None:
        if trace is None or old.tape is not trace.tape:
            raise refused(
                "setting x.shape",
                "x's value is recorded on the tape of another gradient call (one still "
                "running in another thread, or a pullback's), which would not see the new shape",
                "use x = x.reshape(shape)",
            )
        node = Node(VIEW_READ, (old,), trace.tape, old.tag, reshaped, user_site())
        w._node = push(node, (reshaped, w._raw, w._version, w))
        trace.tape.touch(w)
    w._raw = reshaped


# ---------------------------------------------------------------------------
# Nodes, activity and views.


def node_of(w: WrappedValue, tape: engine.Tape | None) -> Node | None:
    """The node of ``w``'s current value on ``tape``, or None if it is a constant there."""
    base = w._base
    if base is None:
        n = w._node
        if n is not None and n.tape is tape:
            return n
        return None
    flags = w._flags
    if flags:
        if flags & DETACHED:
            return None
        if flags & PINNED:
            n = w._node
            return n if n is not None and n.tape is tape else None
    bn = base._node
    if bn is None or bn.tape is not tape:
        return None
    n = w._node
    # The cached read is current if no write happened since and the base still
    # has the node it was read from (a nested call with implicit parameters
    # gives the base a new input node without writing it).
    if n is not None and w._version == base._version and n.tape is tape and n.inputs[0] is bn:
        return n
    data = w._raw
    if data.itemsize != base._raw.itemsize:
        n = _part_node(data, base, bn, tape)
    else:
        n = push(Node(VIEW_READ, (bn,), tape, bn.tag, data, user_site(2)),
                 (data, base._raw, base._version, base))  # fmt: skip
    w._node = n
    w._version = base._version
    return n


def _part_node(data: ndarray, base: WrappedArray, bn: Node, tape: engine.Tape) -> Node:
    """The node of ``z.real`` or ``z.imag`` (a view of one part of complex elements): the
    view of the whole elements, then the part of them (mutagrad.core.regions)."""
    elements = complex_elements(data, base._raw)
    site = user_site(3)
    if elements is None:  # x.view(other dtype): refused by the view's Region
        return push(Node(VIEW_READ, (bn,), tape, bn.tag, data, site),
                    (data, base._raw, base._version, base))  # fmt: skip
    whole = push(Node(VIEW_READ, (bn,), tape, bn.tag, elements, site),
                 (elements, base._raw, base._version, base))  # fmt: skip
    part = IMAG_PART if is_imaginary_part(data, elements) else REAL_PART
    return push(Node(part, (whole,), tape, bn.tag, data, site), (None, None))


def is_active(w: WrappedValue) -> bool:
    """Does ``w`` carry a gradient in the current gradient call?

    Where no call is active, a value of a call running in another thread is
    refused (:func:`check_thread`) rather than taken for a constant.
    """
    trace = current_trace()
    if trace is None:
        if RUNNING:  # a gradient call runs: is w its, and are we in another thread?
            check_thread(w, "a conversion")
        return False
    if w._flags & DETACHED:
        return False
    base = w._base if w._base is not None and not w._flags & PINNED else w
    n = base._node
    if n is not None and n.tape is trace.tape:
        return True
    return bool(trace.forward) and has_tangent(w, trace.forward)


def has_tangent(w: WrappedValue, levels: tuple[Any, ...]) -> bool:
    """Whether ``w`` has a tangent at one of the forward ``levels`` (a view: its base has)."""
    if w._flags & DETACHED:
        return False
    holder = w._base if w._base is not None else w
    tangents = holder._tangents
    if tangents is None:
        return False
    return any(level in tangents for level in levels)


def tangents_among(values: tuple[Any, ...], levels: tuple[Any, ...]) -> bool:
    """Whether a WrappedValue among ``values`` has a tangent at one of the forward ``levels``."""
    return any(isinstance(v, WrappedValue) and has_tangent(v, levels) for v in values)


def check_plain(a: ndarray) -> None:
    """Refuse an ndarray subclass (np.matrix, np.ma.MaskedArray) as an operand of ours.

    A rule computes on plain arrays, so its result would be numpy's for a
    different program (a masked sum that counts the masked elements).
    """
    if type(a) not in PLAIN_SUBCLASSES:
        raise NotDifferentiableError(subclass_message(type(a), "an operand"))


def check_thread(w: WrappedValue, operation: str) -> None:
    """Where no trace is active: refuse ``w`` if it belongs to a call running in another thread.

    A thread started inside ``f`` does not inherit the trace (a context
    variable), so without this the value would count as a constant there.
    """
    base = w._base
    n = w._node if base is None or w._flags & PINNED else base._node
    if n is not None and not w._flags & DETACHED:
        trace = current_trace()
        if isinstance(trace, engine.ForwardTrace) and trace.sealed is n.tape:
            raise NotDifferentiableError(forwarddiff_closure_message(user_site(3)))
        refuse_other_thread(n.tape, operation, user_site(3))
    holder = base if base is not None else w
    if holder._tangents and not w._flags & DETACHED:  # (a forward level's value)
        refuse_other_thread_tangent(tuple(holder._tangents), operation, user_site(3))


def runs_elsewhere(w: WrappedValue) -> bool:
    """Whether ``w``'s value is on the tape of a call whose function is running (any thread)."""
    if not RUNNING:
        return False
    base = w._base if w._base is not None else w
    n = base._node
    return n is not None and any(t.tape is n.tape for t in RUNNING)


def any_active(values: Any) -> bool:
    """True when any WrappedArray among ``values`` (in nested lists and tuples) is active."""
    trace = current_trace()
    if trace is None:
        return False
    for v in values:
        if isinstance(v, WrappedValue):
            if is_active(v):
                return True
        elif isinstance(v, (list, tuple)) and any_active(v):
            return True
    return False


def make_view(parent: WrappedValue, data: ndarray) -> WrappedArray:
    """A WrappedArray for ``data``, a numpy view into ``parent``'s memory."""
    base = parent._base if parent._base is not None else parent
    v = WrappedArray(data)
    v._base = base  # type: ignore[assignment]  # parent holds an ndarray (data views it): an array
    if parent._flags & (DETACHED | THAWED):
        v._flags = parent._flags & (DETACHED | THAWED)
    views = base._views  # (a borrowed base's, or an aliased output's over one: they move
    if views is not None:  # with the caller's memory on copy-on-write)
        views.append(v)
    return v


def is_view_of(result: ndarray, data: Any) -> bool:
    return (
        type(data) is ndarray and result.base is not None and np.may_share_memory(result, data)
    )


def wrap_constant(result: Any, args: tuple[Any, ...] = (), raw: Any = ()) -> Any:
    """Wrap a result that carries no gradient; a view of an argument stays a view of it."""
    if type(result) is ndarray:
        for a, r in zip(args, raw):
            if isinstance(a, WrappedValue) and is_view_of(result, r):
                return make_view(a, result)
        return WrappedArray(result)
    if isinstance(result, generic):
        return WrappedScalar(result)
    if type(result) is tuple:
        return tuple(wrap_constant(r, args, raw) for r in result)
    return result


def unwrap(value: Any) -> Any:
    """Raw data of WrappedArrays in ``value`` (looking into lists, tuples and dicts)."""
    if isinstance(value, WrappedValue):
        return value._raw
    if type(value) in (list, tuple):
        return type(value)(unwrap(v) for v in value)
    if type(value) is dict:
        return {k: unwrap(v) for k, v in value.items()}
    return value


def export(w: WrappedValue) -> None:
    """Hand ``w``'s memory to numpy as a plain ndarray (``np.asarray`` of a constant).

    numpy's ``np.asarray(a)`` is ``a`` itself, writable: so is the array
    returned here. Its writes bypass the version counter, so the captures of
    the array are detached (they keep copies) now and from now on, and a
    differentiated value may no longer be written into it (the plain
    ndarray's readers would not see its derivative).
    """
    base = w._base if w._base is not None else w
    if base._flags & EXPORTED:
        return
    base._flags |= EXPORTED
    for c in base._captures or ():
        if c.region is not None:
            c.detach()
    base._captures = None


def is_raw_array(x: Any) -> bool:
    """Whether ``x`` is an ndarray (or subclass) that is not traced.

    ``isinstance(w, np.ndarray)`` is True for a WrappedArray too: it answers
    Python's type questions as the ndarray it mirrors.
    """
    return type(x) is ndarray or (isinstance(x, ndarray) and not isinstance(x, WrappedValue))


def holds_wrapped(value: Any) -> bool:
    """Whether ``value`` is a WrappedValue or a (nested) list or tuple holding one."""
    if isinstance(value, WrappedValue):
        return True
    kind = type(value)
    return (kind is list or kind is tuple) and any(holds_wrapped(v) for v in value)


def stack_sequence(value: Any, dtype: Any = None) -> Any:
    """``np.array(value)`` for a nested list or tuple of traced values, stacked on the tape.

    numpy would turn the traced elements into raw numbers (dropping their
    gradient) or refuse them; stacking keeps the gradient of every element.
    """
    if isinstance(value, (list, tuple)):
        parts = [stack_sequence(v, dtype) for v in value]
        parts = [p if isinstance(p, WrappedValue) else wrap(np.asarray(p)) for p in parts]
        stacked = np.stack(parts)
        return stacked if dtype is None else stacked.astype(dtype)
    if isinstance(value, WrappedValue):
        return value.copy() if dtype is None else value.astype(dtype)
    return np.asarray(value, dtype=dtype)


def array_like(value: Any) -> Any:
    """An array-like argument with its traced elements kept: a list or tuple holding
    traced values becomes one traced array; anything else is returned as it is."""
    kind = type(value)
    if (kind is list or kind is tuple) and holds_wrapped(value):
        return stack_sequence(value)
    return value


def traced_handle(
    value: Any, node: Node | None, base: WrappedArray | None = None, tangents: Any = None
) -> Any:
    """A read-only WrappedArray pinned to ``node``, given to a pullback in a traced sweep.

    Where forward levels enclose the sweep, the handle carries the saved
    value's tangents: a view of its base reads them there (the capture is
    live, so they are the ones it saw); a snapshot brings its copies
    (``tangents``); a traced scalar was saved as itself.
    """
    if isinstance(value, WrappedValue):  # a traced scalar, saved with its tangents
        tangents, value = value._tangents, value._raw
    w = make_view(base, value) if base is not None and type(value) is ndarray else wrap(value)
    w._node = node
    w._flags |= READONLY | PINNED
    if tangents is not None:
        w._tangents = tangents
    return w



# ---------------------------------------------------------------------------
