"""The registry of statement kinds: one function per kind a blueprint's step names.

A step function appends one statement (sometimes a few lines) to the
program being rendered, reading its choices from a :class:`Draw`, and returns
whether it could: a write needs something writable, a mask write an array
with a shape. :func:`step` registers it beside its definition, under its
kind's name in :data:`~mutagrad.testing.fuzz.blueprint.KIND_WEIGHTS`.
"""

from __future__ import annotations

from collections.abc import Callable

from mutagrad.testing.fuzz.blueprint import KIND_WEIGHTS
from mutagrad.testing.fuzz.grammar.renderer import Draw, Renderer

__all__ = ["STEPS", "StepFunction", "step"]

StepFunction = Callable[[Renderer, Draw], bool]
#: Statement kind -> the function that renders it.
STEPS: dict[str, StepFunction] = {}


def step(kind: str) -> Callable[[StepFunction], StepFunction]:
    """Register the decorated function as statement kind ``kind``."""
    if kind not in KIND_WEIGHTS:
        raise ValueError(f"{kind!r} is not a statement kind of the blueprint's table")

    def register(function: StepFunction) -> StepFunction:
        STEPS[kind] = function
        return function

    return register
