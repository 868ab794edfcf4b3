"""WrappedArrays outside any gradient call: numpy's results, cheaply, with nothing forgotten.

Outside a gradient call a write that no saved value (capture) and no flag
can notice takes a short path (numpy's write and a new version), and an
element read returns numpy's own scalar. These tests check that

* the results equal numpy's: values, dtypes and the types of scalars;
* what a write outside a call must still do is done: poison (or, in
  snapshot mode, copy) the values a ``pullback``'s ``back`` will read,
  refuse writes to frozen Buffers, read-only and shared-input arrays, copy
  borrowed memory, keep the EXPORTED flag, and give views read inside a
  later call the new values;
* a float cast to integers or booleans of a traced value (``np.int64(x)``,
  ``int(x[0])``) is a constant, as ``x.astype(int)``, and other conversions
  are still refused with the construct's own fix.
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
import mutagrad.numpy as mnp
from mutagrad.testing import check_gradient
from mutagrad.traced.value import BORROWED, FROZEN, READONLY, SHARED_INPUT, WrappedArray


class tracked:
    """numpy's constructors giving WrappedArrays outside a call (mutagrad.numpy's give
    numpy's own arrays there): ``mutagrad.array`` of numpy's result."""

    @staticmethod
    def zeros(*args, **kwargs):
        return mutagrad.array(np.zeros(*args, **kwargs))

    @staticmethod
    def ones(*args, **kwargs):
        return mutagrad.array(np.ones(*args, **kwargs))

    @staticmethod
    def arange(*args, **kwargs):
        return mutagrad.array(np.arange(*args, **kwargs))

    @staticmethod
    def array(*args, **kwargs):
        return mutagrad.array(np.array(*args, **kwargs))

# -- element reads ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", [np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_, np.complex128]
)
def test_element_reads_outside_a_call_are_numpys_scalars(dtype):
    plain = np.arange(12).reshape(3, 4).astype(dtype)
    w = mutagrad.array(plain)
    for index in [(1, 2), (-1, -1), (np.int64(2), 0)]:
        got, want = w[index], plain[index]
        assert type(got) is type(want) and got == want
    row = w[1]
    assert type(row[3]) is type(plain[1][3]) and row[3] == plain[1, 3]
    zero_d = mutagrad.array(plain[0, 1])
    assert type(zero_d[()]) is type(plain[0, 1][()])
    assert [type(v) for v in w[2]] == [type(v) for v in plain[2]]
    assert list(w[2]) == list(plain[2])


def test_element_reads_inside_a_call_stay_traced():
    def f(x):
        element = x[1]
        assert isinstance(element, mutagrad.WrappedScalar)
        return element * x[2]

    (g,) = mutagrad.gradient(f, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 3.0, 2.0])


def test_a_structured_element_is_not_an_alias_of_the_array():
    """numpy's np.void is a writable view of its array: outside a call it stays wrapped."""
    plain = np.zeros(2, dtype=[("a", float), ("b", float)])
    w = mutagrad.array(plain)
    element = w[0]
    assert type(element) is mutagrad.WrappedScalar  # not numpy's np.void, a writable view
    assert isinstance(element, np.void)  # which is what Python's type questions hear


def test_scalar_arithmetic_outside_a_call_is_numpys():
    w = tracked.zeros(4)
    w[1] = 1.5
    s = w[1] * w[1] + 2
    assert type(s) is np.float64 and s == 4.25
    assert type(w[1] * w) is WrappedArray  # an array operand keeps the array type


# -- writes: the same results as numpy ---------------------------------------------------


def _element_writes(xp):
    y = xp.zeros(6)
    for i in range(6):
        y[i] = 0.5 * i
    y[-1] = 7
    y[np.int64(2)] = np.float64(3.25)
    y[True] = 9.0  # a boolean index: numpy's y[True] adds an axis
    return y


