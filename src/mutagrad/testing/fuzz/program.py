"""A generated program: its source, its input arrays, and how to call it.

:class:`Program` is what the grammar renders a blueprint to and what the
oracle (:mod:`mutagrad.testing.fuzz.oracle`) judges. Its source is compiled
once per process (:func:`namespace`) under the file name
:data:`PROGRAM_FILENAME`, which tracebacks show.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

import mutagrad

if TYPE_CHECKING:
    from mutagrad.testing.fuzz.blueprint import Blueprint

__all__ = ["PROGRAM_FILENAME", "PROGRAM_IMPORTS", "Program", "compiled", "namespace"]

PROGRAM_FILENAME = "<fuzz program>"


# What a program may use besides numpy: the modules its Python-facing statements need.
PROGRAM_IMPORTS = (
    "import dataclasses, functools, math, numbers, threading",
    "from collections import OrderedDict, defaultdict, namedtuple",
    "from concurrent.futures import ThreadPoolExecutor",
)


@functools.lru_cache(maxsize=256)
def namespace(source: str) -> dict[str, Any]:
    """The names ``source`` defines (compiled once per process, as :data:`PROGRAM_FILENAME`)."""
    return compiled(source, PROGRAM_FILENAME)


def compiled(source: str, filename: str) -> dict[str, Any]:
    """The names ``source`` defines, with numpy, mutagrad and :data:`PROGRAM_IMPORTS`."""
    names: dict[str, Any] = {"np": np, "mutagrad": mutagrad}
    exec("\n".join(PROGRAM_IMPORTS), names)
    exec(compile(source, filename, "exec"), names)
    return names


@attrs.frozen
class Program:
    """A generated program, its inputs, and how to call it.

    ``source`` defines ``f``, or ``make(a0, ...)`` returning ``(f, args)`` when
    the arguments are made from the inputs (views, aliases, layouts) or ``f``
    closes over views made before the call. ``inputs`` are the arrays that
    finite differences perturb; ``argument_sources[i]`` is the input that
    argument ``i`` views or copies (``None``: no derivative, a mask or an
    index). ``writes_caller_memory``: ``f`` writes the caller's array through
    a view made outside it, as numpy's own run does too. ``low_precision``:
    float32 values limit the accuracy of the finite differences. ``tags``
    name the setup and the statement kinds. ``mutates``: a statement writes in
    place into a float or complex array (strict mode refuses such a program).

    :attr:`fn` calls the program on any arrays shaped like the inputs (plain
    or traced) and returns its scalar; :meth:`then` and :meth:`after` compose
    it with a function of your own, and :meth:`with_inputs` puts your own
    arrays in place of the drawn ones. :func:`mutagrad.testing.fuzz.judge`
    judges any of them.
    """

    source: str
    inputs: tuple[np.ndarray, ...] = attrs.field(eq=False)
    argument_sources: tuple[int | None, ...]
    writes_caller_memory: bool = False
    low_precision: bool = False
    tags: tuple[str, ...] = ()
    blueprint: Blueprint | None = attrs.field(default=None, repr=False)
    mutates: bool = False
    runs_before: tuple[Callable[..., Any], ...] = attrs.field(default=(), eq=False, repr=False)
    """Functions of ``f``'s arguments run before ``f`` (see :meth:`after`)."""
    runs_after: tuple[Callable[..., Any], ...] = attrs.field(default=(), eq=False, repr=False)
    """Functions of ``f``'s arguments run after ``f`` (see :meth:`then`)."""

    def build(self, inputs: Sequence[np.ndarray]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        """``(f, args)`` over ``inputs`` (the caller's arrays: fresh copies of :attr:`inputs`)."""
        names = namespace(self.source)
        if "make" in names:
            f, args = names["make"](*inputs)
            args = tuple(args)
        else:
            f, args = names["f"], tuple(inputs)
        if self.runs_before or self.runs_after:
            f = _composed(self.runs_before, f, self.runs_after)
        return f, args

    def fresh_inputs(self) -> list[np.ndarray]:
        return [x.copy() for x in self.inputs]

    @property
    def fn(self) -> Callable[..., Any]:
        """The program as a function of its inputs: ``fn(*inputs)`` returns its scalar.

        It takes plain or traced arrays shaped like :attr:`inputs` and may
        write into them, as the program's statements do.
        """

        def program(*inputs: Any) -> Any:
            f, args = self.build(inputs)
            return f(*args)

        return program

    @property
    def args(self) -> tuple[np.ndarray, ...]:
        """:attr:`fn`'s arguments: the inputs (the name :func:`programs` documents)."""
        return self.inputs

    @property
    def statements(self) -> list[str]:
        """The lines of ``f``'s body, without its ``def`` and its ``return``, dedented."""
        lines = self.source.splitlines()
        start = next(k for k, line in enumerate(lines) if line.lstrip().startswith("def f("))
        indent = len(lines[start]) - len(lines[start].lstrip()) + 4
        body = []
        for line in lines[start + 1 :]:
            if len(line) - len(line.lstrip()) < indent:
                break  # back in make, which returns f and its arguments
            body.append(line[indent:])
        return body[:-1]

    def then(self, g: Callable[..., Any]) -> Program:
        """This program, then ``g``: ``f(*args) + g(*args)``, ``g`` seeing what ``f`` left.

        ``g`` takes ``f``'s arguments (for the programs of
        :func:`~mutagrad.testing.strategies.programs`, the inputs) after the
        program wrote into them, and returns a number. The composed program
        is judged like any other: ``judge(program.then(g))``.
        """
        return attrs.evolve(self, runs_after=(*self.runs_after, g))

    def after(self, g: Callable[..., Any]) -> Program:
        """``g``, then this program: ``g(*args) + f(*args)``, ``f`` reading what ``g`` left.

        ``g`` may write into the arguments (a routine that works in place):
        the program then reads and writes arrays ``g`` has changed.
        """
        return attrs.evolve(self, runs_before=(*self.runs_before, g))

    def with_inputs(self, *inputs: Any) -> Program:
        """The same program on ``inputs`` (arrays of the drawn inputs' shapes) instead."""
        arrays = tuple(np.array(x, copy=True) for x in inputs)
        if [x.shape for x in arrays] != [x.shape for x in self.inputs]:
            raise ValueError(
                f"the program takes {len(self.inputs)} input(s) of shape(s) "
                f"{[x.shape for x in self.inputs]}, not {[x.shape for x in arrays]}"
            )
        low = self.low_precision or any(x.dtype == np.float32 for x in arrays)
        return attrs.evolve(self, inputs=arrays, low_precision=low)

    def script(self, mode: str = "poison") -> str:
        """A self-contained script that reproduces the program under ``mode``."""
        names = [f"a{k}" for k in range(len(self.inputs))]
        assignments = [f"{name} = {_literal(x)}" for name, x in zip(names, self.inputs)]
        call = (
            f"f, args = make({', '.join(names)})"
            if "def make" in self.source
            else f"args = ({', '.join(names)},)"
        )
        composed = [f"# composed with {_name(g)} (run before f)" for g in self.runs_before] + [
            f"# composed with {_name(g)} (run after f)" for g in self.runs_after
        ]
        return "\n".join(
            [
                "import numpy as np",
                "import mutagrad",
                *PROGRAM_IMPORTS,
                "",
                self.source,
                *composed,
                "",
                *assignments,
                call,
                f'print(mutagrad.withgradient(f, *args, mode="{mode}"))',
            ]
        )

    def __str__(self) -> str:
        inputs = ", ".join(f"a{k} = {x.tolist()}" for k, x in enumerate(self.inputs))
        composed = [f"# then {_name(g)}" for g in self.runs_after]
        composed = [f"# after {_name(g)}" for g in self.runs_before] + composed
        return "\n".join([self.source, *composed, f"# inputs: {inputs}"])

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """How IPython and hypothesis print a program: its source and inputs."""
        printer.text(str(self))


def _composed(
    before: tuple[Callable[..., Any], ...],
    f: Callable[..., Any],
    after: tuple[Callable[..., Any], ...],
) -> Callable[..., Any]:
    """``f`` with the functions of :meth:`Program.after` and :meth:`Program.then` around it."""

    def composed(*args: Any, **kwargs: Any) -> Any:
        total = 0.0
        for g in before:
            total = total + g(*args)
        total = total + f(*args, **kwargs)
        for g in after:
            total = total + g(*args)
        return total

    return composed


def _name(g: Callable[..., Any]) -> str:
    return getattr(g, "__qualname__", None) or repr(g)


def _literal(x: np.ndarray) -> str:
    dtype = "" if x.dtype == np.float64 else f", dtype=np.{x.dtype.name}"
    return f"np.array({x.tolist()!r}{dtype})"
