"""Generated programs for ``mutagrad report --generated N``: random mutating numpy programs.

The programs come from :func:`mutagrad.testing.strategies.programs`, the
hypothesis strategy of straight-line numpy programs with reads, views and
in-place writes (setitem on slices, rows and advanced indexes, augmented
operators, ``out=``, ``fill``, ``np.copyto``, writes through views). Each one
returns a scalar and runs on plain ndarrays, so the report judges it exactly
as a corpus program: plain numpy's value, central finite differences.

Draws are reproducible and independent of each other. Draw ``k`` of seed
``S`` (:func:`draw`) is the last of the two examples of a hypothesis run of
its own, seeded with ``"S:k"`` (``hypothesis.seed``), in the generation phase
only and without an example database: hypothesis's first example is the
simplest program of the strategy, every time, and the second one is random.
So the same ``(S, k)`` gives the same program in any process, a worker
process or a dask worker included, and ``--generated 10`` gives the first ten
programs of ``--generated 1000``, with the same hypothesis version (the
report records it). ``strategy.example()`` would not do: it draws from
hypothesis's global random state, differently on every run.

One more thing had to go for that: hypothesis (6.131 and later) now and then
draws a literal found in the source of the *local* modules imported at the
time (any module outside site-packages and the standard library: mutagrad's
own in an editable install, a user's corpus), so a draw depended on what else
the process had imported — the command line imports more than a worker does.
:func:`draw` hides those modules' literals from hypothesis while it draws
(:func:`_without_local_constants`; hypothesis's built-in constants stay).

Each drawn program becomes a :class:`~mutagrad.report.corpus.Program` named
``generated-k`` in the category :data:`GENERATED_CATEGORY`, whose ``code``
field holds its text and whose ``source`` says which draw it is; the report
shows the text. A draw is sent between processes as a :class:`Draw` (text,
arguments and whether it mutates), never as a function.
"""

from __future__ import annotations

import contextlib
import linecache
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from mutagrad.report.corpus import Program

DEFAULT_SEED = 0
GENERATED_CATEGORY = "generated"
STRATEGY = "mutagrad.testing.strategies.programs()"
HYPOTHESIS_HINT = (
    "--generated draws its programs with hypothesis: pip install hypothesis (or pip install "
    "-e '.[test]' in a clone of mutagrad)"
)


class GenerationError(RuntimeError):
    """Programs cannot be generated here (hypothesis is missing)."""


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


def hypothesis_version() -> str | None:
    try:
        import hypothesis
    except ModuleNotFoundError:
        return None
    return hypothesis.__version__


_DRAWING = threading.Lock()


@contextlib.contextmanager
def _without_local_constants() -> Iterator[None]:
    """Draw without the literals of the local modules this process happens to have imported.

    It replaces a private function of hypothesis for the duration (under a
    lock, and emptying the cache of constants before and after); with a
    hypothesis that lacks it there is nothing to hide. The test
    ``test_a_draw_does_not_depend_on_what_else_is_imported`` checks that it works.
    """
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants

        original = providers._get_local_constants
        cache = providers.CONSTANTS_CACHE.cache
    except (ImportError, AttributeError):
        yield
        return
    none = Constants()
    with _DRAWING:
        providers._get_local_constants = lambda: none
        cache.clear()
        try:
            yield
        finally:
            providers._get_local_constants = original
            cache.clear()


def draw(task: tuple[int, int]) -> Draw:
    """Draw ``index`` of ``seed`` (``task = (seed, index)``; see the module docstring)."""
    seed_value, index = task
    try:
        from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings

        from mutagrad.testing.strategies import programs
    except ModuleNotFoundError as missing:
        raise GenerationError(HYPOTHESIS_HINT) from missing
    drawn: list[Any] = []

    @settings(
        max_examples=2,
        phases=[Phase.generate],
        database=None,
        derandomize=False,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        print_blob=False,
    )
    @seed(f"{seed_value}:{index}")
    @given(programs())
    def collect(program: Any) -> None:
        drawn.append(program)

    with _without_local_constants():
        collect()
    program = drawn[-1]
    return Draw(seed_value, index, program.source, tuple(program.args), program.mutates)


def as_program(drawn: Draw) -> Program:
    """The corpus record of a draw: its function compiled from its text, which the report shows."""
    filename = f"<{drawn.name}, seed {drawn.seed}>"
    namespace: dict[str, Any] = {"np": np}
    exec(compile(drawn.code, filename, "exec"), namespace)
    # Tracebacks and mutagrad's errors quote the program's lines from here.
    lines = drawn.code.splitlines(keepends=True)
    linecache.cache[filename] = (len(drawn.code), None, lines, filename)
    statements = len(drawn.code.splitlines()) - 2
    arguments = len(drawn.args)
    return Program(
        name=drawn.name,
        category=GENERATED_CATEGORY,
        description=f"random program {drawn.index} of seed {drawn.seed}: {statements} "
        f"statement{'s' if statements != 1 else ''} over {arguments} "
        f"argument{'s' if arguments != 1 else ''}"
        + (", writes in place" if drawn.mutates else ", no in-place write"),
        function=namespace["program"],
        args=tuple(a.copy() for a in drawn.args),
        mutates=drawn.mutates,
        source=f"{STRATEGY}, seed {drawn.seed}, draw {drawn.index}",
        code=drawn.code,
    )


def draw_program(seed: int, index: int) -> Program:
    """Draw ``index`` of ``seed`` as a corpus record (in this process)."""
    return as_program(draw((seed, index)))


def listing(program: Program) -> list[str]:
    """A program's text, then its arguments as numpy literals: enough to reproduce a result."""
    arguments = [
        f"a{k} = np.array({a.tolist()!r})" if isinstance(a, np.ndarray) else f"a{k} = {a!r}"
        for k, a in enumerate(program.args)
    ]
    return [*program.code.splitlines(), *arguments]
