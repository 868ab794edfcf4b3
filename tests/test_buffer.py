"""mutagrad.Buffer: Zygote's Buffer, writable in every mode, frozen by copy()."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient


def doubled(y):
    x = mutagrad.Buffer(y)  # like np.zeros_like(y)
    x[:] = 2 * y
    return copy.copy(x)  # freezes without copying


@pytest.mark.parametrize("mode", ["strict", "poison", "snapshot"])
def test_seed_example_works_in_every_mode(mode):
    (g,) = mutagrad.gradient(lambda y: np.sum(doubled(y)), np.array([1.0, 2.0, 3.0]), mode=mode)
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])


def test_buffer_filled_element_by_element_in_strict_mode():
    def f(x):
        buf = mutagrad.Buffer(x.shape)
        for i in range(len(x)):
            buf[i] = np.sin(x[i]) * x[i]
        return np.sum(buf.copy() ** 2)

    check_gradient(f, np.array([0.3, -1.2, 2.0]), mode="strict")


def test_copy_shares_memory_and_freezes():
    buf = mutagrad.Buffer(3)
    buf[1] = 4.0
    out = buf.copy()
    assert buf.frozen
    assert np.shares_memory(np.asarray(out), np.asarray(buf))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 4.0, 0.0])
    with pytest.raises(mutagrad.FrozenBufferError, match="froze"):
        buf[0] = 1.0
    with pytest.raises(mutagrad.FrozenBufferError):
        buf[1:][0] = 1.0  # views of the Buffer are frozen too
    out[0] = 7.0  # the returned array is an ordinary array
    np.testing.assert_array_equal(np.asarray(buf), [7.0, 4.0, 0.0])


def test_returned_array_follows_the_mode_of_ordinary_arrays():
    def f(x):
        buf = mutagrad.Buffer(x)
        buf[:] = x * 3
        out = buf.copy()
        out[0] = 0.0
        return np.sum(out)

    with pytest.raises(mutagrad.MutationError):
        mutagrad.gradient(f, np.ones(3), mode="strict")
    np.testing.assert_array_equal(mutagrad.gradient(f, np.ones(3))[0], [0.0, 3.0, 3.0])


def test_an_unfrozen_buffer_returned_from_f_raises():
    def f(x):
        buf = mutagrad.Buffer(x)
        buf[:] = x
        return buf

    with pytest.raises(mutagrad.MutagradError, match="never frozen"):
        mutagrad.pullback(f, np.ones(2))
    with pytest.raises(mutagrad.MutagradError, match="never frozen"):
        mutagrad.withgradient(lambda x: (np.sum(x), f(x)), np.ones(2))


def test_reading_an_open_buffer_keeps_its_gradient():
    def f(x):
        buf = mutagrad.Buffer(x)
        buf[:] = x**2
        return np.sum(buf)  # no copy(): an ordinary traced read

    np.testing.assert_array_equal(mutagrad.gradient(f, np.array([1.0, 2.0]))[0], [2.0, 4.0])


def test_buffer_from_shape_and_dtype():
    buf = mutagrad.Buffer((2, 3), dtype=np.float32)
    assert buf.shape == (2, 3) and buf.dtype == np.float32
    assert not np.any(np.asarray(buf))
