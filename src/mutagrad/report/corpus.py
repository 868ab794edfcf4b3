"""The corpus format: what a program for ``mutagrad report`` looks like, and how corpora load.

A *corpus* is a Python module (a ``.py`` file or an importable module) with a
module-level ``CORPUS``: a sequence of :class:`Program` records (or of dicts
with the same keys, converted on loading). Each program is

``name``
    unique within the corpus; the row label in every table.
``category``
    a short tag grouping programs (the bundled corpus uses the keys of
    :data:`CATEGORIES`; a user corpus may use its own).
``description``
    one line saying what the program does and why it is interesting.
``function``
    a plain Python function written with ordinary numpy that returns a scalar
    (a Python or numpy float, or a 0-d array). It must run unchanged on plain
    ndarrays: that is how the reference gradient is computed, by central
    finite differences (:func:`mutagrad.testing.numerical_gradient`). Keep it
    smooth at ``args`` (no kinks, ties or branch switches within ~1e-6), so
    finite differences are accurate.
``args``
    the point to differentiate at: ndarrays (float or int), Python floats and
    ints. Every numeric argument is differentiated; an int the function only
    uses as a size, an axis or an index gets no gradient (``None``).
    The runner hands the function fresh copies on every call, so a program
    may mutate its arguments.
``mutates``
    whether the program writes in place into an array the tape traces (one
    that depends on a differentiated input, or the input itself). Strict
    mode refuses exactly these programs.
``zygote``
    what Zygote does with the equivalent Julia code where that is known, as
    short text: ``"error: mutation"``, ``"error: try/catch"``, ``"ok"``,
    ``"ok (rrule)"``; ``""`` when unknown. For the seed programs this is what
    the seed documents show; for the other mutating programs it is what
    Zygote's documented rule ("Mutating arrays is not supported") implies.
``source``
    where the program comes from (a seed document's section, "pattern" for
    mutation patterns of everyday numpy code, "control" for the pure ones).
``note``
    optional: what a reader should know about the result (why a poison error
    is genuine or a false alarm).
``known_issue``
    optional: a known mutagrad bug this program reproduces (a wrong gradient,
    a crash). The report still shows its results as they are, wrong ones in
    red in the headline, but they do not make ``mutagrad report`` exit with
    status 1, and the tests require them to stay wrong until the mark is
    removed together with the fix.
``rtol``, ``atol``
    optional tolerances for comparing with finite differences (defaults:
    :data:`DEFAULT_RTOL`, and :data:`DEFAULT_ATOL` times the largest
    reference entry when that exceeds one).
``code``
    optional: the program's text, for a program that has no file to read it
    from (``mutagrad report --generated N`` fills it in for the programs it
    draws, :mod:`mutagrad.report.generated`); the report shows it.

A minimal user corpus, ``my_corpus.py``::

    import numpy as np
    from mutagrad.report import Program

    def running_sum(x):
        out = np.empty_like(x)
        out[0] = x[0]
        for i in range(1, len(x)):
            out[i] = out[i - 1] + x[i] ** 2
        return np.sum(out)

    CORPUS = [
        Program(name="running sum", category="buffer-loop",
                description="prefix sums of x**2 written into a fresh buffer",
                function=running_sum, args=(np.linspace(0.1, 1.0, 8),), mutates=True),
    ]

and ``mutagrad report --corpus my_corpus.py`` (or ``--corpus my_package.my_corpus``).
The decorator :func:`add_to` keeps metadata beside each function instead.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-5

ZYGOTE_MUTATION_ERROR = "error: mutation"
ZYGOTE_TRY_CATCH_ERROR = "error: try/catch"
ZYGOTE_OK = "ok"
ZYGOTE_OK_WITH_RULE = "ok (rrule)"

CATEGORIES: dict[str, str] = {
    "seed": "the seed documents' scenarios (Zygote's limitations, ChainRules' rules page, "
    "the mutation proposal thread, Zygote's API page)",
    "buffer-loop": "a fresh buffer filled element by element or row by row in a loop",
    "accumulator": "an array accumulated into with +=, *= or np.add.at",
    "normalisation": "in-place normalisation, standardisation and softmax",
    "sort": "in-place sort (ndarray.sort)",
    "ode": "ODE stepping into a preallocated array or an in-place state (Euler, RK4, leapfrog)",
    "dynamic-programming": "dynamic-programming tables filled cell by cell or row by row",
    "scratch": "a scratch buffer reused across loop iterations",
    "view-write": "writes through views: slices, rows, columns, transposes, reshapes",
    "fancy-index": "writes through integer-array and boolean indexes, np.put, np.putmask, "
    "np.fill_diagonal, np.add.at",
    "out-ufunc": "ufuncs and functions writing into out=",
    "library": "library-style functions that mutate internally (solvers, orthogonalisation, "
    "optimisers)",
    "mutate-argument": "functions that mutate their own argument",
    "pure": "pure programs without mutation: the control group",
}


class CorpusError(ValueError):
    """A corpus that cannot be loaded or whose programs are malformed."""


def _to_tuple(args: Any) -> tuple[Any, ...]:
    return tuple(args) if isinstance(args, (tuple, list)) else (args,)


@attrs.frozen
class Program:
    """One program of a corpus: a plain numpy function, the point to differentiate at, metadata.

    See the module docstring for the meaning of every field.
    """

    name: str
    category: str
    description: str
    function: Callable[..., Any] = attrs.field(repr=False)
    args: tuple[Any, ...] = attrs.field(converter=_to_tuple, repr=False)
    mutates: bool
    zygote: str = ""
    source: str = ""
    note: str = ""
    known_issue: str = ""
    rtol: float | None = None
    atol: float | None = None
    code: str = ""

    @property
    def argument_summary(self) -> str:
        """The arguments' shapes and kinds, short: ``float64[5], float``."""
        parts = []
        for a in self.args:
            if isinstance(a, np.ndarray):
                shape = ",".join(str(n) for n in a.shape)
                parts.append(f"{a.dtype}[{shape}]")
            else:
                parts.append(type(a).__name__)
        return ", ".join(parts)


