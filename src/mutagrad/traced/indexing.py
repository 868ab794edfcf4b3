"""Indexing: ``x[index]`` for basic, integer, boolean and advanced indexes.

Basic indexes (integers, slices, ``None``, ``...``) that leave an array give a
view of the same base, as numpy does. Every other read (a single element, an
advanced index) copies, and its pullback is *sparse*: it adds its cotangent
into one buffer for the indexed array when the engine needs it, rather than
allocating a dense zeros array per read. Outside any gradient call a single
element is numpy's own scalar (``np.float64``), as for an ndarray: immutable,
it has nothing to trace. Indexing lives in core because the write path needs
its semantics (:func:`normalize_index`).
"""

from __future__ import annotations

import operator
from sys import _getframe
from typing import Any

import numpy as np
from numpy import float64, generic, ndarray  # (by name: see mutagrad.core.record)

from mutagrad.core.engine import RUNNING, BackwardPass, Node, Rule, current_trace
from mutagrad.core.regions import BASIC_INDEX, FANCY_INDEX, scatter
from mutagrad.core.tangents import BASIC, FANCY
from mutagrad.diagnostics.sites import user_site_from
from mutagrad.traced.forward import forward_element
from mutagrad.traced.value import (
    WrappedArray,
    WrappedScalar,
    WrappedValue,
    check_thread,
    has_tangent,
    make_view,
    node_of,
    wrap,
)


def _normalize_one(k: Any) -> tuple[tuple[Any, ...], bool]:
    """One index component as (components, is_basic); booleans become integer arrays."""
    if isinstance(k, WrappedValue):
        k = k._raw
    if k is None or k is Ellipsis or isinstance(k, slice):
        if isinstance(k, slice) and any(
            isinstance(b, WrappedValue) for b in (k.start, k.stop, k.step)
        ):
            k = slice(
                *(None if b is None else operator.index(b) for b in (k.start, k.stop, k.step))
            )
        return (k,), True
    if isinstance(k, (bool, np.bool_)):
        return (k,), False
    if isinstance(k, (int, np.integer)):
        return (int(k),), True
    arr = np.array(k)  # a private copy: the pullback reads the index later
    if arr.size == 0 and arr.dtype.kind == "f" and not isinstance(k, ndarray):
        # An empty list is float64 to np.array, but numpy indexes with it as with
        # an empty integer array (an empty float *array* stays an error).
        arr = arr.astype(np.intp)
    if arr.dtype == bool:
        if arr.ndim == 0:
            return (bool(arr),), False
        return tuple(np.nonzero(arr)), False
    if arr.ndim == 0 and arr.dtype.kind in "iu":
        return (int(arr),), True
    return (arr,), False


def normalize_index(index: Any) -> tuple[Any, bool]:
    """``index`` with traced parts unwrapped and arrays copied; and whether it is basic."""
    kind = type(index)
    if kind is int or kind is slice:
        return index, True
    if kind is tuple:
        parts: list[Any] = []
        basic = True
        for k in index:
            comps, b = _normalize_one(k)
            parts.extend(comps)
            basic = basic and b
        return tuple(parts), basic
    comps, basic = _normalize_one(index)
    return (comps[0] if len(comps) == 1 else comps), basic


class IndexRule(Rule):
    """``x[key]`` when it copies: an element or an advanced index."""

    __slots__ = ()
    handles_complex = True  # (a linear map)

    def backward(self, node: Node, g: Any, owned: bool, bk: BackwardPass) -> None:
        (x,) = node.inputs
        if x is None or not x.tag & bk.bit:
            return
        key, basic = node.saved
        if bk.recording and bk.needs_recording(node, g):
            kind = BASIC_INDEX if basic else FANCY_INDEX
            bk.accumulate(x, scatter(g, None, kind, key, x.shape, x.dtype))
            return
        bk.accumulate_entry(x, (BASIC if basic else FANCY, key, g))


GETITEM = IndexRule("getitem")


def getitem(w: WrappedArray, index: Any) -> Any:
    if type(index) is int:
        key, basic = index, True  # normalize_index's first case, without the call
    else:
        key, basic = normalize_index(index)
    result = w._raw[key]
    if basic and type(result) is ndarray:
        return make_view(w, result)
    trace = current_trace()
    if trace is None:
        if RUNNING:  # a gradient call runs: is w its, and are we in another thread?
            check_thread(w, "indexing")
        # No gradient call: numpy's own scalar, as ndarray indexing gives (it is
        # immutable and carries nothing to trace). Not a np.void, which is a
        # writable view of its array's memory.
        if isinstance(result, generic) and not isinstance(result, np.void):
            return result
        return wrap(result)
    tape = trace.tape
    if w._base is None:  # node_of's first case, without the call
        n = w._node
        if n is not None and n.tape is not tape:
            n = None
    else:
        n = node_of(w, tape)
    if n is None:
        if trace.forward and has_tangent(w, trace.forward):
            return forward_element(w, key, wrap(result), trace)
        return wrap(result)
    # This is WrappedArray.__getitem__ itself: frame 1 is the user's, usually.
    site = user_site_from(_getframe(1))
    node = Node(GETITEM, (n,), tape, n.tag, result, site)
    node.saved = (key, basic)  # what the pullback reads: no array of x's
    tape.nodes.append(node)  # push, spelled out on this hot path
    # (wrap's case of an element of a float64 array, without the call)
    out = WrappedScalar(result, node) if type(result) is float64 else wrap(result, node)
    if trace.forward:
        return forward_element(w, key, out, trace)
    return out
