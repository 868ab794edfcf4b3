"""mutagrad.scipy.integrate: odeint and solve_ivp by the adjoint method, to second order."""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient

scipy_integrate = pytest.importorskip("scipy.integrate")
from mutagrad.scipy import integrate  # noqa: E402  (after the skip without SciPy)

RNG = np.random.default_rng(0)
Y0, A1, A2 = RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal(3)
T = np.linspace(0.1, 0.2, 4)
WEIGHTS = np.arange(12.0).reshape(4, 3)
TOLERANCES = {"atol": 1e-4, "rtol": 1e-3}


def dynamics(y, t, arg1, arg2):
    return -np.sqrt(t) - y + arg1 - np.mean((y + arg2) ** 2)


def test_odeint_value_is_scipys_and_every_argument_differentiates():
    def loss(y0, t, a1, a2):
        return np.sum(integrate.odeint(dynamics, y0, t, args=(a1, a2)) * WEIGHTS)

    got = mutagrad.withgradient(lambda y0: (0.0, integrate.odeint(dynamics, y0, T, (A1, A2))),
                                Y0).val[1]  # fmt: skip
    np.testing.assert_array_equal(got, scipy_integrate.odeint(dynamics, Y0, T, (A1, A2)),
                                  strict=True)  # fmt: skip
    check_gradient(loss, Y0, T, A1, A2, **TOLERANCES)
    check_gradient(loss, Y0, T, A1, A2, order=2, **TOLERANCES)


def test_odeint_tfirst_and_a_parameter_written_after_the_solve():
    def loss(y0, k):
        ys = integrate.odeint(lambda t, y, k: -k * y, y0, T, args=(k,), tfirst=True)
        k[...] = 0.0  # the adjoint solve read k: the write must poison it or be harmless
        return np.sum(ys**2)

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(loss, Y0, A1**2)
    grads = mutagrad.gradient(loss, Y0, A1**2, mode="snapshot")
    check_gradient(lambda y0, k: np.sum(integrate.odeint(lambda t, y, k: -k * y, y0, T, args=(k,),
                                                         tfirst=True) ** 2), Y0, A1**2)  # fmt: skip
    want = mutagrad.gradient(lambda y0, k: np.sum(integrate.odeint(
        lambda t, y, k: -k * y, y0, T, args=(k,), tfirst=True) ** 2), Y0, A1**2)  # fmt: skip
    np.testing.assert_allclose(grads[0], want[0])


def rate(t, y, k, c):
    return -k * y + c * np.sin(t)


@pytest.mark.parametrize("start", [0.0, 0.2])
def test_solve_ivp(start):
    t_eval = np.linspace(start, 1.0, 5)
    k, c = np.array([0.5, 1.5, 0.8]), np.array([0.3, -0.2, 0.1])

    def loss(y0, k, c):
        solution = integrate.solve_ivp(rate, (0.0, 1.0), y0, t_eval=t_eval, args=(k, c),
                                       rtol=1e-10, atol=1e-10)  # fmt: skip
        return np.sum(solution.y**2)

    want = scipy_integrate.solve_ivp(rate, (0.0, 1.0), Y0, t_eval=t_eval, args=(k, c),
                                     rtol=1e-10, atol=1e-10).y  # fmt: skip
    got = mutagrad.withgradient(lambda y0: (0.0, integrate.solve_ivp(
        rate, (0.0, 1.0), y0, t_eval=t_eval, args=(k, c), rtol=1e-10, atol=1e-10).y), Y0).val[1]
    np.testing.assert_array_equal(got, want, strict=True)
    check_gradient(loss, Y0, k, c, **TOLERANCES)
    check_gradient(loss, Y0, k, c, order=2, **TOLERANCES)
