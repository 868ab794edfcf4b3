"""``import mutagrad.numpy as mnp``: numpy for traced values, as ``autograd.numpy`` is for autograd.

Plain numpy already accepts WrappedArrays (NEP 18 and NEP 13 send every call
with one among the arguments to mutagrad). What it cannot see are traced
values *inside* Python lists and tuples, nor allocations without an array
argument. This namespace adds both:

* inside a gradient call, constructors return WrappedArrays, which can hold
  traced values written into them: ``zeros``, ``ones``, ``empty``, ``full``,
  ``arange``, ``eye``...;
* ``array``/``asarray`` (with numpy's ``dtype``, ``copy``, ``order`` and
  ``ndmin``) stack nested lists and tuples of traced values on the tape, and
  ``r_``/``c_`` concatenate them as numpy's index tricks do; ``asanyarray``,
  ``ascontiguousarray``, ``asfortranarray`` and ``require`` copy or view a
  traced array exactly where numpy does; ``ndenumerate`` and ``nditer``
  (read-only operands) iterate it in numpy's order;
* every other function of numpy, ``numpy.linalg`` and ``numpy.fft`` (ufuncs
  included) takes a list of traced values wherever numpy takes an
  array-like: ``mnp.mean([x, x + 2.0])``, ``mnp.linalg.norm([a, b])``. Which
  arguments are array-likes is numpy's own answer (its NEP 18 dispatcher),
  so a sequence of arrays keeps its meaning (``mnp.concatenate([x, [a, b]])``
  stacks ``[a, b]``, not the whole list) and a shape or an axis is left alone;
* the integer (and boolean) scalar types cast a traced value without
  differentiating the cast, so ``W[mnp.int64(W[:, -1])]`` indexes; the float
  types cast it keeping its gradient.

Names not listed here are numpy's own objects.

Outside a gradient call, given no WrappedValue, every function returns what
numpy returns, ndarrays and numpy scalars of numpy's own types (as
``autograd.numpy`` does outside ``grad``), so ``import mutagrad.numpy as np``
is a drop-in for a whole script: ``json.dumps(float(...))``,
``isinstance(a, np.ndarray)`` and every library that checks types see numpy.
A buffer that lives across gradient calls and is written with traced values
(a module-level scratch array) is made with ``mutagrad.array(np.zeros(n))``.
"""

from __future__ import annotations

import builtins as _builtins
import sys
import types as _types
from typing import Any

import numpy as _np

from mutagrad.core.engine import current_trace as _current_trace
from mutagrad.core.memory import copy_keeping_layout as _copy_keeping_layout
from mutagrad.errors import NotDifferentiableError as _NotDifferentiableError
from mutagrad.traced.value import WrappedArray as _WrappedArray
from mutagrad.traced.value import WrappedValue as _WrappedValue
from mutagrad.traced.value import holds_wrapped as _holds_wrapped
from mutagrad.traced.value import stack_sequence as _stack_sequence
from mutagrad.traced.value import unwrap as _unwrap

_DISPATCHED_FUNCTION = type(_np.mean)  # a numpy function with NEP 18 dispatch
_SEQUENCES = (list, tuple)

# ---------------------------------------------------------------------------
# Constructors that return WrappedArrays.


def _untraced(*values: Any) -> bool:
    """No gradient call runs and no WrappedValue is among ``values``: numpy's result is the
    answer (a WrappedArray made here would outlive the call as a version-tracked constant)."""
    return _current_trace() is None and not _holds_wrapped(values)


def _constructor(numpy_function: Any) -> Any:
    def make(*args: Any, **kwargs: Any) -> Any:
        if _untraced(args, tuple(kwargs.values())):
            return numpy_function(*args, **kwargs)
        if type(numpy_function) is _DISPATCHED_FUNCTION:  # traced endpoints of linspace...
            result = _call_stacking(numpy_function, args, kwargs)
        else:
            result = numpy_function(*args, **kwargs)
        return result if isinstance(result, _WrappedValue) else _WrappedArray(result)

    make.__name__ = make.__qualname__ = numpy_function.__name__
    make.__doc__ = (
        f"``np.{numpy_function.__name__}``, returning a WrappedArray inside a gradient call."
    )
    return make


zeros = _constructor(_np.zeros)
ones = _constructor(_np.ones)
empty = _constructor(_np.empty)
arange = _constructor(_np.arange)
linspace = _constructor(_np.linspace)
logspace = _constructor(_np.logspace)
eye = _constructor(_np.eye)
identity = _constructor(_np.identity)


def _traced_sequence(value: Any) -> bool:
    """A list or tuple with a traced value somewhere inside: what numpy cannot dispatch on."""
    kind = type(value)
    return (kind is list or kind is tuple) and _holds_wrapped(value)


