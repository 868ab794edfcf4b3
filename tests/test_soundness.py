"""Regression tests for the classes of silently wrong gradients found from outside.

Each program is plain numpy. In every mode it must give numpy's value and the
finite-difference gradient, or raise a MutagradError: never a wrong number.
Where the outcome is known (the program must work, or must be refused), the
test says which.
"""

from __future__ import annotations

import contextlib
import re

import numpy as np
import pytest

import mutagrad
from mutagrad.testing.finite_differences import numerical_gradient

MODES = ("poison", "strict", "snapshot")
RIGHT, REFUSED = "right", "refused"


def outcome(f, *args, mode):
    """``right`` or ``refused`` for ``f`` at ``args``; fails the test on a wrong number."""
    expected = f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        result = mutagrad.withgradient(f, *copies, mode=mode)
        value, grads = result.val, result.grad
    except mutagrad.MutagradError:
        return REFUSED
    for a, c in zip(args, copies):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, c, err_msg="the caller's array changed")
    assert np.allclose(value, expected, rtol=1e-12, atol=1e-12), (value, expected)
    fd = numerical_gradient(f, *args)
    for g, d in zip(grads, fd):
        g = np.zeros_like(d) if g is None else g
        np.testing.assert_allclose(g, d, rtol=1e-5, atol=1e-6)
    return RIGHT


def check(f, *args, expect=None, modes=MODES):
    for mode in modes:
        got = outcome(f, *args, mode=mode)
        want = expect.get(mode) if isinstance(expect, dict) else expect
        if want is not None:
            assert got == want, (mode, got)


WRITES_REFUSED_IN_STRICT = {"poison": RIGHT, "strict": REFUSED, "snapshot": RIGHT}

# -- 1. every object a pullback reads is owned by the engine ------------------------------


def where_mask_written_after(x):
    m = np.array([True, False, True])
    s = np.sum(x, where=m)
    m[:] = ~m
    return s


def derived_mask_flipped_with_out(x):
    m = x > 1
    s = np.sum(x * x, where=m)
    np.logical_not(m, out=m)
    return s


def derived_mask_written_by_index(x):
    m = x > 1
    s = np.mean(x, where=m)
    m[...] = True
    return s


def index_array_written_after(x):
    i = np.array([0, 2])
    y = np.take(x, i) * x[1]
    i[0] = 1
    return np.sum(y * y)


def where_mask_of_prod_written_after(x):
    m = np.array([True, True, False])
    p = np.prod(x, where=m)
    m[2] = True
    return p


@pytest.mark.parametrize(
    "f",
    [
        where_mask_written_after,
        derived_mask_flipped_with_out,
        derived_mask_written_by_index,
        index_array_written_after,
        where_mask_of_prod_written_after,
    ],
)
def test_arrays_a_pullback_reads_are_copied_when_saved(f):
    # A write to a raw mask is not a write to a traced array: every mode accepts it.
    check(f, np.array([0.5, 2.0, 3.0]), expect={"poison": RIGHT, "snapshot": RIGHT})


# -- 2. lists and tuples of traced values stored into arrays ---------------------------------


def list_into_zeros(x):
    y = np.zeros_like(x)
    y[:2] = [x[0], x[1]]
    return np.sum(y * y)


def list_into_copy(x):
    y = x * 1.0
    y[:1] = [x[1]]
    return np.sum(y * x)


def tuple_into_slice(x):
    y = np.zeros_like(x)
    y[1:] = (x[0] * 2.0, x[2])
    return np.sum(y * y)


def nested_list_into_matrix(x):
    y = np.zeros((2, 2))
    y = y + x[0] * 0.0
    y[:] = [[x[0], x[1]], [x[2], 1.0]]
    return np.sum(y * y)


def list_of_arrays(x):
    y = np.zeros((2, 3)) + 0.0 * x
    y[...] = [x, x * x]
    return np.sum(y * y)


def copyto_list(x):
    y = x * 1.0
    np.copyto(y, [x[1], x[0], x[2]])
    return np.sum(y * y * np.arange(1.0, 4.0))


def put_along_axis_list(x):
    y = x * 1.0
    np.put_along_axis(y, np.array([0, 2]), [x[1], x[1] * x[2]], axis=0)
    return np.sum(y * y)


def put_list(x):
    y = x * 0.0
    np.put(y, [0, 2], [x[2], x[0]])
    return np.sum(y * np.arange(1.0, 4.0))


def fill_list(x):
    y = np.empty_like(x)
    y.fill(x[1])
    return np.sum(y * x)


@pytest.mark.parametrize(
    "f",
    [
        list_into_zeros,
        list_into_copy,
        tuple_into_slice,
        nested_list_into_matrix,
        list_of_arrays,
        copyto_list,
        put_along_axis_list,
        put_list,
        fill_list,
    ],
)
def test_sequences_of_traced_values_keep_their_gradient(f):
    check(f, np.array([0.5, 2.0, 3.0]), expect=WRITES_REFUSED_IN_STRICT)


