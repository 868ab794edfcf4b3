"""Central finite differences: the reference every check in mutagrad.testing compares with.

* :func:`numerical_gradient` – the derivative of a scalar function with
  respect to every element of its arguments (two calls per element);
* :func:`directional_derivative` – the derivative along one direction (two
  calls whatever the size), for arguments too large to perturb one element
  at a time.

The function is called on plain ndarrays, never on traced ones, and always
on fresh float64 copies of the arguments, so a function that mutates its
inputs is measured correctly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mutagrad.core.memory import copy_keeping_layout
from mutagrad.traced.value import WrappedValue

__all__ = ["directional_derivative", "numerical_gradient"]

# Errors a function raises when an integer argument is an index or a size:
# perturbed into a float it cannot be used, so it has no derivative.
_NOT_A_NUMBER_ERRORS = (TypeError, IndexError, ValueError)


def fresh_copy(x: Any) -> Any:
    """A private copy of an argument (plain data for a WrappedArray): functions may mutate it."""
    if isinstance(x, WrappedValue):
        x = x._raw
    if isinstance(x, np.ndarray):
        # With the argument's very strides: whether reshape or ravel copies
        # depends on them, and with it what a function that writes computes.
        return copy_keeping_layout(x)[0]
    return x


def fresh_copies(args: Sequence[Any]) -> list[Any]:
    return [fresh_copy(a) for a in args]


def scalar_value(value: Any) -> float:
    """``f``'s result as a float; a tuple's first element (the rest is auxiliary output)."""
    if isinstance(value, tuple):
        value = value[0]
    if isinstance(value, WrappedValue):
        value = value._raw
    return float(value)


def is_numeric(x: Any) -> bool:
    """Whether finite differences can perturb ``x``: a number or an array of numbers (not bool)."""
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, int, np.floating, np.integer)):
        return True
    data = x._raw if isinstance(x, WrappedValue) else x
    return isinstance(data, np.ndarray) and data.dtype.kind in "fiu"


def _is_integer(x: Any) -> bool:
    return np.asarray(fresh_copy(x)).dtype.kind in "iu"


def _as_float(x: Any) -> Any:
    """``x`` as float64, an array keeping its strides (a number stays 0-d)."""
    x = np.asarray(x)
    return fresh_copy(x) if x.dtype == np.float64 else np.array(x, dtype=np.float64)


def _call_shifted(f: Callable[..., Any], base: list[Any], k: int, point: np.ndarray) -> float:
    """``f`` at fresh copies of ``base`` with argument ``k`` replaced by ``point``.

    A number stays a number (a Python float); an array, 0-d included, stays an array.
    """
    call = fresh_copies(base)
    call[k] = point if isinstance(base[k], np.ndarray) else float(point)
    return scalar_value(f(*call))


def numerical_gradient(
    f: Callable[..., Any], *args: Any, eps: float = 1e-6, wrt: Sequence[int] | None = None
) -> list[np.ndarray | float | None]:
    """Central finite differences of scalar ``f`` with respect to each numeric argument.

    ``f`` is called on fresh float64 copies of the arguments every time, so a
    function that mutates its inputs is measured correctly. Non-numeric
    arguments get ``None``, and so does an integer argument that ``f`` cannot
    take as a float (an index or a size: it has no derivative). ``wrt``
    restricts the work to some argument positions (the others get ``None``).
    """
    base = fresh_copies(args)
    grads: list[Any] = []
    for k, x in enumerate(base):
        if (wrt is not None and k not in wrt) or not is_numeric(x):
            grads.append(None)
            continue
        point = _as_float(x)
        g = np.zeros(np.shape(point))
        try:
            for i in range(g.size):
                values = []
                for sign in (1.0, -1.0):
                    shifted = fresh_copy(point)
                    shifted.flat[i] += sign * eps
                    values.append(_call_shifted(f, base, k, shifted))
                g.flat[i] = (values[0] - values[1]) / (2 * eps)
        except _NOT_A_NUMBER_ERRORS:
            if not _is_integer(x):
                raise
            grads.append(None)  # an integer used as an index or a size
            continue
        grads.append(g if isinstance(x, np.ndarray) else float(g))
    return grads


def directional_derivative(
    f: Callable[..., Any], args: Sequence[Any], k: int, direction: np.ndarray, eps: float = 1e-6
) -> float | None:
    """Central difference of scalar ``f`` along ``direction`` in argument ``k``.

    ``None`` when argument ``k`` is an integer that ``f`` cannot take as a float.
    """
    base = fresh_copies(args)
    point = _as_float(base[k])
    shifted = []
    for sign in (1.0, -1.0):
        moved = fresh_copy(point)
        moved += sign * eps * direction
        shifted.append(moved)
    try:
        values = [_call_shifted(f, base, k, moved) for moved in shifted]
    except _NOT_A_NUMBER_ERRORS:
        if not _is_integer(base[k]):
            raise
        return None
    return (values[0] - values[1]) / (2 * eps)
