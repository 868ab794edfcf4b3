"""Derivative rules of the ufunc methods ``reduce``, ``accumulate``, ``reduceat`` and ``outer``,
for every binary ufunc that has a rule (``ufunc.at`` is in :mod:`mutagrad.rules.inplace`).

They are derived from the ufunc's own rule the first time a method is met
(:func:`derive_method`, a loader the registry asks before it refuses), so a
ufunc whose rule comes later (SciPy's, a user's ``defvjp``) has them too:

* ``outer`` is the ufunc itself on operands reshaped to broadcast against
  each other, which is what numpy computes: its rule, broadcast;
* ``reduce`` and ``accumulate`` are a left fold, ``acc_k = U(acc_{k-1}, x_k)``
  along the axis (numpy's order for the ufuncs that are not reorderable; the
  others have the same derivative in any order). The backward pass walks the
  fold from its end through the ufunc's two vjps: the sequential chain rule
  (:func:`_fold_backward`). Closed forms take its place where they exist:
  ``add``, ``multiply``, ``maximum``, ``minimum``, ``fmax``, ``fmin``,
  ``logaddexp``, ``logaddexp2`` and ``hypot`` reduce (the rules of ``sum``,
  ``prod``, ``max``...), ``add`` and ``multiply`` accumulate (``cumsum``,
  ``cumprod``);
* ``reduceat`` is a reduce of each segment, or the element itself where the
  next index does not grow.

Every value is numpy's own: the method runs on the raw data, and the rules
give the derivative only. The keywords: ``reduce`` takes ``axis`` (an int, a
tuple where numpy takes one, ``None``), ``dtype``, ``out``, ``keepdims``,
``initial`` (a traced initial value gets its gradient too) and ``where``;
``accumulate`` and ``reduceat`` take ``axis``, ``dtype`` and ``out``;
``outer`` takes a call's keywords. (``out=`` is written by the traced array's
write path, as for every ufunc.)

The vjps here are written with numpy functions, so they differentiate again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from mutagrad.core.engine import CallRule
from mutagrad.core.jvps import TRANSPOSED, hand, through_gradient
from mutagrad.core.registry import (
    ANS,
    UFUNC_RULES,
    VjpRule,
    on_rule_miss,
    rule_found_on_miss,
)
from mutagrad.diagnostics.messages import missing_forward_rule_message
from mutagrad.diagnostics.sites import format_site, user_site
from mutagrad.errors import MissingForwardRuleError, NotDifferentiableError
from mutagrad.rules import ufuncs  # noqa: F401  (the ufuncs' own rules, which these derive from)
from mutagrad.rules.cumulative import _cumprod_jvp, _cumprod_vjp, _cumsum_jvp, _cumsum_vjp
from mutagrad.rules.reductions import _extremum_vjp, _prod_vjp, _sum_vjp, expand
from mutagrad.traced.dispatch import apply
from mutagrad.traced.value import WrappedValue, array_like, is_active, unwrap

__all__ = ["METHODS", "derive_method", "elementwise_binary_rule"]

_NoValue = np._NoValue

#: The methods derived here (``at`` writes in place: :mod:`mutagrad.rules.inplace`).
METHODS = ("reduce", "accumulate", "reduceat", "outer")


def elementwise_binary_rule(ufunc: Any) -> VjpRule | None:
    """The rule of ``ufunc`` if it is an elementwise ufunc of two inputs and one output
    with a rule of one vjp per input (asking the loaders for one first); else None."""
    if not isinstance(ufunc, np.ufunc) or ufunc.signature is not None:
        return None
    if (ufunc.nin, ufunc.nout) != (2, 1):
        return None
    rule = UFUNC_RULES.get(ufunc)
    if rule is None and rule_found_on_miss(ufunc):
        rule = UFUNC_RULES.get(ufunc)
    if type(rule) is not VjpRule or len(rule.vjps) != 2:
        return None
    return rule


# -- the lanes of a fold: the reduced axes first, merged into one ------------------------


def _reduced_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    return tuple(normalize_axis_tuple(axis, ndim))


def _to_lanes(x: Any, axes: tuple[int, ...]) -> Any:
    """``x`` with ``axes`` moved to the front and merged into one: shape ``(n, *kept)``."""
    shape = np.shape(x)
    kept = [a for a in range(len(shape)) if a not in axes]
    moved = np.transpose(x, (*axes, *kept))
    return np.reshape(moved, (math.prod(shape[a] for a in axes), *(shape[a] for a in kept)))


def _from_lanes(lanes: Any, shape: tuple[int, ...], axes: tuple[int, ...]) -> Any:
    """The inverse of :func:`_to_lanes` for an array of ``shape``."""
    kept = [a for a in range(len(shape)) if a not in axes]
    order = (*axes, *kept)
    moved = np.reshape(lanes, tuple(shape[a] for a in order))
    return np.transpose(moved, tuple(int(a) for a in np.argsort(order)))


# -- the fold and its chain rule --------------------------------------------------------


def _fold_partials(
    ufunc: np.ufunc, lanes: Any, start: Any, taking: np.ndarray | None
) -> tuple[Any, Any, np.ndarray | None, np.ndarray | None]:
    """The partial results of the left fold of ``ufunc`` over ``lanes`` (``(n, *kept)``).

    Returns ``(partials, previous, applied, first)``: ``partials[k]`` is the
    accumulator after element ``k``, ``previous[k]`` before it (``start``,
    the initial value, for ``k = 0``; a stand-in where there is none yet).
    Without a mask (``taking`` is None) every element is folded in:
    ``applied`` and ``first`` are None. With one, ``applied[k]`` says where
    the ufunc combined the accumulator with element ``k``, ``first[k]`` where
    element ``k`` started the accumulator (no initial value); elsewhere the
    element was left out.
    """
    n = np.shape(lanes)[0]
    if taking is None:
        if start is None:
            partials = ufunc.accumulate(lanes, axis=0)
            previous = np.concatenate([lanes[:1], partials[:-1]], axis=0)
        else:
            begin = np.broadcast_to(start, (1, *np.shape(lanes)[1:]))
            partials = ufunc.accumulate(np.concatenate([begin, lanes], axis=0), axis=0)[1:]
            previous = np.concatenate([begin, partials[:-1]], axis=0)
        return partials, previous, None, None
    started = np.full(np.shape(lanes)[1:], start is not None)
    accumulator = lanes[0] if start is None else np.broadcast_to(start, np.shape(lanes)[1:])
    before, after, applied, first = [], [], [], []
    for k in range(n):
        x = lanes[k]
        took = taking[k]
        combined, begins = took & started, took & ~started
        # Where nothing was accumulated yet, x stands in (any finite value would do).
        previous = np.where(started, accumulator, x)
        accumulator = np.where(combined, ufunc(previous, x), np.where(begins, x, previous))
        started = started | took
        before.append(previous)
        after.append(accumulator)
        applied.append(combined)
        first.append(begins)
    return np.stack(after), np.stack(before), np.stack(applied), np.stack(first)


def _local_derivatives(
    rule: VjpRule, partials: Any, previous: Any, lanes: Any, start: Any,
    applied: np.ndarray | None, first: np.ndarray | None,
) -> tuple[Any, Any]:  # fmt: skip
    """``(a, b)``: ``a[k] = d acc_k / d acc_{k-1}``, ``b[k] = d acc_k / d x_k``, elementwise.

    A vjp of an elementwise rule is linear in its cotangent, so each is the vjp
    of a cotangent of ones. A left-out element has ``a = 1, b = 0``; the
    element that starts the accumulator ``a = 0, b = 1``.
    """
    ones = np.ones(np.shape(lanes), dtype=np.result_type(partials, float))
    vjp_acc, vjp_x = rule.vjps
    assert vjp_acc is not None and vjp_x is not None
    a = _full(vjp_acc(ones, partials, previous, lanes), np.shape(lanes))
    b = _full(vjp_x(ones, partials, previous, lanes), np.shape(lanes))
    if applied is None:
        if start is None:  # element 0 starts the accumulator
            a = np.concatenate([np.zeros_like(a[:1]), a[1:]], axis=0)
            b = np.concatenate([np.ones_like(b[:1]), b[1:]], axis=0)
        return a, b
    assert first is not None
    return np.where(applied, a, np.where(first, 0.0, 1.0)), np.where(applied, b, first * 1.0)


def _full(value: Any, shape: tuple[int, ...]) -> Any:
    """A vjp's result as an array of ``shape`` (a vjp may return None, a scalar, or a
    broadcastable array)."""
    if value is None:
        return np.zeros(shape)
    if np.shape(value) != shape:
        return np.broadcast_to(value, shape)
    return value


def _reverse_cumprod(a: Any) -> Any:
    """``c[k] = a[k+1] * ... * a[n-1]`` (1 for the last): how acc_k reaches the end."""
    ones = np.ones_like(a[:1])
    tail = np.flip(np.cumprod(np.flip(a[1:], 0), axis=0), 0)
    return np.concatenate([tail, ones], axis=0)


def _fold_backward(
    rule: VjpRule, ufunc: np.ufunc, lanes: Any, g: Any, start: Any,
    taking: np.ndarray | None, each: bool,
) -> tuple[Any, Any]:  # fmt: skip
    """The cotangents of the lanes and of the initial value, for the fold's cotangent ``g``.

    ``each``: ``g`` holds a cotangent for every partial result (accumulate,
    shape ``(n, *kept)``), else for the last (reduce, shape ``kept``). The
    chain rule from the end: ``G[n-1] = g[n-1]``, ``G[k] = g[k] + a[k+1] G[k+1]``,
    and element ``k`` gets ``b[k] G[k]``; the initial value ``a[0] G[0]``.
    """
    partials, previous, applied, first = _fold_partials(ufunc, lanes, start, taking)
    a, b = _local_derivatives(rule, partials, previous, lanes, start, applied, first)
    if each:
        reaching = [g[-1]]
        for k in range(np.shape(lanes)[0] - 2, -1, -1):
            reaching.append(g[k] + a[k + 1] * reaching[-1])
        total = np.stack(reaching[::-1])
    else:
        total = _reverse_cumprod(a) * g
    return b * total, (None if start is None else np.sum(a[0] * total[0]))


def _check_fold(ufunc: np.ufunc, value: Any, folded: Any, method: str) -> None:
    """Refuse a ``value`` numpy computed that is not the left fold ``folded``.

    numpy's own reduce of some ufuncs is not the fold it documents: numpy 2.2
    to 2.5 compute ``power.reduce`` and ``arctan2.reduce`` of three or more
    elements along a contiguous axis as ``U(x[0], x[-1])``, the middle
    elements left out, and along other axes as the fold. The derivative of
    that depends on the memory layout, so the call is refused rather than
    given the fold's derivative. (The ufuncs that numpy reorders, add and
    the like, differ from the fold by rounding only.)
    """
    value, folded = np.asarray(value), np.asarray(folded)
    if value.dtype.kind not in "fc":
        return
    scale = np.finfo(value.dtype).eps * 64 * max(1, folded.size)
    if np.allclose(value, folded, rtol=scale, atol=scale, equal_nan=True):
        return
    name = f"np.{ufunc.__name__}.{method}"
    raise NotDifferentiableError(
        f"{name} returned values that are not the fold it stands for "
        f"({ufunc.__name__}(... {ufunc.__name__}({ufunc.__name__}(x[0], x[1]), x[2]) ...)), at\n"
        f"{format_site(user_site())}\n"
        f"numpy {np.__version__} computes this {method} in another way for this memory layout "
        "(leaving elements out), so mutagrad cannot say what its derivative is.\n"
        f"Fix: write the fold itself: np.{ufunc.__name__}.accumulate(x, axis)[-1] along the "
        f"axis, or functools.reduce(np.{ufunc.__name__}, x)."
    )


def _plain_initial(initial: Any) -> Any:
    return None if initial is _NoValue or initial is None else initial


def _dtype_lanes(lanes: Any, dtype: Any) -> Any:
    """The lanes in the ``dtype`` numpy folds them in, when one is given."""
    if dtype is None or np.dtype(dtype) == np.result_type(lanes):
        return lanes
    return lanes.astype(dtype)


def _reduce_fold(
    ufunc: np.ufunc, rule: VjpRule, g: Any, x: Any, start: Any, axis: Any, dtype: Any,
    keepdims: bool, where: Any,
) -> tuple[Any, Any]:  # fmt: skip
    """``ufunc.reduce``'s cotangents of ``x`` and of the initial value ``start``."""
    shape = np.shape(x)
    axes = _reduced_axes(axis, len(shape))
    if 0 in shape:
        return np.zeros(shape), (None if start is None else np.zeros(()))
    lanes = _dtype_lanes(_to_lanes(x, axes), dtype)
    kept = tuple(shape[a] for a in range(len(shape)) if a not in axes)
    g = np.reshape(g, kept) if keepdims else g
    taking = None
    if where is not True and where is not _NoValue and where is not None:
        taking = _to_lanes(np.broadcast_to(np.asarray(unwrap(where), dtype=bool), shape), axes)
    gx, g_start = _fold_backward(rule, ufunc, lanes, g, start, taking, each=False)
    return _from_lanes(gx, shape, axes), g_start


