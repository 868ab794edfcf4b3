"""Strided views: np.lib.stride_tricks.sliding_window_view (a read-only view of overlapping
windows, traced; its cotangent adds up where windows overlap) and as_strided (refused by
name), and the numpy functions that convert in C, whose refusal names the mutagrad.numpy
function that keeps the value traced (issue 22)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided, sliding_window_view

import mutagrad
from mutagrad.testing import check_gradient

X = np.array([[0.3, 1.2, -0.5, 0.9], [2.0, -1.0, 0.7, 1.1], [0.2, 0.4, -0.3, 1.5]])
W = np.arange(1.0, 25.0).reshape(2, 2, 2, 3)


def same_as_numpy(program, x=X):
    expected = program(x.copy())
    for mode in ("poison", "snapshot"):
        got = mutagrad.withgradient(program, x, mode=mode).val
        np.testing.assert_array_equal(got, expected, strict=True)
        check_gradient(program, x, mode=mode)


WINDOWS = {
    "2-d windows": lambda x: np.sum(sliding_window_view(x, (2, 3)) * W),
    "one axis of a reversed transpose": lambda x: np.sum(
        sliding_window_view(x[:, ::-1].T, 2, axis=0) ** 2
    ),
    "a convolution": lambda x: np.sum(sliding_window_view(x[0], 3) @ np.array([1.0, -2.0, 3.0])),
    "two axes, one window each": lambda x: np.sum(
        np.sin(sliding_window_view(x, (2, 2), axis=(1, 0)))
    ),
    "of a traced scalar's row": lambda x: np.max(sliding_window_view(x[1] * x[0, 0], 2), axis=1)
    @ np.arange(3.0),
}


@pytest.mark.parametrize("program", WINDOWS.values(), ids=WINDOWS.keys())
def test_sliding_window_view(program):
    same_as_numpy(program)
    check_gradient(program, X, order=2)


def test_the_windows_are_a_view_a_later_write_shows_in():
    def program(x):
        y = x * 1.0
        windows = sliding_window_view(y, 2, axis=1)
        y[1] = np.sin(x[0])
        return np.sum(windows * windows)

    same_as_numpy(program)


def test_a_write_after_the_windows_were_saved_is_poisoned_or_copied():
    def program(x):
        y = x * 1.0
        s = np.sum(sliding_window_view(y, 2, axis=1) ** 3)  # saves the windows
        y[1, 1] = 5.0
        return s + np.sum(y)

    with pytest.raises(mutagrad.PoisonedCaptureError, match=r"y\[1, 1\] = 5\.0"):
        mutagrad.gradient(program, X)
    check_gradient(program, X, mode="snapshot")


def test_the_windows_are_read_only_as_numpy_s():
    def program(x):
        sliding_window_view(x * 1.0, 2, axis=1)[0, 0, 0] = 1.0
        return np.sum(x)

    with pytest.raises(ValueError, match="read-only"):
        program(X.copy())
    with pytest.raises(ValueError, match="read-only"):
        mutagrad.gradient(program, X)


def test_writeable_windows_are_refused_by_name():
    with pytest.raises(mutagrad.NotDifferentiableError, match=r"writeable=True"):
        mutagrad.gradient(lambda x: np.sum(sliding_window_view(x, 2, writeable=True)), X)


def as_strided_pairs(x):
    return np.sum(as_strided(x, (3, 2), (8, 8)))


def np_as_strided_pairs(x):
    return np.sum(np.lib.stride_tricks.as_strided(x, (3, 2), (8, 8)))


@pytest.mark.parametrize("program", [as_strided_pairs, np_as_strided_pairs])
def test_as_strided_is_refused_naming_the_windows(program):
    with pytest.raises(mutagrad.TracerConversionError, match="as_strided") as info:
        mutagrad.gradient(program, np.arange(5.0))
    assert "sliding_window_view" in str(info.value)


def converted_by_ndenumerate(x):
    return sum(v for _, v in np.ndenumerate(x))


def converted_by_nditer(x):
    return sum(v for v in np.nditer(x))


def converted_by_require(x):
    return np.sum(np.require(x, requirements="C"))


def converted_by_ascontiguousarray(x):
    return np.sum(np.ascontiguousarray(x))


@pytest.mark.parametrize(
    ("program", "fix"),
    [
        (converted_by_ndenumerate, "mnp.ndenumerate(x)"),
        (converted_by_nditer, "mnp.nditer(x)"),
        (converted_by_require, "mnp.require(x, requirements="),
        (converted_by_ascontiguousarray, "mnp.ascontiguousarray(x)"),
    ],
)
def test_numpy_s_converting_functions_name_the_traced_version(program, fix):
    with pytest.raises(mutagrad.TracerConversionError) as info:
        mutagrad.gradient(program, X)
    assert fix in str(info.value)
