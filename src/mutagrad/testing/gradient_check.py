"""``check_gradient``: reverse mode against central finite differences.

Small arguments are compared element by element. An argument with more than
``elementwise_limit`` elements is compared along a few random directions
instead (two calls of ``f`` per direction rather than two per element), so
the check stays fast on large arrays: along a direction ``v`` the reverse-mode
gradient gives ``<gradient, v>`` and finite differences give the change of
``f`` along ``v``. A random direction sees an error spread over many elements
reliably, and a single wrong element only weakly, which is why small
arguments keep the element-wise comparison and its precise report.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from mutagrad.testing.finite_differences import (
    directional_derivative,
    fresh_copies,
    fresh_copy,
    is_numeric,
    numerical_gradient,
)
from mutagrad.zygote import withgradient

__all__ = ["ELEMENTWISE_LIMIT", "DifferenceReference", "check_gradient"]

# Arguments with more elements are compared along random directions.
ELEMENTWISE_LIMIT = 100
# Arrays up to this size are printed in full in a report.
_PRINT_LIMIT = 12


def argument_label(f: Any, k: int) -> str:
    """``"argument 1 (y)"``, using ``f``'s parameter names when Python knows them."""
    try:
        parameters = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        return f"argument {k}"
    positional = [
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return f"argument {k} ({positional[k]})" if k < len(positional) else f"argument {k}"


def _as_float_array(value: Any) -> np.ndarray:
    return np.asarray(value, dtype=np.float64)


def elementwise_report(label: str, got: Any, want: Any, atol: float, rtol: float) -> str:
    """Where and by how much two gradients differ: the worst element with both values."""
    got_a, want_a = _as_float_array(got), _as_float_array(want)
    err = np.abs(got_a - want_a)
    err = np.where(np.isnan(err), np.inf, err)
    bad = ~np.isclose(got_a, want_a, atol=atol, rtol=rtol, equal_nan=True)
    flat = int(np.argmax(err)) if err.size else 0
    index = tuple(int(i) for i in np.unravel_index(flat, err.shape)) if err.ndim else ()
    lines = [
        f"{label}: reverse mode and finite differences differ at {int(bad.sum())} of "
        f"{bad.size} element(s) (atol={atol:g}, rtol={rtol:g})",
        f"  worst element {list(index)}: reverse mode {got_a.flat[flat].item()!r}, "
        f"finite differences {want_a.flat[flat].item()!r} (|difference| {err.flat[flat]:.3g})",
    ]
    if got_a.size <= _PRINT_LIMIT:
        lines.append(f"  reverse mode:       {np.array2string(got_a, separator=', ')}")
        lines.append(f"  finite differences: {np.array2string(want_a, separator=', ')}")
    return "\n".join(lines)


class DifferenceReference:
    """Finite-difference derivatives of scalar ``f`` at ``args``, computed once per argument.

    :meth:`compare` checks a reverse-mode gradient against them: element by
    element up to ``elementwise_limit`` elements, else along ``directions``
    random directions drawn from ``seed``.
    """

    def __init__(
        self,
        f: Callable[..., Any],
        args: tuple[Any, ...],
        *,
        eps: float,
        elementwise_limit: int,
        directions: int,
        seed: int,
    ):
        self.f = f
        self.args = args
        self.eps = eps
        self.elementwise_limit = elementwise_limit
        self.directions = directions
        self.rng = np.random.default_rng(seed)
        self._cache: dict[int, Any] = {}

    def size(self, k: int) -> int:
        return int(np.prod(np.shape(fresh_copy(self.args[k])), dtype=np.int64))

    def derivative(self, k: int) -> Any:
        """An array (element-wise), a list of (direction, derivative), or None (no derivative)."""
        if k not in self._cache:
            if self.size(k) <= self.elementwise_limit:
                self._cache[k] = numerical_gradient(self.f, *self.args, eps=self.eps, wrt=(k,))[k]
            else:
                self._cache[k] = self._directional(k)
        return self._cache[k]

    def _directional(self, k: int) -> list[tuple[np.ndarray, float]] | None:
        """(direction, derivative along it) for :attr:`directions` random directions."""
        shape = np.shape(fresh_copy(self.args[k]))
        pairs = []
        for _ in range(self.directions):
            v = self.rng.standard_normal(shape)
            d = directional_derivative(self.f, self.args, k, v, eps=self.eps)
            if d is None:
                return None
            pairs.append((v, d))
        return pairs

    def compare(self, k: int, got: Any, label: str, atol: float, rtol: float) -> str | None:
        """``None`` when ``got`` (``None`` counts as zeros) matches; else a readable report."""
        shape = np.shape(fresh_copy(self.args[k]))
        if got is not None and np.shape(got) != shape:
            return (
                f"{label}: the gradient has shape {np.shape(got)}, but the argument has "
                f"shape {shape}"
            )
        want = self.derivative(k)
        if want is None:
            return _no_derivative_mismatch(label, got)
        got_a = np.zeros(shape) if got is None else _as_float_array(got)
        if isinstance(want, list):
            return self._compare_directions(got_a, want, label, atol, rtol)
        if np.allclose(got_a, want, atol=atol, rtol=rtol, equal_nan=True):
            return None
        return elementwise_report(label, got_a, want, atol, rtol)

    def _compare_directions(
        self,
        got: np.ndarray,
        want: list[tuple[np.ndarray, float]],
        label: str,
        atol: float,
        rtol: float,
    ) -> str | None:
        for j, (v, want_d) in enumerate(want):
            got_d = float(np.sum(got * v))
            # Element errors below atol add up, over a random direction, to about atol * |v|.
            tolerance = atol * float(np.linalg.norm(v)) + rtol * max(abs(got_d), abs(want_d))
            if not abs(got_d - want_d) <= tolerance:
                return (
                    f"{label}: reverse mode and finite differences differ along random "
                    f"direction {j + 1} of {len(want)} (the argument has {got.size} elements, "
                    f"more than elementwise_limit={self.elementwise_limit}, so it is checked "
                    f"along random directions v):\n"
                    f"  <gradient, v> = {got_d!r} by reverse mode, {want_d!r} by finite "
                    f"differences (|difference| {abs(got_d - want_d):.3g}, tolerance "
                    f"{tolerance:.3g})\n"
                    f"  Pass elementwise_limit={got.size} to compare every element and see "
                    "the worst one."
                )
        return None


def _no_derivative_mismatch(label: str, got: Any) -> str | None:
    if got is None or not np.any(_as_float_array(got) != 0):
        return None
    return (
        f"{label} has no derivative (it cannot be perturbed: an integer used as an index or a "
        f"size), but reverse mode gives a nonzero gradient {got!r}"
    )


def check_gradient(
    f: Callable[..., Any],
    *args: Any,
    order: int = 1,
    mode: str | None = None,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    eps: float = 1e-6,
    elementwise_limit: int = ELEMENTWISE_LIMIT,
    directions: int = 3,
    seed: int = 0,
) -> tuple[Any, ...]:
    """Assert that ``mutagrad.gradient(f, *args, mode=mode)`` matches central finite differences.

    ``f`` returns a scalar and runs on plain ndarrays too (the reference
    calls it on fresh float64 copies, so it may mutate its arguments).
    Arguments with up to ``elementwise_limit`` elements are compared element
    by element, larger ones along ``directions`` random directions (seeded by
    ``seed``). With ``order=2`` the gradient itself is differentiated
    (reverse over reverse) along a random direction and compared with
    differences of gradients.

    Returns the gradient. Raises ``AssertionError`` naming the argument, its
    worst element and both values when they differ; errors of mutagrad
    itself (``PoisonedCaptureError``, ``MutationError``...) propagate.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper
    if order == 2:
        return _check_second_order(f, args, mode, atol, rtol, eps, elementwise_limit, seed)
    if order != 1:
        raise ValueError("check_gradient supports order=1 and order=2")
    grads = withgradient(f, *fresh_copies(args), mode=mode).grad
    reference = DifferenceReference(
        f, args, eps=eps, elementwise_limit=elementwise_limit, directions=directions, seed=seed
    )
    problems = []
    for k, got in enumerate(grads):
        if not is_numeric(args[k]):
            continue
        problem = reference.compare(k, got, argument_label(f, k), atol, rtol)
        if problem:
            problems.append(problem)
    if problems:
        raise AssertionError("gradient check failed:\n" + "\n".join(problems))
    return tuple(grads)


def _check_second_order(
    f: Callable[..., Any],
    args: tuple[Any, ...],
    mode: str | None,
    atol: float,
    rtol: float,
    eps: float,
    elementwise_limit: int,
    seed: int,
) -> tuple[Any, ...]:
    """Hessian-vector products by reverse over reverse, against differences of gradients."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper
    grads = check_gradient(
        f,
        *args,
        mode=mode,
        atol=atol,
        rtol=rtol,
        eps=eps,
        elementwise_limit=elementwise_limit,
        seed=seed,
    )
    rng = np.random.default_rng(seed)
    base = fresh_copies(args)
    for k, x in enumerate(base):
        if not is_numeric(x) or grads[k] is None:
            continue
        v = rng.standard_normal(np.shape(x))

        def directional(*a: Any, k: int = k, v: Any = v) -> Any:
            inner = withgradient(f, *a, mode=mode).grad[k]
            return np.sum(inner * v) if inner is not None else 0.0

        hvp = withgradient(directional, *fresh_copies(base), mode=mode).grad
        for j, y in enumerate(base):
            if not is_numeric(y):
                continue
            step = float(eps**0.5)  # differences of gradients: a larger step, O(h^2) error
            shifted = []
            for sign in (1.0, -1.0):
                point = fresh_copies(base)
                point[k] = np.asarray(point[k], dtype=np.float64) + sign * step * v
                if not isinstance(x, np.ndarray):
                    point[k] = float(point[k])
                g = withgradient(f, *point, mode=mode).grad[j]
                shifted.append(np.zeros(np.shape(y)) if g is None else _as_float_array(g))
            want = (shifted[0] - shifted[1]) / (2 * step)
            got = np.zeros(np.shape(y)) if hvp[j] is None else _as_float_array(hvp[j])
            if not np.allclose(got, want, atol=10 * atol, rtol=10 * rtol):
                raise AssertionError(
                    f"second-order gradient check failed: the Hessian times a random direction "
                    f"in {argument_label(f, k)}, compared with differences of gradients:\n"
                    + elementwise_report(argument_label(f, j), got, want, 10 * atol, 10 * rtol)
                )
    return grads
