"""Temporary elision in forward mode: ``(y - yh) ** 2`` squares the difference in its own memory.

numpy evaluates ``np.mean((y - yh) ** 2)`` with one fresh array: the
difference is a temporary only the expression refers to, so numpy squares it
in place (it proves that from the reference count and its C backtrace). At
N=1e6 each fresh 8 MB array costs its page faults on the first write and its
unmapping when freed, more than the pass over it. A ``jvp`` makes the
difference's tangent as well, and without elision both the square and its
tangent are fresh arrays too: four where numpy makes one.

:func:`into_temporary` computes ``a - b``, ``a + b``, ``a * b`` and ``a ** 2``
into the left operand's own memory, value and tangent, where it can prove
that nothing but the expression can observe that operand:

* the level is a forward level with none around it and no journal (plain
  ``jvp``/``jacfwd``): an enclosing level would record or differentiate the
  operation, ``linearize``'s journal would record its tangent step;
* the Python frame that called the operator is executing that very binary
  operator (so the operand is on its stack, not borrowed by a C caller such as
  ``operator.sub(*pair)``), and the operand's reference count is what a
  temporary's is at this point, measured once at import (:data:`TEMPORARY_REFERENCES`);
* the operand is a plain array value: no flag, node, capture, view or base,
  and its tangent (if any) is its own raw array at this level, no other;
* its raw array and its tangent own their memory, are writable, referenced by
  nothing else (no view, no weak reference), real floating point, at least
  :data:`MIN_ELIDED_BYTES`, and the result has their shape and dtype (the
  other operand a Python number, or an array of the same shape and dtype;
  ``**`` only by the constant 2).

Anything else takes the general path (:func:`mutagrad.traced.dispatch.binary`),
whose results these are bit for bit: the in-place numpy operators numpy's own
elision uses, and the general path's tangent formulas in the same order.
The operand's wrapper is dropped unobserved; the result is a new one.

Where the check cannot see: a C extension type whose operator forwards to a
traced array it holds with the only other reference (a Cython ``cdef class``
field), which numpy's C backtrace would see and a Python frame does not.
"""

from __future__ import annotations

import dis
import operator
import sys
from collections.abc import Callable
from sys import _getframe, getrefcount
from typing import Any
from weakref import getweakrefcount

import numpy as np

from mutagrad.core.engine import ForwardTrace, VjpRule, current_trace
from mutagrad.core.registry import UFUNC_RULES
from mutagrad.traced.tangents import set_tangent, tangent_of
from mutagrad.traced.value import WrappedArray, WrappedValue, operand

# numpy's own threshold: below it a fresh array comes from the allocator's free
# lists and costs less than proving an operand a temporary.
MIN_ELIDED_BYTES = 256 * 1024

# The in-place operator of each elided ufunc: what numpy's elision calls, so the
# value is numpy's bit for bit (and _square's ``**= 2`` squares, as ``** 2`` does).
_IN_PLACE: dict[np.ufunc, Callable[[Any, Any], Any]] = {
    np.add: operator.iadd,
    np.subtract: operator.isub,
    np.multiply: operator.imul,
}
_SOURCE: dict[np.ufunc, str] = {
    np.add: "a + b",
    np.subtract: "a - b",
    np.multiply: "a * b",
    np.power: "a ** b",
}


def _binary_instruction(source: str) -> bytes | None:
    """The opcode and argument of the binary operator in ``source`` (3.11's BINARY_OP with
    its operator), or None where the interpreter has no such instruction."""
    for instruction in dis.get_instructions(compile(source, "<elision>", "eval")):
        if instruction.opname == "BINARY_OP" and instruction.arg is not None:
            return bytes([instruction.opcode, instruction.arg])
    return None


def _executing(frame: Any) -> bytes:
    """The opcode and argument of the instruction ``frame`` is executing."""
    return frame.f_code.co_code[frame.f_lasti : frame.f_lasti + 2]


def _temporary_references() -> int:
    """The reference count an operator method sees for its left operand when only the
    caller's expression holds it (a local variable adds one), measured on a probe
    called as the traced operators are; -1 (never elide) where the count cannot tell a
    temporary from a named value or the caller's instruction cannot be read
    (an interpreter other than CPython 3.11-3.13, whose loads may borrow references)."""
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 13):
        return -1
    expected = _binary_instruction(_SOURCE[np.subtract])

    class Probe:
        def __sub__(self, other: Any) -> Any:
            return getrefcount(self), _executing(_getframe(1))

    def temporary() -> Any:
        return Probe() - 0

    def named() -> Any:
        probe = Probe()
        return probe - 0

    (count, instruction), (named_count, _) = temporary(), named()
    if expected is None or instruction != expected or named_count != count + 1:
        return -1
    return count


