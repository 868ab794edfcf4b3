"""check_rule: correct rules pass, and each way of writing a rule wrongly is caught.

Every deliberately wrong rule below is registered on a fresh primitive inside
its test, so the rules never leak into other tests. The sections follow what
check_rule checks: (a) the forward value, (b) the pullback against finite
differences, (c) structural zeros, (d) overwrites after the forward pass.
The last section pins down engine behaviour that check_rule reports on.
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_rule, find_rule

X = np.array([0.5, -1.25, 2.0])
Y = np.array([1.5, 0.25, -0.75])


def raw_report_of(fn, *args, **kwargs) -> str:
    """The AssertionError message check_rule raises (the test fails if it passes)."""
    with pytest.raises(AssertionError) as info:
        check_rule(fn, *args, **kwargs)
    return str(info.value)


def report_of(fn, *args, **kwargs) -> str:
    """The report with its line wrapping undone, so that phrases can be searched."""
    return " ".join(raw_report_of(fn, *args, **kwargs).split())


# -- correct rules pass ----------------------------------------------------------


def test_a_correct_defvjp_rule_passes_and_returns_the_vjp():
    @mutagrad.primitive
    def softplus(x):
        return np.log1p(np.exp(x))

    mutagrad.defvjp(softplus, lambda g, ans, x: g / (1 + np.exp(-x)), reads=((0,),))
    dy = np.array([1.0, 2.0, -1.0])
    result = check_rule(softplus, X, output_cotangent=dy)
    np.testing.assert_allclose(result.vjp[0], dy / (1 + np.exp(-X)))
    np.testing.assert_array_equal(result.output_cotangent, dy)


def test_a_vjp_that_reads_nothing_and_declares_nothing_passes():
    @mutagrad.primitive
    def triple(x):
        return 3.0 * x

    mutagrad.defvjp(triple, lambda g, ans, x: 3.0 * g, reads=((),))
    check_rule(triple, X)


def test_a_vjp_that_reads_the_declared_output_passes():
    @mutagrad.primitive
    def exp(x):
        return np.exp(x)

    mutagrad.defvjp(exp, lambda g, ans, x: g * ans, reads=((mutagrad.ANS,),))
    check_rule(exp, X)


def test_a_two_argument_defvjp_with_exact_reads_passes():
    @mutagrad.primitive
    def mul(x, y):
        return x * y

    mutagrad.defvjp(mul, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x, reads=((1,), (0,)))
    check_rule(mul, X, Y)


def test_an_rrule_closing_over_its_traced_argument_without_a_copy_passes():
    # The engine saves (and versions) every traced argument of a closure rule:
    # overwriting x after the forward pass raises PoisonedCaptureError, which is safe.
    @mutagrad.primitive
    def cube(x):
        return x**3

    @mutagrad.rrule(cube)
    def cube_rule(x):
        return x**3, lambda dy: (3 * x**2 * dy,)

    check_rule(cube, X)


def test_an_rrule_that_copies_a_constant_it_closes_over_passes():
    @mutagrad.primitive
    def scale(x, c):
        return x * c

    @mutagrad.rrule(scale)
    def scale_rule(x, c):
        x, c = np.array(x), np.array(c)
        return x * c, lambda dy: (dy * c, dy * x)

    check_rule(scale, X, Y)


def test_an_rrule_with_a_leading_cotangent_for_the_function_passes():
    @mutagrad.primitive
    def square(x):
        return x * x

    @mutagrad.rrule(square)
    def square_rule(x):
        x = np.array(x)
        return x * x, lambda dy: (mutagrad.NoTangent(), 2 * x * dy)

    check_rule(square, X)


def test_python_float_and_zero_dimensional_arguments():
    @mutagrad.primitive
    def affine(x, a, b):
        return a * x + b

    mutagrad.defvjp(
        affine,
        lambda g, ans, x, a, b: g * a,
        lambda g, ans, x, a, b: np.sum(g * x),
        lambda g, ans, x, a, b: np.sum(g),
        reads=((1,), (0,), ()),
    )
    result = check_rule(affine, X, 2.0, np.array(0.5))
    assert isinstance(result.vjp[1], float) and np.shape(result.vjp[2]) == ()


NUMPY_CASES = [
    (np.sin, (X,), {}),
    (np.exp, (X,), {}),
    (np.tanh, (X,), {}),
    (np.log, (np.abs(X) + 0.5,), {}),
    (np.sqrt, (np.abs(X) + 0.5,), {}),
    (np.multiply, (np.ones((2, 3)) + 0.5, Y), {}),
    (np.divide, (X, Y), {}),
    (np.power, (np.abs(X) + 0.5, Y), {}),
    (np.maximum, (X, Y), {}),
    (np.matmul, (np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2)), {}),
    (np.sum, (np.arange(6.0).reshape(2, 3),), {"axis": 0}),
    (np.var, (np.arange(6.0).reshape(2, 3),), {"axis": 1}),
    (np.cumprod, (X,), {}),
    (np.sort, (X,), {}),
    (np.where, (X > 0, X, Y), {}),
    (np.transpose, (np.arange(6.0).reshape(2, 3),), {}),
    (np.reshape, (np.arange(6.0), (3, 2)), {}),
    (np.broadcast_to, (X, (2, 3)), {}),
    (np.modf, (np.array([0.25, -1.5, 2.75]),), {}),
]


@pytest.mark.parametrize(
    ("fn", "args", "kwargs"), NUMPY_CASES, ids=[case[0].__name__ for case in NUMPY_CASES]
)
def test_mutagrads_own_numpy_rules_pass(fn, args, kwargs):
    check_rule(fn, *args, fn_kwargs=kwargs)


def test_float32_arguments_keep_their_dtype():
    result = check_rule(np.sin, X.astype(np.float32))
    assert result.vjp[0].dtype == np.float32


def test_a_large_argument_is_checked_along_random_directions():
    x = np.random.default_rng(0).standard_normal(50_000)
    result = check_rule(np.tanh, x, check_overwrites=False)
    assert result.vjp[0].shape == x.shape


def test_a_function_without_a_rule_is_refused():
    @mutagrad.primitive
    def plain(x):
        return x * 2

    assert "no rule is registered" in report_of(plain, X)
    assert "no rule is registered" in report_of(np.sort_complex, X)


def test_find_rule_tells_the_kinds_apart():
    @mutagrad.primitive
    def with_vjp(x):
        return x

    @mutagrad.primitive
    def with_rrule(x):
        return x

    @mutagrad.primitive
    def constant(x):
        return x

    mutagrad.defvjp(with_vjp, lambda g, ans, x: g, reads=((),))
    mutagrad.rrule(with_rrule)(lambda x: (x, lambda dy: (dy,)))
    mutagrad.non_differentiable(constant)
    kinds = [find_rule(f).kind for f in (with_vjp, with_rrule, constant, np.sin, np.sum)]
    assert kinds == ["defvjp", "rrule", "non-differentiable", "numpy", "numpy"]
    assert find_rule(np.sort_complex).kind == "none"


# -- (a) wrong forward values ------------------------------------------------------


def test_catches_an_rrule_computing_a_different_value():
    @mutagrad.primitive
    def cube(x):
        return x**3

    @mutagrad.rrule(cube)
    def cube_rule(x):
        return x**2, lambda dy: (3 * x**2 * dy,)  # the value is x**2, not x**3

    report = report_of(cube, X)
    assert "forward value" in report and "without the rule" in report


def test_catches_an_rrule_returning_another_dtype():
    @mutagrad.primitive
    def half(x):
        return x / 2

    @mutagrad.rrule(half)
    def half_rule(x):
        return (x / 2).astype(np.float32), lambda dy: (dy / 2,)

    assert "dtype float32" in report_of(half, X)


def test_catches_a_rule_writing_into_its_argument():
    @mutagrad.primitive
    def double(x):
        return 2 * x

    @mutagrad.rrule(double)
    def double_rule(x):
        x *= 2  # in place, on the argument the engine hands over read-only
        return x.copy(), lambda dy: (2 * dy,)

    report = report_of(double, X)
    assert "raised NotDifferentiableError" in report
    assert "wrote into one of its arguments" in report and "x *= 2" in report


def test_a_rule_returning_its_argument_itself_is_made_safe():
    @mutagrad.primitive
    def identity(x):
        return x.copy()

    @mutagrad.rrule(identity)
    def identity_rule(x):
        return x, lambda dy: (dy,)  # the output is the input's memory: the engine copies it

    check_rule(identity, X)


# -- (b) wrong pullbacks -------------------------------------------------------------


def test_catches_a_wrong_vjp_and_names_the_worst_element():
    @mutagrad.primitive
    def cube(x):
        return x**3

    mutagrad.defvjp(cube, lambda g, ans, x: g * 2 * x**2, reads=((0,),))  # 2 instead of 3
    report = report_of(cube, X)
    assert "argument 0 (x): reverse mode and finite differences differ at 3 of 3" in report
    assert "worst element [2]" in report


def test_catches_a_wrong_vjp_on_a_large_argument_along_random_directions():
    @mutagrad.primitive
    def cube(x):
        return x**3

    mutagrad.defvjp(cube, lambda g, ans, x: g * 3 * x**2 * 1.01, reads=((0,),))  # 1% off
    x = np.random.default_rng(1).standard_normal(5_000)
    report = report_of(cube, x, check_overwrites=False)
    assert "random direction" in report and "elementwise_limit=5000" in report


def test_catches_a_pullback_returning_too_few_cotangents():
    @mutagrad.primitive
    def mul(x, y):
        return x * y

    @mutagrad.rrule(mul)
    def mul_rule(x, y):
        return x * y, lambda dy: (dy * y,)  # forgot y's cotangent

    report = report_of(mul, X, Y)
    assert "returned 1 cotangents for 2 arguments" in report
    assert "one cotangent per positional argument" in report


def test_catches_a_cotangent_of_the_wrong_shape():
    @mutagrad.primitive
    def total(x):
        return np.sum(x * x)

    @mutagrad.rrule(total)
    def total_rule(x):
        return np.sum(x * x), lambda dy: (2 * dy,)  # a scalar, not 2 * x * dy

    report = report_of(total, X)
    assert "returned a cotangent of shape () for an argument of shape (3,)" in report


def test_catches_a_vjp_reading_an_argument_it_does_not_declare():
    @mutagrad.primitive
    def cube(x):
        return x**3

    mutagrad.defvjp(cube, lambda g, ans, x: g * 3 * x**2, reads=((),))  # x is a Meta
    report = report_of(cube, X)
    assert "Meta stand-in" in report and "reads[0]=()" in report
    assert "add the argument position to reads[k]" in report


def test_catches_an_undeclared_read_hidden_by_another_vjps_declaration():
    # vjp 1 reads x but declares nothing. With both arguments differentiated x
    # is saved anyway (vjp 0 declares it); with y alone it is a Meta.
    @mutagrad.primitive
    def mul(x, y):
        return x * y

    mutagrad.defvjp(mul, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x, reads=((0, 1), ()))
    report = report_of(mul, X, Y)
    assert "with only argument 1 (y) differentiated" in report
    assert "reads[1]=()" in report and "argument 0 (x)" in report


def test_catches_a_vjp_reading_the_output_without_declaring_it():
    @mutagrad.primitive
    def exp(x):
        return np.exp(x)

    mutagrad.defvjp(exp, lambda g, ans, x: g * ans, reads=((0,),))
    assert "add mutagrad.ANS to reads[k]" in report_of(exp, X)


# -- (c) structural zeros ------------------------------------------------------------


def test_catches_notangent_for_a_differentiable_argument():
    @mutagrad.primitive
    def square(x):
        return x * x

    @mutagrad.rrule(square)
    def square_rule(x):
        return x * x, lambda dy: (mutagrad.NoTangent(),)

    report = report_of(square, X)
    assert "returns no cotangent for argument 0 (x) (None or NoTangent()" in report
    assert "its derivative is not zero" in report


def test_catches_none_from_a_vjp_for_a_differentiable_argument():
    @mutagrad.primitive
    def square(x):
        return x * x

    mutagrad.defvjp(square, lambda g, ans, x: None, reads=((0,),))
    assert "returns no cotangent for argument 0 (x)" in report_of(square, X)


def test_catches_zerotangent_for_an_argument_with_a_derivative():
    @mutagrad.primitive
    def mul(x, y):
        return x * y

    @mutagrad.rrule(mul)
    def mul_rule(x, y):
        x, y = np.array(x), np.array(y)
        return x * y, lambda dy: (dy * y, mutagrad.ZeroTangent())

    assert "returns a zero cotangent for argument 1 (y)" in report_of(mul, X, Y)


def test_catches_a_missing_vjp_for_a_differentiated_argument():
    @mutagrad.primitive
    def mul(x, y):
        return x * y

    mutagrad.defvjp(mul, lambda g, ans, x, y: g * y, None, reads=((1,), ()))
    report = report_of(mul, X, Y)
    assert "NotDifferentiableError" in report and "leave it out of wrt=" in report
    check_rule(mul, X, Y, wrt=(0,))  # y is not differentiated: the missing vjp is right


def test_accepts_structural_zeros_where_they_are_right():
    @mutagrad.primitive
    def pick(x, index, label):
        return x[index] * 2.0

    @mutagrad.rrule(pick)
    def pick_rule(x, index, label):
        index = np.array(index)

        def back(dy):
            dx = np.zeros_like(x)
            np.add.at(dx, index, 2.0 * dy)
            return dx, mutagrad.NoTangent(), None

        return x[index] * 2.0, back

    @mutagrad.primitive
    def first_only(x, y):
        return 2 * x

    @mutagrad.rrule(first_only)
    def first_only_rule(x, y):
        return 2 * x, lambda dy: (2 * dy, mutagrad.ZeroTangent())  # y has a zero derivative

    index = np.array([0, 2, 2])
    check_rule(pick, X, index, "a label")  # the index is a constant by default
    check_rule(pick, X, index, "a label", wrt=(0, 1))  # traced: no derivative, NoTangent
    check_rule(first_only, X, Y)


def test_catches_a_nonzero_cotangent_for_an_index():
    @mutagrad.primitive
    def pick(x, index):
        return x[index] * 2.0

    @mutagrad.rrule(pick)
    def pick_rule(x, index):
        index = np.array(index)

        def back(dy):
            dx = np.zeros_like(x)
            np.add.at(dx, index, 2.0 * dy)
            return dx, np.ones(index.shape)  # an index has no derivative

        return x[index] * 2.0, back

    report = report_of(pick, X, np.array([0, 2]), wrt=(0, 1))
    assert "argument 1 (index) has no derivative" in report
    assert "return mutagrad.NoTangent()" in report


# -- (d) overwrites after the forward pass ----------------------------------------------


def test_catches_a_vjp_reading_an_undeclared_argument_through_a_global():
    saved = {}

    @mutagrad.primitive
    def cube(x):
        saved["x"] = x  # the traced array's own memory, not a copy
        return x**3

    mutagrad.defvjp(cube, lambda g, ans, x: g * 3 * saved["x"] ** 2, reads=((),))
    report = report_of(cube, X)
    assert "after the forward pass, overwriting argument 0 (x) in place (a traced array)" in report
    assert "changed the gradient instead of giving the same gradient or raising" in report
    assert "list 0 in reads[k] of that vjp; now reads[0]=()" in report


def test_catches_a_vjp_reading_an_undeclared_output_through_a_closure():
    outputs = []

    @mutagrad.primitive
    def exp(x):
        outputs.append(np.exp(x))
        return outputs[-1]

    mutagrad.defvjp(exp, lambda g, ans, x: g * outputs[-1], reads=((),))  # this call's output
    report = report_of(exp, X)
    assert "overwriting the output in place" in report
    assert "list mutagrad.ANS in reads[k]" in report


def test_an_rrule_holding_a_plain_ndarray_constant_is_safe():
    # The engine hands rules private copies of plain ndarrays, as it saves them
    # for defvjp rules, so the closure cannot see a later numpy write.
    @mutagrad.primitive
    def scale(x, c):
        return x * c

    @mutagrad.rrule(scale)
    def scale_rule(x, c):
        return x * c, lambda dy: (dy * c, dy * x)

    check_rule(scale, X, Y)


def test_catches_scratch_memory_shared_between_calls():
    scratch = np.zeros(3)

    @mutagrad.primitive
    def sine_times(x):
        np.sin(x, out=scratch)
        return scratch * x

    mutagrad.defvjp(sine_times, lambda g, ans, x: g * (scratch + x * np.cos(x)), reads=((0,),))
    report = report_of(sine_times, X)
    assert "calling sine_times again with other arguments" in report
    assert "keeps state between calls" in report


def test_catches_an_rrule_whose_pullback_reads_a_cache_filled_by_later_calls():
    cache = {}

    @mutagrad.primitive
    def square(x):
        return x * x

    @mutagrad.rrule(square)
    def square_rule(x):
        cache["last"] = np.array(x)  # a copy, but shared by every call
        return x * x, lambda dy: (2 * cache["last"] * dy,)

    assert "calling square again with other arguments" in report_of(square, X)


def test_overwrite_checks_can_be_skipped():
    saved = {}

    @mutagrad.primitive
    def cube(x):
        saved["x"] = x
        return x**3

    mutagrad.defvjp(cube, lambda g, ans, x: g * 3 * saved["x"] ** 2, reads=((),))
    check_rule(cube, X, check_overwrites=False)


def test_the_report_is_numbered_and_names_the_rule():
    @mutagrad.primitive
    def cube(x):
        return x**3

    @mutagrad.rrule(cube)
    def cube_rule(x):
        return x**2, lambda dy: (mutagrad.NoTangent(),)

    report = raw_report_of(cube, X)
    assert report.startswith("check_rule(cube) found 2 problems (rule kind: rrule):")
    assert "\n\n1. " in report and "\n\n2. " in report


# -- what the engine guarantees for users' rules --------------------------------------------------


def test_engine_copies_plain_constants_for_rrules():
    @mutagrad.primitive
    def scale(x, c):
        return x * c

    @mutagrad.rrule(scale)
    def scale_rule(x, c):
        return x * c, lambda dy: (dy * c, dy * x)

    c = np.array([2.0, 3.0])

    def f(x):
        y = scale(x, c)
        c[...] = 100.0  # a plain numpy write after the forward pass
        return np.sum(y)

    np.testing.assert_array_equal(mutagrad.gradient(f, np.ones(2))[0], [2.0, 3.0])


def test_engine_refuses_or_copies_a_rule_output_aliasing_an_argument():
    @mutagrad.primitive
    def identity(x):
        return x.copy()

    @mutagrad.rrule(identity)
    def identity_rule(x):
        return x, lambda dy: (dy,)

    def f(x):
        x = x * 1.0
        y = identity(x)
        y[0] = 50.0  # must not change x
        return np.sum(x * x)

    try:
        value = mutagrad.withgradient(f, np.ones(2)).val
    except mutagrad.MutagradError:
        return  # refusing is fine too
    assert value == 2.0


def test_engine_stops_a_rule_writing_into_its_argument():
    @mutagrad.primitive
    def double(x):
        return 2 * x

    @mutagrad.rrule(double)
    def double_rule(x):
        x *= 2
        return x.copy(), lambda dy: (2 * dy,)

    def f(x):
        x = x * 1.0
        return np.sum(double(x)) + np.sum(x)

    with pytest.raises((ValueError, mutagrad.MutagradError)):
        mutagrad.gradient(f, np.ones(2))


def test_a_wrong_forward_rule_is_found_against_the_pullback():
    @mutagrad.primitive
    def cube_with_wrong_jvp(x):
        return x**3

    mutagrad.defvjp(cube_with_wrong_jvp, lambda g, ans, x: 3 * x**2 * g)
    check_rule(cube_with_wrong_jvp, np.array([0.5, 1.2]))  # no forward rule: no finding
    mutagrad.defjvp(cube_with_wrong_jvp, lambda t, ans, x: 2 * x**2 * t)
    with pytest.raises(AssertionError, match="forward rule: along a random direction"):
        check_rule(cube_with_wrong_jvp, np.array([0.5, 1.2]))
    mutagrad.defjvp(cube_with_wrong_jvp, lambda t, ans, x: 3 * x**2 * t)
    check_rule(cube_with_wrong_jvp, np.array([0.5, 1.2]))
