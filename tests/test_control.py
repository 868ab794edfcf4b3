"""Derivative control: ignore_derivatives, non_differentiable, checkpointed, hook."""

from __future__ import annotations

import array
import collections
import decimal
import functools
import threading
from pathlib import Path

import numpy as np
import pytest

import mutagrad
import mutagrad.numpy as mnp
from mutagrad.custom import clear_rule
from mutagrad.testing import check_gradient

RNG = np.random.default_rng(3)
W = RNG.standard_normal((4, 4)) / 2


def block(h):
    for _ in range(3):
        h = np.tanh(W @ h)
    return h


def plain_loss(x):
    return np.sum(block(block(x)) ** 2)


def checkpointed_loss(x):
    return np.sum(mutagrad.checkpointed(block, mutagrad.checkpointed(block, x)) ** 2)


X = RNG.standard_normal(4)


# -- ignore_derivatives ----------------------------------------------------------------


def test_ignore_derivatives_of_a_value_is_a_constant_with_the_same_value():
    def f(x):
        c = mutagrad.ignore_derivatives(x)
        assert not mutagrad.is_traced(c)
        np.testing.assert_array_equal(np.asarray(c), [1.0, 2.0])
        return np.sum(x * c)

    (g,) = mutagrad.gradient(f, np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [1.0, 2.0])  # only the traced factor


def test_ignore_derivatives_of_a_function_returns_constants():
    def f(x):
        y = mutagrad.ignore_derivatives(lambda: x * 3)
        return np.sum(y * x)

    np.testing.assert_array_equal(mutagrad.gradient(f, np.array([1.0, 2.0]))[0], [3.0, 6.0])
    assert mutagrad.gradient(lambda x: mutagrad.ignore_derivatives(x) * 2.0, 3.0) == (None,)


def test_ignore_derivatives_of_structures():
    def f(x):
        parts = mutagrad.ignore_derivatives({"a": x * 2, "b": [x, "s"]})
        assert not mutagrad.is_traced(parts["a"]) and not mutagrad.is_traced(parts["b"][0])
        return np.sum(x * parts["a"])

    np.testing.assert_array_equal(mutagrad.gradient(f, np.ones(2))[0], [2.0, 2.0])


def test_writes_inside_an_ignored_function_keep_their_gradient():
    # ChainRules' wrong_grads gives 0 here; mutagrad records the write and gives
    # the true gradient (the closure's side effect is part of the computation).
    def f(x):
        y = mnp.zeros(3)
        mutagrad.ignore_derivatives(lambda: y.__setitem__(slice(0, 2), x * x))
        return np.sum(y)

    np.testing.assert_array_equal(mutagrad.gradient(f, np.array([1.0, 3.0]))[0], [2.0, 6.0])


def test_ignore_derivatives_outside_a_gradient_call():
    assert mutagrad.ignore_derivatives(lambda: 3) == 3
    np.testing.assert_array_equal(np.asarray(mutagrad.ignore_derivatives(np.ones(2))), [1, 1])


# -- non_differentiable ------------------------------------------------------------------


def test_non_differentiable_primitive_output_is_a_constant():
    @mutagrad.primitive
    def round_to_half(x):
        return np.floor(np.asarray(x) * 2 + 0.5) / 2  # np.asarray: not traceable

    with pytest.raises(mutagrad.TracerConversionError):
        mutagrad.gradient(lambda x: np.sum(round_to_half(x) * x), np.array([0.3, 1.4]))
    assert mutagrad.non_differentiable(round_to_half) is round_to_half
    try:
        (g,) = mutagrad.gradient(lambda x: np.sum(round_to_half(x) * x), np.array([0.3, 1.4]))
        np.testing.assert_array_equal(g, [0.5, 1.5])  # d/dx: the rounded values only
    finally:
        clear_rule(round_to_half)


