"""Testing tools for code differentiated with mutagrad, and for rules written for it.

The checks compare reverse mode with central finite differences and raise
``AssertionError`` with a readable report:

* :func:`check_gradient` – ``mutagrad.gradient(f, *args)`` against finite
  differences (element by element for small arguments, along random
  directions for large ones; ``order=2`` also checks Hessian-vector products);
* :func:`check_rule` – a registered rule (``defvjp``, ``rrule`` or one of
  mutagrad's numpy rules) as a whole: its forward value, its pullback,
  structural zeros, and its safety when arrays are overwritten after the
  forward pass;
* :func:`numerical_gradient` – the finite-difference reference itself.

:mod:`mutagrad.testing.strategies` (which needs hypothesis) draws float
arrays, broadcastable shapes, index expressions and random mutating
programs. docs/testing.md shows a complete test file using all of them.
"""

from __future__ import annotations

from mutagrad.testing.finite_differences import directional_derivative, numerical_gradient
from mutagrad.testing.gradient_check import ELEMENTWISE_LIMIT, check_gradient
from mutagrad.testing.rule_check import RuleCheck, check_rule, find_rule

__all__ = [
    "ELEMENTWISE_LIMIT",
    "RuleCheck",
    "check_gradient",
    "check_rule",
    "directional_derivative",
    "find_rule",
    "numerical_gradient",
]
