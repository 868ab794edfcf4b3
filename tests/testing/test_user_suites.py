"""mutagrad.testing in other people's property-based suites (issue 26).

What a library author's suite needs and used to trip on: float32 arguments
checked against a float64 reference, a routine that allocates its own buffer,
gradients with ``None`` compared across modes, programs drawn at the user's
shapes and dtype and composed with the user's function, ``judge``'s verdict,
the shipped hypothesis profiles, and reports that say what they compared.
"""

from __future__ import annotations

import importlib.metadata
from collections import OrderedDict, namedtuple

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import mutagrad
from mutagrad.testing import (
    assert_gradients_close,
    check_gradient,
    check_rule,
    numerical_gradient,
    register_profiles,
)
from mutagrad.testing.fuzz import Outcome, judge
from mutagrad.testing.strategies import float_arrays, programs

RNG = np.random.default_rng(26)
X32 = RNG.standard_normal(5).astype(np.float32)
Y32 = RNG.standard_normal(5).astype(np.float32)


def buffered_product(x, y):
    """The issue's routine: a buffer that takes y's dtype, filled in place."""
    out = np.empty_like(y)
    out[:] = x * y
    return np.sum(np.tanh(out))


# -- precision ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_float32_or_float64_routine_passes_its_gradient_check(dtype):
    grads = check_gradient(buffered_product, X32.astype(dtype), Y32.astype(dtype))
    assert all(g.dtype == dtype for g in grads)


def test_the_reference_of_float32_arguments_is_taken_in_float64():
    x, y = numerical_gradient(buffered_product, X32, Y32)
    exact = 1 - np.tanh(X32.astype(float) * Y32.astype(float)) ** 2
    np.testing.assert_allclose(x, exact * Y32, rtol=1e-7)  # no float32 rounding in it
    np.testing.assert_allclose(y, exact * X32, rtol=1e-7)


@mutagrad.primitive
def scaled(x):
    return 1.01 * x


def test_a_wrong_float32_gradient_still_fails_and_the_report_says_the_reference():
    mutagrad.defvjp(scaled, lambda g, ans, x: g, reads=((),))  # 1 where 1.01 is right
    with pytest.raises(AssertionError) as failed:
        check_gradient(lambda x: np.sum(scaled(x) ** 2), X32)
    report = str(failed.value)
    assert "step 1e-06 on float64 copies of the arguments (argument 0 float32)" in report
    assert "atol=0.001, rtol=0.001" in report


def test_a_routine_that_keeps_to_float32_is_differenced_in_float32():
    def keeps_float32(x):
        return np.sum(np.tanh(x.astype(np.float32)) * 3)

    check_gradient(keeps_float32, X32.astype(np.float64))

    def wrong(x):
        return np.sum(np.tanh(scaled(x).astype(np.float32)))

    mutagrad.defvjp(scaled, lambda g, ans, x: 1.5 * g, reads=((),))
    with pytest.raises(AssertionError, match=r"step 0\.001 in float32, the precision f computes"):
        check_gradient(wrong, X32.astype(np.float64))


def test_a_large_value_widens_the_absolute_tolerance_by_its_rounding():
    def large(x):  # about 1e7: its rounding over a 1e-6 step is about 1e-3 in the quotient
        return 1e7 * np.sum(np.cos(x)) + np.sum(x)

    x = np.array([np.pi, 1.0, 2.0])  # at pi the gradient is about 1, far below 1e7
    check_gradient(large, x)
    mutagrad.defvjp(scaled, lambda g, ans, x: 2 * g, reads=((),))
    with pytest.raises(AssertionError, match=r"atol raised to .* by the rounding of f's value"):
        check_gradient(lambda x: large(x) + np.sum(scaled(x)), x)


def test_check_rule_on_a_float32_rule_passes_and_prints_its_cotangent_when_wrong():
    @mutagrad.primitive
    def product(x, y):
        return x * y

    mutagrad.defvjp(
        product, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x, reads=((1,), (0,))
    )
    check = check_rule(product, X32, Y32)
    assert all(v.dtype == np.float32 for v in check.vjp)
    mutagrad.defvjp(
        product, lambda g, ans, x, y: g * y * 1.1, lambda g, ans, x, y: g * x, reads=((1,), (0,))
    )
    with pytest.raises(AssertionError) as failed:
        check_rule(product, X32, Y32, output_cotangent=np.arange(5.0))
    report = " ".join(str(failed.value).split())
    assert "output cotangent dy = [0., 1., 2., 3., 4.] (output_cotangent)" in report
    assert "on float64 copies of the arguments (argument 0 float32, 1 float32)" in report
    with pytest.raises(AssertionError) as failed:
        check_rule(product, X32, Y32, seed=3)
    drawn = np.random.default_rng(3).standard_normal(5)
    report = " ".join(str(failed.value).split())
    assert f"dy = [{drawn[0]:.6f}".rstrip("0") in report.replace("[ ", "[")
    assert "(standard normal, seed=3; pass output_cotangent= to choose it)" in report


