"""Minimisation: the smallest program that still fails the way a found one does.

:func:`minimise` deletes a failing program's statements one at a time, and
replaces its setup, shape and ending by the simplest ones, as long as the
call stays WRONG in the same respect or crashes with the same exception type.
It works on the blueprint, so every candidate is a valid program.
"""

from __future__ import annotations

import attrs

from mutagrad.testing.fuzz.grammar import render
from mutagrad.testing.fuzz.oracle import judge
from mutagrad.testing.fuzz.program import Program
from mutagrad.testing.verdicts import ModeResult, Outcome

__all__ = ["minimise"]


def _failure_kind(result: ModeResult) -> tuple[Outcome, str]:
    """What minimisation must preserve: the exception's type, or what is wrong (value, gradient
    or the caller's arrays: the detail's first word)."""
    if result.error_type is not None:
        return result.outcome, result.error_type
    return result.outcome, result.detail.split(" ")[0]


def minimise(program: Program, mode: str, seconds: float = 10.0) -> Program:
    """A program with fewer statements that fails in ``mode`` the way ``program`` does.

    Statements are deleted one at a time, and the setup, shape and ending
    replaced by the simplest ones, as long as the call stays WRONG in the same
    respect (value, gradient, caller's array) or crashes with the same
    exception type. ``program`` itself if it does not fail in ``mode``.
    """
    if program.blueprint is None:
        return program

    def failure(candidate: Program) -> tuple[Outcome, str] | None:
        verdict = judge(candidate, (mode,), seconds)
        return _failure_kind(verdict.results[0]) if verdict.findings else None

    target = failure(program)
    if target is None:
        return program
    blueprint = program.blueprint
    simplifications = [
        lambda b: attrs.evolve(b, setup=0),
        lambda b: attrs.evolve(b, shape=0),
        lambda b: attrs.evolve(b, ending=0),
    ]
    changed = True
    while changed:
        changed = False
        candidates = [blueprint.without_step(k) for k in reversed(range(len(blueprint.steps)))]
        candidates += [simplify(blueprint) for simplify in simplifications]
        for candidate in candidates:
            if candidate != blueprint and candidate.steps and failure(render(candidate)) == target:
                blueprint = candidate
                changed = True
                break
    return render(blueprint)
