"""Tangents beside values: where a traced value's tangent lives, and how a write writes it.

At a forward level (:class:`~mutagrad.core.engine.ForwardTrace`) of width
``k``, the tangent of a value of shape ``S`` has shape ``(k,) + S``. It lives
in the value's ``_tangents`` dict, keyed by the level. A view has none of its
own: its tangent is the same view of its base's tangent, so that a write
through any view is seen by every other one::

    base           _raw: shape S, layout L     _tangents[level]: (k,) + S, each slice laid out L
      └── view     _raw: Region R of the base  its tangent: R in every slice (a view too)

A base's tangent is its own, except a :class:`Borrowed` one (the caller's
tangent array, or one shared with the copy of a value a nested call got):
the first write into it copies it into the base's layout. A tangent a forward
rule computed is the output's own (the forward step copies one that would
alias an argument's). An element read or an advanced-index read copies its
tangent out, as numpy copies the values.

At a level that has levels around it, a tangent is itself a traced value of
those levels (a WrappedArray they record and differentiate); everything here
is written with numpy calls and indexing that work on both, and runs with
``STATE`` at the level's parent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mutagrad.core.memory import Region, has_layout, layout_buffer, tangent_layout
from mutagrad.core.regions import complex_elements, is_imaginary_part
from mutagrad.core.tangents import cotangent_dtype
from mutagrad.errors import SnapshotUnavailableError
from mutagrad.traced.value import (
    DETACHED,
    READONLY,
    WrappedValue,
    make_view,
    wrap,
)


class Borrowed:
    """A tangent a base shares with the caller or another value: copied before a write."""

    __slots__ = ("tangent",)

    def __init__(self, tangent: Any):
        self.tangent = tangent


def tangent_of(x: Any, level: Any) -> Any:
    """``x``'s tangent at ``level``, shape ``(k,) + x.shape``; None where it has none (zero)."""
    if not isinstance(x, WrappedValue):
        return None
    base = x._base
    if base is None:
        tangents = x._tangents
        if tangents is None:
            return None
        t = tangents.get(level)
        return t.tangent if type(t) is Borrowed else t
    if x._flags & DETACHED:
        return None
    tangents = base._tangents
    if tangents is None or tangents.get(level) is None:
        return None
    t = laid_out(base, level)
    if _same_memory(x._raw, base._raw):
        return t  # (a handle of the whole base: no Region, which a stride-0 base has none of)
    return tangent_view(x._raw, base._raw, t)