def test_a_sequence_of_views_of_the_array_written_is_stored_in_numpy_s_order():
    # numpy stores it row by row: both rows end up equal to the old x[1].
    def swap_rows(x):
        y = x * 1.0
        y[:2] = [y[1], y[0]]
        return np.sum(y * np.arange(6.0).reshape(3, 2))

    check(swap_rows, np.arange(1.0, 7.0).reshape(3, 2), expect=WRITES_REFUSED_IN_STRICT)

    def rows_and_a_scalar(x):
        y = x.T * 1.0  # (an F-ordered intermediate)
        y[:, :2] = [[y[1, 2], 0.5], y[0, ::-1][:2]]
        y[::-1] = (y[0], y[1][::-1])
        return np.sum(y * np.arange(6.0).reshape(2, 3))

    check(rows_and_a_scalar, np.arange(1.0, 7.0).reshape(3, 2), expect=WRITES_REFUSED_IN_STRICT)

    # x.setfield stores a list as x[...] = does; x.real = converts it to an array first
    def by_setfield_and_real(x):
        y = x * 1.0
        y[:2].setfield([y[1], y[0]], y.dtype)
        z = x * 2.0
        z.real = [z[2], z[1], z[0]]
        return np.sum((y + z) * np.arange(6.0).reshape(3, 2))

    check(by_setfield_and_real, np.arange(1.0, 7.0).reshape(3, 2), expect=WRITES_REFUSED_IN_STRICT)

    def swap_rows_stacked(x):
        y = x * 1.0
        y[:2] = np.stack([y[1], y[0]])
        return np.sum(y * np.arange(6.0).reshape(3, 2))

    check(swap_rows_stacked, np.arange(1.0, 7.0).reshape(3, 2), expect=WRITES_REFUSED_IN_STRICT)


# -- 3. in-place functions numpy runs unbuffered over overlapping memory ---------------------


def place_from_itself(x):
    y = x * 1.0
    np.place(y, np.array([False, True, True, False]), y[:2])
    return np.sum(y * np.arange(4.0))


def place_from_its_reverse(x):
    y = x * 1.0
    np.place(y, np.array([True, False, True, True]), y[::-1])
    return np.sum(y * np.arange(4.0))


def flat_from_itself(x):
    y = x * 1.0
    y.flat[1:] = y[:-1]  # element by element: every element becomes y[0]
    return np.sum(y * np.arange(4.0))


def fill_diagonal_from_itself(x):
    y = x * 1.0
    np.fill_diagonal(y, y.diagonal()[::-1])
    return np.sum(y * np.arange(9.0).reshape(3, 3))


def fill_diagonal_from_column(x):
    y = x * 1.0
    np.fill_diagonal(y, y[:, 0][::-1])
    return np.sum(y * np.arange(9.0).reshape(3, 3))


@pytest.mark.parametrize(
    ("f", "x"),
    [
        (place_from_itself, np.array([1.0, 2.0, 3.0, 4.0])),
        (place_from_its_reverse, np.array([1.0, 2.0, 3.0, 4.0])),
        (flat_from_itself, np.array([1.0, 2.0, 3.0, 4.0])),
        (fill_diagonal_from_itself, np.arange(1.0, 10.0).reshape(3, 3)),
        (fill_diagonal_from_column, np.arange(1.0, 10.0).reshape(3, 3)),
    ],
)
def test_overlapping_values_of_unbuffered_functions_are_copied_in_numpy_s_order(f, x):
    check(f, x, expect=WRITES_REFUSED_IN_STRICT)


def place_from_copy(x):
    y = x * 1.0
    np.place(y, np.array([False, True, True, False]), y[:2].copy())
    return np.sum(y * np.arange(4.0))


def test_the_suggested_copy_of_overlapping_values_works():
    check(place_from_copy, np.array([1.0, 2.0, 3.0, 4.0]), expect=WRITES_REFUSED_IN_STRICT)


@pytest.mark.parametrize(
    "write",
    [
        lambda y: np.copyto(y[1:], y[:-1]),
        lambda y: y.__setitem__(slice(1, None), y[:-1]),
        lambda y: y.__setitem__([1, 2, 3], y[0:3]),
        lambda y: np.put(y, [1, 2, 3], y[0:3]),
        lambda y: np.putmask(y, np.arange(5) > 0, y[::-1]),
        lambda y: np.multiply(y[:-1], 2.0, out=y[1:]),
        lambda y: np.add.at(y, [1, 1, 2], y[0:3]),
    ],
)
def test_buffered_writes_of_overlapping_values_match_numpy(write):
    def f(x):
        y = x * 1.0
        write(y)
        return np.sum(y * y * np.arange(1.0, 6.0))

    check(f, np.array([0.5, 1.0, 1.5, 2.0, 2.5]), expect=WRITES_REFUSED_IN_STRICT)


