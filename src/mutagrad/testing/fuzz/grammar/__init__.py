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
    FUZZ_GRAMMAR,
    KIND_WEIGHTS,
    SETUPS,
    Blueprint,
    Grammar,
    draw_blueprint,
)
from mutagrad.testing.fuzz.grammar import python_questions, reads, writes  # noqa: F401
from mutagrad.testing.fuzz.grammar.renderer import Draw, Renderer
from mutagrad.testing.fuzz.grammar.setups import SETUP_FUNCTIONS, apply_setup
from mutagrad.testing.fuzz.grammar.steps import STEPS
from mutagrad.testing.fuzz.program import Program

__all__ = ["generate", "render"]

# Every kind the blueprint's tables name has its function, and no function lacks a name there
# (python_questions and writes are imported for their registrations); every setup of the
# fuzzer's table has its function (one more, "three arguments", serves other grammars).
assert STEPS.keys() == KIND_WEIGHTS.keys(), set(STEPS) ^ set(KIND_WEIGHTS)
assert set(SETUPS) <= SETUP_FUNCTIONS.keys(), set(SETUPS) - SETUP_FUNCTIONS.keys()


def render(blueprint: Blueprint, grammar: Grammar = FUZZ_GRAMMAR) -> Program:
    """The program a blueprint describes in ``grammar`` (any blueprint renders to one)."""
    r = Renderer(blueprint, grammar)
    apply_setup(r, grammar.setup_of(blueprint), grammar.shape_of(blueprint))
    for step in blueprint.steps:
        kind = grammar.kind_of(step)
        d = Draw(step[1:])
        if STEPS[kind](r, d):
            r.tags.append(kind)
        else:
            reads.step_unary(r, d)
            r.tags.append("unary")
    return Program(
        source=r.source(),
        inputs=r.inputs(),
        argument_sources=r.argument_sources,
        writes_caller_memory=r.writes_caller_memory,
        low_precision=any(v.dtype == "f4" for v in r.vars),
        tags=tuple(dict.fromkeys(r.tags)),
        blueprint=blueprint,
        mutates=r.writes > 0,
    )


def generate(
    rng: random.Random, max_statements: int = 10, grammar: Grammar = FUZZ_GRAMMAR
) -> Program:
    """A random program of ``grammar``: a blueprint drawn from ``rng``, rendered."""
    return render(draw_blueprint(rng, max_statements, grammar), grammar)