def _prototype(a: Any) -> Any:
    """Raw data with ``a``'s shape and dtype (the ``*_like`` constructors read nothing else)."""
    if isinstance(a, _WrappedValue):
        return a._raw
    return _np.asarray(_unwrap(a)) if _traced_sequence(a) else a


def full(shape: Any, fill_value: Any, dtype: Any = None, order: Any = "C") -> Any:
    """``np.full`` (a WrappedArray in a call); a traced ``fill_value`` keeps its gradient."""
    if _untraced(fill_value):
        return _np.full(shape, fill_value, dtype=dtype, order=order)
    if _traced_sequence(fill_value):
        fill_value = _stack_sequence(fill_value)
    if isinstance(fill_value, _WrappedValue):
        return _np.full_like(_WrappedArray(_np.empty(shape, dtype=dtype or fill_value.dtype,
                                                     order=order)),
                             fill_value, dtype=dtype)  # fmt: skip
    return _WrappedArray(_np.full(shape, fill_value, dtype=dtype, order=order))


def zeros_like(a: Any, *args: Any, **kwargs: Any) -> Any:
    if _untraced(a):
        return _np.zeros_like(a, *args, **kwargs)
    return _WrappedArray(_np.zeros_like(_prototype(a), *args, **kwargs))


def ones_like(a: Any, *args: Any, **kwargs: Any) -> Any:
    if _untraced(a):
        return _np.ones_like(a, *args, **kwargs)
    return _WrappedArray(_np.ones_like(_prototype(a), *args, **kwargs))


def empty_like(a: Any, *args: Any, **kwargs: Any) -> Any:
    if _untraced(a):
        return _np.empty_like(a, *args, **kwargs)
    return _WrappedArray(_np.empty_like(_prototype(a), *args, **kwargs))


def full_like(a: Any, fill_value: Any, *args: Any, **kwargs: Any) -> Any:
    if _untraced(a, fill_value):
        return _np.full_like(a, fill_value, *args, **kwargs)
    if _traced_sequence(fill_value):
        fill_value = _stack_sequence(fill_value)
    prototype = a if isinstance(a, _WrappedArray) else _WrappedArray(_np.asarray(_prototype(a)))
    return _np.full_like(prototype, fill_value, *args, **kwargs)


