"""Nested argument structures (pytrees): tuples, lists, dicts, OrderedDicts, defaultdicts,
namedtuples, dataclasses and attrs classes.

``flatten`` turns a structure into its leaves and a :class:`Rebuild` that
makes a structure of the same shape from new leaves. Arguments rebuilt for
``f`` keep their classes (an attrs or dataclass instance, with its methods,
whose fields now hold traced values); gradients mirror the structure with
``None`` for leaves that get no gradient, and the gradient of an attrs or
dataclass instance is a plain object with the same field names (the class's
validators, converters and ``__post_init__`` may refuse gradients).
"""

from __future__ import annotations

import copy
import dataclasses
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from itertools import islice
from typing import Any

import attrs
import numpy as np

from mutagrad.core.engine import TRACED

_LEAF_TYPES = (np.ndarray, np.generic, float, int, str, bytes, type(None))
_NDARRAY = np.ndarray

# part(leaves, gradient) -> the rebuilt part; ``leaves`` is an iterator.
Part = Callable[[Any, bool], Any]


class Rebuild:
    """Makes a structure like the flattened one: ``rebuild(leaves)`` for values,
    ``rebuild(leaves, gradient=True)`` for a gradient of it."""

    __slots__ = ("part",)

    def __init__(self, part: Part):
        self.part = part

    def __call__(self, new: list[Any], gradient: bool = False) -> Any:
        return self.part(iter(new), gradient)


def _flat_tuple(leaves: Any, gradient: bool) -> tuple[Any, ...]:
    return tuple(leaves)


FLAT_TUPLE = Rebuild(_flat_tuple)


def flatten(tree: Any) -> tuple[list[Any], Rebuild]:
    if type(tree) is tuple:
        for x in tree:
            # (an ndarray, the commonest leaf, without building the tuple of kinds)
            if type(x) is not _NDARRAY and not isinstance(x, (*_LEAF_TYPES, TRACED.kind)):
                break
        else:  # the common case: a flat tuple of arrays and numbers (a loop, not all():
            return list(tree), FLAT_TUPLE  # every gradient call comes here)
    leaves: list[Any] = []
    return leaves, Rebuild(_flatten_into(tree, leaves))


def _is_leaf(x: Any) -> bool:
    return isinstance(x, (*_LEAF_TYPES, TRACED.kind))


def _leaf(it: Any, gradient: bool) -> Any:
    return next(it)


def _flatten_into(tree: Any, leaves: list[Any]) -> Part:
    """Append the leaves of ``tree``; return the function that takes them back."""
    kind = type(tree)
    if _is_leaf(tree):
        leaves.append(tree)
        return _leaf
    if kind is tuple or kind is list:
        if all(_is_leaf(item) for item in tree):  # a flat list of arrays: one step
            leaves.extend(tree)
            n = len(tree)
            return lambda it, gradient: kind(islice(it, n))
        parts = [_flatten_into(item, leaves) for item in tree]
        return lambda it, gradient: kind(part(it, gradient) for part in parts)
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # a namedtuple
        parts = [_flatten_into(item, leaves) for item in tree]
        return lambda it, gradient: kind(*(part(it, gradient) for part in parts))
    if kind is dict or kind is OrderedDict or kind is defaultdict:
        return _mapping(tree, leaves)
    if attrs.has(kind):
        return _fields(tree, [f.name for f in attrs.fields(kind) if f.init], leaves)
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        return _fields(tree, [f.name for f in dataclasses.fields(tree) if f.init], leaves)
    leaves.append(tree)  # any other object is a leaf (api refuses what it cannot differentiate)
    return _leaf


def _mapping(tree: Any, leaves: list[Any]) -> Part:
    """A dict, OrderedDict or defaultdict: the same kind back, keys in the same order."""
    keys = list(tree)
    parts = [_flatten_into(tree[k], leaves) for k in keys]
    factory = tree.default_factory if type(tree) is defaultdict else None

    def rebuild(it: Any, gradient: bool) -> Any:
        items = [(k, part(it, gradient)) for k, part in zip(keys, parts)]
        if type(tree) is defaultdict:
            return defaultdict(factory, items)
        return type(tree)(items)

    return rebuild


def _fields(tree: Any, names: list[str], leaves: list[Any]) -> Part:
    """An attrs or dataclass instance: values in a copy of it, gradients in a fields object.

    The copy is the caller's object with its fields replaced, set without its
    ``__init__``, so its validators and converters (``converter=np.asarray``)
    never see a traced value; frozen classes included.
    """
    parts = [_flatten_into(getattr(tree, name), leaves) for name in names]
    kind = type(tree)

    def rebuild(it: Any, gradient: bool) -> Any:
        values = [part(it, gradient) for part in parts]
        if gradient:
            return FieldsGradient(kind, dict(zip(names, values)))
        rebuilt = copy.copy(tree)
        for name, value in zip(names, values):
            object.__setattr__(rebuilt, name, value)
        return rebuilt

    return rebuild


class FieldsGradient:
    """The gradient of an attrs or dataclass instance: the same field names, gradient values.

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
        return isinstance(other, FieldsGradient) and self.__dict__ == other.__dict__