# -- a raw buffer inside a routine ------------------------------------------------------------


def euler(y0, rate, steps=4):
    trajectory = np.empty_like(y0, shape=(steps + 1, len(y0)))
    trajectory[0] = y0
    for i in range(steps):
        trajectory[i + 1] = trajectory[i] - 0.1 * rate * trajectory[i] ** 3
    return trajectory


def euler_with_a_raw_buffer(y0, rate, steps=4):
    trajectory = np.empty((steps + 1, len(y0)))
    trajectory[0] = y0
    for i in range(steps):
        trajectory[i + 1] = trajectory[i] - 0.1 * rate * trajectory[i] ** 3
    return trajectory


def test_a_buffer_made_like_the_input_keeps_plain_callers_plain_and_differentiates():
    y0 = np.array([0.5, -0.3, 0.9])
    assert type(euler(y0, 0.5)) is np.ndarray
    for mode in ("poison", "snapshot"):
        check_gradient(lambda y0, rate: np.sum(euler(y0, rate)[-1] ** 2), y0, 0.7, mode=mode)
    with pytest.raises(mutagrad.TracerConversionError, match=r"like=y0"):
        mutagrad.gradient(lambda y0: np.sum(euler_with_a_raw_buffer(y0, 0.5)), y0)


# -- comparing gradients with None ----------------------------------------------------------


@given(float_arrays((3,), magnitude=1.0), st.integers(1, 4))
def test_the_modes_agree_property_compares_none_as_no_gradient(y0, steps):
    def final(y0, rate, steps):
        return np.sum(euler(y0, rate, steps)[-1])

    poison = mutagrad.gradient(final, y0, 0.5, steps)
    snapshot = mutagrad.gradient(final, y0, 0.5, steps, mode="snapshot")
    assert poison[2] is None and snapshot[2] is None
    assert_gradients_close(poison, snapshot, rtol=1e-12)


def test_assert_gradients_close_reads_none_as_zeros_and_walks_containers():
    Pair = namedtuple("Pair", "w b")
    assert_gradients_close((np.zeros(2), None), (None, np.zeros((2, 2))))
    assert_gradients_close(
        OrderedDict(w=np.ones(2), b=None), OrderedDict(w=np.ones(2), b=0.0), rtol=0
    )
    assert_gradients_close(Pair(np.ones(2), None), Pair(np.ones(2) + 1e-9, np.zeros(1)), atol=1e-8)
    assert_gradients_close(None, {"w": None, "b": np.zeros(3)})
    with pytest.raises(AssertionError, match=r"gradient\[1\]\['w'\] differs"):
        assert_gradients_close((None, {"w": np.ones(2)}), (None, {"w": np.zeros(2)}))
    with pytest.raises(AssertionError, match=r"gradient\.b differs"):
        assert_gradients_close(Pair(1.0, None), Pair(1.0, 2.0))
    with pytest.raises(AssertionError, match="the structures differ: list of 1 against tuple"):
        assert_gradients_close([1.0], (1.0,))


# -- programs at the user's shapes, dtype and elements -------------------------------------


@settings(max_examples=20)
@given(
    programs(
        max_inputs=2,
        shapes=st.sampled_from([(2,), (7,), (1, 4), (4, 4)]),
        dtype=np.float32,
        elements=st.floats(-1, 1, width=32),
        unique=True,
    )
)
def test_programs_take_the_users_shapes_dtype_and_elements(program):
    shapes = {x.shape for x in program.inputs}
    assert len(shapes) == 1 and shapes <= {(2,), (7,), (1, 4), (4, 4)}
    for x in program.inputs:
        assert x.dtype == np.float32 and np.all(np.abs(x) <= 1)
        assert len(np.unique(x)) == x.size
    assert program.low_precision
    value = program.fn(*[x.copy() for x in program.inputs])
    assert np.ndim(value) == 0


