"""Testing tools: compare mutagrad's gradients with finite differences.

:func:`numerical_gradient` computes central finite differences on plain
ndarrays (the function runs unchanged on them); :func:`check_gradient`
compares reverse mode with it and raises ``AssertionError`` with a readable
report (argument, worst element, both values) when they differ. With
``order=2`` it also differentiates the gradient itself (reverse over reverse)
along random directions and compares with finite differences of the gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mutagrad.api import withgradient
from mutagrad.core.wrapped import WrappedValue

__all__ = ["check_gradient", "numerical_gradient"]


def _fresh(x: Any) -> Any:
    """A private copy of an argument: the function may mutate what it receives."""
    if isinstance(x, WrappedValue):
        return x._data.copy() if isinstance(x._data, np.ndarray) else x._data
    if isinstance(x, np.ndarray):
        return x.copy()
    return x


def _scalar(value: Any) -> float:
    if isinstance(value, tuple):
        value = value[0]
    if isinstance(value, WrappedValue):
        value = value._data
    return float(value)


def _differentiable(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, int, np.floating, np.integer)):
        return True
    data = x._data if isinstance(x, WrappedValue) else x
    return isinstance(data, np.ndarray) and data.dtype.kind in "fiu"


def numerical_gradient(
    f: Callable[..., Any], *args: Any, eps: float = 1e-6, wrt: tuple[int, ...] | None = None
) -> list[np.ndarray | float | None]:
    """Central finite differences of scalar ``f`` with respect to each numeric argument.

    ``f`` is called on fresh float64 copies of the arguments every time, so a
    function that mutates its inputs is measured correctly. Non-numeric
    arguments get ``None``, and so does an integer argument that ``f`` cannot
    take as a float (an index or a size: it has no derivative).
    """
    base = [_fresh(a) for a in args]
    grads: list[Any] = []
    for k, x in enumerate(base):
        if (wrt is not None and k not in wrt) or not _differentiable(x):
            grads.append(None)
            continue
        point = np.array(x, dtype=np.float64)
        g = np.zeros_like(point)
        try:
            for i in range(point.size):
                values = []
                for sign in (1.0, -1.0):
                    shifted = point.copy()
                    shifted.flat[i] += sign * eps
                    call = [_fresh(a) for a in base]
                    call[k] = shifted if point.ndim else float(shifted)
                    values.append(_scalar(f(*call)))
                g.flat[i] = (values[0] - values[1]) / (2 * eps)
        except (TypeError, IndexError, ValueError):
            if np.asarray(x).dtype.kind not in "iu":
                raise
            grads.append(None)  # an integer used as an index or a size
            continue
        grads.append(g if point.ndim else float(g))
    return grads


def _report(k: int, got: np.ndarray, want: np.ndarray) -> str:
    err = np.abs(np.asarray(got, dtype=float) - np.asarray(want, dtype=float))
    flat = int(np.nanargmax(np.where(np.isnan(err), np.inf, err))) if err.size else 0
    index = np.unravel_index(flat, np.shape(err)) if np.ndim(err) else ()
    got_v = np.asarray(got).flat[flat] if np.ndim(got) else got
    want_v = np.asarray(want).flat[flat] if np.ndim(want) else want
    return (
        f"argument {k}: reverse mode and finite differences differ; worst element "
        f"{index}: reverse mode {got_v!r}, finite differences {want_v!r} "
        f"(|difference| {float(np.asarray(err).flat[flat]):.3g})"
    )


def check_gradient(
    f: Callable[..., Any],
    *args: Any,
    order: int = 1,
    mode: str | None = None,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    eps: float = 1e-6,
) -> tuple[Any, ...]:
    """Assert that ``mutagrad.gradient(f, *args)`` matches central finite differences.

    Returns the gradient. Raises ``AssertionError`` naming the argument, its
    worst element and both values when they differ.
    """
    if order == 2:
        return _check_second_order(f, args, mode, atol, rtol, eps)
    if order != 1:
        raise ValueError("check_gradient supports order=1 and order=2")
    grads = withgradient(f, *[_fresh(a) for a in args], mode=mode).grad
    reference = numerical_gradient(f, *args, eps=eps)
    problems = []
    for k, (got, want) in enumerate(zip(grads, reference)):
        if want is None:
            if got is not None and np.any(np.asarray(got) != 0):
                problems.append(f"argument {k}: has no derivative, but got gradient {got!r}")
            continue
        if got is None:
            got = np.zeros_like(np.asarray(want))
        if np.shape(got) != np.shape(want):
            problems.append(
                f"argument {k}: gradient has shape {np.shape(got)}, expected {np.shape(want)}"
            )
        elif not np.allclose(got, want, atol=atol, rtol=rtol, equal_nan=True):
            problems.append(_report(k, got, want))
    if problems:
        raise AssertionError("\n".join(problems))
    return tuple(grads)


def _check_second_order(
    f: Callable[..., Any], args: tuple[Any, ...], mode: str | None, atol: float, rtol: float,
    eps: float,
) -> tuple[Any, ...]:  # fmt: skip
    """Hessian-vector products by reverse over reverse, against differences of gradients."""
    grads = check_gradient(f, *args, mode=mode, atol=atol, rtol=rtol, eps=eps)
    rng = np.random.default_rng(0)
    base = [_fresh(a) for a in args]
    for k, x in enumerate(base):
        if not _differentiable(x) or grads[k] is None:
            continue
        v = rng.standard_normal(np.shape(x))

        def directional(*a: Any, k: int = k, v: Any = v) -> Any:
            inner = withgradient(f, *a, mode=mode).grad[k]
            return np.sum(inner * v) if inner is not None else 0.0

        hvp = withgradient(directional, *[_fresh(a) for a in base], mode=mode).grad
        for j, y in enumerate(base):
            if not _differentiable(y):
                continue
            step = float(eps**0.5)  # differences of gradients: a larger step, O(h^2) error
            shifted = []
            for sign in (1.0, -1.0):
                point = [_fresh(a) for a in base]
                point[k] = np.asarray(point[k], dtype=np.float64) + sign * step * v
                if np.ndim(x) == 0:
                    point[k] = float(point[k])
                g = withgradient(f, *point, mode=mode).grad[j]
                shifted.append(np.zeros(np.shape(y)) if g is None else np.asarray(g, float))
            want = (shifted[0] - shifted[1]) / (2 * step)
            got = np.zeros(np.shape(y)) if hvp[j] is None else np.asarray(hvp[j], dtype=float)
            if not np.allclose(got, want, atol=10 * atol, rtol=10 * rtol):
                raise AssertionError(
                    f"second order, direction on argument {k}: " + _report(j, got, want)
                )
    return grads
