"""Hypothesis strategies for testing differentiation of numpy code, mutating code included.

Built on :mod:`hypothesis.extra.numpy`:

* :func:`float_arrays` – float arrays with finite elements of bounded
  magnitude, optionally distinct and at least ``min_gap`` apart (so that a
  max, a sort or a comparison has no ties for finite differences to trip on);
* :func:`broadcastable_shapes` – pairs of shapes that broadcast together;
* :func:`basic_indices` – basic indexes for a shape (integers, slices with
  steps, ``...``, ``None``): indexing with one gives a view;
* :func:`indices` – any valid index for a shape: basic, boolean masks
  (whole or over leading axes), integer arrays (on a block of axes, with
  slices around them);
* :func:`programs` – random mutating numpy programs at your shapes and dtype:
  reads, views and in-place writes that mutagrad always differentiates right
  in snapshot mode, and right or with ``PoisonedCaptureError`` in poison
  mode. A drawn :class:`~mutagrad.testing.fuzz.Program` has ``.fn`` (runs on
  plain ndarrays and on traced arrays alike and returns a scalar),
  ``.inputs`` (also ``.args``), ``.source`` (readable Python to paste into a
  bug report) and ``.mutates``; ``.then(g)`` and ``.after(g)`` compose it
  with a function of yours, ``.with_inputs(...)`` runs it on your arrays, and
  :func:`mutagrad.testing.fuzz.judge` judges it in every mode;
* :func:`fuzz_programs` – programs of the differential fuzzer's whole grammar
  (:mod:`mutagrad.testing.fuzz`: masks and index arrays mutated after use,
  Python lists of traced values, overlapping in-place functions, layouts,
  dtypes, aliasing, checkpointed blocks, threads), to judge with ``judge``.

Both program strategies draw the fuzzer's :class:`~mutagrad.testing.fuzz.Blueprint`
(one tuple of integers per statement) and render it with the fuzzer's
grammar: there is one program generator. Hypothesis shrinks a failing
program by deleting statements and towards the simplest choice of each, so a
shrunk counterexample is short.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    from hypothesis import strategies as st
    from hypothesis.errors import InvalidArgument
    from hypothesis.extra import numpy as hnp
except ModuleNotFoundError as missing:  # say how to get it, not only what is missing
    raise ModuleNotFoundError(
        "mutagrad.testing.strategies needs hypothesis: pip install hypothesis (in a clone "
        "of mutagrad, pip install -e '.[test]' installs it with the other test tools)",
        name=missing.name,
    ) from missing

from mutagrad.testing.fuzz.blueprint import (
    CHOICE_RANGE,
    CHOICES_PER_STEP,
    ENDING_COUNT,
    FUZZ_GRAMMAR,
    KIND_WEIGHTS,
    SHAPES,
    VALUE_GRID,
    Blueprint,
    Grammar,
)
from mutagrad.testing.fuzz.grammar import render
from mutagrad.testing.fuzz.program import Program

__all__ = [
    "PROGRAM_READS",
    "PROGRAM_WRITES",
    "Program",
    "basic_indices",
    "broadcastable_shapes",
    "float_arrays",
    "fuzz_programs",
    "indices",
    "programs",
]


def float_arrays(
    shape: Any = None,
    magnitude: float = 3.0,
    dtype: Any = np.float64,
    *,
    unique: bool = False,
    min_gap: float | None = None,
) -> st.SearchStrategy[np.ndarray]:
    """Float arrays with finite elements in ``[-magnitude, magnitude]``.

    ``shape`` is a shape or a strategy for one (default: up to 3 dimensions of
    up to 4). ``unique=True`` draws distinct elements; ``min_gap`` draws them
    at least ``min_gap`` apart and ``min_gap / 2`` away from zero (odd
    multiples of ``min_gap / 2``), which code with kinks (``max``, ``sort``,
    ``abs``, comparisons) needs for finite differences to be a reliable
    reference: pick a gap well above the step (``1e-6`` by default).
    """
    if shape is None:
        shape = hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)
    if min_gap is not None:
        if not 0 < min_gap <= magnitude:
            raise InvalidArgument(f"min_gap={min_gap!r} must be in (0, magnitude={magnitude!r}]")
        steps = int(magnitude / min_gap - 0.5)
        spaced = st.integers(-steps - 1, steps).map(lambda k: (k + 0.5) * min_gap)
        return hnp.arrays(dtype, shape, elements=spaced, unique=True)
    width = np.dtype(dtype).itemsize * 8
    elements = st.floats(
        -magnitude, magnitude, allow_nan=False, allow_infinity=False, width=min(width, 64)
    )
    return hnp.arrays(dtype, shape, elements=elements, unique=unique)


def broadcastable_shapes(
    max_dims: int = 3, max_side: int = 4
) -> st.SearchStrategy[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Two shapes (up to ``max_dims`` axes of 1 to ``max_side``) that broadcast together."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=max_dims, min_side=1, max_side=max_side
    ).map(lambda result: (result.input_shapes[0], result.input_shapes[1]))


def basic_indices(shape: tuple[int, ...]) -> st.SearchStrategy[Any]:
    """Basic indexes (integers, slices with steps, ``...``, ``None``) valid for ``shape``."""
    return hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True)


def _index_values(side: int) -> st.SearchStrategy[int]:
    return st.integers(-side, side - 1)


@st.composite
def _integer_array_index(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """Integer arrays (one common shape) on a block of axes; slices on the axes before it."""
    first = draw(st.integers(0, len(shape) - 1))
    count = draw(st.integers(1, len(shape) - first))
    index_shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=3))
    leading = tuple(draw(st.slices(side)) for side in shape[:first])
    arrays = tuple(
        draw(hnp.arrays(np.intp, index_shape, elements=_index_values(side)))
        for side in shape[first : first + count]
    )
    return leading + arrays


@st.composite
def _boolean_mask(draw: st.DrawFn, shape: tuple[int, ...]) -> np.ndarray:
    """A mask over the whole shape or over its leading axes."""
    axes = draw(st.integers(1, len(shape)))
    return draw(hnp.arrays(np.bool_, shape[:axes]))


def indices(shape: tuple[int, ...]) -> st.SearchStrategy[Any]:
    """Any valid index for ``shape``: basic, a boolean mask, or integer arrays.

    Boolean masks and integer arrays are drawn only for shapes with at least
    one axis and no zero-length axis; basic indexes for every shape.
    """
    options = [basic_indices(shape)]
    if shape and all(shape):
        options += [_boolean_mask(shape), _integer_array_index(shape)]
    return st.one_of(*options)


# ---------------------------------------------------------------------------
# Programs.

#: The statement kinds :func:`programs` draws, reads and writes: those of the fuzzer's grammar
#: that mutagrad differentiates in every mode as the property tests of a user's suite expect
#: (snapshot mode always right; poison mode right or PoisonedCaptureError; strict mode
#: MutationError exactly when a statement writes), with finite differences reliable at the
#: default elements. Measured over 4,000 programs of the fuzzer's judge; the kinds left out
#: are refused by design in some forms (layouts, complex, ``np.place``, ``ufunc.at``, threads),
#: write only for some data (``np.putmask`` with ``x > 0.5``, masks from comparisons), or
#: make buffers that strict mode lets a constant be written into (``np.zeros_like``).
PROGRAM_READS: tuple[str, ...] = (
    "unary", "binary", "reduce", "reduce with where", "axis reduce", "element read", "view",
    "gather", "product", "new index", "new constant", "use constant", "type branch",
    "builtin on element",
)  # fmt: skip
PROGRAM_WRITES: tuple[str, ...] = (
    "setitem", "augmented", "mask write", "fancy write", "copyto", "sort in place", "fill",
    "write through view", "out reduction", "put",
)  # fmt: skip
_ARGUMENT_SETUPS = ("one argument", "two arguments", "three arguments")
_FLOAT_CODES = {np.dtype(np.float64): "f8", np.dtype(np.float32): "f4"}


def _weighted(kinds: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(kind for kind in kinds for _ in range(KIND_WEIGHTS[kind]))


_READ_KINDS = _weighted(PROGRAM_READS)
_WRITE_KINDS = _weighted(PROGRAM_WRITES)


_CHOICE_BYTES = (CHOICE_RANGE - 1).bit_length() // 8


@st.composite
def _step(draw: st.DrawFn, kinds: st.SearchStrategy[int]) -> tuple[int, ...]:
    """One statement of a blueprint: its kind's index, then the integers of its choices.

    The choices are one drawn string of bytes: hypothesis shrinks it to zeros
    (each statement's simplest form) and deletes whole statements reliably,
    which it did not with eight integers per statement.
    """
    kind = draw(kinds)
    raw = draw(
        st.binary(
            min_size=_CHOICE_BYTES * CHOICES_PER_STEP, max_size=_CHOICE_BYTES * CHOICES_PER_STEP
        )
    )
    numbers = (raw[k : k + _CHOICE_BYTES] for k in range(0, len(raw), _CHOICE_BYTES))
    return (kind, *(int.from_bytes(number, "little") for number in numbers))


@st.composite
def _program_kind(draw: st.DrawFn, mutate_probability: float) -> int:
    """A read or (with ``mutate_probability``) a write: its index in the programs' grammar."""
    # Shrinks to 0: a write, and to the first kind of each list. sampled_from draws the kinds
    # evenly (integers() favours small values and the constants of loaded modules).
    writes = draw(st.integers(0, 999)) < 1000 * mutate_probability
    if writes:
        return len(_READ_KINDS) + draw(st.sampled_from(range(len(_WRITE_KINDS))))
    return draw(st.sampled_from(range(len(_READ_KINDS))))


def _program_shape(shape: Any) -> tuple[int, ...]:
    shape = tuple(int(side) for side in shape)
    if len(shape) not in (1, 2) or min(shape) < 1:
        raise InvalidArgument(
            f"programs() draws programs over arrays of one or two axes, none empty; got the "
            f"shape {shape}"
        )
    return shape


def _as_strategy(value: Any, default: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    if value is None:
        return default
    return value if isinstance(value, st.SearchStrategy) else st.just(value)


@st.composite
def programs(
    draw: st.DrawFn,
    min_inputs: int = 1,
    max_inputs: int = 3,
    max_statements: int = 8,
    mutate_probability: float = 0.7,
    *,
    shapes: Any = None,
    dtype: Any = np.float64,
    elements: st.SearchStrategy[float] | None = None,
    unique: bool = False,
) -> Program:
    """A random mutating numpy program over ``min_inputs`` to ``max_inputs`` input arrays.

    Statements read (elementwise functions, products, reductions with
    ``where=``, ``axis=`` and ``initial=``, gathers through index arrays and
    masks, branches on ``isinstance``, builtins on elements), take views, and
    write in place (setitem on slices, rows, elements, masks and repeated
    fancy indexes, augmented operators, ``out=`` reductions, ``fill``,
    ``np.copyto``, ``np.put``, in-place sorts, writes through views).
    ``mutate_probability`` is the chance that each statement writes; most
    drawn programs mutate. The program returns the sum of every scalar it
    computed and of ``tanh`` of every array it holds, so a wrong value
    anywhere shows.

    ``shapes`` is the inputs' shape or a strategy for one (one or two axes;
    default: the fuzzer's (4,), (5,), (2, 3), (3, 3), (3, 2)); ``dtype``
    float64 or float32, or a strategy for one. ``elements`` draws the input
    elements (``unique=True``: distinct within each input); by default they
    come from the fuzzer's grid, distinct across the inputs, at least 0.02
    apart and away from the thresholds the statements compare with, so that
    finite differences are reliable (at most 40 elements in all: pass
    ``elements`` for larger inputs). With your own elements a program may be
    evaluated at a kink (a tie in a max or a sort):
    :func:`mutagrad.testing.fuzz.judge` discards those.
    """
    if not 1 <= min_inputs <= max_inputs <= 3:
        raise InvalidArgument("programs() takes 1 <= min_inputs <= max_inputs <= 3")
    shape = _program_shape(draw(_as_strategy(shapes, st.sampled_from(SHAPES))))
    chosen = np.dtype(draw(_as_strategy(dtype, st.just(np.float64))))
    if chosen not in _FLOAT_CODES:
        raise InvalidArgument(f"programs() draws float64 or float32 inputs, not {chosen}")
    n_inputs = draw(st.integers(min_inputs, max_inputs))
    size = int(np.prod(shape))
    if elements is None and size * n_inputs > len(VALUE_GRID):
        raise InvalidArgument(
            f"{n_inputs} input(s) of shape {shape} need {size * n_inputs} distinct grid values; "
            f"the grid has {len(VALUE_GRID)}: pass elements= (a strategy of floats)"
        )
    grammar = Grammar(
        setups=(_ARGUMENT_SETUPS[n_inputs - 1],),
        shapes=(shape,),
        kinds=_READ_KINDS + _WRITE_KINDS,
        dtype=_FLOAT_CODES[chosen],
        values=size * n_inputs,
        float_result=True,
    )
    steps = draw(
        st.lists(_step(_program_kind(mutate_probability)), min_size=1, max_size=max_statements)
    )
    # The elements come last, so that shrinking them never reshuffles the statements.
    if elements is None:
        picks = st.integers(0, len(VALUE_GRID) - 1)
        values = draw(st.lists(picks, min_size=size * n_inputs, max_size=size * n_inputs))
        return render(Blueprint(0, 0, tuple(steps), 0, tuple(values)), grammar)
    program = render(Blueprint(0, 0, tuple(steps), 0, (0,) * (size * n_inputs)), grammar)
    arrays = [
        draw(hnp.arrays(chosen, shape, elements=elements, unique=unique)) for _ in range(n_inputs)
    ]
    return program.with_inputs(*arrays)


@st.composite
def fuzz_programs(
    draw: st.DrawFn, max_statements: int = 10, grammar: Grammar = FUZZ_GRAMMAR
) -> Program:
    """A program of the differential fuzzer's grammar (see :mod:`mutagrad.testing.fuzz`).

    Draws a :class:`~mutagrad.testing.fuzz.Blueprint` and renders it. Every
    statement is one drawn tuple, so hypothesis shrinks a failing program by
    deleting statements, and towards one argument, the first shape and the
    simplest choice of each statement.
    """
    step = _step(st.integers(0, len(grammar.kinds) - 1))
    values = st.integers(0, len(VALUE_GRID) - 1)
    blueprint = Blueprint(
        setup=draw(st.integers(0, len(grammar.setups) - 1)),
        shape=draw(st.integers(0, len(grammar.shapes) - 1)),
        steps=tuple(draw(st.lists(step, min_size=1, max_size=max_statements))),
        ending=draw(st.integers(0, ENDING_COUNT - 1)),
        values=tuple(draw(st.lists(values, min_size=grammar.values, max_size=grammar.values))),
    )
    return render(blueprint, grammar)
