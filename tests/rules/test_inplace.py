"""Every in-place path: values equal numpy's, gradients equal finite differences,
and each path poisons a capture it overwrites (or raises an error naming itself).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import mutagrad
import mutagrad.numpy as mnp
from mutagrad.testing import check_gradient

X = np.array([0.6, -1.1, 1.7, 0.4, -0.3, 2.2])


def run_both(program, *args):
    """Forward value on WrappedArrays equals numpy's; gradient equals finite differences."""
    plain = program(*[a.copy() for a in args])
    np.testing.assert_array_equal(mutagrad.withgradient(program, *args).val, plain)
    check_gradient(program, *args)


def with_put(x):
    y = x * 1.0
    np.put(y, [0, -1, 2], x[:2] * 3)  # values cycle: x0, x1, x0
    return np.sum(y * y)


def with_put_method_and_clip_mode(x):
    y = x * 1.0
    y.put([1, 40], x[3:5] ** 2, mode="clip")  # 40 clips to the last position
    return np.sum(y * y)


def with_place(x):
    y = x * 1.0
    np.place(y, y > 0.5, x[:2] * 2)
    return np.sum(y * y)


def with_putmask(x):
    y = x * 1.0
    np.putmask(y, x < 0.5, x[::-1] * 5)
    return np.sum(y * y)


def with_fill_diagonal(x):
    m = np.outer(x[:3], x[3:])
    np.fill_diagonal(m, x[:2])
    return np.sum(m**2)


def with_put_along_axis(x):
    m = np.reshape(x * 1.0, (2, 3))
    np.put_along_axis(m, np.array([[2], [0]]), x[:2, None] * 4, axis=1)
    return np.sum(m * m)


def with_take_along_axis(x):
    m = np.reshape(x, (2, 3))
    return np.sum(np.take_along_axis(m, np.array([[2, 2], [0, 1]]), axis=1) ** 2)


def with_add_at(x):
    y = x * 1.0
    np.add.at(y, [0, 0, 3], x[:3] * 2)
    np.subtract.at(y, [1], x[5])
    return np.sum(y * y)


def with_sort_in_place(x):
    y = x * np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    y.sort()
    return np.sum(y * np.arange(6.0))


def with_np_sort(x):
    m = np.reshape(x, (2, 3))
    return np.sum(np.sort(m, axis=0) * np.arange(6.0).reshape(2, 3)) + np.sum(
        np.sort(m, axis=None) * np.arange(6.0)
    )


def with_two_outputs(x):
    frac = np.empty_like(x)
    whole = np.empty_like(x)
    np.modf(x * 2, out=(frac, whole))
    q = np.empty_like(x)
    r = np.empty_like(x)
    np.divmod(x, 0.7, out=(q, r))
    return np.sum(frac**2) + np.sum(r * x)


def with_clip_out(x):
    y = np.empty_like(x)
    np.clip(x * 2, -1.0, 1.0, out=y)
    return np.sum(y * x)


def with_cumsum_out(x):
    y = np.empty_like(x)
    np.cumsum(x, out=y)
    z = np.cumprod(np.reshape(x, (2, 3)), axis=1)
    return np.sum(y * y) + np.sum(z)


def with_matmul_out(x):
    m = np.reshape(x, (2, 3))
    out = mnp.zeros((2, 2))  # a raw np.zeros could not hold traced values
    np.matmul(m, m.T, out=out)
    return np.sum(out**2)


def with_negative_in_place(x):
    y = x * 1.0
    np.negative(y, out=y)
    np.exp(y[:3], out=y[:3])
    return np.sum(y * x)


PATHS = [
    with_put,
    with_put_method_and_clip_mode,
    with_place,
    with_putmask,
    with_fill_diagonal,
    with_put_along_axis,
    with_take_along_axis,
    with_add_at,
    with_sort_in_place,
    with_np_sort,
    with_two_outputs,
    with_clip_out,
    with_cumsum_out,
    with_matmul_out,
    with_negative_in_place,
]


