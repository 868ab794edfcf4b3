"""In-place writes: every path, poisoning, strict mode, snapshot mode, messages.

Each program is checked three ways: forward value against the same code on
plain ndarrays, gradient against finite differences, and (where a pullback
needs an overwritten value) that poison mode raises rather than answering.
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
import mutagrad.numpy as mnp
from mutagrad.testing import check_gradient


def same_value(f, *args, mode=None):
    """The forward value on WrappedArrays equals the value on plain ndarrays."""
    plain = f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    traced = mutagrad.withgradient(f, *args, mode=mode).val
    np.testing.assert_array_equal(traced, plain)


# -- the easy cases: the overwritten value is never needed ------------------------


def setitem_slice(x):
    y = np.empty_like(x)
    y[:] = 2 * x
    return np.sum(y * x)


def setitem_elements_in_a_loop(x):
    out = np.zeros_like(x)
    for i in range(len(x)):
        out[i] = np.sin(x[i]) * x[i]
    return np.sum(out)


def setitem_fancy_and_mask(x):
    y = np.zeros_like(x)
    y[[0, 2]] = x[[1, 0]] * 3
    y[x > 1.5] += x[x > 1.5] ** 2
    return np.sum(y * y)


def setitem_repeated_index(x):
    y = np.zeros_like(x)
    y[[0, 0, 1]] = x * np.array([1.0, 2.0, 3.0])  # numpy keeps one write per position
    return np.sum(y * np.array([1.0, 10.0, 100.0]))


def augmented_assignment(x):
    y = x * 1.0
    y += x
    y *= 3.0
    y -= 1.0
    y /= 2.0
    y **= 2
    return np.sum(y)


def ufunc_out(x):
    y = np.empty_like(x)
    np.multiply(x, x, out=y)
    np.sin(y, out=y)
    return np.sum(y)


def fill_then_write(x):
    y = np.empty_like(x)
    y.fill(1.0)
    y[1] = x[0] * x[2]
    return np.sum(y * x)


def copyto_with_mask(x):
    y = np.zeros_like(x)
    np.copyto(y, x * 2)
    np.copyto(y, x**3, where=np.array([True, False, True]))
    return np.sum(y * x)


def mutate_own_argument(x):
    x[:] = 2 * x
    return np.sum(x)


def write_into_a_constant_buffer(x):
    buf = mnp.zeros(3)
    buf[1:] = x[:2] * x[1:]
    return np.sum(buf**2)


def write_then_read_old_value_elsewhere(x):
    y = x * 1.0
    s = np.sum(y[:2] ** 2)  # keeps y[:2]
    y[2:] = 0.0  # does not touch it
    return s + np.sum(y)


EASY = [
    setitem_slice,
    setitem_elements_in_a_loop,
    setitem_fancy_and_mask,
    setitem_repeated_index,
    augmented_assignment,
    ufunc_out,
    fill_then_write,
    copyto_with_mask,
    mutate_own_argument,
    write_into_a_constant_buffer,
    write_then_read_old_value_elsewhere,
]


@pytest.mark.parametrize("program", EASY, ids=lambda f: f.__name__)
def test_easy_mutations_match_finite_differences(program):
    x = np.array([0.7, 1.9, -1.3])
    same_value(program, x)
    check_gradient(program, x)


@pytest.mark.parametrize("program", EASY, ids=lambda f: f.__name__)
def test_easy_mutations_raise_in_strict_mode(program):
    with pytest.raises(mutagrad.MutationError, match="Mutating arrays is not supported"):
        mutagrad.gradient(program, np.array([0.7, 1.9, -1.3]), mode="strict")


@pytest.mark.parametrize("program", EASY, ids=lambda f: f.__name__)
def test_snapshot_mode_agrees_and_copies_nothing_for_easy_cases(program):
    x = np.array([0.7, 1.9, -1.3])
    poison = mutagrad.withgradient(program, x)
    snapshot = mutagrad.withgradient(program, x, mode="snapshot")
    np.testing.assert_allclose(snapshot.grad[0], poison.grad[0])
    assert snapshot.bytes_copied == 0


def test_overwritten_input_reached_only_through_the_write_gets_zeros():
    def f(x):
        y = x * x  # noqa: F841 - saved for a pullback that never runs
        x.fill(0)
        return np.sum(x)

    np.testing.assert_array_equal(mutagrad.gradient(f, np.ones(3))[0], np.zeros(3))


def test_unused_input_gets_none_not_zeros():
    assert mutagrad.gradient(lambda x, y: np.sum(x), np.ones(2), np.ones(2))[1] is None


# -- values a pullback needs: poison raises, snapshot answers ------------------------


def fill_after_capture(x):
    y = x * x
    x.fill(0)
    return np.sum(y)


def log_then_fill(x):
    y = np.log(x)
    x.fill(0)
    return np.sum(y + x)


def scratch_buffer_reused(x):
    tmp = np.empty_like(x)
    total = 0.0
    for k in range(3):
        tmp[:] = x * (k + 1)
        total = total + np.sum(tmp**2)
    return total


def exp_out_then_normalise(z):
    z = z * 1.0
    np.exp(z, out=z)
    z /= z.sum()
    return np.sum(z * np.array([1.0, 2.0, 3.0]))


def write_through_setitem_after_sin(x):
    y = x * 1.0
    s = np.sin(y)
    y[1] = 5.0
    return np.sum(s)


NEEDED = [
    fill_after_capture,
    log_then_fill,
    scratch_buffer_reused,
    exp_out_then_normalise,
    write_through_setitem_after_sin,
]


@pytest.mark.parametrize("program", NEEDED, ids=lambda f: f.__name__)
def test_poison_mode_raises_where_the_old_value_is_needed(program):
    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(program, np.array([0.7, 1.9, 1.3]))


@pytest.mark.parametrize("program", NEEDED, ids=lambda f: f.__name__)
def test_snapshot_mode_is_correct_where_poison_raises(program):
    x = np.array([0.7, 1.9, 1.3])
    same_value(program, x, mode="snapshot")
    check_gradient(program, x, mode="snapshot")
    assert mutagrad.withgradient(program, x, mode="snapshot").bytes_copied > 0


def test_poison_message_names_both_sites_versions_and_fixes():
    with pytest.raises(mutagrad.PoisonedCaptureError) as info:
        mutagrad.gradient(fill_after_capture, np.ones(3))
    message = str(info.value)
    assert "captured by multiply at version 0" in message
    assert "y = x * x" in message and "x.fill(0)" in message
    assert message.count("test_mutation.py:") == 2
    assert "making version 1" in message
    assert 'mode="snapshot"' in message and "copy" in message


# Writes in a helper the traced function calls: the site of each must be the helper's
# line (the innermost user frame), which the write paths find by starting their walk at
# the frame that asked for the write (setitem's and the in-place operator's caller).
def element_write(out, v):
    out[0] = v[1]  # <- the write


def slice_write(out, v):
    out[1:] = v[1:]  # <- the write


def method_setitem(out, v):
    out.__setitem__(0, v[1])  # <- the write


def copyto_write(out, v):
    np.copyto(out, v)  # <- the write


def augmented_write(out, v):
    out += v  # <- the write


def view_augmented_write(out, v):
    tail = out[1:]
    tail += v[1:]  # <- the write


def ufunc_out_write(out, v):
    np.multiply(out, v, out=out)  # <- the write


def fill_write(out, v):
    out.fill(v[1])  # <- the write


WRITES_IN_HELPERS = [element_write, slice_write, method_setitem, copyto_write,
                     augmented_write, view_augmented_write, ufunc_out_write,
                     fill_write]  # fmt: skip


def write_line(helper):
    """``file:line (in helper)`` of the marked line in ``helper``."""
    import inspect

    lines, first = inspect.getsourcelines(helper)
    (offset,) = [k for k, text in enumerate(lines) if "# <- the write" in text]
    return f"{__file__}:{first + offset} (in {helper.__name__})"


@pytest.mark.parametrize("helper", WRITES_IN_HELPERS, ids=lambda h: h.__name__)
def test_a_poisoned_capture_names_the_write_in_the_helper(helper):
    def f(x):
        y = x * 1.0
        s = y * y  # saves y
        helper(y, x)  # not this line: the write is in the helper
        return np.sum(s)

    with pytest.raises(mutagrad.PoisonedCaptureError) as info:
        mutagrad.gradient(f, np.array([0.5, 1.5, 2.5]))
    overwritten = str(info.value).split("overwritten by", 1)[1]
    assert write_line(helper) in overwritten.split("\n")[1]


@pytest.mark.parametrize("helper", WRITES_IN_HELPERS, ids=lambda h: h.__name__)
def test_the_nodes_a_write_records_name_the_write_in_the_helper(helper):
    def f(x):
        y = x * 1.0
        helper(y, x)  # not this line: the write is in the helper
        return np.sum(y)

    explanation = mutagrad.explain(f, np.array([0.5, 1.5, 2.5]), file=None)
    written = [op for op in explanation.operations if op.writes or op.name.startswith("write")]
    assert written, "the write recorded nothing"
    assert {op.site for op in written} == {write_line(helper)}


@pytest.mark.parametrize("helper", WRITES_IN_HELPERS, ids=lambda h: h.__name__)
def test_a_write_nothing_else_reads_finds_its_own_site_in_the_helper(helper, monkeypatch):
    # No capture and no journal: no write record, so the nodes the write path makes
    # (its WRITE node, or the in-place operation's) walk to their site themselves.
    from mutagrad.diagnostics.sites import describe_site
    from mutagrad.traced import mutation

    sites = []

    def recording(make):
        def made(*args):
            sites.append(describe_site(args[-1]))  # (the site is the last argument of both)
            return make(*args)

        return made

    monkeypatch.setattr(mutation, "Node", recording(mutation.Node))  # (WRITE nodes only)
    monkeypatch.setattr(mutation, "record", recording(mutation.record))

    def f(x):
        y = x * 1.0
        helper(y, x)  # not this line: the write is in the helper
        return np.sum(y)

    mutagrad.gradient(f, np.array([0.5, 1.5, 2.5]))
    assert sites, "the write recorded nothing"
    assert set(sites) == {write_line(helper)}


def test_a_capture_never_read_raises_nothing():
    def f(x):
        y = x * 1.0
        unused = np.sin(y)  # saved y, but nothing downstream needs unused
        y[:] = 0.0
        return np.sum(y) + 0.0 * np.sum(x) + 0 * len(unused)

    np.testing.assert_array_equal(mutagrad.gradient(f, np.ones(2))[0], [0.0, 0.0])


def test_in_place_operations_do_not_poison_their_own_input():
    def divide_by_own_sum(y):
        y = y * 1.0
        y /= y.sum()
        return np.sum(y * np.array([1.0, 2.0, 3.0]))

    def multiply_by_other(y, x):
        y = y * 1.0
        y *= x
        return np.sum(y * y)

    def exp_in_place(z):
        z = z * 1.0
        np.exp(z, out=z)
        return np.sum(z)

    x = np.array([0.5, 1.5, 2.5])
    for program, args in [
        (divide_by_own_sum, (x,)),
        (multiply_by_other, (x, x + 1)),
        (exp_in_place, (x,)),
    ]:
        check_gradient(program, *args)


# -- raw ndarrays the tape reads ------------------------------------------------------


def test_raw_array_overwritten_after_capture_cannot_change_the_gradient():
    c = np.array([1.0, 2.0, 3.0])

    def f(x):
        y = x * c
        c[0] = 100.0  # a raw array: the tape kept its own copy
        return np.sum(y)

    try:
        np.testing.assert_array_equal(mutagrad.gradient(f, np.ones(3))[0], [1.0, 2.0, 3.0])
    finally:
        c[0] = 1.0


def test_the_guard_reports_what_it_copied_and_a_wrapped_constant_costs_nothing():
    c = np.arange(4.0)
    guarded = mutagrad.withgradient(lambda x: np.sum(x * c), np.ones(4))
    assert guarded.bytes_guarded == c.nbytes
    tracked = mutagrad.array(c)
    wrapped = mutagrad.withgradient(lambda x: np.sum(x * tracked), np.ones(4))
    assert wrapped.bytes_guarded == 0
    np.testing.assert_array_equal(guarded.grad[0], wrapped.grad[0])


# -- strict mode ----------------------------------------------------------------------------


def test_strict_message_follows_zygote_and_lists_fixes():
    with pytest.raises(mutagrad.MutationError) as info:
        mutagrad.gradient(mutate_own_argument, np.ones(3), mode="strict")
    message = str(info.value)
    assert message.startswith("Mutating arrays is not supported -- called __setitem__ on ")
    assert "float64 array of shape (3,)" in message
    assert "x[:] = 2 * x" in message
    for fix in ("avoid mutating", "mutagrad.Buffer", "rrule", 'mode="poison"'):
        assert fix in message


def test_strict_mode_allows_writes_to_raw_arrays_without_traced_values():
    def f(x):
        scratch = np.zeros(3)
        scratch[0] = 1.0
        return np.sum(x * scratch)

    np.testing.assert_array_equal(
        mutagrad.gradient(f, np.ones(3), mode="strict")[0], [1.0, 0.0, 0.0]
    )


def test_pure_programs_agree_in_strict_and_poison_mode():
    def f(x):
        return np.sum(np.tanh(x @ np.ones((3, 2))) ** 2)

    x = np.array([0.1, -0.4, 0.3])
    np.testing.assert_array_equal(
        mutagrad.gradient(f, x, mode="strict")[0], mutagrad.gradient(f, x)[0]
    )


# -- dtype and refusals ------------------------------------------------------------------------


def test_storing_traced_floats_into_an_integer_array_is_refused():
    def f(x):
        ints = np.zeros(3, dtype=np.int64)
        holder = mutagrad.array(ints)
        holder[0] = x[0] * 2
        return np.sum(x)

    with pytest.raises(mutagrad.NotDifferentiableError, match="truncates"):
        mutagrad.gradient(f, np.ones(3))


def test_versions_count_writes_on_base_and_views():
    a = mutagrad.array(np.zeros(4))
    v = a[1:3]
    assert a.version == v.version == 0
    v += 1.0
    a[0] = 2.0
    assert a.version == v.version == 2
    np.testing.assert_array_equal(np.asarray(a), [2.0, 1.0, 1.0, 0.0])


def test_snapshot_mode_cannot_redirect_a_closure_rule_and_says_how_to_fix_it():
    @mutagrad.primitive
    def scaled(x):
        return 3 * x

    @mutagrad.rrule(scaled)
    def scaled_rule(x):
        return scaled(x), lambda dy: (dy * 3 + 0 * x,)

    def f(x):
        y = x * 1.0
        z = scaled(y)
        y[0] = 9.0
        return np.sum(z)

    with pytest.raises(mutagrad.SnapshotUnavailableError) as info:
        mutagrad.gradient(f, np.ones(2), mode="snapshot")
    assert "mutagrad.defvjp" in str(info.value) and "reads=" in str(info.value)

    mutagrad.defvjp(scaled, lambda g, ans, x: 3 * g, reads=((),))  # declared: nothing saved
    np.testing.assert_array_equal(mutagrad.gradient(f, np.ones(2), mode="snapshot")[0], [3, 3])


# -- precision: writes that change nothing a capture holds -------------------------------------


def test_augmented_assignment_through_a_subscript_is_one_write():
    # Python runs `y[:, j] /= s` as an in-place divide of the view y[:, j], then
    # `y[:, j] = <that view>`: a store of the view onto itself, which must not count.
    def f(x):
        y = x * 1.0
        for j in range(y.shape[1]):
            y[:, j] /= np.sum(y[:, j])
        return np.sum(y * np.arange(6.0).reshape(3, 2))

    x = np.array([[0.5, 1.0], [1.5, 2.0], [2.5, 0.7]])
    same_value(f, x)
    check_gradient(f, x)
    with pytest.raises(mutagrad.MutationError):  # strict mode still sees the writes
        mutagrad.gradient(f, x, mode="strict")


def test_clip_into_its_own_input_keeps_nothing_it_overwrites():
    def f(x):
        y = x * 2.0
        np.clip(y, -1.0, 1.0, out=y)
        return np.sum(y * x)

    check_gradient(f, np.array([0.2, -0.9, 0.7, 0.1]))


@pytest.mark.parametrize(
    "write",
    [
        lambda y: y.__setitem__(y > 100.0, 0.0),  # selects nothing
        lambda y: y.__setitem__([3, 3], 1.0),  # misses the saved part
        lambda y: np.copyto(y, 0.0, where=np.array([False, False, False, True])),
    ],
    ids=["empty-mask", "fancy-elsewhere", "copyto-elsewhere"],
)
def test_advanced_writes_poison_only_captures_holding_a_written_element(write):
    def f(x):
        y = x * 1.0
        s = np.sum(np.sin(y[:3]))  # saves y[:3]
        write(y)
        return s + np.sum(y)

    check_gradient(f, np.array([0.2, -0.9, 0.7, 0.1]))

    def g(x):
        y = x * 1.0
        s = np.sum(np.sin(y))  # saves all of y, element 3 included
        write(y)
        return s + np.sum(y)

    with pytest.raises(mutagrad.PoisonedCaptureError):  # x[3] > 100: every write lands
        mutagrad.gradient(g, np.array([0.2, -0.9, 0.7, 200.0]))


def test_a_rule_that_writes_into_its_argument_is_refused_where_it_writes():
    @mutagrad.primitive
    def double_and_sum(a):
        a *= 2
        return np.sum(a)

    @mutagrad.rrule(double_and_sum)
    def double_and_sum_rule(a):
        return double_and_sum(a), lambda dy: (2 * dy * np.ones_like(a),)

    with pytest.raises(mutagrad.NotDifferentiableError) as info:
        mutagrad.gradient(lambda x: double_and_sum(x * 1.0), np.ones(3))
    assert "a *= 2" in str(info.value) and "no rule at all" in str(info.value)


@pytest.mark.parametrize("mode", ["poison", "snapshot"])
@pytest.mark.parametrize("dtype", [np.complex128, np.float32])
def test_a_whole_constant_array_overwritten_by_a_value_of_another_dtype(mode, dtype):
    # The array's node was the value's own, of the value's dtype: a view of the complex
    # array then handed complex cotangents to the float64 node (a crash at the end of the
    # sweep, found by the fuzzer, seed 8128). float32: the same write through a cast,
    # which gave the right gradient before and must still.
    def program(x):
        y = (np.round(x, 1) * 0).astype(dtype)  # a constant: round has no derivative
        y[...] = x  # every element, cast to y's dtype
        return np.sum(np.abs(y[::-1] * 0.3)) + np.sum(np.abs(np.exp(0.3 * y[1:])))

    x = np.array([-1.83, 0.81002, -0.189226])
    same_value(program, x, mode=mode)
    check_gradient(program, x, mode=mode, rtol=1e-5 if dtype is np.float32 else None)


# -- single-element writes (their pullback indexes g instead of building a Region) --


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("mode", ["poison", "snapshot"])
def test_element_writes_through_the_base_match_finite_differences(order, mode):
    def program(x):
        y = np.asarray(np.zeros((3, 4)), order=order) * x[0, 0]  # traced, given layout
        y[1, 2] = np.sin(x[0, 1]) * x[2, 3]  # a tuple key
        y[-1, 0] = y[1, 2] * x[1, 1]  # negative index; reads the element just written
        y[1, 2] = y[1, 2] ** 2  # the same element again, from its own old value
        y[0, 3] = 5.0  # a constant over a traced element
        z = y * x  # captures y; only its untouched elements survive below
        return np.sum(z[0, :3] + z[2, 1:]) + np.sum(y)

    x = np.asarray(np.linspace(0.3, 1.4, 12).reshape(3, 4), order=order)
    same_value(program, x, mode=mode)
    check_gradient(program, x, mode=mode)
    check_gradient(program, x, order=2, mode=mode)  # the sweep recorded: the traced path


def test_element_write_after_capture_poisons_only_when_the_element_is_needed():
    def needed(x):
        y = x * 1.0
        z = y * y  # saves y
        y[1] = 0.0
        return np.sum(z) + np.sum(y)

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(needed, np.arange(1.0, 4.0))
    check_gradient(needed, np.arange(1.0, 4.0), mode="snapshot")

    def not_needed(x):
        out = np.zeros_like(x)
        for i in range(len(x)):
            out[i] = np.exp(x[i])
            out[i] = out[i] * 2.0  # overwrites an element multiply's pullback does not read
        return np.sum(out)

    (g,) = mutagrad.gradient(not_needed, np.arange(3.0))
    np.testing.assert_allclose(g, 2 * np.exp(np.arange(3.0)))


def test_a_fourth_mode_is_a_policy_subclass_and_one_entry(monkeypatch):
    # Issue 15: adding a mode touches core/modes.py only. This one counts the
    # captures it is told about and otherwise poisons, as the default does.
    from mutagrad.core import modes

    class Counting(modes.Mode):
        name = "counting"
        role = "poison, counting overwrites"
        seen = 0

        def overwrite(self, capture, write):
            Counting.seen += 1
            super().overwrite(capture, write)

    monkeypatch.setitem(modes.MODES, "counting", Counting())

    def harmless(x):
        y = x * 1.0
        s = np.sum(y)
        y[0] = 5.0
        return s

    def needs_old_value(x):
        y = x * 1.0
        z = y * y
        y[0] = 5.0
        return np.sum(z)

    np.testing.assert_array_equal(mutagrad.gradient(harmless, np.ones(3), mode="counting")[0], 1.0)
    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(needs_old_value, np.ones(3), mode="counting")
    assert Counting.seen == 1


# -- ufunc(..., out=, where=) ---------------------------------------------------------

WHERE_X = np.array([[0.3, 1.2, -0.5], [2.0, -1.0, 0.7]])
WHERE_MASK = np.array([[True, False, True], [False, True, True]])


def _where_programs():
    def selected_elements(x):
        y = x * 2.0
        np.sin(x, out=y, where=WHERE_MASK)
        np.add(y, x[0], out=y, where=WHERE_MASK[0])  # a broadcast mask and operand
        np.hypot(x, x[::-1], out=y, where=True)
        return np.sum(y * y)

    def a_division_the_mask_avoids(x):
        y = np.zeros_like(x)
        np.divide(1.0, x - WHERE_X * WHERE_MASK, out=y, where=~WHERE_MASK)  # 1/0 where True
        np.divide(1.0, x + 3.0, out=y, where=WHERE_MASK)
        return np.sum(y)

    def an_input_overlapping_out(x):
        y = x * 1.0
        s = np.sum(np.exp(y))
        np.multiply(y[:, ::-1], 3.0, out=y, where=WHERE_MASK)  # numpy buffers the input
        return np.sum(y * np.arange(6.0).reshape(2, 3)) + s

    def a_traced_mask_and_a_constant_out(x):
        y = np.ones_like(x)  # a constant WrappedArray
        np.subtract(x, 1.5, out=y, where=x > 0.0)  # the mask is data (away from 0)
        return np.sum(y * y)

    return [selected_elements, a_division_the_mask_avoids, an_input_overlapping_out,
            a_traced_mask_and_a_constant_out]  # fmt: skip


@pytest.mark.parametrize("program", _where_programs(), ids=lambda f: f.__name__)
def test_ufunc_out_with_where_writes_the_selected_elements_only(program):
    expected = program(WHERE_X.copy())
    for mode in ("poison", "snapshot"):
        result = mutagrad.withgradient(program, WHERE_X, mode=mode)
        assert result.val == expected
        assert np.all(np.isfinite(result.grad[0]))
        check_gradient(program, WHERE_X, mode=mode)


def test_ufunc_out_with_where_keeps_numpy_s_errors():
    def program(x):
        y = np.zeros(3, dtype=np.int64)
        np.add(x[0], 1.5, out=y, where=WHERE_MASK[0])  # same_kind casting refuses
        return np.sum(x)

    with pytest.raises(TypeError):
        program(WHERE_X.copy())
    with pytest.raises(TypeError):
        mutagrad.gradient(program, WHERE_X)
