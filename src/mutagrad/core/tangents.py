"""Cotangent representations and the arithmetic the engine does on them.

* :class:`ZeroTangent` – a structural zero: never allocated, and a pullback
  whose output cotangent is a structural zero is not called.
* :class:`NoTangent` – "no derivative exists" (integers used as indices, bools).
* :class:`SparseCotangent` – a list of (where, value) contributions into an
  array that is only materialised once, when the engine needs it dense. Scalar
  indexing in a loop therefore costs O(1) per read in the backward pass instead
  of one dense zeros array per read.
* :class:`Region` – where a numpy view sits inside its base array, in element
  units; used to scatter a view's cotangent into its base and to gather a
  written region's cotangent out of it.
* :func:`unbroadcast` – the single place where broadcasting is undone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mutagrad.errors import NotDifferentiableError


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
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


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
# Regions: a view's position inside its base, in element units.


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class Region:
    """A strided window ``(offset, shape, strides)`` of a base array's memory.

    Offsets and strides count elements, not bytes, so a region computed on a
    float32 base applies unchanged to its float64 cotangent buffer. For a
    dense base (contiguous in some axis order, strides positive) they count
    in the base's own memory order, and ``layout`` records that order, so a
    buffer made by :func:`layout_buffer` has the base's element layout. A
    base that is not dense (an argument ``a[::2]`` or ``a[::-1]``, kept with
    numpy's strides so that reshape and ravel copy or view exactly as numpy
    does) has its regions placed in C order by its logical indices.
    ``overlapping`` is set when two positions of the region may share an
    element (``broadcast_to``, sliding windows); scatters then use
    ``np.add.at``.
    """

    __slots__ = ("layout", "offset", "overlapping", "shape", "strides")

    def __init__(self, view: np.ndarray, base: np.ndarray):
        itemsize = base.itemsize
        if view.itemsize != itemsize:
            raise NotDifferentiableError(
                "a view that reinterprets the array's dtype (x.view(other_dtype)) carries no "
                "derivative; use x.astype(...) for a differentiable conversion"
            )
        offset_bytes = _address(view) - _address(base)
        self.shape = view.shape
        if is_dense(base):
            self.offset = offset_bytes // itemsize
            self.strides = tuple(0 if n <= 1 else s // itemsize
                                 for n, s in zip(view.shape, view.strides))  # fmt: skip
            self.layout = layout_of(base)
        else:
            self.offset, self.strides = _logical_window(view, base, offset_bytes)
            self.layout = None
        self.overlapping = _may_self_overlap(view.shape, self.strides)

    def covers(self, base_shape: tuple[int, ...]) -> bool:
        """True when the region is every element of the base."""
        if self.offset != 0 or self.overlapping:
            return False
        return int(np.prod(self.shape, dtype=np.int64)) == int(np.prod(base_shape, dtype=np.int64))

    def view_of(self, buffer: np.ndarray) -> np.ndarray:
        """The region as a view of ``buffer``, which must have the base's layout.

        Offsets count elements in the base's memory order, so in a buffer of
        another layout they would name other cells: that is refused here
        rather than answered with the wrong cells (or, through a copying
        ``ravel``, with writes that land in a temporary).
        """
        if not has_layout(buffer, self.layout):
            raise AssertionError("Region.view_of needs a buffer in the region's layout")
        return self._within(buffer.ravel(order="K"))

    def _within(self, flat: np.ndarray) -> np.ndarray:
        """The region as a view of ``flat``, the base's elements in memory order."""
        item = flat.itemsize
        return np.ndarray(
            self.shape,
            flat.dtype,
            flat,
            self.offset * item,
            tuple(s * item for s in self.strides),
        )

    def flat_indices(self, size: int) -> np.ndarray:
        """Memory-order element indices of the region, for overlapping scatters."""
        return self._within(np.arange(size, dtype=np.intp))


def _position(delta: int, base: np.ndarray) -> list[int] | None:
    """The index of ``base`` whose element lies ``delta`` bytes from its first one.

    Axes are taken from the largest stride down; for a base whose elements
    do not overlap, what the smaller axes can still reach is narrower than
    the current stride, so exactly one index fits at each step.
    """
    index = [0] * base.ndim
    axes = sorted(range(base.ndim), key=lambda a: -abs(base.strides[a]))
    rest = delta
    for k, a in enumerate(axes):
        stride, n = base.strides[a], base.shape[a]
        if n == 1:
            continue
        smaller = [(base.shape[b] - 1) * base.strides[b] for b in axes[k + 1 :]]
        low = sum(s for s in smaller if s < 0)
        high = sum(s for s in smaller if s > 0)
        i = (rest - low) // stride if stride > 0 else -((rest - low) // -stride)
        if not 0 <= i < n or not low <= rest - i * stride <= high:
            return None
        index[a] = i
        rest -= i * stride
    return index if rest == 0 else None


