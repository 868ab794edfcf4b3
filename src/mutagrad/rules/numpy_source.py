"""numpy's own Python-level functions, differentiated by running numpy's code on traced arrays.

numpy implements ``np.cov``, ``np.corrcoef``, ``np.gradient``, ``np.polyfit``,
``np.unwrap``... in Python, and those bodies mutate what they allocate
(``X -= avg[:, None]``, ``c *= 1 / fact``, ``out[1:-1] = ...``): "non-mutating
functions may use mutation under the hood". mutagrad runs that very code on
the traced arrays, so its in-place writes go through the write machinery
(versions, poisoning, snapshots) like the user's own.

What stops numpy's code from running on traced arrays as it is, is its first
line: ``np.asarray(m)``, ``array(m, ndmin=2)``, ``np.asanyarray(f)`` convert
the input to a raw ndarray, which a traced array refuses. So each function
listed here runs as a *copy* of numpy's function (the same code object,
defaults, keyword defaults and closure) whose module globals are replaced:

* the conversion functions (``asarray``, ``asanyarray``, ``array``,
  ``ascontiguousarray``, ``asfortranarray``, ``asarray_chkfinite``), however
  the body reaches them (``np.asarray``, ``_nx.asarray``, ``NX.asarray``, a bare
  ``asarray``), return the traced array itself where numpy returns its input
  (or a view of it: ``ndmin`` adds leading axes), and a traced copy where numpy
  copies (``copy=True``, another dtype or memory layout): numpy is asked, on
  the raw data, which of the two it does;
* for the functions that fill a buffer they allocate from a shape
  (``q = NX.zeros(n); q[k] = d`` in ``np.polydiv``), ``zeros``, ``ones``,
  ``empty`` and ``full`` return constant WrappedArrays, which can hold traced
  values;
* ``atleast_1d``, ``atleast_2d``, ``atleast_3d`` stack a list of traced arrays
  first (numpy dispatches them on the list, never seeing the traced arrays in
  it: ``np.atleast_2d([x, y])`` in ``np.histogramdd``, which ``np.histogram2d``
  calls);
* numpy's private helpers the body calls by name (``_get_outer_edges`` of
  ``np.histogram``, ``_chbevl`` of ``np.i0``) are copied the same way.

Everything else is numpy's: a public numpy function called by the body
(``average``, ``dot``, ``np.clip(..., out=c.real)``) reaches mutagrad through
``__array_function__`` as any call does, and finds its rule there.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import numpy as np

from mutagrad.core.registry import implements
from mutagrad.diagnostics.sites import global_names
from mutagrad.traced.value import WrappedArray, WrappedValue, holds_wrapped, stack_sequence

__all__ = ["TRACED", "Traced", "traced_copy"]


def _numpy_decides(numpy_function: Callable[..., Any], fresh: bool, a: Any, *args: Any,
                   **kwargs: Any) -> Any:  # fmt: skip
    """``numpy_function(a, ...)`` for a traced ``a``: the traced array itself, a view, or a copy.

    numpy's own answer on the raw data (a read-only view of it) says which
    one: where it returns memory it shares with the input, so does this (the
    same array, or reshaped to the ``ndmin`` numpy gave it); where it copies,
    this copies too, in numpy's dtype and memory layout. With ``fresh``, a
    copy numpy makes of a raw input is a constant WrappedArray, which the body
    may then fill with traced values (``w = np.asarray(fweights, dtype=float);
    w *= aweights`` in ``np.cov``).
    """
    if isinstance(a, WrappedValue):
        data = a._raw
        if type(data) is np.ndarray:
            data = data.view()
            data.flags.writeable = False
        model = numpy_function(data, *args, **kwargs)
        shares = type(data) is np.ndarray and np.may_share_memory(model, data)
        if shares and model.dtype != data.dtype:
            # A view of the bytes as another dtype: numpy's own call, refused on a traced array.
            return numpy_function(a, *args, **kwargs)
        result: Any = a  # (numpy's functions return ours for it: not the stubs' ndarray)
        if not shares:
            order: Literal["F", "C"] = (
                "F" if model.flags.f_contiguous and not model.flags.c_contiguous else "C"
            )
            result = np.reshape(a, data.shape).astype(model.dtype, order=order, copy=True)
            if type(model) is np.ndarray and not isinstance(result, WrappedArray):
                # numpy converts a scalar to a 0-d array (which the body may
                # index: ``x[cond]`` in np.piecewise); a scalar's astype stays one.
                result = np.copy(result)
        if result.shape != model.shape:
            result = np.reshape(result, model.shape)
        return result
    if holds_wrapped(a):
        # A list of traced values: numpy would convert each of them; stack them instead.
        dtype = kwargs.get("dtype", args[0] if args else None)
        return _numpy_decides(numpy_function, fresh, stack_sequence(a, dtype), *args, **kwargs)
    result = numpy_function(a, *args, **kwargs)
    if (
        fresh
        and type(result) is np.ndarray
        and not (type(a) is np.ndarray and np.may_share_memory(result, a))
    ):
        return WrappedArray(result)
    return result


def _converter(numpy_function: Callable[..., Any], fresh: bool) -> Callable[..., Any]:
    @functools.wraps(numpy_function)
    def convert(a: Any, *args: Any, **kwargs: Any) -> Any:
        return _numpy_decides(numpy_function, fresh, a, *args, **kwargs)

    return convert


def _buffer(numpy_function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(numpy_function)
    def allocate(*args: Any, **kwargs: Any) -> Any:
        return WrappedArray(numpy_function(*args, **kwargs))

    return allocate


def _full(shape: Any, fill_value: Any, dtype: Any = None, order: Literal["C", "F"] = "C",
          **kwargs: Any) -> Any:  # fmt: skip
    """``np.full`` into a constant WrappedArray; a traced fill value keeps its gradient."""
    if isinstance(fill_value, WrappedValue):
        dtype = fill_value.dtype if dtype is None else dtype
        return np.full_like(WrappedArray(np.empty(shape, dtype, order)), fill_value)
    return WrappedArray(np.full(shape, fill_value, dtype, order, **kwargs))


def _stacking(numpy_function: Callable[..., Any]) -> Callable[..., Any]:
    """``np.atleast_2d`` and kin, whose ``asanyarray`` also stacks a list of traced arrays.

    numpy dispatches them on the list itself, so mutagrad never sees the traced
    arrays inside (``np.atleast_2d([x, y])`` in ``np.histogramdd``).
    """

    @functools.wraps(numpy_function)
    def at_least(*arrays: Any) -> Any:
        return numpy_function(
            *(stack_sequence(a) if holds_wrapped(a) and not isinstance(a, WrappedValue) else a
              for a in arrays)
        )  # fmt: skip

    return at_least


class _ArrayTypeMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, (np.ndarray, WrappedArray))

    def __subclasscheck__(cls, subclass: Any) -> bool:
        return issubclass(subclass, (np.ndarray, WrappedArray))

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return np.ndarray(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        return getattr(np.ndarray, name)


class ArrayType(metaclass=_ArrayTypeMeta):
    """``np.ndarray`` as the copied code sees it: a traced array is an array too.

    numpy's bodies ask ``isinstance(condlist[0], (list, ndarray))`` to tell an
    array from a scalar; a WrappedArray must answer as an ndarray does.
    """


CONVERTERS = (
    np.asarray,
    np.asanyarray,
    np.array,
    np.ascontiguousarray,
    np.asfortranarray,
    np.asarray_chkfinite,
)
ALLOCATORS = (np.zeros, np.ones, np.empty)
STACKING = (np.atleast_1d, np.atleast_2d, np.atleast_3d)


def _table(buffers: bool) -> dict[int, Any]:
    table: dict[int, Any] = {id(f): _converter(f, buffers) for f in CONVERTERS}
    table[id(np.ndarray)] = ArrayType
    table.update({id(f): _stacking(f) for f in STACKING})
    if buffers:
        table.update({id(f): _buffer(f) for f in ALLOCATORS})
        table[id(np.full)] = _full
    return table


class _Shadow(types.ModuleType):
    """A numpy module as the copied code sees it: numpy's, with the substitutions."""

    def __init__(self, module: types.ModuleType, substitute: Callable[[Any], Any]):
        super().__init__(module.__name__, module.__doc__)
        self._module = module
        self._substitute = substitute

    def __getattr__(self, name: str) -> Any:
        value = self._substitute(getattr(self._module, name))
        setattr(self, name, value)
        return value


