"""The grammar of generated programs: how a blueprint's integers become Python source.

:func:`render` reads a :class:`~mutagrad.testing.fuzz.blueprint.Blueprint`
as a program: its setup makes the arguments (:mod:`.setups`), then each step
appends a statement of its kind (:mod:`.reads`, :mod:`.writes`,
:mod:`.python_questions`; the registry is :mod:`.steps`) to a
:class:`~.renderer.Renderer`, which tracks the names each statement defines
so that later ones use them, and writes the source at the end. A step whose
kind cannot apply (nothing to write yet, say) reads instead. Any blueprint
renders to a valid program: that is what lets hypothesis shrink one and
:func:`~mutagrad.testing.fuzz.minimise` delete its steps.
"""

from __future__ import annotations

import random

from mutagrad.testing.fuzz.blueprint import (
    KIND_WEIGHTS,
    SETUPS,
    SHAPES,
    STEP_KINDS,
    Blueprint,
    draw_blueprint,
)
from mutagrad.testing.fuzz.grammar import python_questions, reads, writes  # noqa: F401
from mutagrad.testing.fuzz.grammar.renderer import Draw, Renderer
from mutagrad.testing.fuzz.grammar.setups import SETUP_FUNCTIONS, apply_setup
from mutagrad.testing.fuzz.grammar.steps import STEPS
from mutagrad.testing.fuzz.program import FuzzProgram

__all__ = ["generate", "render"]

# Every kind and setup the blueprint's tables name has its function (python_questions and
# writes are imported for their registrations), and no function lacks a name in the tables.
assert STEPS.keys() == KIND_WEIGHTS.keys(), set(STEPS) ^ set(KIND_WEIGHTS)
assert SETUP_FUNCTIONS.keys() == set(SETUPS), set(SETUP_FUNCTIONS) ^ set(SETUPS)


def render(blueprint: Blueprint) -> FuzzProgram:
    """The program a blueprint describes (any blueprint renders to one)."""
    r = Renderer(blueprint)
    apply_setup(r, SETUPS[blueprint.setup % len(SETUPS)], SHAPES[blueprint.shape % len(SHAPES)])
    for kind_index, *numbers in blueprint.steps:
        kind = STEP_KINDS[kind_index % len(STEP_KINDS)]
        d = Draw(numbers)
        if STEPS[kind](r, d):
            r.tags.append(kind)
        else:
            reads.step_unary(r, d)
            r.tags.append("unary")
    return FuzzProgram(
        source=r.source(),
        inputs=r.inputs(),
        argument_sources=r.argument_sources,
        writes_caller_memory=r.writes_caller_memory,
        low_precision=any(v.dtype == "f4" for v in r.vars),
        tags=tuple(dict.fromkeys(r.tags)),
        blueprint=blueprint,
    )


def generate(rng: random.Random, max_statements: int = 10) -> FuzzProgram:
    """A random program: a blueprint drawn from ``rng``, rendered."""
    return render(draw_blueprint(rng, max_statements))