def test_non_differentiable_refuses_a_plain_python_function():
    with pytest.raises(mutagrad.MutagradError, match="primitive"):
        mutagrad.non_differentiable(lambda x: x)


# -- checkpointed --------------------------------------------------------------------------


def test_checkpointed_gradient_equals_the_plain_gradient():
    (plain,) = mutagrad.gradient(plain_loss, X)
    for mode in ("strict", "poison", "snapshot"):
        (g,) = mutagrad.gradient(checkpointed_loss, X, mode=mode)
        np.testing.assert_allclose(g, plain, rtol=1e-12, atol=1e-14)
    check_gradient(checkpointed_loss, X)


def test_checkpointed_keeps_one_node_per_segment():
    plain = mutagrad.explain(plain_loss, X, file=None)
    ckpt = mutagrad.explain(checkpointed_loss, X, file=None)
    names = [op.name for op in ckpt.operations]
    assert names.count("checkpointed") == 2
    assert len(ckpt.operations) < len(plain.operations) / 2


def test_checkpointed_outside_a_gradient_call_just_calls_f():
    np.testing.assert_array_equal(mutagrad.checkpointed(block, X), block(X))


def test_checkpointed_segment_that_fills_a_buffer():
    def fill(h):
        b = np.empty_like(h)
        for i in range(len(h)):
            b[i] = np.sin(h[i]) * h[i]
        return b

    (g,) = mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(fill, x)), X)
    np.testing.assert_allclose(g, np.sin(X) + X * np.cos(X))
    with pytest.raises(mutagrad.MutationError):
        mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(fill, x)), X, mode="strict")


def test_checkpointed_with_several_and_structured_arguments():
    def segment(h, params, scale):
        return np.tanh(params["w"] @ h + params["b"]) * scale

    def loss(x, w, b, scale):
        return np.sum(mutagrad.checkpointed(segment, x, {"w": w, "b": b}, scale) ** 2)

    def reference(x, w, b, scale):
        return np.sum(segment(x, {"w": w, "b": b}, scale) ** 2)

    args = (X, W, RNG.standard_normal(4), 1.5)
    got = mutagrad.gradient(loss, *args)
    want = mutagrad.gradient(reference, *args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_checkpointed_segment_returning_a_copy_of_its_argument_or_a_scalar():
    (g,) = mutagrad.gradient(
        lambda x: np.sum(mutagrad.checkpointed(lambda h: h[1:].copy(), x) ** 2), X
    )
    np.testing.assert_allclose(g, np.r_[0.0, 2 * X[1:]])
    (g,) = mutagrad.gradient(lambda x: mutagrad.checkpointed(lambda h: np.sum(h**3), x) * 2, X)
    np.testing.assert_allclose(g, 6 * X**2)


def test_checkpointed_refuses_writing_a_closed_over_wrapped_array():
    counter = mutagrad.array([0.0])

    def counting(h):
        counter[0] += 1
        return h * 2

    with pytest.raises(mutagrad.MutagradError, match="writes a WrappedArray"):
        mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(counting, x)), X)


def test_checkpointed_refuses_writing_a_closed_over_ndarray_and_restores_it():
    scratch = np.zeros(1)

    def scribbling(h):
        scratch[0] = 1.0
        return h * 2

    with pytest.raises(mutagrad.MutagradError, match="writes an ndarray"):
        mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(scribbling, x)), X)
    assert scratch.flags.writeable and scratch[0] == 0.0


class RunningMean:
    """A layer that updates state in its forward pass (BatchNorm's running mean)."""

    def __init__(self):
        self.mean = mutagrad.array(np.zeros(4))

    def __call__(self, h):
        self.mean[:] = 0.9 * self.mean + 0.1 * mutagrad.ignore_derivatives(h)
        return h - 1.0


def test_checkpointed_finds_state_in_objects_methods_and_partials():
    layer = RunningMean()
    for f in (layer, layer.__call__, functools.partial(lambda lyr, h: lyr(h), layer)):
        with pytest.raises(mutagrad.MutagradError, match="did not create"):
            mutagrad.gradient(lambda x, f=f: np.sum(mutagrad.checkpointed(f, x)), X)