def _writes_into_integer_arrays(xp):
    y = xp.zeros(5, dtype=np.int64)
    y[0] = 2.7  # truncated, as numpy does
    y[1:3] = [3.9, -1.2]
    y[3:] = np.array([5.5, 6.5])
    flags = xp.zeros(3, dtype=bool)
    flags[1] = 2.0
    return y, flags


def _slices_and_overlaps(xp):
    y = xp.arange(10.0)
    y[2:5] = y[5:8]
    y[1:] = y[:-1]  # overlapping: numpy buffers it
    y[::-1] = y  # the whole array reversed onto itself
    y[1:4] = y[1:4]  # onto itself: nothing copied
    r = xp.arange(10.0)[::-1]
    r[::2] = r[2:7]  # numpy copies these element by element; the result is numpy's
    return y, r


def _fancy_masks_and_sequences(xp):
    y = xp.zeros((3, 4))
    y[1] = [1.0, 2.0, 3.0, 4.0]
    y[:, 2] = (5.0, 6.0, 7.0)
    y[[0, 0, 2], [1, 1, 3]] = [10.0, 11.0, 12.0]  # a repeated position: numpy's winner
    y[y > 5.0] = -1.0
    y[..., 0] = np.arange(3.0)
    y[2, [0, 3]] = y[0, [1, 2]]
    y[None, 0] = 8.0
    return y


def _in_place_operations(xp):
    y = xp.arange(8.0)
    y += 1.0
    y[1:] -= 0.5 * y[:-1]
    y *= y
    np.add(y[:-1], y[1:], out=y[1:])  # out= overlapping an input
    np.multiply(y, 2.0, out=y)
    y[2:6] /= 3.0
    z = xp.ones((2, 3))
    z += np.arange(3.0)  # broadcast
    z.fill(4.5)
    np.copyto(z[0], np.array([1.0, 2.0, 3.0]))
    y.sort()
    return y, z


def _values_from_other_wrapped_arrays(xp):
    a = xp.arange(6.0)
    b = xp.zeros(6)
    b[:3] = a[3:]
    b[3:] = a[:3] * 2
    b[0] = a[5]
    b[1:3] = [a[0], a[1]]  # a list of numpy scalars outside a call
    b[[4, 5]] = xp.array([9.0, 8.0])
    return a, b


WRITE_PROGRAMS = [
    _element_writes,
    _writes_into_integer_arrays,
    _slices_and_overlaps,
    _fancy_masks_and_sequences,
    _in_place_operations,
    _values_from_other_wrapped_arrays,
]


def _plain(result):
    if isinstance(result, tuple):
        return tuple(_plain(r) for r in result)
    assert isinstance(result, WrappedArray)
    return np.array(result)


@pytest.mark.parametrize("program", WRITE_PROGRAMS, ids=[p.__name__ for p in WRITE_PROGRAMS])
def test_writes_outside_a_call_give_numpys_values_and_dtypes(program):
    want = program(np)
    got = _plain(program(tracked))
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):  # fmt: skip
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_every_write_outside_a_call_is_one_version_and_a_self_assignment_none():
    y = tracked.zeros(5)
    view = y[1:]
    assert y.version == 0
    y[0] = 1.0
    view[0] = 2.0
    y[2:4] = y[0:2]
    y += 1.0
    assert y.version == view.version == 4
    y[1:3] = y[1:3]  # numpy copies nothing onto itself: no new version
    assert y.version == 4
    y[1:] -= 1.0  # one write: the ufunc; Python's store back is a self-assignment
    assert y.version == 5
    np.testing.assert_array_equal(np.array(y), [2.0, 2.0, 1.0, 2.0, 0.0])


# -- what a write outside a call must still do ---------------------------------------------


def _saving_closure():
    """``f`` multiplies by ``c``, a WrappedArray it closes over: the pullback saves ``c``."""
    c = mutagrad.array([1.0, 2.0, 3.0])
    return c, (lambda x: np.sum(x * c))


