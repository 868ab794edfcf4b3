"""The pieces of Python text statements are made of: index texts, literals, and numpy probes.

Pure functions of shapes and texts, shared by every statement kind:
:func:`regions` and :func:`fancy_keys` list the basic and advanced indexes a
shape allows (with the shapes they select), :func:`array_literal` and
:func:`mask_literal` write constants, :func:`numpy_result` asks numpy what an
expression gives (its shape, dtype, and whether it is a view).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "FLOATING",
    "FULL",
    "REAL",
    "array_literal",
    "fancy_keys",
    "mask_literal",
    "numpy_result",
    "promote",
    "regions",
]

#: dtype codes of the values statements compute with: real floats, and complex too.
REAL = ("f8", "f4")
FLOATING = ("f8", "f4", "c16")
FULL = slice(None)


def _key_text(key: Any) -> str:
    if key is Ellipsis:
        return "[...]"
    parts = key if isinstance(key, tuple) else (key,)
    return "[" + ", ".join(_part_text(p) for p in parts) + "]"


def _part_text(part: Any) -> str:
    if isinstance(part, slice):
        start = "" if part.start is None else str(part.start)
        stop = "" if part.stop is None else str(part.stop)
        return f"{start}:{stop}" + ("" if part.step is None else f":{part.step}")
    return str(part)


def _valid_keys(shape: tuple[int, ...], keys: list[Any]) -> list[tuple[Any, tuple[int, ...]]]:
    """The ``keys`` that index an array of ``shape`` and select something, with the shapes."""
    probe = np.empty(shape)
    valid = []
    for key in keys:
        try:
            selected = probe[key]
        except IndexError:
            continue
        if np.size(selected):
            valid.append((key, np.shape(selected)))
    return valid


@functools.cache
def regions(shape: tuple[int, ...]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """(index text, result shape) of the non-empty basic indexes used on arrays of ``shape``."""
    reverse = slice(None, None, -1)
    if len(shape) == 1:
        keys: list[Any] = [
            *(Ellipsis, 0, -1, 1),
            *(slice(1, 3), slice(None, 2), slice(2, None), slice(None, None, 2)),
            *(slice(1, None, 2), reverse, slice(None, None, -2)),
            *(slice(-2, None, -1), slice(None, -1), slice(1, None)),
        ]
    elif len(shape) == 2:
        keys = [
            *(Ellipsis, 0, -1, (0, 1), (-1, 0), (FULL, 0), (FULL, slice(1, None))),
            *(slice(1, None), (reverse, slice(None, None, 2)), reverse, (FULL, reverse)),
            *((1, slice(None, 2)), (slice(None, 2), slice(None, 2)), (reverse, -1)),
        ]
    else:
        keys = [Ellipsis]
    return tuple((_key_text(key), region) for key, region in _valid_keys(shape, keys))


def fancy_keys(shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
    """Advanced indexes with repeated positions, and the shapes they select."""
    if len(shape) == 1:
        n = shape[0]
        keys: list[Any] = [[0, 2, 0], [n - 1, 1], [1, 1], [-1, 0, -1]]
    elif len(shape) == 2:
        rows, cols = shape
        keys = [([0, rows - 1], [cols - 1, 0]), ([1, 0, 1], [0, 1, 0]), [1, 0, 1], ([0, 0], [1, 1])]
    else:
        keys = []
    return [(_fancy_text(key), region) for key, region in _valid_keys(shape, keys)]


def _fancy_text(key: Any) -> str:
    return "[" + (", ".join(map(str, key)) if isinstance(key, tuple) else str(key)) + "]"


def array_literal(values: Sequence[Any], shape: tuple[int, ...]) -> str:
    """``np.array([...])`` of ``values`` laid out in ``shape``."""
    return f"np.array({np.array(values).reshape(shape).tolist()!r})"


def numpy_result(expression: str, shape: tuple[int, ...]) -> np.ndarray | None:
    """What ``expression`` (written in terms of ``a``) gives for a C-ordered ``a`` of ``shape``.

    ``None`` when numpy raises. The result tells the shape, the dtype, whether
    numpy returns a view (memory shared with ``a``) and whether it is writable.
    """
    a = np.arange(1.0, 1.0 + int(np.prod(shape))).reshape(shape)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(eval(expression, {"np": np, "a": a}))
    except Exception:
        return None


def promote(*dtypes: str) -> str:
    if "c16" in dtypes:
        return "c16"
    return "f4" if all(d == "f4" for d in dtypes) else "f8"


def mask_literal(shape: tuple[int, ...], seed: int) -> str:
    """A constant mask with at least one True and (from two elements on) one False."""
    size = int(np.prod(shape))
    bits = [bool(seed >> k & 1) for k in range(size)]
    first = seed % size
    bits[first] = True
    if size > 1:
        bits[(first + 1 + (seed >> 8) % (size - 1)) % size] = False
    return array_literal(bits, shape)
