"""Implicit parameters: Params, Grads, and gradient/withgradient/pullback/jacobian over them."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import mutagrad
from mutagrad import Grads, Params
from mutagrad.testing import numerical_gradient


def make_layer():
    w = mutagrad.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    b = mutagrad.array([0.5, -0.5, 0.0])
    return w, b


X = np.array([1.0, -2.0])


def loss(w, b, x=X):
    return np.sum(np.tanh(w @ x + b) ** 2)


def reference_gradients(w, b):
    gw, gb = numerical_gradient(lambda w, b: loss(w, b), np.asarray(w).copy(),
                                np.asarray(b).copy())  # fmt: skip
    return gw, gb


# -- Params ---------------------------------------------------------------------------


def test_params_refuses_a_raw_ndarray_and_says_how_to_wrap_it():
    with pytest.raises(TypeError, match=r"mutagrad\.array"):
        Params([np.ones(3)])


def test_params_refuses_views_scalars_and_other_objects():
    w = mutagrad.array(np.ones((2, 2)))
    with pytest.raises(TypeError, match="view"):
        Params([w[0]])
    with pytest.raises(TypeError, match="0-d array"):
        Params([1.0])
    with pytest.raises(TypeError, match="list of arrays"):
        Params(w)
    with pytest.raises(TypeError):
        Params(["weights"])


def test_params_is_an_ordered_identity_set():
    w, b = make_layer()
    twin = mutagrad.array(np.asarray(b))  # equal values, another array
    ps = Params([w, b, w])
    assert len(ps) == 2 and list(ps) == [w, b] and ps[1] is b
    assert w in ps and twin not in ps
    ps.add(twin)
    assert len(ps) == 3
    ps.discard(twin)
    assert list(ps) == [w, b]
    union = Params([w]) | Params([b, w])
    assert list(union) == [w, b]
    assert "float64[3, 2]" in repr(ps)


def test_params_to_vector_and_back():
    w, b = make_layer()
    ps = Params([w, b])
    v = ps.to_vector()
    np.testing.assert_array_equal(v, np.concatenate([np.ravel(w), np.ravel(b)]))
    ps.load_vector_(v * 2)
    np.testing.assert_array_equal(np.asarray(b), [1.0, -1.0, 0.0])
    with pytest.raises(ValueError, match="9 elements"):
        ps.load_vector_(np.zeros(3))


# -- gradient over Params ---------------------------------------------------------------


def test_gradient_over_params_matches_finite_differences():
    w, b = make_layer()
    gs = mutagrad.gradient(lambda: loss(w, b), Params([w, b]))
    assert isinstance(gs, Grads)
    want_w, want_b = reference_gradients(w, b)
    np.testing.assert_allclose(gs[w], want_w, atol=1e-6)
    np.testing.assert_allclose(gs[b], want_b, atol=1e-6)


def test_grads_is_dictionary_like():
    w, b = make_layer()
    other = mutagrad.array([1.0])
    gs = mutagrad.gradient(lambda: loss(w, b) + np.sum(other), Params([w, b]))
    assert w in gs and b in gs and other not in gs
    assert list(gs) == [w, b] and len(gs) == 2
    assert gs.keys() == [w, b]
    assert [g.shape for g in gs.values()] == [(3, 2), (3,)]
    assert [p for p, _ in gs.items()] == [w, b]
    assert list(gs.params) == [w, b]
    with pytest.raises(KeyError, match="not one of the parameters"):
        gs[other]
    assert gs.get(other) is None
    assert gs.get(w) is gs[w]


def test_a_parameter_the_loss_does_not_use_gets_none():
    w, b = make_layer()
    unused = mutagrad.array([1.0, 2.0])
    gs = mutagrad.gradient(lambda: loss(w, b), Params([w, b, unused]))
    assert gs[unused] is None


def test_parameters_are_not_copied_and_their_state_is_released():
    w, b = make_layer()
    seen = []

    def f():
        seen.append(w)  # the closure sees the parameter itself
        return loss(w, b)

    mutagrad.gradient(f, Params([w, b]))
    assert seen[0] is w
    assert w._node is None and b._node is None
    assert not w._captures and not b._captures


def test_persistent_across_calls_and_update_descends():
    w, b = make_layer()
    ps = Params([w, b])
    losses = []
    target = np.array([1.0, 0.0, -1.0])
    for _ in range(20):
        res = mutagrad.withgradient(lambda: np.sum((w @ X + b - target) ** 2), ps)
        losses.append(float(res.val))
        res.grad.update_(0.02)
    assert losses[-1] < losses[0] / 2
    assert all(later <= earlier + 1e-12 for earlier, later in itertools.pairwise(losses))


def test_update_skips_parameters_without_gradient_and_bumps_versions():
    w, b = make_layer()
    unused = mutagrad.array([1.0])
    gs = mutagrad.gradient(lambda: loss(w, b), Params([w, b, unused]))
    before = np.asarray(w).copy()
    version = w.version
    gs.update_(0.5)
    np.testing.assert_allclose(np.asarray(w), before - 0.5 * gs[w])
    assert w.version == version + 1
    np.testing.assert_array_equal(np.asarray(unused), [1.0])


def test_a_loss_that_writes_a_parameter():
    w = mutagrad.array([1.0, 2.0])

    def f():
        y = np.sum(w * w)
        w[0] = 10.0  # the caller's parameter changes: it is the parameter itself
        return y + np.sum(w)

    gs = mutagrad.gradient(f, Params([w]), mode="snapshot")
    np.testing.assert_array_equal(gs[w], [2.0, 5.0])  # d/dw0 (w0^2 + 10) = 2, d/dw1 = 2*2+1
    np.testing.assert_array_equal(np.asarray(w), [10.0, 2.0])
    with pytest.raises(mutagrad.MutationError):
        mutagrad.gradient(f, Params([w]), mode="strict")


def test_params_used_through_views():
    w = mutagrad.array(np.arange(6.0).reshape(2, 3))
    row = w[1]  # a view made once, outside the call
    gs = mutagrad.gradient(lambda: np.sum(row**2) + np.sum(w[0]), Params([w]))
    np.testing.assert_array_equal(gs[w], [[1.0, 1.0, 1.0], [6.0, 8.0, 10.0]])


def test_float32_parameter_keeps_its_dtype():
    w = mutagrad.array(np.ones(3, dtype=np.float32))
    assert mutagrad.gradient(lambda: np.sum(w * w), Params([w]))[w].dtype == np.float32


def test_a_function_with_arguments_is_refused_with_params():
    w, _ = make_layer()
    with pytest.raises(TypeError, match="no arguments"):
        mutagrad.gradient(lambda x: np.sum(w * x), Params([w]))


def test_withgradient_over_params_keeps_auxiliary_output():
    w, b = make_layer()
    res = mutagrad.withgradient(lambda: (loss(w, b), w @ X), Params([w, b]))
    assert res.val[0] == pytest.approx(loss(np.asarray(w), np.asarray(b)))
    np.testing.assert_array_equal(res.val[1], np.asarray(w) @ X)
    assert isinstance(res.grad, Grads)


def test_pullback_over_params():
    w, b = make_layer()
    _, back = mutagrad.pullback(lambda: w @ X + b, Params([w, b]))
    gs = back(np.array([1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(gs[b], [1.0, 0.0, 2.0])
    np.testing.assert_array_equal(gs[w], np.outer([1.0, 0.0, 2.0], X))
    again = back(np.ones(3))  # callable many times
    np.testing.assert_array_equal(again[b], np.ones(3))


def test_pullback_over_params_is_poisoned_by_an_update():
    w, _ = make_layer()
    _, back = mutagrad.pullback(lambda: np.sum(w * w), Params([w]))
    w -= 1.0  # an update between the forward and the backward pass
    with pytest.raises(mutagrad.PoisonedCaptureError):
        back(1.0)


def test_jacobian_over_params_has_zeros_for_unused_parameters():
    w, b = make_layer()
    unused = mutagrad.array([1.0, 2.0])
    jac = mutagrad.jacobian(lambda: w @ X + b, Params([w, b, unused]))
    np.testing.assert_array_equal(jac[b], np.eye(3))
    np.testing.assert_array_equal(jac[w], np.kron(np.eye(3), X))
    np.testing.assert_array_equal(jac[unused], np.zeros((3, 2)))


# -- Grads arithmetic ------------------------------------------------------------------


def two_grads():
    w, b = make_layer()
    ps = Params([w, b])
    g1 = mutagrad.gradient(lambda: loss(w, b), ps)
    g2 = mutagrad.gradient(lambda: np.sum(w) * 1.0, ps)  # b gets None
    return w, b, g1, g2


def test_grads_arithmetic():
    w, b, g1, g2 = two_grads()
    assert g2[b] is None
    total = g1 + g2
    np.testing.assert_array_equal(total[w], g1[w] + g2[w])
    np.testing.assert_array_equal(total[b], g1[b])  # None counts as zero
    difference = g2 - g1
    np.testing.assert_array_equal(difference[b], -g1[b])
    np.testing.assert_array_equal((2 * g1)[w], 2 * g1[w])
    np.testing.assert_array_equal((g1 * 2)[b], 2 * g1[b])
    np.testing.assert_array_equal((g1 / 4)[w], g1[w] / 4)
    np.testing.assert_array_equal((-g1)[w], -g1[w])
    assert (3 * g2)[b] is None
    squared = g1.map(np.square)
    np.testing.assert_array_equal(squared[w], g1[w] ** 2)
    assert g2.map(np.square)[b] is None


def test_grads_arithmetic_does_not_modify_its_operands():
    w, _, g1, g2 = two_grads()
    before = g1[w].copy()
    _ = g1 + g2
    _ = 2 * g1
    np.testing.assert_array_equal(g1[w], before)
    copied = g1.copy()
    copied[w][0, 0] = 100.0
    assert g1[w][0, 0] == before[0, 0]


def test_grads_of_different_params_do_not_combine():
    w, b, g1, _ = two_grads()
    other = mutagrad.gradient(lambda: np.sum(w), Params([w]))
    with pytest.raises(ValueError, match="different parameters"):
        _ = g1 + other
    merged = other | g1
    assert list(merged) == [w, b]
    np.testing.assert_array_equal(merged[w], g1[w])  # the right operand wins, as merge!


def test_grads_to_vector():
    w, b, g1, g2 = two_grads()
    np.testing.assert_array_equal(g1.to_vector(), np.concatenate([g1[w].ravel(), g1[b]]))
    np.testing.assert_array_equal(g2.to_vector()[6:], np.zeros(3))  # None as zeros
    assert "None" in repr(g2)


# -- nesting ---------------------------------------------------------------------------


def test_implicit_gradient_inside_an_explicit_one():
    w = mutagrad.array([1.0, 2.0, 3.0])
    row = w[0:2]  # a view read in two inner calls on the same tape

    def outer(x):
        g1 = mutagrad.gradient(lambda: np.sum(row * x), Params([w]))[w]
        g2 = mutagrad.gradient(lambda: np.sum(row * row * x), Params([w]))[w]
        return np.sum(g1) + np.sum(g2)  # 2x + 2x(w0 + w1)

    assert mutagrad.gradient(outer, 2.0) == (pytest.approx(8.0),)
    assert w._node is None


def test_hessian_over_params_by_jacobian_of_implicit_gradient():
    w = mutagrad.array([0.5, -1.0, 2.0])
    ps = Params([w])
    hess = mutagrad.jacobian(lambda: mutagrad.gradient(lambda: np.sum(np.sin(w) * w[0]), ps)[w],
                             ps)[w]  # fmt: skip
    want = mutagrad.hessian(lambda v: np.sum(np.sin(v) * v[0]), np.asarray(w).copy())
    np.testing.assert_allclose(hess, want, atol=1e-12)
    assert w._node is None


# -- one call tree at a time ---------------------------------------------------------


def test_a_parameter_in_use_by_another_threads_call_is_refused_not_misread():
    import threading

    w = mutagrad.array(np.ones(3))
    ps = Params([w])
    inside = threading.Event()
    release = threading.Event()
    results = {}

    def slow_loss():
        first = np.sum(w * 2.0)
        inside.set()
        release.wait(5)
        return first + np.sum(w * w)  # w must still be this call's parameter

    def run_slow():
        results["slow"] = mutagrad.gradient(slow_loss, ps)[w]

    thread = threading.Thread(target=run_slow)
    thread.start()
    inside.wait(5)
    try:
        with pytest.raises(mutagrad.MutagradError, match="another thread"):
            mutagrad.gradient(lambda: np.sum(w), ps)
    finally:
        release.set()
        thread.join()
    np.testing.assert_array_equal(results["slow"], [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(mutagrad.gradient(lambda: np.sum(w), ps)[w], np.ones(3))


def test_a_live_pullback_does_not_hold_its_parameters():
    w = mutagrad.array([1.0, 2.0])
    ps = Params([w])
    _, back = mutagrad.pullback(lambda: w * w, ps)
    np.testing.assert_array_equal(mutagrad.gradient(lambda: np.sum(w * 3), ps)[w], [3.0, 3.0])
    np.testing.assert_array_equal(back(np.ones(2))[w], [2.0, 4.0])


def test_a_refused_claim_leaves_no_parameter_bound(monkeypatch):
    from mutagrad import params as params_module

    a, b = mutagrad.array([1.0]), mutagrad.array([2.0])
    original = params_module.claim_parameter
    claims = []

    def refuse_the_second(w, tape):
        claims.append(w)
        if len(claims) == 2:
            raise mutagrad.MutagradError("in use")
        original(w, tape)

    monkeypatch.setattr("mutagrad.call.claim_parameter", refuse_the_second)
    with pytest.raises(mutagrad.MutagradError, match="in use"):
        mutagrad.gradient(lambda: np.sum(a * b), Params([a, b]))
    monkeypatch.undo()
    assert a._node is None and b._node is None
    assert not params_module._CLAIMS
