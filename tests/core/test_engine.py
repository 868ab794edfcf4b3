"""The tape engine: structural zeros, sparse cotangents, activity, captures, nesting."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mutagrad
from mutagrad.core.engine import STATE
from mutagrad.core.tangents import SparseCotangent, unbroadcast
from mutagrad.testing import check_gradient


def test_pullback_of_a_structural_zero_is_not_called():
    calls = []

    @mutagrad.primitive
    def traced_op(x):
        return x * 2

    mutagrad.defvjp(traced_op, lambda g, ans, x: calls.append(1) or g * 2, reads=((),))

    def f(x):
        y = traced_op(x)
        y[:] = 0.0  # the write hands y's old value a structural zero
        return np.sum(y) + np.sum(x)

    np.testing.assert_array_equal(mutagrad.gradient(f, np.ones(2))[0], [1.0, 1.0])
    assert calls == []


def test_scalar_reads_accumulate_sparsely():
    seen = []
    original = SparseCotangent.dense

    def spy(self):
        seen.append(len(self.entries))
        return original(self)

    SparseCotangent.dense = spy
    try:
        n = 200
        g = mutagrad.gradient(lambda a: sum(a[i] * i for i in range(n)), np.ones(n))[0]
    finally:
        SparseCotangent.dense = original
    np.testing.assert_array_equal(g, np.arange(n))
    assert seen == [n]  # one buffer for all n reads


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("element"), st.integers(-6, 5), st.floats(-1e3, 1e3)),
            st.tuples(st.just("slice"), st.integers(0, 5), st.floats(-1e3, 1e3)),
            st.tuples(st.just("fancy"), st.integers(-6, 5), st.floats(-1e3, 1e3)),
        ),
        max_size=12,
    )
)
def test_element_reads_batched_into_one_add_give_the_same_bits(reads):
    # Runs of x[i] reads are added with one np.add.at: in the same order, so the
    # result must equal adding every contribution one by one, bit for bit.
    from mutagrad.core.tangents import BASIC, FANCY

    sparse = SparseCotangent((6,), np.dtype(np.float64))
    expected = np.zeros(6)
    for kind, i, value in reads:
        if kind == "element":
            sparse.entries.append((BASIC, i, np.float64(value)))
            expected[i] += value
        elif kind == "slice":
            sparse.entries.append((BASIC, slice(i, None), np.full(6 - i, value)))
            expected[i:] += value
        else:
            sparse.entries.append((FANCY, np.array([i, i]), np.array([value, -2 * value])))
            np.add.at(expected, [i, i], [value, -2 * value])
    np.testing.assert_array_equal(sparse.dense(), expected)


@given(st.lists(st.integers(-4, 3), min_size=1, max_size=8))
def test_repeated_scalar_and_fancy_reads_sum_their_cotangents(indices):
    x = np.linspace(0.5, 2.0, 4)

    def f(x):
        total = np.sum(x[np.array(indices)] ** 2)
        for i in indices:
            total = total + x[i] * x[i]
        return total

    check_gradient(f, x)


def test_constants_are_not_captured():
    A = np.arange(9.0).reshape(3, 3)

    def f(b):
        c = mutagrad.array(A)  # a constant: its gradient is never needed
        y = c @ b  # saves c (for b's gradient), not b
        c[0, 0] = 100.0  # poisons the saved c ...
        return np.sum(y)

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(f, np.ones(3))

    def g(b):
        c = mutagrad.array(A)
        y = b @ c  # b's gradient needs only c; c is constant so b is not saved
        d = b * 1.0
        z = c @ d  # saves c for d's gradient; d itself is not saved
        d[:] = 7.0  # ... so overwriting d poisons nothing
        return np.sum(y) + np.sum(z)

    np.testing.assert_allclose(mutagrad.gradient(g, np.ones(3))[0], A.sum(1) + A.sum(0))


def test_tape_state_is_released_after_the_call():
    w = mutagrad.array([1.0, 2.0])

    def f(x):
        y = x * w
        w[0] = w[0] * 1.0  # a write to a long-lived array
        return np.sum(y)

    mutagrad.gradient(f, np.ones(2), mode="snapshot")
    assert w._node is None
    assert not w._captures
    assert STATE.get() is None


@pytest.mark.parametrize(
    "shape, target",
    [((3, 4), (4,)), ((2, 3, 4), (3, 1)), ((5,), ()), ((2, 1), (2, 1)), ((3, 2), (1, 2))],
)
def test_unbroadcast_sums_exactly_the_broadcast_axes(shape, target):
    g = np.arange(np.prod(shape), dtype=float).reshape(shape)
    out = unbroadcast(g, target)
    assert out.shape == target
    assert np.sum(out) == np.sum(g)


def test_nested_gradient_is_recorded_by_the_outer_call():
    def inner_gradient(x):
        return np.sum(mutagrad.gradient(lambda y: np.sum(np.sin(y) * y), x)[0] ** 2)

    check_gradient(inner_gradient, np.array([0.3, -1.1, 2.0]))


def test_nested_gradient_does_not_confuse_perturbations():
    # d/dx [x * d/dy (x * y)] = d/dx [x * x] = 2x
    assert mutagrad.gradient(lambda x: x * mutagrad.gradient(lambda y: x * y, 1.0)[0], 3.0) == (
        6.0,
    )


def test_mutation_inside_a_nested_call_follows_the_inner_mode():
    def inner(x):
        def f(y):
            z = y * y
            y.fill(0)
            return np.sum(z)

        return np.sum(mutagrad.gradient(f, x, mode="snapshot")[0])

    check_gradient(inner, np.array([1.0, 2.0]))

    def poisoned(x):
        def f(y):
            z = y * y
            y.fill(0)
            return np.sum(z)

        return np.sum(mutagrad.gradient(f, x)[0])

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(poisoned, np.array([1.0, 2.0]))


def test_view_cotangents_scatter_into_their_base():
    def f(x):
        y = x * 1.0
        rows = [np.sin(y[i]) for i in range(3)]
        cols = np.sum(y[:, 1:] ** 2)
        diag = np.sum(np.diagonal(y) * 3)
        return sum(np.sum(r) for r in rows) + cols + diag + np.sum(y.T[0])

    check_gradient(f, np.arange(9.0).reshape(3, 3) / 7)


def test_fortran_ordered_and_transposed_bases():
    x = np.asfortranarray(np.arange(12.0).reshape(3, 4) / 5)

    def f(x):
        y = x + 0.0  # numpy keeps the Fortran layout
        y[1:, ::2] *= 3.0
        return np.sum(np.sin(y.T[1:3]) * y[:, 0])

    check_gradient(f, x)
    z = np.arange(24.0).reshape(2, 3, 4).transpose(1, 2, 0) / 7

    def g(z):
        w = z * 1.0  # contiguous in a permuted axis order
        w[:, 1] = 0.0
        return np.sum(np.exp(w[1:, :, 0]) + w.reshape(-1)[3])

    check_gradient(g, z)




@pytest.mark.parametrize("view_first", [True, False])
def test_a_fortran_ordered_cotangent_meets_view_reads_of_the_same_array(view_first):
    # prod's pullback along axis 0 of an array with a zero returns a fresh array in
    # Fortran order; a view read of the same array contributes a region entry that
    # assumes the array's own (C) order. The engine must not mix the two layouts.
    W = np.array([[1.0, 2.0, 5.0], [3.0, 4.0, 6.0]])

    def f(x):
        if view_first:
            return np.sum(x[1] * x[0]) + np.sum(np.prod(x, axis=0) * W[0])
        return np.sum(np.prod(x, axis=0) * W[0]) + np.sum(x.T[:, 1] * x[0])

    check_gradient(f, np.array([[0.0, 1.0, -0.5], [1.5, 0.5, 2.0]]), order=2)


def test_every_node_names_its_own_line_even_when_a_loop_shares_sites():
    # Sites are shared per call site (one tuple per bytecode offset) and the line
    # is resolved only for messages: each operation must still name its line.
    import inspect

    def f(x):
        s = 0.0
        for i in range(3):
            t = x[i] * x[i]
            s = s + np.sin(t)
        return s

    first = inspect.getsourcelines(f)[1]
    ops = mutagrad.explain(f, np.array([0.1, 0.2, 0.3]), file=None).operations
    lines: dict[str, set[int]] = {}
    for op in ops:
        if op.site:
            lines.setdefault(op.name, set()).add(int(op.site.split(":")[1].split()[0]))
    assert lines["getitem"] == lines["multiply"] == {first + 3}
    assert lines["sin"] == lines["add"] == {first + 4}
    assert [op.source for op in ops if op.name == "sin"] == ["s = s + np.sin(t)"] * 3


def test_a_sparse_cotangent_holding_a_traced_value_is_told_apart():
    """sparse_is_wrapped finds a traced entry among raw ones, whatever its place (it tests
    the entries' types, not each entry), and none in an empty cotangent."""
    from mutagrad.core.engine import sparse_is_wrapped
    from mutagrad.core.tangents import BASIC
    from mutagrad.traced import WrappedScalar

    def sparse(values):
        s = SparseCotangent((4,), np.dtype(np.float64))
        s.entries.extend((BASIC, i, v) for i, v in enumerate(values))
        return s

    traced = WrappedScalar(np.float64(1.0))
    assert not sparse_is_wrapped(sparse([]))
    assert not sparse_is_wrapped(sparse([np.float64(1.0), 2.0, np.ones(1)]))
    for place in range(3):
        values: list = [np.float64(1.0), 2.0, np.ones(1)]
        values[place] = traced
        assert sparse_is_wrapped(sparse(values))
    # (the loop's second-order case: element reads of a traced sweep, densified traced)
    check_gradient(lambda x: sum(x[i] ** 3 for i in range(3)), np.array([0.5, -1.0, 2.0]),
                   order=2)  # fmt: skip
