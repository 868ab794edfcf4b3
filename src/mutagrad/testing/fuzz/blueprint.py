"""Blueprints: the random choices of one program, as a few lists of integers.

A :class:`Blueprint` is all the randomness of a generated program: which
setup (how the arguments are made), which shape, one tuple of integers per
statement (its kind, then the integers its choices are read from), which
ending, which input elements. :func:`draw_blueprint` draws one from a
``random.Random``; :mod:`mutagrad.testing.strategies` draws one with
hypothesis. The grammar (:mod:`mutagrad.testing.fuzz.grammar`) reads any
blueprint as a valid program, so a blueprint can be shrunk, edited or drawn
by any means.

The tables here fix what the integers mean: :data:`SETUPS`, :data:`SHAPES`
and :data:`STEP_KINDS` (each kind repeated by its weight), :data:`VALUE_GRID`
for the input elements. Changing one changes the program every seed gives.
"""

from __future__ import annotations

import random

import attrs

__all__ = [
    "CHOICES_PER_STEP",
    "CHOICE_RANGE",
    "ENDING_COUNT",
    "FUZZ_GRAMMAR",
    "JITTER",
    "KIND_WEIGHTS",
    "PYTHON_WEIGHTS",
    "READ_WEIGHTS",
    "SETUPS",
    "SHAPES",
    "STEP_KINDS",
    "VALUE_COUNT",
    "VALUE_GRID",
    "WRITE_WEIGHTS",
    "Blueprint",
    "Grammar",
    "draw_blueprint",
]

#: Integers each statement's choices are read from, and their range.
CHOICES_PER_STEP = 8
CHOICE_RANGE = 1 << 16
#: One integer per input element (at most two inputs of nine elements).
VALUE_COUNT = 18
#: The last two of these endings return a bool or an int rather than a float.
ENDING_COUNT = 40

#: Input elements: k/2 + d, so that elements, their absolute values and the
#: thresholds 0, ±0.5, ±1, ... are at least 0.02 apart, far beyond the steps
#: of the finite differences.
VALUE_GRID: tuple[float, ...] = tuple(
    round(k / 2 + d, 2) for k in range(-4, 4) for d in (0.11, 0.17, 0.23, 0.31, 0.37)
)
#: Element k of the inputs is moved by ``JITTER * frac(k * 0.7548...)``, so that
#: sums and differences of elements do not land exactly on a threshold.
JITTER = 1e-3

SHAPES: tuple[tuple[int, ...], ...] = ((4,), (5,), (2, 3), (3, 3), (3, 2))

# The first entry of each weighted list is the simplest choice: where
# hypothesis shrinks to.
SETUPS: tuple[str, ...] = (
    *["one argument"] * 6,
    *["two arguments"] * 2,
    "the same array twice",
    "overlapping slices",
    "array and its transpose",
    "array and its reverse",
    *["non-C layout"] * 2,
    "float32 argument",
    *["views made outside f"] * 2,
    "mask argument",
    "index argument",
    "container argument",
    "masked argument",
)

