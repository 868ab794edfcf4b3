"""The rule tables, one keyed by the numpy callable, and the functions that fill them.

* :data:`UFUNC_RULES` – a ufunc, or ``(ufunc, method)`` for ``np.add.reduce``,
  to the :class:`~mutagrad.core.engine.VjpRule` that differentiates it (or a
  :class:`~mutagrad.core.engine.CallRule`, which records its own call);
* :data:`FUNCTION_RULES` – a numpy function (or an ndarray method, keyed by its
  descriptor: ``np.ndarray.sort``, ``np.ndarray.astype``; ``np.ufunc.at``) to
  an adapter with numpy's own signature;
* :data:`NONDIFFERENTIABLE` – functions and ufuncs whose results carry no
  derivative (comparisons, ``argmax``, shape queries, ``floor``);
* :data:`ON_RULE_MISS` – what a ufunc without a rule asks before it is refused
  (SciPy's rules register there on first use, so that importing mutagrad does
  not import SciPy);
* :data:`PRIMITIVES` – each ``mutagrad.primitive`` wrapper (a key of
  ``FUNCTION_RULES`` once it has a rule) to the function it calls.

The rule modules register with :func:`ufunc_rule`, :func:`implements`,
:func:`nondifferentiable` and :func:`on_rule_miss`, each right beside its
definition; the traced array reads the tables (``mutagrad.traced.dispatch``).
Nothing here knows a numpy fact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mutagrad.core.engine import ANS, CallRule, VjpRule
from mutagrad.core.jvps import ELEMENTWISE

__all__ = [
    "ANS",
    "FUNCTION_RULES",
    "NONDIFFERENTIABLE",
    "ON_RULE_MISS",
    "PRIMITIVES",
    "UFUNC_RULES",
    "CallRule",
    "VjpRule",
    "implements",
    "nondifferentiable",
    "on_rule_miss",
    "rule_found_on_miss",
    "ufunc_rule",
]

UFUNC_RULES: dict[Any, VjpRule | CallRule] = {}
FUNCTION_RULES: dict[Any, Callable[..., Any]] = {}
NONDIFFERENTIABLE: set[Any] = set()
ON_RULE_MISS: list[Callable[[Any], bool]] = []
PRIMITIVES: dict[Callable[..., Any], Callable[..., Any]] = {}


def ufunc_rule(
    ufunc: Any,
    *vjps: Callable[..., Any] | None,
    reads: tuple[tuple[int | str, ...], ...],
    params: bool | None = None,
    jvp: Any = None,
    handles_complex: bool = False,
) -> VjpRule:
    """Register the rule of ``ufunc`` (or ``(ufunc, method)``) and return it.

    ``params`` says whether the vjps receive the call's keyword arguments.
    ``jvp``: its forward rule. An elementwise ufunc's Jacobian is diagonal, so
    by default it is the one derived from its vjps
    (:data:`~mutagrad.core.jvps.ELEMENTWISE`); a reduction (``(np.add,
    "reduce")``) or a gufunc (``np.matmul``) must give its own.
    ``handles_complex``: the vjps are right for complex values (see
    :class:`~mutagrad.core.engine.Rule`).
    """
    if jvp is None and isinstance(ufunc, np.ufunc) and ufunc.signature is None:
        jvp = ELEMENTWISE
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
    rule = VjpRule(
        name, fun, vjps, reads, params=params, jvp=jvp, handles_complex=handles_complex
    )
    UFUNC_RULES[ufunc] = rule
    return rule


def implements(*functions: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated adapter for the given numpy functions (or ndarray methods)."""

    def register(adapter: Callable[..., Any]) -> Callable[..., Any]:
        for fn in functions:
            FUNCTION_RULES[fn] = adapter
        return adapter

    return register


def nondifferentiable(*things: Any) -> None:
    """Declare functions or ufuncs whose outputs carry no derivative."""
    NONDIFFERENTIABLE.update(things)


def on_rule_miss(loader: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """Register ``loader(key)``: asked when ``key`` (a ufunc or ``(ufunc, method)``) has no rule.

    It registers the rules of ``key``'s library if it knows them and says
    whether ``key`` now has one.
    """
    ON_RULE_MISS.append(loader)
    return loader


def rule_found_on_miss(key: Any) -> bool:
    """Whether a loader of :data:`ON_RULE_MISS` registered a rule for ``key`` just now."""
    return any(loader(key) for loader in ON_RULE_MISS)