def test_closed_over_traced_values_get_their_gradient():
    def loss(x, w):
        return np.sum(mutagrad.checkpointed(lambda h: np.tanh(h * w), x))

    def reference(x, w):
        return np.sum(np.tanh(x * w))

    got = mutagrad.gradient(loss, X, 2.0)
    want = mutagrad.gradient(reference, X, 2.0)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    assert got[1] == pytest.approx(want[1], rel=1e-12)


class Dense:
    """A layer holding its weights, as Flux layers do."""

    def __init__(self, rng, n):
        self.W = mutagrad.array(rng.standard_normal((n, n)) / 2)
        self.b = mutagrad.array(np.zeros(n))

    def __call__(self, h):
        return np.tanh(self.W @ h + self.b)


def test_checkpointed_layer_with_implicit_parameters():
    rng = np.random.default_rng(5)
    first, second = Dense(rng, 4), Dense(rng, 4)
    ps = mutagrad.Params([first.W, first.b, second.W, second.b])

    def plain():
        return np.sum(second(first(X)) ** 2)

    def with_checkpoints():
        return np.sum(mutagrad.checkpointed(second, mutagrad.checkpointed(first, X)) ** 2)

    want = mutagrad.gradient(plain, ps)
    got = mutagrad.gradient(with_checkpoints, ps)
    for w in ps:
        np.testing.assert_allclose(got[w], want[w], rtol=1e-12, atol=1e-15)
    assert all(w._node is None for w in ps)


def test_second_derivatives_through_a_closed_over_traced_value():
    def loss(x, w):
        return np.sum(mutagrad.checkpointed(lambda h: np.sin(h * w), x))

    check_gradient(loss, X, 0.7, order=2)


def test_checkpointed_refuses_a_traced_value_it_cannot_see():
    import weakref

    def loss(x, w):
        hidden = weakref.ref(w)  # the watch does not look through weak references
        return np.sum(mutagrad.checkpointed(lambda h: h * hidden(), x))

    with pytest.raises(mutagrad.MutagradError, match=r"(?i)pass it as an argument"):
        mutagrad.gradient(loss, X, np.array(2.0))


def test_checkpointed_may_read_closed_over_constants():
    c = mutagrad.array([1.0, 2.0, 3.0, 4.0])
    (g,) = mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(lambda h: h * c, x)), X)
    np.testing.assert_array_equal(g, [1.0, 2.0, 3.0, 4.0])


def test_a_later_write_to_a_closed_over_constant_poisons_the_segment():
    c = mutagrad.array([1.0, 2.0, 3.0, 4.0])

    def loss(x):
        y = mutagrad.checkpointed(lambda h: h * c, x)  # the pullback reads c again
        c[0] = 100.0
        return np.sum(y * y)

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(loss, X)
    c[0] = 1.0
    with pytest.raises(mutagrad.SnapshotUnavailableError):
        mutagrad.gradient(loss, X, mode="snapshot")


def test_a_later_write_to_an_argument_poisons_or_is_snapshotted():
    def loss(x):
        y = x * 1.0
        z = mutagrad.checkpointed(lambda h: h**2, y)
        y[0] = 100.0
        return np.sum(z)

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(loss, X)
    np.testing.assert_allclose(mutagrad.gradient(loss, X, mode="snapshot")[0], 2 * X)


def test_a_recomputation_with_a_different_value_is_refused():
    rng = np.random.default_rng(0)

    def noisy(h):
        return h * rng.random()

    with pytest.raises(mutagrad.MutagradError, match="different value"):
        mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(noisy, x)), X)


# State read by a checkpointed block, changed between the forward and the backward pass
# so that the block's value stays the same and its gradient does not: refused, naming
# the operation whose pullback differs, its line, and the fix.
SETTINGS = {"k": 1.0, "c": 0.0, "square": True}
ONES = np.ones(4)