WRITES_AFTER_PULLBACK = {
    "element": lambda c: c.__setitem__(0, 5.0),
    "slice": lambda c: c.__setitem__(slice(1, None), np.zeros(2)),
    "fancy": lambda c: c.__setitem__([0, 2], 4.0),
    "from a wrapped array": lambda c: c.__setitem__(slice(0, 2), mutagrad.array([7.0, 8.0])),
    "fill": lambda c: c.fill(0.0),
    "augmented": lambda c: c.__iadd__(1.0),
    "ufunc out=": lambda c: np.add(c, 1.0, out=c),
    "copyto": lambda c: np.copyto(c, np.full(3, 3.0)),
    "through a view": lambda c: c[1:].__setitem__(0, 9.0),
    "sort": lambda c: (c.__setitem__(0, 4.0), c.sort()),
}


@pytest.mark.parametrize("write", WRITES_AFTER_PULLBACK.values(), ids=WRITES_AFTER_PULLBACK)
def test_a_write_between_pullback_and_back_poisons_what_back_reads(write):
    c, f = _saving_closure()
    _, back = mutagrad.pullback(f, np.ones(3))
    write(c)  # outside any gradient call
    with pytest.raises(mutagrad.PoisonedCaptureError):
        back(1.0)


@pytest.mark.parametrize("write", WRITES_AFTER_PULLBACK.values(), ids=WRITES_AFTER_PULLBACK)
def test_in_snapshot_mode_back_reads_the_values_before_the_write(write):
    c, f = _saving_closure()
    _, back = mutagrad.pullback(f, np.ones(3), mode="snapshot")
    write(c)
    (g,) = back(1.0)
    np.testing.assert_array_equal(g, [1.0, 2.0, 3.0])


def test_an_array_made_inside_the_call_and_written_after_it_poisons():
    kept = []

    def f(x):
        y = x * 1.0
        kept.append(y)
        return np.sum(y * y)  # saves y

    _, back = mutagrad.pullback(f, np.array([1.0, 2.0]))
    (y,) = kept
    y[0] = 3.0  # no flag on y, a live tape, a capture
    with pytest.raises(mutagrad.PoisonedCaptureError):
        back(1.0)


def test_a_write_beside_what_back_reads_leaves_it_valid():
    c = mutagrad.array([1.0, 2.0, 3.0])
    _, back = mutagrad.pullback(lambda x: np.sum(x * c[:2]), np.ones(2))
    c[2] = 100.0  # outside the saved c[:2]
    (g,) = back(1.0)
    np.testing.assert_array_equal(g, [1.0, 2.0])
    c[1] = 100.0
    with pytest.raises(mutagrad.PoisonedCaptureError):
        back(1.0)


def test_views_read_in_a_later_call_see_writes_made_between_calls():
    p = mutagrad.array([1.0, 2.0, 3.0])
    ps = mutagrad.Params([p])
    v = p[1:]
    g = mutagrad.gradient(lambda: np.sum(v * v), ps)
    np.testing.assert_array_equal(g[p], [0.0, 4.0, 6.0])
    p[1] = 10.0  # between the calls
    v[1] = 20.0
    g = mutagrad.gradient(lambda: np.sum(v * v), ps)
    np.testing.assert_array_equal(g[p], [0.0, 20.0, 40.0])
    _, back = mutagrad.pullback(lambda: np.sum(v * v), ps)
    p[2] = 0.0
    with pytest.raises(mutagrad.PoisonedCaptureError):
        back(1.0)


def test_an_exported_array_stays_exported_through_writes_outside_a_call():
    w = tracked.zeros(3)
    alias = np.asarray(w)  # numpy's alias of the memory
    w[0] = 3.0
    w[1:] += 1.0
    np.testing.assert_array_equal(alias, [3.0, 1.0, 1.0])

    def f(x):
        w[0] = x[0]  # a traced value into memory a plain ndarray shows
        return np.sum(w)

    with pytest.raises(mutagrad.NotDifferentiableError, match=r"np\.asarray"):
        mutagrad.gradient(f, np.ones(2))


