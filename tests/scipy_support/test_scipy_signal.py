"""mutagrad.scipy.signal (mutagrad/rules/scipy_signal.py): convolutions in every mode and shape."""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient, check_rule

scipy_signal = pytest.importorskip("scipy.signal")
from mutagrad.scipy import signal  # noqa: E402  (after the skip without SciPy)

RNG = np.random.default_rng(0)
SHAPES = [((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((4, 3), (2, 2)), ((2, 2), (4, 3)),
          ((4, 3), (2, 4)), ((5, 4), (3, 2))]  # fmt: skip


def _cases(two_d):
    for s1, s2 in SHAPES:
        if two_d and len(s1) != 2:
            continue
        for mode in ("full", "same", "valid"):
            yield RNG.standard_normal(s1), RNG.standard_normal(s2), mode


@pytest.mark.parametrize("name", ["convolve", "correlate", "convolve2d", "correlate2d"])
def test_every_mode(name):
    fn, want_fn = getattr(signal, name), getattr(scipy_signal, name)
    for a, b, mode in _cases(name.endswith("2d")):
        try:
            want = want_fn(a, b, mode)
        except ValueError:  # 'valid' of inputs neither of which contains the other
            continue
        got = mutagrad.withgradient(lambda a, b, m=mode: (0.0, fn(a, b, m)), a, b).val[1]
        np.testing.assert_array_equal(got, want, strict=True)
        check_rule(fn, a, b, fn_kwargs={"mode": mode})


def test_second_order():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((2, 2))
    for name in ("convolve", "correlate2d"):
        fn = getattr(signal, name)
        check_gradient(lambda a, b, fn=fn: np.sum(fn(a, b, "same") ** 2), a, b, order=2)


def test_a_boundary_other_than_zeros_is_refused():
    with pytest.raises(mutagrad.NotDifferentiableError, match="boundary='fill'"):
        mutagrad.grad(lambda a: np.sum(signal.convolve2d(a, np.ones((2, 2)), boundary="wrap")))(
            np.ones((3, 3))
        )


def test_autograds_generalized_convolve():
    # convolve(A, B, axes=, dot_axes=): convolve over some axes pairs, contract others; the
    # output has A's other axes, then B's, then the convolved ones (HIPS autograd's layout).
    a, b = RNG.standard_normal((3, 5)), RNG.standard_normal((3, 4, 2))
    for mode in ("full", "valid", "same"):
        got = signal.convolve(a, b, axes=([1], [1]), dot_axes=([0], [0]), mode=mode)
        want = sum(scipy_signal.convolve(a[i], b[i, :, 1], mode) for i in range(3))
        np.testing.assert_allclose(got[1], want)
        assert got.shape == (2, len(want))
        check_gradient(lambda a, b, m=mode: np.sum(signal.convolve(
            a, b, axes=([1], [1]), dot_axes=([0], [0]), mode=m) ** 2), a, b, order=2)  # fmt: skip
    outer = signal.convolve(a, b[0], axes=([1], [0]), mode="full")
    np.testing.assert_allclose(outer[2, 1], scipy_signal.convolve(a[2], b[0, :, 1]))


def test_float32():
    a, b = RNG.standard_normal((4, 3)).astype(np.float32), RNG.standard_normal((2, 2))
    b = b.astype(np.float32)
    got = mutagrad.withgradient(lambda a: (0.0, signal.convolve(a, b)), a).val[1]
    np.testing.assert_array_equal(got, scipy_signal.convolve(a, b), strict=True)
    check_rule(signal.convolve, a, b, atol=2e-2, rtol=2e-2, eps=1e-3)
