"""Hypothesis strategies for testing differentiation of numpy code, mutating code included.

Built on :mod:`hypothesis.extra.numpy`:

* :func:`float_arrays` – float arrays with finite elements of bounded magnitude;
* :func:`broadcastable_shapes` – pairs of shapes that broadcast together;
* :func:`basic_indices` – basic indexes for a shape (integers, slices with
  steps, ``...``, ``None``): indexing with one gives a view;
* :func:`indices` – any valid index for a shape: basic, boolean masks
  (whole or over leading axes), integer arrays (on a block of axes, with
  slices around them);
* :func:`programs` – random straight-line numpy programs with reads, views
  and in-place writes. A drawn :class:`Program` has ``.fn`` (runs on plain
  ndarrays and on traced arrays alike and returns a scalar), ``.args``,
  ``.source`` (readable Python to paste into a bug report) and ``.mutates``.
* :func:`fuzz_programs` – programs of the differential fuzzer's much larger
  grammar (:mod:`mutagrad.testing.fuzz`: masks and index arrays mutated
  after use, Python lists of traced values, overlapping in-place functions,
  layouts, dtypes, aliasing, checkpointed blocks), to judge with
  :func:`mutagrad.testing.fuzz.judge`.

Programs are built from smooth operations only (sin, cos, tanh, products,
sums), so central finite differences are an accurate reference. Their
statements are drawn as a list of independent choices, each rendered against
the names defined before it, so hypothesis shrinks a failing program by
deleting statements one at a time: a shrunk counterexample is short.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ModuleNotFoundError as missing:  # say how to get it, not only what is missing
    raise ModuleNotFoundError(
        "mutagrad.testing.strategies needs hypothesis: pip install hypothesis (in a clone "
        "of mutagrad, pip install -e '.[test]' installs it with the other test tools)",
        name=missing.name,
    ) from missing

if TYPE_CHECKING:
    from mutagrad.testing.fuzz import FuzzProgram

__all__ = [
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
) -> st.SearchStrategy[np.ndarray]:
    """Float arrays with finite elements in ``[-magnitude, magnitude]``.

    ``shape`` is a shape or a strategy for one (default: up to 3 dimensions of up to 4).
    """
    if shape is None:
        shape = hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)
    width = np.dtype(dtype).itemsize * 8
    elements = st.floats(
        -magnitude, magnitude, allow_nan=False, allow_infinity=False, width=min(width, 64)
    )
    return hnp.arrays(dtype, shape, elements=elements)


def broadcastable_shapes(
    max_dims: int = 3, max_side: int = 4
) -> st.SearchStrategy[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Two shapes (up to ``max_dims`` axes of 1 to ``max_side``) that broadcast together."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=max_dims, min_side=1, max_side=max_side
    ).map(lambda result: tuple(result.input_shapes))


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


@attrs.frozen
class Program:
    """A drawn program: ``fn(*args)`` returns a scalar; ``source`` is its text."""

    source: str
    args: tuple[np.ndarray, ...]
    mutates: bool
    fn: Callable[..., Any] = attrs.field(repr=False, eq=False)

    @property
    def statements(self) -> list[str]:
        """The body's statements, without the ``def`` line and the final ``return``."""
        return [line.strip() for line in self.source.splitlines()[1:-1]]

    def __str__(self) -> str:
        arrays = ", ".join(np.array2string(a, separator=", ") for a in self.args)
        return f"{self.source}\n# args: {arrays}"


_SHAPES = [(4,), (2, 3), (3, 2)]
# The first entry of each list is where shrinking goes: the simplest choice.
_READS = ["unary", "binary", "reduce", "view", "copy"]
_WRITES = ["setitem", "augmented", "out", "fill", "copyto", "fancy", "view"]
_UNARY = ["np.sin({})", "np.cos({})", "np.tanh({})", "0.5 * {}", "{} * {}", "{} + 1.0"]
_BINARY = ["{} + {}", "{} - {}", "{} * {}"]
_REDUCE = ["np.sum({0})", "np.sum(np.sin({0}))", "np.sum({0} * {0})"]
_SET_VALUES = ["{}", "2.0 * {}", "np.sin({})", "0.25"]
_AUGMENTED = ["+=", "-=", "*="]
_OUT_FUNCTIONS = ["np.sin", "np.tanh", "np.negative"]
_FILL_VALUES = ["0.0", "1.5"]
_VIEW_WRITES = ["*= 2.0", "+= 1.0", "[...] = 0.0"]