def _logical_window(view: np.ndarray, base: np.ndarray, offset: int) -> tuple[int, tuple]:
    """``view``'s offset and strides in C-ordered elements of a base that is not dense."""
    units = [int(np.prod(base.shape[a + 1 :], dtype=np.int64)) for a in range(base.ndim)]

    def element(index: list[int] | None) -> int:
        if index is None:
            raise NotDifferentiableError(
                f"a view of shape {view.shape} whose elements mutagrad cannot place in "
                f"its base of shape {base.shape} (strides {base.strides}); copy the array "
                "(np.array(x)) before taking this view"
            )
        return sum(i * u for i, u in zip(index, units))

    start = element(_position(offset, base))
    steps = []
    for n, s in zip(view.shape, view.strides):
        if n <= 1:
            steps.append(0)
            continue
        step = element(_position(offset + s, base)) - start
        if element(_position(offset + (n - 1) * s, base)) != start + (n - 1) * step:
            element(None)  # not a regular window of the base: refuse
        steps.append(step)
    last = offset + sum((n - 1) * s for n, s in zip(view.shape, view.strides) if n > 1)
    if element(_position(last, base)) != start + sum(
        (n - 1) * t for n, t in zip(view.shape, steps) if n > 1
    ):
        element(None)
    return start, tuple(steps)