def _fold_value(
    ufunc: np.ufunc, x: Any, axis: Any = 0, dtype: Any = None, keepdims: bool = False,
    initial: Any = _NoValue, where: Any = True,
) -> Any:  # fmt: skip
    """What the left fold gives for ``ufunc.reduce(x, ...)`` (numpy's result where it folds)."""
    x = np.asarray(x)
    axes = _reduced_axes(axis, x.ndim)
    if 0 in x.shape:
        return ufunc.reduce(x, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                            where=where)  # fmt: skip
    taking = None
    if where is not True and where is not None:
        taking = _to_lanes(np.broadcast_to(np.asarray(where, dtype=bool), x.shape), axes)
    lanes = _dtype_lanes(_to_lanes(x, axes), dtype)
    partials = _fold_partials(ufunc, lanes, _plain_initial(initial), taking)[0]
    last = partials[-1]
    if keepdims:
        last = np.reshape(last, tuple(1 if a in axes else n for a, n in enumerate(x.shape)))
    return last


def _reduce_fold_rule(ufunc: np.ufunc, rule: VjpRule) -> VjpRule:
    """``ufunc.reduce`` through the fold; ``initial=`` may come as a second argument, traced."""

    def fun(x: Any, *start: Any, **kwargs: Any) -> Any:
        if start:
            kwargs["initial"] = start[0]
        value = ufunc.reduce(x, **kwargs)
        _check_fold(ufunc, value, _fold_value(ufunc, x, **kwargs), "reduce")
        return value

    def backward(g: Any, x: Any, start: Any, kwargs: dict[str, Any]) -> tuple[Any, Any]:
        if start is None:
            start = _plain_initial(kwargs.get("initial", _NoValue))
        return _reduce_fold(ufunc, rule, g, x, start, kwargs.get("axis", 0),
                            kwargs.get("dtype"), kwargs.get("keepdims", False),
                            kwargs.get("where", True))  # fmt: skip

    def x_vjp(g: Any, ans: Any, x: Any, *start: Any, **kw: Any) -> Any:
        return backward(g, x, start[0] if start else None, kw)[0]

    by_gradient = through_gradient(x_vjp, _reduce_axes)

    @hand
    def jvp(tangents: list[Any], ans: Any, args: Any, kwargs: Any) -> Any:
        # Each output is a fold of its own lane: J t is the lane sum of the gradient times t.
        # A traced initial= enters every output: not done here.
        if len(tangents) > 1 and tangents[1] is not None:
            raise MissingForwardRuleError(missing_forward_rule_message(
                f"np.{ufunc.__name__}.reduce with a differentiated initial="))  # fmt: skip
        return by_gradient(tangents[:1], ans, args, kwargs)

    return VjpRule(
        f"{ufunc.__name__}.reduce",
        fun,
        (x_vjp, lambda g, ans, x, start, **kw: backward(g, x, start, kw)[1]),
        ((0, 1), (0, 1)),
        jvp=jvp,
    )