@pytest.mark.parametrize("program", PATHS, ids=lambda f: f.__name__)
def test_in_place_path_matches_numpy_and_finite_differences(program):
    run_both(program, X)


@pytest.mark.parametrize("program", PATHS, ids=lambda f: f.__name__)
def test_in_place_path_agrees_in_snapshot_mode(program):
    expected = mutagrad.gradient(program, X)[0]
    np.testing.assert_allclose(mutagrad.gradient(program, X, mode="snapshot")[0], expected)


WRITES_AFTER_CAPTURE = {
    "put": lambda y, x: np.put(y, [1], x[0]),
    "place": lambda y, x: np.place(y, np.arange(6) == 2, x[0]),
    "putmask": lambda y, x: np.putmask(y, np.arange(6) == 3, 0.0),
    "fill_diagonal": lambda y, x: np.fill_diagonal(np.reshape(y, (2, 3)), 9.0),
    "put_along_axis": lambda y, x: np.put_along_axis(y, np.array([4]), 1.0, axis=0),
    "add.at": lambda y, x: np.add.at(y, [5], x[0]),
    "sort": lambda y, x: y.sort(),
    "clip out": lambda y, x: np.clip(y, 0, 1, out=y),
    "cumsum out": lambda y, x: np.cumsum(y, out=y),
    "negative out": lambda y, x: np.negative(y, out=y),
    "modf out": lambda y, x: np.modf(y, out=(y, np.empty_like(y))),
}


@pytest.mark.parametrize("write", WRITES_AFTER_CAPTURE.values(), ids=WRITES_AFTER_CAPTURE.keys())
def test_each_path_poisons_what_it_overwrites(write):
    def program(x):
        y = x * 1.0
        s = np.sum(np.sin(y))  # saves y
        write(y, x)
        return s

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(program, X)
    check_gradient(program, X, mode="snapshot")


def test_sort_values_are_numpy_s_bit_for_bit():
    """Equal elements with other bits (0.0 and -0.0) sit where numpy's own sort puts them.

    numpy's default sort is not stable; the gradient of a tie goes to the element a
    stable sort puts there, but the values are numpy's, signs of zeros included.
    """
    rng = np.random.default_rng(7)
    x = rng.integers(-2, 3, (3, 70)).astype(float)
    x[rng.random(x.shape) < 0.5] *= -1  # zeros of both signs

    def program(x):
        y = x * 1.0
        y.sort(axis=0)
        by_row = np.sort(x, axis=1)
        return np.sum(by_row * np.arange(70.0)), (by_row, np.sort(x, axis=None), y)

    result = mutagrad.withgradient(program, x)
    y = x.copy()
    y.sort(axis=0)
    want = (np.sort(x, axis=1), np.sort(x, axis=None), y)
    for got, value in zip(result.val[1], want):
        np.testing.assert_array_equal(np.signbit(got), np.signbit(value))
        np.testing.assert_array_equal(got, value, strict=True)
    # each row's weights land on a permutation of the row: a stable sort's order
    expected = np.empty_like(x)
    np.put_along_axis(expected, np.argsort(x, axis=1, kind="stable"), np.arange(70.0), 1)
    np.testing.assert_array_equal(result.grad[0], expected)


# ufunc.at of every ufunc with a rule: (ufunc, operand or None for one input). Values
# inside each domain; the program applies index 0 three times, in turn.
AT_CASES = [
    (np.multiply, lambda x: x[1:4] * 0.5),
    (np.divide, lambda x: 1.5 + x[1:4] ** 2),
    (np.power, lambda x: x[1:4] * 0.5),
    (np.maximum, lambda x: x[[3, 1, 5]]),
    (np.minimum, lambda x: x[[3, 1, 5]]),
    (np.logaddexp, lambda x: x[1:4]),
    (np.hypot, lambda x: x[1:4]),
    (np.arctan2, lambda x: 1.5 + x[1:4] ** 2),
    (np.subtract, lambda x: np.sin(x[1:4])),  # the rounds, not subtract.at's own rule: below
    (np.negative, None),
    (np.sin, None),
    (np.exp, None),
    (np.square, None),
]