class _Copier:
    """Copies numpy functions with their globals substituted (one copier per choice of buffers)."""

    def __init__(self, buffers: bool):
        self.table = _table(buffers)
        self.copies: dict[int, Any] = {}  # id(original) -> its substitute (functions, modules)
        self.originals: list[Any] = []  # keeps the originals alive, so their ids stay theirs

    def substitute(self, value: Any) -> Any:
        key = id(value)
        found = self.table.get(key)
        if found is not None:
            return found
        found = self.copies.get(key)
        if found is not None:
            return found
        if isinstance(value, types.ModuleType) and value.__name__.partition(".")[0] == "numpy":
            found = _Shadow(value, self.substitute)
        elif isinstance(value, types.FunctionType) and _is_numpy_code(value):
            return self.copy(value)
        else:
            return value
        self.copies[key] = found
        self.originals.append(value)
        return found

    def copy(self, function: types.FunctionType) -> types.FunctionType:
        """``function`` with its code and closure, and globals that see the substitutions."""
        key = id(function)
        if key in self.copies:
            return self.copies[key]
        namespace: dict[str, Any] = dict(function.__globals__)
        copied = types.FunctionType(
            function.__code__,
            namespace,
            function.__name__,
            function.__defaults__,
            function.__closure__,
        )
        copied.__kwdefaults__ = function.__kwdefaults__
        copied.__qualname__ = function.__qualname__
        copied.__module__ = function.__module__
        copied.__doc__ = function.__doc__
        self.copies[key] = copied  # before the globals: helpers may call each other
        self.originals.append(function)
        for name in global_names(function.__code__):
            if name in namespace:
                namespace[name] = self.substitute(namespace[name])
        return copied


