"""The report's corpus: the seed documents' Zygote scenarios as plain Python functions.

Each :class:`Scenario` is a scalar-valued function written with plain numpy,
the arguments to differentiate it at, and what the seeds say Zygote does with
it. The functions run unchanged on plain ndarrays, which is how the runner
computes its finite-difference reference.

The seeds' ``jclock`` (a foreign call to the C clock) is left out: its value
changes between calls, so finite differences of it are meaningless.
examples/foreign_call_rule.py covers it.

The custom rules here are the seeds' rules with the ȳ factor applied where the
seeds leave it out (their pullbacks are only right for ȳ = 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

import mutagrad

ZYGOTE_MUTATION_ERROR = "error: mutation"
ZYGOTE_TRY_CATCH_ERROR = "error: try/catch"


@attrs.frozen
class Scenario:
    """One function to differentiate, with its arguments and what Zygote does with it."""

    name: str
    description: str
    function: Callable[..., Any]
    args: tuple[Any, ...] = attrs.field(converter=tuple)
    writes_traced_array: bool
    """Whether the function writes in place into an array the tape traces."""
    zygote: str
    """Zygote's behaviour as the seed documents show it ("" when they do not)."""
    seed_section: str


def f_(x):
    """The seed's ``f!``: doubles ``x`` in place and returns it."""
    x[:] = 2 * x
    return x


def sum_of_f_(x):
    return np.sum(f_(x))


def g_(out, y):
    """The seed's ``g!``: writes ``2 * y`` into ``out``."""
    out[:] = 2 * y
    return out


def sum_of_g(y):
    """``sum(g(y))`` with the seed's ``g(y) = g!(similar(y), y)``."""
    return np.sum(g_(np.empty_like(y), y))


def addone(a):
    b = np.empty_like(a)
    b[:] = a + 1
    return np.sum(b)


@mutagrad.primitive
def addone_with_rule(a):
    return addone(a)


@mutagrad.rrule(addone_with_rule)
def _addone_rule(a):
    def addone_pullback(dy):
        return mutagrad.NoTangent(), dy * np.ones(len(a))

    return addone(a), addone_pullback


def sum_of_tryme(x):
    """``sum(tryme(x))``: ``2 * x`` inside a try block."""
    try:
        doubled = 2 * x
    except Exception as error:
        raise error
    return np.sum(doubled)


def exception(x):
    """The seed's ``exception``: ``x**2`` inside a try block."""
    try:
        return x**2
    except Exception:
        print("could not square input")


def mse(y, y_hat):
    """Mean squared error as a loop over scalars."""
    n = len(y)
    s = 0.0
    for i in range(n):
        s += (y[i] - y_hat[i]) ** 2.0
    return s / n


@mutagrad.primitive
def mse_with_rule(y, y_hat):
    return mse(y, y_hat)


@mutagrad.rrule(mse_with_rule)
def _mse_rule(x, x_hat):
    def mse_pullback(dy):
        g = (2 / len(x)) * (x - x_hat) * dy
        return mutagrad.NoTangent(), g, -g

    return mse(x, x_hat), mse_pullback


def sum3(a):
    x = a[0]
    y = a[1]
    z = a[2]
    return x + y + z


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


def square_then_clear(x):
    """Overwrites ``x`` after ``x * x`` saved it for its pullback."""
    y = x * x
    x.fill(0)
    return np.sum(y)


def _random(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(n)


LIMITATIONS = "Zygote docs, Limitations"
WHICH_RULES = "ChainRules docs, Which functions need rules?"

CORPUS: tuple[Scenario, ...] = (
    Scenario(
        name="f!",
        description="sum(f!(x)): x[:] = 2 * x overwrites the argument",
        function=sum_of_f_,
        args=(np.array([1.0, 2.0, 3.0]),),
        writes_traced_array=True,
        zygote=ZYGOTE_MUTATION_ERROR,
        seed_section=LIMITATIONS,
    ),
    Scenario(
        name="g",
        description="sum(g(y)), g(y) = g!(np.empty_like(y), y) fills a fresh buffer",
        function=sum_of_g,
        args=(np.array([0.5, -1.0, 4.0]),),
        writes_traced_array=True,
        zygote=ZYGOTE_MUTATION_ERROR,
        seed_section=LIMITATIONS,
    ),
    Scenario(
        name="addone",
        description="b = np.empty_like(a); b[:] = a + 1; sum(b)",
        function=addone,
        args=(np.array([1.0, 2.0, 3.0]),),
        writes_traced_array=True,
        zygote=ZYGOTE_MUTATION_ERROR,
        seed_section=WHICH_RULES,
    ),
    Scenario(
        name="addone+rrule",
        description="addone behind a custom rrule (the write happens inside the rule)",
        function=addone_with_rule,
        args=(np.array([1.0, 2.0, 3.0]),),
        writes_traced_array=False,
        zygote="ok (rrule)",
        seed_section=WHICH_RULES,
    ),
    Scenario(
        name="tryme",
        description="sum(tryme(x)): 2 * x inside try/except",
        function=sum_of_tryme,
        args=(np.array([1.0, 2.0, 3.0]),),
        writes_traced_array=False,
        zygote=ZYGOTE_TRY_CATCH_ERROR,
        seed_section=LIMITATIONS,
    ),
    Scenario(
        name="exception",
        description="x**2 inside try/except, at the Python float 3.0",
        function=exception,
        args=(3.0,),
        writes_traced_array=False,
        zygote=ZYGOTE_TRY_CATCH_ERROR,
        seed_section=WHICH_RULES,
    ),
    Scenario(
        name="mse",
        description="mean squared error as a loop over 30 scalars",
        function=mse,
        args=(_random(30, seed=1), _random(30, seed=2)),
        writes_traced_array=False,
        zygote="ok (slow)",
        seed_section=WHICH_RULES,
    ),
    Scenario(
        name="mse+rrule",
        description="mse behind a custom rrule with a vectorised pullback",
        function=mse_with_rule,
        args=(_random(30, seed=1), _random(30, seed=2)),
        writes_traced_array=False,
        zygote="ok (rrule)",
        seed_section=WHICH_RULES,
    ),
    Scenario(
        name="sum3",
        description="a[0] + a[1] + a[2] on a 30-element array",
        function=sum3,
        args=(_random(30, seed=3),),
        writes_traced_array=False,
        zygote="ok",
        seed_section=WHICH_RULES,
    ),
    Scenario(
        name="sum3+rrule",
        description="sum3 behind a custom rrule writing one dense gradient",
        function=sum3_with_rule,
        args=(_random(30, seed=3),),
        writes_traced_array=False,
        zygote="ok (rrule)",
        seed_section=WHICH_RULES,
    ),
    Scenario(
        name="fill after x*x",
        description="y = x * x; x.fill(0); sum(y): overwrites a value the pullback needs",
        function=square_then_clear,
        args=(np.array([1.0, 2.0, 3.0]),),
        writes_traced_array=True,
        zygote="",
        seed_section="not shown in the seeds (they warn about fill! rules)",
    ),
)
