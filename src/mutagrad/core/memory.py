"""Where arrays sit in memory: a view's region of its base, and memory layouts.

* :class:`Region` – where a numpy view sits inside its base array, in element
  units; used to scatter a view's cotangent into its base and to gather a
  written region's cotangent out of it, and by the write path to tell which
  saved values a write overlaps.
* Layouts (:data:`Layout`, :func:`layout_of`, :func:`layout_buffer`) – the
  order of a base's axes in memory, so that a cotangent buffer is laid out
  as the base is and a region's strides address it.
* :func:`copy_keeping_layout` – a copy with numpy's exact strides (an
  argument copied for a call views and reshapes as the caller's array does).
* :func:`describe_part` – which part of its base a view is, as index text.
* :func:`first_sharing` – which of some arrays a result may be memory of.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from mutagrad.errors import NotDifferentiableError


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

    def batched_view_of(self, buffer: np.ndarray) -> np.ndarray:
        """The region in every slice of ``buffer``, of shape ``(k,) + base shape``.

        ``buffer`` is laid out as :func:`batched_layout` says (each slice in the
        base's layout, the slices one after the other): a forward level's
        tangent of the base, whose view this is for the view's tangent.
        """
        if not has_layout(buffer, batched_layout(self.layout)):
            raise AssertionError("Region.batched_view_of needs a buffer in the batched layout")
        flat = buffer.ravel(order="K")
        item = flat.itemsize
        per_slice = (buffer.strides[0] if buffer.shape[0] > 1 else flat.size * item)
        return np.ndarray(
            (buffer.shape[0], *self.shape),
            flat.dtype,
            flat,
            self.offset * item,
            (per_slice, *(s * item for s in self.strides)),
        )

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


def first_sharing(result: Any, arrays: Iterable[Any]) -> int | None:
    """The position of the first ndarray among ``arrays`` whose memory ``result`` may share
    (numpy's bounds test: it may say so of memory it does not share); None if ``result``
    is not an ndarray or shares none's. A function's result, told from a view or the
    argument itself that it may return."""
    if not isinstance(result, np.ndarray):
        return None
    for i, a in enumerate(arrays):
        if isinstance(a, np.ndarray) and np.may_share_memory(result, a):
            return i
    return None


def batched_layout(layout: Layout) -> Layout:
    """The layout of a batch ``(k,) + shape`` whose slices each have ``layout``, one after
    the other (the batch axis slowest): a forward level's tangent of a base."""
    return None if layout is None else (0, *(axis + 1 for axis in layout))


def tangent_layout(base: np.ndarray) -> Layout:
    """The batched layout of a tangent of ``base``: the one its views' Regions address."""
    return batched_layout(layout_of(base) if is_dense(base) else None)


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