# -- 4. layouts: C, F, non-contiguous, negative strides ------------------------------------


def transposed_product_row_and_element(x):
    y = x.T * 1.0  # F-ordered, as numpy keeps the layout
    return np.sum(y[0] * np.array([1.0, 10.0])) + y[1, 0] * 100.0


def element_then_row(x):
    y = x.T * 1.0
    return y[1, 0] * 100.0 + np.sum(y[0] * np.array([1.0, 10.0])) + np.sum(y[:, 1] * 7.0)


def fortran_copy_reads(x):
    y = np.copy(x, order="F")
    return y[0, 1] * 3.0 + np.sum(y[1] * np.array([5.0, 7.0])) + np.sum(y.T[0] ** 2)


def written_then_read_fortran(x):
    y = np.asfortranarray(x * 1.0) if False else np.copy(x, order="F")
    y[0] = y[0] * 2.0
    return y[1, 0] * 100.0 + np.sum(y[0] * np.array([1.0, 10.0]))


def sorted_in_place_then_read(x):
    y = x.T * 1.0
    y.sort(axis=0)
    return y[1, 0] * 100.0 + np.sum(y[0] * np.array([1.0, 10.0]))


@pytest.mark.parametrize(
    "f",
    [
        transposed_product_row_and_element,
        element_then_row,
        fortran_copy_reads,
    ],
)
@pytest.mark.parametrize(
    "layout",
    [
        lambda a: a,
        np.asfortranarray,
        lambda a: np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1],
        lambda a: np.pad(a, 1)[1:-1, 1:-1],
    ],
)
def test_reads_of_any_layout_put_gradients_in_the_right_cells(f, layout):
    check(f, layout(np.array([[1.0, 2.0], [3.0, 4.0]])), expect=RIGHT)


@pytest.mark.parametrize("f", [written_then_read_fortran, sorted_in_place_then_read])
def test_writes_of_non_c_layouts_put_gradients_in_the_right_cells(f):
    check(f, np.array([[1.0, 2.5], [3.0, 0.5]]), expect=WRITES_REFUSED_IN_STRICT)


# -- 5. complex intermediates are differentiated; non-float results are refused -------------


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.sum(np.abs(x * 1j)),
        lambda x: np.sum(np.abs(x * (1 + 1j))),
        lambda x: np.real(np.sum(x * (1 + 0.2j))),
        lambda x: np.sum(np.exp(1j * x).real),
        lambda x: np.sum(x.astype(complex).real),
        lambda x: np.sum(np.sqrt(x - 5.0 + 0j).imag),
    ],
)
def test_complex_intermediates_are_differentiated(f):
    check(f, np.array([1.0, 2.0]), expect=RIGHT)


@pytest.mark.parametrize(
    "f", [lambda x: np.sum(x > 0), lambda x: np.argmax(x), lambda x: bool(np.sum(x) > 0)]
)
def test_non_float_results_are_refused(f):
    for mode in MODES:
        with pytest.raises(mutagrad.MutagradError):
            mutagrad.gradient(f, np.array([1.0, 2.0]), mode=mode)


def test_a_complex_constant_is_fine_when_no_derivative_flows_through_it():
    def f(x):
        phase = np.exp(1j * np.array([0.3, 0.4]))  # constant
        return np.sum(x * np.abs(phase))

    check(f, np.array([1.0, 2.0]), expect=RIGHT)


def test_writing_a_traced_value_into_a_complex_array():
    def f(x):
        z = np.zeros(2, dtype=complex) + 0.5 * x
        z[0] = x[0] * (1 - 2j)
        z.imag[1] = x[1] ** 2
        return np.sum(np.abs(z))

    check(f, np.array([1.0, 2.0]), expect=WRITES_REFUSED_IN_STRICT)


# -- 6. memory that aliases the inputs ------------------------------------------------------


@pytest.mark.parametrize("size", [3, 100_000])
@pytest.mark.parametrize(
    "make_alias",
    [
        lambda a: a[:],
        lambda a: a.reshape(-1)[::1],
        lambda a: np.frombuffer(memoryview(a)),
        lambda a: a.T,
    ],
)
def test_a_write_through_a_view_made_before_the_call_is_refused(size, make_alias):
    for mode in MODES:
        a = np.linspace(1.0, 2.0, size)
        alias = make_alias(a)

        def f(x, alias=alias):
            y = x * x
            alias[0] = 100.0
            return np.sum(y) + np.sum(x * x)

        with pytest.raises(mutagrad.MutagradError, match="changed while f ran"):
            mutagrad.gradient(f, a, mode=mode)
        assert a.flags.writeable


