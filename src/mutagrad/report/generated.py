"""Generated programs for ``mutagrad report --generated N``: random mutating numpy programs.

The programs come from the differential fuzzer's seeded generator
(:func:`mutagrad.testing.fuzz.generate`), in :data:`REPORT_GRAMMAR`: the
fuzzer's statements that are plain numpy (reads, views, layouts, casts,
gathers, every in-place write, the questions library code asks Python), over
one or two float64 arguments, returning a float. Left out are the statements
that call mutagrad itself (nested gradients, ``checkpointed``) or start a
thread, which a peer engine could not run as written. Each program runs on
plain ndarrays, so the report judges it exactly as a corpus program: plain
numpy's value, central finite differences.

Draw ``k`` of seed ``S`` (:func:`draw`) is the first usable program of the
random source ``random.Random(f"{S}:{k}")``, the fuzzer's own
(:func:`mutagrad.testing.fuzz.program_rng`): usable means that numpy runs it,
its value is finite, it has no float32 intermediate (whose rounding the
report's finite differences would take for a wrong gradient) and it is
smooth at its input (the fuzzer's two finite-difference steps agree). So the
same ``(S, k)`` gives the same program in any process, a worker process or a
dask worker included, and ``--generated 10`` gives the first ten programs of
``--generated 1000``, with the same mutagrad version (the grammar is part of
it).

Each drawn program becomes a :class:`~mutagrad.report.corpus.Program` named
``generated-k`` in the category :data:`GENERATED_CATEGORY`, whose ``code``
field holds its text and whose ``source`` says which draw it is; the report
shows the text. A draw is sent between processes as a :class:`Draw` (text,
arguments and whether it mutates), never as a function.
"""

from __future__ import annotations

import linecache

import attrs
import numpy as np

from mutagrad.report.corpus import Program
from mutagrad.testing.fuzz import Grammar, generate, program_rng
from mutagrad.testing.fuzz.blueprint import KIND_WEIGHTS
from mutagrad.testing.fuzz.oracle import discard_reason
from mutagrad.testing.fuzz.program import compiled

DEFAULT_SEED = 0
GENERATED_CATEGORY = "generated"
GENERATOR = "mutagrad.testing.fuzz.generate (the report's grammar)"
#: Programs of a draw's random source tried before giving up (about one in eight is unusable).
ATTEMPTS = 200
MAX_STATEMENTS = 8

#: Statement kinds a peer engine could not run as written: they call mutagrad or start a thread.
NOT_PLAIN_NUMPY = ("nested gradient", "checkpointed", "thread", "write outside view")
REPORT_GRAMMAR = Grammar(
    setups=(*["one argument"] * 3, "two arguments"),
    kinds=tuple(
        kind
        for kind, weight in KIND_WEIGHTS.items()
        if kind not in NOT_PLAIN_NUMPY
        for _ in range(weight)
    ),
    float_result=True,
)


class GenerationError(RuntimeError):
    """No usable program came from a draw's random source (see :data:`ATTEMPTS`)."""


@attrs.frozen
class Draw:
    """One drawn program as plain data: its text, its arguments, whether it writes in place."""

    seed: int
    index: int
    code: str
    args: tuple[np.ndarray, ...] = attrs.field(eq=False)
    mutates: bool

    @property
    def name(self) -> str:
        return generated_name(self.index)


def generated_name(index: int) -> str:
    return f"{GENERATED_CATEGORY}-{index}"


def draw(task: tuple[int, int]) -> Draw:
    """Draw ``index`` of ``seed`` (``task = (seed, index)``; see the module docstring)."""
    seed, index = task
    rng = program_rng(seed, index)
    for _ in range(ATTEMPTS):
        program = generate(rng, MAX_STATEMENTS, REPORT_GRAMMAR)
        if not program.low_precision and discard_reason(program) is None:
            return Draw(seed, index, program.source, program.inputs, program.mutates)
    raise GenerationError(
        f"draw {index} of seed {seed}: none of {ATTEMPTS} programs runs smoothly on numpy"
    )


def as_program(drawn: Draw) -> Program:
    """The corpus record of a draw: its function compiled from its text, which the report shows."""
    filename = f"<{drawn.name}, seed {drawn.seed}>"
    namespace = compiled(drawn.code, filename)
    # Tracebacks and mutagrad's errors quote the program's lines from here.
    lines = drawn.code.splitlines(keepends=True)
    linecache.cache[filename] = (len(drawn.code), None, lines, filename)
    statements = len(drawn.code.splitlines()) - 2
    arguments = len(drawn.args)
    return Program(
        name=drawn.name,
        category=GENERATED_CATEGORY,
        description=f"random program {drawn.index} of seed {drawn.seed}: {statements} "
        f"line{'s' if statements != 1 else ''} over {arguments} "
        f"argument{'s' if arguments != 1 else ''}"
        + (", writes in place" if drawn.mutates else ", no in-place write"),
        function=namespace["f"],
        args=tuple(a.copy() for a in drawn.args),
        mutates=drawn.mutates,
        source=f"{GENERATOR}, seed {drawn.seed}, draw {drawn.index}",
        code=drawn.code,
    )


def draw_program(seed: int, index: int) -> Program:
    """Draw ``index`` of ``seed`` as a corpus record (in this process)."""
    return as_program(draw((seed, index)))


def listing(program: Program) -> list[str]:
    """A program's imports and text, then its arguments as numpy literals: enough to rerun it."""
    arguments = [
        f"a{k} = np.array({a.tolist()!r})" if isinstance(a, np.ndarray) else f"a{k} = {a!r}"
        for k, a in enumerate(program.args)
    ]
    return [*imports_of(program.code), *program.code.splitlines(), *arguments]


def imports_of(code: str) -> list[str]:
    """The import lines a generated program's text needs (numpy, and the modules it names)."""
    needed = ["import numpy as np"]
    for module in ("math", "numbers"):
        if f"{module}." in code:
            needed.append(f"import {module}")
    return needed
