"""Fingerprints of a recorded tape: what its backward sweep would read, node by node.

``checkpointed`` records its block twice, once in the forward pass and once
in the backward pass, and compares the two fingerprints before it sweeps the
second tape (:mod:`mutagrad.checkpoint` says why equal fingerprints mean an
equal gradient). For every node that is not an input of the block, in the
order recorded:

* its rule (the object itself, compared by identity);
* its structure: which input of the block or earlier node each of its inputs
  is (or a constant), and its output's shape and dtype;
* a 128-bit XXH3 hash of what its pullback reads besides the cotangent
  (:meth:`Rule.pullback_reads <mutagrad.core.engine.Rule.pullback_reads>`):
  saved arrays by dtype, shape and bytes, saved numbers and keywords by type
  and value, a user's pullback or hook function by its code and what its
  closure cells and defaults hold (a few levels deep, as
  :mod:`mutagrad.reachable` walks objects).

It hashes each saved array once: one pass over the memory the block's
pullbacks would have kept, per run. Nothing here runs outside ``checkpointed``.
"""

from __future__ import annotations

import array
import collections
import decimal
import random
import struct
import sys
import types
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy import float64
from xxhash import xxh3_128

from mutagrad.core.engine import Capture, Node, Rule
from mutagrad.core.memory import Region
from mutagrad.core.tangents import Meta
from mutagrad.diagnostics.sites import Site
from mutagrad.traced.value import WrappedValue

# Saved values hashed by type and value (repr is exact for these).
_EXACT = frozenset({type(None), bool, int, complex, str, bytes, type(Ellipsis), range})
# Values named by their repr: a ufunc, a class (and a dtype; a builtin by its name).
_BY_NAME = frozenset({np.ufunc, type})
_DOUBLE = struct.Struct("<d").pack
# Named by what they are, not by what they hold (which they do not hold: a module's
# attributes and a function's globals are read when the pullback runs, as they would
# be by the pullback the recomputation stands for).
_DESCRIPTORS = (
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
)
# Builtin types whose instances the hash reads through their items or bytes.
_SEQUENCES = (tuple, list, collections.deque)
_SETS = (set, frozenset)
_BYTES_LIKE = (bytearray, array.array, memoryview)
_SCALARS = (int, float, complex, str, bytes)
_HEAPTYPE = 1 << 9
_POINTER = struct.calcsize("P")
# (from 3.11 an instance's __dict__ is kept before the object, not in its basic size)
_DICT_SIZE = 0 if sys.version_info >= (3, 11) else _POINTER

# One node: its rule, a hash of its structure, the hash of what the pullbacks of the nodes
# up to it read, its site.
NodePrint = tuple[Rule, int, int, "Site | None"]


class TapePrint:
    """The fingerprint of one recording of a block: one :data:`NodePrint` per node that
    is not an input, and which of the nodes (or inputs) its output is (-1: a constant)."""

    __slots__ = ("nodes", "output")

    def __init__(self, nodes: list[NodePrint], output: int):
        self.nodes = nodes
        self.output = output

    def digest(self) -> tuple[Any, ...]:
        """The whole fingerprint as plain numbers (a nested block's, hashed with its node)."""
        last = self.nodes[-1][2] if self.nodes else 0
        return (last, self.output, *((id(r), s) for r, s, _, _ in self.nodes))


def tape_fingerprint(
    inputs: Sequence[Node | None], nodes: list[Node], output: Node | None
) -> TapePrint:
    """The fingerprint of ``nodes`` (a block's nodes, in recorded order), whose inputs
    are ``inputs`` (the block's arguments' and closed-over values' input nodes; None
    for an argument that got none, which then shifts the positions of the others).

    One hash runs over the whole tape, each node's reads marked off from the next;
    a node keeps its value there, so the first node whose hash differs is the first
    whose reads do.

    A value a pullback reads whose contents cannot be hashed raises
    :class:`Unfingerprintable`, naming the node.
    """
    position = {id(n): i for i, n in enumerate(inputs) if n is not None}
    prints: list[NodePrint] = []
    hasher = _Hasher()
    h = hasher.h
    update, feed, digest, get = h.update, hasher.feed, h.intdigest, position.get
    for node in nodes:
        key = id(node)
        if key in position:
            continue
        # (an input of another tape, an enclosing call's: -2)
        links = tuple([-1 if n is None else get(id(n), -2) for n in node.inputs])
        position[key] = len(position)
        update(b"|")
        try:
            for part in node.rule.pullback_reads(node):
                if type(part) is tuple:  # (saved values: walked here, as many as they are)
                    update(b"(")
                    for value in part:
                        feed(value)
                    update(b")")
                else:
                    feed(part)
        except Unfingerprintable as error:
            error.node = node
            raise
        except RecursionError:  # (a structure nested deeper than Python's stack)
            raise Unfingerprintable("nested too deeply to compare", node) from None
        prints.append((node.rule, hash((links, node.shape, node.dtype)), digest(), node.site))
    return TapePrint(prints, -1 if output is None else get(id(output), -2))