def test_a_strided_argument_is_watched_too():
    a = np.linspace(1.0, 2.0, 10)
    alias = a[:]

    def f(x):
        alias[2] = 100.0  # element 1 of the argument a[::2]
        return np.sum(x * x)

    with pytest.raises(mutagrad.MutagradError, match="changed while f ran"):
        mutagrad.gradient(f, a[::2])


@pytest.mark.parametrize(
    "make_argument",
    [
        lambda: np.asfortranarray(np.linspace(1.0, 2.0, 60_000).reshape(200, 300)),
        lambda: np.linspace(1.0, 2.0, 60_000).reshape(200, 300)[::2, ::3],
        lambda: np.linspace(1.0, 2.0, 60_000, dtype=np.float32),
        lambda: np.linspace(1.0, 2.0, 60_000) * (1 + 1j),
    ],
    ids=["fortran", "strided", "float32", "complex"],
)
def test_a_change_of_one_ulp_through_an_outside_view_is_detected(make_argument):
    # The hash reads the bytes in every layout and dtype: the smallest change counts.
    a = make_argument()
    alias = a[...]

    def f(x):
        first = (0,) * alias.ndim
        alias.real[first] = np.nextafter(alias.real[first], np.inf)
        return np.sum(np.abs(x) ** 2)

    with pytest.raises(mutagrad.MutagradError, match="changed while f ran"):
        mutagrad.gradient(f, a)


def test_a_permutation_through_an_outside_view_of_a_large_input_is_detected():
    a = np.linspace(1.0, 2.0, 100_000)
    alias = a[:]

    def f(x):
        alias[[0, 1]] = alias[[1, 0]]  # keeps the sum of the elements
        return np.sum(x * x)

    with pytest.raises(mutagrad.MutagradError, match="changed while f ran"):
        mutagrad.gradient(f, a)
    assert a.flags.writeable


def test_the_raw_array_behind_asarray_cannot_change_a_saved_value():
    raw = np.array([1.0, 2.0, 3.0])
    w = mutagrad.asarray(raw)

    def f(x):
        y = x * w
        raw[0] = 100.0  # not w's memory: asarray copied it
        return np.sum(y)

    for mode in MODES:
        (g,) = mutagrad.gradient(f, np.ones(3), mode=mode)
        np.testing.assert_array_equal(g, [1.0, 2.0, 3.0])
        raw[0] = 1.0


@pytest.mark.parametrize("size", [4, 100_000])
def test_arguments_sharing_memory_refuse_writes_and_allow_reads(size):
    base = np.linspace(1.0, 2.0, size + 2)

    def reads(x, y):
        return np.sum(x * y[: x.size])

    result = mutagrad.withgradient(reads, base[:size], base[2:])
    value, (gx, _) = result.val, result.grad
    assert value == pytest.approx(reads(base[:size], base[2:]))
    np.testing.assert_allclose(gx, base[2:][:size])

    def writes(x, y):
        y[0] = 5.0
        return np.sum(x * x)

    for mode in MODES:
        with pytest.raises(mutagrad.MutagradError, match="shares memory"):
            mutagrad.withgradient(writes, base[:size], base[2:], mode=mode)
    x = np.array([1.0, 2.0])
    with pytest.raises(mutagrad.MutagradError, match="shares memory"):
        mutagrad.withgradient(writes, x, x)
    np.testing.assert_array_equal(x, [1.0, 2.0])


# -- no internal exception passes for numpy's own --------------------------------------------


def test_an_internal_failure_where_numpy_works_becomes_a_mutagrad_error(monkeypatch):
    from mutagrad.traced import value as wrapped

    def broken_rule(*args, **kwargs):
        raise TypeError("an internal bug")

    monkeypatch.setitem(wrapped.FUNCTION_RULES, np.cumsum, broken_rule)
    with pytest.raises(mutagrad.NotDifferentiableError, match=r"(?s)np\.cumsum.*internal bug"):
        mutagrad.gradient(lambda x: np.sum(np.cumsum(x)), np.ones(3))


def test_numpy_s_own_errors_propagate_unchanged():
    with pytest.raises(ValueError, match="cannot reshape"):
        mutagrad.gradient(lambda x: np.sum(np.reshape(x, (5,))), np.ones(3))


def test_arguments_sharing_memory_through_a_memoryview_refuse_writes():
    a = np.linspace(1.0, 2.0, 6)

    def writes(x, y):
        y[0] = 5.0
        return np.sum(x * x)

    with pytest.raises(mutagrad.MutagradError, match="shares memory"):
        mutagrad.gradient(writes, a, np.frombuffer(memoryview(a)))
    # Arrays over different buffers are never flagged.
    assert mutagrad.gradient(writes, a, a.copy())[0] is not None


# -- arguments keep numpy's strides, so views and copies are numpy's --------------------------

