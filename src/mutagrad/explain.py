"""``mutagrad.explain(f, *args)``: the recorded tape of one call, in words.

It runs ``f`` as ``gradient`` would and lists every recorded operation with
its source line; the array versions it read and saved; every in-place write
(the version it made and the region it covered); which saved values were
poisoned, by which write, or copied by snapshot mode. It then runs the
backward pass and says whether it produced a gradient or which saved value
made it raise. PyTorch's anomaly mode shows where a value was saved; this
also shows where it was overwritten.

A long loop records thousands of operations: ``poisoned=True``, ``writes=True``
and ``lines=range(a, b)`` (source lines) keep the ones a reader is after.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Literal, TextIO

import attrs
import numpy as np

from mutagrad.call import GradientCall, first_output, scalar_seed
from mutagrad.core.engine import (
    Capture,
    Node,
    VjpRule,
    WriteRecord,
    collector_paused,
    current_trace,
)
from mutagrad.core.memory import describe_part
from mutagrad.core.regions import VIEW_READ, WRITE
from mutagrad.core.trees import flatten
from mutagrad.diagnostics.sites import describe_site, site_line, source_code
from mutagrad.diagnostics.tracebacks import api_boundary
from mutagrad.errors import MutagradError
from mutagrad.traced.value import WrappedValue


@attrs.frozen
class Operation:
    """One recorded operation."""

    index: int
    name: str
    site: str
    source: str
    details: tuple[str, ...]
    """Versions read and saved, writes, poisonings, snapshots: one line each."""
    line: int | None = None
    """The source line of the user's code that recorded it."""
    writes: bool = False
    """Whether it wrote into an array in place."""
    poisoned: bool = False
    """Whether a value it saved was overwritten before the backward pass."""


@attrs.frozen
class Explanation:
    """The tape of one call and what its backward pass did."""

    mode: str
    operations: tuple[Operation, ...]
    outcome: str
    gradient: tuple[Any, ...] | None = attrs.field(eq=False)
    error: BaseException | None = attrs.field(eq=False)
    recorded: int | None = None
    """How many operations the tape holds, when :meth:`only` kept fewer."""

    def only(
        self, *, poisoned: bool = False, writes: bool = False, lines: Any = None
    ) -> Explanation:
        """The operations that saved a poisoned value, wrote in place, or ran on ``lines``.

        Each filter given must hold (``poisoned=True, lines=range(10, 20)``:
        poisoned operations of lines 10 to 19); ``lines`` is any container of
        line numbers.
        """
        kept = tuple(
            op
            for op in self.operations
            if (not poisoned or op.poisoned)
            and (not writes or op.writes)
            and (lines is None or op.line in lines)
        )
        return attrs.evolve(self, operations=kept, recorded=self.recorded or len(self.operations))

    def __str__(self) -> str:
        count = f"{len(self.operations)} operations"
        if self.recorded is not None:
            count = f"{len(self.operations)} of {self.recorded} operations"
        lines = [f"mutagrad.explain: {count}, mode {self.mode!r}"]
        for op in self.operations:
            where = f"  {op.site}" if op.site else ""
            source = f"  `{op.source}`" if op.source else ""
            lines.append(f"#{op.index:<3} {op.name:<18}{where}{source}")
            lines.extend(f"       {detail}" for detail in op.details)
        lines.append(f"backward pass: {self.outcome}")
        return "\n".join(lines)


class _Labels:
    """Short names for the arrays involved: arguments by position, others a1, a2, ..."""

    def __init__(self, call: GradientCall):
        self.names: dict[int, str] = {}
        self.inputs = {id(node): i for i, node in enumerate(call.inputs) if node is not None}
        leaves, _ = flatten(call.args)
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, WrappedValue):
                self.names[id(leaf)] = f"arg{i}"

    def array(self, base: Any) -> str:
        key = id(base)
        if key not in self.names:
            others = sum(not name.startswith("arg") for name in self.names.values())
            self.names[key] = f"a{others + 1}"
        return self.names[key]


def _capture_details(capture: Capture, labels: _Labels) -> list[str]:
    base = capture.base
    region = capture.region if capture.region is not None else capture.data
    part = describe_part(region, base._raw) if capture.region is not None else "(copied)"
    text = f"saves {labels.array(base)} {part} at version {capture.version}"
    lines = [text]
    if capture.poisoned_by is not None:
        w = capture.poisoned_by
        lines.append(
            f"  POISONED by {w.operation} at {describe_site(w.site)} (making version {w.version})"
        )
    if capture.copied_by is not None:
        w = capture.copied_by
        lines.append(
            f"  snapshot: {capture.data.nbytes} bytes copied before {w.operation} at "
            f"{describe_site(w.site)}"
        )
    return lines


