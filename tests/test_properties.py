"""Soundness properties over random mutating programs and random indexes.

For every program drawn by :func:`mutagrad.testing.strategies.programs`:

* poison mode returns the finite-difference gradient or raises
  PoisonedCaptureError, never another gradient, and its forward value is the
  plain-ndarray value;
* strict mode accepts a subset of what poison mode accepts (exactly the
  programs that do not mutate) and agrees with poison mode there;
* snapshot mode always returns the finite-difference gradient;
* the caller's arrays are never modified.

Indexing (any valid index, see ``indices``) and broadcasting (see
``broadcastable_shapes``) are checked the same way, reads and writes.

The number of examples follows the hypothesis profile (tests/conftest.py:
``ci`` by default, ``dev``, ``thorough``), with a floor for the program
properties, which are cheap. A failure prints the program's source, ready to
paste into a bug report.
"""

from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import given, note, settings
from hypothesis import strategies as st

import mutagrad
from mutagrad.testing import check_gradient, numerical_gradient
from mutagrad.testing.strategies import (
    Program,
    broadcastable_shapes,
    float_arrays,
    indices,
    programs,
)

RTOL, ATOL = 1e-4, 1e-5


def at_least(n: int) -> settings:
    """The loaded profile's settings, with at least ``n`` examples."""
    return settings(max_examples=max(n, settings.default.max_examples))


def assert_gradients_close(got, want, what: str, rtol: float = RTOL, atol: float = ATOL) -> None:
    for k, (g, w) in enumerate(zip(got, want)):
        g = np.zeros_like(w) if g is None else g
        w = np.zeros_like(g) if w is None else w
        assert np.allclose(g, w, rtol=rtol, atol=atol), (
            f"{what}: argument {k} differs:\n{g}\nexpected\n{w}"
        )


def fresh(program: Program) -> tuple[np.ndarray, ...]:
    return tuple(a.copy() for a in program.args)


def poison_gradient(program: Program):
    """The poison-mode gradient, or None when poison mode raises PoisonedCaptureError."""
    try:
        return mutagrad.gradient(program.fn, *fresh(program))
    except mutagrad.PoisonedCaptureError:
        return None


@at_least(150)
@given(programs())
def test_poison_mode_gives_the_reference_gradient_or_raises(program):
    note(str(program))
    result = None
    with contextlib.suppress(mutagrad.PoisonedCaptureError):
        result = mutagrad.withgradient(program.fn, *fresh(program))
    if result is not None:
        np.testing.assert_allclose(result.val, program.fn(*fresh(program)), rtol=1e-12)
        reference = numerical_gradient(program.fn, *program.args)
        assert_gradients_close(result.grad, reference, "poison mode")


@at_least(150)
@given(programs())
def test_strict_mode_accepts_a_subset_of_poison_mode_and_agrees_with_it(program):
    note(str(program))
    try:
        strict = mutagrad.gradient(program.fn, *fresh(program), mode="strict")
    except mutagrad.MutationError:
        assert program.mutates, "strict mode refused a program that does not mutate"
        return
    assert not program.mutates, "strict mode accepted a program that writes in place"
    poison = poison_gradient(program)
    assert poison is not None, "strict mode accepted a program poison mode refused"
    assert_gradients_close(strict, poison, "strict vs poison mode", rtol=1e-12, atol=0)


@at_least(150)
@given(programs())
def test_snapshot_mode_always_gives_the_reference_gradient(program):
    note(str(program))
    result = mutagrad.withgradient(program.fn, *fresh(program), mode="snapshot")
    np.testing.assert_allclose(result.val, program.fn(*fresh(program)), rtol=1e-12)
    assert_gradients_close(
        result.grad, numerical_gradient(program.fn, *program.args), "snapshot mode"
    )


@at_least(150)
@given(programs())
def test_the_callers_arrays_survive_any_program(program):
    args = fresh(program)
    before = tuple(a.copy() for a in args)
    with contextlib.suppress(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(program.fn, *args)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
        assert a.flags.writeable


@st.composite
def arrays_with_an_index(draw):
    x = draw(float_arrays(magnitude=2.0))
    return x, draw(indices(x.shape))


@given(arrays_with_an_index())
def test_reading_through_any_index_matches_numpy_and_finite_differences(case):
    x, index = case
    note(f"index: {index!r}")

    def read(x):
        return np.sum(np.sin(x[index]) * 1.5)

    assert mutagrad.withgradient(read, x.copy()).val == read(x.copy())
    check_gradient(read, x)


@given(arrays_with_an_index())
def test_writing_through_any_index_is_right_or_raises(case):
    x, index = case
    note(f"index: {index!r}")

    def write(x):
        y = x.copy()
        y[index] = np.cos(y[index])  # repeated indices write equal values
        return np.sum(np.tanh(y) * y)

    check_gradient(write, x, mode="snapshot")
    with contextlib.suppress(mutagrad.PoisonedCaptureError):
        check_gradient(write, x, mode="poison")


@st.composite
def broadcasting_pairs(draw):
    shape_a, shape_b = draw(broadcastable_shapes())
    return draw(float_arrays(shape_a)), draw(float_arrays(shape_b))


@given(broadcasting_pairs())
def test_broadcasting_reads_and_in_place_writes_match_finite_differences(pair):
    a, b = pair

    def read(a, b):
        return np.sum(np.sin(a * b + a))

    def write(a, b):
        y = np.zeros(np.broadcast_shapes(a.shape, b.shape)) + a
        y *= b  # in place, b broadcast against y
        y += np.cos(a)
        return np.sum(np.tanh(y))

    check_gradient(read, a, b)
    check_gradient(write, a, b)
