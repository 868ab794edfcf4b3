"""Testing tools for code differentiated with mutagrad, and for rules written for it.

The checks compare reverse mode with central finite differences and raise
``AssertionError`` with a readable report:

* :func:`check_gradient` – ``mutagrad.gradient(f, *args)`` against finite
  differences (element by element for small arguments, along random
  directions for large ones; ``order=2`` also checks Hessian-vector
  products), taken in float64 even for float32 arguments where ``f`` allows
  it, with steps and tolerances for the precision otherwise;
* :func:`check_rule` – a registered rule (``defvjp``, ``rrule`` or one of
  mutagrad's numpy rules) as a whole: its forward value, its pullback,
  structural zeros, and its safety when arrays are overwritten after the
  forward pass;
* :func:`numerical_gradient` – the finite-difference reference itself;
* :func:`assert_gradients_close` – two gradients equal up to tolerances,
  ``None`` (no gradient reached an argument) counting as zeros.

:func:`register_profiles` registers the hypothesis profiles ``ci``, ``dev``
and ``thorough`` (mutagrad's pytest plugin does it when pytest starts).
:mod:`mutagrad.testing.strategies` (which needs hypothesis) draws float
arrays, broadcastable shapes, index expressions and random mutating programs;
:mod:`mutagrad.testing.fuzz` judges a program in every mode (``judge``) and
runs the differential fuzzer. docs/testing.md shows a complete test suite
using them.
"""

from __future__ import annotations

from mutagrad.testing.comparison import assert_gradients_close
from mutagrad.testing.finite_differences import directional_derivative, numerical_gradient
from mutagrad.testing.gradient_check import ELEMENTWISE_LIMIT, check_gradient
from mutagrad.testing.profiles import register_profiles
from mutagrad.testing.rule_check import RuleCheck, check_rule, find_rule

__all__ = [
    "ELEMENTWISE_LIMIT",
    "RuleCheck",
    "assert_gradients_close",
    "check_gradient",
    "check_rule",
    "directional_derivative",
    "find_rule",
    "numerical_gradient",
    "register_profiles",
]