OWNER = np.random.default_rng(0).uniform(0.5, 1.5, (6, 8))
ARGUMENT_LAYOUTS = {
    "C": lambda a: a[:3, :4].copy(),
    "F": lambda a: np.asfortranarray(a[:3, :4]),
    "every other": lambda a: a[::2, ::2],
    "reversed": lambda a: a[::-1, ::-1][:3, :4],
    "reversed columns": lambda a: a[:3, ::-1],
    "transposed": lambda a: a[:4, :3].T,
    "strided transposed": lambda a: a[::2, 1::2].T,
    "mixed steps": lambda a: a[::-2, ::3],
}


def ravel_then_write(x):
    v = x.ravel()
    v *= 2.0
    return np.sum(np.tanh(x))


def reshape_then_write(x):
    v = x.reshape(-1)
    v[0] = 2.0
    return np.sum(np.tanh(x))


def reads_rows_columns_elements(x):
    return np.sum(x[0] * 3.0) + x[-1, -1] * 7.0 + np.sum(x[:, 1] ** 2) + np.sum(x.T[1] * 5.0)


def fortran_ravel_then_write(x):
    t = np.ravel(x, order="F")
    x[0] = 2.0
    return np.sum(np.tanh(t))


def sorted_in_place_then_rows(x):
    x.sort(axis=0)
    return np.sum(x[0] * 2.0) + x[1, 0] * 3.0


@pytest.mark.parametrize("layout", ARGUMENT_LAYOUTS.values(), ids=ARGUMENT_LAYOUTS.keys())
@pytest.mark.parametrize(
    "f",
    [
        ravel_then_write,
        reshape_then_write,
        reads_rows_columns_elements,
        fortran_ravel_then_write,
        sorted_in_place_then_rows,
    ],
)
def test_arguments_of_any_layout_behave_as_in_numpy(layout, f):
    def fresh():
        return layout(OWNER.copy())

    want = f(fresh())
    # Central differences on arguments with the same strides as the caller's.
    fd = np.zeros(fresh().shape)
    for i in np.ndindex(fd.shape):
        up, down = fresh(), fresh()
        up[i] += 1e-6
        down[i] -= 1e-6
        fd[i] = (f(up) - f(down)) / 2e-6
    for mode in ("poison", "snapshot"):
        result = mutagrad.withgradient(f, fresh(), mode=mode)
        assert result.val == pytest.approx(want, rel=1e-12)
        np.testing.assert_allclose(result.grad[0], fd, rtol=1e-5, atol=1e-6)


def test_the_finite_difference_oracle_keeps_the_argument_s_strides():
    x = OWNER[:3, ::-1]  # reshape(-1) copies it: the write does not reach x
    (fd,) = mutagrad.testing.numerical_gradient(reshape_then_write, x)
    np.testing.assert_allclose(fd, 1.0 - np.tanh(x) ** 2, rtol=1e-6)


def test_sort_keeps_numpy_s_memory_order():
    def f(x):
        t = np.sort(x.copy(order="F"), axis=0)
        v = t.reshape(-1)  # a copy, as t is F-ordered
        v[...] = 1.25
        return np.sum(np.tanh(t))

    check(f, np.array([[-1.89, -0.77, 0.11], [-0.33, 0.81, 1.73]]), expect=WRITES_REFUSED_IN_STRICT)


def test_conj_of_a_real_array_is_the_array_itself():
    def f(x):
        y = x * 1.0
        t = y.conj()
        t[0] = 2.0
        return np.sum(np.tanh(y))

    check(f, np.array([0.31, 1.67, 2.23, -0.77]), expect=WRITES_REFUSED_IN_STRICT)


@pytest.mark.parametrize(
    "join",
    [
        lambda y: np.concatenate([y[1:], y[:1]], out=y),
        lambda y: np.concatenate([y[:2][::-1], 2.0 * y[2:]], out=y),
        lambda y: np.stack([y[1:3], y[0:2]], out=y.reshape(2, 2)),
    ],
)
def test_joining_into_an_out_that_overlaps_the_inputs_follows_numpy_s_order(join):
    # numpy fills out one input after the other: a later input may read what an earlier
    # one wrote (np.concatenate([y[1:], y[:1]], out=y) ends with the new y[0])
    def f(x):
        y = x * 1.0
        join(y)
        return np.sum(np.tanh(y) * np.arange(1.0, 5.0))

    check(f, np.array([0.31, 1.67, 2.23, -0.77]), expect=WRITES_REFUSED_IN_STRICT)


# -- np.asarray of an array that carries no derivative: numpy's alias, kept safe ------------


def test_np_asarray_of_a_constant_is_a_writable_alias_as_in_numpy():
    def f(x):
        y = np.zeros_like(x)
        t = np.asarray(y)
        t *= 2.0
        t += 1.0
        return np.sum(x * x) + np.sum(t) + np.sum(y * x)

    check(f, np.array([0.5, 1.5]), expect=RIGHT)