def _is_numpy_code(function: types.FunctionType) -> bool:
    """A Python function of numpy's own (not numpy.testing's, not a user's)."""
    module = str(function.__globals__.get("__name__", ""))
    return module.partition(".")[0] == "numpy" and not module.startswith("numpy.testing")


COPIERS = {False: _Copier(buffers=False), True: _Copier(buffers=True)}


def traced_copy(function: Any, buffers: bool = False) -> types.FunctionType:
    """numpy's Python implementation of ``function``, reading traced arrays as it reads arrays."""
    implementation = getattr(function, "_implementation", function)
    return COPIERS[buffers].copy(implementation)


class Traced(NamedTuple):
    """How one numpy function is traced through."""

    buffers: bool  # whether its body fills arrays it allocates from a shape (see module doc)
    how: str  # what numpy's code does on the traced arrays, for the coverage table


# Every function traced through here. np.gradient keeps raw allocations: it builds a
# reshape's shape in np.ones(N, dtype=int), which must stay an ndarray.
TRACED: dict[Any, Traced] = {
    np.cov: Traced(True, "`X -= avg[:, None]`, `c *= 1 / fact` in place"),
    np.corrcoef: Traced(
        True, "np.cov, then `c /= stddev[:, None]` and `np.clip(c, -1, 1, out=c)` in place"
    ),
    np.gradient: Traced(False, "fills `out = np.empty_like(f)` slice by slice"),
    np.polyfit: Traced(True, "`lhs *= w`, `lhs /= scale` in place, then np.linalg.lstsq"),
    np.poly: Traced(True, "np.convolve with each `[1, -zero]` (np.linalg.eigvals of a matrix)"),
    np.polydiv: Traced(True, "fills `q = zeros(...)`, `r[k:k + n + 1] -= d * v` in place"),
    np.roots: Traced(
        True, "fills the companion matrix in place, then np.linalg.eigvals (real roots only)"
    ),
    np.piecewise: Traced(True, "fills `y = zeros_like(x)` by `y[cond] = func(x[cond])`"),
    np.trim_zeros: Traced(True, "a slice of the input"),
    np.unwrap: Traced(True, "np.copyto(..., where=) and `up[slice1] = ...` in place"),
    np.histogram: Traced(
        True,
        "counts are integers (no derivative); the edges follow the data's min and max, "
        "weighted counts the weights",
    ),
    np.histogram_bin_edges: Traced(True, "np.linspace between the data's min and max"),
    np.histogramdd: Traced(
        False,
        "counts are integers (no derivative); each axis's edges follow its min and max, "
        "weighted counts the weights",
    ),
    np.histogram2d: Traced(False, "np.histogramdd of `[x, y]` (stacked as numpy converts it)"),
    np.i0: Traced(True, "np.piecewise of numpy's Chebyshev series"),
    np.geomspace: Traced(True, "`start /= out_sign`, `result[0] = start` in place"),
    np.ix_: Traced(True, "reshapes of its arguments"),
    # The set functions reach np.unique's rule (mutagrad.rules.sets): a value equal in
    # several places is taken from its first occurrence, in ar1 before ar2.
    np.union1d: Traced(False, "np.unique of the concatenation"),
    np.intersect1d: Traced(
        False,
        "np.unique of each, `aux.sort()` in place, then a mask: "
        "each common value is taken from ar1",
    ),
    np.setdiff1d: Traced(False, "np.unique of each, then a mask from numpy's `_isin`"),
    np.setxor1d: Traced(False, "np.unique of each, `aux.sort()` in place, then a mask"),
}


def _register(function: Any, traced: Traced) -> None:
    copy = None

    @implements(function)
    def run_numpy_code(*args: Any, **kwargs: Any) -> Any:
        nonlocal copy
        if copy is None:
            copy = traced_copy(function, traced.buffers)
        return copy(*args, **kwargs)

    run_numpy_code.__name__ = run_numpy_code.__qualname__ = f"traced_{function.__name__}"


for _function, _traced in TRACED.items():
    _register(_function, _traced)