def kaiser(M: Any, beta: Any) -> Any:
    """``np.kaiser``; a traced ``beta`` keeps its gradient.

    numpy's kaiser is not dispatched (it has no array argument to dispatch
    on) and converts ``beta`` with ``np.array([0.0, M, beta])``. This runs
    the same formula on traced values, so the window is numpy's to the bit.
    """
    if not isinstance(beta, _WrappedValue):
        return _np.kaiser(_unwrap(M), beta)
    # numpy's np.array([0.0, M, beta]): at least float64; M is a length, not differentiated
    dtype = _np.result_type(0.0, _np.asarray(_unwrap(M)), beta.dtype)
    M = dtype.type(_unwrap(M))
    beta = beta if beta.dtype == dtype else beta.astype(dtype)
    if M == 1:
        return _WrappedArray(_np.ones(1, dtype=dtype))
    n = _np.arange(0, M)
    alpha = (M - 1) / 2.0
    return _np.i0(beta * _np.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / _np.i0(beta)


def make_diagonal(D: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """autograd.numpy's ``make_diagonal`` (not a numpy function), for programs written for it.

    A zero array of shape ``D.shape + (D.shape[-1],)`` with ``D`` on the
    diagonal of its last two axes, float64 as autograd makes it; like
    autograd's, only ``offset=0, axis1=-1, axis2=-2`` is supported.
    """
    if not (offset == 0 and axis1 == -1 and axis2 == -2):
        raise NotImplementedError(
            "make_diagonal supports offset=0, axis1=-1, axis2=-2 only (as autograd's does)."
        )
    n = _np.shape(D)[-1]
    if _untraced(D):
        raw = _np.zeros((*_np.shape(D), n))
        raw[..., _np.arange(n), _np.arange(n)] = D
        return raw
    out = _WrappedArray(_np.zeros((*_np.shape(D), n)))
    diagonal = _np.arange(n)
    out[..., diagonal, diagonal] = asarray(D)
    return out


class vectorize(_np.vectorize):
    """``np.vectorize`` whose function may take and return traced values (as ``jnp.vectorize``).

    numpy runs the function on the elements of object arrays, which cannot
    hold a traced value. With a traced argument this calls the function on
    traced elements (or, with ``signature=``, on traced core sub-arrays) in
    numpy's order, as often as numpy does (the extra first call that finds
    the output types included, unless ``cache=True`` or ``otypes`` is given),
    and stacks the results in the dtype numpy gives them: the gradient flows
    through every call. ``excluded`` and keyword arguments work as in numpy.
    """

    def _vectorize_call(self, func: Any, args: Any) -> Any:
        if not args or not any(_traced_argument(a) for a in args):
            return super()._vectorize_call(func, args)  # type: ignore[misc]  # (numpy's, no stub)
        args = [asarray(a) if _traced_argument(a) else _np.asanyarray(a) for a in args]
        if self.signature is None and self.otypes is None and any(a.size == 0 for a in args):
            return super()._vectorize_call(func, [_unwrap(a) for a in args])  # type: ignore[misc]  # numpy raises
        in_core, nout, first = self._cores_and_outputs(func, args)
        loop = _np.broadcast_shapes(*(_loop_shape(a, core) for a, core in zip(args, in_core)))
        if _np.prod(loop) == 0:
            return super()._vectorize_call(func, [_unwrap(a) for a in args])  # type: ignore[misc]
        columns = self._columns(func, args, in_core, loop, nout, first)
        typed = first if first is not None else tuple(column[0] for column in columns)
        typed = typed if isinstance(typed, tuple) else (typed,)
        outputs = []
        for k, column in enumerate(columns):
            dtype = _np.dtype(self.otypes[k]) if self.otypes is not None else _dtype_of(typed[k])
            stacked = _np.stack([asarray(r) for r in column])
            outputs.append(stacked.reshape(loop + stacked.shape[1:]).astype(dtype, copy=False))
        return outputs[0] if nout == 1 else tuple(outputs)

    def _cores_and_outputs(self, func: Any, args: list[Any]) -> tuple[Any, int, Any]:
        """Each argument's core dimensions, the number of outputs, and the result of
        numpy's first call that finds the output types (None when numpy makes none)."""
        if self.signature is not None:
            in_core, out_core = self._in_and_out_core_dims  # type: ignore[attr-defined]
            if len(args) != len(in_core):
                raise TypeError(f"wrong number of positional arguments: expected "
                                f"{len(in_core)!r}, got {len(args)!r}")  # fmt: skip
            return in_core, len(out_core), None
        if self.otypes is not None:
            return [()] * len(args), len(self.otypes), None
        first = func(*(_np.ravel(a)[0] for a in args))
        return [()] * len(args), len(first) if isinstance(first, tuple) else 1, first

    def _columns(self, func: Any, args: list[Any], in_core: Any, loop: tuple[int, ...],
                 nout: int, first: Any) -> list[list[Any]]:  # fmt: skip
        """``func`` called on each element (or core sub-array) in numpy's order: its
        results, one list per output."""
        spread = [_np.broadcast_to(a, loop + a.shape[a.ndim - len(core):])
                  for a, core in zip(args, in_core)]  # fmt: skip
        columns: list[list[Any]] = [[] for _ in range(nout)]
        for index in _np.ndindex(*loop):
            if first is not None and self.cache and not any(index):
                results = first  # numpy hands the cached first call to the first element
            else:
                results = func(*(a[index] for a in spread))
            results = results if isinstance(results, tuple) else (results,)
            if len(results) != nout:
                raise ValueError(f"wrong number of outputs from pyfunc: expected {nout!r}, "
                                 f"got {len(results)!r}")  # fmt: skip
            for column, result in zip(columns, results):
                column.append(result)
        return columns


def _traced_argument(a: Any) -> bool:
    return isinstance(a, _WrappedValue) or _traced_sequence(a)


def _loop_shape(a: Any, core: tuple[str, ...]) -> tuple[int, ...]:
    if a.ndim < len(core):
        raise ValueError(f"input operand has {a.ndim} dimensions, but the signature needs "
                         f"{len(core)} core dimensions")  # fmt: skip
    return a.shape[: a.ndim - len(core)]


def _dtype_of(value: Any) -> Any:
    """The dtype numpy gives an output of vectorize: that of ``np.asarray`` of its first value."""
    return value.dtype if isinstance(value, _WrappedValue) else _np.asarray(value).dtype


# ---------------------------------------------------------------------------
# array, asarray and friends.


def _with_ndmin(result: Any, ndmin: int) -> Any:
    missing = ndmin - result.ndim
    return result.reshape((1,) * missing + result.shape) if missing > 0 else result


def _with_order(result: Any, order: Any) -> Any:
    """``result`` laid out as ``order`` asks ('C' or 'F'; 'A' and 'K' keep it)."""
    contiguous = {"C": "C_CONTIGUOUS", "F": "F_CONTIGUOUS"}.get(order)
    # (a strided 1-d array is neither: numpy copies it too)
    if contiguous is not None and not result.flags[contiguous]:
        return result.copy(order=order)
    return result


def array(object: Any, dtype: Any = None, *, copy: bool | None = True, order: Any = "K",
          subok: bool = False, ndmin: int = 0, like: Any = None) -> Any:  # fmt: skip
    """``np.array`` returning a WrappedArray in a gradient call; nested lists and tuples of
    traced values are stacked on the tape, so ``mnp.array([[a, b], [c, d]])`` keeps every
    gradient. Outside a call, of data holding no WrappedValue, numpy's own ``np.array``.

    In a call, a raw array is always copied, even with ``copy=False`` (numpy would share
    it): writes to the raw array by name would bypass the WrappedArray's
    version. A WrappedArray with ``copy=False`` or ``None`` is returned as it
    is when it needs no conversion (a view of it with ``ndmin``).
    """
    if not _holds_wrapped(object):
        kwargs = {} if like is None else {"like": like}
        if _untraced(like):
            return _np.array(object, dtype=dtype, copy=copy, order=order, subok=subok,
                             ndmin=ndmin, **kwargs)  # fmt: skip
        return _WrappedArray(_np.array(object, dtype=dtype, copy=True, order=order,
                                       ndmin=ndmin, **kwargs))  # fmt: skip
    if isinstance(object, _WrappedValue):
        if copy is not True and (dtype is None or _np.dtype(dtype) == object.dtype):
            result = object
        elif dtype is None:
            result = object.copy(order="K" if order is None else order)
        else:
            result = object.astype(dtype, order="K" if order is None else order)
        if result is object and order in ("C", "F"):
            result = _with_order(result, order)
    else:
        result = _with_order(_stack_sequence(object, dtype), order)
    if not isinstance(result, _WrappedArray):  # a traced scalar: np.array gives a 0-d array
        result = result.copy()  # (a copy of an immutable scalar: nothing can tell)
    return _with_ndmin(result, ndmin)


def asarray(a: Any, dtype: Any = None, order: Any = None, *, device: Any = None,
            copy: bool | None = None, like: Any = None) -> Any:  # fmt: skip
    """``a`` as a WrappedArray in a gradient call: ``a`` itself when it is one (as
    ``jnp.asarray``), lists of traced values stacked, raw data copied (see :func:`array`);
    outside a call, of data holding no WrappedValue, numpy's own ``np.asarray``."""
    if device not in (None, "cpu"):
        raise ValueError(f"device must be 'cpu' or None, not {device!r}")
    return array(a, dtype, copy=copy, order="K" if order is None else order, like=like)


asanyarray = asarray


def ascontiguousarray(a: Any, dtype: Any = None, *, like: Any = None) -> Any:
    """``np.ascontiguousarray`` for traced values: ``a`` itself when already C-contiguous."""
    return _with_ndmin(asarray(a, dtype, order="C", like=like), 1)


def asfortranarray(a: Any, dtype: Any = None, *, like: Any = None) -> Any:
    """``np.asfortranarray`` for traced values: ``a`` itself when already Fortran-contiguous."""
    return _with_ndmin(asarray(a, dtype, order="F", like=like), 1)


def require(a: Any, dtype: Any = None, requirements: Any = None, *, like: Any = None) -> Any:
    """``np.require`` for traced values: numpy's steps (``array(..., copy=None)`` in the
    order asked, then a copy where a flag is still missing), so it copies or views exactly
    where numpy does."""
    if (like is not None or not _holds_wrapped(a)) and _untraced(a, like):
        return _np.require(a, dtype, requirements, like=like)
    if not requirements:
        return asanyarray(a, dtype=dtype)
    if isinstance(requirements, str):
        requirements = [requirements]
    wanted = {_REQUIREMENT_FLAGS[r.upper()] for r in requirements}
    wanted.discard("E")  # ensure an ndarray: a WrappedArray is numpy's ndarray, no subclass
    order = "A"
    if wanted >= {"C", "F"}:
        raise ValueError('Cannot specify both "C" and "F" order')  # numpy's error
    for contiguous in ("F", "C"):
        if contiguous in wanted:
            order = contiguous
            wanted.remove(contiguous)
            break
    arr = array(a, dtype=dtype, order=order, copy=None)
    for flag in wanted:
        if not arr.flags[flag]:
            return arr.copy(order)
    return arr


_REQUIREMENT_FLAGS = {
    "C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F",
    "FORTRAN": "F", "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W", "O": "O",
    "OWNDATA": "O", "E": "E", "ENSUREARRAY": "E",
}  # fmt: skip


class ndenumerate:
    """``np.ndenumerate`` for traced values: ``(index, element)`` pairs in C order, each
    element read when it is reached (through ``x.flat``, as numpy's own)."""

    def __init__(self, arr: Any):
        self.iter = asarray(arr).flat

    def __next__(self) -> tuple[tuple[int, ...], Any]:
        return self.iter.coords, next(self.iter)

    def __iter__(self) -> ndenumerate:
        return self


def nditer(op: Any, flags: Any = None, op_flags: Any = None, op_dtypes: Any = None,
           order: str = "K", casting: str = "safe", op_axes: Any = None, itershape: Any = None,
           buffersize: int = 0) -> Any:  # fmt: skip
    """``np.nditer`` for traced values: read-only operands, numpy's own order.

    numpy's iterator runs on arrays laid out as the operands (same shapes and
    strides), so the order (``'K'``: memory order) and the indices are its
    own; each step reads the traced operands there, as numpy's read-only 0-d
    views. Written operands (``op_flags`` ``readwrite``, ``writeonly``) and
    the flags that change what a step is (``external_loop``, ``buffered``...)
    are refused by name.
    """
    operands = list(op) if isinstance(op, (list, tuple)) else [op]
    keywords = {"op_dtypes": op_dtypes, "order": order, "casting": casting, "op_axes": op_axes,
                "itershape": itershape, "buffersize": buffersize}  # fmt: skip
    if _untraced(tuple(operands)):
        return _np.nditer(op, flags, op_flags, **keywords)
    flags = [] if flags is None else [flags] if isinstance(flags, str) else list(flags)
    refused = sorted(set(flags) - _NDITER_FLAGS)
    per_operand = op_flags if op_flags and isinstance(op_flags[0], (list, tuple)) else (
        [op_flags or ["readonly"]] * len(operands))  # fmt: skip
    written = sorted({f for fs in per_operand for f in fs} - {"readonly"} - _NDITER_OP_FLAGS)
    if refused or written or op_dtypes is not None or op_axes is not None:
        what = ", ".join(repr(f) for f in [*refused, *written]) or "op_dtypes or op_axes"
        raise _NotDifferentiableError(
            f"np.nditer with {what} on traced arrays: mutagrad iterates traced operands "
            "read-only, one element at a time, in numpy's order.\nFix: read with "
            "np.nditer(x) (or x.flat, np.ndenumerate) and write through x[index] = value."
        )
    return _TracedIterator(operands, flags, per_operand, keywords)


_NDITER_FLAGS = frozenset({"multi_index", "c_index", "f_index", "refs_ok", "zerosize_ok",
                           "common_dtype"})  # fmt: skip
_NDITER_OP_FLAGS = frozenset({"readonly", "copy", "nbo", "aligned", "contig", "no_broadcast",
                              "no_subtype"})  # fmt: skip


class _TracedIterator:
    """What :func:`nditer` returns for traced operands (numpy's ``nditer`` protocol)."""

    def __init__(self, operands: list[Any], flags: list[str], op_flags: Any,
                 keywords: dict[str, Any]):  # fmt: skip
        self.operands = tuple(asarray(o) for o in operands)
        stand_ins = [_copy_keeping_layout(_np.asarray(_unwrap(o)))[0] for o in self.operands]
        probe_flags: Any = [*flags, "multi_index"]
        probe_op_flags: Any = [list(f) for f in op_flags]
        probe = _np.nditer(stand_ins, probe_flags, probe_op_flags, **keywords)
        self.shape = tuple(probe.shape)
        self._indices = [probe.multi_index for _ in probe]
        self._flags = set(flags)
        self._views = [_np.broadcast_to(o, self.shape) for o in self.operands]
        self.iterindex = 0
        self._started = False

    @property
    def itersize(self) -> int:
        return len(self._indices)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def finished(self) -> bool:
        return self.iterindex >= len(self._indices)

    @property
    def multi_index(self) -> tuple[int, ...]:
        if "multi_index" not in self._flags:
            raise ValueError("Iterator is not tracking a multi-index")  # numpy's error
        return self._indices[self.iterindex]

    @property
    def index(self) -> int:
        order: Any = "C" if "c_index" in self._flags else "F" if "f_index" in self._flags else None
        if order is None:
            raise ValueError("Iterator does not have an index")  # numpy's error
        index: Any = self._indices[self.iterindex]
        return int(_np.ravel_multi_index(index, self.shape, order=order))

    @property
    def value(self) -> Any:
        values = tuple(self[i] for i in range(len(self._views)))
        return values[0] if len(values) == 1 else values

    def __getitem__(self, i: int) -> Any:
        position: Any = (*self._indices[self.iterindex], Ellipsis)
        element = self._views[i][position]
        if isinstance(element, _WrappedValue):
            element._raw.flags.writeable = False  # numpy's read-only view: a write raises
        return element

    def iternext(self) -> bool:
        self.iterindex += 1
        self._started = True
        return not self.finished

    def reset(self) -> None:
        self.iterindex, self._started = 0, False

    def __iter__(self) -> _TracedIterator:
        return self

    def __next__(self) -> Any:
        if self._started:
            self.iterindex += 1
        self._started = True
        if self.finished:
            raise StopIteration
        return self.value

    def __enter__(self) -> _TracedIterator:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def close(self) -> None:
        return None


# ---------------------------------------------------------------------------
# Which arguments are array-likes: numpy's dispatcher says, asked with probes.
#
# NEP 18 dispatch does not look inside a plain list, so np.mean([x, y]) reaches
# numpy's conversion, which refuses traced values. Before calling the numpy
# function, each list or tuple holding a traced value is stacked into one
# traced array, where numpy takes an array-like. Whether an argument is an
# array-like, a sequence of arrays (np.concatenate's `arrays`, np.select's
# `choicelist`, np.block's nested lists) or something else (a shape, an axis,
# pad widths) is what numpy's dispatcher for the function returns; numpy
# does not expose it, but it hands the relevant arguments' types to
# __array_function__. So the function is called once with stand-ins: every
# list or tuple holding a traced value, and each element inside it at every
# depth, becomes a probe of its own class (a list, tuple or leaf class for
# each argument and depth); the first probe numpy consults answers with the
# types it was given, without running the function.


class _ProbeAnswer:
    __slots__ = ("func", "types")

    def __init__(self, func: Any, types: Any):
        self.func = func
        self.types = types


class _Converted(Exception):
    """A probe was converted: numpy ran the function, the argument was no dispatched array."""


def _refuse_conversion(self: Any, *args: Any, **kwargs: Any) -> Any:
    raise _Converted


_PROBE_METHODS = {
    "__slots__": (),
    "__array_function__": lambda self, func, types, args, kwargs: _ProbeAnswer(func, types),
    "__array_ufunc__": lambda self, *args, **kwargs: NotImplemented,
    "__array__": _refuse_conversion,
    "__index__": _refuse_conversion,
    "__int__": _refuse_conversion,
    "__float__": _refuse_conversion,
    "__complex__": _refuse_conversion,
}
_PROBE_CLASSES: dict[Any, type] = {}


def _probe_class(key: Any, kind: type) -> type:
    """The probe class for ``key`` (argument, depth); ``kind`` is list, tuple or object."""
    cls = _PROBE_CLASSES.get((key, kind))
    if cls is None:
        namespace = {**_PROBE_METHODS, "_probe_key": (key, kind)}
        cls = type(f"_Probe_{kind.__name__}", (kind,), namespace)
        _PROBE_CLASSES[key, kind] = cls
    return cls


def _probe(value: Any, where: Any, depth: int) -> Any:
    kind = type(value)
    if kind is list or kind is tuple:
        inner = (_probe(v, where, depth + 1) for v in value)
        return _probe_class((where, depth), kind)(inner)
    return _probe_class((where, depth), object)()


def _dispatched_roles(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> set[Any]:
    """The probe keys numpy's dispatcher for ``func`` returns among the arguments."""
    neutral = _probe_class(None, object)

    def stand_in(value: Any, where: Any) -> Any:
        if _traced_sequence(value):
            return _probe(value, where, 0)
        return neutral() if isinstance(value, _WrappedValue) else value

    probe_args = [stand_in(a, i) for i, a in enumerate(args)]
    probe_kwargs = {k: stand_in(v, k) for k, v in kwargs.items()}
    try:
        answer = func(*probe_args, **probe_kwargs)
    except Exception:  # numpy ran it and converted a probe: nothing dispatched on them
        return set()
    if type(answer) is not _ProbeAnswer or answer.func is not func:
        return set()
    keys = (getattr(t, "_probe_key", (None,)) for t in answer.types)
    return {key for key in keys if key[0] is not None}


def _stack_where_dispatched(value: Any, where: Any, depth: int, roles: set[Any]) -> Any:
    """``value`` with each list or tuple that numpy treats as one array stacked."""
    kind = type(value)
    if kind is not list and kind is not tuple:
        return value
    if ((where, depth), kind) in roles:
        return _stack_sequence(value) if _holds_wrapped(value) else value
    if not _holds_wrapped(value):
        return value
    return kind(_stack_where_dispatched(v, where, depth + 1, roles) for v in value)


def _array_likes_stacked(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    roles = _dispatched_roles(func, args, kwargs)
    if not roles:
        return args, kwargs
    args = tuple(_stack_where_dispatched(a, i, 0, roles) for i, a in enumerate(args))
    kwargs = {k: _stack_where_dispatched(v, k, 0, roles) for k, v in kwargs.items()}
    return args, kwargs


def _call_stacking(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if any(_traced_sequence(v) for v in (*args, *kwargs.values())):
        args, kwargs = _array_likes_stacked(func, args, kwargs)
    return func(*args, **kwargs)


def _takes_traced_lists(func: Any, qualified_name: str) -> Any:
    """``func`` (a numpy function with NEP 18 dispatch) accepting lists of traced values."""

    def function(*args: Any, **kwargs: Any) -> Any:
        # The common case (no list or tuple among the arguments) costs two loops.
        for value in args:
            if type(value) in _SEQUENCES:
                return _call_stacking(func, args, kwargs)
        if kwargs:
            for value in kwargs.values():
                if type(value) in _SEQUENCES:
                    return _call_stacking(func, args, kwargs)
        return func(*args, **kwargs)

    function.__name__ = func.__name__
    function.__qualname__ = qualified_name
    function.__doc__ = func.__doc__
    function.__wrapped__ = func  # type: ignore[attr-defined]
    function.__module__ = __name__
    return function


def _stacked(value: Any) -> Any:
    return _stack_sequence(value) if _traced_sequence(value) else value


_UFUNC_ATTRIBUTES = ("nin", "nout", "nargs", "ntypes", "types", "identity", "signature",
                     "resolve_dtypes", "__doc__")  # fmt: skip


def _takes_traced_operands(u: _np.ufunc) -> Any:
    """The ufunc ``u`` with operands that may be lists of traced values (``mnp.add([a, b], c)``).

    A function (calling it costs less than calling an object) carrying the
    ufunc's attributes; ``reduce``, ``accumulate``, ``reduceat``, ``outer``
    and ``at`` stack their array operands too.
    """
    nin = u.nin

    def call(*args: Any, **kwargs: Any) -> Any:
        for a in args:
            if type(a) in _SEQUENCES:
                args = (*(_stacked(a) for a in args[:nin]), *args[nin:])
                break
        return u(*args, **kwargs)

    def reduce(array: Any, *args: Any, **kwargs: Any) -> Any:
        return u.reduce(_stacked(array), *args, **kwargs)

    def accumulate(array: Any, *args: Any, **kwargs: Any) -> Any:
        return u.accumulate(_stacked(array), *args, **kwargs)

    def reduceat(array: Any, *args: Any, **kwargs: Any) -> Any:
        return u.reduceat(_stacked(array), *args, **kwargs)

    def outer(A: Any, B: Any, /, **kwargs: Any) -> Any:
        return u.outer(_stacked(A), _stacked(B), **kwargs)

    def at(a: Any, indices: Any, b: Any = None, /) -> Any:
        return u.at(a, indices) if b is None else u.at(a, indices, _stacked(b))

    for name in _UFUNC_ATTRIBUTES:
        setattr(call, name, getattr(u, name))
    for method in (reduce, accumulate, reduceat, outer, at):
        method.__qualname__ = f"{u.__name__}.{method.__name__}"
        setattr(call, method.__name__, method)
    call.__name__ = call.__qualname__ = u.__name__
    call.__module__ = __name__
    call.__wrapped__ = u  # type: ignore[attr-defined]
    return call


# ---------------------------------------------------------------------------
# Scalar types as casts: integers and booleans undifferentiated, floats traced.


class _CastType(type):
    """The metaclass of mnp.int64 and the others: numpy's scalars count as their instances."""

    _numpy_type: type

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls._numpy_type)

    def __subclasscheck__(cls, subclass: Any) -> bool:
        return issubclass(subclass, cls._numpy_type)


def _cast_type(numpy_type: type) -> type:
    """A subclass of ``numpy_type`` usable as a dtype, whose call casts traced values too.

    An integer or boolean cast of a traced value is piecewise constant: it
    carries no gradient, as ``x.astype(int)`` does not (autograd's
    ``np.int64(box)`` unboxes too). A float cast keeps the gradient.
    """
    differentiable = issubclass(numpy_type, _np.inexact)

    def __new__(cls: Any, value: Any = 0, *args: Any, **kwargs: Any) -> Any:
        if not _holds_wrapped(value):
            return numpy_type(value, *args, **kwargs)
        if differentiable:
            if isinstance(value, _WrappedValue):
                return value.astype(numpy_type)
            return array(value, dtype=numpy_type)
        data: Any = _np.array(_unwrap(value), dtype=numpy_type)  # a copy: never an alias of x
        return numpy_type(data) if data.ndim == 0 else data

    cls = _CastType(numpy_type.__name__, (numpy_type,), {
        "__new__": __new__,
        "__module__": __name__,
        "__doc__": f"``np.{numpy_type.__name__}`` (also as a dtype); called on a traced value, "
        + ("casts it keeping its gradient." if differentiable
           else "casts it without a gradient (an index or a count)."),
        "_numpy_type": numpy_type,
    })  # fmt: skip
    return cls


_CAST_TYPES = {
    t: _cast_type(t)
    for t in {
        v
        for v in vars(_np).values()
        if isinstance(v, type)
        and issubclass(v, (_np.integer, _np.bool_, _np.floating))
        and not v.__name__.endswith(("integer", "floating", "inexact", "number"))
    }
}


# ---------------------------------------------------------------------------
# r_ and c_.


class _AxisConcatenator:
    """numpy's ``r_``/``c_`` (same directives: slices, ``'0,2'``, ``'1,2,0'``...) for
    traced values: arrays, scalars and lists of them are stacked, then concatenated."""

    __slots__ = ("_numpy", "axis", "ndmin", "trans1d")

    def __init__(self, numpy_concatenator: Any):
        self._numpy = numpy_concatenator
        self.axis = numpy_concatenator.axis
        self.ndmin = numpy_concatenator.ndmin
        self.trans1d = numpy_concatenator.trans1d

    def __len__(self) -> int:
        return 0

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        if not any(_holds_wrapped(item) for item in items):
            return self._numpy[key]
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        objs: list[Any] = []
        dtypes: list[Any] = []
        for k, item in enumerate(items):
            if isinstance(item, slice):
                newobj = self._numpy[item if ndmin < 2 else (f"0,{ndmin},{trans1d}", item)]
            elif isinstance(item, str):
                if k != 0:
                    raise ValueError("special directives must be the first entry.")
                if item in ("r", "c"):  # an np.matrix, which cannot hold traced values:
                    return self._numpy[key]  # numpy's conversion refuses them
                try:
                    vec = [int(x) for x in item.split(",")]
                except ValueError as error:
                    raise ValueError(f"unknown special directive {item!r}") from error
                if len(vec) == 1:
                    axis = vec[0]
                else:
                    axis, ndmin = vec[:2]
                    if len(vec) == 3:
                        trans1d = vec[2]
                continue
            elif type(item) in _np.ScalarType:
                objs.append(_np.array(item, ndmin=ndmin))
                dtypes.append(item)  # a Python number does not upcast (numpy's weak scalars)
                continue
            else:
                item_ndim = _np.ndim(_unwrap(item))
                newobj = _with_ndmin(array(item, copy=False), ndmin)
                if trans1d != -1 and item_ndim < ndmin:
                    k2 = ndmin - item_ndim
                    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
                    axes = list(range(ndmin))
                    newobj = newobj.transpose(axes[:k1] + axes[k2:] + axes[k1:k2])
            objs.append(newobj)
            dtypes.append(newobj.dtype)
        if dtypes:
            final = _np.result_type(*dtypes)
            objs = [o if o.dtype == final else o.astype(final) for o in objs]
        return _np.concatenate(tuple(objs), axis=axis)


r_ = _AxisConcatenator(_np.r_)
c_ = _AxisConcatenator(_np.c_)


# ---------------------------------------------------------------------------
# Every other name: numpy's, functions taking lists of traced values.


def _translate(value: Any, qualified_name: str) -> Any:
    """What mutagrad.numpy offers for numpy's ``value``."""
    if isinstance(value, _np.ufunc):
        return _takes_traced_operands(value)
    if type(value) is _DISPATCHED_FUNCTION:
        return _takes_traced_lists(value, qualified_name)
    if isinstance(value, type) and value in _CAST_TYPES:
        return _CAST_TYPES[value]
    return value


def _submodule(name: str) -> _types.ModuleType:
    numpy_module = getattr(_np, name)
    module = _types.ModuleType(f"{__name__}.{name}", numpy_module.__doc__)

    def attribute(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = _translate(getattr(numpy_module, attr), f"{name}.{attr}")
        setattr(module, attr, value)  # translated once; later lookups find it directly
        return value

    setattr(module, "__getattr__", attribute)  # noqa: B010  (PEP 562: a module's own lookup)
    setattr(module, "__dir__", lambda: dir(numpy_module))  # noqa: B010
    sys.modules[module.__name__] = module  # import mutagrad.numpy.linalg works too
    return module


linalg = _submodule("linalg")
fft = _submodule("fft")
random = _submodule("random")  # import mutagrad.numpy.random as npr, as autograd.numpy.random


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    value = _translate(getattr(_np, name), name)
    if name not in _BUILTIN_NAMES:
        globals()[name] = value  # translated once; later lookups find it directly
    # A builtin's name (any, all, max, sum, round, bool...) is translated on every
    # lookup instead: a module global of that name would shadow the builtin in
    # this module's own functions (any(...) would become np.any of a generator).
    return value


_BUILTIN_NAMES = frozenset(dir(_builtins))


def __dir__() -> list[str]:
    return sorted(set(dir(_np)) | set(__all__))


__all__ = [
    "arange", "array", "asanyarray", "asarray", "ascontiguousarray", "asfortranarray", "c_",
    "empty", "empty_like", "eye", "fft", "full", "full_like", "identity", "kaiser", "linalg",
    "linspace", "logspace", "make_diagonal", "ndenumerate", "nditer", "ones", "ones_like", "r_",
    "random", "require", "vectorize", "zeros", "zeros_like",
]  # fmt: skip

__version__ = _np.__version__  # programs written for autograd.numpy read np.__version__
