"""Cotangent representations and the arithmetic the engine does on them.

* :class:`ZeroTangent` – a structural zero: never allocated, and a pullback
  whose output cotangent is a structural zero is not called.
* :class:`NoTangent` – "no derivative exists" (integers used as indices, bools).
* :class:`SparseCotangent` – a list of (where, value) contributions into an
  array that is only materialised once, when the engine needs it dense. Scalar
  indexing in a loop therefore costs O(1) per read in the backward pass instead
  of one dense zeros array per read.
* :func:`unbroadcast` – the single place where broadcasting is undone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy import float64, ndarray  # (by name: see mutagrad.core.record)

from mutagrad.core.memory import Layout, Region, has_layout, layout_buffer


class ZeroTangent:
    """A structural zero cotangent. All instances are equal."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ZeroTangent()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ZeroTangent)

    def __hash__(self) -> int:
        return hash(ZeroTangent)

    def __bool__(self) -> bool:
        return False


class NoTangent:
    """Marks an argument that has no derivative (an index, a flag, a string)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NoTangent()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NoTangent)

    def __hash__(self) -> int:
        return hash(NoTangent)

    def __bool__(self) -> bool:
        return False


ZERO = ZeroTangent()


def is_structural_zero(c: object) -> bool:
    """True for ``None``, :class:`ZeroTangent` and :class:`NoTangent`."""
    return c is None or isinstance(c, (ZeroTangent, NoTangent))


def cotangent_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a cotangent for a primal of ``dtype`` has: floats keep theirs, the rest float64."""
    return dtype if dtype.kind in "fc" else np.dtype(float64)


class Meta:
    """Shape and dtype of an argument whose data a pullback did not ask to keep.

    Pullbacks receive a Meta in place of an array they declared they do not
    read; it answers ``shape``, ``dtype``, ``ndim`` and ``size`` but has no data,
    so a rule that reads undeclared data fails loudly instead of reading a
    value that may have been overwritten since.
    """

    __slots__ = ("dtype", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype):
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self) -> str:
        return f"Meta(shape={self.shape}, dtype={self.dtype})"


# ---------------------------------------------------------------------------
# Sparse cotangents.

BASIC = 0  # a basic numpy index: buf[key] += value
FANCY = 1  # an advanced index, duplicates allowed: np.add.at(buf, key, value)
REGION = 2  # a Region of the base's memory


class SparseCotangent:
    """Contributions to a cotangent of ``shape``, applied to one buffer on demand.

    ``layout`` is the memory order REGION entries assume (the base's).
    """

    __slots__ = ("dtype", "entries", "layout", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, layout: Layout = None):
        self.shape = shape
        self.dtype = dtype
        self.layout = layout
        self.entries: list[tuple[int, Any, Any]] = []

    def add_to(self, buf: ndarray) -> ndarray:
        """Add every contribution into ``buf`` in place and return it."""
        entries = self.entries
        if buf.ndim == 1 and buf.dtype == float64 and len(entries) > 1:
            entries = _batch_element_reads(entries)
        for kind, key, value in entries:
            if kind == BASIC:
                buf[key] += value
            elif kind == FANCY:
                np.add.at(buf, key, value)
            elif has_layout(buf, key.layout):
                _add_into_region(buf, key, value)
            else:
                # Views of one array read before and after a write that changed
                # its memory order, or a sparse cotangent whose buffer took its
                # layout from an element read: the region's offsets name cells
                # in the base's order, so add through a buffer in that order.
                part = layout_buffer(buf.shape, buf.dtype, key.layout)
                _add_into_region(part, key, value)
                buf += part
        return buf

    def dense(self) -> ndarray:
        return self.add_to(layout_buffer(self.shape, self.dtype, self.layout))

    def __repr__(self) -> str:
        return f"SparseCotangent(shape={self.shape}, entries={len(self.entries)})"


def _add_into_region(buf: ndarray, region: Region, value: Any) -> None:
    """``buf[region] += value``; ``buf`` has the region's layout."""
    if region.overlapping:
        np.add.at(buf.ravel(order="K"), region.flat_indices(buf.size), value)
    else:
        part = region.view_of(buf)
        part += value


def _batch_element_reads(entries: list[tuple[int, Any, Any]]) -> list[tuple[int, Any, Any]]:
    """``entries`` with each run of single-element reads (``x[i]`` in a loop) as one FANCY entry.

    ``np.add.at`` adds in index order, exactly as the run's ``buf[i] += v``
    one by one would, in one call instead of one per read.
    """
    batched: list[tuple[int, Any, Any]] = []
    run: list[tuple[int, Any, Any]] = []
    for entry in entries:
        # A single element read: x[i] with a float64 cotangent. (The test is written
        # here, not called: a loop of N reads runs it N times.)
        if entry[0] == BASIC and type(entry[1]) is int and type(entry[2]) is float64:
            run.append(entry)
            continue
        _flush(run, batched)
        batched.append(entry)
    _flush(run, batched)
    return batched


def _flush(run: list[tuple[int, Any, Any]], batched: list[tuple[int, Any, Any]]) -> None:
    n = len(run)
    if n > 1:
        _, keys, values = zip(*run)  # (transposed in C: no Python step per entry)
        batched.append((FANCY, np.fromiter(keys, np.intp, n), np.fromiter(values, float64, n)))
    else:
        batched.extend(run)
    run.clear()


def unbroadcast(c: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``c`` down to ``shape``, undoing numpy broadcasting.

    Works on raw arrays and on traced ones (higher-order mode), since it only
    calls numpy functions.
    """
    cshape = c.shape
    if cshape == shape:
        return c
    lead = len(cshape) - len(shape)
    if lead < 0:
        raise ValueError(f"cotangent of shape {cshape} cannot be unbroadcast to shape {shape}")
    axes = list(range(lead))
    for i, n in enumerate(shape):
        if n == 1 and cshape[lead + i] != 1:
            axes.append(lead + i)
        elif n != cshape[lead + i]:
            raise ValueError(
                f"cotangent of shape {cshape} does not broadcast to argument shape {shape}"
            )
    if axes:
        c = np.sum(c, axis=tuple(axes), keepdims=True)
    return np.reshape(c, shape) if c.shape != shape else c