def _write_details(write: WriteRecord, labels: _Labels) -> str:
    return (
        f"writes {labels.array(write.array)} {write.region}: version {write.version - 1} -> "
        f"{write.version}"
    )


def _describe(node: Node, index: int, labels: _Labels, writes: list[WriteRecord]) -> Operation:
    rule = node.rule
    details: list[str] = []
    if rule.leaf or id(node) in labels.inputs:
        name = f"input (argument {labels.inputs.get(id(node), '?')})"
    elif rule is VIEW_READ:
        view, base_data, version, base = node.saved
        name = "read view"
        details.append(
            f"reads {labels.array(base)} {describe_part(view, base_data)} at version {version}"
        )
    elif rule is WRITE:
        name = "write"
    else:
        name = rule.name
    seen: list[Any] = []
    for saved in () if rule is VIEW_READ else node.saved:
        if any(saved is other for other in seen):
            continue  # one array read twice (x * x) is saved once
        seen.append(saved)
        if type(saved) is Capture:
            details.extend(_capture_details(saved, labels))
        elif type(saved) is np.ndarray:
            details.append(f"keeps a private copy of a raw ndarray ({saved.nbytes} bytes)")
    for write in writes:
        if rule is WRITE:
            name = f"write: {write.operation}"
        details.append(_write_details(write, labels))
    if isinstance(rule, VjpRule) and not details and rule.reads and any(rule.reads):
        details.append("saves nothing (its inputs need no gradient, or are scalars)")
    poisoned = any(
        type(saved) is Capture and saved.poisoned_by is not None
        for saved in (() if rule is VIEW_READ else node.saved)
    )
    return Operation(index, name, describe_site(node.site) if node.site else "",
                     source_code(node.site), tuple(details), site_line(node.site),
                     bool(writes), poisoned)  # fmt: skip


@api_boundary
@collector_paused
def explain(
    f: Callable[..., Any],
    *args: Any,
    mode: str | None = None,
    file: TextIO | Literal["stdout"] | None = "stdout",
    poisoned: bool = False,
    writes: bool = False,
    lines: Any = None,
    **kwargs: Any,
) -> Explanation:
    """Run ``f(*args, **kwargs)`` on the tape, print what was recorded and return it.

    It prints to ``file``, by default the ``sys.stdout`` of the moment (so
    ``contextlib.redirect_stdout`` captures it); pass ``file=None`` to only
    return the :class:`Explanation`. ``poisoned``,
    ``writes`` and ``lines`` keep some operations (see :meth:`Explanation.only`).
    Keyword arguments other than these reach ``f``, undifferentiated.
    """
    if current_trace() is not None:
        raise MutagradError(
            "explain cannot run inside a gradient call.\n"
            "Fix: call mutagrad.explain(f, *args) on its own, outside gradient."
        )
    call = GradientCall(args, mode)
    call.tape.journal = []
    gradient = None
    error: BaseException | None = None
    try:
        try:
            out = call.run(f, kwargs)
            node = call.output_node(first_output(out), "explain")
            bk = call.sweep(node, scalar_seed(node) if node is not None else None)
            gradient = tuple(call.gradients(bk))
            outcome = (
                "gradient computed" if node is not None else "output does not depend on the input"
            )
        except MutagradError as caught:
            error = caught
            outcome = f"raises {type(caught).__name__}: {str(caught).splitlines()[0]}"
        operations = _operations(call)
    finally:
        call.finish()
    explanation = Explanation(call.trace.mode.name, operations, outcome, gradient, error)
    if poisoned or writes or lines is not None:
        explanation = explanation.only(poisoned=poisoned, writes=writes, lines=lines)
    if file is not None:
        print(explanation, file=sys.stdout if file == "stdout" else file)
    return explanation


def _operations(call: GradientCall) -> tuple[Operation, ...]:
    tape = call.tape
    labels = _Labels(call)
    writes: dict[int, list[WriteRecord]] = {}
    for count, record in tape.journal or ():
        # A write recorded as its own node follows the journal entry; an in-place
        # operation's node was recorded just before its write.
        at = count if count < len(tape.nodes) and tape.nodes[count].rule is WRITE else count - 1
        writes.setdefault(at, []).append(record)
    nodes = tape.nodes[call.start :]
    return tuple(
        _describe(node, k, labels, writes.get(call.start + k, [])) for k, node in enumerate(nodes)
    )


__all__ = ["Explanation", "Operation", "explain"]
