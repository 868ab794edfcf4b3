"""Rules of scipy.special (mutagrad/rules/scipy_special.py), registered on first use.

Each function's value on traced arrays is SciPy's own, bit for bit, in float64
and in float32 where SciPy keeps float32; check_rule checks each rule against
finite differences (and the overwrite checks), and check_gradient the
derivative of the derivative. ``import mutagrad`` never imports SciPy: the
rules are loaded by the first traced call of a SciPy ufunc.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient, check_rule

special = pytest.importorskip("scipy.special")
import mutagrad.scipy.special as mspecial  # noqa: E402  (after the skip without SciPy)

INSIDE_UNIT = np.array([0.2, 0.45, 0.7])
POSITIVE = np.array([1.5, 2.5, 0.8])
ANY = np.array([-1.3, 0.4, 2.1])

# (ufunc name, the arguments; the differentiated one is the last)
UNARY = [
    ("gammaln", POSITIVE), ("digamma", POSITIVE), ("psi", POSITIVE), ("gamma", POSITIVE),
    ("rgamma", POSITIVE), ("expit", ANY), ("logit", INSIDE_UNIT), ("log_expit", ANY),
    ("erf", ANY), ("erfc", ANY), ("erfinv", INSIDE_UNIT - 0.3), ("erfcinv", INSIDE_UNIT + 0.5),
    ("ndtr", ANY), ("ndtri", INSIDE_UNIT), ("log_ndtr", ANY), ("entr", POSITIVE),
    ("i0", ANY), ("i0e", ANY), ("i1", ANY), ("i1e", ANY), ("j0", POSITIVE), ("j1", POSITIVE),
    ("y0", POSITIVE), ("y1", POSITIVE),
]  # fmt: skip
BINARY = [("beta", POSITIVE, POSITIVE[::-1]), ("betaln", POSITIVE, POSITIVE[::-1]),
          ("xlogy", ANY, POSITIVE), ("xlog1py", ANY, INSIDE_UNIT)]  # fmt: skip
ORDERED = ["jv", "jn", "yv", "yn", "iv", "ive", "kv", "kve"]


def _assert_scipy_value(fn, *args):
    """fn's value on traced arrays is SciPy's on the raw arrays, bit for bit (dtype too)."""
    want = fn(*args)
    got = mutagrad.withgradient(lambda *a: (np.sum(fn(*a)), fn(*a)), *args).val[1]
    np.testing.assert_array_equal(got, want, strict=True)


@pytest.mark.parametrize(("name", "x"), UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unary(name, x, dtype):
    ufunc = getattr(special, name)
    x = x.astype(dtype)
    _assert_scipy_value(ufunc, x)
    tolerances = {} if dtype == np.float64 else {"atol": 2e-2, "rtol": 2e-2, "eps": 1e-3}
    check_rule(ufunc, x, **tolerances)
    if dtype == np.float64:
        check_gradient(lambda x: np.sum(ufunc(x) ** 2), x, order=2)


@pytest.mark.parametrize(("name", "x", "y"), BINARY, ids=[b[0] for b in BINARY])
def test_binary(name, x, y):
    ufunc = getattr(special, name)
    _assert_scipy_value(ufunc, x, y)
    _assert_scipy_value(ufunc, x.astype(np.float32), y.astype(np.float32))
    check_rule(ufunc, x, y)
    check_gradient(lambda x, y: np.sum(ufunc(x, y) ** 2), x, y, order=2)


@pytest.mark.parametrize("name", ORDERED)
def test_bessel_of_an_order(name):
    ufunc = getattr(special, name)
    _assert_scipy_value(ufunc, 2, POSITIVE)
    check_rule(ufunc, 2, POSITIVE)
    check_rule(ufunc, np.array([0, 1, 3]), POSITIVE)
    check_gradient(lambda x: np.sum(ufunc(1, x) ** 2), POSITIVE, order=2)


@pytest.mark.parametrize("name", ["jv", "iv", "kv"])
def test_a_derivative_in_an_order_is_refused_by_name(name):
    ufunc = getattr(special, name)
    with pytest.raises(mutagrad.NotDifferentiableError, match=rf"scipy\.special\.{name} .*order"):
        mutagrad.grad(lambda v: np.sum(ufunc(v, POSITIVE)))(np.array([1.0, 2.0, 0.5]))


def test_incomplete_beta_and_gamma_in_x():
    a, b, x = np.array([1.5, 2.0]), np.array([2.5, 1.2]), np.array([0.3, 0.6])
    _assert_scipy_value(lambda x: special.betainc(a, b, x), x)
    check_rule(special.betainc, a, b, x, wrt=[2])
    check_gradient(lambda x: np.sum(special.betainc(a, b, x) ** 2), x, order=2)
    for ufunc in (special.gammainc, special.gammaincc):
        _assert_scipy_value(lambda x, ufunc=ufunc: ufunc(a, x), x)
        check_rule(ufunc, a, x, wrt=[1])
        check_gradient(lambda x, ufunc=ufunc: np.sum(ufunc(a, x) ** 2), x, order=2)
    with pytest.raises(mutagrad.NotDifferentiableError, match=r"betainc .* to a"):
        mutagrad.grad(lambda a: np.sum(special.betainc(a, b, x)))(a)


def test_gammasgn_has_no_derivative():
    x = np.array([-1.5, 0.5, 2.5])
    assert np.array_equal(mutagrad.grad(lambda x: np.sum(special.gammasgn(x) * x))(x),
                          special.gammasgn(x))  # fmt: skip


def test_zeta_in_q_traces_scipys_code_to_its_ufunc():
    # scipy.special.zeta(x, q) is Python calling the Hurwitz zeta ufunc, which has the rule.
    _assert_scipy_value(lambda q: special.zeta(3.0, q), POSITIVE)
    check_gradient(lambda q: np.sum(special.zeta(3.0, q) ** 2), POSITIVE, order=2)


def test_polygamma_and_multigammaln():
    n = np.array([0, 1, 2])
    _assert_scipy_value(lambda x: mspecial.polygamma(n, x), POSITIVE)
    check_rule(mspecial.polygamma, n, POSITIVE)
    check_gradient(lambda x: np.sum(mspecial.polygamma(1, x) ** 2), POSITIVE, order=2)
    a = np.array([[4.2, 4.7], [4.4, 4.9]])
    for d in (1, 2, 3):
        _assert_scipy_value(lambda a, d=d: mspecial.multigammaln(a, d), a)
        check_rule(mspecial.multigammaln, a, d)
        check_gradient(lambda a, d=d: mspecial.multigammaln(a, d).sum() ** 2, a, order=2)


def test_digamma_to_third_order():
    # digamma' = polygamma(1, .), whose derivative is polygamma(2, .): each a rule.
    third = mutagrad.grad(mutagrad.grad(mutagrad.grad(lambda x: special.digamma(x))))(1.7)
    assert np.isclose(third, special.polygamma(3, 1.7), rtol=1e-10)


LOGSUMEXP_CASES = [
    (np.array([[0.3, -1.2, 2.0], [1.1, 0.4, -0.6]]), {}),
    (np.array([[0.3, -1.2, 2.0], [1.1, 0.4, -0.6]]), {"axis": 0}),
    (np.array([[0.3, -1.2, 2.0], [1.1, 0.4, -0.6]]), {"axis": 1, "keepdims": True}),
    (np.array([[0.3, -1.2, 2.0], [1.1, 0.4, -0.6]]), {"axis": (0, 1)}),
    (np.array([1.1]), {"keepdims": True}),
]


@pytest.mark.parametrize(("a", "kwargs"), LOGSUMEXP_CASES)
def test_logsumexp(a, kwargs):
    _assert_scipy_value(lambda a: mspecial.logsumexp(a, **kwargs), a)
    check_rule(mspecial.logsumexp, a, fn_kwargs=kwargs)
    check_gradient(lambda a: np.sum(mspecial.logsumexp(a, **kwargs) ** 2), a, order=2)
    b = np.exp(a[::-1] if a.ndim == 1 else a[:, ::-1])
    _assert_scipy_value(lambda a, b: mspecial.logsumexp(a, b=b, **kwargs), a, b)
    keepdims = {"keepdims": kwargs.get("keepdims", False)}
    check_rule(mspecial.logsumexp, a, kwargs.get("axis"), b, fn_kwargs=keepdims)
    check_gradient(lambda a, b: np.sum(mspecial.logsumexp(a, b=b, **kwargs) ** 2), a, b,
                   order=2)  # fmt: skip


def test_logsumexp_return_sign_and_float32():
    a, b = np.array([0.3, -1.2, 2.0]), np.array([1.0, -2.0, -0.5])
    value, sign = mspecial.logsumexp(mutagrad.asarray(a), b=b, return_sign=True)
    want_value, want_sign = special.logsumexp(a, b=b, return_sign=True)
    assert value == want_value and sign == want_sign
    check_gradient(lambda a: mspecial.logsumexp(a, b=b, return_sign=True)[0] ** 2, a, order=2)
    check_gradient(lambda b: mspecial.logsumexp(a, b=b, return_sign=True)[0], b)
    a32 = a.astype(np.float32)
    _assert_scipy_value(mspecial.logsumexp, a32)
    check_rule(mspecial.logsumexp, a32, atol=1e-2, rtol=1e-2, eps=1e-3)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_softmax(name, axis):
    fn = getattr(mspecial, name)
    x = np.array([[0.3, -1.2, 2.0], [1.1, 0.4, -0.6]])
    _assert_scipy_value(lambda x: fn(x, axis=axis), x)
    _assert_scipy_value(lambda x: fn(x, axis=axis), x.astype(np.float32))
    check_rule(fn, x, fn_kwargs={"axis": axis})
    check_gradient(lambda x: np.sum(fn(x, axis=axis) ** 3), x, order=2)


def test_untraced_calls_are_scipys():
    assert mspecial.logsumexp(ANY) == special.logsumexp(ANY)
    assert mspecial.gammaln is special.gammaln
    assert mspecial.kolmogorov is special.kolmogorov  # every other name is SciPy's own


def test_an_ufunc_used_with_out_after_the_rules_are_loaded():
    def f(x):
        y = np.zeros_like(x)
        special.expit(x, out=y)
        return np.sum(y * y)

    check_gradient(f, ANY, order=2)


def _run_python(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)  # fmt: skip
    return result.stdout.strip()


def test_import_mutagrad_imports_no_scipy_and_the_rules_load_on_first_use():
    out = _run_python(
        "import sys, numpy as np, mutagrad\n"
        "print('scipy' in sys.modules)\n"
        "import scipy.special\n"
        "print('mutagrad.rules.scipy_special' in sys.modules)\n"
        "g = mutagrad.grad(lambda x: np.sum(scipy.special.gammaln(x)))(np.array([1.5]))\n"
        "print('mutagrad.rules.scipy_special' in sys.modules, g[0] == scipy.special.psi(1.5))\n"
    )
    assert out.split("\n") == ["False", "False", "True True"]


def test_the_first_call_may_be_of_any_form():
    # The first traced call of a SciPy ufunc loads the rules from any miss path:
    # the one-operand and two-operand fast paths, keywords, three operands, out=.
    calls = {
        "unary": "scipy.special.expit(x)",
        "binary": "scipy.special.xlogy(x, x)",
        "keywords": "scipy.special.expit(x, dtype=np.float64)",
        "three": "scipy.special.betainc(2.0, 3.0, x)",
        "out": "scipy.special.expit(x, out=mutagrad.numpy.zeros(2))",
    }
    for name, call in calls.items():
        out = _run_python(
            "import numpy as np, mutagrad, mutagrad.numpy, scipy.special\n"
            f"f = lambda x: np.sum({call})\n"
            "g = mutagrad.grad(f)(np.array([0.25, 0.5]))\n"
            "print(np.all(np.isfinite(g)))\n"
        )
        assert out == "True", name