class ReduceMethod(CallRule):
    """``ufunc.reduce``: its closed form, or the fold; the fold when ``initial=`` is traced.

    Not a rule of a node: it picks the :class:`VjpRule` the call is recorded with.
    """

    __slots__ = ("fold", "plain")

    def __init__(self, ufunc: np.ufunc, plain: VjpRule, fold: VjpRule):
        super().__init__(f"{ufunc.__name__}.reduce")
        self.plain = plain
        self.fold = fold

    def call(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
        initial = (kwargs or {}).get("initial")
        if isinstance(initial, WrappedValue):
            assert kwargs is not None
            rest = {k: v for k, v in kwargs.items() if k != "initial"}
            if is_active(initial):
                return apply(self.fold, (*args, initial), rest)
            kwargs = {**rest, "initial": initial._raw}
        return apply(self.plain, args, kwargs)


def _reduce_axes(ndim: int, kwargs: dict[str, Any]) -> tuple[tuple[int, ...], bool]:
    """The axes ``ufunc.reduce`` removes (for the forward rules)."""
    return _reduced_axes(kwargs.get("axis", 0), ndim), kwargs.get("keepdims", False)
# The reduces whose vjps are those of np.sum, np.prod, np.max and np.min, which handle
# complex values (tests/rules/test_complex.py).
COMPLEX_REDUCES = (np.add, np.multiply, np.maximum, np.minimum)


def _closed_reduce(ufunc: np.ufunc, vjp: Callable[..., Any], reads: tuple[Any, ...]) -> VjpRule:
    def closed_vjp(g, ans, x, axis=0, keepdims=False, **kw):
        return vjp(g, ans, x, axis, keepdims, **kw)

    return VjpRule(
        f"{ufunc.__name__}.reduce",
        ufunc.reduce,
        (closed_vjp,),
        (reads,),
        jvp=through_gradient(closed_vjp, _reduce_axes),
        handles_complex=ufunc in COMPLEX_REDUCES,
    )


def _exponential_share(power: Callable[..., Any]) -> Callable[..., Any]:
    """logaddexp's (``power = np.exp``) and logaddexp2's reduce: ``g * power(x - ans)``."""

    def vjp(g, ans, x, axis, keepdims, where=_NoValue, **_):
        share = power(x - expand(ans, np.shape(x), axis, keepdims))
        return _masked(expand(g, np.shape(x), axis, keepdims) * share, where)

    return vjp


def _hypot_vjp(g, ans, x, axis, keepdims, where=_NoValue, **_):
    """hypot's reduce, sqrt of the sum of squares: ``g * x / ans``, as hypot's own rule
    (0 where ``ans`` is 0, as there)."""
    total = expand(ans, np.shape(x), axis, keepdims)
    share = x / np.where(total == 0, 1.0, total)
    return _masked(expand(g, np.shape(x), axis, keepdims) * share, where)


def _masked(g: Any, where: Any) -> Any:
    if where is _NoValue or where is None or where is True:
        return g
    return np.where(unwrap(where), g, 0.0)


_CLOSED_REDUCE: dict[Any, tuple[Callable[..., Any], tuple[Any, ...]]] = {
    np.add: (_sum_vjp, ()),
    np.multiply: (_prod_vjp, (0, ANS)),
    np.maximum: (_extremum_vjp, (0, ANS)),
    np.minimum: (_extremum_vjp, (0, ANS)),
    np.fmax: (_extremum_vjp, (0, ANS)),
    np.fmin: (_extremum_vjp, (0, ANS)),
    np.logaddexp: (_exponential_share(np.exp), (0, ANS)),
    np.logaddexp2: (_exponential_share(np.exp2), (0, ANS)),
    np.hypot: (_hypot_vjp, (0, ANS)),
}


def _reduce_method(ufunc: np.ufunc, rule: VjpRule) -> ReduceMethod:
    fold = _reduce_fold_rule(ufunc, rule)
    closed = _CLOSED_REDUCE.get(ufunc)
    return ReduceMethod(ufunc, _closed_reduce(ufunc, *closed) if closed else fold, fold)


# -- accumulate -------------------------------------------------------------------------


def _along_axis(jvp: Callable[..., Any]) -> Callable[..., Any]:
    """cumsum's or cumprod's jvp for ``accumulate``, whose axis defaults to 0 (not None)."""

    @hand
    def accumulate_jvp(tangents: list[Any], ans: Any, args: Any, kwargs: Any) -> Any:
        return jvp(tangents, ans, args, {"axis": (kwargs or {}).get("axis", 0)})

    return accumulate_jvp


def _accumulate_rule(ufunc: np.ufunc, rule: VjpRule) -> VjpRule:
    name = f"{ufunc.__name__}.accumulate"
    if ufunc is np.add:
        return VjpRule(name, ufunc.accumulate,
                       (lambda g, ans, x, axis=0, **_: _cumsum_vjp(g, ans, x, axis),),
                       ((),), jvp=_along_axis(_cumsum_jvp))  # fmt: skip
    if ufunc is np.multiply:
        return VjpRule(name, ufunc.accumulate,
                       (lambda g, ans, x, axis=0, **_: _cumprod_vjp(g, ans, x, axis),),
                       ((0, ANS),), jvp=_along_axis(_cumprod_jvp))  # fmt: skip

    def vjp(g: Any, ans: Any, x: Any, axis: Any = 0, dtype: Any = None, **_: Any) -> Any:
        shape = np.shape(x)
        axes = (normalize_axis_index(axis, len(shape)),)
        if 0 in shape:
            return np.zeros(shape)
        lanes = _dtype_lanes(_to_lanes(x, axes), dtype)
        gx, _ = _fold_backward(rule, ufunc, lanes, _to_lanes(g, axes), None, None, each=True)
        return _from_lanes(gx, shape, axes)

    return VjpRule(name, ufunc.accumulate, (vjp,), ((0,),), jvp=TRANSPOSED)


# -- reduceat ---------------------------------------------------------------------------


def _reduceat_rule(ufunc: np.ufunc, reduce: ReduceMethod) -> VjpRule:
    """Each segment ``x[i:j]`` a reduce (its own vjp), ``x[i]`` itself where ``j <= i``."""
    reduce_vjp = reduce.plain.vjps[0]
    assert reduce_vjp is not None
    folds = reduce.plain is reduce.fold

    def fun(x: Any, indices: Any, axis: Any = 0, dtype: Any = None) -> Any:
        value = ufunc.reduceat(x, indices, axis=axis, dtype=dtype)
        if folds:
            x = np.asarray(x)
            axis = normalize_axis_index(axis, x.ndim)
            starts = [int(i) for i in np.ravel(indices)]
            for k, lo in enumerate(starts):
                hi = max(starts[k + 1] if k + 1 < len(starts) else x.shape[axis], lo + 1)
                segment = np.take(x, np.arange(lo, hi), axis=axis)
                folded = _fold_value(ufunc, segment, axis=axis, dtype=dtype)
                _check_fold(ufunc, np.take(value, k, axis=axis), folded, "reduceat")
        return value

    def vjp(g: Any, ans: Any, x: Any, indices: Any, axis: Any = 0, dtype: Any = None,
            **_: Any) -> Any:  # fmt: skip
        shape = np.shape(x)
        axis = normalize_axis_index(axis, len(shape))
        n = shape[axis]
        starts = [int(i) for i in np.ravel(indices)]
        parts: list[list[Any]] = [[] for _ in range(n)]
        for k, lo in enumerate(starts):
            hi = starts[k + 1] if k + 1 < len(starts) else n
            gk = np.take(g, k, axis=axis)
            if hi <= lo:
                parts[lo].append(gk)
                continue
            segment = np.take(x, np.arange(lo, hi), axis=axis)
            total = np.take(ans, k, axis=axis)
            share = reduce_vjp(gk, total, segment, axis=axis, dtype=dtype)
            for j in range(lo, hi):
                parts[j].append(np.take(share, j - lo, axis=axis))
        zero = np.zeros(shape[:axis] + shape[axis + 1 :])
        return np.stack([sum(p[1:], p[0]) if p else zero for p in parts], axis=axis)

    return VjpRule(f"{ufunc.__name__}.reduceat", fun, (vjp, None), ((0, 1, ANS), ()),
                   jvp=TRANSPOSED)  # fmt: skip


# -- outer ------------------------------------------------------------------------------


class OuterMethod(CallRule):
    """``ufunc.outer(a, b)``: the ufunc of ``a`` reshaped to ``a.shape + (1,) * b.ndim`` and
    ``b``, which broadcast to numpy's result; the ufunc's own rule records it."""

    __slots__ = ("ufunc",)

    def __init__(self, ufunc: np.ufunc):
        super().__init__(f"{ufunc.__name__}.outer")
        self.ufunc = ufunc

    def call(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
        a, b = (v if isinstance(v, WrappedValue) else np.asarray(v) for v in map(array_like, args))
        column = np.reshape(a, np.shape(a) + (1,) * np.ndim(b))
        return self.ufunc(column, b, **(kwargs or {}))


# -- derived on first use ---------------------------------------------------------------


@on_rule_miss
def derive_method(key: Any) -> bool:
    """Register ``ufunc.method``'s rule from the ufunc's own (``key = (ufunc, method)``), if
    the ufunc is elementwise with two inputs and has a rule; whether it did."""
    if not isinstance(key, tuple) or key[1] not in METHODS:
        return False
    ufunc, method = key
    rule = elementwise_binary_rule(ufunc)
    if rule is None:
        return False
    if method == "outer":
        UFUNC_RULES[key] = OuterMethod(ufunc)
    elif method == "accumulate":
        UFUNC_RULES[key] = _accumulate_rule(ufunc, rule)
    else:
        known = UFUNC_RULES.get((ufunc, "reduce"))
        reduce = known if isinstance(known, ReduceMethod) else _reduce_method(ufunc, rule)
        UFUNC_RULES[(ufunc, "reduce")] = reduce
        if method == "reduceat":
            UFUNC_RULES[key] = _reduceat_rule(ufunc, reduce)
    return True


# The ufuncs whose reduce numpy's own reductions run (np.sum is add.reduce): ready now.
for _ufunc in (np.add, np.multiply, np.maximum, np.minimum):
    derive_method((_ufunc, "reduce"))
