"""Recording: how a forward operation becomes a node on the tape.

This module is the one recording path. Every :class:`Node` is made by its
constructor (``Node(rule, inputs, tape, tag, value, site)``, which refuses
complex values) and put on the tape by :func:`push` (spelled out on the hot
paths: the two small recorders here and an element read); every operand is
resolved to its raw value and node by :func:`mutagrad.traced.value.operand`
(the array type knows its views); what a pullback may
read later is decided by one save policy (:func:`save_value`,
:func:`save_output`, :func:`owned_value`); inputs of a gradient call get
their node from :func:`input_node`.

:func:`record` records a rule applied to any number of arguments. One and
two arguments, the arithmetic of every traced loop, take :func:`record1` and
:func:`record2`: the same policy unrolled, the only implementation for
those counts (the operator fast path in :mod:`mutagrad.traced.value` calls
them directly).

What is saved for an argument the pullbacks read:

* an array in a WrappedArray: a :class:`Capture` (its memory, versioned:
  a later overlapping write poisons or snapshots it, by the mode's policy);
* a raw ndarray or a list: a private copy (nothing versions writes to it);
* an immutable scalar: itself.

An argument the pullbacks do not read keeps its shape and dtype (a
:class:`Meta`) or, for a Python value such as an index tuple, an owned copy.

The modules on the path of every traced operation (this one, the engine,
the traced types, the dispatch, the write path) import the numpy types they
test on it by name (``ndarray``, ``float64``, ``generic``): numpy's module
defines ``__getattr__``, which keeps CPython 3.11 from specialising an
``np.ndarray`` load (372 instructions against 51 for a global, in callgrind;
a traced loop made ~10 such loads per operation).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy import float64, ndarray  # (by name: see the module docstring)

from mutagrad.core.engine import (
    IDENTITY,
    LEAF,
    TRACED,
    Node,
    Tape,
    Trace,
    VjpRule,
    capture,
    current_trace,
)
from mutagrad.core.tangents import Meta
from mutagrad.diagnostics.sites import Site


def push(node: Node, saved: tuple[Any, ...], aux: dict[str, Any] | None = None) -> Node:
    """Put ``node`` on its tape with what its pullback reads (``saved``, ``aux``).

    The node goes on the tape only once its saves are made: a save that
    raises leaves no half-made node behind.
    """
    node.saved = saved
    if aux is not None:
        node.aux = aux
    node.tape.nodes.append(node)
    return node


def input_node(tape: Tape, bit: int, outer: Node | None, value: Any) -> Node:
    """The node of an input of the call at level ``bit``: a leaf, or linked to ``outer``.

    ``outer`` is the value's node in an enclosing gradient call, through
    which the inner call's gradient flows on when the enclosing one is
    differentiated.
    """
    if outer is None:
        node = Node(LEAF, (), tape, bit, value, None)
    else:
        node = Node(IDENTITY, (outer,), tape, bit | outer.tag, value, None)
    tape.nodes.append(node)  # (push with nothing saved: a new Node saves nothing)
    return node


def record(
    rule: VjpRule,
    args: tuple[Any, ...],
    raw: list[Any],
    nodes: list[Node | None],
    result: Any,
    kwargs: dict[str, Any] | None,
    trace: Trace,
    site: Site | None,
) -> tuple[Node, bool]:
    """Record ``rule`` applied to ``args`` (some traced) producing ``result``.

    Returns the node and whether the pullbacks read the output, whose slot
    :func:`save_output` fills once the output is wrapped. ``result`` only
    lends its shape and dtype (an in-place operation passes its destination
    before writing).
    """
    n = len(raw)
    if n == 2:
        return record2(rule, args[0], args[1], raw[0], raw[1], nodes[0], nodes[1], result,
                       kwargs, trace, site)  # fmt: skip
    if n == 1:  # (the one argument is the active one: its node is not None)
        return record1(rule, args[0], raw[0], nodes[0], result, kwargs, trace, site)  # type: ignore[arg-type]
    tag = 0
    active = 0
    for i, node in enumerate(nodes):
        if node is not None:
            tag |= node.tag
            active |= 1 << i
    node = Node(rule, tuple(nodes), trace.tape, tag, result, site)
    need, need_ans = rule.plan(active, n)
    mode = trace.mode
    saved: list[Any] = []
    for i, r in enumerate(raw):
        if not need[i]:
            saved.append(_shape_only(r))
            continue
        twin = None
        if type(r) is ndarray or type(r) is list:
            for j in range(i):  # x * x reads one array twice: save it once
                if raw[j] is r and need[j]:
                    twin = saved[j]
                    break
        saved.append(twin if twin is not None else save_value(r, args[i], node, mode))
    saved.append(None)
    push(node, tuple(saved), _owned_kwargs(rule, kwargs))
    return node, need_ans


def record2(
    rule: VjpRule,
    a: Any,
    b: Any,
    ra: Any,
    rb: Any,
    na: Node | None,
    nb: Node | None,
    result: Any,
    kwargs: dict[str, Any] | None,
    trace: Trace,
    site: Site | None,
) -> tuple[Node, bool]:
    """:func:`record` for two arguments ``a``, ``b`` (raw ``ra``, ``rb``; nodes ``na``, ``nb``)."""
    if na is None:
        active, tag = 2, nb.tag  # type: ignore[union-attr]
    elif nb is None:
        active, tag = 1, na.tag
    else:
        active, tag = 3, na.tag | nb.tag
    need, need_ans = rule.plans2[active]
    node = Node(rule, (na, nb), trace.tape, tag, result, site)
    mode = trace.mode
    # save_value, inlined for the common case of a WrappedArray read (a capture).
    # _shape_only, inlined for an array and an immutable scalar.
    saved_a: Any  # a Meta, a Capture or the value itself
    saved_b: Any
    if not need[0]:
        kind = type(ra)
        if kind is ndarray:
            saved_a = Meta(ra.shape, ra.dtype)
        else:
            saved_a = ra if kind in _ATOMS else owned_value(ra)
    elif type(ra) is ndarray and isinstance(a, TRACED.kind):
        saved_a = capture(a, ra, node, mode)
    else:
        saved_a = save_value(ra, a, node, mode)
    if not need[1]:
        kind = type(rb)
        if kind is ndarray:
            saved_b = Meta(rb.shape, rb.dtype)
        else:
            saved_b = rb if kind in _ATOMS else owned_value(rb)
    elif need[0] and rb is ra and (type(ra) is ndarray or type(ra) is list):
        saved_b = saved_a  # x * x: one array, saved once
    elif type(rb) is ndarray and isinstance(b, TRACED.kind):
        saved_b = capture(b, rb, node, mode)
    elif rb is b and type(rb) in _ATOMS:
        saved_b = rb  # (save_value of a constant number: an exponent, a factor)
    else:
        saved_b = save_value(rb, b, node, mode)
    # push, spelled out on this hot path
    node.saved = (saved_a, saved_b, None)
    if kwargs:
        node.aux = _owned_kwargs(rule, kwargs)
    trace.tape.nodes.append(node)
    return node, need_ans


def record1(
    rule: VjpRule,
    a: Any,
    ra: Any,
    na: Node,
    result: Any,
    kwargs: dict[str, Any] | None,
    trace: Trace,
    site: Site | None,
) -> tuple[Node, bool]:
    """:func:`record` for one argument ``a`` (raw ``ra``, node ``na``)."""
    need, need_ans = rule.plan1  # (the argument is active)
    node = Node(rule, (na,), trace.tape, na.tag, result, site)
    saved = save_value(ra, a, node, trace.mode) if need[0] else _shape_only(ra)
    # push, spelled out on this hot path
    node.saved = (saved, None)
    if kwargs:
        node.aux = _owned_kwargs(rule, kwargs)
    trace.tape.nodes.append(node)
    return node, need_ans


def _shape_only(raw: Any) -> Any:
    """What is kept of an argument the pullbacks do not read: its shape, or an owned copy."""
    kind = type(raw)
    if kind is ndarray:
        return Meta(raw.shape, raw.dtype)
    # A shape list, an index tuple: the user may change it.
    return raw if kind in _ATOMS else owned_value(raw)


def _owned_kwargs(rule: VjpRule, kwargs: dict[str, Any] | None) -> dict[str, Any] | None:
    if not (kwargs and rule.params):
        return None
    # owned_value(kwargs) keeps a dict that holds nothing mutable as it is (``axis=0``,
    # an index tuple: nearly every rule's keywords); _mutable's test of a dict, inlined.
    for value in kwargs.values():
        if type(value) not in _ATOMS and _mutable(value):
            return owned_value(kwargs)
    return kwargs


def save_value(raw: Any, arg: Any, node: Node, mode: Any) -> Any:
    """What ``node``'s pullback reads later of the value ``raw`` (of argument ``arg``)."""
    kind = type(raw)
    if kind is ndarray:
        if isinstance(arg, TRACED.kind):
            return capture(arg, raw, node, mode)
        # A raw ndarray lies outside the version system: keep a private copy.
        node.tape.guard_bytes += raw.nbytes
        return raw.copy()
    # (Tests of the type, not isinstance: a failing isinstance looks up the value's
    # __class__ too, and a number fails both.)
    if issubclass(kind, list):
        return np.array(raw)
    if issubclass(type(arg), TRACED.kind):
        trace = current_trace()
        if trace is not None and trace.forward:
            # A traced scalar under forward levels is kept as itself: its tangents (set
            # once, when it is made: a scalar is never written) are what the forward
            # levels differentiate the recorded sweep's pullbacks with.
            return arg
    return raw