def test_a_saved_value_survives_a_write_through_its_plain_alias():
    def f(x):
        y = np.ones_like(x)
        w = y * x  # multiply saves y for the gradient of x
        t = np.asarray(y)
        t[0] = 5.0  # no version sees this write: the saved y was copied
        return np.sum(w) + np.sum(y)

    check(f, np.array([0.5, 1.5]), expect=RIGHT)


@pytest.mark.parametrize("export", [np.asarray, np.asfortranarray, np.ascontiguousarray])
def test_a_differentiated_write_into_an_exported_array_is_refused(export):
    def f(x):
        t = np.round(x, 1)
        a = export(t)
        t[1:] = x[0] * x[1:]  # a shows these values but would carry no derivative
        return np.sum(a * a)

    check(f, np.array([0.5, 1.5, 2.5]), expect=REFUSED)


def test_an_out_write_of_a_differentiated_value_into_an_exported_array_is_refused():
    def f(x):
        t = np.zeros_like(x)
        a = np.asarray(t)
        np.multiply(x, 2.0, out=t)
        return np.sum(a * a)

    check(f, np.array([0.5, 1.5, 2.5]), expect=REFUSED)


def writes_every_other_from_itself(x):
    x[::2] = x[2:]
    return np.sum(np.tanh(x))


def test_an_overlapping_write_numpy_copies_element_by_element_is_refused():
    a = np.array([-0.77, 1.310755, -0.68949, -0.189735, -0.26998])
    # numpy's result differs with the layout: buffered for a contiguous array, element by
    # element for a reversed one (found by the fuzzer). The first is right, the second refused.
    check(writes_every_other_from_itself, a.copy(), expect=WRITES_REFUSED_IN_STRICT)
    for mode in MODES:
        with pytest.raises(mutagrad.MutagradError):
            mutagrad.gradient(writes_every_other_from_itself, a.copy()[::-1], mode=mode)


def writes_a_traced_value_through_flat(x):
    y = np.zeros((3, 2))
    y.flat[0] = x[0]  # numpy catches the conversion error and raises its own ValueError
    return np.sum(y)


def test_numpys_replacement_of_a_conversion_error_is_undone():
    # The fuzzer's one crash class: numpy's flat setitem replaces mutagrad's
    # TracerConversionError with "ValueError: Error setting single item of array."
    for mode in MODES:
        with pytest.raises(mutagrad.TracerConversionError, match="a traced value into a raw array"):
            mutagrad.gradient(writes_a_traced_value_through_flat, np.ones(3), mode=mode)


def test_the_programs_own_errors_pass_through_unchanged():
    def f(x):
        with contextlib.suppress(mutagrad.TracerConversionError):
            float(x[0])  # a conversion error, handled by the program
        raise ValueError("the program's own")

    with pytest.raises(ValueError, match="the program's own"):
        mutagrad.gradient(f, np.ones(3))


# -- a user's rule whose output is memory of its argument: numpy's view, kept ----------------
#
# The output keeps the rule's node and the argument's memory (mutagrad.traced.aliases): a
# write through it is refused, and a write to the argument makes a later read of it refused
# (on the tape lazily, at a forward level at the write).


@mutagrad.primitive
def reversed_view(x):
    return x[::-1]  # numpy: a view of x


# reads=((),): the vjp reads nothing, so a later write to x poisons no saved value
mutagrad.defvjp(reversed_view, lambda g, ans, x: g[::-1], reads=((),))
mutagrad.defjvp(reversed_view, lambda t, ans, x: t[::-1])


@mutagrad.primitive
def same_array(x):
    return x  # numpy: the argument itself


mutagrad.defvjp(same_array, lambda g, ans, x: g, reads=((),))


@mutagrad.primitive
def reversed_by_rrule(x):
    return x[::-1]


@mutagrad.rrule(reversed_by_rrule)
def _reversed_rule(x):
    return x[::-1], lambda g: (g[::-1],)


ALIASING_RULES = {"defvjp": reversed_view, "identity": same_array, "rrule": reversed_by_rrule}


def write_through_output(view):
    def f(x):
        y = x * 1.0
        r = view(y)
        r[0] = 100.0 * x[0]  # numpy: writes y through the view
        return np.sum(y * x)

    return f


def argument_written_after_use(view):
    def f(x):
        y = x * 1.0
        z = view(y) ** 2  # computed before the write: its derivative holds
        y[0] = 5.0
        return np.sum(z * x)

    return f


def argument_written_then_output_read(view):
    def f(x):
        y = x * 1.0
        r = view(y)
        y[0] = 50.0  # numpy: r shows it
        return np.sum(r * x)

    return f


def argument_written_then_output_tested(view):
    def f(x):
        y = x * 1.0
        r = view(y)
        y[0] = 50.0
        return np.sum(x * x) * (2.0 if np.max(r) > 10 else 1.0)  # a value, no gradient

    return f


