"""Every numpy fact mutagrad knows: derivative rules, views, non-differentiable functions.

Rules are registered right beside their definitions:

* :func:`ufunc_rule` – a ufunc with one vjp per input and what each reads;
* :func:`implements` – an adapter with numpy's own signature for a numpy
  function; it sorts the call into array inputs and parameters and hands them
  to :func:`mutagrad.core.wrapped.apply` with a :class:`VjpRule`;
* :func:`nondifferentiable` – functions whose outputs carry no derivative
  (comparisons, argmax, shape queries, floor...).

A vjp receives ``(g, ans, *args, **params)``: the output cotangent, the output
and the primal arguments. Arguments it did not declare in ``reads`` arrive as
:class:`~mutagrad.core.tangents.Meta` (shape and dtype only). Vjps are written
with numpy functions so the same code runs on raw arrays and, in a
higher-order sweep, on traced ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mutagrad.core.engine import ANS, VjpRule
from mutagrad.core.wrapped import FUNCTION_RULES, NONDIFFERENTIABLE, UFUNC_RULES

__all__ = ["ANS", "implements", "nondifferentiable", "ufunc_rule"]


def ufunc_rule(
    ufunc: Any, *vjps: Callable[..., Any] | None, reads: tuple[tuple[int | str, ...], ...]
) -> VjpRule:
    """Register the rule of ``ufunc`` (or ``(ufunc, method)``) and return it."""
    if isinstance(ufunc, tuple):
        base, method = ufunc
        fun, name = getattr(base, method), f"{base.__name__}.{method}"
    else:
        fun, name = ufunc, ufunc.__name__
    # A ufunc's dtype= or casting= do not change its derivative; a reduction's
    # axis= and keepdims= do, so (ufunc, method) rules keep their parameters.
    rule = VjpRule(name, fun, vjps, reads, params=isinstance(ufunc, tuple))
    UFUNC_RULES[ufunc] = rule
    return rule


def implements(*functions: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated adapter for the given numpy functions."""

    def register(adapter: Callable[..., Any]) -> Callable[..., Any]:
        for fn in functions:
            FUNCTION_RULES[fn] = adapter
        return adapter

    return register


def nondifferentiable(*things: Any) -> None:
    """Declare functions or ufuncs whose outputs carry no derivative."""
    NONDIFFERENTIABLE.update(things)


# Importing the modules registers their rules.
from mutagrad.rules import (  # noqa: E402, F401
    creation,
    cumulative,
    einsum,
    indexing,
    inplace,
    linalg,
    nanfunctions,
    nondiff,
    rearrange,
    reductions,
    shape,
    statistics,
    ufuncs,
)