def test_a_frozen_buffer_refuses_writes_outside_a_call():
    b = mutagrad.Buffer(3)
    b[0] = 1.0
    contents = b.copy()
    for write in (lambda: b.__setitem__(1, 2.0), lambda: b.__iadd__(1.0), lambda: b.fill(0.0)):
        with pytest.raises(mutagrad.FrozenBufferError):
            write()
    contents[1] = 2.0  # the array copy() returned is an ordinary array
    np.testing.assert_array_equal(np.array(contents), [1.0, 2.0, 0.0])


@pytest.mark.parametrize(
    ("flag", "error"),
    [
        (READONLY, mutagrad.MutagradError),
        (SHARED_INPUT, mutagrad.NotDifferentiableError),
        (FROZEN, mutagrad.FrozenBufferError),
    ],
    ids=["READONLY", "SHARED_INPUT", "FROZEN"],
)
def test_flags_that_refuse_a_write_refuse_it_outside_a_call(flag, error):
    for write in (lambda w: w.__setitem__(0, 1.0), lambda w: w.__iadd__(1.0)):
        w = mutagrad.array([0.0, 0.0])
        w._flags |= flag
        with pytest.raises(error):
            write(w)
        np.testing.assert_array_equal(w._raw, [0.0, 0.0])
        assert w.version == 0


def test_borrowed_memory_is_copied_before_a_write_outside_a_call():
    for write in (lambda w: w.__setitem__(0, 1.0), lambda w: w.__iadd__(1.0)):
        raw = np.zeros(2)
        w = WrappedArray(raw.view())  # the caller's memory, as a gradient call borrows it
        w._flags |= BORROWED
        w._views = []
        write(w)
        assert w._raw[0] == 1.0 and raw[0] == 0.0


def test_inert_captures_of_a_released_tape_do_not_block_later_writes():
    c, f = _saving_closure()
    mutagrad.gradient(f, np.ones(3))
    for _ in range(3):
        c[0] += 1.0
    np.testing.assert_array_equal(np.array(c), [4.0, 2.0, 3.0])
    assert not c._captures


# -- integer and boolean casts of traced floats --------------------------------------------


def pick_rows_by_last_column(W):
    """autograd-style: the last column, cast to int, picks rows (the cast is not differentiated)."""
    rows = np.int64(W[:, -1])
    return np.sum(W[rows] ** 2) + np.sum(W)


def index_by_int_of_an_element(x):
    return x[int(x[0])] * x[1] + x[2] * int(x[3] * 10)


def boolean_mask_from_a_cast(x):
    mask = np.asarray(np.floor(x), dtype=bool)  # nonzero: piecewise constant
    none = np.asarray(x * 0.0, dtype=bool)
    return np.sum(x[mask] ** 2) + np.sum(none * x)


@pytest.mark.parametrize(
    ("f", "args"),
    [
        (
            pick_rows_by_last_column,
            (np.array([[0.3, 1.2, 1.4], [0.7, 0.2, 0.3], [1.1, 2.2, 2.6]]),),
        ),
        (index_by_int_of_an_element, (np.array([2.3, 0.7, -1.1, 0.33]),)),
        (boolean_mask_from_a_cast, (np.array([0.5, 1.3, 2.5]),)),
    ],
    ids=["np.int64 index", "int()", "dtype=bool"],
)
def test_integer_and_boolean_casts_of_traced_floats_are_constants(f, args):
    check_gradient(f, *args)
    check_gradient(f, *args, mode="snapshot")


def test_a_cast_is_a_new_array_never_an_alias():
    def f(x):
        y = x * 1.0
        cast = np.asarray(y, dtype=np.int64)
        cast[0] = 100
        assert y[0] == 2.5
        assert np.array(y, dtype=np.int64, copy=True)[0] == 2
        return np.sum(y * y)

    (g,) = mutagrad.gradient(f, np.array([2.5, 1.0]))
    np.testing.assert_array_equal(g, [5.0, 2.0])