@pytest.mark.parametrize(("ufunc", "operand"), AT_CASES, ids=[u.__name__ for u, _ in AT_CASES])
def test_ufunc_at_of_every_ufunc_with_a_rule(ufunc, operand):
    def program(x):
        y = np.abs(x) + 0.5  # positive: inside every domain above
        if operand is None:
            ufunc.at(y, [0, 2, 0, 0], *())
        else:
            ufunc.at(y, [0, 2, 0], operand(x))
        m = np.reshape(y * 1.0, (2, 3))
        args = () if operand is None else (np.cos(x[:2]),)
        ufunc.at(m, (np.array([1, 1]), slice(0, 3, 2)), *args)  # a tuple index with a slice
        return np.sum(m * np.arange(1.0, 7.0).reshape(2, 3))

    run_both(program, X)
    check_gradient(program, X, mode="snapshot")


def test_ufunc_at_reads_an_overlapping_operand_as_it_was_before_the_call():
    def program(x):
        y = x * 1.0
        np.multiply.at(y, [1, 0, 1], y[:3])  # numpy buffers y[:3] first
        np.maximum.at(y, [2, 3], y[[3, 2]] * 2.0)
        return np.sum(y * y)

    run_both(program, X)


def test_add_at_s_own_rule_and_the_rounds_agree():
    from mutagrad.rules import inplace

    def program(x, rounds=False):
        y = x * 1.0
        at = (lambda *a: inplace._ufunc_at_in_rounds(np.add, "np.add.at", *a)) if rounds else (
            lambda y, k, b: np.add.at(y, k, b))  # fmt: skip
        at(y, ([0, 3, 0, 0],), x[2:] ** 2)
        return np.sum(y**3)

    fast, rounds = (mutagrad.withgradient(program, X, rounds=r) for r in (False, True))
    assert fast.val == rounds.val == program(X.copy())
    np.testing.assert_allclose(fast.grad[0], rounds.grad[0], rtol=1e-14)


def test_ufunc_at_poisons_what_it_overwrites_and_strict_mode_refuses_it():
    def program(x):
        y = x * 1.0
        s = np.sum(np.sin(y))  # saves y
        np.maximum.at(y, [1, 1], x[:2])
        return s + np.sum(y)

    with pytest.raises(mutagrad.PoisonedCaptureError, match=r"np\.maximum\.at"):
        mutagrad.gradient(program, X)
    check_gradient(program, X, mode="snapshot")
    with pytest.raises(mutagrad.MutationError, match=r"np\.maximum\.at"):
        mutagrad.gradient(program, X, mode="strict")


def test_ufunc_at_without_a_derivative_writes_only_its_elements():
    def program(x):
        y = x * 1.0
        np.floor_divide.at(y, [0, 0], 0.5)  # piecewise constant: no derivative there
        np.rint.at(y, [1])
        return np.sum(y * y)

    run_both(program, X)


def test_ufunc_at_keeps_numpy_s_errors():
    def program(x):
        y = x * 1.0
        np.multiply.at(y, [9], 2.0)
        return np.sum(y)

    with pytest.raises(IndexError):
        mutagrad.gradient(program, X)