def refuses_another_recomputation(loss, x, line):
    """``loss``'s gradient is refused as a recomputation that differs, at ``line``."""
    with pytest.raises(mutagrad.MutagradError, match="did not compute the same way") as info:
        mutagrad.gradient(loss, x)
    message = str(info.value)
    assert f"test_control.py:{line} " in message and "Fix: pass what it reads" in message
    return message


def line_of(text):
    """The line of this file that holds ``text``."""
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_a_closure_variable_rebound_after_the_block_is_refused():
    def loss(x):
        p = 2.0
        y = mutagrad.checkpointed(lambda z: np.sum(z**p), x)  # reads the cell p
        p = 3.0  # 1 ** p is 1 either way; its derivative p is not
        return y

    message = refuses_another_recomputation(loss, ONES, line_of("np.sum(z**p), x)"))
    assert "power at" in message and "read other values" in message

    # Passed as an argument, its value at the call is kept: the gradient is right.
    def fixed(x):
        p = 2.0
        y = mutagrad.checkpointed(lambda z, q: np.sum(z**q), x, p)
        p = 3.0  # (the argument keeps 2.0)
        return y

    np.testing.assert_array_equal(mutagrad.gradient(fixed, ONES)[0], 2 * ONES)


def test_a_global_dict_entry_changed_after_the_block_is_refused():
    def loss(x):
        SETTINGS.update(k=1.0, c=0.0)
        y = mutagrad.checkpointed(lambda z: np.sum(z * SETTINGS["k"]) + SETTINGS["c"], x)
        SETTINGS.update(k=2.0, c=-10.0)  # k * sum(z) + c is 10 either way at [1, 2, 3, 4]
        return y

    try:
        message = refuses_another_recomputation(loss, X4, line_of('z * SETTINGS["k"]'))
    finally:
        SETTINGS.update(k=1.0, c=0.0)
    assert "multiply at" in message


X4 = np.array([1.0, 2.0, 3.0, 4.0])


def squared_or_plain(h):
    # (a named function: the watch reads the globals it names, and finds no array there)
    return np.sum(h**2) if SETTINGS["square"] else np.sum(h)


def test_a_branch_on_a_global_flag_that_changes_is_refused():
    def loss(x):
        SETTINGS["square"] = True
        y = mutagrad.checkpointed(squared_or_plain, x)
        SETTINGS["square"] = False  # sum(h**2) == sum(h) at ones; 2h != 1
        return y

    try:
        message = refuses_another_recomputation(loss, ONES, line_of("return np.sum(h**2) if"))
    finally:
        SETTINGS["square"] = True
    assert "a branch went another way" in message


def test_random_numbers_drawn_inside_the_block_are_refused():
    rng = np.random.default_rng(1)

    def loss(x):  # a permutation keeps the sum at ones, not the gradient
        return mutagrad.checkpointed(lambda z: np.sum(z * rng.permutation(X4)), x)

    message = refuses_another_recomputation(loss, ONES, line_of("z * rng.permutation(X4)"))
    assert "multiply at" in message


def test_an_array_the_watch_does_not_reach_is_compared_where_a_pullback_reads_it():
    box = collections.deque([np.array([1.0, 2.0])])  # checkpointed does not look into a deque

    def loss(x):
        box[0] = np.array([1.0, 2.0])
        y = mutagrad.checkpointed(lambda z: np.sum(z * box[0]), x)
        box[0][:] = [2.0, 1.0]  # the same sum at ones, another gradient
        return y

    refuses_another_recomputation(loss, np.ones(2), line_of("np.sum(z * box[0])"))