TEMPORARY_REFERENCES = _temporary_references()
_INSTRUCTIONS: dict[np.ufunc, bytes | None] = {
    ufunc: _binary_instruction(source) for ufunc, source in _SOURCE.items()
}
ELIDED = frozenset(_SOURCE) if TEMPORARY_REFERENCES > 0 else frozenset()


def into_temporary(ufunc: np.ufunc, a: Any, b: Any) -> WrappedArray | None:
    """``a <op> b`` computed into ``a``'s memory, value and tangent, where ``a`` is proved a
    temporary nothing else observes (see the module); None: take the general path.

    Called by the operator method itself, whose caller is frame 2, once the method
    saw ``a``'s data of :data:`MIN_ELIDED_BYTES` or more and its reference count equal
    :data:`TEMPORARY_REFERENCES`. (A WrappedScalar's data is a numpy scalar: one that large
    is a structured one, refused with its dtype below.)
    """
    raw = a._raw
    level = current_trace()
    if type(level) is not ForwardTrace or level.parent is not None or level.journal is not None:
        return None
    if a._flags or a._node is not None or a._captures is not None or a._base is not None:
        return None
    if a._views is not None:
        return None
    rule = UFUNC_RULES.get(ufunc)
    if type(rule) is not VjpRule or not rule.trusted:
        return None  # (a user's rule for the ufunc: its jvp is not the one written here)
    if _executing(_getframe(2)) != _INSTRUCTIONS[ufunc]:
        return None
    # (references: a._raw, raw, getrefcount's argument)
    if not _own_memory(raw, raw.dtype) or getrefcount(raw) != 3:
        return None
    tangents = a._tangents
    ta = None
    if tangents is not None:
        ta = tangents.get(level)
        if len(tangents) != 1 or type(ta) is not np.ndarray:
            return None  # (a Borrowed one is lent; one at another level is not ours to write)
        # (references: the dict, ta, getrefcount's argument)
        if not _own_memory(ta, raw.dtype) or getrefcount(ta) != 3:
            return None
    if ufunc is np.power:
        if type(b) not in (int, float) or b != 2:
            return None
        return _square(raw, ta, level)
    if type(b) is int or type(b) is float:
        rb, tb = b, None
    elif isinstance(b, WrappedValue) or type(b) is np.ndarray:
        rb, _ = operand(b, None)
        tb = tangent_of(b, level)
        if rb.shape != raw.shape or rb.dtype != raw.dtype:
            return None  # (a numpy scalar's shape is (), never the operand's)
        if tb is not None and type(tb) is not np.ndarray:
            return None  # (a caller's traced tangent, lent: numpy would dispatch to it)
    else:
        return None
    # (the tangent first: a product's reads a's old value)
    t = _product_tangent(raw, ta, rb, tb) if ufunc is np.multiply else _sum_tangent(ufunc, ta, tb)
    _IN_PLACE[ufunc](raw, rb)
    out = WrappedArray(raw)
    if t is not None:
        set_tangent(out, level, t)
    return out


def _own_memory(x: np.ndarray, dtype: np.dtype) -> bool:
    """``x`` owns its memory, writable, of real floating-point ``dtype``, and no weak
    reference reaches it. (Any layout: numpy's own elision keeps the temporary's, so the
    result is laid out as numpy's is.)"""
    return (
        x.base is None
        and x.dtype == dtype
        and dtype.kind == "f"
        and x.flags.writeable
        and not getweakrefcount(x)
    )


def _sum_tangent(ufunc: np.ufunc, ta: Any, tb: Any) -> Any:
    """The tangent of ``a + b`` (``a - b``), into ``ta`` where ``a`` has one: as the general
    path's one-pass rule (mutagrad.rules.ufuncs), ``tb`` negated for a difference."""
    if ta is None:
        if tb is None:
            return None
        return -tb if ufunc is np.subtract else tb.copy()
    if tb is not None:
        ufunc(ta, tb, out=ta)
    return ta


def _product_tangent(raw: np.ndarray, ta: Any, rb: Any, tb: Any) -> Any:
    """The tangent of ``a * b``, read from ``a``'s old value before the product overwrites
    it: ``ta * b + tb * a``, the general path's sum in its order, into ``ta``."""
    from_b = None if tb is None else tb * raw
    if ta is None:
        return from_b
    ta *= rb
    if from_b is not None:
        ta += from_b
    return ta


def _square(raw: np.ndarray, ta: Any, level: Any) -> WrappedArray:
    """``a ** 2`` into ``a``'s memory; its tangent ``(ta * a) * 2``, as the general path's
    (mutagrad.rules.ufuncs' power rule), read before the square overwrites ``a``."""
    if ta is not None:
        ta *= raw
        ta *= 2
    raw **= 2
    out = WrappedArray(raw)
    if ta is not None:
        set_tangent(out, level, ta)
    return out
