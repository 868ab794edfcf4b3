"""``check_gradient``: reverse mode against central finite differences.

The reference runs in double precision: float32 (and float16) arguments are
converted to float64 copies for the finite differences, when the function
runs on them and computes in float64 (:func:`reference_precision`); reverse
mode, which ran in the arguments' own precision, is then compared with
tolerances for that precision. A function that keeps to float32 whatever its
inputs is differenced in float32, with a step and tolerances for it. The
absolute tolerance grows with the rounding of ``f``'s value over the step
(``eps(dtype) * |f| / step``), which otherwise passes for a wrong gradient
when ``f`` is large. A failure report ends with what the reference was: the
step, the precision, and the arguments' own dtypes.

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

import attrs
import numpy as np

from mutagrad.testing.finite_differences import (
    directional_derivative,
    fresh_copies,
    fresh_copy,
    is_complex,
    is_numeric,
    lowest_precision,
    numerical_gradient,
    reference_copies,
    scalar_value,
)
from mutagrad.zygote import withgradient

__all__ = [
    "ELEMENTWISE_LIMIT",
    "DifferenceReference",
    "ReferencePrecision",
    "check_gradient",
    "reference_precision",
    "with_rounding",
]

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
    """``value`` as float64 numbers, or complex128 when it is complex."""
    data = np.asarray(value)
    return data.astype(np.complex128 if data.dtype.kind == "c" else np.float64)


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


#: (step, atol, rtol) by the arguments' least precise float: differences in float64 of a
#: function that also runs in float64 (only reverse mode's rounding is the arguments'), and
#: differences in the arguments' own precision (a function that keeps to it).
_TOLERANCES: dict[tuple[int, bool], tuple[float, float, float]] = {
    (8, True): (1e-6, 1e-5, 1e-4),
    (4, True): (1e-6, 1e-3, 1e-3),
    (4, False): (1e-3, 1e-2, 1e-2),
    (2, True): (1e-6, 1e-2, 1e-2),
    (2, False): (1e-2, 5e-2, 5e-2),
}
# The rounding of f's value over a central difference, about eps(dtype) * |f| / step, times this.
_ROUNDING_FACTOR = 4.0


@attrs.frozen
class ReferencePrecision:
    """How the finite differences of a check are taken, and the tolerances that suit them.

    ``dtype`` is what the floating-point arguments are converted to
    (``np.float64``, or ``None``: their own), ``eps`` the step, ``atol`` and
    ``rtol`` the comparison's tolerances; ``described`` says all of it in a
    report.
    """

    dtype: Any
    eps: float
    atol: float
    rtol: float
    described: str


def reference_precision(
    f: Callable[..., Any],
    args: tuple[Any, ...],
    eps: float | None = None,
    atol: float | None = None,
    rtol: float | None = None,
) -> ReferencePrecision:
    """The reference for ``f`` at ``args``: double precision when ``f`` computes in it.

    ``f`` is called once on float64 copies of ``args``: if its result is
    float64, the differences are taken there, and the tolerances suit the
    reverse mode of the arguments' least precise dtype; if ``f`` raises or
    gives a float32 result, they are taken at the arguments' own precision
    with a step and tolerances for the precision ``f`` computes in.
    ``eps``, ``atol`` and ``rtol`` override the step and tolerances.
    """
    lowest = lowest_precision(args)
    computed = _computed_precision(f, args)
    double = computed is not None and computed.itemsize >= 8
    size = lowest.itemsize if computed is None or double else min(computed.itemsize, 8)
    step, default_atol, default_rtol = _TOLERANCES[(min(size, 8), double or size >= 8)]
    chosen = ReferencePrecision(
        dtype=np.float64 if double else None,
        eps=step if eps is None else eps,
        atol=default_atol if atol is None else atol,
        rtol=default_rtol if rtol is None else rtol,
        described="",
    )
    lower = [
        f"{k} {dtype}"
        for k, dtype in enumerate(getattr(fresh_copy(a), "dtype", None) for a in args)
        if dtype is not None and dtype.kind == "f" and dtype.itemsize < 8
    ]
    if double:
        where = "in float64"
        if lower:
            where = f"on float64 copies of the arguments (argument {', '.join(lower)})"
    elif computed is None:
        where = (
            f"in {lowest} (argument {', '.join(lower)}): f raised on float64 copies of the "
            "arguments"
        )
    else:
        where = f"in {computed}, the precision f computes in (its value is {computed})"
    described = (
        f"reference: central differences with step {chosen.eps:g} {where}; tolerances "
        f"atol={chosen.atol:g}, rtol={chosen.rtol:g}"
    )
    return attrs.evolve(chosen, described=described)


def _computed_precision(f: Callable[..., Any], args: tuple[Any, ...]) -> np.dtype | None:
    """The least precise float dtype of ``f``'s result on float64 copies of ``args``, or
    ``None`` when ``f`` raises on them (float64 for a result without floats)."""
    try:
        result = f(*reference_copies(args, np.float64))
    except Exception:
        return None
    return lowest_precision(_leaves(result))


def _leaves(value: Any) -> list[Any]:
    """The arrays and numbers in ``value`` (tuples and lists walked), as numpy values."""
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    try:
        return [np.asarray(fresh_copy(value))]
    except (TypeError, ValueError):  # not numeric data: it has no precision
        return []


class DifferenceReference:
    """Finite-difference derivatives of scalar ``f`` at ``args``, computed once per argument.

    :meth:`compare` checks a reverse-mode gradient against them: element by
    element up to ``elementwise_limit`` elements, else along ``directions``
    random directions drawn from ``seed``. ``dtype`` is what the arguments are
    converted to (see :func:`mutagrad.testing.numerical_gradient`).
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
        dtype: Any = np.float64,
    ):
        self.f = f
        self.args = args
        self.eps = eps
        self.dtype = dtype
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
                self._cache[k] = numerical_gradient(
                    self.f, *self.args, eps=self.eps, wrt=(k,), dtype=self.dtype
                )[k]
            else:
                self._cache[k] = self._directional(k)
        return self._cache[k]

    def _directional(self, k: int) -> list[tuple[np.ndarray, float]] | None:
        """(direction, derivative along it) for :attr:`directions` random directions."""
        shape = np.shape(fresh_copy(self.args[k]))
        complex_argument = is_complex(self.args[k])
        pairs = []
        for _ in range(self.directions):
            v = self.rng.standard_normal(shape)
            if complex_argument:
                v = v + 1j * self.rng.standard_normal(shape)
            d = directional_derivative(self.f, self.args, k, v, eps=self.eps, dtype=self.dtype)
            if d is None:
                return None
            pairs.append((v, d))
        return pairs

    def rounding(self) -> float:
        """How far the rounding of ``f``'s value moves a difference quotient: about
        ``eps(dtype) * |f| / step`` (times a small factor), added to the absolute tolerance."""
        value = scalar_value(self.f(*reference_copies(self.args, self.dtype)))
        dtype = np.float64 if self.dtype is not None else lowest_precision(self.args)
        spacing = float(np.finfo(dtype).eps)
        return _ROUNDING_FACTOR * spacing * max(1.0, abs(value)) / self.eps

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
            got_d = float(np.real(np.sum(got * v)))  # (Re: a complex argument's pairing)
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
    atol: float | None = None,
    rtol: float | None = None,
    eps: float | None = None,
    elementwise_limit: int = ELEMENTWISE_LIMIT,
    directions: int = 3,
    seed: int = 0,
) -> tuple[Any, ...]:
    """Assert that ``mutagrad.gradient(f, *args, mode=mode)`` matches central finite differences.

    ``f`` returns a scalar and runs on plain ndarrays too (the reference
    calls it on fresh copies, so it may mutate its arguments). The reference
    is taken in float64, float32 arguments included, when ``f`` computes in
    float64 on float64 copies of them; otherwise in the arguments' precision
    (see the module docstring). ``eps`` (the step), ``atol`` and ``rtol``
    default to what that precision needs: 1e-6, 1e-5 and 1e-4 for float64
    arguments, 1e-6, 1e-3 and 1e-3 for float32 ones differenced in float64,
    1e-3, 1e-2 and 1e-2 in float32. The absolute tolerance grows with the
    rounding of ``f``'s value over the step. Arguments with up to
    ``elementwise_limit`` elements are compared element by element, larger
    ones along ``directions`` random directions (seeded by ``seed``). With
    ``order=2`` the gradient itself is differentiated (reverse over reverse)
    along a random direction and compared with differences of gradients.

    Returns the gradient. Raises ``AssertionError`` naming the argument, its
    worst element and both values when they differ, and the reference used;
    errors of mutagrad itself (``PoisonedCaptureError``, ``MutationError``...)
    propagate.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper
    # The value's precision decides the reference's; a tuple's rest is auxiliary output.
    precision = reference_precision(lambda *a: _first(f(*a)), args, eps, atol, rtol)
    if order == 2:
        return _check_second_order(f, args, mode, precision, elementwise_limit, seed)
    if order != 1:
        raise ValueError("check_gradient supports order=1 and order=2")
    grads = withgradient(f, *fresh_copies(args), mode=mode).grad
    reference = DifferenceReference(
        f,
        args,
        eps=precision.eps,
        elementwise_limit=elementwise_limit,
        directions=directions,
        seed=seed,
        dtype=precision.dtype,
    )
    atol_used = with_rounding(precision.atol, reference.rounding())
    problems = [
        problem
        for k, got in enumerate(grads)
        if is_numeric(args[k])
        and (problem := reference.compare(k, got, argument_label(f, k), atol_used, precision.rtol))
    ]
    if problems:
        raise AssertionError(
            "gradient check failed:\n"
            + "\n".join(problems)
            + "\n"
            + reference_line(precision, atol_used)
        )
    return tuple(grads)


def _first(result: Any) -> Any:
    return result[0] if isinstance(result, tuple) else result


def with_rounding(atol: float, rounding: float) -> float:
    """``atol``, raised by the rounding of f's value over the step where that is not tiny."""
    return atol + rounding if rounding > 0.01 * atol else atol


