"""Rules of mutagrad/rules/library.py: numpy's Python-level functions run as numpy's steps
(astype, fft.fftshift/ifftshift, apply_along_axis, apply_over_axes, vander, polymul,
polyder, polyint, linalg.outer, linalg.cross, linalg.tensorinv, linalg.tensorsolve).

Values on WrappedArrays equal numpy's, gradients match finite differences (to
second order), and numpy's errors come out for numpy's wrong calls.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rule_checks import check_op, rules_defined_in

ELEMENTS = st.floats(0.5, 1.5)
MATRICES = hnp.arrays(
    np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=4), elements=ELEMENTS
)
VECTORS = hnp.arrays(
    np.float64, hnp.array_shapes(min_dims=1, max_dims=1, max_side=4), elements=ELEMENTS
)


@given(x=MATRICES)
def test_astype(x):
    check_op(lambda x: np.astype(x, np.float64) * 2.0, x, order=2)
    check_op(lambda x: np.astype(x, np.float64, copy=False), x)


@given(x=MATRICES, axes=st.sampled_from([None, 0, 1, (1, 0), [-1]]))
def test_fftshift(x, axes):
    check_op(lambda x: np.fft.fftshift(x, axes) * np.fft.ifftshift(x, axes), x, order=2)


@given(x=MATRICES, axis=st.integers(-2, 1))
def test_apply_along_axis(x, axis):
    check_op(lambda x: np.apply_along_axis(np.cumprod, axis, x), x, order=2)
    check_op(lambda x: np.apply_along_axis(np.sum, axis, x), x)
    check_op(lambda x: np.apply_along_axis(lambda r: np.outer(r, r[:2]), axis, x), x)


@given(x=MATRICES)
def test_apply_over_axes(x):
    check_op(lambda x: np.apply_over_axes(np.sum, x, [0, 1]), x, order=2)
    check_op(lambda x: np.apply_over_axes(np.cumsum, x, -1), x)


@given(x=VECTORS, n=st.sampled_from([None, 0, 1, 3]), increasing=st.booleans())
def test_vander(x, n, increasing):
    check_op(lambda x: np.vander(x, n, increasing), x, order=2)


@given(p=VECTORS, q=VECTORS)
def test_polynomial_products_derivatives_and_integrals(p, q):
    check_op(np.polymul, p, q, order=2)
    check_op(lambda p: np.polymul(p, [0.0, 1.5, -0.5]), p)  # numpy drops leading zeros
    check_op(lambda p: np.polyder(p, 2), p, order=2)
    check_op(lambda p: np.polyder(p, 0) * np.polyder(p)[:1], p)
    check_op(lambda p, k: np.polyint(p, 2, k), p, q[:2], order=2)
    check_op(lambda p: np.polyint(p), p)


def test_polynomial_objects_stay_numpys():
    assert np.polymul(np.poly1d([1.0, 2.0]), [1.0, 1.0]) == np.poly1d([1.0, 3.0, 2.0])


@given(x=VECTORS, y=VECTORS)
def test_linalg_outer(x, y):
    check_op(np.linalg.outer, x, y, order=2)


@given(data=st.data())
def test_linalg_cross(data):
    x, y = (data.draw(hnp.arrays(np.float64, (2, 3), elements=ELEMENTS)) for _ in range(2))
    check_op(np.linalg.cross, x, y, order=2)
    check_op(lambda x, y: np.linalg.cross(x.T, y.T, axis=0), x, y)


# A (2, 3) x (2, 3) tensor whose (6, 6) matrix is well conditioned.
TENSOR = np.random.default_rng(5).uniform(-0.5, 0.5, (2, 3, 2, 3)) + 3 * np.eye(6).reshape(
    2, 3, 2, 3
)


def test_tensorinv_and_tensorsolve():
    check_op(lambda a: np.linalg.tensorinv(a, ind=2), TENSOR, order=2)
    check_op(lambda a: np.linalg.tensorinv(a.reshape(6, 2, 3), ind=1), TENSOR)
    b = np.linspace(0.5, 1.5, 6).reshape(2, 3)
    check_op(np.linalg.tensorsolve, TENSOR, b, order=2)
    moved = np.moveaxis(TENSOR, 2, 0)  # axes=(0,) moves it back to the end
    check_op(lambda a, b: np.linalg.tensorsolve(a, b, axes=(0,)), moved, b)


def test_numpys_errors():
    import mutagrad

    def f(x):
        with pytest.raises(ValueError, match="one-dimensional"):
            np.vander(x)
        with pytest.raises(ValueError, match="one-dimensional"):
            np.linalg.outer(x, x)
        with pytest.raises(ValueError, match="3-dimensional vectors"):
            np.linalg.cross(x, x)
        with pytest.raises(ValueError, match="Invalid ind"):
            np.linalg.tensorinv(x, ind=0)
        return np.sum(x)

    mutagrad.gradient(f, np.ones((2, 2)))


def test_every_rule_of_the_module_is_tested():
    tested = {np.astype, np.fft.fftshift, np.fft.ifftshift, np.apply_along_axis}
    tested |= {np.apply_over_axes, np.vander, np.linalg.outer, np.linalg.cross}
    tested |= {np.polymul, np.polyder, np.polyint}
    tested |= {np.linalg.tensorinv, np.linalg.tensorsolve}
    registered = rules_defined_in("mutagrad.rules.library")
    assert registered, "found no rules: did the registry change?"
    missing = {getattr(r, "__name__", repr(r)) for r in registered - tested}
    assert not missing, f"rules without a test: {sorted(missing)}"
