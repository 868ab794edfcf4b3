"""The registry API of the rule modules: how a numpy fact is registered into core.

* :func:`ufunc_rule` – a ufunc with one vjp per input and what each reads;
* :func:`implements` – an adapter with numpy's own signature for a numpy
  function; it sorts the call into array inputs and parameters and hands them
  to :func:`mutagrad.core.dispatch.apply` with a :class:`VjpRule`;
* :func:`implements_method` – an ndarray method whose numpy facts live in the
  rule modules (in-place sort, put, ufunc.at, astype, view);
* :func:`nondifferentiable` – functions whose outputs carry no derivative
  (comparisons, argmax, shape queries, floor...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mutagrad.core.engine import ANS, VjpRule
from mutagrad.core.wrapped import FUNCTION_RULES, METHOD_RULES, NONDIFFERENTIABLE, UFUNC_RULES

__all__ = ["ANS", "VjpRule", "implements", "implements_method", "nondifferentiable", "ufunc_rule"]


def ufunc_rule(
    ufunc: Any,
    *vjps: Callable[..., Any] | None,
    reads: tuple[tuple[int | str, ...], ...],
    params: bool | None = None,
) -> VjpRule:
    """Register the rule of ``ufunc`` (or ``(ufunc, method)``) and return it.

    ``params`` says whether the vjps receive the call's keyword arguments.
    """
    if isinstance(ufunc, tuple):
        base, method = ufunc
        fun, name = getattr(base, method), f"{base.__name__}.{method}"
    else:
        fun, name = ufunc, ufunc.__name__
    # A ufunc's dtype= or casting= do not change its derivative; a reduction's
    # axis= and keepdims= do, so (ufunc, method) rules keep their parameters
    # by default (and so do gufuncs whose axis= moves their core dimension).
    if params is None:
        params = isinstance(ufunc, tuple)
    rule = VjpRule(name, fun, vjps, reads, params=params)
    UFUNC_RULES[ufunc] = rule
    return rule


def implements(*functions: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated adapter for the given numpy functions."""

    def register(adapter: Callable[..., Any]) -> Callable[..., Any]:
        for fn in functions:
            FUNCTION_RULES[fn] = adapter
        return adapter

    return register


def implements_method(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the ndarray method ``name`` of WrappedArray.

    For methods whose numpy facts live here rather than in core (``x.sort()``,
    ``x.put(...)``, ``x.astype(...)``, ``x.view(...)``, and ``ufunc.at``).
    """

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        METHOD_RULES[name] = function
        return function

    return register


def nondifferentiable(*things: Any) -> None:
    """Declare functions or ufuncs whose outputs carry no derivative."""
    NONDIFFERENTIABLE.update(things)
