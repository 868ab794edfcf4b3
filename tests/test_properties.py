"""Soundness properties over random mutating programs (mutagrad.testing.strategies.programs).

For every drawn program:

* forward values equal the same program on plain ndarrays;
* snapshot mode always returns the finite-difference gradient;
* poison mode returns it or raises PoisonedCaptureError, never another gradient;
* strict mode accepts a subset of what poison mode accepts and agrees with it there,
  and accepts every program that does not mutate.

A failure prints the program's source, ready to paste into a bug report.
"""

from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import given, note, settings

import mutagrad
from mutagrad.testing import numerical_gradient
from mutagrad.testing.strategies import Program, programs

RTOL, ATOL = 1e-4, 1e-5


def assert_gradients_close(got, want, what: str) -> None:
    for k, (g, w) in enumerate(zip(got, want)):
        g = np.zeros_like(w) if g is None else g
        assert np.allclose(g, w, rtol=RTOL, atol=ATOL), (
            f"{what}: argument {k} differs from finite differences:\n{g}\nexpected\n{w}"
        )


def fresh(program: Program) -> tuple[np.ndarray, ...]:
    return tuple(a.copy() for a in program.args)


@settings(max_examples=150)
@given(programs())
def test_random_programs_are_right_or_raise(program):
    note(str(program))
    reference = numerical_gradient(program.fn, *program.args)

    snapshot = mutagrad.withgradient(program.fn, *fresh(program), mode="snapshot")
    np.testing.assert_allclose(snapshot.val, program.fn(*fresh(program)), rtol=1e-12)
    assert_gradients_close(snapshot.grad, reference, "snapshot mode")

    try:
        poison = mutagrad.gradient(program.fn, *fresh(program))
    except mutagrad.PoisonedCaptureError:
        poison = None
    else:
        assert_gradients_close(poison, reference, "poison mode")

    try:
        strict = mutagrad.gradient(program.fn, *fresh(program), mode="strict")
    except mutagrad.MutationError:
        assert program.mutates, "strict mode refused a program that does not mutate"
    else:
        assert poison is not None, "strict mode accepted a program poison mode refused"
        assert_gradients_close(strict, reference, "strict mode")


@given(programs())
def test_the_callers_arrays_survive_any_program(program):
    args = fresh(program)
    before = tuple(a.copy() for a in args)
    with contextlib.suppress(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(program.fn, *args)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
        assert a.flags.writeable