def reference_line(precision: ReferencePrecision, atol_used: float) -> str:
    """What the reference was, for a report: step, precision, tolerances, rounding."""
    line = precision.described
    if atol_used > 1.5 * precision.atol:
        line += (
            f" (atol raised to {atol_used:.3g} by the rounding of f's value over the step: "
            "finite differences cannot resolve finer here)"
        )
    return line


def _check_second_order(
    f: Callable[..., Any],
    args: tuple[Any, ...],
    mode: str | None,
    precision: ReferencePrecision,
    elementwise_limit: int,
    seed: int,
) -> tuple[Any, ...]:
    """Hessian-vector products by reverse over reverse, against differences of gradients."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper
    atol, rtol, eps = precision.atol, precision.rtol, precision.eps
    grads = check_gradient(
        f, *args, mode=mode, atol=atol, rtol=rtol, eps=eps,
        elementwise_limit=elementwise_limit, seed=seed,
    )  # fmt: skip
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
            want = _gradient_difference(f, base, mode, (k, v), j, float(eps**0.5))
            got = np.zeros(np.shape(y)) if hvp[j] is None else _as_float_array(hvp[j])
            if not np.allclose(got, want, atol=10 * atol, rtol=10 * rtol):
                raise AssertionError(
                    f"second-order gradient check failed: the Hessian times a random direction "
                    f"in {argument_label(f, k)}, compared with differences of gradients:\n"
                    + elementwise_report(argument_label(f, j), got, want, 10 * atol, 10 * rtol)
                    + "\n"
                    + precision.described
                )
    return grads


def _gradient_difference(
    f: Callable[..., Any],
    base: list[Any],
    mode: str | None,
    direction: tuple[int, Any],
    j: int,
    step: float,
) -> np.ndarray:
    """Central difference of the gradient in argument ``j`` along ``direction = (k, v)``.

    A larger step than the first order's (the square root of it): differences
    of gradients have an O(step^2) error.
    """
    k, v = direction
    shifted = []
    for sign in (1.0, -1.0):
        point = fresh_copies(base)
        point[k] = np.asarray(point[k], dtype=np.float64) + sign * step * v
        if not isinstance(base[k], np.ndarray):
            point[k] = float(point[k])
        g = withgradient(f, *point, mode=mode).grad[j]
        shifted.append(np.zeros(np.shape(base[j])) if g is None else _as_float_array(g))
    return (shifted[0] - shifted[1]) / (2 * step)