def test_a_cast_that_keeps_values_or_cannot_copy_is_refused():
    with pytest.raises(ValueError, match="copy"):  # numpy's answer to copy=False with a cast
        mutagrad.gradient(lambda x: np.sum(x[np.asarray(x, dtype=np.int64, copy=False)]),
                          np.array([0.5]))  # fmt: skip
    with pytest.raises(mutagrad.TracerConversionError):  # a float cast keeps the values
        mutagrad.gradient(lambda x: np.sum(np.asarray(x, dtype=np.float32)), np.ones(2))
    # An integer's value is differentiated (integers as real numbers): np.int64 would drop it.
    with pytest.raises(mutagrad.TracerConversionError, match=r"astype\(np.int64\)"):
        mutagrad.gradient(lambda k: np.sum(np.int64(k) * 1.0), np.array([1, 2]))


# -- the messages of conversions that are still refused -----------------------------------


X3 = np.array([0.5, 1.5, 2.0])

REFUSED = [
    (lambda x: np.mean([x, x + 2.0]), "np.mean() of a list holding traced values",
     ["np.mean(np.stack([x, x + 2.0]))", "mnp.mean([x, x + 2.0])"]),
    (lambda x: np.linalg.norm([x[0], x[1]]), "np.linalg.norm() of a list",
     ["np.linalg.norm(np.stack([x[0], x[1]]))", "mnp.linalg.norm([x[0], x[1]])"]),
    (lambda x: np.sum(np.asarray([x, x])), "np.asarray([...]) of a list",
     ["np.stack([x, x])", "mnp.asarray([x, x])"]),
    (lambda x: np.sum(np.r_[x, x]), "np.r_[...] of traced values",
     ["mnp.r_[x, x]", "np.concatenate([x, x])"]),
    (lambda x: np.sum(np.c_[x, x]), "np.c_[...] of traced values",
     ["mnp.c_[x, x]", "np.column_stack([x, x])"]),
    (lambda x: np.float64(x[0]) * x[1], "np.float64(x[0]) of a traced value",
     ["x[0].astype(np.float64)", "mnp.float64(x[0])"]),
    (lambda x: np.float32(x) * x, "np.float32(x) of a traced value",
     ["x.astype(np.float32)", "mnp.float32(x)"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("f", "construct", "fixes"),
    REFUSED,
    ids=["mean", "norm", "asarray", "r_", "c_", "float64", "float32"],
)
def test_a_refused_conversion_names_its_construct_and_a_fix_that_works(f, construct, fixes):
    with pytest.raises(mutagrad.TracerConversionError) as info:
        mutagrad.gradient(f, X3)
    message = str(info.value)
    assert "test_untraced.py" in message and construct in message
    assert "raw array `" not in message and "derivative rule" not in message
    for fix in fixes:
        assert fix in message
        # The fix, evaluated as the user would write it, differentiates.
        program = eval(f"lambda x: np.sum({fix})", {"np": np, "mnp": mnp})
        if "float32" in fix:  # finite differences in single precision are too coarse
            (g,) = mutagrad.gradient(program, X3)
            np.testing.assert_array_equal(g, np.ones(3))
        else:
            check_gradient(program, X3)


# -- traced writes still name their lines ---------------------------------------------------


def test_a_poisoned_capture_names_the_line_of_the_write():
    def f(x):
        y = x * x
        x[0] = 0.0  # the line the message names
        return np.sum(y)

    with pytest.raises(mutagrad.PoisonedCaptureError, match="the line the message names"):
        mutagrad.gradient(f, np.ones(2))


def test_a_write_refused_where_it_is_recorded_names_its_line():
    w = tracked.zeros(2)
    np.asarray(w)

    def f(x):
        w[1:] = x[:1] * 2.0  # exported memory
        return np.sum(w)

    with pytest.raises(mutagrad.NotDifferentiableError, match="exported memory"):
        mutagrad.gradient(f, np.ones(2))
