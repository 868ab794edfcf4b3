"""Differential fuzzing: random mutating numpy programs whose gradients are judged against numpy.

mutagrad promises that a gradient is the true one or a
:class:`mutagrad.MutagradError`. This module hunts for the third possibility,
a silently wrong number:

* :func:`generate` draws a :class:`Blueprint` (a few lists of integers) from a
  ``random.Random``, and :func:`render` turns any blueprint into a
  :class:`Program`: Python source for ``f(x)`` or ``f(x, y)`` over float64
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
  ``--forward`` adds forward mode's column: ``jvp`` of the program along a
  random direction of its inputs against the finite-difference directional
  derivative (:data:`FORWARD`, which :func:`judge` also takes).

Programs are built so that central finite differences are a reliable
reference: smooth operations, input elements drawn from a grid that keeps
them apart from each other, from zero and from the thresholds the programs
compare with, and two step sizes whose estimates must agree.

The package's modules, in the order a program passes through them:

* :mod:`.blueprint` – the tables a blueprint's integers index (setups,
  shapes, statement kinds and their weights, the input grid) and
  :func:`draw_blueprint`;
* :mod:`.grammar` – :func:`render`: the setups (:mod:`.grammar.setups`), the
  statement kinds (:mod:`.grammar.reads`, :mod:`.grammar.writes`,
  :mod:`.grammar.python_questions`) and the program being written
  (:mod:`.grammar.renderer`);
* :mod:`.program` – :class:`Program`, the rendered program;
* :mod:`.oracle` – :func:`judge` and its vocabulary;
* :mod:`.minimise` – :func:`minimise`;
* :mod:`.refusals` – :func:`refusal_reason`: a refusal's cause as a short,
  stable key, counted per mode in every run's summary and in the report;
* :mod:`.cli` – the command line and :func:`fuzz_figures` for the report.
"""

from __future__ import annotations

from mutagrad.testing.fuzz.blueprint import (
    CHOICE_RANGE,
    CHOICES_PER_STEP,
    ENDING_COUNT,
    FUZZ_GRAMMAR,
    SETUPS,
    SHAPES,
    STEP_KINDS,
    VALUE_COUNT,
    VALUE_GRID,
    Blueprint,
    Grammar,
    draw_blueprint,
)
from mutagrad.testing.fuzz.cli import (
    FuzzFigures,
    finding_report,
    fuzz_figures,
    main,
    program_rng,
    summary_table,
)
from mutagrad.testing.fuzz.grammar import generate, render
from mutagrad.testing.fuzz.minimise import minimise
from mutagrad.testing.fuzz.oracle import FORWARD, MODES, Verdict, discard_reason, judge
from mutagrad.testing.fuzz.program import Program
from mutagrad.testing.fuzz.refusals import refusal_breakdown, refusal_reason
from mutagrad.testing.verdicts import ModeResult, Outcome

__all__ = [
    "CHOICES_PER_STEP",
    "CHOICE_RANGE",
    "ENDING_COUNT",
    "FORWARD",
    "FUZZ_GRAMMAR",
    "MODES",
    "SETUPS",
    "SHAPES",
    "STEP_KINDS",
    "VALUE_COUNT",
    "VALUE_GRID",
    "Blueprint",
    "FuzzFigures",
    "Grammar",
    "ModeResult",
    "Outcome",
    "Program",
    "Verdict",
    "discard_reason",
    "draw_blueprint",
    "finding_report",
    "fuzz_figures",
    "generate",
    "judge",
    "main",
    "minimise",
    "program_rng",
    "refusal_breakdown",
    "refusal_reason",
    "render",
    "summary_table",
]
