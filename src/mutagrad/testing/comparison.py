"""``assert_gradients_close``: compare two gradients, ``None`` counting as zeros.

mutagrad reports an argument no gradient reaches as ``None`` (as Zygote
reports ``nothing``), so the simplest property, "two modes give the same
gradient", cannot hand its results to ``np.testing.assert_allclose``: a
``None`` on one side raises a ``TypeError``. This helper walks two gradients
in parallel (tuples, lists, dicts, named tuples and dataclasses, as
``mutagrad.gradient`` mirrors container arguments), reads ``None`` as zeros
of the other side's shape, and compares each pair of arrays with
``np.testing.assert_allclose``. (``mutagrad.grad``, the JAX-style transform,
gives zeros instead of ``None`` in the first place.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["assert_gradients_close"]


def assert_gradients_close(
    actual: Any, desired: Any, *, rtol: float = 1e-7, atol: float = 0.0, err_msg: str = ""
) -> None:
    """Assert that ``actual`` and ``desired`` are equal up to ``rtol`` and ``atol``.

    Both are gradients: arrays, numbers, ``None`` (read as zeros shaped like
    the other side; ``None`` against ``None`` is equal), or containers of
    them with the same structure. A difference raises ``AssertionError``
    naming where in the structure it is (``[1]['w']``) and what numpy's
    ``assert_allclose`` says about it, after ``err_msg``.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper
    for path, got, want in _pairs(actual, desired, ""):
        np.testing.assert_allclose(
            got, want, rtol=rtol, atol=atol,
            err_msg=" ".join(filter(None, [err_msg, f"gradient{path or ''} differs"])),
        )  # fmt: skip


def _pairs(actual: Any, desired: Any, path: str) -> list[tuple[str, Any, Any]]:
    """(where, actual leaf, desired leaf) for each pair of leaves, ``None`` made zeros."""
    if actual is None and desired is None:
        return []
    if _is_container(actual) or _is_container(desired):
        known = desired if actual is None else actual
        if actual is not None and desired is not None and (
            type(actual) is not type(desired) or _keys(actual) != _keys(desired)
        ):
            raise AssertionError(
                f"gradient{path}: the structures differ: {_describe(actual)} against "
                f"{_describe(desired)}"
            )
        pairs = []
        for key in _keys(known):
            got = None if actual is None else _item(actual, key)
            want = None if desired is None else _item(desired, key)
            pairs += _pairs(got, want, path + _step(known, key))
        return pairs
    if actual is None:
        actual = np.zeros(np.shape(desired))
    if desired is None:
        desired = np.zeros(np.shape(actual))
    return [(path, actual, desired)]


def _step(container: Any, key: Any) -> str:
    """How ``key`` of ``container`` is written in a path: ``['w']``, ``.w`` or ``[1]``."""
    if isinstance(container, Mapping):
        return f"[{key!r}]"
    return f".{key}" if dataclasses.is_dataclass(container) or _is_named(container) else f"[{key}]"


def _is_container(value: Any) -> bool:
    return isinstance(value, (tuple, list, Mapping)) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    )


def _keys(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return list(value)
    if dataclasses.is_dataclass(value):
        return [field.name for field in dataclasses.fields(value)]
    if _is_named(value):
        return list(value._fields)
    return list(range(len(value)))


def _is_named(value: Any) -> bool:
    """A named tuple: its items are written by their field names."""
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _item(value: Any, key: Any) -> Any:
    if dataclasses.is_dataclass(value) or _is_named(value):
        return getattr(value, key)
    return value[key]


def _describe(value: Any) -> str:
    if _is_container(value):
        return f"{type(value).__name__} of {len(_keys(value))}"
    return f"{type(value).__name__}"
