"""The reference-count proof that no view of a caller's array exists (mutagrad.freezing).

A gradient call skips the fingerprint of a large argument only when the count
proves that nothing but names and the call's own containers refers to it. Each
test here either checks that the proof is made where nothing else refers to the
array (so that the fast path is the one tested), or that any other reference —
a view, a memoryview, ``np.frombuffer``, a container, another frame, another
thread — leaves the argument to the fingerprint, and that a write through that
reference while ``f`` runs is then caught. The caller's arrays are writeable
again after every call, however it ends.
"""

from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np
import pytest

import mutagrad
import mutagrad.call
import mutagrad.forward
from mutagrad.errors import NotDifferentiableError
from mutagrad.freezing import PENDING, PROOF_ENABLED, PROOF_MINIMUM_BYTES

N = PROOF_MINIMUM_BYTES // 8 + 100  # float64 elements: above the proof's threshold

pytestmark = pytest.mark.skipif(
    not PROOF_ENABLED, reason="this interpreter does not count every reference"
)


@pytest.fixture
def hashed(monkeypatch):
    """The sizes of the arrays the calls fingerprint (the proof not made for them)."""
    sizes: list[int] = []
    real = mutagrad.call.fingerprint

    def counting(a):
        sizes.append(a.size)
        return real(a)

    monkeypatch.setattr(mutagrad.call, "fingerprint", counting)
    monkeypatch.setattr(mutagrad.forward, "fingerprint", counting)
    return sizes


def mse(a, b):
    return np.mean((a - b) ** 2)


def _expected(a, b):
    d = 2 * (a - b) / a.size
    return d, -d


