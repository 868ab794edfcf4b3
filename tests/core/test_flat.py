"""x.flat of a traced array (mutagrad/traced/flat.py): reads, iteration and writes, each
checked against numpy on the same program (values bit for bit, gradients against central
finite differences), with numpy's element-by-element order where the values written share
the array's memory, and a write after capture poisoned (or copied in snapshot mode)."""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient

X = np.array([[0.3, 1.2, -0.5], [2.0, -1.0, 0.7]])
WEIGHTS = np.arange(1.0, 7.0).reshape(2, 3)


def same_as_numpy(program, x=X):
    """Values equal numpy's in every mode that records writes; gradients match differences."""
    expected = program(x.copy(order="K"))  # (the argument's layout, as mutagrad keeps it)
    for mode in ("poison", "snapshot"):
        got = mutagrad.withgradient(program, x, mode=mode).val
        np.testing.assert_array_equal(got, expected, strict=True)
        check_gradient(program, x, mode=mode)


READS = {
    "an element": lambda x: x.flat[4] * x.flat[-1] * x.T.flat[1],
    "a slice": lambda x: np.sum(x.T.flat[1:5] * [1.0, 2.0, 3.0, 4.0]),
    "an index array": lambda x: np.sum(x.flat[np.array([[5, 0], [0, 2]])] * WEIGHTS[0, :2]),
    "a numpy integer": lambda x: x[:, ::-1].flat[np.int32(1)] ** 2,
    "everything": lambda x: np.sum(x.flat[...] * WEIGHTS.ravel()),
    "iteration": lambda x: sum(v * k for k, v in enumerate(x.T.flat)),
    "next and coords": lambda x: (lambda f: next(f) * 2.0 + next(f) * f.coords[1])(x.flat),
    "a ufunc of it": lambda x: np.sum(np.sin(x.flat) * WEIGHTS.ravel()),
    "a function of it": lambda x: np.sum(np.cumsum(x.flat)),
    "its copy": lambda x: np.sum(x.flat.copy() ** 2),
}


@pytest.mark.parametrize("read", READS.values(), ids=READS.keys())
def test_reads(read):
    same_as_numpy(read)


def test_a_read_is_a_copy_as_numpy_s():
    def program(x):
        y = x * 1.0
        part = y.flat[1:3]
        y[0, 1] = 9.0  # numpy's flat slice is a copy: part keeps the old value
        return np.sum(part * part) + np.sum(y)

    same_as_numpy(program)


def test_iteration_reads_each_element_when_it_is_reached():
    def program(x):
        y = x * 1.0
        total = 0.0
        for k, v in enumerate(y.flat):
            if k == 1:
                y[1, 2] = 3.0 * x[0, 0]  # numpy's iterator shows it at element 5
            total = total + v * (k + 1)
        return total

    same_as_numpy(program)


def test_flat_attributes_are_numpy_s():
    def program(x):
        f = x.flat
        assert len(f) == 6 and f.base is x and f.index == 0 and f.coords == (0, 0)
        for _ in f:
            pass
        finished = np.arange(6.0).reshape(2, 3).flat
        for _ in finished:
            pass
        assert f.index == 6 and f.coords == finished.coords == (2, 0)
        assert list(f == x.flat[2]) == list(X.flat == X.flat[2])
        return np.sum(x)

    mutagrad.gradient(program, X)


WRITES = {
    "an element": lambda y, x: y.flat.__setitem__(1, x[0, 0] * 3.0),
    "an index array, repeated": lambda y, x: y.flat.__setitem__([2, 3, 2], x[1]),
    "a slice, cycled": lambda y, x: y.flat.__setitem__(slice(1, 6), [x[0, 1], 2.0]),
    "a reversed slice": lambda y, x: y.flat.__setitem__(slice(4, 0, -1), x[0]),
    "everything, by assignment": lambda y, x: setattr(y, "flat", x[1] ** 2),
    "a scalar everywhere": lambda y, x: setattr(y, "flat", x[0, 2]),
    "a transposed target": lambda y, x: y.T.flat.__setitem__([0, 1], x[1, :2]),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_writes(write):
    def program(x):
        y = np.sin(x)
        write(y, x)
        return np.sum(y * y * WEIGHTS)

    same_as_numpy(program)


OVERLAPPING = {
    # numpy copies element by element: y.flat[1:] = y.ravel()[:-1] makes every element y[0]
    "a shifted view of itself": lambda y: y.flat.__setitem__(slice(1, None), y.ravel()[:-1]),
    # numpy buffers y.flat = y.T of an F-ordered y, and copies y.flat[...] = y.T one by one
    "its own transpose": lambda y: setattr(y, "flat", y.T),
    "its own transpose, by index": lambda y: y.flat.__setitem__(Ellipsis, y.T),
    "a reversed row": lambda y: y.flat.__setitem__([0, 1, 2], y[0, ::-1]),
    "a column, cycled": lambda y: y.flat.__setitem__(slice(None), y[:, 1]),
}


@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("write", OVERLAPPING.values(), ids=OVERLAPPING.keys())
def test_values_sharing_memory_are_copied_in_numpy_s_order(write, layout):
    def program(x):
        y = np.sin(x)  # (in x's layout)
        write(y)
        return np.sum(y * WEIGHTS)

    def on_the_argument(x):
        write(x)
        return np.sum(x * WEIGHTS)

    x = np.asarray(X, order=layout)
    same_as_numpy(program, x)
    same_as_numpy(on_the_argument, x)


def test_a_write_after_capture_is_poisoned_or_copied():
    def program(x):
        y = x * 1.0
        s = np.sum(np.sin(y))  # saves y
        y.flat[[0, 4]] = 2.0
        return s + np.sum(y * y)

    with pytest.raises(mutagrad.PoisonedCaptureError, match=r"x\.flat"):
        mutagrad.gradient(program, X)
    check_gradient(program, X, mode="snapshot")
    with pytest.raises(mutagrad.MutationError):
        mutagrad.gradient(program, X, mode="strict")


def test_numpy_s_errors():
    with pytest.raises(IndexError, match="out of bounds for size 6"):
        mutagrad.gradient(lambda x: x.flat[6], X)
    with pytest.raises(ValueError, match="Error setting single item"):
        mutagrad.gradient(lambda x: (x * 1.0).flat.__setitem__(2, x[0, :2]), X)
    # A list of booleans: numpy 2.2 reads it as the integers 1 and 0, numpy 2.4 refuses it;
    # mutagrad's positions come from numpy's own flat indexing, so they follow the version.
    try:
        expected = np.sum(X.flat[[True, False] * 3])
    except IndexError:
        with pytest.raises(IndexError, match="boolean indices"):
            mutagrad.gradient(lambda x: np.sum(x.flat[[True, False] * 3]), X)
    else:
        assert mutagrad.withgradient(lambda x: np.sum(x.flat[[True, False] * 3]), X).val == (
            expected
        )


def test_outside_a_gradient_call():
    w = mutagrad.array(X)
    w.flat[[1, 2]] = 5.0
    expected = X.copy()
    expected.flat[[1, 2]] = 5.0
    np.testing.assert_array_equal(np.asarray(w), expected)
    assert w.flat[2] == 5.0 and list(w.flat) == list(expected.flat)
