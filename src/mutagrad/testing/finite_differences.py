"""Central finite differences: the reference every check in mutagrad.testing compares with.

* :func:`numerical_gradient` – the derivative of a scalar function with
  respect to every element of its arguments (two calls per element);
* :func:`directional_derivative` – the derivative along one direction (two
  calls whatever the size), for arguments too large to perturb one element
  at a time.

A complex argument is perturbed in the real and in the imaginary direction of
each element, and its derivative combined as ``df/dx - i df/dy``: JAX's and
HIPS autograd's convention, which mutagrad's reverse mode follows.

The function is called on plain ndarrays, never on traced ones, and always
on fresh copies of the arguments, so a function that mutates its inputs is
measured correctly. By default every floating-point argument is a float64
copy (a float32 one too), so the differences are taken in double precision;
``dtype=None`` keeps each argument's own precision (for a function that only
runs in it), and the step must then suit that precision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mutagrad.core.memory import copy_keeping_layout
from mutagrad.traced.value import WrappedValue

__all__ = ["directional_derivative", "lowest_precision", "numerical_gradient", "reference_copies"]

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
    if isinstance(x, (float, int, complex, np.inexact, np.integer)):
        return True
    data = x._raw if isinstance(x, WrappedValue) else x
    return isinstance(data, np.ndarray) and data.dtype.kind in "fciu"


def is_complex(x: Any) -> bool:
    """Whether ``x`` is a complex number or array (perturbed in two directions per element)."""
    data = x._raw if isinstance(x, WrappedValue) else x
    return isinstance(data, complex) or np.asarray(data).dtype.kind == "c"


def _is_integer(x: Any) -> bool:
    return np.asarray(fresh_copy(x)).dtype.kind in "iu"


def _as_float(x: Any, dtype: Any = np.float64) -> Any:
    """``x`` as floats to perturb: float64, or (``dtype=None``) its own floating-point dtype;
    a complex ``x`` as complex128 (or its own complex dtype).

    An array keeps its strides when it needs no conversion; a number becomes 0-d.
    """
    x = np.asarray(x)
    target = np.dtype(dtype) if dtype is not None else x.dtype
    if x.dtype.kind == "c":
        target = np.result_type(target, np.complex64) if dtype is not None else x.dtype
    elif target.kind != "f":  # an integer argument, perturbed as float64
        target = np.dtype(np.float64)
    return fresh_copy(x) if x.dtype == target else np.array(x, dtype=target)


def reference_copies(args: Sequence[Any], dtype: Any = np.float64) -> list[Any]:
    """Fresh copies of ``args``, each floating-point array or numpy float converted to ``dtype``.

    ``dtype=None`` keeps every argument's own precision. Integers, booleans and
    Python floats (already double precision) are only copied.
    """
    copies = fresh_copies(args)
    if dtype is None:
        return copies
    converted = []
    for x in copies:
        if _is_lower_float(x, dtype):
            if isinstance(x, np.generic):
                x = complex(x) if isinstance(x, np.complexfloating) else float(x)
            else:
                x = _as_float(x, dtype)
        converted.append(x)
    return converted


def _is_lower_float(x: Any, dtype: Any) -> bool:
    """A float (complex) argument less precise than ``dtype`` (its complex counterpart)."""
    if isinstance(x, (np.ndarray, np.floating, np.complexfloating)):
        kind, size = x.dtype.kind, x.dtype.itemsize
    else:
        return False
    if kind == "c":
        return size < 2 * np.dtype(dtype).itemsize
    return kind == "f" and size < np.dtype(dtype).itemsize


def lowest_precision(args: Sequence[Any]) -> np.dtype:
    """The least precise floating-point dtype among ``args`` (float64 when none is lower)."""
    values = [fresh_copy(x) for x in args]
    dtypes = [
        np.finfo(x.dtype).dtype  # (a complex dtype's parts)
        for x in values
        if isinstance(x, (np.ndarray, np.inexact)) and x.dtype.kind in "fc"
    ]
    return min(dtypes, key=lambda d: d.itemsize, default=np.dtype(np.float64))


def _call_shifted(f: Callable[..., Any], base: list[Any], k: int, point: np.ndarray) -> float:
    """``f`` at fresh copies of ``base`` with argument ``k`` replaced by ``point``.

    A number stays a number (a Python float); an array, 0-d included, stays an array.
    """
    call = fresh_copies(base)
    if isinstance(base[k], np.ndarray):
        call[k] = point
    else:
        call[k] = complex(point) if np.iscomplexobj(point) else float(point)
    return scalar_value(f(*call))


def numerical_gradient(
    f: Callable[..., Any],
    *args: Any,
    eps: float = 1e-6,
    wrt: Sequence[int] | None = None,
    dtype: Any = np.float64,
) -> list[np.ndarray | float | None]:
    """Central finite differences of scalar ``f`` with respect to each numeric argument.

    ``f`` is called on fresh copies of the arguments every time, so a function
    that mutates its inputs is measured correctly; every floating-point
    argument is converted to ``dtype`` first (float64: the differences are
    taken in double precision, whatever the arguments' own; ``None`` keeps
    each one's). Non-numeric arguments get ``None``, and so does an integer
    argument that ``f`` cannot take as a float (an index or a size: it has no
    derivative). ``wrt`` restricts the work to some argument positions (the
    others get ``None``). A complex argument's derivative is ``df/dx - i df/dy``.
    """
    base = reference_copies(args, dtype)
    grads: list[Any] = []
    for k, x in enumerate(base):
        if (wrt is not None and k not in wrt) or not is_numeric(x):
            grads.append(None)
            continue
        point = _as_float(x, dtype)
        # (real, imaginary) steps: df/dx - i df/dy, the gradient as mutagrad gives it
        steps = [(1.0, 1.0), (1j, -1j)] if point.dtype.kind == "c" else [(1.0, 1.0)]
        g = np.zeros(np.shape(point), dtype=np.complex128 if len(steps) == 2 else np.float64)
        try:
            for i in range(g.size):
                for step, weight in steps:
                    values = []
                    for sign in (1.0, -1.0):
                        shifted = fresh_copy(point)
                        shifted.flat[i] += sign * eps * step
                        values.append(_call_shifted(f, base, k, shifted))
                    g.flat[i] += weight * (values[0] - values[1]) / (2 * eps)
        except _NOT_A_NUMBER_ERRORS:
            if not _is_integer(x):
                raise
            grads.append(None)  # an integer used as an index or a size
            continue
        if isinstance(x, np.ndarray):
            grads.append(g)
        else:
            grads.append(complex(g) if g.dtype.kind == "c" else float(g))
    return grads


def directional_derivative(
    f: Callable[..., Any],
    args: Sequence[Any],
    k: int,
    direction: np.ndarray,
    eps: float = 1e-6,
    dtype: Any = np.float64,
) -> float | None:
    """Central difference of scalar ``f`` along ``direction`` in argument ``k``.

    The arguments are converted as in :func:`numerical_gradient`; a complex
    argument may move along a complex direction (its pairing with the
    gradient is then ``Re(sum(gradient * direction))``). ``None`` when
    argument ``k`` is an integer that ``f`` cannot take as a float.
    """
    base = reference_copies(args, dtype)
    point = _as_float(base[k], dtype)
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
