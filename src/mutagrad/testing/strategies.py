"""Hypothesis strategies for testing differentiation of numpy code, mutating code included.

* :func:`float_arrays` – float arrays of bounded magnitude;
* :func:`broadcastable_shapes` – pairs of shapes that broadcast together;
* :func:`basic_indices`, :func:`indices` – valid index expressions for a shape;
* :func:`programs` – random straight-line numpy programs with reads, views and
  in-place writes. A drawn :class:`Program` has ``.fn`` (runs on plain ndarrays
  and on traced arrays alike and returns a scalar), ``.args``, ``.source``
  (readable Python to paste into a bug report) and ``.mutates``.

Programs are built from smooth operations only (sin, cos, tanh, products,
sums), so central finite differences are an accurate reference. Hypothesis
shrinks a failing program to a short one.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

__all__ = [
    "Program",
    "basic_indices",
    "broadcastable_shapes",
    "float_arrays",
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
    elements = st.floats(-magnitude, magnitude, allow_nan=False, allow_infinity=False, width=64)
    return hnp.arrays(dtype, shape, elements=elements)


def broadcastable_shapes(
    max_dims: int = 3, max_side: int = 4
) -> st.SearchStrategy[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Two shapes that numpy broadcasts together."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=max_dims, min_side=1, max_side=max_side
    ).map(lambda result: tuple(result.input_shapes))


def basic_indices(shape: tuple[int, ...]) -> st.SearchStrategy[Any]:
    """Basic indexes (integers, slices with steps, ``...``, ``None``) valid for ``shape``."""
    return hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True)


@st.composite
def _integer_array_index(draw: st.DrawFn, shape: tuple[int, ...]) -> Any:
    axes = draw(st.integers(1, len(shape)))
    n = draw(st.integers(1, 4))
    return tuple(
        np.array(draw(st.lists(st.integers(-side, side - 1), min_size=n, max_size=n)))
        for side in shape[:axes]
    )


def indices(shape: tuple[int, ...]) -> st.SearchStrategy[Any]:
    """Any valid index for a non-empty ``shape``: basic, integer, boolean mask or advanced."""
    options = [basic_indices(shape)]
    if shape and all(shape):
        options.append(hnp.arrays(bool, shape))
        options.append(_integer_array_index(shape))
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

    def __str__(self) -> str:
        arrays = ", ".join(np.array2string(a, separator=", ") for a in self.args)
        return f"{self.source}\n# args: {arrays}"


_SHAPES = [(4,), (2, 3), (3, 2)]
_UNARY = ["np.sin({})", "np.cos({})", "np.tanh({})", "0.5 * {}", "{} * {}", "{} + 1.0"]
_BINARY = ["{} + {}", "{} - {}", "{} * {}"]
_AUGMENTED = ["+=", "-=", "*="]


def _region_indices(shape: tuple[int, ...]) -> list[str]:
    """Basic index texts selecting parts of ``shape`` (views when they keep an axis)."""
    if len(shape) == 1:
        n = shape[0]
        return ["[1:3]", "[:2]", "[2:]", "[::2]", "[1::2]", "[::-1]", "[0]", f"[{n - 1}]", "[...]"]
    rows = shape[0]
    return ["[0]", f"[{rows - 1}]", "[:, 0]", "[:, 1:]", "[1:]", "[::-1, ::2]", "[0, 1]", "[...]"]


def _fancy_indices(shape: tuple[int, ...]) -> list[str]:
    if len(shape) == 1:
        last = shape[0] - 1
        return ["[[0, 2]]", f"[[{last}, 1, 0]]", "[[1, 1]]"]
    rows, cols = shape
    return [f"[[0, {rows - 1}], [{cols - 1}, 0]]", "[[1, 0, 1], [0, 1, 1]]"]


@st.composite
def programs(
    draw: st.DrawFn,
    min_inputs: int = 1,
    max_inputs: int = 3,
    max_statements: int = 8,
    mutate_probability: float = 0.7,
) -> Program:
    """A random straight-line numpy program over one to three input arrays.

    Statements read (elementwise functions, products, region reductions),
    take views, and write in place (setitem on slices, rows, elements and
    advanced indexes, augmented operators, ``out=``, ``fill``, ``np.copyto``,
    writes through views). ``mutate_probability`` is the chance that each
    statement writes; most drawn programs mutate.
    """
    shape = draw(st.sampled_from(_SHAPES))
    n_inputs = draw(st.integers(min_inputs, max_inputs))
    args = tuple(draw(float_arrays(shape, magnitude=2.0)) for _ in range(n_inputs))
    arrays = [f"a{i}" for i in range(n_inputs)]  # names holding arrays of ``shape``
    views: list[tuple[str, str]] = []  # (name, index it was taken with)
    scalars: list[str] = []
    lines: list[str] = []
    mutates = False
    regions = _region_indices(shape)
    n_statements = draw(st.integers(1, max_statements))

    def pick(names: list[Any]) -> Any:
        return draw(st.sampled_from(names))

    for k in range(n_statements):
        writes = draw(st.floats(0, 1)) < mutate_probability
        if not writes:
            kind = draw(st.sampled_from(["unary", "binary", "reduce", "view", "copy"]))
            if kind == "unary":
                lines.append(f"t{k} = " + draw(st.sampled_from(_UNARY)).format(*[pick(arrays)] * 2))
                arrays.append(f"t{k}")
            elif kind == "binary":
                lines.append(
                    f"t{k} = " + draw(st.sampled_from(_BINARY)).format(pick(arrays), pick(arrays))
                )
                arrays.append(f"t{k}")
            elif kind == "reduce":
                a, index = pick(arrays), draw(st.sampled_from(regions))
                expr = draw(
                    st.sampled_from(["np.sum(np.sin({0}))", "np.sum({0} * {0})", "np.sum({0})"])
                )
                lines.append(f"s{k} = " + expr.format(f"{a}{index}"))
                scalars.append(f"s{k}")
            elif kind == "view":
                a = pick(arrays)
                index = draw(st.sampled_from([r for r in regions if r not in ("[0, 1]",)] + [".T"]))
                if len(shape) == 1 and index in ("[0]", f"[{shape[0] - 1}]"):
                    index = "[1:3]"  # an element read is a copy, not a view
                lines.append(f"v{k} = {a}{index}")
                views.append((f"v{k}", index))
            else:
                lines.append(f"t{k} = {pick(arrays)}.copy()")
                arrays.append(f"t{k}")
            continue
        mutates = True
        kind = draw(
            st.sampled_from(["setitem", "augmented", "out", "fill", "copyto", "fancy", "view"])
        )
        target, source = pick(arrays), pick(arrays)
        if kind == "setitem":
            index = draw(st.sampled_from(regions))
            value = draw(st.sampled_from(["{}", "2.0 * {}", "np.sin({})", "0.25"]))
            lines.append(f"{target}{index} = " + value.format(f"{source}{index}"))
        elif kind == "augmented":
            index = draw(st.sampled_from(["", *regions]))
            op = draw(st.sampled_from(_AUGMENTED))
            value = draw(st.sampled_from([f"{source}{index}", "0.5"]))
            lines.append(f"{target}{index} {op} {value}")
        elif kind == "out":
            function = draw(st.sampled_from(["np.sin", "np.tanh", "np.negative"]))
            lines.append(f"{function}({source}, out={target})")
        elif kind == "fill":
            lines.append(f"{target}.fill({draw(st.sampled_from(['0.0', '1.5']))})")
        elif kind == "copyto":
            lines.append(f"np.copyto({target}, 0.5 * {source})")
        elif kind == "fancy":
            index = draw(st.sampled_from(_fancy_indices(shape)))
            lines.append(f"{target}{index} = np.cos({source}{index})")
        elif views:
            view, _ = pick(views)
            op = draw(st.sampled_from(["*= 2.0", "+= 1.0", "[...] = 0.0"]))
            lines.append(f"{view}{op}" if op.startswith("[") else f"{view} {op}")
        else:
            lines.append(f"{target}[...] = {source}")
    total = " + ".join([*scalars, *(f"np.sum(np.tanh({a}))" for a in arrays)])
    lines.append(f"return {total}")
    params = ", ".join(f"a{i}" for i in range(n_inputs))
    source = f"def program({params}):\n" + textwrap.indent("\n".join(lines), "    ")
    namespace: dict[str, Any] = {"np": np}
    exec(compile(source, "<mutagrad program>", "exec"), namespace)
    return Program(source, args, mutates, namespace["program"])
