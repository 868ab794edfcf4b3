"""Views and aliasing: every view kind shares memory and version with its base, as in numpy.

For each kind: values equal numpy's, writing through the view reaches the base
(in value and gradient), reading the view after its base was written sees
the new values, and a write that overlaps a capture poisons it while a
disjoint one does not.
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient

M = np.arange(1.0, 13.0).reshape(3, 4) / 7

VIEWS = {
    "slice": lambda a: a[1:3],
    "step slice": lambda a: a[::2, 1::2],
    "row": lambda a: a[1],
    "column": lambda a: a[:, 2],
    "transpose": lambda a: a.T,
    "np.transpose": lambda a: np.transpose(a),
    "swapaxes": lambda a: np.swapaxes(a, 0, 1),
    "reshape": lambda a: a.reshape(4, 3),
    "ravel": lambda a: np.ravel(a),
    "view()": lambda a: a.view(),
    "negative step": lambda a: a[::-1],
    "expand_dims": lambda a: np.expand_dims(a, 0),
    "newaxis": lambda a: a[:, None, :],
    "squeeze": lambda a: np.squeeze(a[None]),
    "moveaxis": lambda a: np.moveaxis(a, 0, -1),
}


@pytest.mark.parametrize("take", VIEWS.values(), ids=VIEWS.keys())
def test_view_shares_memory_version_and_values(take):
    base = mutagrad.array(M)
    view = take(base)
    assert view.base is base
    np.testing.assert_array_equal(np.asarray(view), take(M.copy()))
    view *= 2.0
    assert base.version == view.version == 1
    expected = M.copy()
    take(expected)[...] *= 2.0
    np.testing.assert_array_equal(np.asarray(base), expected)


@pytest.mark.parametrize("take", VIEWS.values(), ids=VIEWS.keys())
def test_write_through_view_flows_gradient_into_base(take):
    def f(x):
        y = x * 1.0
        v = take(y)
        v *= 10.0
        v += x.sum()
        return np.sum(np.sin(y))

    check_gradient(f, M)


@pytest.mark.parametrize("take", VIEWS.values(), ids=VIEWS.keys())
def test_reading_a_view_after_its_base_is_written(take):
    def f(x):
        y = x * 1.0
        v = take(y)
        y[:] = x**2
        y[0, 0] = 5.0
        return np.sum(np.sin(v))

    check_gradient(f, M)
    plain = f(M.copy())
    assert mutagrad.withgradient(f, M).val == plain


@pytest.mark.parametrize("take", VIEWS.values(), ids=VIEWS.keys())
def test_overlapping_write_after_capture_poisons(take):
    def f(x):
        y = x * 1.0
        s = np.sum(np.sin(take(y)))  # saves the view
        y[...] = 0.0
        return s

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(f, M)
    check_gradient(f, M, mode="snapshot")


@pytest.mark.parametrize(
    "captured, written",
    [("[0]", "[1:]"), ("[:, :2]", "[:, 2:]"), ("[::2]", "[1]"), ("[0, 1]", "[0, 2]")],
)
def test_disjoint_writes_do_not_poison(captured, written):
    namespace = {"np": np}
    exec(
        f"def f(x):\n    y = x * 1.0\n    s = np.sum(np.sin(y{captured}))\n"
        f"    y{written} = 0.0\n    return s + np.sum(y)",
        namespace,
    )
    check_gradient(namespace["f"], M)


def test_diagonal_is_a_read_only_view_as_in_numpy():
    def f(x):
        y = x * 1.0
        d = np.diagonal(y)
        s = np.sum(d * d)
        y[0, 0] = 3.0
        return s + np.sum(np.diagonal(y) ** 3)

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(f, M)
    check_gradient(f, M, mode="snapshot")
    d = np.diagonal(mutagrad.array(M))
    with pytest.raises(ValueError, match="read-only"):
        d[0] = 1.0


def test_broadcast_to_is_an_overlapping_read_only_view():
    def f(x):
        b = np.broadcast_to(x, (3, 4))
        return np.sum(np.sin(b) * np.arange(12.0).reshape(3, 4))

    check_gradient(f, np.array([0.1, 0.2, 0.3, 0.4]))


def test_euler_loop_and_dp_table_work_in_poison_mode():
    def euler(y0, h=0.1, n=6):
        ys = np.zeros_like(np.outer(np.ones(n + 1), y0))
        ys[0] = y0
        for i in range(n):
            ys[i + 1] = ys[i] + h * np.sin(ys[i])
        return np.sum(ys[-1] ** 2)

    def table(x):
        n = len(x)
        t = np.zeros_like(np.outer(x, x))
        for i in range(n):
            for j in range(n):
                t[i, j] = (
                    np.sin(x[i] * x[j]) + (t[i - 1, j] if i else 0) + (t[i, j - 1] if j else 0)
                )
        return t[-1, -1]

    check_gradient(euler, np.array([0.5, -1.0]))
    check_gradient(table, np.array([0.3, 0.9, -0.4]))


def test_gauss_seidel_with_a_constant_matrix_works_in_poison_mode():
    A = np.array([[4.0, 1.0, 0.0], [1.0, 5.0, 2.0], [0.0, 2.0, 6.0]])

    def sweep(b, sweeps=3):
        u = np.zeros_like(b)
        for _ in range(sweeps):
            for i in range(len(b)):
                u[i] = (b[i] - A[i, :i] @ u[:i] - A[i, i + 1 :] @ u[i + 1 :]) / A[i, i]
        return np.sum(u**2)

    check_gradient(sweep, np.array([1.0, 2.0, 3.0]))
