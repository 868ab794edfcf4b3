"""A mutagrad.primitive takes traced values in keyword arguments and inside tuples (args=).

An rrule's pullback returns a tuple for a tuple argument; a traced keyword argument reaches
the rule positionally (in the function's parameter order), so its cotangent is a positional
one; a keyword-only parameter holding a traced value is refused by name.
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient, check_rule


def _affine(x, t, args=()):
    """a x + b^2 t, with (a, b) = args (as odeint's args=)."""
    a, b = args
    return a * x + b * b * t


integrate = mutagrad.primitive(_affine)


@mutagrad.rrule(integrate)
def _affine_rule(x, t, args=()):
    a, b = args

    def pullback(g):
        return g * a, np.sum(g * b * b), (g * x, 2 * g * b * t)

    return _affine(x, t, args), pullback


Y0, K, C = np.array([1.0, -0.5]), np.array([0.7, 1.3]), np.array([0.2, -0.1])
T = 0.5


def reference(y0, k, c):
    return np.sum(_affine(y0, T, (k, c)) ** 2)


def test_traced_values_inside_a_tuple_argument():
    # Only the tuple holds traced values: the rule is used all the same.
    def loss(k, c):
        return np.sum(integrate(Y0, T, (k, c)) ** 2)

    got = mutagrad.gradient(loss, K, C)
    want = mutagrad.gradient(lambda k, c: reference(Y0, k, c), K, C)
    np.testing.assert_allclose(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1])
    check_gradient(lambda y0, k, c: np.sum(integrate(y0, T, (k, c)) ** 2), Y0, K, C)


def test_a_traced_keyword_argument_reaches_the_rule_positionally():
    def loss(y0, k, c):
        return np.sum(integrate(y0, t=T, args=(k, c)) ** 2)

    check_gradient(loss, Y0, K, C)


def test_the_tuple_and_the_keyword_after_the_forward_pass_poison():
    def loss(k, c):
        ys = integrate(Y0, T, args=(k, c))
        k[...] = 0.0  # the rule's closure holds k
        return np.sum(ys)

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(loss, K, C)


def test_a_wrong_tuple_cotangent_is_refused():
    bad = mutagrad.primitive(lambda x, pair: x * pair[0] * pair[1])

    @mutagrad.rrule(bad)
    def _(x, pair):
        return x * pair[0] * pair[1], lambda g: (g, (g,))  # one cotangent for a pair

    with pytest.raises(mutagrad.MutagradError, match="for a tuple argument, a tuple"):
        mutagrad.gradient(lambda a: np.sum(bad(1.0, (a, a))), np.ones(2))


def test_a_defvjp_rule_with_a_traced_keyword():
    scale = mutagrad.primitive(lambda x, factor=1.0: x * factor)
    mutagrad.defvjp(scale, lambda g, ans, x, factor: g * factor,
                    lambda g, ans, x, factor: np.sum(g * x))  # fmt: skip
    check_rule(scale, np.array([1.0, 2.0]), 3.0)
    check_gradient(lambda x, f: np.sum(scale(x, factor=f) ** 2), np.array([1.0, 2.0]), 3.0)


def test_a_keyword_only_argument_holding_a_traced_value_is_refused():
    def f(x, *, weight):
        return x * weight

    p = mutagrad.primitive(f)
    mutagrad.defvjp(p, lambda g, ans, x: g)
    with pytest.raises(mutagrad.NotDifferentiableError, match="keyword-only argument weight="):
        mutagrad.gradient(lambda w: np.sum(p(np.ones(2), weight=w)), np.ones(2))
