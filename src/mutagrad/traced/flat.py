"""``x.flat`` of a traced array: numpy's flat iterator, read, iterated and written.

``x.flat[k]`` reads like ``x.ravel()[k]`` and always makes a copy, as
numpy's flat iterator does; ``for v in x.flat`` reads each element when it is
reached (a write during the loop shows in the elements after it, as in
numpy). ``x.flat[k] = v`` and ``x.flat = v`` write the positions ``k``
selects, the values cycled over them in order; which value lands where is
found by running numpy's own assignment on a probe array of value numbers,
and the write is then one advanced-index assignment (``mutation.assign``),
recorded and poisoned as every write. Values that share ``x``'s memory are
read by numpy while it writes: :func:`~mutagrad.traced.mutation.copy_as_numpy_does`
follows numpy's order there.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from mutagrad.traced.mutation import assign, copy_as_numpy_does
from mutagrad.traced.value import WrappedArray, WrappedValue, array_like, unwrap

__all__ = ["FlatIterator", "flat_iterator", "set_flat"]

_WRITE = "x.flat[...] = ..."


class FlatIterator:
    """numpy's ``flatiter`` over a WrappedArray: ``x.flat``.

    ``base`` is the array, ``index`` the position the next ``next()`` reads,
    ``coords`` that position as an index of ``base``.
    """

    __slots__ = ("base", "index")

    def __init__(self, base: WrappedArray):
        self.base = base
        self.index = 0

    def __len__(self) -> int:
        return self.base.size

    def __iter__(self) -> FlatIterator:
        return self

    def __next__(self) -> Any:
        if self.index >= self.base.size:
            raise StopIteration
        value = self.base[np.unravel_index(self.index, self.base.shape)]
        self.index += 1
        return value

    @property
    def coords(self) -> tuple[int, ...]:
        shape = self.base.shape
        if self.index < self.base.size:
            return tuple(int(i) for i in np.unravel_index(self.index, shape))
        if not shape:
            return ()
        # Past the end numpy carries into the first axis: (2, 0) for a finished 2x3.
        inner = math.prod(shape[1:])
        rest = np.unravel_index(self.index % inner, shape[1:]) if inner else ()
        return (self.index // max(inner, 1), *(int(i) for i in rest))

    def __getitem__(self, key: Any) -> Any:
        w = self.base
        key = unwrap(key)  # a traced index array is data
        single = _single_position(key, w.size)
        if single is not None:
            return w[np.unravel_index(single, w.shape)]
        # numpy's own flat indexing of element numbers: its positions, shape and errors.
        positions = np.arange(w.size).reshape(w.shape).flat[key]
        if np.ndim(positions) == 0:
            return w[np.unravel_index(int(positions), w.shape)]
        return np.ravel(w)[positions]  # an advanced index: a copy, as numpy's

    def __setitem__(self, key: Any, value: Any) -> None:
        w = self.base
        key = unwrap(key)  # a traced index array is data
        single = _single_position(key, w.size)
        if single is not None and np.ndim(unwrap(value)) == 0:
            assign(w, np.unravel_index(single, w.shape), value, _WRITE)
            return
        _write_as_numpy(w, value, lambda t, v: t.flat.__setitem__(key, v), _WRITE)

    def copy(self) -> Any:
        """A 1-d copy of the elements, as ``flatiter.copy()``."""
        return np.ravel(self.base).copy()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        # A traced base is refused by its own conversion, naming np.asarray.
        return np.array(np.asarray(self.base), dtype=dtype).ravel()

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return getattr(ufunc, method)(*_copies(inputs), **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return func(*_copies(args), **kwargs)

    def __eq__(self, other: Any) -> Any:
        return self.copy() == other

    def __ne__(self, other: Any) -> Any:
        return self.copy() != other

    def __lt__(self, other: Any) -> Any:
        return self.copy() < other

    def __le__(self, other: Any) -> Any:
        return self.copy() <= other

    def __gt__(self, other: Any) -> Any:
        return self.copy() > other

    def __ge__(self, other: Any) -> Any:
        return self.copy() >= other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<flat iterator of {self.base!r}>"


def _copies(args: Any) -> Any:
    """``args`` with each FlatIterator (also inside a list or tuple) replaced by its copy,
    as numpy converts a flatiter argument to a 1-d array."""
    return type(args)(
        a.copy() if isinstance(a, FlatIterator)
        else _copies(a) if type(a) in (list, tuple)
        else a
        for a in args
    )  # fmt: skip


def _single_position(key: Any, size: int) -> int | None:
    """The element number an integer ``key`` selects (numpy's IndexError when out of range);
    None for any other key."""
    if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
        return None
    k = operator.index(key)
    if not -size <= k < size:
        raise IndexError(f"index {k} is out of bounds for size {size}")  # numpy's message
    return k % size


def _write_as_numpy(
    w: WrappedArray, value: Any, perform: Callable[[np.ndarray, Any], None], operation: str
) -> None:
    """Write ``value`` into ``w`` as numpy's ``perform(w, value)`` does (``x.flat[k] = v``,
    ``x.flat = v``), as one advanced-index assignment.

    numpy's own call runs three times off the data: on a scratch array (its
    errors are the program's: a single position takes a single value), on
    numbered memory cells when the values share ``w``'s memory (numpy copies
    them one element at a time, and ``x.flat = v`` and ``x.flat[...] = v``
    do not do it in the same order), else on a probe of value numbers (which
    value lands where, cycled).
    """
    value = array_like(value)  # a list of traced values: one traced array
    raw = unwrap(value)
    perform(np.empty(w.shape, w.dtype), raw)
    if copy_as_numpy_does(w, value, perform, operation):
        return
    numbers = np.full(w.shape, -1, dtype=np.intp)
    perform(numbers, np.arange(int(np.size(raw))).reshape(np.shape(raw)))
    positions = np.flatnonzero(numbers >= 0)
    if positions.size == 0:
        return
    chosen = numbers.ravel()[positions]
    if isinstance(value, WrappedValue):
        picked = np.ravel(value)[chosen]
    else:
        picked = np.ravel(np.asarray(raw, dtype=w.dtype))[chosen]
    assign(w, np.unravel_index(positions, w.shape), picked, operation)


def flat_iterator(w: WrappedArray) -> FlatIterator:
    """``w.flat``."""
    return FlatIterator(w)


def set_flat(w: WrappedArray, value: Any) -> None:
    """``w.flat = value``: every element, the values cycled (numpy buffers values that share
    ``w``'s memory here, where ``w.flat[...] = value`` copies them one by one)."""
    _write_as_numpy(w, value, lambda t, v: setattr(t, "flat", v), "x.flat = ...")