def _region_indices(shape: tuple[int, ...]) -> list[str]:
    """Basic index texts selecting parts of ``shape`` (views when they keep an axis)."""
    if len(shape) == 1:
        n = shape[0]
        return ["[1:3]", "[:2]", "[2:]", "[::2]", "[1::2]", "[::-1]", "[0]", f"[{n - 1}]", "[...]"]
    rows = shape[0]
    return ["[0]", f"[{rows - 1}]", "[:, 0]", "[:, 1:]", "[1:]", "[::-1, ::2]", "[0, 1]", "[...]"]


def _view_indices(shape: tuple[int, ...]) -> list[str]:
    """Index texts whose result is a view (never a single element), and ``.T``."""
    element_reads = {"[0, 1]"} if len(shape) == 2 else {"[0]", f"[{shape[0] - 1}]"}
    return [r for r in _region_indices(shape) if r not in element_reads] + [".T"]


def _fancy_indices(shape: tuple[int, ...]) -> list[str]:
    if len(shape) == 1:
        last = shape[0] - 1
        return ["[[0, 2]]", f"[[{last}, 1, 0]]", "[[1, 1]]"]
    rows, cols = shape
    return [f"[[0, {rows - 1}], [{cols - 1}, 0]]", "[[1, 0, 1], [0, 1, 1]]"]


@attrs.frozen
class _Choices:
    """The random choices of one statement, rendered against the names defined before it.

    ``picks`` select names (modulo how many exist) and ``options`` entries of
    the vocabulary lists, so any list of choices renders to a valid program.
    """

    writes: bool
    kind: str
    picks: tuple[int, int]
    options: tuple[int, int]