def test_state_changed_inside_a_nested_block_is_refused_by_the_outer_one():
    def loss(x):
        p = 2.0
        inner = lambda z: np.sum(z**p)  # noqa: E731
        y = mutagrad.checkpointed(lambda h: mutagrad.checkpointed(inner, h) * 1.0, x)
        p = 3.0  # the outer recomputation runs the inner block with p = 3
        return y

    message = refuses_another_recomputation(loss, ONES, line_of("mutagrad.checkpointed(inner, h)"))
    assert "checkpointed at" in message


def test_constant_arguments_reach_the_recomputation_as_they_reached_the_first_run():
    c = np.array([1.0, 2.0, 3.0, 4.0])

    def loss(x):
        mask = x > 2.0  # a boolean WrappedArray: no gradient
        return mutagrad.checkpointed(lambda h, m, n, k: np.sum(h**n * k * m), x, mask, 3, c)

    (g,) = mutagrad.gradient(loss, X4)
    np.testing.assert_allclose(g, 3 * X4**2 * c * (X4 > 2.0), rtol=1e-14)
    check_gradient(loss, X4 + 0.5)


def test_a_block_with_writes_views_and_rules_recomputes_the_same_way():
    """The fingerprint of an ordinary block is the same in both runs (no false refusal):
    in-place writes, views, an rrule's closure, a hook, an element loop."""

    @mutagrad.primitive
    def cube(v):
        return v**3

    @mutagrad.rrule(cube)
    def cube_rule(v):
        return v**3, lambda g: (3 * v**2 * g,)

    def block(h):
        b = mnp.zeros(6)
        b[1:5] = np.sin(h)
        b[::2] *= 2.0
        v = b.reshape(2, 3).T
        for i in range(3):
            v[i, 0] = v[i, 1] * h[i]
        return np.sum(cube(mutagrad.hook(lambda g: g * 1.0, v)) ** 2)

    try:

        def loss(x):
            return mutagrad.checkpointed(block, x)

        for mode in ("poison", "snapshot"):
            (got,) = mutagrad.gradient(loss, X4, mode=mode)
            (want,) = mutagrad.gradient(block, X4, mode=mode)
            np.testing.assert_allclose(got, want, rtol=1e-13)
        check_gradient(loss, X4)
    finally:
        clear_rule(cube)


def test_writing_the_checkpointed_output_afterwards_is_fine():
    def loss(x):
        y = mutagrad.checkpointed(lambda h: h**2, x)
        s = np.sum(y * 3.0)
        y[:] = 0.0  # the output's old value is not needed by anyone
        return s

    np.testing.assert_allclose(mutagrad.gradient(loss, X)[0], 6 * X)


def test_second_derivatives_through_checkpointed():
    np.testing.assert_allclose(mutagrad.hessian(checkpointed_loss, X),
                               mutagrad.hessian(plain_loss, X), atol=1e-12)  # fmt: skip
    check_gradient(checkpointed_loss, X, order=2)


def test_checkpointed_inside_an_inner_gradient():
    def outer(x):
        (g,) = mutagrad.gradient(checkpointed_loss, x)
        return np.sum(g**2)

    def reference(x):
        (g,) = mutagrad.gradient(plain_loss, x)
        return np.sum(g**2)

    np.testing.assert_allclose(mutagrad.gradient(outer, X)[0], mutagrad.gradient(reference, X)[0],
                               atol=1e-12)  # fmt: skip


def test_checkpointed_segment_that_takes_a_gradient_itself():
    def segment(h):
        return mutagrad.gradient(lambda v: np.sum(np.sin(v) * v), h)[0]

    (g,) = mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(segment, x)), X)
    np.testing.assert_allclose(g, 2 * np.cos(X) - X * np.sin(X))


# -- hook ---------------------------------------------------------------------------------


def test_hook_sees_the_cotangent_and_leaves_the_gradient_alone():
    seen = []

    def f(x):
        return np.sum(mutagrad.hook(lambda g: seen.append(np.array(g)), x * 2) ** 2)

    (g,) = mutagrad.gradient(f, X)
    np.testing.assert_allclose(g, 8 * X)
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], 4 * X)  # d/d(2x) of sum((2x)^2)


