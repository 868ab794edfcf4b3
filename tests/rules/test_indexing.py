"""mutagrad/traced/indexing.py: reading ``x[index]``.

Covers basic indexes (ints, negative ints, slices with steps, None, Ellipsis:
views, or a WrappedScalar for one element), integer-array indexes with
repeated and negative entries, boolean masks (full, leading axes, 0-d, traced
``x > c``), mixes of advanced and basic parts, and indexes that are themselves
WrappedArrays. Values on WrappedArrays equal numpy's and gradients match
finite differences; repeated reads must add their cotangents.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rule_checks import check_op, rules_defined_in

import mutagrad

# -- helpers -------------------------------------------------------------------


ELEMENTS = st.floats(-3, 3, allow_nan=False, allow_infinity=False, allow_subnormal=False)
SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, max_side=4)


def arrays(shape=SHAPES):
    return hnp.arrays(np.float64, shape, elements=ELEMENTS)


# -- basic indexes -------------------------------------------------------------


@given(data=st.data())
def test_basic_index(data):
    x = data.draw(arrays(), label="x")
    index = data.draw(
        hnp.basic_indices(x.shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True),
        label="index",
    )
    check_op(lambda x: x[index], x)


@given(data=st.data())
def test_single_elements_with_negative_indices(data):
    """Reading elements one by one: each read is a WrappedScalar."""
    x = data.draw(arrays(hnp.array_shapes(min_dims=1, max_dims=2, max_side=3)), label="x")
    negative = data.draw(st.booleans(), label="negative")
    positions = [
        tuple(p - n if negative else p for p, n in zip(i, x.shape)) for i in np.ndindex(x.shape)
    ]

    def f(x):
        total = 0.0
        for k, position in enumerate(positions):
            total = total + x[position] * (k + 1) + x[position] ** 2
        return total

    check_op(f, x)


def test_slices_by_hand():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    (g,) = mutagrad.gradient(lambda x: np.sum(x[1:]) + np.sum(x[::-2] * 10.0) + x[-1], x)
    np.testing.assert_array_equal(g, [10.0, 1.0, 11.0, 1.0, 12.0])


# -- integer-array indexes -----------------------------------------------------


@given(data=st.data())
def test_integer_array_index(data):
    """Indices may repeat (their cotangents must add) and be negative."""
    x = data.draw(arrays(), label="x")
    result_shape = hnp.array_shapes(min_dims=0, max_dims=2, max_side=4)
    index = data.draw(hnp.integer_array_indices(x.shape, result_shape=result_shape), label="index")
    check_op(lambda x: x[index], x)
    as_lists = tuple(i.tolist() for i in index)
    check_op(lambda x: x[as_lists] if len(as_lists) > 1 else x[as_lists[0]], x)


def test_repeated_indices_by_hand():
    x = np.array([1.0, 2.0, 3.0])
    (g,) = mutagrad.gradient(lambda x: np.sum(x[[0, 0, 2, -3]] * np.array([1.0, 2.0, 3.0, 4.0])), x)
    np.testing.assert_array_equal(g, [7.0, 0.0, 3.0])


MIXED = [
    (slice(None), [0, 0, 3]),
    ([2, 0, 2], slice(1, None)),
    ([0, 1], slice(None), [1, 1]),  # advanced parts split by a slice: numpy moves them first
    (Ellipsis, [1, 0, 1]),
    ([[0, 1], [1, 2]], 0),
    (None, [0, 2], Ellipsis),
    (-1, [-1, -4, -1], slice(None, None, -1)),
    (np.array([2, 2]), np.array([[3], [0]]), 1),
    ([1], [0], [1]),
]


@pytest.mark.parametrize("index", MIXED, ids=[str(i) for i in MIXED])
@given(x=arrays((3, 4, 2)))
def test_mixed_advanced_and_basic_index(index, x):
    check_op(lambda x: x[index], x)


# -- boolean masks -------------------------------------------------------------


@given(data=st.data())
def test_boolean_mask(data):
    x = data.draw(arrays(), label="x")
    full = data.draw(hnp.arrays(np.bool_, x.shape), label="full mask")
    rows = data.draw(hnp.arrays(np.bool_, x.shape[:1]), label="mask of the first axis")
    last = data.draw(hnp.arrays(np.bool_, x.shape[-1:]), label="mask of the last axis")
    check_op(lambda x: x[full], x)
    check_op(lambda x: x[rows], x)
    check_op(lambda x: x[..., last], x)
    check_op(lambda x: x[rows, ...][:, None], x)
    if x.ndim >= 2:
        check_op(lambda x: x[rows, 1:], x)
        check_op(lambda x: x[rows, -1], x)


@given(x=arrays())
def test_0d_boolean_index(x):
    check_op(lambda x: x[True], x)
    check_op(lambda x: x[False], x)
    check_op(lambda x: x[np.True_, ..., None], x)


@given(x=arrays(SHAPES).filter(lambda x: np.all(np.abs(x) > 1e-3)))
def test_traced_mask(x):
    """x > 0 is a traced boolean (a constant); as an index it selects, with no derivative."""
    check_op(lambda x: x[x > 0], x)
    if x.ndim >= 2:
        check_op(lambda x: x[x[..., 0] > 0.0] ** 2, x)


# -- indexes that are WrappedArrays --------------------------------------------


@st.composite
def distinct_matrices(draw):
    """2-D arrays with values at least 0.25 apart: argmax and argmin have no ties."""
    shape = draw(hnp.array_shapes(min_dims=2, max_dims=2, max_side=4))
    n = shape[0] * shape[1]
    order = draw(st.permutations(range(n)))
    return (np.array(order, dtype=np.float64) * 0.25 - n / 8).reshape(shape)


@given(x=distinct_matrices())
def test_index_computed_from_traced_values(x):
    """argmax of a traced array is a constant: usable as an index or a slice bound."""
    columns = np.arange(x.shape[1])
    check_op(lambda x: x[np.argmax(x, axis=0), columns], x)
    check_op(lambda x: x[np.argmin(x[:, 0])], x)
    check_op(lambda x: x[np.argmin(x[:, 0]) :, np.argmax(x[0]) :: 2], x)


# -- reads add up --------------------------------------------------------------


@given(x=arrays())
def test_overlapping_reads_add_their_cotangents(x):
    def f(x):
        flat = np.reshape(x, -1)
        return flat[0] + flat[:1] * 2.0 + flat[[0, 0]] * 3.0 + flat[flat > -10.0][:1] * 4.0

    check_op(f, x)


# -- coverage ------------------------------------------------------------------


def test_every_rule_of_the_module_is_tested():
    """x[index] is WrappedArray.__getitem__: the module registers no numpy function (yet)."""
    registered = rules_defined_in("mutagrad.traced.indexing")
    missing = {getattr(r, "__name__", repr(r)) for r in registered}
    assert not missing, f"rules without a test: {sorted(missing)}"