@st.composite
def _statement_choices(draw: st.DrawFn, mutate_probability: float) -> _Choices:
    # Few choices per statement: hypothesis deletes short spans of choices more
    # reliably, so two selectors are packed into one integer each.
    writes = draw(st.floats(0, 1)) < mutate_probability  # shrinks to 0.0: a write
    kind = draw(st.sampled_from(_WRITES if writes else _READS))
    picks = draw(st.integers(0, 63))
    options = draw(st.integers(0, 255))
    return _Choices(writes, kind, (picks % 8, picks // 8), (options % 16, options // 16))


class _Renderer:
    """Turns statement choices into source lines, tracking the names each line defines."""

    def __init__(self, shape: tuple[int, ...], n_inputs: int):
        self.shape = shape
        self.arrays = [f"a{i}" for i in range(n_inputs)]  # names holding arrays of ``shape``
        self.views: list[str] = []
        self.scalars: list[str] = []
        self.lines: list[str] = []
        self.regions = _region_indices(shape)

    def render(self, k: int, c: _Choices) -> None:
        def option(values: list[str], which: int = 0) -> str:
            return values[c.options[which] % len(values)]

        first = self.arrays[c.picks[0] % len(self.arrays)]
        second = self.arrays[c.picks[1] % len(self.arrays)]
        if not c.writes:
            self._render_read(k, c.kind, first, second, option)
        else:
            self._render_write(c.kind, first, second, option, c.picks[0])

    def _render_read(self, k: int, kind: str, first: str, second: str, option: Any) -> None:
        if kind == "unary":
            self.lines.append(f"t{k} = " + option(_UNARY).format(first, first))
            self.arrays.append(f"t{k}")
        elif kind == "binary":
            self.lines.append(f"t{k} = " + option(_BINARY).format(first, second))
            self.arrays.append(f"t{k}")
        elif kind == "reduce":
            region = f"{first}{option(self.regions, 1)}"
            self.lines.append(f"s{k} = " + option(_REDUCE).format(region))
            self.scalars.append(f"s{k}")
        elif kind == "view":
            self.lines.append(f"v{k} = {first}{option(_view_indices(self.shape))}")
            self.views.append(f"v{k}")
        else:
            self.lines.append(f"t{k} = {first}.copy()")
            self.arrays.append(f"t{k}")

    def _render_write(self, kind: str, target: str, source: str, option: Any, pick: int) -> None:
        if kind == "setitem":
            index = option(self.regions, 1)
            self.lines.append(
                f"{target}{index} = " + option(_SET_VALUES).format(f"{source}{index}")
            )
        elif kind == "augmented":
            index = option(["", *self.regions], 1)
            value = f"{source}{index}" if pick % 2 == 0 else "0.5"
            self.lines.append(f"{target}{index} {option(_AUGMENTED)} {value}")
        elif kind == "out":
            self.lines.append(f"{option(_OUT_FUNCTIONS)}({source}, out={target})")
        elif kind == "fill":
            self.lines.append(f"{target}.fill({option(_FILL_VALUES)})")
        elif kind == "copyto":
            self.lines.append(f"np.copyto({target}, 0.5 * {source})")
        elif kind == "fancy":
            index = option(_fancy_indices(self.shape))
            self.lines.append(f"{target}{index} = np.cos({source}{index})")
        else:  # a write through a view: one taken earlier, or a new one
            if self.views and pick % 2 == 0:
                view = self.views[pick // 2 % len(self.views)]
            else:
                view = f"w{len(self.lines)}"
                self.lines.append(f"{view} = {target}{option(_view_indices(self.shape), 1)}")
                self.views.append(view)
            operation = option(_VIEW_WRITES)
            self.lines.append(
                f"{view}{operation}" if operation.startswith("[") else f"{view} {operation}"
            )

    def source(self, n_inputs: int) -> str:
        total = " + ".join([*self.scalars, *(f"np.sum(np.tanh({a}))" for a in self.arrays)])
        params = ", ".join(f"a{i}" for i in range(n_inputs))
        body = "\n".join([*self.lines, f"return {total}"])
        return f"def program({params}):\n" + textwrap.indent(body, "    ")


@st.composite
def programs(
    draw: st.DrawFn,
    min_inputs: int = 1,
    max_inputs: int = 3,
    max_statements: int = 8,
    mutate_probability: float = 0.7,
) -> Program:
    """A random straight-line numpy program over ``min_inputs`` to ``max_inputs`` input arrays.

    Statements read (elementwise functions, products, region reductions),
    take views, and write in place (setitem on slices, rows, elements and
    advanced indexes, augmented operators, ``out=``, ``fill``, ``np.copyto``,
    writes through views). ``mutate_probability`` is the chance that each
    statement writes; most drawn programs mutate. The program returns the sum
    of every scalar it computed and of ``tanh`` of every array it holds.
    """
    shape = draw(st.sampled_from(_SHAPES))
    n_inputs = draw(st.integers(min_inputs, max_inputs))
    choices = draw(
        st.lists(_statement_choices(mutate_probability), min_size=1, max_size=max_statements)
    )
    renderer = _Renderer(shape, n_inputs)
    for k, c in enumerate(choices):
        renderer.render(k, c)
    source = renderer.source(n_inputs)
    # The arrays come last, so that shrinking their values never reshuffles the statements.
    args = tuple(draw(float_arrays(shape, magnitude=2.0)) for _ in range(n_inputs))
    namespace: dict[str, Any] = {"np": np}
    exec(compile(source, "<mutagrad program>", "exec"), namespace)
    mutates = any(c.writes for c in choices)
    return Program(source, args, mutates, namespace["program"])


@st.composite
def fuzz_programs(draw: st.DrawFn, max_statements: int = 10) -> FuzzProgram:
    """A program of the differential fuzzer's grammar (see :mod:`mutagrad.testing.fuzz`).

    Draws a :class:`~mutagrad.testing.fuzz.Blueprint` and renders it. Every
    statement is one drawn tuple, so hypothesis shrinks a failing program by
    deleting statements, and towards one argument, the first shape and the
    simplest choice of each statement. The fuzzer (and the report's time
    limit it uses) is imported on the first draw, not with this module.
    """
    from mutagrad.testing import fuzz

    choice = st.integers(0, fuzz.CHOICE_RANGE - 1)
    step = st.tuples(st.integers(0, len(fuzz.STEP_KINDS) - 1), *[choice] * fuzz.CHOICES_PER_STEP)
    values = st.integers(0, len(fuzz.VALUE_GRID) - 1)
    blueprint = fuzz.Blueprint(
        setup=draw(st.integers(0, len(fuzz.SETUPS) - 1)),
        shape=draw(st.integers(0, len(fuzz.SHAPES) - 1)),
        steps=tuple(draw(st.lists(step, min_size=1, max_size=max_statements))),
        ending=draw(st.integers(0, fuzz.ENDING_COUNT - 1)),
        values=tuple(draw(st.lists(values, min_size=fuzz.VALUE_COUNT, max_size=fuzz.VALUE_COUNT))),
    )
    return fuzz.render(blueprint)