def test_hook_can_replace_the_cotangent():
    (g,) = mutagrad.gradient(lambda x: np.sum(mutagrad.hook(lambda g: 3 * g, x**2)), X)
    np.testing.assert_allclose(g, 6 * X)
    (g,) = mutagrad.gradient(
        lambda x: np.sum(mutagrad.hook(lambda g: np.clip(g, -1, 1), x) * 10), X
    )
    np.testing.assert_array_equal(g, np.ones(4))


def test_hook_forward_value_and_cases_without_gradient():
    y = np.arange(3.0)
    assert mutagrad.hook(print, y) is y  # outside a gradient call: x itself
    calls = []

    def f(x):
        c = mutagrad.hook(calls.append, mutagrad.ignore_derivatives(x))
        h = mutagrad.hook(calls.append, x * 1.0)
        np.testing.assert_array_equal(np.asarray(mutagrad.ignore_derivatives(h)), np.asarray(c))
        return np.sum(x) + 0.0 * np.sum(c)

    mutagrad.gradient(f, X)
    assert calls == []  # c carries no gradient; no gradient reaches h


def test_hook_gets_a_read_only_cotangent():
    def f(x):
        def try_to_write(g):
            g[0] = 5.0

        return np.sum(mutagrad.hook(try_to_write, x * 1.0))

    with pytest.raises(ValueError, match="read-only"):
        mutagrad.gradient(f, X)


def test_hook_is_called_once_per_jacobian_row():
    seen = []
    mutagrad.jacobian(lambda x: mutagrad.hook(seen.append, x * 2), X)
    assert len(seen) == 4


def test_hook_refuses_a_tuple_of_traced_values():
    with pytest.raises(TypeError, match="one array"):
        mutagrad.gradient(lambda x: np.sum(mutagrad.hook(print, (x, x))[0]), X)


def test_hook_in_a_second_derivative():
    seen = []
    h = mutagrad.hessian(lambda x: np.sum(mutagrad.hook(seen.append, x**3)), np.array([1.0, 2.0]))
    np.testing.assert_allclose(h, np.diag([6.0, 12.0]))
    assert seen  # called on traced cotangents during the recorded inner sweep


# State a pullback or hook reads through containers and objects the fingerprint must see into
@pytest.mark.parametrize(
    ("holder", "read"),
    [
        (lambda s: [[s]], lambda c: c[0][0]),  # (deeper than the fingerprint once looked)
        (lambda s: collections.deque([s]), lambda c: c[0]),
        (lambda s: array.array("d", [s]), lambda c: c[0]),
        (lambda s: bytearray([int(s)]), lambda c: float(c[0])),
        (lambda s: decimal.Decimal(s), float),
    ],
)
def test_state_a_rule_closes_over_in_any_container_is_compared(holder, read):
    @mutagrad.primitive
    def scaled(v, c):
        return v * read(c)

    @mutagrad.rrule(scaled)
    def scaled_rule(v, c):
        return v * read(c), lambda g: (g * read(c), mutagrad.NoTangent())

    def loss(x):
        SETTINGS["k"] = 1.0
        y = mutagrad.checkpointed(lambda z: np.sum(scaled(z, holder(SETTINGS["k"]))), x)
        SETTINGS["k"] = 2.0  # x is 0: the value is 0 either way, the gradient 1 or 2
        return y

    try:
        refuses_another_recomputation(loss, np.zeros(3), line_of("scaled(z, holder("))
    finally:
        SETTINGS["k"] = 1.0
        clear_rule(scaled)