def save_output(node: Node, wrapped: Any, mode: Any) -> None:
    """Fill the output slot of ``node.saved`` with the (wrapped) output."""
    node.saved = (*node.saved[:-1], save_value(wrapped._raw, wrapped, node, mode))


def owned_value(value: Any) -> Any:
    """``value`` with every mutable array in it copied, for a pullback to read later.

    A ``where=`` mask, an index array or a fill value reaches a rule as a raw
    ndarray (or a WrappedArray that carries no gradient) that the program may
    overwrite after the call, in any mode: nothing versions it for the rule,
    so the engine keeps its own copy. Containers are rebuilt, so a list the
    program appends to afterwards is not the one the pullback reads.
    """
    if not _mutable(value):
        return value  # the common case: axis=, keepdims=, a dtype
    kind = type(value)
    if kind is ndarray:
        return value.copy()
    if kind is list or kind is tuple:
        return kind(owned_value(v) for v in value)
    if kind is dict:
        return {k: owned_value(v) for k, v in value.items()}
    data = value._raw  # a WrappedValue
    return data.copy() if type(data) is ndarray else data


def _mutable(value: Any) -> bool:
    """Whether ``value`` holds an array or a container the program could change later."""
    kind = type(value)
    if kind in _ATOMS:
        return False
    if kind is ndarray or kind is list or issubclass(kind, TRACED.kind):
        return True
    if kind is tuple or kind is dict:
        for v in value.values() if kind is dict else value:
            if type(v) not in _ATOMS and _mutable(v):
                return True
    return False


# Values no program can change in place: the keywords of most calls (axis=None, keepdims=False).
_ATOMS = frozenset({type(None), bool, int, float, str, float64, np.int64, np.bool_})
