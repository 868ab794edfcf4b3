"""Differential fuzzing: random mutating numpy programs whose gradients are judged against numpy.

mutagrad promises that a gradient is the true one or a
:class:`mutagrad.MutagradError`. This module hunts for the third possibility,
a silently wrong number:

* :func:`generate` draws a :class:`Blueprint` (a few lists of integers) from a
  ``random.Random``, and :func:`render` turns any blueprint into a
  :class:`FuzzProgram`: Python source for ``f(x)`` or ``f(x, y)`` over float64
  arrays, returning a float, plus the input arrays. The grammar covers reads,
  reductions with ``where=``/``initial=``, views (steps, negative steps, ``.T``,
  reshape, diagonal), layouts (``order='F'`` copies, ``np.asfortranarray``,
  ``[::-1]``), every in-place path (setitem through slices, masks and repeated
  fancy indexes, augmented operators, Python lists and tuples of traced
  values, ``np.copyto``, ``np.put``, ``np.place``, ``np.putmask``,
  ``np.fill_diagonal``, ``np.put_along_axis``, ``ufunc.at``, ``out=`` aliasing
  an input, ``.sort()``, ``.partition()``, ``.fill()``), masks, index arrays
  and constants that pullbacks read and that are mutated afterwards, float32,
  int, bool and complex intermediates, views of the caller's array made
  outside ``f`` and written inside it, arguments that share memory,
  ``mutagrad.checkpointed`` blocks that write their argument, and what a
  program asks Python rather than numpy: ``isinstance``/``np.isscalar``
  branches on arrays and elements, the ``np.asarray`` guard of library code,
  builtins on elements (``round``, ``math.floor``, ``divmod``, formatting),
  work in a thread ``f`` starts, container arguments (OrderedDict,
  defaultdict, namedtuple, dataclass) and masked-array arguments.
  :func:`mutagrad.testing.strategies.fuzz_programs` draws blueprints with
  hypothesis instead.
* :func:`judge` is the oracle. It runs the program on plain ndarrays (the
  reference; a program numpy rejects, or one that is not smooth at its input,
  is discarded), then ``mutagrad.withgradient`` in each mode, and classifies
  each call as ``right``, ``refused`` (a MutagradError), ``WRONG`` (a value, a
  gradient or the caller's arrays differ) or ``crash`` (any other exception).
* :func:`minimise` deletes statements from a WRONG or crashing program while
  it keeps failing the same way.
* ``python -m mutagrad.testing.fuzz --count N --seed S [--jobs J] [--out FILE]``
  judges N random programs, prints the outcomes per mode and the source of
  every WRONG and crashing program (minimised), and writes those to FILE.

Programs are built so that central finite differences are a reliable
reference: smooth operations, input elements drawn from a grid that keeps
them apart from each other, from zero and from the thresholds the programs
compare with, and two step sizes whose estimates must agree.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import functools
import random
import sys
import textwrap
import threading
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import numpy as np

import mutagrad
from mutagrad.core import modes
from mutagrad.testing import arguments
from mutagrad.testing.finite_differences import numerical_gradient
from mutagrad.testing.limits import ProgramTimeout, isolated, time_limit

__all__ = [
    "MODES",
    "Blueprint",
    "FuzzFigures",
    "FuzzProgram",
    "ModeResult",
    "Outcome",
    "Verdict",
    "fuzz_figures",
    "generate",
    "judge",
    "main",
    "minimise",
    "render",
]

MODES: tuple[str, ...] = tuple(modes.MODES)

# ---------------------------------------------------------------------------
# Blueprints: the random choices of one program.

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

_KIND_WEIGHTS: dict[str, int] = {
    # reads
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
    "new buffer": 4,
    "new mask": 3,
    "new index": 2,
    "new constant": 2,
    "use constant": 2,
    # writes
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
    # what a program asks Python rather than numpy
    "type branch": 3,
    "normalising helper": 2,
    "builtin on element": 2,
    "thread": 1,
}
#: Statement kinds, each repeated by its weight; a step's first integer indexes this.
STEP_KINDS: tuple[str, ...] = tuple(k for k, w in _KIND_WEIGHTS.items() for _ in range(w))


@attrs.frozen
class Blueprint:
    """The random choices of one program; :func:`render` reads any blueprint as a valid program.

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


def generate(rng: random.Random, max_statements: int = 10) -> FuzzProgram:
    """A random program: a blueprint drawn from ``rng``, rendered."""

    def step() -> tuple[int, ...]:
        kind = rng.randrange(len(STEP_KINDS))
        return (kind, *(rng.randrange(CHOICE_RANGE) for _ in range(CHOICES_PER_STEP)))

    blueprint = Blueprint(
        setup=rng.randrange(len(SETUPS)),
        shape=rng.randrange(len(SHAPES)),
        steps=tuple(step() for _ in range(rng.randint(1, max_statements))),
        ending=rng.randrange(ENDING_COUNT),
        values=tuple(rng.randrange(len(VALUE_GRID)) for _ in range(VALUE_COUNT)),
    )
    return render(blueprint)


# ---------------------------------------------------------------------------
# Programs.


_PROGRAM_FILENAME = "<fuzz program>"


# What a program may use besides numpy: the modules its Python-facing statements need.
_PROGRAM_IMPORTS = (
    "import dataclasses, functools, math, numbers, threading",
    "from collections import OrderedDict, defaultdict, namedtuple",
    "from concurrent.futures import ThreadPoolExecutor",
)


@functools.lru_cache(maxsize=256)
def _namespace(source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"np": np, "mutagrad": mutagrad}
    exec("\n".join(_PROGRAM_IMPORTS), namespace)
    exec(compile(source, _PROGRAM_FILENAME, "exec"), namespace)
    return namespace


@attrs.frozen
class FuzzProgram:
    """A generated program and how to call it.

    ``source`` defines ``f``, or ``make(a0, ...)`` returning ``(f, args)`` when
    the arguments are made from the inputs (views, aliases, layouts) or ``f``
    closes over views made before the call. ``inputs`` are the float64 arrays
    that finite differences perturb; ``argument_sources[i]`` is the input that
    argument ``i`` views or copies (``None``: no derivative, a mask or an
    index). ``writes_caller_memory``: ``f`` writes the caller's array through
    a view made outside it, as numpy's own run does too. ``low_precision``:
    float32 values limit the accuracy of the finite differences. ``tags``
    name the setup and the statement kinds.
    """

    source: str
    inputs: tuple[np.ndarray, ...] = attrs.field(eq=False)
    argument_sources: tuple[int | None, ...]
    writes_caller_memory: bool = False
    low_precision: bool = False
    tags: tuple[str, ...] = ()
    blueprint: Blueprint | None = attrs.field(default=None, repr=False)

    def build(self, inputs: Sequence[np.ndarray]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        """``(f, args)`` over ``inputs`` (the caller's arrays: fresh copies of :attr:`inputs`)."""
        namespace = _namespace(self.source)
        if "make" in namespace:
            f, args = namespace["make"](*inputs)
            return f, tuple(args)
        return namespace["f"], tuple(inputs)

    def fresh_inputs(self) -> list[np.ndarray]:
        return [x.copy() for x in self.inputs]

    def script(self, mode: str = "poison") -> str:
        """A self-contained script that reproduces the program under ``mode``."""
        names = [f"a{k}" for k in range(len(self.inputs))]
        assignments = [f"{name} = np.array({x.tolist()!r})" for name, x in zip(names, self.inputs)]
        call = (
            f"f, args = make({', '.join(names)})"
            if "def make" in self.source
            else f"args = ({', '.join(names)},)"
        )
        return "\n".join(
            [
                "import numpy as np",
                "import mutagrad",
                *_PROGRAM_IMPORTS,
                "",
                self.source,
                "",
                *assignments,
                call,
                f'print(mutagrad.withgradient(f, *args, mode="{mode}"))',
            ]
        )

    def __str__(self) -> str:
        inputs = ", ".join(f"a{k} = {x.tolist()}" for k, x in enumerate(self.inputs))
        return f"{self.source}\n# inputs: {inputs}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """How IPython and hypothesis print a program: its source and inputs."""
        printer.text(str(self))


# ---------------------------------------------------------------------------
# Rendering.

_REAL = ("f8", "f4")
_FLOATING = ("f8", "f4", "c16")
_FULL = slice(None)
#: Setups whose two arguments share memory: the arguments, and the input's
#: shape if they need one (``None``: the drawn shape).
_SHARED_MEMORY_ARGUMENTS: dict[str, tuple[list[str], tuple[int, ...] | None]] = {
    "the same array twice": (["a0", "a0"], None),
    "overlapping slices": (["a0[:4]", "a0[2:]"], (6,)),
    "array and its transpose": (["a0", "a0.T"], (3, 3)),
    "array and its reverse": (["a0", "a0[::-1]"], (5,)),
}


@attrs.define
class _Var:
    """A name the program defines, with what the grammar needs to know about it.

    ``role``: "array" (float, complex or int data), "scalar" (a real number),
    "mask", "index" (an int array of positions below ``bound``), "constant" (a
    raw float array), "outside" (a view of the caller's array made before the
    call). ``shape`` is ``None`` when it depends on the data (a masked read).
    """

    name: str
    shape: tuple[int, ...] | None
    dtype: str
    role: str = "array"
    writable: bool = True
    argument_memory: bool = False
    view: bool = False
    bound: int = 0


def _key_text(key: Any) -> str:
    if key is Ellipsis:
        return "[...]"
    parts = key if isinstance(key, tuple) else (key,)
    return "[" + ", ".join(_part_text(p) for p in parts) + "]"


def _part_text(part: Any) -> str:
    if isinstance(part, slice):
        start = "" if part.start is None else str(part.start)
        stop = "" if part.stop is None else str(part.stop)
        return f"{start}:{stop}" + ("" if part.step is None else f":{part.step}")
    return str(part)


def _valid_keys(shape: tuple[int, ...], keys: list[Any]) -> list[tuple[Any, tuple[int, ...]]]:
    """The ``keys`` that index an array of ``shape`` and select something, with the shapes."""
    probe = np.empty(shape)
    valid = []
    for key in keys:
        try:
            selected = probe[key]
        except IndexError:
            continue
        if np.size(selected):
            valid.append((key, np.shape(selected)))
    return valid


@functools.cache
def _regions(shape: tuple[int, ...]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """(index text, result shape) of the non-empty basic indexes used on arrays of ``shape``."""
    reverse = slice(None, None, -1)
    if len(shape) == 1:
        keys: list[Any] = [
            *(Ellipsis, 0, -1, 1),
            *(slice(1, 3), slice(None, 2), slice(2, None), slice(None, None, 2)),
            *(slice(1, None, 2), reverse, slice(None, None, -2)),
            *(slice(-2, None, -1), slice(None, -1), slice(1, None)),
        ]
    elif len(shape) == 2:
        keys = [
            *(Ellipsis, 0, -1, (0, 1), (-1, 0), (_FULL, 0), (_FULL, slice(1, None))),
            *(slice(1, None), (reverse, slice(None, None, 2)), reverse, (_FULL, reverse)),
            *((1, slice(None, 2)), (slice(None, 2), slice(None, 2)), (reverse, -1)),
        ]
    else:
        keys = [Ellipsis]
    return tuple((_key_text(key), region) for key, region in _valid_keys(shape, keys))


def _fancy_keys(shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
    """Advanced indexes with repeated positions, and the shapes they select."""
    if len(shape) == 1:
        n = shape[0]
        keys: list[Any] = [[0, 2, 0], [n - 1, 1], [1, 1], [-1, 0, -1]]
    elif len(shape) == 2:
        rows, cols = shape
        keys = [([0, rows - 1], [cols - 1, 0]), ([1, 0, 1], [0, 1, 0]), [1, 0, 1], ([0, 0], [1, 1])]
    else:
        keys = []
    return [(_fancy_text(key), region) for key, region in _valid_keys(shape, keys)]


def _fancy_text(key: Any) -> str:
    return "[" + (", ".join(map(str, key)) if isinstance(key, tuple) else str(key)) + "]"


def _literal(values: Sequence[Any], shape: tuple[int, ...]) -> str:
    """``np.array([...])`` of ``values`` laid out in ``shape``."""
    return f"np.array({np.array(values).reshape(shape).tolist()!r})"


def _probe(expression: str, shape: tuple[int, ...]) -> np.ndarray | None:
    """What ``expression`` (written in terms of ``a``) gives for a C-ordered ``a`` of ``shape``.

    ``None`` when numpy raises. The result tells the shape, the dtype, whether
    numpy returns a view (memory shared with ``a``) and whether it is writable.
    """
    a = np.arange(1.0, 1.0 + int(np.prod(shape))).reshape(shape)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(eval(expression, {"np": np, "a": a}))
    except Exception:
        return None


def _promote(*dtypes: str) -> str:
    if "c16" in dtypes:
        return "c16"
    return "f4" if all(d == "f4" for d in dtypes) else "f8"


class _Draw:
    """The integers of one step, read in turn to make that step's choices."""

    def __init__(self, numbers: Sequence[int]):
        self._numbers = list(numbers) or [0]
        self._next = 0

    def number(self) -> int:
        n = self._numbers[self._next % len(self._numbers)]
        self._next += 1
        return n

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.number() % len(options)]

    def chance(self, percent: int) -> bool:
        return self.number() % 100 < percent


