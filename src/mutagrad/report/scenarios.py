"""The seed documents' scenarios as corpus programs (category ``seed``).

Each program is a scalar-valued function written with plain numpy, the point
to differentiate it at, and what the seed documents show Zygote doing with the
Julia original. The functions run unchanged on plain ndarrays, which is how
the report computes its finite-difference reference.

The functions that the example scripts show (``examples/``: ``f!``, ``g``,
``addone``, ``tryme``, ``exception``, ``mse``, ``sum3``, ``fill after
x*x``) are imported from there (:func:`load_example`), so the report runs
the very code the examples print; the ones no example shows are defined
here. The examples live in a clone of mutagrad, not in an installed wheel:
without them (:func:`examples_directory` is ``None``) the corpus has no seed
category, and :data:`EXAMPLES_MISSING` says why.

The seeds' ``jclock`` (a foreign call to the C clock) is left out: its value
changes between calls, so finite differences of it are meaningless.
examples/foreign_call_rule.py covers it.

The custom rules here are the seeds' rules with the ȳ factor applied where the
seeds leave it out (their pullbacks are only right for ȳ = 1; the examples
show the seeds' own).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

import mutagrad
from mutagrad.report.corpus import (
    ZYGOTE_MUTATION_ERROR,
    ZYGOTE_OK,
    ZYGOTE_OK_WITH_RULE,
    ZYGOTE_TRY_CATCH_ERROR,
    Program,
)

LIMITATIONS = "Zygote docs, Limitations"
WHICH_RULES = "ChainRules docs, Which functions need rules?"
PROPOSAL_THREAD = "thread: Idea to make Zygote support mutation in easy cases"
API_PAGE = "Zygote API page (via Flux's docs)"
EXAMPLES_MISSING = (
    "the seed scenarios come from the examples/ directory of a clone of mutagrad, which this "
    "installation lacks: install from the clone with pip install -e ."
)


def examples_directory() -> Path | None:
    """``examples/`` of the clone mutagrad runs from (a checkout or an editable install)."""
    candidate = Path(mutagrad.__file__).resolve().parents[2] / "examples"
    return candidate if (candidate / "_compare_modes.py").is_file() else None


def load_example(name: str) -> ModuleType:
    """``examples/<name>.py`` as the module ``mutagrad_example_<name>`` (its ``main`` not run).

    The scripts import their helpers (``_compare_modes``, ``_timing``) as
    siblings, so the directory is on ``sys.path`` while one loads.
    """
    registered = f"mutagrad_example_{name}"
    if registered in sys.modules:
        return sys.modules[registered]
    directory = examples_directory()
    if directory is None:
        raise ModuleNotFoundError(EXAMPLES_MISSING, name=name)
    spec = importlib.util.spec_from_file_location(registered, directory / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(directory))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(directory))
    sys.modules[registered] = module
    return module


def square_then_clear_unused(x):
    """``y = x*x; fill!(x, 0); sum(x)``: the overwritten x is never read."""
    y = x * x  # noqa: F841 (saved for a pullback that never runs)
    x.fill(0)
    return np.sum(x)


def comprehension_sum(x):
    """The thread's ``sum(Float32[x for _ in 1:3])``, as numpy builds it: from a list."""
    return np.sum(np.array([x * 1.0 for _ in range(3)]))


def product_of_three(a, b, c):
    """The API page's ``gradient(*, 2.0, 3.0, 5.0)``."""
    return a * b * c


def sum_abs2(x):
    """The API page's ``sum(abs2, x)``."""
    return np.sum(np.abs(x) ** 2)


def size_as_power(x, y, d):
    """The API page's ``p = size(x, d); sum(x.^p .+ y)``: ``d`` is an axis, no gradient."""
    p = np.shape(x)[d]
    return np.sum(x**p + y)


def broadcast_product(x, y, z):
    """The API page's implicit-parameter example ``sum(x .* y .* z')``, explicitly."""
    return np.sum(x * y[:, None] * z[None, :])


