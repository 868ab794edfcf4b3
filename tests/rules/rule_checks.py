"""Checks shared by the rule tests: values equal numpy's, gradients equal finite differences.

pytest puts this directory on ``sys.path`` (the tests are not a package), so
each test module imports these with ``from rule_checks import ...``.
"""

from __future__ import annotations

import numpy as np

import mutagrad
from mutagrad.core.registry import FUNCTION_RULES, UFUNC_RULES
from mutagrad.testing import check_gradient


def weights(shape):
    """A fixed cotangent with distinct entries of both signs, so misplaced terms show."""
    n = int(np.prod(shape, dtype=np.int64))
    return (np.linspace(0.5, 1.5, n) * (-1.0) ** np.arange(n)).reshape(shape)


def check_op(op, *args, order=1, quadratic=None, **tolerances):
    """``op``'s value on WrappedArrays is numpy's, and its gradient matches finite differences.

    The loss weights the output by :func:`weights`; with ``quadratic`` (the
    default at ``order=2``) it adds the output's square over 4, so that
    Hessian-vector products are not trivially zero.
    """
    if quadratic is None:
        quadratic = order == 2
    expected = op(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args])
    w = weights(np.shape(expected))

    def loss(*xs):
        out = op(*xs)
        if quadratic:
            return np.sum(out * w + out * out / 4), out
        return np.sum(out * w), out

    got = mutagrad.withgradient(loss, *args).val[1]
    np.testing.assert_array_equal(got, expected, strict=True)
    return check_gradient(loss, *args, order=order, **tolerances)


def _module_of(rule):
    vjps = getattr(rule, "vjps", None)
    if vjps is None:  # a rule object of its own kind, such as several outputs' rules
        return type(rule).__module__
    return next((v.__module__ for v in vjps if v is not None), None)


def rules_defined_in(module):
    """Functions and ufuncs whose registered rule was written in ``module``."""
    found = {key for key, rule in UFUNC_RULES.items() if _module_of(rule) == module}
    found |= {fn for fn, adapter in FUNCTION_RULES.items() if adapter.__module__ == module}
    return found