def test_state_a_defvjp_argument_or_a_hook_holds_is_compared():
    @mutagrad.primitive
    def scaled(v, c):
        return v * float(c)

    mutagrad.defvjp(scaled, lambda g, ans, v, c: g * float(c))

    def loss(x):
        SETTINGS["k"] = 1.0
        y = mutagrad.checkpointed(lambda z: np.sum(scaled(z, decimal.Decimal(SETTINGS["k"]))), x)
        SETTINGS["k"] = 2.0
        return y

    def hooked(x):
        SETTINGS["k"] = 1.0

        def block(z):
            c = [[SETTINGS["k"]]]
            return np.sum(mutagrad.hook(lambda g: c[0][0] * g, z) * 1.0)

        y = mutagrad.checkpointed(block, x)
        SETTINGS["k"] = 2.0
        return y

    try:
        refuses_another_recomputation(loss, np.zeros(3), line_of("scaled(z, decimal.Decimal("))
        refuses_another_recomputation(hooked, np.zeros(3), line_of("hook(lambda g: c[0][0] * g"))
    finally:
        SETTINGS["k"] = 1.0
        clear_rule(scaled)


def test_a_pullback_holding_an_object_it_cannot_compare_is_refused():
    lock = threading.Lock()  # (state kept in C, which the fingerprint cannot read)

    @mutagrad.primitive
    def scaled(v, c):
        return v * c[1]

    @mutagrad.rrule(scaled)
    def scaled_rule(v, c):
        return v * c[1], lambda g: (g * c[1], mutagrad.NoTangent())

    def loss(x):
        return mutagrad.checkpointed(lambda z: np.sum(scaled(z, [lock, 2.0])), x)

    try:
        with pytest.raises(mutagrad.MutagradError, match="cannot be recomputed safely") as info:
            mutagrad.gradient(loss, X4)
        message = str(info.value)
        assert f"test_control.py:{line_of('scaled(z, [lock, 2.0])')} " in message
        assert "reads a lock object (_thread.lock)" in message
        assert "Fix: let the pullback" in message
        # Ordinary state the fingerprint can read is not refused: numbers, a generator's state.
        rng = np.random.default_rng(0)
        (g,) = mutagrad.gradient(lambda x: mutagrad.checkpointed(
            lambda z: np.sum(scaled(z, [rng, 2.0])), x), X4)  # fmt: skip
        np.testing.assert_array_equal(g, 2.0 * np.ones(4))
    finally:
        clear_rule(scaled)


@pytest.mark.parametrize("block", [lambda z: z[::-1], lambda z: z, lambda z: z[1:]])
def test_a_block_returning_a_view_of_its_argument_is_refused(block):
    def loss(x):
        y = x * 1.0
        r = mutagrad.checkpointed(block, y)  # numpy's r is a view of y
        r[0] = 9.0  # ... so this write would show in y
        return np.sum(y * x)

    with pytest.raises(mutagrad.MutagradError, match="returns a view of an array it") as info:
        mutagrad.gradient(loss, X4, mode="snapshot")
    message = str(info.value)
    assert f"test_control.py:{line_of('r = mutagrad.checkpointed(block, y)')} " in message
    assert "Fix: return a copy" in message


def test_an_argument_in_fortran_order_written_after_the_block_in_snapshot_mode():
    """The recomputation reads the snapshot of the argument in the layout the first run
    read, so its views' regions are the same: no false refusal."""

    def block(u):
        w = np.zeros_like(u)
        w[0] = u[-1] * u[0]
        return np.cos(w + u) * u

    def loss(x, checkpoint=True):
        t = x.T * 1.0  # (x is in C order: t in Fortran order)
        y = mutagrad.checkpointed(block, t) if checkpoint else block(t)
        t *= 0.5  # snapshot mode copies the saved argument
        return np.sum(np.tanh(y)) + np.sum(t)

    a = np.arange(6.0).reshape(3, 2) / 7
    (got,) = mutagrad.gradient(loss, a, mode="snapshot")
    (want,) = mutagrad.gradient(lambda x: loss(x, False), a, mode="snapshot")
    np.testing.assert_allclose(got, want, rtol=1e-13)
    check_gradient(loss, a, mode="snapshot")