def _random(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(n)


def _primitives_with_rules(addone, mse, sum3):
    """The seeds' ``addone``, ``mse`` and ``sum3`` behind custom rrules, the ȳ factor applied."""

    @mutagrad.primitive
    def addone_with_rule(a):
        return addone(a)

    @mutagrad.rrule(addone_with_rule)
    def _addone_rule(a):
        def addone_pullback(dy):
            return mutagrad.NoTangent(), dy * np.ones(len(a))

        return addone(a), addone_pullback

    @mutagrad.primitive
    def mse_with_rule(y, y_hat):
        return mse(y, y_hat)

    @mutagrad.rrule(mse_with_rule)
    def _mse_rule(x, x_hat):
        def mse_pullback(dy):
            g = (2 / len(x)) * (x - x_hat) * dy
            return mutagrad.NoTangent(), g, -g

        return mse(x, x_hat), mse_pullback

    @mutagrad.primitive
    def sum3_with_rule(a):
        return sum3(a)

    @mutagrad.rrule(sum3_with_rule)
    def _sum3_rule(a):
        def sum3_pullback(dy):
            grad = np.zeros(len(a))
            grad[0:3] += dy
            return mutagrad.NoTangent(), grad

        return sum3(a), sum3_pullback

    return addone_with_rule, mse_with_rule, sum3_with_rule


def seed_programs() -> tuple[Program, ...]:
    """The seed scenarios, their functions imported from ``examples/`` (see the module doc)."""
    sum_of_f_ = load_example("mutate_argument").sum_of_f_
    sum_of_g = load_example("mutate_fresh_buffer").sum_of_g
    addone = load_example("addone_rule").addone
    try_except = load_example("try_except")
    sum_of_tryme, exception = try_except.sum_of_tryme, try_except.exception
    mse = load_example("mse_loop_vs_rule").mse
    sum3 = load_example("sum3_indexing").sum3
    square_then_clear = load_example("overwrite_saved_value").square_then_clear
    addone_with_rule, mse_with_rule, sum3_with_rule = _primitives_with_rules(addone, mse, sum3)
    return (
        Program(
            name="f!",
            category="seed",
            description="sum(f!(x)): x[:] = 2 * x overwrites the argument",
            function=sum_of_f_,
            args=(np.array([1.0, 2.0, 3.0]),),
            mutates=True,
            zygote=ZYGOTE_MUTATION_ERROR,
            source=LIMITATIONS,
        ),
        Program(
            name="g",
            category="seed",
            description="sum(g(y)), g(y) = g!(np.empty_like(y), y) fills a fresh buffer",
            function=sum_of_g,
            args=(np.array([0.5, -1.0, 4.0]),),
            mutates=True,
            zygote=ZYGOTE_MUTATION_ERROR,
            source=LIMITATIONS,
        ),
        Program(
            name="addone",
            category="seed",
            description="b = np.empty_like(a); b[:] = a + 1; sum(b)",
            function=addone,
            args=(np.array([1.0, 2.0, 3.0]),),
            mutates=True,
            zygote=ZYGOTE_MUTATION_ERROR,
            source=WHICH_RULES,
        ),
        Program(
            name="addone+rrule",
            category="seed",
            description="addone behind a custom rrule (the write happens inside the rule)",
            function=addone_with_rule,
            args=(np.array([1.0, 2.0, 3.0]),),
            mutates=False,
            zygote=ZYGOTE_OK_WITH_RULE,
            source=WHICH_RULES,
        ),
        Program(
            name="tryme",
            category="seed",
            description="sum(tryme(x)): 2 * x inside try/except",
            function=sum_of_tryme,
            args=(np.array([1.0, 2.0, 3.0]),),
            mutates=False,
            zygote=ZYGOTE_TRY_CATCH_ERROR,
            source=LIMITATIONS,
        ),
        Program(
            name="exception",
            category="seed",
            description="x**2 inside try/except, at the Python float 3.0",
            function=exception,
            args=(3.0,),
            mutates=False,
            zygote=ZYGOTE_TRY_CATCH_ERROR,
            source=WHICH_RULES,
        ),
        Program(
            name="mse",
            category="seed",
            description="mean squared error as a loop over 30 scalars",
            function=mse,
            args=(_random(30, seed=1), _random(30, seed=2)),
            mutates=False,
            zygote="ok (slow)",
            source=WHICH_RULES,
        ),
        Program(
            name="mse+rrule",
            category="seed",
            description="mse behind a custom rrule with a vectorised pullback",
            function=mse_with_rule,
            args=(_random(30, seed=1), _random(30, seed=2)),
            mutates=False,
            zygote=ZYGOTE_OK_WITH_RULE,
            source=WHICH_RULES,
        ),
        Program(
            name="sum3",
            category="seed",
            description="a[0] + a[1] + a[2] on a 30-element array",
            function=sum3,
            args=(_random(30, seed=3),),
            mutates=False,
            zygote=ZYGOTE_OK,
            source=WHICH_RULES,
        ),
        Program(
            name="sum3+rrule",
            category="seed",
            description="sum3 behind a custom rrule writing one dense gradient",
            function=sum3_with_rule,
            args=(_random(30, seed=3),),
            mutates=False,
            zygote=ZYGOTE_OK_WITH_RULE,
            source=WHICH_RULES,
        ),
        Program(
            name="fill after x*x",
            category="seed",
            description="y = x * x; x.fill(0); sum(y): overwrites a value the pullback needs",
            function=square_then_clear,
            args=(np.array([1.0, 2.0, 3.0]),),
            mutates=True,
            zygote=ZYGOTE_MUTATION_ERROR,
            source=PROPOSAL_THREAD,
            note="genuine: multiply's pullback needs the old x, so the only right answers are "
            "2x (snapshot) or an error (poison); an unchecked engine returns zeros",
        ),
        Program(
            name="fill, x*x unused",
            category="seed",
            description="y = x * x; x.fill(0); sum(x): the overwritten x is never read",
            function=square_then_clear_unused,
            args=(np.array([1.0, 2.0, 3.0]),),
            mutates=True,
            zygote=ZYGOTE_MUTATION_ERROR,
            source=PROPOSAL_THREAD,
        ),
        Program(
            name="comprehension",
            category="seed",
            description="sum(np.array([x for _ in range(3)])) at a scalar x (Julia's typed "
            "comprehension mutates; numpy's list-to-array does not)",
            function=comprehension_sum,
            args=(0.7,),
            mutates=False,
            zygote=ZYGOTE_MUTATION_ERROR,
            source=PROPOSAL_THREAD,
            note="np.array of a list of traced scalars converts them to raw floats, which "
            "mutagrad refuses (TracerConversionError); np.stack of the list works",
        ),
        Program(
            name="api: a*b*c",
            category="seed",
            description="gradient(*, 2.0, 3.0, 5.0) == (15.0, 10.0, 6.0)",
            function=product_of_three,
            args=(2.0, 3.0, 5.0),
            mutates=False,
            zygote=ZYGOTE_OK,
            source=API_PAGE,
        ),
        Program(
            name="api: sum(abs2)",
            category="seed",
            description="sum(abs(x)**2) at [7, 11, 13]",
            function=sum_abs2,
            args=(np.array([7.0, 11.0, 13.0]),),
            mutates=False,
            zygote=ZYGOTE_OK,
            source=API_PAGE,
        ),
        Program(
            name="api: size as power",
            category="seed",
            description="p = x.shape[d]; sum(x**p + y) at the int array [7, 11], y = 0, d = 0",
            function=size_as_power,
            args=(np.array([7, 11]), 0, 0),
            mutates=False,
            zygote=ZYGOTE_OK,
            source=API_PAGE,
        ),
        Program(
            name="api: broadcast",
            category="seed",
            description="sum(x * y[:, None] * z[None, :]) with x 2x3",
            function=broadcast_product,
            args=(
                np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
                np.array([7.0, 8.0]),
                np.array([1.0, 10.0, 100.0]),
            ),
            mutates=False,
            zygote=ZYGOTE_OK,
            source=API_PAGE,
        ),
    )


SEED_PROGRAMS: tuple[Program, ...] = seed_programs() if examples_directory() is not None else ()
