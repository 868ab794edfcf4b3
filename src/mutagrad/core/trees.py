"""Nested argument structures (tuples, lists, dicts, namedtuples, attrs classes).

``flatten`` turns a structure into its leaves and a function that rebuilds a
structure of the same shape from new leaves; gradients mirror the arguments'
structure this way, with ``None`` for leaves that get no gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Any

import attrs
import numpy as np

_LEAF_TYPES = (np.ndarray, np.generic, float, int, str, bytes, type(None))


def flatten(tree: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    if type(tree) is tuple and all(_is_leaf(x) for x in tree):
        return list(tree), tuple  # the common case: a flat tuple of arrays and numbers
    leaves: list[Any] = []
    rebuild = _flatten_into(tree, leaves)
    return leaves, lambda new: rebuild(iter(new))


def _is_leaf(x: Any) -> bool:
    return isinstance(x, _LEAF_TYPES) or getattr(x, "_mutagrad_traced", False)


def _flatten_into(tree: Any, leaves: list[Any]) -> Callable[[Any], Any]:
    """Append the leaves of ``tree``; return a function taking them back from an iterator."""
    kind = type(tree)
    if _is_leaf(tree):
        leaves.append(tree)
        return next
    if kind is tuple or kind is list:
        if all(_is_leaf(item) for item in tree):  # a flat list of arrays: one step
            leaves.extend(tree)
            n = len(tree)
            return lambda it: kind(islice(it, n))
        parts = [_flatten_into(item, leaves) for item in tree]
        return lambda it: kind(part(it) for part in parts)
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # a namedtuple
        parts = [_flatten_into(item, leaves) for item in tree]
        return lambda it: kind(*(part(it) for part in parts))
    if kind is dict:
        keys = list(tree)
        parts = [_flatten_into(tree[k], leaves) for k in keys]
        return lambda it: {k: part(it) for k, part in zip(keys, parts)}
    if attrs.has(kind):
        names = [f.name for f in attrs.fields(kind) if f.init]
        parts = [_flatten_into(getattr(tree, name), leaves) for name in names]

        def rebuild_attrs(it: Any) -> Any:
            values = [part(it) for part in parts]
            return _AttrsGradient(kind, dict(zip(names, values)))

        return rebuild_attrs
    leaves.append(tree)  # any other object is a leaf
    return next


class _AttrsGradient:
    """The gradient of an attrs instance: the same field names, gradient values.

    A plain object rather than an instance of the class itself, whose
    validators and converters may reject gradients (``None`` for an int field).
    """

    def __init__(self, cls: type, fields: dict[str, Any]):
        self.__dict__.update(fields)
        self._cls = cls

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if k != "_cls")
        return f"{self._cls.__name__}Gradient({body})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _AttrsGradient) and self.__dict__ == other.__dict__