@settings(max_examples=15)
@given(programs(max_inputs=1, shapes=(5,)))
def test_a_drawn_program_composed_with_a_user_function_is_judged(program):
    def softmax_in_place(x):
        x -= np.max(x)
        np.exp(x, out=x)
        x /= np.sum(x)
        return x

    then = program.then(lambda x: softmax_in_place(x) @ np.arange(5.0))
    after = program.after(lambda x: np.sum(softmax_in_place(x) * np.arange(5.0)))
    for composed in (then, after):
        verdict = judge(composed)
        assert verdict.discarded is None and not verdict.findings, verdict.results
        assert verdict.outcome("snapshot") is Outcome.RIGHT
        assert verdict.outcome("strict") is Outcome.REFUSED  # the user's function writes


def test_then_and_after_run_the_users_function_after_and_before_the_program():
    from mutagrad.testing.fuzz import Program

    program = Program("def f(x):\n    x *= 2.0\n    return np.sum(x)", (np.ones(3),), (0,))
    seen = []
    then = program.then(lambda x: seen.append(("then", x.tolist())) or 0.0)
    after = program.after(lambda x: seen.append(("after", x.tolist())) or 10.0)
    assert then.fn(np.ones(3)) == 6.0 and after.fn(np.ones(3)) == 16.0
    assert seen == [("then", [2.0, 2.0, 2.0]), ("after", [1.0, 1.0, 1.0])]
    assert "# then " in str(then) and "# after " in str(after)
    mine = program.with_inputs(np.array([0.5, 1.5, 2.5]))
    assert mine.fn(*mine.inputs) == 9.0 and program.inputs[0].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match=r"1 input\(s\) of shape\(s\) \[\(3,\)\], not \[\(2,\)\]"):
        program.with_inputs(np.ones(2))


def test_a_wrong_rule_composed_with_a_program_is_a_finding():
    @mutagrad.primitive
    def double(x):
        return 2 * x

    mutagrad.defvjp(double, lambda g, ans, x: 3 * g, reads=((),))
    program = judge_one_program()
    verdict = judge(program.then(lambda x: np.sum(double(x))))
    assert {r.outcome for r in verdict.results} == {Outcome.WRONG}
    assert verdict.findings == verdict.results
    assert verdict.results[0].detail.startswith("gradient of a0: ")


def judge_one_program():
    from mutagrad.testing.fuzz import Program

    return Program("def f(x):\n    return np.sum(np.sin(x))", (np.array([0.3, -1.2]),), (0,))


@given(float_arrays((6,), magnitude=1.0, min_gap=0.1))
def test_min_gap_draws_elements_that_far_apart_and_from_zero(x):
    gaps = np.diff(np.sort(x))
    assert np.all(gaps >= 0.1 - 1e-12) and np.all(np.abs(x) >= 0.05 - 1e-12)
    assert np.all(np.abs(x) <= 1.0)


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        (lambda: programs(shapes=(2, 2, 2)), "one or two axes, none empty"),
        (lambda: programs(shapes=(0,)), "one or two axes, none empty"),
        (lambda: programs(dtype=np.int64), "float64 or float32 inputs, not int64"),
        (lambda: programs(min_inputs=2, max_inputs=4), "1 <= min_inputs <= max_inputs <= 3"),
        (lambda: programs(shapes=(5, 5), min_inputs=2), "need 50 distinct grid values"),
        (lambda: float_arrays((3,), magnitude=1.0, min_gap=2.0), r"min_gap=2\.0 must be in"),
    ],
)
def test_bad_arguments_of_the_strategies_say_what_is_wrong(strategy, message):
    with pytest.raises(InvalidArgument, match=message):

        @given(strategy())
        def draw(value):
            pass

        draw()


# -- profiles -------------------------------------------------------------------------------


def test_the_profiles_are_registered_and_leave_out_the_explain_phase():
    assert register_profiles() == ("ci", "dev", "thorough")
    expected = {"ci": (25, True), "dev": (200, False), "thorough": (5000, False)}
    for name, (examples, derandomized) in expected.items():
        profile = settings.get_profile(name)
        assert (profile.max_examples, profile.derandomize) == (examples, derandomized)
        assert profile.deadline is None and Phase.explain not in profile.phases


def test_the_pytest_plugin_is_installed_as_an_entry_point():
    plugins = importlib.metadata.entry_points(group="pytest11")
    assert [p.value for p in plugins if p.name == "mutagrad"] == ["mutagrad.testing.pytest_plugin"]
