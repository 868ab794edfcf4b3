"""The program being written: its lines, the names they define, and how statements choose operands.

A :class:`Renderer` holds the state of one program while the statement kinds
(:mod:`~mutagrad.testing.fuzz.grammar.reads`,
:mod:`~mutagrad.testing.fuzz.grammar.writes`,
:mod:`~mutagrad.testing.fuzz.grammar.python_questions`) append to it: the
lines of ``f``, the lines ``make`` runs before it, and a :class:`Var` per
name, which says what a later statement may do with that name (read it,
index it, write it). A statement reads its choices from a :class:`Draw`, the
integers of its step in the blueprint.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from mutagrad.testing.fuzz.blueprint import (
    ENDING_COUNT,
    FUZZ_GRAMMAR,
    JITTER,
    VALUE_GRID,
    Blueprint,
    Grammar,
)
from mutagrad.testing.fuzz.grammar.expressions import FLOATING, REAL, mask_literal, regions

__all__ = ["Draw", "Renderer", "Var", "grid_values"]


@attrs.define
class Var:
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

    @property
    def dims(self) -> tuple[int, ...]:
        """The shape, where a statement needs it known (``find`` returns only such names
        unless asked with ``known=False``)."""
        assert self.shape is not None, f"{self.name}'s shape depends on the data"
        return self.shape


class Draw:
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


class Renderer:
    """A program being written from a blueprint: source lines and the names each line defines.

    The setup (:func:`mutagrad.testing.fuzz.grammar.setups.apply_setup`) fills
    in the arguments: ``shape``, ``n_inputs``, ``params`` (``f``'s parameters),
    ``arguments`` (what ``make`` passes for them, in terms of the inputs
    ``a0``, ``a1``) and ``argument_sources``. A statement that writes into a
    float or complex array (one that may carry a derivative) is appended with
    :meth:`write`, which counts it.
    """

    def __init__(self, blueprint: Blueprint, grammar: Grammar = FUZZ_GRAMMAR):
        self.blueprint = blueprint
        self.grammar = grammar
        self.vars: list[Var] = []
        self.lines: list[str] = []  # the body of f
        self.writes = 0  # statements that write into a float or complex array
        self.outside: list[str] = []  # make's lines before ``def f``
        self.keywords: dict[str, str] = {}  # f's keyword arguments, bound by make
        self.tags: list[str] = []
        self.counter = 0
        self.writes_caller_memory = False
        self.shape: tuple[int, ...] = ()
        self.n_inputs = 1
        self.params: list[str] = []
        self.arguments: list[str] = []
        self.argument_sources: tuple[int | None, ...] = ()

    # -- names --------------------------------------------------------------

    def name(self, prefix: str) -> str:
        """A new name: ``prefix`` and a number no other name has."""
        self.counter += 1
        return f"{prefix}{self.counter}"

    def write(self, line: str) -> None:
        """Append ``line``, a write into a float or complex array."""
        self.lines.append(line)
        self.writes += 1

    def define(self, prefix: str, expression: str, shape: Any, dtype: str, **fields: Any) -> Var:
        """Append ``name = expression`` and record the new name."""
        var = Var(self.name(prefix), shape, dtype, **fields)
        self.lines.append(f"{var.name} = {expression}")
        self.vars.append(var)
        return var

    def find(
        self,
        roles: tuple[str, ...] = ("array",),
        dtypes: tuple[str, ...] = FLOATING,
        shape: Any = None,
        known: bool = True,
        writable: bool = False,
        ndim: int | None = None,
    ) -> list[Var]:
        """The names of one of ``roles`` and ``dtypes`` that match the other criteria.

        ``known``: only names whose shape does not depend on the data.
        """
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
            if writable and not self.may_write(v):
                continue
            found.append(v)
        return found

    def may_write(self, v: Var) -> bool:
        # With a view of the caller's array written inside f, the caller's
        # arrays are only ever written through that view (see Program).
        return v.writable and not (self.outside_views and v.argument_memory)

    @property
    def outside_views(self) -> list[Var]:
        return [v for v in self.vars if v.role == "outside"]

    # -- operands -------------------------------------------------------------

    def operand(self, d: Draw, shape: tuple[int, ...], dtypes: tuple[str, ...] = REAL) -> str:
        """A value of ``shape``: a region of some array, a scalar, or a constant."""
        candidates = [
            (v.name + text, v.dtype)
            for v in self.find(dtypes=dtypes)
            for text, region_shape in self.regions_of(v)
            if region_shape == shape
        ]
        choice = d.number() % 10
        if choice < 7 and candidates:
            text = d.pick(candidates)[0]
            return d.pick(["{0}", "{0}", "np.sin({0})", "2.0 * {0}", "{0} * {0}"]).format(text)
        scalars = self.find(("scalar",), dtypes=REAL)
        if choice < 9 and scalars:
            return d.pick(scalars).name
        return d.pick(["0.5", "1.25", "-0.75"])

    def regions_of(self, v: Var) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """(index text, shape) of ``v`` itself and of its regions."""
        if not v.shape:
            return (("", ()),) if v.shape == () else ()
        return (("", v.shape), *regions(v.shape))

    def scalar(self, d: Draw) -> str:
        """A traced real scalar: a scalar name or an element of a real array, else a constant."""
        scalars = [v.name for v in self.find(("scalar",), dtypes=REAL)]
        elements = [
            v.name + text
            for v in self.find(dtypes=("f8",))
            for text, shape in self.regions_of(v)
            if shape == () and text
        ]
        options = scalars + elements
        return d.pick(options) if options and d.chance(85) else d.pick(["0.5", "2.0"])

    def mask_for(self, d: Draw, shape: tuple[int, ...]) -> Var:
        """A mask of ``shape``: one defined before, or a new constant one."""
        masks = self.find(("mask",), dtypes=("b1",), shape=shape)
        if masks and d.chance(70):
            return d.pick(masks)
        return self.define("m", mask_literal(shape, d.number()), shape, "b1", role="mask")

    def pick_array(self, d: Draw, dtypes: tuple[str, ...] = REAL, **criteria: Any) -> Var | None:
        """One of the arrays :meth:`find` finds, or ``None``."""
        found = self.find(dtypes=dtypes, **criteria)
        return d.pick(found) if found else None

    def target(self, d: Draw, dtypes: tuple[str, ...] = REAL, **criteria: Any) -> Var | None:
        """An array a statement may write into (not a 0-d one), or ``None``."""
        found = self.find(dtypes=dtypes, writable=True, **criteria)
        found = [v for v in found if v.shape]
        return d.pick(found) if found else None

    def element(self, d: Draw, a: Var) -> str:
        """``a[i, j]``: one element of ``a``, by a positive or negative index."""
        assert a.shape is not None
        index = ", ".join(str(d.number() % (2 * n) - n) for n in a.shape)
        return f"{a.name}[{index}]"

    def define_like(self, expression: str, probe: np.ndarray, source: Var) -> Var:
        """Define ``expression``, which behaves on ``source`` as it did on ``probe``'s input."""
        if probe.ndim == 0 and probe.dtype.kind == "f":
            return self.define("s", expression, (), "f8", role="scalar")
        if probe.dtype.kind == "f":
            is_view = probe.base is not None
            return self.define(
                "t",
                expression,
                probe.shape,
                source.dtype,
                view=is_view,
                writable=bool(probe.flags.writeable) and source.writable,
                argument_memory=is_view and source.argument_memory,
            )
        dtype = {"b": "b1", "c": "c16"}.get(probe.dtype.kind, "i8")
        return self.define("i", expression, probe.shape, dtype)

    def write_with_mask(self, d: Draw, form: str, t: Var) -> None:
        """Emit ``form`` on ``t``, drawing a mask of ``t``'s shape only if the form uses one."""
        assert t.shape is not None
        mask = self.mask_for(d, t.shape).name if "{mask}" in form else ""
        self.write(form.format(t.name, mask=mask))

    # -- the whole program ----------------------------------------------------

    def returned(self) -> str:
        """The return expression: every scalar plus a smooth sum of every array, so that a
        wrong value anywhere in the program shows in the result."""
        terms = []
        for v in self.vars:
            if v.role == "scalar":
                terms.append(v.name)
            elif v.role == "array" and v.dtype in REAL:
                terms.append(f"np.sum(np.tanh({v.name}))")
            elif v.role == "array" and v.dtype == "c16":
                terms.append(f"np.sum(np.abs({v.name}))")
            elif v.role == "array":
                terms.append(f"np.sum({v.name})")
        total = " + ".join(terms)
        ending = self.blueprint.ending % ENDING_COUNT
        if self.grammar.float_result:
            return total
        if ending == ENDING_COUNT - 2:
            return f"({total}) > 0.0"
        if ending == ENDING_COUNT - 1:
            return f"np.sum({self.vars[0].name} > 0.5)"
        return total

    def source(self) -> str:
        """``def f(...)``, inside ``def make(a0, ...)`` when the arguments come from the inputs."""
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
        """The input arrays: distinct grid values moved by their jitter (:func:`grid_values`)."""
        size = int(np.prod(self.shape))
        values = grid_values(self.blueprint.values[: size * self.n_inputs])
        dtype = np.float32 if self.grammar.dtype == "f4" else np.float64
        return tuple(
            np.array(values[k * size : (k + 1) * size], dtype=dtype).reshape(self.shape)
            for k in range(self.n_inputs)
        )


def grid_values(picks: Sequence[int]) -> list[float]:
    """Distinct elements of :data:`VALUE_GRID`, element ``k`` moved by ``JITTER * frac(0.75.. k)``.

    Pick ``k`` selects among the grid values not taken yet, so that no two
    elements are equal; there are ``len(VALUE_GRID)`` of them.
    """
    if len(picks) > len(VALUE_GRID):
        raise ValueError(f"{len(picks)} elements, but the grid has only {len(VALUE_GRID)} values")
    remaining = list(VALUE_GRID)
    return [
        round(remaining.pop(v % len(remaining)) + JITTER * (k * 0.7548776662466927 % 1), 6)
        for k, v in enumerate(picks)
    ]
