"""A finished gradient call leaves no reference cycles behind.

Captures point back at their array and nodes save captures that point back
at the node; views of an input and the input list each other. The tape breaks
those cycles when it is released, so every traced array is freed as soon as
the caller drops it (by reference counting), not whenever the cyclic garbage
collector next runs: a large intermediate held until then costs fresh memory
in the next call. Each test disables the collector and counts what a call
leaves for it.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from test_mutation import setitem_elements_in_a_loop

import mutagrad
from mutagrad.core.engine import Capture, Node, Tape
from mutagrad.traced.value import WrappedValue

ENGINE_TYPES = (WrappedValue, Capture, Node, Tape)


def engine_objects() -> int:
    return sum(issubclass(type(o), ENGINE_TYPES) for o in gc.get_objects())


def engine_garbage() -> int:
    """How many of mutagrad's objects only the cyclic collector would free."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        found = sum(issubclass(type(o), ENGINE_TYPES) for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    return found


@pytest.fixture
def collector_off():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def mse(y, yh):
    return np.mean((y - yh) ** 2)


def scalar_loop(y, yh):
    s = 0.0
    for i in range(len(y)):
        s = s + (y[i] - yh[i]) ** 2
    return s / len(y)


def views(x):
    v = x[1:]
    t = x.T
    return np.sum(v * v) + np.sum(t * x.T)


def poisoned_but_unneeded(x):
    y = np.exp(x)
    unused = y * y  # saves y, but never reaches the loss
    y[...] = 0.0  # poisons what exp and unused saved; no gradient needs either
    return np.sum(y) + np.sum(x * x) + 0 * len(unused)


def reused_scratch(x):
    scratch = np.zeros_like(x)
    total = 0.0
    for k in range(3):
        scratch[:] = np.sin(x * (k + 1))
        total = total + np.sum(scratch * scratch)
    return total


def nested(x):
    return np.sum(mutagrad.gradient(lambda z: np.sum(z**3), x)[0] * x)


X = np.linspace(0.1, 1.0, 6)
CASES = [
    ("mse", mse, (X, X[::-1].copy()), "poison"),
    ("scalar loop", scalar_loop, (X, X[::-1].copy()), "poison"),
    ("fill loop", setitem_elements_in_a_loop, (X,), "poison"),
    ("views of an input", views, (X.reshape(2, 3),), "poison"),
    ("write after capture", poisoned_but_unneeded, (X,), "poison"),
    ("snapshot copies", reused_scratch, (X,), "snapshot"),
    ("nested gradient", nested, (X,), "poison"),
]


@pytest.mark.parametrize(("f", "args", "mode"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_gradient_call_leaves_nothing_for_the_collector(collector_off, f, args, mode):
    before = engine_objects()
    mutagrad.gradient(f, *args, mode=mode)
    assert engine_objects() == before
    assert engine_garbage() == 0


def test_a_dropped_pullback_leaves_nothing_for_the_collector(collector_off):
    before = engine_objects()
    value, back = mutagrad.pullback(views, X.reshape(2, 3))
    assert value == views(X.reshape(2, 3))
    assert engine_objects() > before  # the pullback keeps its tape
    (g,) = back(1.0)
    np.testing.assert_allclose(g, mutagrad.gradient(views, X.reshape(2, 3))[0])
    del back
    assert engine_objects() == before
    assert engine_garbage() == 0


def test_a_large_intermediate_is_freed_when_the_call_returns(collector_off):
    # The difference y - yh is saved by the square's pullback; once the call
    # has returned, nothing may keep its memory.
    import weakref

    kept = []

    def loss(y, yh):
        d = y - yh
        kept.append(weakref.ref(d))
        return np.mean(d**2)

    y = np.arange(1000.0)
    gy, gyh = mutagrad.gradient(loss, y, y[::-1].copy())
    np.testing.assert_allclose(gy, 2 * (y - y[::-1]) / 1000)
    np.testing.assert_allclose(gyh, -gy)
    assert kept[0]() is None
