"""The forward step: each forward level's tangent of what an operation computed or wrote.

Right after an operation computes its value (and the reverse levels recorded
their node), each forward level its trace sees (``trace.forward``, outermost
first) gets the output's tangent from its rule's jvp. **A level's jvp runs at
its parent**: ``STATE`` is set to the level's parent while it computes, and
the arguments and output are passed as they are, so the levels outside
differentiate the jvp computation itself (a reverse level records it, a
forward level computes its tangent: that is how forward over forward and
reverse over forward nest). With no level outside, the jvp runs on the raw
arrays: the fast path. Outer levels go first because an inner level's jvp
reads the output as the outer levels see it, tangents included.

A write writes the tangent beside the value (:func:`forward_write`,
:func:`forward_into`): at the same place of the written array's tangent,
zeros where the value has none.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mutagrad.core.engine import STATE, Trace, complex_refusal
from mutagrad.core.jvps import TRANSPOSED, involves_complex, is_complex_exact
from mutagrad.core.tangents import cotangent_dtype
from mutagrad.diagnostics.messages import missing_forward_rule_message
from mutagrad.diagnostics.sites import user_site
from mutagrad.errors import MissingForwardRuleError
from mutagrad.traced.tangents import (
    indexed_tangent,
    set_tangent,
    tangent_of,
    tangent_view,
    writable_tangent,
    write_tangent,
)
from mutagrad.traced.value import WrappedValue


def forward_result(
    rule: Any, args: Any, raw: Any, out: WrappedValue, kwargs: dict[str, Any] | None, trace: Trace
) -> WrappedValue:
    """Give ``out``, the value ``rule`` computed from ``args`` (raw data ``raw``), its
    tangent at every forward level of ``trace``; returns ``out``."""
    for level in trace.forward:
        if level.journal is not None:  # (linearize: recorded for f_jvp)
            level.journal.result(rule, args, raw, out, kwargs, level)
            continue
        tangents = [tangent_of(a, level) for a in args]
        for t in tangents:
            if t is not None:
                break
        else:
            continue
        t = level_jvp(rule, level, tangents, args, raw, out, kwargs)
        if t is not None:
            set_tangent(out, level, t)
    return out


def level_jvp(
    rule: Any,
    level: Any,
    tangents: list[Any],
    args: Any,
    raw: Any,
    ans: WrappedValue,
    kwargs: dict[str, Any] | None,
) -> Any:
    """``rule``'s jvp at ``level``, run at the level's parent, finished to ``(k,) + ans.shape``."""
    jvp = rule.jvp
    if jvp is None:
        name, user = (f"np.{rule.name}", None) if rule.trusted else (rule.name, "defvjp")
        raise MissingForwardRuleError(missing_forward_rule_message(name, user))
    parent = level.parent
    if parent is None:
        return raw_jvp(rule, tangents, ans._raw, raw, kwargs, level.width)
    if involves_complex(ans._raw, tangents):
        jvp = complex_jvp(rule)
    kw = kwargs if kwargs and rule.params else None
    token = STATE.set(parent)
    try:
        return _finished(jvp(tangents, ans, args, kw), level.width, ans, tangents, jvp)
    finally:
        STATE.reset(token)


def raw_jvp(
    rule: Any, tangents: list[Any], ans: Any, raw: Any, kwargs: dict[str, Any] | None, width: int
) -> Any:
    """``rule``'s jvp on raw arrays (at a level with no level around it), finished to
    ``(width,) + ans.shape``; also what ``linearize``'s replay calls."""
    jvp = complex_jvp(rule) if involves_complex(ans, tangents) else rule.jvp
    kw = kwargs if kwargs and rule.params else None
    return _finished(jvp(tangents, ans, raw, kw), width, ans, tangents, jvp)


# The forward rules of hand-written jvps not marked right for complex values: their
# reverse rules transposed (see complex_jvp), made the first time complex values meet them.
_TRANSPOSED_FOR_COMPLEX: dict[Any, Any] = {}


def complex_jvp(rule: Any) -> Any:
    """The forward rule of ``rule`` where complex values meet it: its own where it is marked
    right for them (mutagrad.core.jvps), else (a hand-written one for real matrices,
    ``cholesky``'s, ``eigh``'s) its vjps transposed, exact as they are. A rule whose vjps are
    not right for complex values is refused by name, as reverse mode refuses it."""
    if not rule.handles_complex:
        raise complex_refusal(rule, user_site())
    if is_complex_exact(rule.jvp):
        return rule.jvp
    jvp = _TRANSPOSED_FOR_COMPLEX.get(rule)
    if jvp is None:
        jvp = _TRANSPOSED_FOR_COMPLEX[rule] = TRANSPOSED.bind(rule.applied, rule.vjps)
    return jvp


def _finished(t: Any, width: int, ans: Any, tangents: list[Any], jvp: Any) -> Any:
    """A jvp's result as the output's tangent: its full shape and dtype, sharing no memory
    with an argument's tangent (a write into either must not change the other)."""
    if t is None:
        return None
    shape = (width, *ans.shape)
    if t.shape != shape:
        t = np.broadcast_to(t, shape)
    dtype = cotangent_dtype(ans.dtype)
    if t.dtype != dtype:
        if t.dtype.kind == "c" and dtype.kind != "c":
            # A complex tangent of a real value: the value is a cast (astype, copy into a
            # real dtype), which keeps the real part, and so does its derivative.
            t = np.real(t)
        t = t.astype(dtype)
    else:
        for ti in tangents:
            if ti is not None and _aliases(t, ti):
                return t.copy()
    return t