def copy_keeping_layout(a: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """A copy of ``a`` with ``a``'s very strides, in a private buffer.

    Returns the copy, the address ``a``'s lowest byte had, and the buffer
    (1-D, spanning what ``a`` spans), so that views of ``a`` can be moved
    along. numpy decides whether reshape and ravel return views from the
    strides: a copy in another layout would make other decisions. An array
    whose elements share memory (``np.broadcast_to``) gets a dense copy, as
    ``np.copy`` makes: each element then has memory of its own.
    """
    low, high = np.lib.array_utils.byte_bounds(a)
    if a.size > 1 and _may_self_overlap(a.shape, a.strides):
        a = a.copy(order="K")
        low, high = np.lib.array_utils.byte_bounds(a)
    buffer = np.empty((high - low) // a.itemsize, dtype=a.dtype)
    copy = np.ndarray(a.shape, a.dtype, buffer, _address(a) - low, a.strides)
    copy[...] = a
    return copy, low, buffer


def describe_part(view: np.ndarray, base: np.ndarray) -> str:
    """Which part of ``base`` the numpy view ``view`` is, as index text (``[1, :]``).

    Exact for views that are boxes of a C-ordered base (slices, rows,
    columns, steps); other views are described by shape and offset.
    """
    whole = view.shape == base.shape and view.strides == base.strides and view.size
    if whole and _address(view) == _address(base):
        return "[...] (the whole array)"
    try:
        region = Region(view, base)
    except Exception:  # a dtype-changing view: no element region
        return f"a view of shape {view.shape}"
    fallback = f"a view of shape {view.shape} starting at flat element {region.offset}"
    if region.layout is not None or region.overlapping or region.offset >= max(base.size, 1):
        return fallback
    shape = base.shape
    unit = [int(np.prod(shape[b + 1 :], dtype=np.int64)) for b in range(len(shape))]
    start = [int(i) for i in np.unravel_index(region.offset, shape)] if shape else []
    parts: list[Any] = list(start)
    for n, stride in zip(region.shape, region.strides):
        if n <= 1:
            continue
        for b in range(len(shape)):
            if isinstance(parts[b], slice) or stride % unit[b]:
                continue
            step = stride // unit[b]
            last = start[b] + step * (n - 1)
            if 0 <= last < shape[b]:
                stop = last + (1 if step > 0 else -1)
                parts[b] = slice(start[b], None if stop < 0 else stop, step)
                break
        else:
            return fallback
    return "[" + ", ".join(_slice_text(p, shape[b]) for b, p in enumerate(parts)) + "]"


def _slice_text(part: Any, length: int) -> str:
    if not isinstance(part, slice):
        return str(part)
    start, stop, step = part.start, part.stop, part.step
    if step == 1 and start == 0 and stop == length:
        return ":"
    open_stop = stop is None or (step > 0 and stop == length)
    text = f"{'' if start == 0 and step > 0 else start}:{'' if open_stop else stop}"
    return text if step == 1 else f"{text}:{step}"


Layout = tuple[int, ...] | None  # axes from slowest to fastest in memory; None: C order


def layout_of(base: np.ndarray) -> Layout:
    """The memory order of a dense array (``None`` for C order)."""
    if base.flags.c_contiguous:
        return None
    strides = base.strides
    return tuple(sorted(range(base.ndim), key=lambda axis: -strides[axis]))


def is_dense(a: np.ndarray) -> bool:
    """Contiguous in some axis order with positive strides, so ``layout_of`` describes it."""
    if a.flags.c_contiguous or a.flags.f_contiguous:
        return True
    perm = layout_of(a)
    return a.transpose(perm).flags.c_contiguous and min(a.strides, default=0) >= 0


def layout_buffer(shape: tuple[int, ...], dtype: np.dtype, layout: Layout) -> np.ndarray:
    """A zeros array whose element layout is ``layout``."""
    if layout is None:
        return np.zeros(shape, dtype=dtype)
    permuted = np.zeros([shape[axis] for axis in layout], dtype=dtype)
    return permuted.transpose(np.argsort(layout))


def has_layout(buf: np.ndarray, layout: Layout) -> bool:
    if layout is None:
        return buf.flags.c_contiguous
    return buf.transpose(layout).flags.c_contiguous


def owned_copy(g: Any, dtype: np.dtype, layout: Layout) -> np.ndarray:
    """A fresh, writable copy of ``g`` (shape of ``g``) in the given layout."""
    if layout is None:
        return np.array(g, dtype=dtype, copy=True, order="C")  # region offsets assume C order
    buf = layout_buffer(np.shape(g), dtype, layout)
    buf[...] = g
    return buf


def _may_self_overlap(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Conservative test: can two index tuples of the view reach one element?

    Sorted by stride, each stride must step past everything the smaller ones
    span; that is exactly the condition numpy's own views (slices, transposes,
    reshapes, diagonals) satisfy.
    """
    dims = sorted((abs(s), n) for s, n in zip(strides, shape) if n > 1)
    span = 0
    for stride, n in dims:
        if stride <= span:
            return True
        span += stride * (n - 1)
    return False


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

    def add_to(self, buf: np.ndarray) -> np.ndarray:
        """Add every contribution into ``buf`` in place and return it."""
        entries = self.entries
        if buf.ndim == 1 and buf.dtype == np.float64 and len(entries) > 1:
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

    def dense(self) -> np.ndarray:
        return self.add_to(layout_buffer(self.shape, self.dtype, self.layout))

    def __repr__(self) -> str:
        return f"SparseCotangent(shape={self.shape}, entries={len(self.entries)})"


def _add_into_region(buf: np.ndarray, region: Region, value: Any) -> None:
    """``buf[region] += value``; ``buf`` has the region's layout."""
    if region.overlapping:
        np.add.at(buf.ravel(order="K"), region.flat_indices(buf.size), value)
    else:
        part = region.view_of(buf)
        part += value


def _is_element_read(entry: tuple[int, Any, Any]) -> bool:
    return entry[0] == BASIC and type(entry[1]) is int and type(entry[2]) is np.float64


def _batch_element_reads(entries: list[tuple[int, Any, Any]]) -> list[tuple[int, Any, Any]]:
    """``entries`` with each run of single-element reads (``x[i]`` in a loop) as one FANCY entry.

    ``np.add.at`` adds in index order, exactly as the run's ``buf[i] += v``
    one by one would, in one call instead of one per read.
    """
    batched: list[tuple[int, Any, Any]] = []
    run: list[tuple[int, Any, Any]] = []
    for entry in entries:
        if _is_element_read(entry):
            run.append(entry)
            continue
        _flush(run, batched)
        batched.append(entry)
    _flush(run, batched)
    return batched


def _flush(run: list[tuple[int, Any, Any]], batched: list[tuple[int, Any, Any]]) -> None:
    if len(run) > 1:
        keys = np.fromiter((key for _, key, _ in run), dtype=np.intp, count=len(run))
        values = np.fromiter((value for _, _, value in run), dtype=np.float64, count=len(run))
        batched.append((FANCY, keys, values))
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
