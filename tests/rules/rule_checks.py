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
    grads = check_gradient(loss, *args, order=order, **tolerances)
    if order == 1:
        check_forward(op, *args)
    return grads


# The rules forward mode refused in this session's check_op calls (a refusal by name is
# allowed; a wrong tangent is not): test_forward.py prints nothing from it, it is for
# looking at with a debugger.
FORWARD_REFUSED: set[str] = set()


def _is_float_array(a):
    return isinstance(a, (np.ndarray, float, np.floating)) and np.result_type(a).kind == "f"


def check_forward(op, *args):
    """``op``'s forward rule agrees with its reverse rule: ``<w, J v> == <J^T w, v>``.

    ``v`` is a random direction in the float arguments (the others get no
    tangent), ``w`` the fixed weights; the value at the forward level is
    numpy's, bit for bit. A forward rule that is missing must be refused with
    MissingRuleError naming it.
    """
    __tracebackhide__ = True
    rng = np.random.default_rng(1)
    floats = [i for i, a in enumerate(args) if _is_float_array(a)]
    if not floats:
        return
    tangents = [
        rng.normal(size=np.shape(a)).astype(np.result_type(a)) if i in floats
        else np.zeros(np.shape(a)) if isinstance(a, (np.ndarray, int, np.integer)) else a
        for i, a in enumerate(args)
    ]  # fmt: skip
    try:
        out, t_out = mutagrad.jvp(op, [np.copy(a) if i in floats else a
                                       for i, a in enumerate(args)], tangents)  # fmt: skip
    except mutagrad.MissingRuleError as error:
        assert "forward mode" in str(error) or "no derivative rule" in str(error), str(error)
        FORWARD_REFUSED.add(str(error).split(" for ", 1)[-1].split(",", 1)[0])
        return
    expected = op(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args])
    np.testing.assert_array_equal(out, expected, strict=True)
    w = weights(np.shape(expected))
    grads = mutagrad.grad(lambda *xs: np.sum(op(*xs) * w), argnums=tuple(floats))(*args)
    lhs = float(np.sum(np.asarray(t_out, dtype=np.float64) * w))
    rhs = float(sum(np.sum(np.asarray(g, dtype=np.float64) * tangents[i])
                    for i, g in zip(floats, grads)))  # fmt: skip
    scale = float(np.sum(np.abs(np.asarray(t_out, dtype=np.float64) * w))) + abs(rhs) + 1e-300
    single = np.result_type(expected) != np.float64 or any(
        np.result_type(args[i]) != np.float64 for i in floats
    )
    rtol = 1e-4 if single else 1e-9
    assert abs(lhs - rhs) <= rtol * scale or (np.isnan(lhs) and np.isnan(rhs)), (
        f"forward rule disagrees with the reverse rule: <w, J v> = {lhs!r}, <J^T w, v> = {rhs!r}"
    )
    if not single:
        check_forward_over_reverse(op, args, floats, tangents, w)


def check_forward_over_reverse(op, args, floats, tangents, w):
    """The Hessian-vector product of ``sum(op * w + op**2 / 4)`` by forward over reverse
    (jvp of grad) equals reverse over reverse's, where reverse over reverse runs."""
    __tracebackhide__ = True

    def loss(*xs):
        out = op(*xs)
        return np.sum(out * w + out * out / 4)

    gradient = mutagrad.grad(loss, argnums=tuple(floats))

    def directional(*xs):
        return sum(np.sum(g * tangents[i]) for i, g in zip(floats, gradient(*xs)))

    try:
        want = mutagrad.grad(directional, argnums=tuple(floats))(*args)
    except mutagrad.MutagradError:
        return  # no second derivative in reverse mode either
    try:
        _, got = mutagrad.jvp(gradient, [np.copy(a) if i in floats else a
                                         for i, a in enumerate(args)], tangents)  # fmt: skip
    except mutagrad.MissingRuleError as error:
        assert "forward mode" in str(error), str(error)
        return
    for g, h in zip(got, want):
        h = np.asarray(h)
        scale = np.max(np.abs(h[np.isfinite(h)]), initial=0.0)
        np.testing.assert_allclose(g, h, rtol=1e-7, atol=1e-9 * (1 + scale),
                                   err_msg="forward over reverse != reverse over reverse")


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
