"""A generated program: its source, its input arrays, and how to call it.

:class:`FuzzProgram` is what the grammar renders a blueprint to and what the
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

__all__ = ["PROGRAM_FILENAME", "PROGRAM_IMPORTS", "FuzzProgram", "namespace"]

PROGRAM_FILENAME = "<fuzz program>"


# What a program may use besides numpy: the modules its Python-facing statements need.
PROGRAM_IMPORTS = (
    "import dataclasses, functools, math, numbers, threading",
    "from collections import OrderedDict, defaultdict, namedtuple",
    "from concurrent.futures import ThreadPoolExecutor",
)


@functools.lru_cache(maxsize=256)
def namespace(source: str) -> dict[str, Any]:
    """The names ``source`` defines, with numpy, mutagrad and :data:`PROGRAM_IMPORTS`."""
    names: dict[str, Any] = {"np": np, "mutagrad": mutagrad}
    exec("\n".join(PROGRAM_IMPORTS), names)
    exec(compile(source, PROGRAM_FILENAME, "exec"), names)
    return names


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
        names = namespace(self.source)
        if "make" in names:
            f, args = names["make"](*inputs)
            return f, tuple(args)
        return names["f"], tuple(inputs)

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
                *PROGRAM_IMPORTS,
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