class _Renderer:
    """Turns a blueprint into source lines, tracking the names each line defines."""

    def __init__(self, blueprint: Blueprint):
        self.blueprint = blueprint
        self.vars: list[_Var] = []
        self.lines: list[str] = []  # the body of f
        self.outside: list[str] = []  # make's lines before ``def f``
        self.keywords: dict[str, str] = {}  # f's keyword arguments, bound by make
        self.tags: list[str] = []
        self.counter = 0
        self.writes_caller_memory = False
        self._setup(SETUPS[blueprint.setup % len(SETUPS)], SHAPES[blueprint.shape % len(SHAPES)])

    # -- names --------------------------------------------------------------

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _define(self, prefix: str, expression: str, shape: Any, dtype: str, **fields: Any) -> _Var:
        var = _Var(self._name(prefix), shape, dtype, **fields)
        self.lines.append(f"{var.name} = {expression}")
        self.vars.append(var)
        return var

    def _find(
        self,
        roles: tuple[str, ...] = ("array",),
        dtypes: tuple[str, ...] = _FLOATING,
        shape: Any = None,
        known: bool = True,
        writable: bool = False,
        ndim: int | None = None,
    ) -> list[_Var]:
        found = []
        for v in self.vars:
            if v.role not in roles or v.dtype not in dtypes:
                continue
            if (known or shape is not None or ndim is not None) and v.shape is None:
                continue
            if v.shape is not None and (0 in v.shape or len(v.shape) > 2):
                continue  # empty, or more axes than the statements know how to index
            if shape is not None and v.shape != shape:
                continue
            if ndim is not None and v.shape is not None and len(v.shape) != ndim:
                continue
            if writable and not self._may_write(v):
                continue
            found.append(v)
        return found

    def _may_write(self, v: _Var) -> bool:
        # With a view of the caller's array written inside f, the caller's
        # arrays are only ever written through that view (see FuzzProgram).
        return v.writable and not (self.outside_views and v.argument_memory)

    @property
    def outside_views(self) -> list[_Var]:
        return [v for v in self.vars if v.role == "outside"]

    # -- setups ---------------------------------------------------------------

    def _setup(self, setup: str, shape: tuple[int, ...]) -> None:
        self.tags.append(setup)
        inputs = 1
        params = ["x"]
        arguments = ["a0"]
        sources: list[int | None] = [0]
        if setup == "two arguments":
            inputs, params, arguments, sources = 2, ["x", "y"], ["a0", "a1"], [0, 1]
        elif setup in _SHARED_MEMORY_ARGUMENTS:
            arguments, needed_shape = _SHARED_MEMORY_ARGUMENTS[setup]
            shape = needed_shape or shape
            params, sources = ["x", "y"], [0, 0]
        elif setup == "non-C layout":
            layouts = (
                ["np.asfortranarray(a0)", "np.copy(a0, order='F')", "a0.T", "a0[:, ::-1]"]
                if len(shape) == 2
                else ["a0[::-1]", "a0[::2]", "a0[1:]"]
            )
            arguments = [layouts[self.blueprint.values[0] % len(layouts)]]
            if arguments[0] == "a0[::2]":
                shape = (6,)
        elif setup == "float32 argument":
            arguments = ["a0.astype(np.float32)"]
        elif setup == "mask argument":
            # A boolean argument has no derivative, and a gradient call refuses it
            # positionally: the mask comes as a keyword, as users pass it (bound by
            # make, so that each call gets a fresh mask to mutate).
            params, sources = ["x", "m"], [0]
            self.keywords["m"] = self._mask_literal(shape, self.blueprint.values[1])
        elif setup == "index argument":
            params, sources = ["x", "k"], [0, None]
            picks = [self.blueprint.values[k] % shape[0] for k in range(3)]
            arguments = ["a0", f"np.array({picks})"]
        elif setup == "container argument":
            # The array reaches f inside a container: a pytree that gradients mirror.
            forms = [
                ("", "OrderedDict(w=a0)", 'p["w"]'),
                ("", "defaultdict(list, w=a0)", 'p["w"]'),
                ('Pair = namedtuple("Pair", "w c")', "Pair(a0, 1.0)", "p.w"),
                ("@dataclasses.dataclass\nclass Holder:\n    w: object\n    c: float = 1.0",
                 "Holder(a0)", "p.w"),
            ]  # fmt: skip
            definition, container, access = forms[self.blueprint.values[0] % len(forms)]
            if definition:
                self.outside.append(definition)
            params, arguments = ["p"], [container]
            self.lines.append(f"x = {access}")
        elif setup == "masked argument":
            # An ndarray subclass whose operations differ from a plain array's: refused.
            mask = self._mask_literal(shape, self.blueprint.values[1])
            arguments = [f"np.ma.array(a0, mask=~{mask})"]
        self.shape = shape
        self.n_inputs = inputs
        self.params = params
        self.arguments = arguments
        self.argument_sources = tuple(sources)
        probe = [np.zeros(shape) for _ in range(inputs)]
        for name, argument, source in zip(params, arguments, sources):
            if setup == "container argument":
                self.vars.append(_Var("x", shape, "f8", argument_memory=True))
                continue
            if source is None:
                if name == "m":
                    self.vars.append(_Var("m", shape, "b1", role="mask"))
                else:
                    self.vars.append(_Var("k", (3,), "i8", role="index", bound=shape[0]))
                continue
            value = eval(argument, {"np": np, "a0": probe[0], "a1": probe[-1]})
            dtype = "f4" if value.dtype == np.float32 else "f8"
            self.vars.append(_Var(name, value.shape, dtype, argument_memory=True))
        if setup == "mask argument":
            self.vars.append(_Var("m", shape, "b1", role="mask"))
        if setup == "views made outside f":
            views = ["a0[:]", "a0[::2]", "a0.T", "a0.reshape(-1)", "a0[1:]", "a0[::-1]"]
            for k in range(1 + self.blueprint.values[2] % 2):
                view = views[self.blueprint.values[3 + k] % len(views)]
                name = f"o{k}"
                self.outside.append(f"{name} = {view}")
                view_shape = eval(view, {"a0": probe[0]}).shape
                self.vars.append(_Var(name, view_shape, "f8", role="outside"))

    def _mask_literal(self, shape: tuple[int, ...], seed: int) -> str:
        """A constant mask with at least one True and (from two elements on) one False."""
        size = int(np.prod(shape))
        bits = [bool(seed >> k & 1) for k in range(size)]
        first = seed % size
        bits[first] = True
        if size > 1:
            bits[(first + 1 + (seed >> 8) % (size - 1)) % size] = False
        return _literal(bits, shape)

    # -- operands -------------------------------------------------------------

    def _operand(self, d: _Draw, shape: tuple[int, ...], dtypes: tuple[str, ...] = _REAL) -> str:
        """A value of ``shape``: a region of some array, a scalar, or a constant."""
        candidates = [
            (v.name + text, v.dtype)
            for v in self._find(dtypes=dtypes)
            for text, region_shape in self._regions_of(v)
            if region_shape == shape
        ]
        choice = d.number() % 10
        if choice < 7 and candidates:
            text = d.pick(candidates)[0]
            return d.pick(["{0}", "{0}", "np.sin({0})", "2.0 * {0}", "{0} * {0}"]).format(text)
        scalars = self._find(("scalar",), dtypes=_REAL)
        if choice < 9 and scalars:
            return d.pick(scalars).name
        return d.pick(["0.5", "1.25", "-0.75"])

    def _regions_of(self, v: _Var) -> tuple[tuple[str, tuple[int, ...]], ...]:
        if not v.shape:
            return (("", ()),) if v.shape == () else ()
        return (("", v.shape), *_regions(v.shape))

    def _scalar(self, d: _Draw) -> str:
        """A traced real scalar: a scalar name or an element of a real array, else a constant."""
        scalars = [v.name for v in self._find(("scalar",), dtypes=_REAL)]
        elements = [
            v.name + text
            for v in self._find(dtypes=("f8",))
            for text, shape in self._regions_of(v)
            if shape == () and text
        ]
        options = scalars + elements
        return d.pick(options) if options and d.chance(85) else d.pick(["0.5", "2.0"])

    def _mask_for(self, d: _Draw, shape: tuple[int, ...]) -> _Var:
        """A mask of ``shape``: one defined before, or a new constant one."""
        masks = self._find(("mask",), dtypes=("b1",), shape=shape)
        if masks and d.chance(70):
            return d.pick(masks)
        return self._define("m", self._mask_literal(shape, d.number()), shape, "b1", role="mask")

    # -- reads ----------------------------------------------------------------

    def _pick_array(
        self, d: _Draw, dtypes: tuple[str, ...] = _REAL, **criteria: Any
    ) -> _Var | None:
        found = self._find(dtypes=dtypes, **criteria)
        return d.pick(found) if found else None

    def step_unary(self, d: _Draw) -> bool:
        a = self._pick_array(d, _FLOATING, known=False)
        if a is None:
            return False
        text, shape = a.name, a.shape
        if a.shape and d.chance(40):
            region, shape = d.pick(_regions(a.shape))
            text += region
        if a.dtype == "c16":
            forms = [
                "{0} * {0}",
                "0.5 * {0} + 0.25",
                "np.exp(0.3 * {0})",
                "{0} * 1j",
                "np.conj({0})",
            ]
        else:
            forms = [
                *("np.sin({0})", "np.cos({0})", "np.tanh({0})", "0.5 * {0} + 0.25", "{0} * {0}"),
                *("np.exp(0.3 * {0})", "np.sqrt({0} * {0} + 1.0)", "np.log1p({0} * {0})"),
                *("np.square({0})", "-{0}", "np.abs({0})", "{0}.clip(-1.0, 1.0)", "np.arctan({0})"),
            ]
        prefix = "s" if shape == () else "t"
        role = "scalar" if shape == () and a.dtype != "c16" else "array"
        if shape == () and role == "array":
            shape = None  # a complex number: kept as an array-like value
        self._define(prefix, d.pick(forms).format(text), shape, a.dtype, role=role)
        return True

    def step_binary(self, d: _Draw) -> bool:
        a = self._pick_array(d, _FLOATING)
        if a is None:
            return False
        same = self._find(dtypes=(*_FLOATING, "i8"), shape=a.shape)
        b = d.pick(same) if same and d.chance(75) else None
        other = b.name if b is not None else self._scalar(d)
        dtype = _promote(a.dtype, b.dtype if b is not None else "f8")
        forms = ["{0} + {1}", "{0} - {1}", "{0} * {1}", "{0} / (1.5 + {1} * {1})"]
        if dtype != "c16":
            forms += ["np.maximum({0}, {1})", "np.minimum({1}, {0})"]
        self._define("t", d.pick(forms).format(a.name, other), a.shape, dtype)
        return True

    def step_reduce(self, d: _Draw) -> bool:
        a = self._pick_array(d, _FLOATING, known=False)
        if a is None:
            return False
        text = a.name
        if a.shape and d.chance(40):
            text += d.pick(_regions(a.shape))[0]
        if a.dtype == "c16":
            forms = ["np.sum(np.abs({0}))", "np.sum({0}).real", "np.abs(np.sum({0}))"]
        else:
            forms = [
                *("np.sum({0})", "np.mean({0})", "{0}.sum()", "np.sum(np.sin({0}) * {0})"),
                *("{0}.prod()", "np.max({0})", "{0}.max(initial=0.0)", "{0}.sum(initial=1.0)"),
                *("{0}.min()", "np.linalg.norm({0} + 3.0)", "np.dot(np.ravel({0}), np.ravel({0}))"),
                *("{0}.var()", "np.var({0})", "{0}.mean()", "np.sum({0} ** 3)"),
            ]
        self._define("s", d.pick(forms).format(text), (), "f8", role="scalar")
        return True

    def step_reduce_with_where(self, d: _Draw) -> bool:
        a = self._pick_array(d)
        if a is None or not a.shape:
            return False
        m = self._mask_for(d, a.shape).name
        forms = [
            *("np.sum({0}, where={1})", "{0}.sum(where={1})", "np.mean({0}, where={1})"),
            *("{0}.max(where={1}, initial=-5.0)", "np.sum(np.sin({0}), where={1})"),
            *("np.min({0}, where={1}, initial=5.0)", "np.prod({0}, where={1})"),
            "np.sum({0}, where={1}, initial=0.5)",
        ]
        self._define("s", d.pick(forms).format(a.name, m), (), "f8", role="scalar")
        return True

    def step_axis_reduce(self, d: _Draw) -> bool:
        a = self._pick_array(d)
        if a is None or not a.shape:
            return False
        if len(a.shape) == 2:
            rows, cols = a.shape
            forms = [
                ("np.sum({0}, axis=0)", (cols,)),
                ("{0}.mean(axis=1)", (rows,)),
                ("np.cumsum({0}, axis=0)", a.shape),
                ("{0}.max(axis=0)", (cols,)),
                ("np.prod({0}, axis=1)", (rows,)),
                ("{0}.sum(axis=0, keepdims=True)", (1, cols)),
                ("np.cumsum({0})", (rows * cols,)),
            ]
        else:
            n = a.shape[0]
            forms = [
                ("np.cumsum({0})", (n,)),
                ("{0}.cumsum()", (n,)),
                ("np.diff({0})", (n - 1,)),
                ("{0}[1:] - {0}[:-1]", (n - 1,)),
                ("np.cumprod(0.5 * {0})", (n,)),
            ]
        form, shape = d.pick(forms)
        self._define("t", form.format(a.name), shape, a.dtype)
        return True

    def step_element_read(self, d: _Draw) -> bool:
        a = self._pick_array(d)
        if a is None or not a.shape:
            return False
        index = tuple(d.number() % (2 * n) - n for n in a.shape)
        if len(a.shape) == 2 and d.chance(35):
            self._define(
                "r",
                f"{a.name}[{index[0]}]",
                a.shape[1:],
                a.dtype,
                view=True,
                writable=a.writable,
                argument_memory=a.argument_memory,
            )
            return True
        text = ", ".join(str(i) for i in index)
        self._define("s", f"{a.name}[{text}]", (), a.dtype, role="scalar")
        return True

    def step_view(self, d: _Draw) -> bool:
        a = self._pick_array(d, _FLOATING)
        if a is None or not a.shape:
            return False
        probe = np.empty(a.shape)
        forms: list[tuple[str, tuple[int, ...], bool]] = [
            (text, shape, True) for text, shape in _regions(a.shape) if shape
        ]
        forms += [
            (".T", probe.T.shape, True),
            (".reshape(-1)", (probe.size,), True),
            (".ravel()", (probe.size,), True),
            (".view()", a.shape, True),
        ]
        if len(a.shape) == 2:
            forms += [
                (".diagonal()", probe.diagonal().shape, False),
                (".swapaxes(0, 1)", probe.T.shape, True),
                ("[::-1, ::-1]", a.shape, True),
            ]
        if a.dtype == "c16":
            forms += [(".real", a.shape, True), (".imag", a.shape, True)]
        text, shape, writable = d.pick(forms)
        dtype = "f8" if text in (".real", ".imag") else a.dtype
        self._define(
            "v",
            a.name + text,
            shape,
            dtype,
            view=True,
            writable=writable and a.writable,
            argument_memory=a.argument_memory,
        )
        return True

    def step_layout(self, d: _Draw) -> bool:
        a = self._pick_array(d)
        if a is None or not a.shape:
            return False
        probe = np.empty(a.shape)
        forms: list[tuple[str, tuple[int, ...], bool]] = [
            ("np.asfortranarray({0})", a.shape, True),
            ("np.copy({0}, order='F')", a.shape, False),
            ("{0}.T * 1.0", probe.T.shape, False),
            ("{0}.copy(order='F')", a.shape, False),
            ("np.ascontiguousarray({0}[::-1])", a.shape, False),
            ("{0}[::-1].copy()", a.shape, False),
            ("np.copy({0}, order='K')", a.shape, False),
            ("{0}[::2].copy()", probe[::2].shape, False),
        ]
        if len(a.shape) == 2:
            forms.append(("np.asfortranarray({0}[:, ::-1])", a.shape, False))
        form, shape, may_alias = d.pick(forms)
        self._define(
            "t",
            form.format(a.name),
            shape,
            a.dtype,
            argument_memory=may_alias and a.argument_memory,
        )
        return True

    def step_cast(self, d: _Draw) -> bool:
        a = self._pick_array(d)
        if a is None:
            return False
        form, dtype, role = d.pick(
            [
                ("{0}.astype(np.float32)", "f4", "array"),
                ("{0}.astype(np.int64)", "i8", "array"),
                ("(2.0 * {0}).astype(int)", "i8", "array"),
                ("np.float32(2.0) * {0}", "f4", "array"),
                ("{0}.astype(np.float64)", "f8", "array"),
                ("np.round({0}, 1)", a.dtype, "array"),
                ("({0} > 0.5)", "b1", "mask"),
            ]
        )
        prefix = {"f4": "h", "i8": "i", "b1": "m"}.get(dtype, "t")
        self._define(prefix, form.format(a.name), a.shape, dtype, role=role)
        return True

    def step_complex(self, d: _Draw) -> bool:
        complex_arrays = self._find(dtypes=("c16",))
        if complex_arrays and d.chance(50):
            c = d.pick(complex_arrays)
            form = d.pick(
                [
                    "np.abs({0})",
                    "np.real({0})",
                    "{0}.real * 1.0",
                    "np.imag({0})",
                    "({0} * np.conj({0})).real",
                    "np.angle({0})",
                ]
            )
            self._define("t", form.format(c.name), c.shape, "f8")
            return True
        a = self._pick_array(d)
        if a is None:
            return False
        same = self._find(dtypes=_REAL, shape=a.shape)
        form = d.pick(
            [
                "{0} * 1j",
                "{0} + 0.5j * {1}",
                "np.exp(1j * {0})",
                "{0}.astype(np.complex128)",
                "{0} * (1.0 + 2.0j)",
            ]
        )
        other = d.pick(same).name if same else a.name
        self._define("c", form.format(a.name, other), a.shape, "c16")
        return True

    def step_gather(self, d: _Draw) -> bool:
        a = self._pick_array(d, _FLOATING)
        if a is None or not a.shape:
            return False
        forms: list[tuple[str, Any]] = [
            (a.name + text, shape) for text, shape in _fancy_keys(a.shape)
        ]
        if int(np.prod(a.shape)) >= 2:
            forms.append((f"{a.name}.take([1, 0, 1])", (3,)))
        for k in self._find(("index",), dtypes=("i8",), known=False):
            if k.bound == a.shape[0]:
                forms.append(
                    (f"{a.name}[{k.name}]", None if k.shape is None else k.shape + a.shape[1:])
                )
            if k.bound == int(np.prod(a.shape)):
                forms.append((f"np.take({a.name}, {k.name})", k.shape))
        for m in self._find(("mask",), dtypes=("b1",), shape=a.shape):
            forms.append((f"{a.name}[{m.name}]", None))
            other = self._operand(d, a.shape, _REAL if a.dtype != "c16" else _FLOATING)
            forms.append((f"np.where({m.name}, {a.name}, {other})", a.shape))
        text, shape = d.pick(forms)
        self._define("t", text, shape, a.dtype)
        return True

    def step_sort_read(self, d: _Draw) -> bool:
        a = self._pick_array(d)
        if a is None or not a.shape:
            return False
        size = int(np.prod(a.shape))
        form, shape, dtype = d.pick(
            [
                ("np.sort({0})", a.shape, a.dtype),
                ("np.sort({0}, axis=0)", a.shape, a.dtype),
                ("np.partition({0}, 1)", a.shape, a.dtype),
                ("np.sort({0}.ravel())[::-1]", (size,), a.dtype),
                ("np.sort({0}.ravel()).searchsorted({1})", a.shape, "i8"),
                ("np.median({0})", (), a.dtype),
            ]
        )
        other = d.pick(self._find(dtypes=_REAL, shape=a.shape)).name
        role = "scalar" if shape == () else "array"
        self._define(
            "i" if dtype == "i8" else "t", form.format(a.name, other), shape, dtype, role=role
        )
        return True

    def step_product(self, d: _Draw) -> bool:
        a = self._pick_array(d, ndim=2) or self._pick_array(d, ndim=1)
        if a is None:
            return False
        b = d.pick(self._find(dtypes=_REAL, shape=a.shape))
        if len(a.shape) == 1:
            n = a.shape[0]
            form, shape = d.pick([("np.outer({0}, {1})", (n, n)), ("np.dot({0}, {1})", ())])
        else:
            rows, cols = a.shape
            forms = [
                ("{0} @ {0}.T", (rows, rows)),
                ("{0}.T @ {1}", (cols, cols)),
                ("np.dot({0}, {1}.T)", (rows, rows)),
                ("np.matmul({1}.T, {0})", (cols, cols)),
            ]
            if rows == cols:
                forms.append(("{0} @ {1}", a.shape))
            form, shape = d.pick(forms)
        role = "scalar" if shape == () else "array"
        self._define(
            "s" if shape == () else "t",
            form.format(a.name, b.name),
            shape,
            _promote(a.dtype, b.dtype),
            role=role,
        )
        return True

    def step_new_buffer(self, d: _Draw) -> bool:
        a = self._pick_array(d)
        if a is None or not a.shape:
            return False
        form = d.pick(
            [
                *("np.zeros_like({0})", "np.ones_like({0})", "{0}.copy()", "{0} * 1.0"),
                *("np.full_like({0}, 0.5)", "np.copy({0})", "np.zeros({1})"),
                "np.empty_like({0})",
            ]
        )
        contents = self._operand(d, a.shape)  # drawn before the buffer exists: never its garbage
        var = self._define("y", form.format(a.name, a.shape), a.shape, a.dtype)
        if form.startswith("np.empty_like"):
            self.lines.append(f"{var.name}[...] = {contents}")
        return True

    def step_new_mask(self, d: _Draw) -> bool:
        shape = self.shape
        same = self._find(dtypes=_REAL, shape=shape)
        if same and d.chance(50):
            a = d.pick(same).name
            form = d.pick(["{0} > 0.5", "np.abs({0}) < 1.0", "~({0} > 0.0)", "np.isfinite({0})"])
            if len(same) > 1 and d.chance(30):
                form = "{0} < " + d.pick(same).name
            expression = form.format(a)
        else:
            expression = self._mask_literal(shape, d.number())
        self._define("m", expression, shape, "b1", role="mask")
        return True

    def step_new_index(self, d: _Draw) -> bool:
        a = self._pick_array(d)
        if a is None or not a.shape:
            return False
        n = a.shape[0]
        choice = d.number() % 5
        if choice == 0 and len(a.shape) == 1:
            self._define("k", f"np.argsort({a.name})", a.shape, "i8", role="index", bound=n)
        elif choice == 1:
            size = int(np.prod(a.shape))
            self._define(
                "k", f"np.argsort({a.name}.ravel())", (size,), "i8", role="index", bound=size
            )
        elif choice == 2:
            self._define("k", f"np.arange({n})[::-1].copy()", (n,), "i8", role="index", bound=n)
        elif choice == 3 and len(a.shape) == 1:
            m = self._mask_for(d, a.shape).name
            self._define("k", f"np.nonzero({m})[0]", None, "i8", role="index", bound=n)
        else:
            positions = [d.number() % n for _ in range(1 + d.number() % (n + 1))]
            self._define(
                "k", f"np.array({positions})", (len(positions),), "i8", role="index", bound=n
            )
        return True

    def step_new_constant(self, d: _Draw) -> bool:
        shape = self.shape
        size = int(np.prod(shape))
        expression = d.pick(
            [
                _literal([0.25 + 0.5 * ((d.number() + k) % 5) for k in range(size)], shape),
                f"np.full({shape}, 0.75)",
                f"np.linspace(0.5, 1.5, {size}).reshape({shape})",
                "np.array(0.5)",
            ]
        )
        shape_of = () if expression == "np.array(0.5)" else shape
        self._define("c", expression, shape_of, "f8", role="constant")
        return True

    def step_use_constant(self, d: _Draw) -> bool:
        if not self._find(("constant",), dtypes=("f8",)):
            self.step_new_constant(d)
        c = d.pick(self._find(("constant",), dtypes=("f8",)))
        same = self._find(dtypes=_REAL, shape=c.shape or self.shape)
        if not same:
            return False
        a = d.pick(same)
        form = d.pick(
            [
                *("{0} * {1}", "{0} + {1}", "np.maximum({0}, {1})", "{0} / {1}"),
                *("np.where({0} > {1}, {0}, {1})", "np.full_like({0}, {1}) * {0}"),
            ]
        )
        self._define("t", form.format(a.name, c.name), a.shape, a.dtype)
        return True

    def step_method_call(self, d: _Draw) -> bool:
        a = self._pick_array(d)
        if a is None or not a.shape:
            return False
        form = d.pick(
            [
                *("{a}.sum(axis=0, keepdims=True)", "{a}.sum(where={m}, initial=0.5)"),
                *("{a}.mean(axis=-1, where={m})", "{a}.max(axis=0, initial=-5.0, where={m})"),
                *("{a}.min(initial=5.0)", "{a}.prod(axis=0)", "{a}.cumsum(axis=0)"),
                *("{a}.cumprod()", "{a}.clip(min=-1.0)", "{a}.clip(max=1.0)", "{a}.round(1)"),
                *("{a}.var(ddof=1)", "{a}.ptp()", "{a}.flatten(order='F')"),
                *("{a}.ravel(order='F')", "{a}.reshape(-1, order='F')", "{a}.copy(order='A')"),
                *("{a}.astype(np.float64, copy=False)", "{a}.repeat(2, axis=0)", "{a}.trace()"),
                *("{a}.take([0, 0], axis=0)", "{a}.diagonal(offset=1)", "{a}.squeeze()"),
                *("{a}.transpose()", "{a}.swapaxes(-1, 0)", "{a}.conj()", "{a}.conjugate()"),
                *("{a}.item(0)", "np.sum({a}.tolist())", "{a}.argmax(axis=0)", "{a}.all()"),
                *("{a}.nonzero()[0]", "{a}.any(axis=0)", "{a}.dot({b}.T)"),
                "np.sort({a}.ravel()).searchsorted({b}, side='right')",
            ]
        )
        probe = _probe(form.format(a="a", b="a", m="(a > 1.0)"), a.shape)
        if probe is None:
            return False
        mask = self._mask_for(d, a.shape).name if "{m}" in form else ""
        other = d.pick(self._find(dtypes=_REAL, shape=a.shape)).name
        self._define_like(form.format(a=a.name, b=other, m=mask), probe, a)
        return True

    def _define_like(self, expression: str, probe: np.ndarray, source: _Var) -> _Var:
        """Define ``expression``, which behaves on ``source`` as it did on ``probe``'s input."""
        if probe.ndim == 0 and probe.dtype.kind == "f":
            return self._define("s", expression, (), "f8", role="scalar")
        if probe.dtype.kind == "f":
            is_view = probe.base is not None
            return self._define(
                "t",
                expression,
                probe.shape,
                source.dtype,
                view=is_view,
                writable=bool(probe.flags.writeable) and source.writable,
                argument_memory=is_view and source.argument_memory,
            )
        dtype = {"b": "b1", "c": "c16"}.get(probe.dtype.kind, "i8")
        return self._define("i", expression, probe.shape, dtype)

    def step_view_function(self, d: _Draw) -> bool:
        a = self._pick_array(d, _FLOATING)
        if a is None or not a.shape:
            return False
        form = d.pick(
            [
                *("np.flip({a})", "np.flip({a}, axis=-1)", "np.rot90({a})"),
                *("np.moveaxis({a}, 0, -1)", "np.expand_dims({a}, 0)", "{a}[None]"),
                *("{a}[..., None]", "np.atleast_2d({a})", "np.diag({a})", "np.squeeze({a})"),
                *("np.broadcast_to({a}, (2, *{a}.shape))", "{a}.reshape({a}.shape[0], -1)"),
                *("np.ravel({a}, order='F')", "{a}.T.reshape(-1)", "np.asarray({a})"),
                *("np.reshape({a}, -1)", "np.transpose({a})", "np.real({a})"),
            ]
        )
        probe = _probe(form.format(a="a"), a.shape)
        if probe is None:
            return False
        self._define_like(form.format(a=a.name), probe, a)
        return True

    def step_library_read(self, d: _Draw) -> bool:
        a = self._pick_array(d)
        if a is None or not a.shape:
            return False
        form = d.pick(
            [
                *("np.concatenate([{a}, {a}[::-1]])", "np.stack([{a}, {b}])", "np.tile({a}, 2)"),
                *("np.add.reduce({a}, axis=0)", "np.add.accumulate({a}, axis=0)"),
                *("np.maximum.accumulate({a}, axis=0)", "np.multiply.reduce({a}, axis=-1)"),
                *(
                    "np.pad({a}, 1, mode='reflect')",
                    "np.roll({a}, 1, axis=0)",
                    "np.diff({a}, axis=0)",
                ),
                *("np.einsum('ij,ij->i', {a}, {b})", "np.einsum('i...->...', {a})"),
                *(
                    "np.linalg.solve({a} @ {a}.T + 3.0 * np.eye(len({a})), {a})",
                    "np.trapezoid({a})",
                ),
                *("np.where({a} > 0.5, {a}, {b})", "np.take_along_axis({a}, np.argsort({b}), -1)"),
            ]
        )
        probe = _probe(form.format(a="a", b="a"), a.shape)
        if probe is None:
            return False
        other = d.pick(self._find(dtypes=_REAL, shape=a.shape)).name
        self._define_like(form.format(a=a.name, b=other), probe, a)
        return True

    def step_nested_gradient(self, d: _Draw) -> bool:
        a = self._pick_array(d, ("f8",))
        if a is None or not a.shape:
            return False
        h = self._name("h")
        body = d.pick(
            [
                ["return np.sum(np.sin(z) * z)"],
                ["w = z * 1.0", "w[0] = np.sin(w[-1])", "return np.sum(w * z)"],
                ["w = np.zeros_like(z)", "w[...] = z * z", "return np.sum(np.tanh(w))"],
                ["z = z * 1.0", "z *= z", "return np.sum(np.cos(z))"],
                ["w = np.sort(z, axis=-1)", "return np.sum(w * np.cos(z))"],
            ]
        )
        mode = d.pick(["", ', mode="snapshot"'])
        self.lines.append(f"def {h}(z):")
        self.lines += [f"    {line}" for line in body]
        expression = f"mutagrad.gradient({h}, {a.name}{mode})[0]"
        if d.chance(50):
            self._define("s", f"np.sum({expression} * {a.name})", (), "f8", role="scalar")
        else:
            self._define("t", expression, a.shape, "f8")
        return True

    # -- writes ---------------------------------------------------------------

    def _target(self, d: _Draw, dtypes: tuple[str, ...] = _REAL, **criteria: Any) -> _Var | None:
        found = self._find(dtypes=dtypes, writable=True, **criteria)
        found = [v for v in found if v.shape]
        return d.pick(found) if found else None

    def step_setitem(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        text, shape = d.pick(_regions(t.shape))
        self.lines.append(f"{t.name}{text} = {self._operand(d, shape)}")
        return True

    def step_augmented(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        text, shape = ("", t.shape) if d.chance(40) else d.pick(_regions(t.shape))
        value = self._operand(d, shape)
        operator = d.pick(["+=", "-=", "*=", "/="])
        if operator == "/=":
            value = f"1.5 + ({value}) ** 2"
        self.lines.append(f"{t.name}{text} {operator} {value}")
        return True

    def step_mask_write(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        m = self._mask_for(d, t.shape).name
        same = self._find(dtypes=_REAL, shape=t.shape)
        form = d.pick(
            [
                *("{0}[{1}] = {2}[{1}]", "{0}[{1}] = {3}", "{0}[{1}] = 0.5", "{0}[{1}] += 1.0"),
                *(
                    "{0}[{1}] *= {3}",
                    "{0}[~{1}] = np.sin({0}[~{1}])",
                    "np.copyto({0}, {2}, where={1})",
                ),
                "{0}[{1}] = {0}[{1}][::-1]",
                "{0}[{1}] = np.cos({2})[{1}]",
            ]
        )
        self.lines.append(form.format(t.name, m, d.pick(same).name, self._scalar(d)))
        return True

    def step_fancy_write(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        keys = list(_fancy_keys(t.shape))
        keys += [
            (f"[{k.name}]", None if k.shape is None else k.shape + t.shape[1:])
            for k in self._find(("index",), dtypes=("i8",), known=False)
            if k.bound == t.shape[0]
        ]
        if not keys:
            return False
        text, shape = d.pick(keys)
        operator = d.pick(["=", "=", "+="])
        value = self._operand(d, shape) if shape is not None else self._scalar(d)
        if d.chance(25):
            value = f"np.cos({t.name}{text})"
        self.lines.append(f"{t.name}{text} {operator} {value}")
        return True

    def step_list_write(self, d: _Draw) -> bool:
        t = self._target(d, dtypes=("f8",))
        if t is None or min(t.shape) < (3 if len(t.shape) == 1 else 2):
            return False

        def items(count: int) -> str:
            return ", ".join(self._scalar(d) for _ in range(count))

        if len(t.shape) == 1:
            n = t.shape[0]
            forms = [
                f"{{0}}[:2] = [{items(2)}]",
                f"{{0}}[:1] = [{items(1)}]",
                f"{{0}}[[0, 2]] = [{items(2)}]",
                f"{{0}}[1:3] = ({items(2)})",
                f"np.copyto({{0}}, [{items(n)}])",
                f"{{0}}[...] = [{items(n)}]",
                f"np.put({{0}}, [0, 1], [{items(2)}])",
                f"np.place({{0}}, {{0}} > 0.0, [{items(2)}])",
                f"np.put_along_axis({{0}}, np.array([2, 0]), [{items(2)}], axis=0)",
            ]
        else:
            rows, cols = t.shape
            same_rows = [
                v.name
                for v in self._find(dtypes=("f8",), ndim=2)
                if v.shape[1] == cols > 0 and v.shape[0] >= 2
            ]
            row_a, row_b = d.pick(same_rows), d.pick(same_rows)
            nested = ", ".join(f"[{items(2)}]" for _ in range(2))
            forms = [
                f"{{0}}[0] = [{items(cols)}]",
                f"{{0}}[:2, :2] = [{nested}]",
                f"{{0}}[:2] = [{row_a}[1], {row_b}[0]]",
                f"{{0}}[:, 0] = [{items(rows)}]",
                f"np.copyto({{0}}[0], [{items(cols)}])",
                "np.put_along_axis({0}, np.array("
                + repr([[k % cols] for k in range(rows)])
                + f"), [{', '.join(f'[{items(1)}]' for _ in range(rows))}], axis=1)",
                f"{{0}}[0] = ({items(cols)})",
            ]
        self.lines.append(d.pick(forms).format(t.name))
        return True

    def step_copyto(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        forms = [
            f"np.copyto({{0}}, {self._operand(d, t.shape)})",
            "np.copyto({0}, {0}[::-1])",
            "np.copyto({0}[1:], {0}[:-1])",
            "np.copyto({0}[:-1], {0}[1:])",
            f"np.copyto({{0}}, {self._scalar(d)})",
            f"np.copyto({{0}}, {self._operand(d, t.shape)}, where={{mask}})",
        ]
        if len(t.shape) == 2 and t.shape[0] == t.shape[1]:
            forms.append("np.copyto({0}, {0}.T)")
        self._write_with_mask(d, d.pick(forms), t)
        return True

    def step_put(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        size = int(np.prod(t.shape))
        i, j = d.number() % size, d.number() % size
        sources = [v for v in self._find(dtypes=_REAL) if v.shape and np.prod(v.shape) >= 2]
        flat = f"{d.pick(sources).name}.ravel()[:2]"
        forms = [
            f"np.put({{0}}, [{i}, {j}], {flat})",
            f"{{0}}.put([{i}, {i}], {flat})",
            f"np.put({{0}}, [{i}], {self._scalar(d)})",
            f"np.put({{0}}, [{i}, {j}], {{0}}.ravel()[::-1][:2])",
            f"np.put({{0}}, [-1, {size + j}], {flat}, mode='wrap')",
        ]
        forms += [
            f"np.put({{0}}, {k.name}, {self._scalar(d)})"
            for k in self._find(("index",), dtypes=("i8",), known=False)
            if k.bound <= size
        ]
        self.lines.append(d.pick(forms).format(t.name))
        return True

    def step_place(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        m = self._mask_for(d, t.shape).name
        sources = [v for v in self._find(dtypes=_REAL) if v.shape and np.prod(v.shape) >= 2]
        values = d.pick(
            [
                "{0}.ravel()[:2]" if len(t.shape) == 2 else "{0}[:2]",
                "{0}[0]" if len(t.shape) == 2 else "{0}[::-1]",
                f"{d.pick(sources).name}.ravel()[:3]",
                f"[{self._scalar(d)}, 0.5]",
                f"np.sin({d.pick(sources).name}).ravel()",
            ]
        )
        self.lines.append(f"np.place({{0}}, {m}, {values})".format(t.name))
        return True

    def step_putmask(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        m = self._mask_for(d, t.shape).name
        values = d.pick(
            [
                self._operand(d, t.shape),
                "{0}[::-1]",
                "{0}.ravel()[:2]",
                self._scalar(d),
            ]
        )
        mask = d.pick([m, m, "{0} > 0.5"])
        self.lines.append(f"np.putmask({{0}}, {mask}, {values})".format(t.name))
        return True

    def step_fill_diagonal(self, d: _Draw) -> bool:
        t = self._target(d, ndim=2)
        if t is None:
            return False
        same = self._find(dtypes=_REAL, shape=t.shape)
        forms = [
            "np.fill_diagonal({0}, {0}.diagonal()[::-1])",
            f"np.fill_diagonal({{0}}, {self._scalar(d)})",
            f"np.fill_diagonal({{0}}, np.sin({d.pick(same).name}).diagonal())",
            f"np.fill_diagonal({{0}}, [{self._scalar(d)}, {self._scalar(d)}])",
            "np.fill_diagonal({0}, {0}[0])",
            "np.fill_diagonal({0}, {0}.diagonal() * 2.0)",
            "np.fill_diagonal({0}, {0}[:, 0])",
        ]
        self.lines.append(d.pick(forms).format(t.name))
        return True

    def step_ufunc_at(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        n = t.shape[0]
        i, j = d.number() % n, d.number() % n
        rows = (3, *t.shape[1:])
        forms = [
            f"np.add.at({{0}}, [{i}, {i}, {j}], {self._operand(d, rows)})",
            f"np.subtract.at({{0}}, [{j}, {i}], {self._scalar(d)})",
            f"np.multiply.at({{0}}, [{i}, {i}], 2.0)",
            f"np.add.at({{0}}, [{i}, {j}], {{0}}[[{j}, {i}]])",
            f"np.add.at({{0}}, [{i}, {j}, {i}], {{0}}[{j}])"
            if len(t.shape) == 2
            else f"np.add.at({{0}}, [{i}, {j}, {i}], {{0}}[{j}] * 2.0)",
        ]
        forms += [
            f"np.add.at({{0}}, {k.name}, {self._scalar(d)})"
            for k in self._find(("index",), dtypes=("i8",), known=False)
            if k.bound == n
        ]
        self.lines.append(d.pick(forms).format(t.name))
        return True

    def step_out_aliasing(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        forms = [
            "np.add({0}, {0}[::-1], out={0})",
            f"np.multiply({{0}}, {self._operand(d, t.shape)}, out={{0}})",
            "np.sin({0}, out={0})",
            "np.add({0}[:-1], {0}[1:], out={0}[1:])",
            "np.subtract({0}[1:], {0}[:-1], out={0}[:-1])",
            "np.tanh({0}[::-1], out={0})",
            "np.cumsum({0}, axis=0, out={0})",
            "np.multiply({0}, {0}, out={0})",
            f"np.add({self._operand(d, t.shape)}, {self._operand(d, t.shape)}, out={{0}})",
            "np.clip({0}, -1.0, 1.0, out={0})",
            "np.divide({0}, 1.5 + {0} * {0}, out={0})",
            "np.add({0}, 1.0, out={0}, where={mask})",
        ]
        if len(t.shape) == 2 and t.shape[0] == t.shape[1]:
            forms += ["np.negative({0}.T, out={0})", "np.matmul({0}, {0}, out={0})"]
        self._write_with_mask(d, d.pick(forms), t)
        return True

    def _write_with_mask(self, d: _Draw, form: str, t: _Var) -> None:
        """Emit ``form`` on ``t``, drawing a mask of ``t``'s shape only if the form uses one."""
        mask = self._mask_for(d, t.shape).name if "{mask}" in form else ""
        self.lines.append(form.format(t.name, mask=mask))

    def step_sort_in_place(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        forms = ["{0}.sort()", "{0}.sort(axis=0)", "{0}[::-1].sort()", "{0}.partition(1)"]
        if t.shape[0] >= 3:
            forms += ["{0}[::2].sort()", "{0}[1:].sort()"]
        if len(t.shape) == 2:
            forms += ["{0}.T.sort()", "{0}[:, ::-1].sort(axis=0)"]
        self.lines.append(d.pick(forms).format(t.name))
        return True

    def step_fill(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        forms = [
            f"{{0}}.fill({self._scalar(d)})",
            "{0}.fill(0.5)",
            f"{{0}}[...] = {self._scalar(d)}",
        ]
        if int(np.prod(t.shape)) > 1:
            forms.append(f"{{0}}[1:].fill({self._scalar(d)})")
        self.lines.append(d.pick(forms).format(t.name))
        return True

    def step_write_through_view(self, d: _Draw) -> bool:
        views = [v for v in self._find(writable=True) if v.view and v.shape]
        if views and d.chance(60):
            v = d.pick(views)
        else:
            if not self.step_view(d):
                return False
            v = self.vars[-1]
            if not self._may_write(v):
                return True
        value = self._operand(d, v.shape)
        forms = [
            f"{{0}}[...] = {value}",
            "{0} *= 2.0",
            f"{{0}} += {self._scalar(d)}",
            f"{{0}}[0] = {self._scalar(d)}",
            "{0}[:] = np.sin({0})",
        ]
        self.lines.append(d.pick(forms).format(v.name))
        return True

    def step_mutate_mask(self, d: _Draw) -> bool:
        masks = self._find(("mask",), dtypes=("b1",))
        if not masks:  # make one and read through it first
            if not self.step_reduce_with_where(d):
                return False
            masks = self._find(("mask",), dtypes=("b1",))
        m = d.pick(masks).name
        forms = [
            "{0}[:] = ~{0}",
            "{0}[...] = ~{0}",
            "np.logical_not({0}, out={0})",
            "{0} ^= True",
            "{0}[0] = ~{0}[0]",
            "{0}[...] = True",
            "{0}.fill(False)",
            "{0}[::-1] = {0}.copy()",
            "np.invert({0}, out={0})",
        ]
        self.lines.append(d.pick(forms).format(m))
        return True

    def step_mutate_index(self, d: _Draw) -> bool:
        indexes = self._find(("index",), dtypes=("i8",), known=False)
        if indexes:
            k = d.pick(indexes)
        else:  # make one and gather through it first
            if not self.step_new_index(d):
                return False
            k = self.vars[-1]
            rows = [a for a in self._find(dtypes=_FLOATING) if a.shape and a.shape[0] == k.bound]
            flat = [a for a in self._find(dtypes=_FLOATING) if int(np.prod(a.shape)) == k.bound]
            if rows:
                a = d.pick(rows)
                self._define("t", f"{a.name}[{k.name}]", None, a.dtype)
            elif flat:
                a = d.pick(flat)
                self._define("t", f"np.take({a.name}, {k.name})", k.shape, a.dtype)
        forms = [
            "{0}[0] = {0}[-1]",
            "{0}[:] = {0}[::-1]",
            "{0}.sort()",
            "{0}[...] = 0",
            f"{{0}}[...] = ({{0}} + 1) % {k.bound}",
            "{0}.fill(0)",
        ]
        self.lines.append(d.pick(forms).format(k.name))
        return True

    def step_mutate_constant(self, d: _Draw) -> bool:
        constants = self._find(("constant",), dtypes=("f8",))
        if not constants:  # make one and read it first
            if not self.step_use_constant(d):
                return False
            constants = self._find(("constant",), dtypes=("f8",))
        c = d.pick(constants)
        forms = ["{0}[...] = 2.0", "{0} *= -1.5", "{0}.fill(3.0)", "np.negative({0}, out={0})"]
        if c.shape:
            forms.append("{0}[0] = 9.0")
        self.lines.append(d.pick(forms).format(c.name))
        return True

    def step_write_int_array(self, d: _Draw) -> bool:
        ints = [v for v in self._find(dtypes=("i8",)) if v.shape]
        if ints and d.chance(70):
            i = d.pick(ints)
        else:
            size = int(np.prod(self.shape))
            i = self._define("i", f"np.arange({size}).reshape({self.shape})", self.shape, "i8")
        forms = [
            f"{{0}}[0] = {self._scalar(d)}",
            "{0}[...] = 3",
            "{0} += 1",
            f"{{0}}[...] = {self._operand(d, i.shape)}",
        ]
        self.lines.append(d.pick(forms).format(i.name))
        return True

    def step_write_complex(self, d: _Draw) -> bool:
        complex_arrays = [v for v in self._find(dtypes=("c16",), writable=True) if v.shape]
        if not complex_arrays:
            a = self._pick_array(d)
            if a is None or not a.shape:
                return False
            complex_arrays = [self._define("c", f"{a.name} * 1j", a.shape, "c16")]
        c = d.pick(complex_arrays)
        forms = [
            f"{{0}}[0] = {self._scalar(d)}",
            "{0} *= 1j",
            f"{{0}}.real[...] = {self._operand(d, c.shape)}",
            f"{{0}}.imag[0] = {self._scalar(d)}",
            f"{{0}}[...] = {self._operand(d, c.shape)}",
            "np.multiply({0}, 1j, out={0})",
            f"{{0}} += {self._operand(d, c.shape)} * 1j",
        ]
        self.lines.append(d.pick(forms).format(c.name))
        return True

    def step_write_float32(self, d: _Draw) -> bool:
        halves = [v for v in self._find(dtypes=("f4",), writable=True) if v.shape]
        if not halves:
            a = self._pick_array(d, ("f8",))
            if a is None or not a.shape:
                return False
            halves = [self._define("h", f"{a.name}.astype(np.float32)", a.shape, "f4")]
        h = d.pick(halves)
        targets = [v.name for v in self._find(dtypes=("f8",), writable=True, shape=h.shape)]
        forms = [
            f"{{0}}[...] = {self._operand(d, h.shape)}",
            f"{{0}} += {self._operand(d, h.shape)}",
            "np.sin({0}, out={0})",
        ]
        if targets:
            forms.append(f"{d.pick(targets)}[...] = {{0}}")
        self.lines.append(d.pick(forms).format(h.name))
        return True

    def step_checkpointed(self, d: _Draw) -> bool:
        found = self._find(dtypes=("f8",))
        found = [v for v in found if v.shape and not (self.outside_views and v.argument_memory)]
        if not found:
            return False
        a = d.pick(found)
        g = self._name("g")
        body = d.pick(
            [
                ["u[0] = np.sin(u[-1])"],
                ["u *= 2.0"],
                ["u[...] = np.tanh(u)"],
                ["w = np.zeros_like(u)", "w[0] = u[-1] * u[0]", "u = w + u"],
                ["u.sort(axis=-1)"],
                [],
            ]
        )
        closure = self._find(dtypes=("f8",), shape=a.shape)
        returned, shape = d.pick(
            [
                ("np.sum(np.sin(u) * u)", ()),
                ("np.cos(u) * u", a.shape),
                (f"np.sum(u * {d.pick(closure).name})", ()),
            ]
        )
        written = [v.name for v in closure if self._may_write(v)]
        if written and d.chance(15):
            body = [*body, f"{d.pick(written)}[0] = 0.0"]
        self.lines.append(f"def {g}(u):")
        self.lines += [f"    {line}" for line in [*body, f"return {returned}"]]
        role = "scalar" if shape == () else "array"
        self._define(
            "s" if shape == () else "t",
            f"mutagrad.checkpointed({g}, {a.name})",
            shape,
            "f8",
            role=role,
        )
        if d.chance(40) and self._may_write(a):
            self.lines.append(f"{a.name} *= 0.5")
        return True

    def step_write_outside_view(self, d: _Draw) -> bool:
        views = self.outside_views
        if not views:
            return False
        o = d.pick(views).name
        forms = [
            "{0}[0] = 100.0",
            "{0}[...] *= 2.0",
            "{0}[...] = 0.25",
            "{0}.fill(1.0)",
            "np.copyto({0}, 0.5)",
            "{0}[-1] = -3.0",
        ]
        self.lines.append(d.pick(forms).format(o))
        self.writes_caller_memory = True
        return True

    def step_flat(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        size = int(np.prod(t.shape))
        i, j = d.number() % size, d.number() % size
        if d.chance(25):
            self._define("s", f"{t.name}.flat[{i}]", (), t.dtype, role="scalar")
            return True
        forms = [
            f"{{0}}.flat[{i}] = {self._scalar(d)}",
            f"{{0}}.flat[[{i}, {j}]] = {self._operand(d, (2,))}",
            f"{{0}}.flat[:] = {self._scalar(d)}",
            f"{{0}}.flat[{i}:{i + 2}] = {self._operand(d, (2,))}",
        ]
        self.lines.append(d.pick(forms).format(t.name))
        return True

    # -- what a program asks Python rather than numpy -------------------------

    def _element(self, d: _Draw, a: _Var) -> str:
        index = ", ".join(str(d.number() % (2 * n) - n) for n in a.shape)
        return f"{a.name}[{index}]"

    def step_type_branch(self, d: _Draw) -> bool:
        """``isinstance`` / ``np.isscalar`` branches on a traced array or element."""
        a = self._pick_array(d, ("f8",))
        if a is None or not a.shape:
            return False
        if d.chance(50):
            test = d.pick([
                "isinstance({0}, np.ndarray)", "not isinstance({0}, np.generic)",
                "not np.isscalar({0})", "np.ndim({0}) == " + str(len(a.shape)),
                "isinstance({0}, np.ndarray) and {0}.shape == " + repr(a.shape),
            ]).format(a.name)  # fmt: skip
            t = self._name("t")
            self.lines += [f"if {test}:", f"    {t} = {a.name} * 2.0", "else:",
                           f"    {t} = {a.name} + 1.0"]  # fmt: skip
            self.vars.append(_Var(t, a.shape, "f8"))
            return True
        element = self._element(d, a)
        test = d.pick([
            "isinstance({0}, float)", "isinstance({0}, np.floating)",
            "isinstance({0}, numbers.Real)", "np.isscalar({0})", "not isinstance({0}, np.ndarray)",
            "isinstance({0}, (int, float)) and not isinstance({0}, bool)",
        ]).format(element)  # fmt: skip
        scalar = self._name("s")
        self.lines += [f"if {test}:", f"    {scalar} = {element} * 3.0", "else:",
                       f"    {scalar} = {element} - 1.0"]  # fmt: skip
        self.vars.append(_Var(scalar, (), "f8", role="scalar"))
        return True

    def step_normalising_helper(self, d: _Draw) -> bool:
        """The guard of library code: ``if not isinstance(a, np.ndarray): a = np.asarray(a)``."""
        a = self._pick_array(d, ("f8",))
        if a is None:
            return False
        if not any(line.startswith("def _as_array") for line in self.lines):
            self.lines += ["def _as_array(v):", "    if not isinstance(v, np.ndarray):",
                           "        v = np.asarray(v)", "    return v"]  # fmt: skip
        if a.shape and d.chance(25):  # an element: numpy makes a 0-d array of it
            self._define("s", f"np.sum(_as_array({self._element(d, a)}) * 2.0)", (), "f8",
                         role="scalar")  # fmt: skip
        else:
            self._define("t", f"_as_array({a.name}) * 1.5", a.shape, "f8")
        return True

    def step_builtin_on_element(self, d: _Draw) -> bool:
        """Python's builtins on an element: round, math.floor, divmod, formatting, max."""
        a = self._pick_array(d, ("f8",))
        if a is None or not a.shape:
            return False
        e = self._element(d, a)
        form = d.pick([
            "round({0}, 2) * {0}", "math.floor({0} * 3.0) + {0}", "divmod({0}, 0.7)[1] * 2.0",
            "math.trunc({0} * 2.0) * {0}", "len(f'{{{0}:.3f}}') + {0}", "max({0}, 0.2) * {0}",
            "abs({0}) + sum([{0}, {0} * 2.0])", "math.ceil({0}) - {0}",
        ]).format(e)  # fmt: skip
        self._define("s", form, (), "f8", role="scalar")
        return True

    def step_thread(self, d: _Draw) -> bool:
        """Work on a traced value in a thread ``f`` starts (refused: the thread is not traced)."""
        a = self._pick_array(d, ("f8",))
        if a is None:
            return False
        t = self._name("t")
        if d.chance(50):
            self.lines += ["with ThreadPoolExecutor(1) as _pool:",
                           f"    {t} = _pool.submit(np.sin, {a.name}).result()"]  # fmt: skip
        else:
            box = self._name("box")
            work = f"lambda: {box}.append(np.cos({a.name}))"
            self.lines += [f"{box} = []", f"_thread = threading.Thread(target={work})",
                           "_thread.start()", "_thread.join()", f"{t} = {box}[0]"]  # fmt: skip
        self.vars.append(_Var(t, a.shape, "f8"))
        return True

    def step_library_out(self, d: _Draw) -> bool:
        t = self._target(d)
        if t is None:
            return False
        form = d.pick(
            [
                *("np.add.accumulate({t}, axis=0, out={t})", "np.cumsum({a}, axis=0, out={t})"),
                *(
                    "np.maximum.accumulate({t}[::-1], axis=0, out={t})",
                    "np.clip({a}, -1, 1, out={t})",
                ),
                *(
                    "np.concatenate([{t}[1:], {t}[:1]], out={t})",
                    "np.stack([{t}[0], {t}[-1]], out={t}[:2])",
                ),
                *(
                    "np.take({a}, [1, 0, 1], axis=0, out={t}[:3])",
                    "np.multiply.accumulate({a}, out={t})",
                ),
                "np.einsum('...->...', {a}, out={t})",
            ]
        )
        others = [v for v in self._find(dtypes=_REAL, shape=t.shape) if v is not t]
        if "{a}" in form and not others:
            return False
        if _probe(form.format(t="a", a="a.copy()"), t.shape) is None:
            return False
        source = d.pick(others).name if others else ""
        self.lines.append(form.format(t=t.name, a=source))
        return True

    def step_out_reduction(self, d: _Draw) -> bool:
        t = self._target(d, ndim=2) or self._target(d)
        if t is None:
            return False
        forms = ["np.negative({0}, out={0}[::-1])", "np.clip({0}[::-1], -1.0, 1.0, out={0})"]
        if len(t.shape) == 2:
            forms += [
                *("np.sum({0}, axis=0, out={0}[0])", "np.mean({0}, axis=0, out={0}[-1])"),
                *("np.max({0}, axis=1, out={0}[:, 0])", "np.prod({0}, axis=1, out={0}[:, -1])"),
            ]
            if t.shape[0] == t.shape[1]:
                forms += ["np.add({0}, {0}.T, out={0})", "np.copyto({0}.T, {0})"]
        else:
            forms += ["np.sum({0}, keepdims=True, out={0}[:1])", "np.cumsum({0}[::-1], out={0})"]
        self.lines.append(d.pick(forms).format(t.name))
        return True

    # -- the whole program ----------------------------------------------------

    def render_steps(self) -> None:
        """Render every step; one its kind cannot apply to (nothing to write, say) reads instead."""
        for kind_index, *numbers in self.blueprint.steps:
            kind = STEP_KINDS[kind_index % len(STEP_KINDS)]
            method = getattr(self, "step_" + kind.replace(" ", "_").replace(".", "_"))
            d = _Draw(numbers)
            if method(d):
                self.tags.append(kind)
            else:
                self.step_unary(d)
                self.tags.append("unary")

    def returned(self) -> str:
        """The return expression: every scalar plus a smooth sum of every array, so that a
        wrong value anywhere in the program shows in the result."""
        terms = []
        for v in self.vars:
            if v.role == "scalar":
                terms.append(v.name)
            elif v.role == "array" and v.dtype in _REAL:
                terms.append(f"np.sum(np.tanh({v.name}))")
            elif v.role == "array" and v.dtype == "c16":
                terms.append(f"np.sum(np.abs({v.name}))")
            elif v.role == "array":
                terms.append(f"np.sum({v.name})")
        total = " + ".join(terms)
        ending = self.blueprint.ending % ENDING_COUNT
        if ending == ENDING_COUNT - 2:
            return f"({total}) > 0.0"
        if ending == ENDING_COUNT - 1:
            return f"np.sum({self.vars[0].name} > 0.5)"
        return total

    def source(self) -> str:
        body = textwrap.indent("\n".join([*self.lines, f"return {self.returned()}"]), "    ")
        f = f"def f({', '.join(self.params)}):\n{body}"
        needs_make = (
            self.outside
            or self.keywords
            or self.arguments != [f"a{k}" for k in range(self.n_inputs)]
        )
        if not needs_make:
            return f
        inputs = ", ".join(f"a{k}" for k in range(self.n_inputs))
        arguments = ", ".join(self.arguments) + ("," if len(self.arguments) == 1 else "")
        called = "f"
        if self.keywords:
            bound = ", ".join(f"{k}={v}" for k, v in self.keywords.items())
            called = f"functools.partial(f, {bound})"
        lines = [*self.outside, f, f"return {called}, ({arguments})"]
        return f"def make({inputs}):\n" + textwrap.indent("\n".join(lines), "    ")

    def inputs(self) -> tuple[np.ndarray, ...]:
        """The input arrays: distinct grid values, each moved by its jitter."""
        remaining = list(VALUE_GRID)
        size = int(np.prod(self.shape))
        values = [
            round(remaining.pop(v % len(remaining)) + JITTER * (k * 0.7548776662466927 % 1), 6)
            for k, v in enumerate(self.blueprint.values[: size * self.n_inputs])
        ]
        return tuple(
            np.array(values[k * size : (k + 1) * size]).reshape(self.shape)
            for k in range(self.n_inputs)
        )


def render(blueprint: Blueprint) -> FuzzProgram:
    """The program a blueprint describes (any blueprint renders to one)."""
    renderer = _Renderer(blueprint)
    renderer.render_steps()
    return FuzzProgram(
        source=renderer.source(),
        inputs=renderer.inputs(),
        argument_sources=renderer.argument_sources,
        writes_caller_memory=renderer.writes_caller_memory,
        low_precision=any(v.dtype == "f4" for v in renderer.vars),
        tags=tuple(dict.fromkeys(renderer.tags)),
        blueprint=blueprint,
    )


# ---------------------------------------------------------------------------
# The oracle.


class Outcome(enum.Enum):
    """What one gradient call did with one program."""

    RIGHT = "right"  # value and gradient match numpy and finite differences
    REFUSED = "refused"  # a MutagradError
    WRONG = "WRONG"  # a value, a gradient or the caller's arrays differ
    CRASH = "crash"  # any other exception, or the time limit


@attrs.frozen
class ModeResult:
    mode: str
    outcome: Outcome
    detail: str = ""


@attrs.frozen
class Verdict:
    """The judgement of one program: ``discarded`` says why it was not judged, if it was not."""

    program: FuzzProgram
    results: tuple[ModeResult, ...] = ()
    discarded: str | None = None

    def outcome(self, mode: str) -> Outcome | None:
        return next((r.outcome for r in self.results if r.mode == mode), None)

    @property
    def findings(self) -> tuple[ModeResult, ...]:
        """The WRONG and crashing calls."""
        return tuple(r for r in self.results if r.outcome in (Outcome.WRONG, Outcome.CRASH))


@attrs.frozen
class _Tolerance:
    """Finite-difference steps and comparison tolerances for one precision."""

    steps: tuple[float, float]
    # Looked at only when a gradient disagrees with both estimates: a kink
    # closer to the input than the steps (a clip bound 6e-5 away in float32)
    # bends both estimates alike, and finer ones show it (two of them: a
    # maximum 1.9e-5 away bent the first finer float32 step too).
    finer_steps: tuple[float, float]
    gradient_rtol: float
    gradient_atol: float  # scaled by max(1, the largest reference entry)
    value_rtol: float


_FLOAT64_TOLERANCE = _Tolerance(
    steps=(1e-6, 1e-4),
    finer_steps=(1e-7, 1e-8),
    gradient_rtol=1e-5,
    gradient_atol=1e-5,
    value_rtol=1e-9,
)
_FLOAT32_TOLERANCE = _Tolerance(
    steps=(1e-3, 1e-2),
    finer_steps=(1e-4, 1e-5),
    gradient_rtol=1e-2,
    gradient_atol=1e-2,
    value_rtol=1e-5,
)
_LARGEST_VALUE = 1e8


@attrs.frozen
class _Reference:
    """What plain numpy says about a program."""

    value: float
    inputs_after: list[np.ndarray]
    arguments_after: list[Any]
    estimates: tuple[list[np.ndarray], list[np.ndarray]]
    tolerance: _Tolerance


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence numpy's warnings (complex casts, overflow) and the report of an exception that
    ends a thread the program started: the comparisons judge the results."""
    hook = threading.excepthook
    threading.excepthook = _ignore_thread_exception
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            yield
    finally:
        threading.excepthook = hook


def _ignore_thread_exception(args: Any) -> None:
    """A program's thread died (mutagrad refused its work): the gradient call says so."""


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""


def _as_float(value: Any) -> float:
    if np.iscomplexobj(value):
        raise TypeError(f"a complex result {value!r}")
    return float(np.asarray(value))


def _plain_value(program: FuzzProgram, inputs: Sequence[np.ndarray]) -> float:
    f, args = program.build(list(inputs))
    return _as_float(f(*args))


def _close(got: np.ndarray, want: np.ndarray, tolerance: _Tolerance) -> bool:
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    return bool(
        np.allclose(got, want, rtol=tolerance.gradient_rtol, atol=tolerance.gradient_atol * scale)
    )


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def _reference(program: FuzzProgram) -> _Reference | str:
    """numpy's value and two finite-difference gradients, or why the program is discarded."""
    tolerance = _FLOAT32_TOLERANCE if program.low_precision else _FLOAT64_TOLERANCE
    try:
        with _quiet():
            inputs = program.fresh_inputs()
            f, args = program.build(inputs)
            value = _as_float(f(*args))
            estimates = tuple(
                [
                    np.asarray(g, dtype=float)
                    for g in numerical_gradient(
                        lambda *xs: _plain_value(program, xs), *program.inputs, eps=step
                    )
                ]
                for step in tolerance.steps
            )
    except Exception as error:
        return f"numpy raised {type(error).__name__}: {_first_line(error)}"
    if not np.isfinite(value) or abs(value) > _LARGEST_VALUE:
        return "the value is not finite or too large"
    if not all(np.all(np.isfinite(g)) for estimate in estimates for g in estimate):
        return "a finite-difference estimate is not finite"
    if not all(_close(a, b, tolerance) for a, b in zip(*estimates)):
        return "not smooth at the input: the two finite-difference estimates disagree"
    return _Reference(value, inputs, [_copy(a) for a in args], estimates, tolerance)  # type: ignore[arg-type]


def _positions(view: np.ndarray, base: np.ndarray) -> np.ndarray:
    """For each element of ``view``, its flat position in C-contiguous ``base``."""
    itemsize = base.itemsize
    start = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    positions = np.full(view.shape, start // itemsize, dtype=np.intp)
    for axis, (length, stride) in enumerate(zip(view.shape, view.strides)):
        steps = np.arange(length) * (stride // itemsize)
        positions = positions + steps.reshape(
            [length if k == axis else 1 for k in range(view.ndim)]
        )
    return positions


def _input_gradients(
    program: FuzzProgram, inputs: list[np.ndarray], args: tuple[Any, ...], grads: Sequence[Any]
) -> list[np.ndarray] | str:
    """The gradient with respect to the inputs, or what is wrong with ``grads``.

    An argument that views an input adds its gradient where it looks into
    that input; one that copies it (another layout or precision) adds it
    element by element.
    """
    if len(grads) != len(args):
        return f"{len(grads)} gradients for {len(args)} arguments"
    totals = [np.zeros(x.shape) for x in inputs]
    for k, (arg, g, source) in enumerate(zip(args, grads, program.argument_sources)):
        if source is None or g is None:
            continue
        if not isinstance(arg, np.ndarray):  # a container argument: its array is field w
            arg, g = _field_w(arg), _field_w(g)
            if g is None:
                continue
        if np.iscomplexobj(g):
            return f"the gradient of argument {k} is complex: {g!r}"
        g = np.asarray(g, dtype=float)
        if g.shape != np.shape(arg):
            return f"the gradient of argument {k} has shape {g.shape}, the argument {np.shape(arg)}"
        x = inputs[source]
        if np.shares_memory(arg, x):
            np.add.at(totals[source].reshape(-1), _positions(arg, x).ravel(), g.ravel())
        else:  # a copy in another layout or precision: same shape, same elements
            totals[source] += g
    return totals


def _field_w(value: Any) -> Any:
    """The array a container argument holds (or its gradient): ``value["w"]`` or ``value.w``."""
    return value["w"] if isinstance(value, dict) else value.w


def _caller_problem(
    program: FuzzProgram,
    reference: _Reference,
    after: tuple[list[np.ndarray], tuple[Any, ...]],
    before: tuple[list[np.ndarray], list[Any]],
    completed: bool,
) -> str | None:
    """Whether the call left the caller's arrays as it should: unchanged, or as numpy left them.

    ``f`` writing the caller's array through a view made before the call
    changes it under numpy as under mutagrad; nothing else may change it. A
    refused call may have stopped before that write, so the arrays are then
    not compared. An argument without a derivative (a mask, an index array)
    may be left unchanged or as numpy left it.
    """
    inputs, args = after
    if program.writes_caller_memory and not completed:
        return None
    expected_inputs = reference.inputs_after if program.writes_caller_memory else before[0]
    for k, (x, want) in enumerate(zip(inputs, expected_inputs)):
        if not x.flags.writeable:
            return f"the caller's a{k} was left read-only"
        if not np.array_equal(x, want):
            return f"the caller's a{k} changed: {x.tolist()} (expected {want.tolist()})"
    for k, (arg, source) in enumerate(zip(args, program.argument_sources)):
        if not isinstance(arg, np.ndarray):
            continue
        if source is None and not completed:
            continue
        expected = [before[1][k]]
        if program.writes_caller_memory or source is None:
            expected = [reference.arguments_after[k]]
        if source is None:
            expected.append(before[1][k])
        if not any(np.array_equal(arg, want) for want in expected):
            return f"argument {k} changed: {arg.tolist()} (expected {expected[0].tolist()})"
    return None


def _where(error: BaseException, source: str) -> str:
    """Where ``error`` was raised: inside mutagrad, or else on which line of the program.

    An exception numpy raises on a program line (writing a read-only array
    mutagrad handed out) names that line; one raised inside mutagrad names
    its innermost frame there.
    """
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "?"
    inside = [fr for fr in frames if "mutagrad" in fr.filename and "testing" not in fr.filename]
    innermost = frames[-1]
    if innermost.filename == _PROGRAM_FILENAME or not inside:
        program_frames = [fr for fr in frames if fr.filename == _PROGRAM_FILENAME]
        if program_frames:
            line = program_frames[-1].lineno or 0
            return f"program line {line}: {source.splitlines()[line - 1].strip()}"
    frame = (inside or frames)[-1]
    return f"{frame.filename.split('src/')[-1]}:{frame.lineno} in {frame.name}"


def _judge_mode(
    program: FuzzProgram, mode: str, reference: _Reference, seconds: float
) -> ModeResult:
    inputs = program.fresh_inputs()
    f, args = program.build(inputs)
    before = ([x.copy() for x in inputs], [_copy(a) for a in args])
    result = None
    try:
        with _quiet(), time_limit(seconds):
            result = isolated(mutagrad.withgradient, f, *args, mode=mode)
    except mutagrad.MutagradError as error:
        refusal = f"{type(error).__name__}: {_first_line(error)}"
    except ProgramTimeout as error:
        return ModeResult(mode, Outcome.CRASH, f"timeout: {error}")
    except Exception as error:
        detail = (
            f"{type(error).__name__}: {_first_line(error)} (at {_where(error, program.source)})"
        )
        return ModeResult(mode, Outcome.CRASH, detail)
    problem = _caller_problem(program, reference, (inputs, args), before, result is not None)
    if problem is not None:
        return ModeResult(mode, Outcome.WRONG, problem)
    if result is None:
        return ModeResult(mode, Outcome.REFUSED, refusal)
    tolerance = reference.tolerance
    try:
        value = _as_float(result.val)
    except (TypeError, ValueError):
        return ModeResult(mode, Outcome.WRONG, f"the value {result.val!r} is not a real number")
    if not abs(value - reference.value) <= tolerance.value_rtol * max(1.0, abs(reference.value)):
        return ModeResult(mode, Outcome.WRONG, f"value {value!r}, numpy gives {reference.value!r}")
    gradients = _input_gradients(program, inputs, args, result.grad)
    if isinstance(gradients, str):
        return ModeResult(mode, Outcome.WRONG, gradients)
    for k, got in enumerate(gradients):
        estimates = [estimate[k] for estimate in reference.estimates]
        if not any(_close(got, want, tolerance) for want in estimates):
            detail = (
                f"gradient of a{k}: {np.round(got, 6).tolist()}, "
                f"finite differences give {np.round(estimates[0], 6).tolist()}"
            )
            return ModeResult(mode, Outcome.WRONG, detail)
    return ModeResult(mode, Outcome.RIGHT)


def judge(program: FuzzProgram, modes: Sequence[str] = MODES, seconds: float = 10.0) -> Verdict:
    """Judge ``program`` in each mode (see the module docstring); ``seconds`` limits each call."""
    reference = _reference(program)
    if isinstance(reference, str):
        return Verdict(program, discarded=reference)
    results = tuple(_judge_mode(program, m, reference, seconds) for m in modes)
    disputed = any(
        r.outcome is Outcome.WRONG and r.detail.startswith("gradient of") for r in results
    )
    if disputed and not _smooth_within_the_steps(program, reference):
        return Verdict(program, discarded=_KINK_WITHIN_THE_STEPS)
    return Verdict(program, results)


_KINK_WITHIN_THE_STEPS = (
    "not smooth at the input: a finer finite-difference estimate differs from the two"
)


def _smooth_within_the_steps(program: FuzzProgram, reference: _Reference) -> bool:
    """Whether the estimates at the finer steps agree with the first of the two estimates."""
    tolerance = reference.tolerance
    for step in tolerance.finer_steps:
        with _quiet():
            finer = numerical_gradient(
                lambda *xs: _plain_value(program, xs), *program.inputs, eps=step
            )
        if not all(
            _close(np.asarray(g, dtype=float), coarse, tolerance)
            for g, coarse in zip(finer, reference.estimates[0])
        ):
            return False
    return True


def _failure_kind(result: ModeResult) -> tuple[Outcome, str]:
    """What minimisation must preserve: WRONG in what, or the exception's type."""
    if result.outcome is Outcome.CRASH:
        return result.outcome, result.detail.split(":")[0]
    return result.outcome, result.detail.split(" ")[0]


def minimise(program: FuzzProgram, mode: str, seconds: float = 10.0) -> FuzzProgram:
    """A program with fewer statements that fails in ``mode`` the way ``program`` does.

    Statements are deleted one at a time, and the setup, shape and ending
    replaced by the simplest ones, as long as the call stays WRONG in the same
    respect (value, gradient, caller's array) or crashes with the same
    exception type. ``program`` itself if it does not fail in ``mode``.
    """
    if program.blueprint is None:
        return program

    def failure(candidate: FuzzProgram) -> tuple[Outcome, str] | None:
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


# ---------------------------------------------------------------------------
# The command line.


@attrs.frozen
class _Run:
    """One judged program of a fuzzing run, with its minimised version when it failed."""

    index: int
    verdict: Verdict
    minimised: Verdict | None = None


def _program_rng(seed: int, index: int) -> random.Random:
    return random.Random(f"{seed}:{index}")


def _run_one(task: tuple[int, int, int, float, bool]) -> _Run:
    seed, index, max_statements, seconds, shrink = task
    program = generate(_program_rng(seed, index), max_statements)
    verdict = judge(program, MODES, seconds)
    if not (shrink and verdict.findings):
        return _Run(index, verdict)
    small = minimise(program, verdict.findings[0].mode, seconds)
    return _Run(index, verdict, judge(small, MODES, seconds))


def _runs(tasks: list[tuple[int, int, int, float, bool]], jobs: int) -> Iterator[_Run]:
    if jobs <= 1:
        yield from map(_run_one, tasks)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(_run_one, tasks, chunksize=4)


@attrs.frozen
class FuzzFigures:
    """What a fuzzing run found, per mode: for the comparison report's headline."""

    programs: int
    judged: int
    seed: int
    wrong: dict[str, int]
    crashed: dict[str, int]

    @property
    def failures(self) -> int:
        return sum(self.wrong.values()) + sum(self.crashed.values())


def fuzz_figures(
    count: int, seed: int = 0, jobs: int = 1, max_statements: int = 10, seconds: float = 10.0
) -> FuzzFigures:
    """Judge ``count`` random programs (unminimised) and count the failures per mode."""
    tasks = [(seed, index, max_statements, seconds, False) for index in range(count)]
    verdicts = [run.verdict for run in _runs(tasks, jobs)]
    judged = [v for v in verdicts if v.discarded is None]

    def counting(outcome: Outcome) -> dict[str, int]:
        return {mode: sum(v.outcome(mode) is outcome for v in judged) for mode in MODES}

    return FuzzFigures(
        count, len(judged), seed, counting(Outcome.WRONG), counting(Outcome.CRASH)
    )


def summary_table(verdicts: Sequence[Verdict]) -> str:
    """Counts of each outcome in each mode, and of discarded programs by reason."""
    judged = [v for v in verdicts if v.discarded is None]
    lines = [
        f"programs: {len(verdicts)} ({len(judged)} judged, {len(verdicts) - len(judged)} discarded)"
    ]
    lines.append(f"{'outcome':<10}" + "".join(f"{mode:>10}" for mode in MODES))
    for outcome in Outcome:
        counts = [sum(v.outcome(mode) is outcome for v in judged) for mode in MODES]
        lines.append(f"{outcome.value:<10}" + "".join(f"{n:>10}" for n in counts))
    reasons = Counter(v.discarded.split(":")[0] for v in verdicts if v.discarded is not None)
    lines += [f"discarded: {n:>5}  {reason}" for reason, n in reasons.most_common()]
    refusals = Counter(
        (r.mode, r.detail.split(":")[0])
        for v in judged
        for r in v.results
        if r.outcome is Outcome.REFUSED
    )
    lines += [
        f"refused:   {n:>5}  {mode}: {error}" for (mode, error), n in sorted(refusals.items())
    ]
    return "\n".join(lines)


def _describe(verdict: Verdict) -> str:
    return "\n".join(
        f"#   {r.mode}: {r.outcome.value} {r.detail}".rstrip() for r in verdict.results
    )


def finding_report(run: _Run, seed: int) -> str:
    """A WRONG or crashing program: a script reproducing it (minimised), and how it was drawn."""
    verdict = run.verdict
    failing = ", ".join(f"{r.outcome.value} in {r.mode}" for r in verdict.findings)
    smallest = run.minimised if run.minimised is not None else verdict
    mode = (smallest.findings or verdict.findings)[0].mode
    parts = [
        f"## program {run.index} (seed {seed}): {failing}",
        f"tags: {', '.join(verdict.program.tags)}",
        "```python",
        smallest.program.script(mode),
        _describe(smallest),
        "```",
    ]
    if smallest is not verdict:
        parts += ["as drawn:", "```python", str(verdict.program), _describe(verdict), "```"]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mutagrad.testing.fuzz",
        description="Judge random mutating numpy programs in every mode of mutagrad.",
    )
    parser.add_argument(
        "--count", type=arguments.count, default=1000, help="programs to run (default 1000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the run (default 0)")
    parser.add_argument(
        "--jobs", type=arguments.positive, default=1, help="worker processes (default 1)"
    )
    parser.add_argument("--out", type=Path, help="write the WRONG and crashing programs here")
    parser.add_argument(
        "--max-statements", type=arguments.positive, default=10, help="per program (default 10)"
    )
    parser.add_argument(
        "--time-limit",
        type=arguments.seconds,
        default=10.0,
        help="seconds per call, 0 for none (default 10)",
    )
    parser.add_argument(
        "--no-minimise", action="store_true", help="report failing programs as drawn"
    )
    options = parser.parse_args(argv)
    tasks = [
        (options.seed, index, options.max_statements, options.time_limit, not options.no_minimise)
        for index in range(options.count)
    ]
    runs: list[_Run] = []
    for run in _runs(tasks, options.jobs):
        runs.append(run)
        if len(runs) % 100 == 0:
            print(f"judged {len(runs)} of {options.count}", file=sys.stderr)
    failing = [run for run in runs if run.verdict.findings]
    reports = [finding_report(run, options.seed) for run in failing]
    summary = summary_table([run.verdict for run in runs])
    print("\n\n".join([*reports, summary]))
    if options.out is not None:
        options.out.write_text("\n\n".join([summary, *reports]) + "\n")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