def input_written_then_output_tested(view):
    def f(x):
        r = view(x)  # the caller's memory: the write copies it, and r follows
        x[0] = 50.0
        return np.sum(x * x) * (2.0 if np.max(r) > 10 else 1.0)

    return f


def views_of_the_output(view):
    def f(x):
        r = view(x * 1.0)
        return np.sum(r[1:] * x[1:]) + np.sum(r.reshape(3, 1) * x)

    return f


def base_written_elsewhere(view):
    def f(x):
        y = np.zeros(4, like=x)
        y[:3] = x
        r = view(y[:2])
        y[3] = 1.0  # does not overlap r
        return np.sum(r * x[:2] * x[:2]) + np.sum(y)

    return f


def output_of_an_output(view):
    def f(x):
        y = x * 1.0
        r = view(view(y))
        y[1] = 9.0
        return np.sum(r * x)

    return f


def input_written_then_views_of_output_tested(view):
    def f(x):
        r = view(x)  # the caller's memory: the write copies it, and r's views follow
        views = (r[::2], r.reshape(3, 1).T, view(view(x))[::2], view(r[::2])[::-1])
        x[0] = 50.0
        scale = 1.0
        for v in views:  # each holds x[0]
            scale = scale * (2.0 if np.max(v) > 10 else 1.0)
        return np.sum(x * x) * scale

    return f


ALIASING_PROGRAMS = {
    write_through_output: REFUSED,
    argument_written_after_use: {"poison": RIGHT, "strict": REFUSED, "snapshot": RIGHT},
    argument_written_then_output_read: REFUSED,
    argument_written_then_output_tested: WRITES_REFUSED_IN_STRICT,
    input_written_then_output_tested: WRITES_REFUSED_IN_STRICT,
    input_written_then_views_of_output_tested: WRITES_REFUSED_IN_STRICT,
    views_of_the_output: RIGHT,
    base_written_elsewhere: WRITES_REFUSED_IN_STRICT,
    output_of_an_output: REFUSED,
}