READ_WEIGHTS: dict[str, int] = {
    "unary": 6,
    "binary": 5,
    "reduce": 5,
    "reduce with where": 3,
    "axis reduce": 2,
    "element read": 3,
    "view": 5,
    "layout": 3,
    "cast": 3,
    "complex": 1,
    "gather": 3,
    "sort read": 2,
    "product": 1,
    "method call": 4,
    "view function": 3,
    "nested gradient": 2,
    "library read": 3,
    "ufunc method": 3,
    "window view": 1,
    "new buffer": 4,
    "new mask": 3,
    "new index": 2,
    "new constant": 2,
    "use constant": 2,
}
WRITE_WEIGHTS: dict[str, int] = {
    "setitem": 6,
    "augmented": 4,
    "mask write": 3,
    "fancy write": 3,
    "list write": 4,
    "copyto": 3,
    "put": 2,
    "place": 2,
    "putmask": 2,
    "fill_diagonal": 2,
    "ufunc.at": 2,
    "out aliasing": 4,
    "sort in place": 3,
    "fill": 2,
    "write through view": 3,
    "mutate mask": 4,
    "mutate index": 2,
    "mutate constant": 2,
    "write int array": 1,
    "write complex": 1,
    "write float32": 1,
    "checkpointed": 3,
    "write outside view": 4,
    "flat": 1,
    "out reduction": 2,
    "library out": 2,
}
#: What a program asks Python rather than numpy.
PYTHON_WEIGHTS: dict[str, int] = {
    "type branch": 3,
    "normalising helper": 2,
    "builtin on element": 2,
    "thread": 1,
}
#: Every statement kind (grammar/reads.py, writes.py and python_questions.py) and its weight.
KIND_WEIGHTS: dict[str, int] = {**READ_WEIGHTS, **WRITE_WEIGHTS, **PYTHON_WEIGHTS}
#: Statement kinds, each repeated by its weight; a step's first integer indexes this.
STEP_KINDS: tuple[str, ...] = tuple(k for k, w in KIND_WEIGHTS.items() for _ in range(w))


@attrs.frozen
class Grammar:
    """What a blueprint's integers select from: setups, shapes, statement kinds, the inputs' dtype.

    The fuzzer's grammar (:data:`FUZZ_GRAMMAR`) is the tables above. A
    narrower one serves other uses: :func:`mutagrad.testing.strategies.programs`
    draws from setups and statements that mutagrad always differentiates or
    refuses in a known way, at the user's shapes and dtype; the report's
    generated programs from plain numpy statements only. ``setups`` and
    ``kinds`` are weighted lists (a name repeated by its weight), ``dtype``
    the inputs' dtype code (``"f8"`` or ``"f4"``), ``values`` how many grid
    values a blueprint draws (enough for every input of the largest shape),
    and ``float_result`` leaves out the two endings that return a bool or an
    int.
    """

    setups: tuple[str, ...] = SETUPS
    shapes: tuple[tuple[int, ...], ...] = SHAPES
    kinds: tuple[str, ...] = STEP_KINDS
    dtype: str = "f8"
    values: int = VALUE_COUNT
    float_result: bool = False

    def setup_of(self, blueprint: Blueprint) -> str:
        return self.setups[blueprint.setup % len(self.setups)]

    def shape_of(self, blueprint: Blueprint) -> tuple[int, ...]:
        return self.shapes[blueprint.shape % len(self.shapes)]

    def kind_of(self, step: tuple[int, ...]) -> str:
        return self.kinds[step[0] % len(self.kinds)]


FUZZ_GRAMMAR = Grammar()


@attrs.frozen
class Blueprint:
    """The random choices of one program; the grammar reads any blueprint as a valid program.

    ``steps`` holds one tuple per statement: an index into :data:`STEP_KINDS`
    and :data:`CHOICES_PER_STEP` integers for that statement's choices.
    ``values`` picks the input elements from :data:`VALUE_GRID`, without repeats.
    """

    setup: int
    shape: int
    steps: tuple[tuple[int, ...], ...]
    ending: int
    values: tuple[int, ...]

    def without_step(self, k: int) -> Blueprint:
        return attrs.evolve(self, steps=self.steps[:k] + self.steps[k + 1 :])


def draw_blueprint(
    rng: random.Random, max_statements: int = 10, grammar: Grammar = FUZZ_GRAMMAR
) -> Blueprint:
    """A blueprint of 1 to ``max_statements`` statements of ``grammar``, drawn from ``rng``."""

    def step() -> tuple[int, ...]:
        kind = rng.randrange(len(grammar.kinds))
        return (kind, *(rng.randrange(CHOICE_RANGE) for _ in range(CHOICES_PER_STEP)))

    return Blueprint(
        setup=rng.randrange(len(grammar.setups)),
        shape=rng.randrange(len(grammar.shapes)),
        steps=tuple(step() for _ in range(rng.randint(1, max_statements))),
        ending=rng.randrange(ENDING_COUNT),
        values=tuple(rng.randrange(len(VALUE_GRID)) for _ in range(grammar.values)),
    )
