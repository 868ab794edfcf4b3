"""What the SciPy rule modules share: SciPy functions that take traced values, refusals.

* :func:`with_rule` makes a SciPy Python function (``logsumexp``,
  ``norm.logpdf``, ``odeint``...) a function that takes traced values: called
  on constants it is SciPy's function, on traced values it applies a rule
  whose forward value is SciPy's own on the raw data. The rule is registered
  for the new function as a user's ``defvjp`` rule is for a
  ``mutagrad.primitive``, so ``mutagrad.testing.check_rule`` finds it;
* :func:`no_derivative` is the vjp of an argument without a derivative (an
  integer order, a shape parameter without a closed form): nothing for an
  integer, a NotDifferentiableError naming the parameter otherwise.

This module imports no SciPy itself; the modules that use it do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from mutagrad.core.engine import VjpRule
from mutagrad.core.registry import FUNCTION_RULES, PRIMITIVES
from mutagrad.errors import NotDifferentiableError
from mutagrad.traced.dispatch import apply
from mutagrad.traced.value import holds_wrapped

# How a call is split into the rule's positional arguments and its parameters.
Binder = Callable[..., tuple[tuple[Any, ...], dict[str, Any] | None]]


def traced(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a traced value is among ``args`` or ``kwargs`` (looking into lists and tuples)."""
    return holds_wrapped(args) or holds_wrapped(tuple(kwargs.values()))


def with_rule(
    scipy_function: Any,
    rule: VjpRule | None,
    bind: Binder | None = None,
    adapter: Callable[..., Any] | None = None,
    name: str | None = None,
) -> Callable[..., Any]:
    """``scipy_function`` taking traced values: SciPy's value, ``rule``'s derivative.

    ``bind(*args, **kwargs)`` returns the rule's positional arguments (the
    ones that may be differentiated) and its parameters; or ``adapter``, with
    the function's signature, applies the rules itself.
    """

    @functools.wraps(scipy_function)
    def function(*args: Any, **kwargs: Any) -> Any:
        if not traced(args, kwargs):
            return scipy_function(*args, **kwargs)
        return FUNCTION_RULES[function](*args, **kwargs)

    if adapter is None:
        assert rule is not None and bind is not None

        def adapter(*args: Any, **kwargs: Any) -> Any:
            positional, params = bind(*args, **kwargs)
            return apply(rule, positional, params)

    if name is not None:
        function.__name__ = function.__qualname__ = name
    PRIMITIVES[function] = scipy_function
    FUNCTION_RULES[function] = adapter
    return function


def no_derivative(function: str, parameter: str, why: str, position: int = 0) -> Any:
    """The vjp of argument ``position`` without a derivative: none for an integer (an order
    used as a number), a refusal naming the parameter for a float."""

    def vjp(g: Any, ans: Any, *args: Any, **params: Any) -> None:
        if np.dtype(args[position].dtype).kind not in "biu":
            refuse_derivative(function, parameter, why)

    return vjp


def refuse_derivative(function: str, parameter: str, why: str) -> None:
    raise NotDifferentiableError(
        f"{function} has no derivative with respect to {parameter} ({why}), but {parameter} "
        "depends on a differentiated input.\n"
        f"Fix: pass {parameter} as a constant, or as mutagrad.ignore_derivatives({parameter}) "
        "if no gradient should flow through it."
    )


def reduced_axes(ndim: int, axis: Any) -> tuple[int, ...]:
    """The axes a reduction over ``axis`` (None, an int or a tuple) removes."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return tuple(int(a) % ndim if ndim else 0 for a in axes)


def expand_reduced(value: Any, ndim: int, axis: Any, keepdims: bool) -> Any:
    """A reduction's output (or cotangent) with its reduced axes back, as keepdims gives."""
    if keepdims or ndim == 0:
        return value
    return np.expand_dims(value, reduced_axes(ndim, axis))