@pytest.mark.parametrize("program", ALIASING_PROGRAMS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("kind", ALIASING_RULES)
def test_a_rule_returning_memory_of_its_argument_behaves_as_numpy_or_is_refused(kind, program):
    expect = ALIASING_PROGRAMS[program]
    if kind == "rrule" and program is argument_written_after_use:
        # An rrule's closure holds its argument: the write poisons it, and snapshot mode
        # cannot copy what a closure holds.
        expect = REFUSED
    elif kind == "rrule" and program in (argument_written_then_output_tested,
                                         input_written_then_output_tested,
                                         input_written_then_views_of_output_tested):  # fmt: skip
        expect = {**expect, "snapshot": REFUSED}
    check(program(ALIASING_RULES[kind]), np.array([1.0, 2.0, 3.0]), expect=expect)


def _message(f, *args, **kwargs):
    with pytest.raises(mutagrad.NotDifferentiableError) as error:
        mutagrad.gradient(f, *args, **kwargs)
    return str(error.value)


def test_a_write_through_an_aliasing_output_is_refused_naming_the_lines_and_the_fix():
    def f(x):
        y = x * 1.0
        r = reversed_view(y)
        r[0] = 100.0 * x[0]
        return np.sum(y * x)

    text = _message(f, np.array([1.0, 2.0, 3.0]))
    assert "__setitem__ through the output of reversed_view" in text
    assert "r[0] = 100.0 * x[0]" in text and "r = reversed_view(y)" in text
    assert "return a copy from reversed_view" in text


def test_an_aliasing_output_read_after_its_argument_is_written_is_refused_naming_both_lines():
    def f(x):
        y = x * 1.0
        r = same_array(y)
        y[0] = 50.0
        return np.sum(r * x)

    for mode in ("poison", "snapshot"):
        text = _message(f, np.array([1.0, 2.0, 3.0]), mode=mode)
        assert "the output of same_array, called at" in text and "r = same_array(y)" in text
        assert "y[0] = 50.0" in text and "return a copy from same_array" in text


def test_forward_mode_through_an_aliasing_rule_uses_its_jvp_and_refuses_a_later_write():
    def f(x):
        y = x * 1.0
        return np.sum(reversed_view(y) ** 2 * x)

    x, t = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    _, tangent = mutagrad.jvp(f, (x,), (t,))
    assert np.isclose(tangent, numerical_gradient(f, x)[0] @ t, rtol=1e-6)
    np.testing.assert_allclose(
        mutagrad.hessian(f)(x), [[6.0, 0.0, 8.0], [0.0, 12.0, 0.0], [8.0, 0.0, 2.0]]
    )

    def g(x):
        y = x * 1.0
        r = reversed_view(y)
        y[0] = 9.0  # r's tangent was computed for the old values
        return np.sum(r * x)

    with pytest.raises(mutagrad.NotDifferentiableError, match=re.escape("y[0] = 9.0")):
        mutagrad.jvp(g, (x,), (t,))


def test_an_rrule_s_own_alias_of_an_argument_its_function_copies_is_a_new_array():
    @mutagrad.primitive
    def copied(x):
        return x.copy()

    @mutagrad.rrule(copied)
    def _(x):
        return x, lambda g: (g,)  # the rule returns its argument, the function a copy

    def f(x):
        y = x * 1.0
        r = copied(y)
        r[0] = 50.0  # numpy: y unchanged
        y[1] = 7.0  # numpy: r unchanged
        return np.sum(y * x) * (2.0 if r[1] < 5.0 else 1.0)

    # (snapshot mode cannot copy the argument the rule's closure holds before y[1] = 7.0)
    check(f, np.array([1.0, 2.0, 3.0]), expect={"poison": RIGHT, "strict": REFUSED})


def test_a_rule_returning_memory_of_a_plain_array_argument_is_refused():
    @mutagrad.primitive
    def second(x, c):
        return c[::-1]

    mutagrad.defvjp(second, lambda g, ans, x, c: np.zeros_like(x), None)
    c = np.array([1.0, 2.0, 3.0])

    def f(x):
        r = second(x, c)
        return np.sum(r * x)

    text = _message(f, np.array([1.0, 2.0, 3.0]))
    assert "shares memory with its argument 1, a plain numpy array" in text
    assert "r = second(x, c)" in text and "return a copy from second" in text


# A rule's output over memory the rule did not allocate, and no argument's: plain numpy
# writes to it bump no version, so what pullbacks save of it is copied when saved.
HELD = np.array([1.0, 2.0, 3.0])


@mutagrad.primitive
def held_view(x):
    return HELD[::-1]


mutagrad.defvjp(held_view, lambda g, ans, x: 0.0 * g, reads=((),))


@mutagrad.primitive
def held_itself(x):
    return HELD


mutagrad.defvjp(held_itself, lambda g, ans, x: 0.0 * g, reads=((),))
mutagrad.defjvp(held_itself, lambda t, ans, x: 0.0 * t)


@mutagrad.primitive
def held_by_rrule(x):
    return HELD[:]


@mutagrad.rrule(held_by_rrule)
def _held_rule(x):
    return HELD[:], lambda g: (np.zeros_like(g),)


@mutagrad.primitive
def held_constant(x):
    return HELD


mutagrad.non_differentiable(held_constant)

HELD_RULES = [held_view, held_itself, held_by_rrule, held_constant]


@pytest.mark.parametrize("rule", HELD_RULES, ids=lambda r: r.__name__)
def test_what_pullbacks_save_of_a_rule_s_output_over_a_global_array_is_its_value_then(rule):
    def f(x):
        HELD[:] = [1.0, 2.0, 3.0]
        r = rule(x)
        z = r * x * r[::-1]
        HELD[:] = 10.0  # numpy: r shows it, z does not
        return np.sum(z) + np.sum(r * r)

    check(f, np.array([1.0, 2.0, 3.0]), expect=RIGHT)

    def g(x):
        HELD[:] = [1.0, 2.0, 3.0]
        return mutagrad.jvp(lambda y: np.sum(rule(y) * y), (x,), (np.ones(3),))[1]

    if rule is held_itself:  # a forward level, and the tape around it
        check(g, np.array([1.0, 2.0, 3.0]), expect=RIGHT)


def test_a_differentiated_write_into_a_rule_s_output_over_a_global_array_is_refused():
    def f(x):
        HELD[:] = [1.0, 2.0, 3.0]
        r = held_view(x)
        r[0] = 3.0 * x[1]  # numpy: writes HELD, which then holds a value of x
        return np.sum(HELD * x)

    text = _message(f, np.array([1.0, 2.0, 3.0]))
    assert "a user's rule returned it without allocating it" in text
    assert "r[0] = 3.0 * x[1]" in text and "return new memory from the rule" in text

    @mutagrad.primitive
    def doubled_reversed(x):
        return (2.0 * x)[::-1]  # a view of the rule's own temporary: new memory

    mutagrad.defvjp(doubled_reversed, lambda g, ans, x: 2.0 * g[::-1], reads=((),))

    def g(x):
        r = doubled_reversed(x)
        r[0] = 3.0 * x[1]
        return np.sum(r * x)

    check(g, np.array([1.0, 2.0, 3.0]), expect=WRITES_REFUSED_IN_STRICT)


def test_a_rule_applied_to_a_constant_returns_numpy_s_writable_view():
    def f(x):
        c = np.zeros_like(x)  # carries no derivative
        r = reversed_view(c)
        r[0] = 10.0  # numpy: writes c[-1]
        return np.sum(c * x)

    check(f, np.array([1.0, 2.0, 3.0]), expect=WRITES_REFUSED_IN_STRICT)