def first_difference(first: TapePrint, again: TapePrint) -> tuple[int, str] | None:
    """Where ``again`` stops recording what ``first`` recorded: the index of the node, and
    ``"rule"`` (another operation), ``"structure"`` (other inputs, or an output of another
    shape), ``"reads"`` (other values read), ``"count"`` (one of them has more nodes) or
    ``"output"`` (another node is returned); None when they are the same."""
    for i, (a, b) in enumerate(zip(first.nodes, again.nodes)):
        if a[0] is not b[0]:
            return i, "rule"
        if a[1] != b[1]:
            return i, "structure"
        if a[2] != b[2]:
            return i, "reads"
    if len(first.nodes) != len(again.nodes):
        return min(len(first.nodes), len(again.nodes)), "count"
    if first.output != again.output:
        return len(first.nodes), "output"
    return None


class _Hasher:
    """A tape's hash: values fed one after the other, each container, function or object
    walked once (met again, it is hashed as the order of the first meeting, so shared
    or cyclic structures cost nothing more; ``seen`` holds them meanwhile, so that no
    other object takes their id)."""

    __slots__ = ("h", "seen")

    def __init__(self) -> None:
        self.h = xxh3_128()
        self.seen: dict[int, tuple[int, Any]] = {}

    def feed(self, value: Any) -> None:
        """``value``'s type, and its contents as a pullback would read them."""
        h = self.h
        kind = type(value)
        # (the common cases first: a saved array, a number of a traced loop, nothing)
        if kind is Capture:
            if value.poisoned_by is not None:  # (reading it raises, in either run)
                h.update(b"poisoned;")
            else:
                self.array(value.data)
        elif kind is float64:
            h.update(b"d")
            h.update(value.tobytes())
        elif value is None:
            h.update(b"None;")
        elif kind is float:
            h.update(b"f")
            h.update(_DOUBLE(value))
        elif kind is int:
            h.update(b"i%d;" % value)
        elif kind is bool:
            h.update(b"T" if value else b"F")
        elif kind in _EXACT or kind in _BY_NAME:
            h.update(f"{kind.__name__}:{value!r};".encode())
        elif isinstance(value, np.ndarray):
            self.array(value)
        elif isinstance(value, np.generic):
            h.update(f"{value.dtype.str}:".encode())
            h.update(value.tobytes())
        elif isinstance(value, WrappedValue):
            self.feed(value._raw)
        elif kind is Meta:
            h.update(f"meta:{value.shape}:{value.dtype.str};".encode())
        elif kind is Region:
            h.update(f"region:{value.offset}:{value.shape}:{value.strides}:{value.layout}:"
                     f"{value.overlapping};".encode())  # fmt: skip
        elif isinstance(value, np.dtype):
            h.update(f"dtype:{value.str}:{value!r};".encode())
        elif kind is slice:
            h.update(b"slice:")
            for part in (value.start, value.stop, value.step):
                self.feed(part)
        elif isinstance(value, (type, types.ModuleType, np.ufunc)):
            h.update(f"{kind.__name__}:{getattr(value, '__name__', '')}:{value!r};".encode())
        elif isinstance(value, _DESCRIPTORS):
            h.update(f"{kind.__name__}:{value.__objclass__!r}.{value.__name__};".encode())
        elif id(value) in self.seen:
            h.update(f"seen:{self.seen[id(value)][0]};".encode())
        else:
            self.seen[id(value)] = (len(self.seen), value)
            try:
                self.walk(value, kind)
            except Unfingerprintable as error:
                error.path.append(value)
                raise

    def walk(self, value: Any, kind: type) -> None:
        """A container, a function or an object, met for the first time."""
        h = self.h
        feed = self.feed
        if kind is tuple or kind is list:
            h.update(f"{kind.__name__}[{len(value)}]:".encode())
            for item in value:
                feed(item)
        elif kind is dict:
            h.update(f"dict[{len(value)}]:".encode())
            for key, item in value.items():
                feed(key)
                feed(item)
        elif kind is types.FunctionType:
            self.function(value)
        elif kind is types.BuiltinFunctionType or kind is types.MethodWrapperType:
            # (its repr may hold its object's address)
            h.update(f"builtin:{value.__qualname__}:".encode())
            if not isinstance(value.__self__, types.ModuleType):
                feed(value.__self__)
            else:
                h.update(value.__self__.__name__.encode())
        else:  # its type, then what it holds
            h.update(f"{kind.__module__}.{kind.__qualname__}:".encode())
            self.contents(value, kind)

    def contents(self, value: Any, kind: type) -> None:
        """What an object holds: the state of the builtin or C type it derives from, if
        any, then its attributes and slots."""
        base = _c_base(kind)
        if base is not None:
            self.c_state(value, base)
        attributes = getattr(value, "__dict__", None)
        if attributes is not None:
            self.feed(attributes)
        for cls in kind.__mro__:
            slots = vars(cls).get("__slots__", ())
            for slot in (slots,) if isinstance(slots, str) else slots:
                if slot in ("__dict__", "__weakref__"):
                    continue
                if slot.startswith("__") and not slot.endswith("__"):  # (name-mangled)
                    slot = f"_{cls.__name__.lstrip('_')}{slot}"
                self.h.update(f"slot:{slot}:".encode())
                self.feed(getattr(value, slot, _EMPTY_SLOT))

    def c_state(self, value: Any, base: type) -> None:
        """The state an object keeps in C, as ``base`` (its first type written in C) keeps
        it; refused when the hash cannot read it."""
        h, feed = self.h, self.feed
        if isinstance(value, np.random.Generator):
            feed(value.bit_generator.state)
        elif isinstance(value, np.random.BitGenerator):
            feed(value.state)
        elif isinstance(value, np.random.RandomState):
            feed(value.get_state(legacy=False))
        elif isinstance(value, random.Random):
            feed(value.getstate())
        elif isinstance(value, dict):
            feed(dict(value))
            feed(getattr(value, "default_factory", None))
        elif isinstance(value, _SEQUENCES):
            feed(list(value))
        elif isinstance(value, _SETS):
            # (in no order: equal sets may iterate differently; each item hashed alone)
            digests = sorted(_Hasher.of(item) for item in value)
            h.update(f"set[{len(digests)}]:".encode())
            for digest in digests:
                h.update(digest)
        elif isinstance(value, _SCALARS):
            text = base.__repr__(value)  # type: ignore[call-arg]  # (the builtin value's repr)
            h.update(f"{base.__name__}:{text};".encode())
        elif isinstance(value, decimal.Decimal):
            h.update(f"{value!r};".encode())
        else:
            try:
                with memoryview(value) as view:  # bytes-like: its bytes
                    h.update(f"buffer:{view.format}:{view.shape};".encode())
                    h.update(view.tobytes())
                    return
            except (TypeError, ValueError):
                pass
            try:  # (what pickle would rebuild it from: a bound method, a partial, ...)
                reduced = value.__reduce_ex__(4)
            except Exception:  # (any refusal to pickle: it cannot be read)
                raise Unfingerprintable("an object whose contents mutagrad cannot "
                                        "read (of a type written in C)") from None  # fmt: skip
            feed(reduced)

    @staticmethod
    def of(value: Any) -> bytes:
        """``value``'s hash alone."""
        hasher = _Hasher()
        hasher.feed(value)
        return hasher.h.digest()

    def array(self, a: np.ndarray) -> None:
        self.h.update(f"array:{a.dtype.str}:{a.shape};".encode())
        if a.dtype.hasobject:
            self.feed(a.tolist())
        else:
            # (an ndarray is a buffer, which numpy's stubs say only from Python 3.12)
            self.h.update(a if a.flags.c_contiguous else np.ascontiguousarray(a))  # type: ignore[arg-type]

    def function(self, fn: types.FunctionType) -> None:
        """A function by its code, and what it closes over and defaults to: the values it
        took when it was made (a pullback's residuals). Its globals it reads when called,
        as the pullback it stands for would."""
        code = fn.__code__
        self.h.update(f"function:{code.co_filename}:{code.co_firstlineno}:"
                      f"{code.co_qualname}:".encode())  # fmt: skip
        self.h.update(code.co_code)
        self.feed(fn.__defaults__)
        self.feed(fn.__kwdefaults__)
        for cell in fn.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                self.h.update(b"empty cell;")
                continue
            self.feed(contents)