def _check(grads, a, b):
    want = _expected(a, b)
    np.testing.assert_allclose(grads[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(grads[1], want[1], rtol=1e-12)


# -- where the proof is made -------------------------------------------------------------


def test_names_of_a_function_frame_are_accounted_for(hashed):
    a, b = np.linspace(0, 1, N), np.ones(N)
    _check(mutagrad.grad(mse, (0, 1))(a, b), a, b)
    assert hashed == []
    assert a.flags.writeable and b.flags.writeable


def test_temporaries_and_closure_cells(hashed):
    b = np.ones(N)

    def call():
        return mutagrad.grad(mse, (0, 1))(np.zeros(N), b)

    _check(call(), np.zeros(N), b)
    assert hashed == []


GLOBAL_A = np.linspace(0, 1, N)


def test_a_module_global_read_from_a_function(hashed):
    b = np.ones(N)
    _check(mutagrad.grad(mse, (0, 1))(GLOBAL_A, b), GLOBAL_A, b)
    assert hashed == []


def test_every_proving_entry_point(hashed):
    a, b = np.linspace(0, 1, N), np.ones(N)
    va, vb = np.ones(N), np.zeros(N)
    value, grads = mutagrad.value_and_grad(mse, (0, 1))(a, b)
    assert value == pytest.approx(mse(a, b), rel=1e-15)
    _check(grads, a, b)
    _check(mutagrad.gradient(mse, a, b), a, b)
    _, tangent = mutagrad.jvp(mse, (a, b), (va, vb))
    np.testing.assert_allclose(tangent, np.dot(_expected(a, b)[0], va - vb), rtol=1e-12)
    _, back = mutagrad.vjp(mse, a, b)
    _check(back(1.0), a, b)
    assert hashed == []
    for x in (a, b, va, vb):
        assert x.flags.writeable


def test_f_writing_its_argument_copies_it_and_the_caller_keeps_theirs(hashed):
    a = np.linspace(0, 1, N)
    before = a.copy()

    def f(x):
        x[0] = 5.0
        x *= 3.0
        return np.sum(x**2)

    g = mutagrad.grad(f)(a)
    want = 18.0 * np.concatenate([[5.0], before[1:]])
    want[0] = 0.0  # (x[0] is overwritten before it is read)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    np.testing.assert_array_equal(a, before)
    assert hashed == [] and a.flags.writeable


def test_no_reference_is_left_behind():
    a = np.arange(N) / N
    before = sys.getrefcount(a)
    mutagrad.grad(np.sum)(a)
    mutagrad.jvp(np.sum, (a,), (a * 2,))
    assert sys.getrefcount(a) == before
    a.resize(2 * N, refcheck=True)  # numpy's own proof still finds a alone


# -- where it is not, and what is then caught --------------------------------------------


def _outside_write(make_alias):
    """The gradient when ``f`` writes through an alias made by ``make_alias`` before the call."""
    a = np.linspace(0, 1, N)
    alias = make_alias(a)

    def f(x):
        np.asarray(alias).reshape(-1).view(np.float64)[0] = 100.0
        return np.sum(x**2)

    mutagrad.grad(f)(a)


ALIASES = {
    "view": lambda a: a[:],
    "reshaped view": lambda a: a.reshape(-1, 1),
    "memoryview": memoryview,
    "frombuffer": lambda a: np.frombuffer(a),
    "as_strided": lambda a: np.lib.stride_tricks.as_strided(a),
    "ndarray over its buffer": lambda a: np.ndarray(a.shape, a.dtype, buffer=a),
    "ctypes pointer": lambda a: np.ctypeslib.as_array(
        a.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), shape=a.shape
    ),
}


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_a_write_through_an_alias_made_before_the_call_is_caught(alias, hashed):
    with pytest.raises(NotDifferentiableError, match="changed while f ran"):
        _outside_write(ALIASES[alias])
    assert N in hashed


def test_an_alias_held_by_the_caller_s_caller(hashed):
    a = np.linspace(0, 1, N)
    alias = a[:]

    def inner(x):
        return mutagrad.grad(lambda y: np.sum(alias * 0) + np.sum(y))(x)

    inner(a)
    assert N in hashed


def test_a_container_or_a_second_frame_is_not_accounted_for(hashed):
    a = np.linspace(0, 1, N)
    held = [a]
    mutagrad.grad(np.sum)(a)
    assert hashed == [N, N]
    del held
    hashed.clear()

    def deeper(x):
        return mutagrad.grad(np.sum)(x)  # x is also a's name in this test's frame

    deeper(a)
    assert hashed == [N, N]


def test_an_alias_in_another_thread(hashed):
    a = np.linspace(0, 1, N)
    ready, done = threading.Event(), threading.Event()
    box = []

    def hold():
        box.append(a[:])  # a view, made and kept by this thread
        ready.set()
        done.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    ready.wait(10)
    try:
        del box[:]  # the thread's frame still holds `a` through its closure cell, not a view
        view = a[:]

        def f(x):
            view[0] = 100.0
            return np.sum(x)

        with pytest.raises(NotDifferentiableError, match="changed while f ran"):
            mutagrad.grad(f)(a)
    finally:
        done.set()
        thread.join()
    assert a.flags.writeable


def test_a_view_made_inside_f_is_read_only(hashed):
    a = np.linspace(0, 1, N)

    def f(x):
        a[:][0] = 100.0  # a is frozen while f runs, and so is any view made of it now
        return np.sum(x)

    with pytest.raises(NotDifferentiableError, match="read-only"):
        mutagrad.grad(f)(a)
    assert hashed == []
    assert a[0] == 0.0 and a.flags.writeable


def test_flags_changed_while_f_runs_are_refused(hashed):
    a = np.arange(N) / N  # owns its memory: numpy lets f make it writeable again

    def f(x):
        a.setflags(write=True)
        a[0] = 100.0
        return np.sum(x**2)

    with pytest.raises(NotDifferentiableError, match="made writeable again"):
        mutagrad.grad(f)(a)
    assert hashed == []

    b = np.linspace(0, 1, N)  # a view: numpy refuses while the array it views is frozen

    def g(x):
        b.setflags(write=True)
        return np.sum(x)

    with pytest.raises(ValueError, match="WRITEABLE"):
        mutagrad.grad(g)(b)
    assert b.flags.writeable and b.base.flags.writeable

    def through_the_owner(x):  # the array b views, made writeable: a view of it could write b
        b.base.setflags(write=True)
        return np.sum(x)

    with pytest.raises(NotDifferentiableError, match="made writeable again"):
        mutagrad.grad(through_the_owner)(b)
    assert hashed == []


# -- the caller's arrays are theirs again, however the call ends --------------------------


def test_thawed_after_an_error_in_f_and_after_a_refused_argument():
    a = np.linspace(0, 1, N)

    def failing(x):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        mutagrad.grad(failing)(a)
    assert a.flags.writeable
    with pytest.raises(TypeError, match="holds no number"):
        mutagrad.grad(lambda x, s: np.sum(x), (0, 1))(a, object())
    assert a.flags.writeable
    with pytest.raises(TypeError):
        mutagrad.grad(np.sum)(a, unexpected=1)
    assert a.flags.writeable
    assert PENDING.get() is None


def test_an_argument_refused_before_any_array_thaws_under_the_lock(monkeypatch):
    # The boundary froze `a` (proved unviewed); leaf 0 is refused before the call takes
    # the lock for its first array: the thaw must still hold it, or another thread's
    # freeze or `frozen_by_a_call` could meet the registry half changed.
    from mutagrad import freezing

    held = []
    thaw_held = freezing.Frozen.thaw_held

    def recording(self):
        held.append((freezing._FREEZING.locked(), len(self.arrays)))
        thaw_held(self)

    monkeypatch.setattr(freezing.Frozen, "thaw_held", recording)
    a = np.linspace(0, 1, N)
    with pytest.raises(NotDifferentiableError, match="leaf 0"):
        mutagrad.gradient(lambda s, x: np.sum(x), object(), a)
    assert [locked for locked, _ in held] == [True]
    assert held[0][1] >= 1  # (a, and the array linspace made it a view of)
    assert a.flags.writeable


def test_nested_entry_points_and_chunked_jacobians(hashed):
    a = np.linspace(0.1, 1, N)
    h = mutagrad.hvp(lambda x: np.sum(x**3), (a,), (np.ones(N),))
    np.testing.assert_allclose(h, 6 * a, rtol=1e-12)
    jac = mutagrad.jacfwd(lambda x: x[:3] * 2.0)(a)
    assert jac.shape == (3, N)
    assert a.flags.writeable


def test_a_gradient_call_inside_f_on_a_frozen_array(hashed):
    a = np.linspace(0, 1, N)

    def f(x):
        inner = mutagrad.grad(lambda y: np.sum(y**2))(a)  # a is frozen: the inner call copies
        return np.sum(x * inner)

    np.testing.assert_allclose(mutagrad.grad(f)(a), 2 * a, rtol=1e-12)
    assert a.flags.writeable


def test_two_threads_differentiating_with_one_array():
    a = np.linspace(0, 1, N)
    errors: list[BaseException] = []

    def work(b):
        try:
            for _ in range(50):
                _check(mutagrad.grad(mse, (0, 1))(a, b), a, b)
        except BaseException as error:  # (the test reads them after join)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(np.full(N, k),)) for k in (0.5, 2.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert a.flags.writeable