def tangent_view(data: np.ndarray, base: np.ndarray, t: Any) -> Any:
    """The tangent of ``data``, a view of ``base``, within ``t``, the base's tangent laid
    out as the base is: the same view in every slice. Of one part of complex elements
    (``z.real``, ``z.imag``) the same part of the elements' tangents: the tangent of the
    real part of a value is the real part of its tangent."""
    elements = complex_elements(data, base) if data.itemsize != base.itemsize else None
    region = Region(data if elements is None else elements, base)
    raw = region.batched_view_of(t._raw if isinstance(t, WrappedValue) else t)
    if elements is not None:
        raw = raw.imag if is_imaginary_part(data, elements) else raw.real
    return make_view(t, raw) if isinstance(t, WrappedValue) else raw


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` views exactly the elements of ``b``, in the same order (not one part of them:
    ``z.real`` of a complex ``z`` has its shape, strides and address)."""
    return (
        a.itemsize == b.itemsize
        and a.shape == b.shape
        and a.strides == b.strides
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    )


def laid_out(base: Any, level: Any) -> Any:
    """``base``'s tangent at ``level`` in the base's batched layout (copied and kept if it
    was laid out otherwise), which its views' Regions address."""
    t = base._tangents[level]
    inner = t.tangent if type(t) is Borrowed else t
    raw = inner._raw if isinstance(inner, WrappedValue) else inner
    if has_layout(raw, tangent_layout(base._raw)) and (
        not isinstance(inner, WrappedValue) or inner._base is None
    ):
        return inner
    copy = _zeros_for(base, inner)
    copy[...] = inner
    base._tangents[level] = copy
    return copy


def _zeros_for(base: Any, like: Any) -> Any:
    """Zeros for ``base``'s tangent, as wide as ``like``, in the base's layout; traced if
    ``like`` is (a tangent at a level with levels around it)."""
    shape = (like.shape[0], *base._raw.shape)
    buffer = layout_buffer(shape, cotangent_dtype(base._raw.dtype), tangent_layout(base._raw))
    return wrap(buffer) if isinstance(like, WrappedValue) else buffer


def writable_tangent(base: Any, level: Any, width: int, traced: bool) -> Any:
    """``base``'s tangent at ``level``, its own, laid out and writable: for a write.

    Zeros where the base had none (``traced``: as a traced value of the levels
    around ``level``); a copy where it was borrowed, read-only or laid out
    otherwise.
    """
    tangents = base._tangents
    t = tangents.get(level) if tangents is not None else None
    if t is None:
        shape = (width, *base._raw.shape)
        buffer = layout_buffer(shape, cotangent_dtype(base._raw.dtype), tangent_layout(base._raw))
        t = wrap(buffer) if traced else buffer
        if tangents is None:
            base._tangents = {level: t}
        else:
            tangents[level] = t
        return t
    if type(t) is not Borrowed:
        raw = t._raw if isinstance(t, WrappedValue) else t
        if (
            raw.flags.writeable
            and has_layout(raw, tangent_layout(base._raw))
            and (not isinstance(t, WrappedValue) or (t._base is None and not t._flags & READONLY))
            and (isinstance(t, WrappedValue) or not traced)
        ):
            return t
    else:
        t = t.tangent
    # (traced: a raw tangent, constant for the levels around, becomes a traced copy that
    # their recorded writes can write into)
    copy = _zeros_for(base, t)
    if traced and not isinstance(copy, WrappedValue):
        copy = wrap(copy)
    copy[...] = t
    tangents[level] = copy
    return copy


def set_tangent(x: Any, level: Any, t: Any) -> None:
    """Give ``x``, a value an operation just made (not a view), its tangent at ``level``."""
    tangents = x._tangents
    if tangents is None:
        x._tangents = {level: t}
    else:
        tangents[level] = t


def lend_tangent(x: Any, level: Any, t: Any) -> None:
    """Give ``x`` (not a view) the tangent ``t`` at ``level`` without copying it: ``t`` is the
    caller's array, or another value's, and the first write into ``x``'s copies it."""
    set_tangent(x, level, Borrowed(t))


def share_tangents(source: Any, target: Any, levels: tuple[Any, ...]) -> None:
    """Give ``target`` (a copy of ``source``'s value) ``source``'s tangents at ``levels``:
    shared until a write into either copies them."""
    holder = source._base if source._base is not None else source
    for level in levels:
        journal = level.journal  # (linearize's record of the level's tangent steps)
        t = tangent_of(source, level) if journal is None else journal.read(source, level)[0]
        if t is None:
            continue
        lend_tangent(target, level, t)
        own = holder._tangents.get(level)
        if type(own) is not Borrowed:
            holder._tangents[level] = Borrowed(own)


def moved_last(t: Any) -> Any:
    """``t`` with its batch axis moved last (a view): numpy indexes it as it indexes the value."""
    n = t.ndim
    return t.transpose((*range(1, n), 0)) if n > 1 else t


def moved_first(t: Any) -> Any:
    """The inverse of :func:`moved_last`."""
    n = t.ndim
    return t.transpose((n - 1, *range(n - 1))) if n > 1 else t


def _with_batch_axis(key: Any) -> tuple[Any, ...]:
    """``key`` followed by the batch axis, which :func:`moved_last` put last."""
    parts = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in parts):
        return (*parts, slice(None))
    return (*parts, Ellipsis)


def indexed_tangent(t: Any, key: Any) -> Any:
    """The tangent of ``value[key]`` from the value's tangent ``t``: a copy, as the read is."""
    result = moved_first(moved_last(t)[_with_batch_axis(key)])
    if isinstance(result, WrappedValue) or result.base is not None:
        return result.copy()
    return result


def write_tangent(target: Any, key: Any, mask: Any, winners: Any, value_tangent: Any) -> None:
    """Write ``value_tangent`` (None: zeros) into ``target``, the written array's tangent
    (batch axis first), where ``value[key] = ...`` (or ``np.copyto(..., where=mask)``) wrote.

    ``winners``: the key repeats positions; each slice is then written on its
    own, with the very index and layout the values had, so numpy keeps the
    same winner.
    """
    if value_tangent is None:
        value_tangent = 0.0
    elif _shares_memory(value_tangent, target):
        value_tangent = value_tangent.copy()  # (y[1:] = y[:-1]: read before it is written)
    if mask is not None:
        np.copyto(target, _lifted(value_tangent, target.ndim - 1), where=mask)
    elif winners is not None:
        for b in range(target.shape[0]):
            target[b][key] = value_tangent[b] if np.ndim(value_tangent) else value_tangent
    else:
        moved_last(target)[_with_batch_axis(key)] = (
            moved_last(value_tangent) if np.ndim(value_tangent) else value_tangent
        )


def _lifted(t: Any, ndim: int) -> Any:
    """A batched tangent broadcastable against ``(k,) + shape`` for a shape of rank ``ndim``."""
    if not np.ndim(t):
        return t
    pad = ndim + 1 - t.ndim
    return t if pad <= 0 else np.reshape(t, (t.shape[0], *(1,) * pad, *t.shape[1:]))


def _shares_memory(a: Any, b: Any) -> bool:
    ra = a._raw if isinstance(a, WrappedValue) else a
    rb = b._raw if isinstance(b, WrappedValue) else b
    return type(ra) is np.ndarray and type(rb) is np.ndarray and np.may_share_memory(ra, rb)


def region_tangents(base: Any, region: np.ndarray) -> dict[Any, Any] | None:
    """Copies of the tangents of ``region`` (memory of ``base``) at every level: what a
    capture keeps when it stops reading the base's memory (a snapshot)."""
    if not base._tangents:
        return None
    place = Region(region, base._raw)
    kept = {}
    for level in list(base._tangents):
        if level.journal is not None:  # (linearize: the copy is a step of its map)
            kept[level] = level.journal.region_copy(base, place, level)
            continue
        t = laid_out(base, level)
        if isinstance(t, WrappedValue):
            raise SnapshotUnavailableError(
                "snapshot mode cannot copy a saved value whose tangent is itself "
                "differentiated (a third derivative: forward mode around forward or reverse "
                "mode around this gradient call).\nFix: run the inner gradient call in "
                'mode="poison", or copy the value before the write.'
            )
        kept[level] = place.batched_view_of(t).copy()
    return kept


__all__ = [
    "Borrowed",
    "indexed_tangent",
    "laid_out",
    "lend_tangent",
    "moved_first",
    "moved_last",
    "region_tangents",
    "set_tangent",
    "share_tangents",
    "tangent_of",
    "writable_tangent",
    "write_tangent",
]