class Unfingerprintable(Exception):
    """A value a pullback reads (``path[0]``, held by the others in turn, up to what the
    node's pullback reads itself) whose contents the hash cannot read."""

    def __init__(self, why: str, node: Node | None = None):
        super().__init__(why)
        self.why = why
        self.path: list[Any] = []  # (filled in as it passes the values that hold it)
        self.node = node


_EMPTY_SLOT = object()  # (an unset slot: hashed by this, the same in both runs)


def _c_base(kind: type) -> type | None:
    """The type below ``object`` whose instances keep state in C that ``kind`` derives
    from (``dict`` for a subclass of it), or None when ``kind`` is made of classes
    defined in Python only, whose instances hold everything in their ``__dict__`` and
    slots."""
    for cls in kind.__mro__[:-1]:
        if not _python_class(cls):
            return cls
    return None


def _python_class(cls: type) -> bool:
    """Whether ``cls`` is a class statement's: a heap type that adds nothing to its base's
    layout but its slots, ``__dict__`` and ``__weakref__``."""
    base = cls.__base__
    if base is None or not cls.__flags__ & _HEAPTYPE:
        return False
    own = vars(cls)
    slots = own.get("__slots__", ())
    slots = (slots,) if isinstance(slots, str) else slots
    added = sum(1 for slot in slots if slot not in ("__dict__", "__weakref__"))
    size = base.__basicsize__ + _POINTER * (added + ("__weakref__" in own))
    size += _DICT_SIZE * ("__dict__" in own)
    return cls.__basicsize__ == size and cls.__itemsize__ == base.__itemsize__


__all__ = ["TapePrint", "Unfingerprintable", "first_difference", "tape_fingerprint"]