def add_to(corpus: list[Program], **metadata: Any) -> Callable[[Callable[..., Any]], Any]:
    """Decorator: append ``Program(function=f, **metadata)`` to ``corpus``; return ``f`` unchanged.

    ``name`` defaults to the function's name and ``description`` to the first
    line of its docstring.
    """

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        fields = dict(metadata)
        fields.setdefault("name", function.__name__)
        if "description" not in fields:
            doc = (function.__doc__ or "").strip()
            fields["description"] = doc.splitlines()[0] if doc else function.__name__
        corpus.append(Program(function=function, **fields))
        return function

    return register


def as_program(item: Any) -> Program:
    """A :class:`Program` from a Program or a mapping with the same keys."""
    if isinstance(item, Program):
        return item
    if isinstance(item, Mapping):
        try:
            return Program(**item)
        except TypeError as error:
            raise CorpusError(f"a corpus entry has wrong or missing keys: {error}") from None
    raise CorpusError(
        f"a corpus entry is a {type(item).__name__}; expected mutagrad.report.Program or a dict"
    )


def validate(programs: Iterable[Any]) -> tuple[Program, ...]:
    """Convert and check a corpus: unique non-empty names, callables, described."""
    result = tuple(as_program(p) for p in programs)
    if not result:
        raise CorpusError("the corpus is empty")
    seen: set[str] = set()
    for p in result:
        if not p.name:
            raise CorpusError("a program has an empty name")
        if p.name in seen:
            raise CorpusError(f"two programs are named {p.name!r}")
        seen.add(p.name)
        if not callable(p.function):
            raise CorpusError(f"program {p.name!r}: function is not callable")
        if not p.category:
            raise CorpusError(f"program {p.name!r}: empty category")
    return result


DEFAULT_CORPUS = "mutagrad.report.programs"


def _import_path(path: Path) -> Any:
    module_name = f"_mutagrad_user_corpus_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise CorpusError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # attrs and dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[module_name]
        raise CorpusError(f"loading {path} raised {_located(error, path)}") from error
    return module


def _located(error: BaseException, path: Path) -> str:
    """``TypeError: ... (line 12)``: an error and the corpus file's line that raised it."""
    lines = [f.lineno for f in traceback.extract_tb(error.__traceback__)
             if Path(f.filename) == path]  # fmt: skip
    where = f" (line {lines[-1]})" if lines else ""
    first = str(error).strip().splitlines()
    return f"{type(error).__name__}: {first[0] if first else ''}{where}"


def load_corpus(path_or_module: str = DEFAULT_CORPUS) -> tuple[Program, ...]:
    """Load ``CORPUS`` from a ``.py`` file path or an importable module name."""
    path = Path(path_or_module)
    if path_or_module.endswith(".py") or path.is_file():
        if not path.is_file():
            raise CorpusError(f"no such corpus file: {path_or_module}")
        module = _import_path(path)
    else:
        try:
            module = importlib.import_module(path_or_module)
        except ImportError as error:
            raise CorpusError(
                f"cannot import corpus module {path_or_module!r}: {error}; pass a module name "
                "importable from here or the path of a .py file"
            ) from None
        except Exception as error:
            raise CorpusError(
                f"importing corpus module {path_or_module!r} raised {type(error).__name__}: "
                f"{error}"
            ) from error
    corpus = getattr(module, "CORPUS", None)
    if corpus is None:
        raise CorpusError(f"{path_or_module} has no module-level CORPUS")
    if not isinstance(corpus, (Sequence, tuple, list)):
        corpus = list(corpus)
    return validate(corpus)
