"""The hypothesis strategies draw what they promise, and programs shrink to short ones."""

from __future__ import annotations

import collections

import numpy as np
from hypothesis import HealthCheck, find, given, note, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mutagrad
from mutagrad.testing.fuzz.program import compiled
from mutagrad.testing.strategies import (
    PROGRAM_READS,
    PROGRAM_WRITES,
    basic_indices,
    broadcastable_shapes,
    float_arrays,
    indices,
    programs,
)

# For tests that gather statistics over many draws: fixed, whatever the profile.
SURVEY = settings(
    max_examples=200,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def survey(strategy, observe) -> None:
    """Call ``observe`` on 200 derandomized draws of ``strategy``."""

    @SURVEY
    @given(strategy)
    def run(value):
        observe(value)

    run()


# -- float arrays and shapes -------------------------------------------------------


@given(float_arrays(magnitude=0.5))
def test_float_arrays_are_finite_and_bounded(x):
    assert x.dtype == np.float64
    assert np.all(np.isfinite(x)) and np.all(np.abs(x) <= 0.5)


@given(float_arrays((2, 3), dtype=np.float32), float_arrays(st.just((4,))))
def test_float_arrays_take_a_shape_a_shape_strategy_and_a_dtype(x, y):
    assert x.shape == (2, 3) and x.dtype == np.float32 and np.all(np.abs(x) <= 3.0)
    assert y.shape == (4,)


@given(broadcastable_shapes(max_dims=3, max_side=4))
def test_broadcastable_shapes_really_broadcast(shapes):
    a, b = shapes
    assert len(a) <= 3 and len(b) <= 3 and all(1 <= n <= 4 for n in a + b)
    result = np.broadcast_shapes(a, b)
    assert (np.ones(a) + np.ones(b)).shape == result


def test_broadcastable_shapes_include_real_broadcasting():
    seen = collections.Counter()

    def observe(shapes):
        a, b = shapes
        seen["different ranks"] += len(a) != len(b)
        seen["a stretched axis"] += any(m != n for m, n in zip(reversed(a), reversed(b)))

    survey(broadcastable_shapes(), observe)
    assert seen["different ranks"] > 10 and seen["a stretched axis"] > 10


# -- indices -------------------------------------------------------------------------


@st.composite
def shapes_with(draw, index_strategy):
    shape = draw(SHAPES)
    return shape, draw(index_strategy(shape))


@given(shapes_with(basic_indices))
def test_basic_indices_index_their_shape_and_give_views(case):
    shape, index = case
    x = np.arange(np.prod(shape), dtype=float).reshape(shape)
    part = x[index]
    if isinstance(part, np.ndarray):
        assert part.base is not None or part.size == 0  # a view, not a copy
    x[index] = -1.0
    assert np.all(x[index] == -1.0)


@given(shapes_with(indices))
def test_indices_index_their_shape_for_reading_and_writing(case):
    shape, index = case
    note(f"shape {shape}, index {index!r}")
    x = np.arange(np.prod(shape), dtype=float).reshape(shape)
    values = x[index]
    x[index] = -np.ones(np.shape(values))
    assert np.all(x[index] == -1.0)


def _index_kinds(index) -> set[str]:
    parts = index if isinstance(index, tuple) else (index,)
    kinds = set()
    for part in parts:
        if isinstance(part, slice) and part.step not in (None, 1):
            kinds.add("slice with a step")
        elif isinstance(part, (int, np.integer)):
            kinds.add("integer")
        elif isinstance(part, np.ndarray) and part.dtype == bool:
            kinds.add("boolean mask")
        elif isinstance(part, np.ndarray):
            kinds.add("integer array")
    if any(isinstance(p, slice) for p in parts) and "integer array" in kinds:
        kinds.add("integer array after a slice")
    return kinds


def test_indices_draw_every_kind_of_index():
    seen = collections.Counter()
    survey(
        st.sampled_from([(5,), (3, 4), (2, 3, 2)]).flatmap(indices),
        lambda index: seen.update(_index_kinds(index)),
    )
    for kind in ("slice with a step", "integer", "boolean mask", "integer array",
                 "integer array after a slice"):  # fmt: skip
        assert seen[kind] >= 5, (kind, seen)


def test_indices_of_empty_and_zero_dimensional_shapes_are_basic():
    def observe(index, shape):
        np.zeros(shape)[index]
        assert not _index_kinds(index) & {"boolean mask", "integer array"}

    for shape in [(), (0, 3)]:
        survey(indices(shape), lambda index, shape=shape: observe(index, shape))


# -- programs ------------------------------------------------------------------------


@given(programs())
def test_a_program_runs_on_plain_and_traced_arrays_and_returns_a_scalar(program):
    plain = program.fn(*[a.copy() for a in program.args])
    assert np.ndim(plain) == 0 and np.isfinite(plain)
    with mutagrad.mode("snapshot"):
        value, grads = mutagrad.withgradient(program.fn, *program.args)
    assert value == plain
    assert len(grads) == len(program.args)


@given(programs())
def test_the_source_is_the_program(program):
    namespace = compiled(program.source, "<test>")
    again = namespace["f"](*[a.copy() for a in program.args])
    assert again == program.fn(*[a.copy() for a in program.args])
    assert program.source in str(program)
    assert program.statements == [line[4:] for line in program.source.splitlines()[1:-1]]


@given(programs())
def test_mutates_says_whether_the_program_writes_in_place(program):
    try:
        mutagrad.gradient(program.fn, *program.args, mode="strict")
    except mutagrad.MutationError:
        assert program.mutates
    else:
        assert not program.mutates


@given(programs(min_inputs=2, max_inputs=2, max_statements=3))
def test_programs_respect_their_bounds(program):
    assert len(program.args) == 2
    assert 1 <= len(program.blueprint.steps) <= 3
    # A statement takes one to four lines (a write through a new view: the view, then the
    # write; a branch on isinstance: four).
    assert 1 <= len(program.statements) <= 12


def test_most_programs_mutate_and_use_every_kind_of_write():
    seen = collections.Counter()

    def observe(program):
        seen["programs"] += 1
        seen["mutating"] += program.mutates
        seen.update(program.tags)

    survey(programs(), observe)
    assert seen["mutating"] > 0.7 * seen["programs"]
    # At least twice each in 200 draws: hypothesis seeds its draws with constants
    # from every loaded module, so the exact counts move as the code base grows.
    for kind in PROGRAM_WRITES:
        assert seen[kind] >= 2, (kind, seen)
    # Reads are three statements in ten, and the rarest kinds have weight 1 or 2.
    assert sum(seen[kind] > 0 for kind in PROGRAM_READS) >= len(PROGRAM_READS) - 5, seen


def _poisons(program) -> bool:
    try:
        mutagrad.gradient(program.fn, *program.args)
    except mutagrad.PoisonedCaptureError:
        return True
    return False


def test_shrinking_gives_a_short_program():
    search = settings(database=None, derandomize=True, max_examples=1000, deadline=None)
    # A counterexample to "poison mode never raises": a capture, then an overlapping write.
    minimal = find(programs(), _poisons, settings=search)
    assert len(minimal.blueprint.steps) <= 2, minimal.source
    assert len(minimal.args) == 1
    # A program that fills an array and reads a sine: two statements are enough.
    minimal = find(
        programs(), lambda p: ".fill(" in p.source and "np.sin" in p.source, settings=search
    )
    assert len(minimal.blueprint.steps) == 2, minimal.source