def test_in_place_functions_on_constants_bump_versions_and_poison_pullbacks():
    c = mutagrad.array(np.ones(4))
    _, back = mutagrad.pullback(lambda x: x * c, np.ones(4))
    versions = [c.version]
    np.add.at(c, [0], 1.0)
    versions.append(c.version)
    np.put(c, [1], 5.0)
    versions.append(c.version)
    np.cumsum(mutagrad.array(np.ones(4)), out=c)
    versions.append(c.version)
    assert versions == [0, 1, 2, 3]
    np.testing.assert_array_equal(np.asarray(c), [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(mutagrad.PoisonedCaptureError):
        back(np.ones(4))


def test_unknown_in_place_function_cannot_write_behind_the_tape():
    # np.asarray of a constant is numpy's writable alias: what a pullback saved
    # from it is detached first, so the shuffle cannot change the gradient.
    def shuffles_a_saved_constant(x):
        w = np.arange(1.0, 4.0) + 0.0 * np.round(x)
        y = x * w
        np.random.default_rng(0).shuffle(np.asarray(w))
        return np.sum(y)

    x = np.array([0.6, -1.1, 1.7])
    np.testing.assert_array_equal(mutagrad.gradient(shuffles_a_saved_constant, x)[0], [1, 2, 3])

    def shuffles_a_traced_array(x):
        np.random.default_rng(0).shuffle(np.asarray(x))
        return np.sum(x)

    with pytest.raises(mutagrad.TracerConversionError):
        mutagrad.gradient(shuffles_a_traced_array, X)


def test_raw_targets_still_work_and_refuse_traced_values():
    raw = np.zeros(3)
    np.put(raw, [0], 1.0)
    np.add.at(raw, [1, 1], 1.0)
    np.testing.assert_array_equal(raw, [1.0, 2.0, 0.0])

    def program(x):
        np.put(np.zeros(3), [0], x[0])
        return np.sum(x)

    with pytest.raises(mutagrad.TracerConversionError):
        mutagrad.gradient(program, X)


def test_copy_module_copies_are_independent():
    a = mutagrad.array([1.0, 2.0])
    b = copy.copy(a)
    b[0] = 5.0
    np.testing.assert_array_equal(np.asarray(a), [1.0, 2.0])


# numpy copies read-only values before writing them (np.place asks for a writeable array),
# and reads a writeable view of the written array as it writes: the flag decides the result.
_WINDOW = np.lib.stride_tricks.sliding_window_view
_OVERLAPPING_VALUES = {
    "writeable view": lambda x: x[:3],
    "read-only view": lambda x: _read_only(x[:3]),
    "sliding window": lambda x: _WINDOW(x, x.shape).ravel()[:3],
}


def _read_only(v):
    v.flags.writeable = False
    return v


@pytest.mark.parametrize("values", sorted(_OVERLAPPING_VALUES))
@pytest.mark.parametrize("mode", ["poison", "snapshot", "forward"])
def test_place_reads_overlapping_values_as_numpy_does_for_their_flags(values, mode):
    make = _OVERLAPPING_VALUES[values]

    def f(a):
        x = a[:4] * 1.0
        np.place(x, np.array([True, False, True, True]), make(x))
        return np.sum(np.tanh(x) * np.arange(1.0, 5.0))

    a = np.array([0.81, -1.889245, -1.62949, 0.230265, 1.81002])
    direction = np.linspace(-1, 1, 5)
    h = 1e-6
    fd = (f(a + h * direction) - f(a - h * direction)) / (2 * h)
    if mode == "forward":
        value, along = mutagrad.jvp(f, (a,), (direction,))
    else:
        value, grad = mutagrad.withgradient(f, a, mode=mode)
        along = np.dot(grad[0], direction)
    assert value == f(a.copy())  # numpy's value, exactly
    assert along == pytest.approx(fd, rel=1e-6)


def test_an_overlapping_write_into_a_shared_argument_is_refused_by_name():
    # (the numbered stand-in of the written array stays writeable: whether the write may
    # happen is assign's to decide, and it refuses a write to an argument passed twice)
    def f(x, y):
        y.flat[1:] = y[::-1]
        return np.sum(np.tanh(x)) + np.sum(np.tanh(y))

    a = np.array([0.37, -1.829245, 1.17051, -1.629735])
    for mode in ("strict", "poison", "snapshot"):
        with pytest.raises(mutagrad.NotDifferentiableError, match="shares memory"):
            mutagrad.withgradient(f, a, a, mode=mode)