def _aliases(t: Any, other: Any) -> bool:
    if isinstance(t, WrappedValue):
        return t._base is not None or _aliases(t._raw, other)
    raw = other._raw if isinstance(other, WrappedValue) else other
    return type(t) is np.ndarray and type(raw) is np.ndarray and np.may_share_memory(t, raw)


def forward_element(w: WrappedValue, key: Any, out: WrappedValue, trace: Trace) -> WrappedValue:
    """Give ``out = w[key]`` (an element, or an advanced index: a copy) its tangents."""
    for level in trace.forward:
        if level.journal is not None:
            level.journal.element(w, key, out, level)
            continue
        t = tangent_of(w, level)
        if t is None:
            continue
        parent = level.parent
        if parent is None:
            set_tangent(out, level, indexed_tangent(t, key))
            continue
        token = STATE.set(parent)
        try:
            set_tangent(out, level, indexed_tangent(t, key))
        finally:
            STATE.reset(token)
    return out


def forward_write(
    w: WrappedValue, base: WrappedValue, key: Any, mask: Any, winners: Any, value: Any,
    trace: Trace,
) -> None:  # fmt: skip
    """After ``w[key] = value`` (or ``np.copyto(w, value, where=mask)``): write the value's
    tangent (zeros for a constant) at the same place of ``w``'s tangent, at every level."""
    for level in trace.forward:
        if level.journal is not None:
            level.journal.write(w, base, key, mask, winners, value, level)
            continue
        tv = tangent_of(value, level)
        tangents = base._tangents
        if tv is None and (tangents is None or tangents.get(level) is None):
            continue  # zeros written over zeros
        _write_at_level(w, base, level, key, mask, winners, tv)


def _write_at_level(
    w: WrappedValue, base: WrappedValue, level: Any, key: Any, mask: Any, winners: Any, t: Any
) -> None:
    """Write tangent ``t`` (None: zeros) at ``key`` of ``w``'s tangent at ``level``: on raw
    arrays, or recorded by the level around it when there is one."""
    parent = level.parent
    if parent is None:
        write_tangent(_place(w, base, level, False), key, mask, winners, t)
        return
    token = STATE.set(parent)
    try:
        write_tangent(_place(w, base, level, True), key, mask, winners, t)
    finally:
        STATE.reset(token)


def _place(w: WrappedValue, base: WrappedValue, level: Any, traced: bool) -> Any:
    """The tangent of ``w`` within its base's, made writable: where a write into ``w`` lands."""
    t = writable_tangent(base, level, level.width, traced)
    if w is base:
        return t
    return tangent_view(w._raw, base._raw, t)


def forward_into(
    rule: Any, inputs: Any, kept: tuple[list[Any], list[Any] | None], out: WrappedValue,
    base: WrappedValue, kwargs: dict[str, Any] | None, trace: Trace,
) -> None:  # fmt: skip
    """After ``rule(*inputs)`` was written into ``out`` in place: write its tangent there.

    ``kept`` holds the inputs as the jvp must read them, the values before the
    write (:func:`inputs_kept`): raw, and traced for levels with levels around
    them. Level by level, outermost first, the tangent is computed from the
    inputs' tangents (not yet written at that level) and written; an inner
    level's jvp reads the output with its outer tangents already new.
    """
    kept_raw, kept_traced = kept
    for level in trace.forward:
        if level.journal is not None:
            level.journal.into(rule, inputs, kept_raw, out, base, kwargs, level)
            continue
        tangents = [tangent_of(a, level) for a in inputs]
        t = None
        if rule is not None and any(t is not None for t in tangents):
            args = kept_raw if level.parent is None else kept_traced
            t = level_jvp(rule, level, tangents, args, kept_raw, out, kwargs)
        own = base._tangents
        if t is None and (own is None or own.get(level) is None):
            continue  # a constant written over a constant
        if out is base:  # the old tangent is gone: no copy into it
            if t is None:
                assert own is not None  # (a constant over a constant continued above)
                del own[level]
            else:
                set_tangent(base, level, t)
            continue
        _write_at_level(out, base, level, Ellipsis, None, None, t)


def inputs_kept(
    rule: Any, inputs: Any, raw: list[Any], target: np.ndarray, trace: Trace
) -> tuple[list[Any], list[Any] | None]:
    """The inputs an in-place operation's jvp reads, as they are before it writes ``target``.

    An input that shares memory with ``target`` and that the jvp reads
    (``np.sin(x, out=x)``) is copied: raw for the levels with no level around
    them, and, when some level has one, also as a traced copy (made at
    ``trace``, so the levels outside see a copy of the old value, tangents
    included). Returns ``(raw, traced or None)``.
    """
    reads = getattr(rule, "reads", None)
    kept_raw = list(raw)
    nested = any(level.parent is not None for level in trace.forward)
    kept_traced = list(inputs) if nested else None
    for i, r in enumerate(raw):
        if type(r) is np.ndarray and _read(reads, i) and np.may_share_memory(r, target):
            kept_raw[i] = r.copy()
            if kept_traced is not None and isinstance(inputs[i], WrappedValue):
                kept_traced[i] = np.copy(inputs[i])
    return kept_raw, kept_traced


def _read(reads: Any, i: int) -> bool:
    """Whether some vjp (hence the jvp derived from it) reads argument ``i``."""
    if reads is None:
        return True
    return any(i in r for r in reads)
