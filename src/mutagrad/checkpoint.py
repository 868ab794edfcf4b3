"""``checkpointed``: a block recomputed in the backward pass instead of keeping its intermediates.

``checkpointed(f, *args)`` returns ``f(*args)`` but keeps none of the values
``f``'s pullbacks would read: the tape holds one node, whose pullback runs
``f`` again under a fresh trace and pulls the cotangent back through that.

What ``f`` can reach is *watched*: every WrappedArray, WrappedScalar and
ndarray reachable from it through closure cells, defaults, the globals its
code names, a bound method's object, ``functools.partial`` arguments, and
the attributes and items of those, a few levels deep. Watched values that
carry a gradient of the enclosing call (a layer's parameters) become inputs
of the node, bound during the recomputation as implicit parameters are.

Recomputation is only right if the second run computes what the first did,
so ``checkpointed`` refuses, with an error naming the problem:

* a write by ``f`` to an array it did not create, naming the line: to an
  argument (``f`` runs on arrays of its own holding the arguments' values,
  so the caller would not see the write as it would in numpy) or to a
  watched WrappedArray, both found by version number; to a watched ndarray
  or an ndarray argument, both read-only while ``f`` runs; and a change to a
  list or dict argument;
* a read, inside ``f``, of a value that carries a gradient of the enclosing
  call and that the watch did not find (its gradient would be lost): ``f``
  runs on a nesting level of its own, and a value recorded there that
  depends on an enclosing level is refused;
* a later write to an argument, or to a watched array, in a place the
  recomputation's pullbacks read: the backward pass raises
  ``PoisonedCaptureError`` (for an argument, snapshot mode copies it);
* an output that is a view of an argument or of an array ``f`` closes over
  (numpy's result would alias it; a checkpointed output is memory of its own);
* a recomputation that returns a different value (``f`` draws random numbers,
  or reads state the watch could not reach): the backward pass raises;
* a recomputation that returns the same value but would not pull back the
  same way: state ``f`` reads (a closure variable, a global, an attribute,
  an array the watch does not reach, a random draw) changed, or a branch went
  another way. The backward pass raises, naming the first operation that
  differs and its line.

Why the gradient is right when nothing is refused. Both runs record ``f`` on
a nesting level of its own, the arguments that carry a gradient (and the
closed-over values that do) as its inputs, every other argument reaching
``f`` as the same constant. Each run's tape is fingerprinted
(:mod:`mutagrad.tape_fingerprint`): per node, its rule, which input or
earlier node each of its inputs is, its output's shape and dtype, and a hash
of everything its pullback reads besides the cotangent (saved arrays' bytes,
saved numbers and keywords, a user pullback's closure; a nested block's own
fingerprint). A node's pullback is a function of exactly these and of the
cotangent it receives, and the sweep hands each cotangent on along the
inputs; so if the fingerprints are equal (and the output is the same node),
the sweep of the second tape computes, node by node, what the sweep of the
first would have computed: the gradient without checkpointing. A node whose
pullback reads nothing of a changed value (``z + c``) does not depend on it,
so that change is not refused. Cost: each run hashes every value the
block's pullbacks save once, one pass over that memory; nothing is hashed
outside ``checkpointed``.

Limits: arrays reachable only through paths the watch does not follow (a
module attribute read by a function that ``f`` calls, a weak reference, a C
extension's state) are not watched: a write to them during ``f`` is not
refused, and one between the forward and the backward pass is caught by the
fingerprint (or the value) where a pullback reads it, not where it is
written. The fingerprint sees all of what a user pullback's or hook's
closure holds (a random generator by its state); a value whose contents it
cannot read (an object of a C extension's type) is refused by name at the
first run. It compares bits: a block must compute the same bits from the same
values, as numpy does (one that calls a library whose results vary from run
to run would be refused). In snapshot mode a later write to a watched array
that the recomputation reads raises SnapshotUnavailableError (the
recomputation reads the array itself, not a copy).
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mutagrad.buffer import check_not_open_buffer
from mutagrad.call import GradientCall, input_gradient
from mutagrad.core.engine import (
    STATE,
    BackwardPass,
    Capture,
    Node,
    Rule,
    Trace,
    WriteRecord,
    capture,
    current_trace,
)
from mutagrad.core.memory import first_sharing, is_dense
from mutagrad.core.modes import POISON
from mutagrad.core.record import input_node, push
from mutagrad.core.trees import flatten
from mutagrad.diagnostics.sites import (
    Site,
    describe_site,
    format_site,
    innermost_user_site,
    user_site,
    with_article,
)
from mutagrad.errors import MutagradError
from mutagrad.freezing import Frozen, can_freeze
from mutagrad.reachable import reachable_values
from mutagrad.tape_fingerprint import (
    TapePrint,
    Unfingerprintable,
    first_difference,
    tape_fingerprint,
)
from mutagrad.traced.value import (
    BORROWED,
    WrappedArray,
    WrappedValue,
    is_raw_array,
    node_of,
    wrap,
)


def _function_name(f: Any) -> str:
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


class _SavedScalar:
    """An immutable saved number, read like a Capture."""

    __slots__ = ("data",)
    valid = True

    def __init__(self, data: Any):
        self.data = np.asarray(data)

    def read(self) -> Any:
        return self.data[()]


class CheckpointRule(Rule):
    """A segment whose pullback recomputes it; ``node.aux`` holds ``f`` and its saved inputs."""

    __slots__ = ()
    handles_complex = True  # (the recomputed nodes are checked one by one)

    def backward(self, node: Node, g: Any, owned: bool, bk: BackwardPass) -> None:
        kw = node.aux
        assert kw is not None
        for guard in kw["guards"]:
            guard.read()  # raises PoisonedCaptureError if a watched array was overwritten
        recording = bk.recording and bk.needs_recording(node, g)
        closed, traced, name = kw["closed"], kw["traced"], kw["name"]
        # The arguments that carried a gradient are inputs of the recomputation; every
        # other one reaches f as it did the first time (a constant, so that the second
        # tape can be the first one again).
        values = []
        for i in traced:
            data = kw["saved"][i].read()
            values.append(bk.traced(data, node.inputs[i]) if recording else data)
        received = list(kw["constants"])
        for i, saved in enumerate(kw["saved"]):
            if saved is not None and i not in traced:
                received[i] = _segment_wrapper(saved.read(), None)
        raw = [x for x in received if is_raw_array(x)]

        def again(*traced_values: Any) -> Any:
            for i, w in zip(traced, traced_values):
                received[i] = w
            with _read_only(raw, name, kw["site"]):
                return kw["f"](*kw["rebuild"](received))

        # A recomputation that is not itself differentiated gets a tape of its own.
        token = STATE.set(current_trace() if recording else None)
        try:
            call = GradientCall(tuple(values), kw["mode"])
            n_args = len(node.inputs) - len(closed)
            links: list[Node | None] = (
                list(node.inputs[n_args:]) if recording else [None] * len(closed)
            )
            bound = _bind(closed, call.tape, call.trace.bit, links)
            call.param_nodes.extend(b for _, _, b in bound)  # the sweep stops at them
            try:
                out = call.run(again)
                out_node = _output_node(call, out, name)
                _check_same_value(out, kw["output"], name, kw["site"])
                inputs = [*call.inputs, *(b for _, _, b in bound)]
                second = _fingerprint(inputs, call.tape.nodes[call.start :], out_node, name,
                                      kw["site"])  # fmt: skip
                _check_same_tape(kw["fingerprint"], second, name, kw["site"])
                inner = call.sweep(out_node, g) if out_node is not None else None
                targets = [node.inputs[i] for i in traced] + list(node.inputs[n_args:])
                sources = list(zip(call.leaves, call.inputs))
                sources += [(w, b) for w, _, b in bound]
                for inp, (value, source) in zip(targets, sources):
                    if inner is None or inp is None or source is None or not inp.tag & bk.bit:
                        continue
                    cot = input_gradient(value, source, inner)
                    if cot is not None:
                        bk.accumulate(inp, cot)
            finally:
                _unbind(bound)  # before finish: a released tape would drop their nodes
                call.finish()
        finally:
            STATE.reset(token)

    def pullback_reads(self, node: Node) -> tuple[Any, ...]:
        """The saved arguments, the constants, the output and the block's own fingerprint:
        an enclosing block that recomputes this one compares what it would sweep."""
        kw = node.aux
        assert kw is not None
        saved = [s.data if type(s) is _SavedScalar else s for s in kw["saved"]]
        output = kw["output"]
        return (saved, kw["constants"], kw["fingerprint"].digest(),
                output.data if type(output) is _SavedScalar else output)  # fmt: skip

    def poison_fixes(self, capture: Capture) -> list[list[str]] | None:
        """Fixes for a poisoned guard: an array ``f`` reads from its closure, written later.

        The recomputation reads that array itself, so snapshot mode cannot keep
        its old value; as an argument it would be saved like any other. For a
        poisoned argument the standard fixes apply (None).
        """
        kw = capture.node.aux
        assert kw is not None
        if not any(capture is guard for guard in kw["guards"]):
            return None
        return [[
            f"pass that array to checkpointed as an argument, so that {kw['name']} does not read",
            "it from its closure (checkpointed(lambda h, c: ..., h, c)), and run with",
            'mode="snapshot": it copies an argument\'s old value before a write overwrites it.',
        ]]  # fmt: skip


CHECKPOINT_RULE = CheckpointRule("checkpointed")


def _output_node(call: GradientCall, out: Any, name: str) -> Node | None:
    check_not_open_buffer(out, name)
    if not isinstance(out, WrappedValue):
        return None
    return node_of(out, call.tape)


def _check_same_value(out: Any, saved: Any, name: str, site: Any) -> None:
    """Refuse a recomputation whose value differs from the forward pass's."""
    if not saved.valid:
        return  # the output was overwritten since: nothing to compare with
    first = saved.data
    again = out._raw if isinstance(out, WrappedValue) else np.asarray(out)
    floating = first.dtype.kind in "fc"
    scale = float(np.max(np.abs(first), initial=0.0)) if floating else 0.0
    same = first.shape == np.shape(again) and (
        np.array_equal(first, again, equal_nan=floating)
        or (floating and np.allclose(first, again, rtol=1e-9, atol=1e-12 * scale, equal_nan=True))
    )
    if not same:
        raise MutagradError(
            f"checkpointed({name}) computed a different value when the backward pass ran it "
            f"again, so its gradient would be wrong.\n    checkpointed at {describe_site(site)}\n"
            "A checkpointed function must compute the same thing every time.\n"
            "Fix: pass random numbers in as an argument rather than drawing them inside, and "
            "do not read state that changes between the forward and the backward pass."
        )


def _fingerprint(
    inputs: list[Node | None],
    nodes: list[Node],
    output: Node | None,
    name: str,
    site: Site | None,
) -> TapePrint:
    """The fingerprint of a run of the block; a value its pullbacks read that it cannot
    compare is refused: the backward pass could not tell whether it changed."""
    try:
        return tape_fingerprint(inputs, nodes, output)
    except Unfingerprintable as error:
        raise MutagradError(_unfingerprintable_message(error, name, site)) from None


def _unfingerprintable_message(error: Unfingerprintable, name: str, site: Site | None) -> str:
    value, *holders = error.path or [None]
    node = error.node
    held = "".join(f"\n        in {_describe(h)}" for h in holders)
    what = "a value" if value is None else _describe(value)
    return (
        f"checkpointed({name}) cannot be recomputed safely: the pullback of "
        f"{node.rule.name if node is not None else 'an operation'} at\n"
        f"{format_site(node.site if node is not None else None, '        ')}\n"
        f"    reads {what}{held}\n"
        f"    which is {error.why}.\n"
        f"    checkpointed at {describe_site(site)}\n"
        "checkpointed compares what the pullbacks of its two runs read, to refuse a block whose "
        "state changed between the forward and the backward pass; this value it cannot compare, "
        "so a change to it would give a wrong gradient silently.\n"
        "Fix: let the pullback (or hook) close over the numbers or arrays it needs from that "
        f"value, read from it before it is defined, rather than over the value itself; or call "
        f"{name} without checkpointed."
    )


def _describe(value: Any) -> str:
    kind = type(value)
    if kind is types.FunctionType:
        return f"the function {value.__qualname__}"
    return f"{with_article(kind.__qualname__)} object ({kind.__module__}.{kind.__qualname__})"


def _check_same_tape(first: TapePrint, again: TapePrint, name: str, site: Site | None) -> None:
    """Refuse a recomputation that recorded other operations, or whose pullbacks would
    read other values, than the forward pass's run: its gradient would not be the one
    of the value returned, even where the value is the same."""
    difference = first_difference(first, again)
    if difference is None:
        return
    i, reason = difference
    rule, _, _, at = again.nodes[i] if i < len(again.nodes) else first.nodes[i]
    where = f"{rule.name} at\n{format_site(at, '        ')}\n    "
    if reason == "reads":
        what = (f"{where}read other values the second time (a number or an array it takes "
                "from outside its arguments changed).")  # fmt: skip
    elif reason == "rule":
        what = (f"{where}ran where the first run had {first.nodes[i][0].name} at "
                f"{describe_site(first.nodes[i][3])}: a branch went another way.")  # fmt: skip
    elif reason == "structure":
        what = (f"{where}was applied to other operands, or gave a result of another shape, "
                "the second time: a branch went another way.")  # fmt: skip
    elif reason == "count":
        what = (f"the first run recorded {len(first.nodes)} operations and the second "
                f"{len(again.nodes)}; the first that only one of them recorded is {where}(a loop "
                "or a branch went another way).")  # fmt: skip
    else:
        what = "it returned another of the values it computed the second time."
    raise MutagradError(
        f"checkpointed({name}) did not compute the same way when the backward pass ran it "
        "again, so its gradient would be wrong, even where its value is the same.\n"
        f"    checkpointed at {describe_site(site)}\n"
        f"    The first difference: {what}\n"
        "A checkpointed function must compute the same thing every time: the state it reads "
        "(a variable it closes over, a global, an attribute, a random number generator) must "
        "not change between the forward and the backward pass.\n"
        f"Fix: pass what it reads to checkpointed as arguments, whose values it keeps from the "
        f"call (checkpointed(lambda h, p: ..., x, p)); or call {name} without checkpointed."
    )


def _segment_wrapper(data: Any, leaf_node: Node | None) -> WrappedValue:
    """An argument's value ``data`` as the segment receives it, with node ``leaf_node``
    (None: a constant): its memory borrowed (copied on a write) when possible."""
    if not isinstance(data, np.ndarray):
        w = wrap(data)
    elif data.flags.writeable and is_dense(data):
        w = WrappedArray(data.view())
        w._flags = BORROWED
        w._views = []
    else:  # (in its memory order, as a snapshot of it is copied: the same regions)
        w = WrappedArray(data.copy(order="K"))
    w._node = leaf_node
    return w


def _bind(
    values: list[WrappedValue], tape: Any, bit: int, links: list[Node | None]
) -> list[tuple[WrappedValue, Node | None, Node]]:
    """Give closed-over traced values input nodes of level ``bit`` (linked to ``links``).

    Like implicit parameters: the function reads the values themselves, so
    their node is replaced for the duration, and :func:`_unbind` restores it.
    """
    bound = []
    for w, link in zip(values, links):
        node = input_node(tape, bit, link, w._raw)
        bound.append((w, w._node, node))
        w._node = node
    return bound


def _unbind(bound: list[tuple[WrappedValue, Node | None, Node]]) -> None:
    for w, previous, node in reversed(bound):
        if w._node is node:
            w._node = previous


def _save(x: WrappedValue, node: Node, mode: Any) -> Capture | _SavedScalar:
    data = x._raw
    if isinstance(data, np.ndarray):
        return capture(x, data, node, mode)
    return _SavedScalar(data)


def checkpointed(f: Callable[..., Any], *args: Any) -> Any:
    """``f(*args)``, recomputed in the backward pass instead of keeping its intermediates.

    The tape keeps one node for the whole call: the arguments (saved, so a
    later write to them poisons the node like any saved value) and ``f``.
    Use it for a block whose intermediate values are large compared with its
    arguments and its output. ``f`` must return one array or number, not a
    view of what it received, and may only write arrays it creates; see the
    module documentation for what is refused and why. Outside a gradient
    call, or when no argument carries a gradient, it just calls ``f``.
    """
    trace = current_trace()
    if trace is None or trace.forward:
        # (A forward level keeps nothing to recompute: f runs, its tangents computed as it goes.)
        return f(*args)
    leaves, rebuild = flatten(args)
    outer_nodes = [node_of(x, trace.tape) if isinstance(x, WrappedValue) else None for x in leaves]
    if all(n is None for n in outer_nodes):
        return f(*args)  # no argument carries a gradient: nothing to recompute
    block = _Block(f, trace, leaves, rebuild, outer_nodes)
    out = block.run_once()
    block.check_what_it_did(out)
    return block.record(out)


class _Block:
    """One checkpointed call, in named steps: what ``f`` can reach, its run on a segment
    level of its own, the checks of what it did, and the one node that replaces it."""

    def __init__(
        self,
        f: Callable[..., Any],
        trace: Trace,
        leaves: list[Any],
        rebuild: Any,
        outer_nodes: list[Node | None],
    ):
        self.f, self.trace, self.tape = f, trace, trace.tape
        self.leaves, self.rebuild, self.outer_nodes = leaves, rebuild, outer_nodes
        # The arguments that carry a gradient: inputs of the segment; the others are constants.
        self.traced = [i for i, n in enumerate(outer_nodes) if n is not None]
        self.name = _function_name(f)
        self.site = user_site()
        self.watched, scalars, self.raw = reachable_values(f)
        self.versions = [w._version for w in self.watched]
        # Closed-over values that carry a gradient (a model's parameters): inputs too.
        tape = self.tape
        self.closed: list[WrappedValue] = [
            w for w in (*self.watched, *scalars) if node_of(w, tape) is not None
        ]
        self.closed_nodes = [node_of(w, tape) for w in self.closed]
        self.segment = Trace(tape, trace.depth + 1, trace.mode, trace)
        self.start = len(tape.nodes)
        self.writes: list[WriteRecord] = []

    def run_once(self) -> Any:
        """Run ``f`` once, on a nesting level of its own on the same tape, to see what it does.

        Its writes are journalled (to name the line of a refused one); the raw
        ndarrays it can reach are read-only while it runs, so numpy refuses a
        write to them.
        """
        tape, segment = self.tape, self.segment
        journal = tape.journal
        own_journal = journal is None  # (explain may keep one already)
        if journal is None:
            journal = []
        tape.journal = journal
        journal_start = len(journal)
        self.segment_args = [
            _segment_wrapper(
                x._raw, input_node(tape, segment.bit, None, x) if outer is not None else None
            )
            if isinstance(x, WrappedValue)
            else x
            for x, outer in zip(self.leaves, self.outer_nodes)
        ]
        self.received = self.rebuild(self.segment_args)
        self.argument_versions = [(w, w._version) for w in self.segment_args
                                  if isinstance(w, WrappedArray)]  # fmt: skip
        bound = _bind(self.closed, tape, segment.bit, [None] * len(self.closed))
        self.inputs = [self.segment_args[i]._node for i in self.traced]
        self.inputs += [b for _, _, b in bound]
        token = STATE.set(segment)
        try:
            with _read_only(self.raw + [x for x in self.leaves if is_raw_array(x)],
                            self.name, self.site):  # fmt: skip
                return self.f(*self.received)
        finally:
            STATE.reset(token)
            _unbind(bound)
            if own_journal:
                tape.journal = None
            self.writes = [record for _, record in journal[journal_start:]]
            del journal[journal_start:]  # explain: the segment's writes leave with its nodes

    def check_what_it_did(self, out: Any) -> None:
        """Refuse a write to what ``f`` did not create, a value of the enclosing call read
        without an argument, and an output that is not one array or number."""
        name, site = self.name, self.site
        check_not_open_buffer(out, name)
        for w, version in zip(self.watched, self.versions):
            if w._version != version:
                what = (f"a WrappedArray of shape {w.shape} that it did not create (it closes "
                        "over it)")  # fmt: skip
                raise _write_refused(name, site, what, _first_write_to(w, self.writes))
        for w, version in self.argument_versions:
            if w._version != version:
                what = f"an array of shape {w.shape} that it did not create (its argument)"
                raise _write_refused(name, site, what, _first_write_to(w, self.writes))
        if not _same_structure(self.received, self.segment_args):
            what = "a list, dict or object that it received as an argument"
            raise _write_refused(name, site, what, None)
        self.recorded = self.tape.nodes[self.start :]
        enclosing = self.segment.bit - 1  # the bits of the levels around the segment
        for n in self.recorded:
            if n.tag & enclosing:
                raise MutagradError(_read_around_message(name, n.site))
        if isinstance(out, (list, tuple, dict)):
            raise MutagradError(
                f"checkpointed({name}) must return one array or number, not a "
                f"{type(out).__name__}.\nFix: checkpoint each output separately, or return them "
                "concatenated (np.concatenate) and split the result."
            )
        if isinstance(out, WrappedArray) and self.shares_memory_with_what_it_received(out._raw):
            raise MutagradError(
                f"checkpointed({name}) returns a view of an array it received (an argument or "
                f"an array it closes over), at\n{format_site(site)}\n"
                "numpy's result would be that view: a write to one would show in the other. "
                "checkpointed's output is an array of its own, recomputed in the backward pass, "
                "so it cannot keep that; and a checkpointed view saves nothing.\n"
                f"Fix: return a copy ({name} returning h[::-1].copy()), or do not checkpoint it."
            )

    def shares_memory_with_what_it_received(self, out: np.ndarray) -> bool:
        """Whether ``out`` is memory of an argument of ``f`` or of an array it closes over."""
        received = [x._raw if isinstance(x, WrappedValue) else x for x in self.leaves]
        received += [w._raw for w in self.watched] + self.raw
        return first_sharing(out, received) is not None

    def record(self, out: Any) -> Any:
        """Replace the segment's nodes by one CHECKPOINT node: its inputs, what it saves
        (the arguments, guards on the arrays it closes over, the output, the segment's
        fingerprint) and ``f``."""
        tape, leaves = self.tape, self.leaves
        out_node = node_of(out, tape) if isinstance(out, WrappedValue) else None
        if out_node is None:
            _drop_segment(tape, self.start, self.recorded, self.watched, None)
            return out  # a constant: nothing to differentiate
        # (before the segment's captures go: the hash reads what its pullbacks would; and
        # from the tape, which holds the node node_of has just made for an output view)
        fingerprint = _fingerprint(self.inputs, tape.nodes[self.start :], out_node, self.name,
                                   self.site)  # fmt: skip
        inputs = (*self.outer_nodes, *self.closed_nodes)
        tag = 0
        for n in inputs:
            if n is not None:
                tag |= n.tag
        data = out._raw
        node = Node(CHECKPOINT_RULE, inputs, tape, tag, data, self.site,
                    f"checkpointed({self.name})")  # fmt: skip
        guards = _drop_segment(tape, self.start, self.recorded, self.watched, node)
        mode = self.trace.mode
        saved = [_save(x, node, mode) if isinstance(x, WrappedValue) else None for x in leaves]
        result = wrap(data, node)
        output: Any = (
            capture(result, data, node, POISON)
            if isinstance(data, np.ndarray)
            else _SavedScalar(data)
        )
        kwargs = {
            "f": self.f,
            "name": self.name,
            "site": self.site,
            "mode": mode,
            "rebuild": self.rebuild,
            "saved": saved,
            "constants": [None if isinstance(x, WrappedValue) else x for x in leaves],
            "traced": self.traced,
            "fingerprint": fingerprint,
            "closed": self.closed,
            "guards": guards,
            "output": output,
        }
        push(node, (*guards, *(c for c in saved if type(c) is Capture)), kwargs)
        return result


def _read_around_message(name: str, site: Site | None) -> str:
    return (
        f"checkpointed({name}) reads a value that carries a gradient of the enclosing "
        f"call, at\n    {describe_site(site)}\n"
        "without receiving it as an argument, through a path checkpointed does not "
        "follow (it looks through closures, defaults, globals, bound objects and their "
        "attributes). Its gradient would be lost when the pullback recomputes the block.\n"
        "Fix: pass it as an argument: checkpointed(lambda x, w: ..., x, w)."
    )


def _drop_segment(
    tape: Any, start: int, recorded: list[Node], watched: list[WrappedArray], node: Node | None
) -> list[Capture]:
    """Forget the segment's nodes; captures it made on watched arrays guard ``node``.

    A capture the segment made on an array it closes over is a value the
    recomputation will read again: it moves to the checkpoint node, which
    raises if it is poisoned. Every other capture the segment made is dropped.
    """
    del tape.nodes[start:]
    removed = set(recorded)
    watched_ids = {id(w) for w in watched}
    guards: list[Capture] = []
    for ref in list(tape.capture_bases.values()):
        base = ref()
        if base is None or not base._captures:
            continue
        caps = base._captures
        if not any(c.node in removed for c in caps):
            continue
        keep = []
        for c in caps:
            if c.node not in removed:
                keep.append(c)
            elif node is not None and id(base) in watched_ids:
                c.node = node
                c.closure = True  # the recomputation reads the array itself, not a copy
                guards.append(c)
                keep.append(c)
        base._captures = keep
    return guards


def _first_write_to(array: WrappedArray, writes: list[WriteRecord]) -> Site | None:
    """Where the first of ``writes`` that wrote ``array`` is in the user's code."""
    return next((record.site for record in writes if record.array is array), None)


def _same_structure(received: tuple[Any, ...], leaves: list[Any]) -> bool:
    """Whether the arguments ``f`` received still hold exactly ``leaves``, in place."""
    now, _ = flatten(received)
    return len(now) == len(leaves) and all(a is b for a, b in zip(now, leaves))


def _write_refused(name: str, site: Any, what: str, write_site: Site | None) -> MutagradError:
    """The error for a write, inside a checkpointed function, to an array it did not create."""
    where = f", at\n{format_site(write_site)}\n" if write_site is not None else " "
    return MutagradError(
        f"checkpointed({name}) writes {what}{where}in the call at\n{format_site(site)}\n"
        f"checkpointed runs {name} a second time in the backward pass, from the values its "
        f"arguments and closure had at the call, so {name} must leave them unchanged: "
        "otherwise the second run starts from other values, or the caller does not see the "
        f"write as it would in numpy (an argument's array is {name}'s own), and the value or "
        "the gradient is wrong.\n"
        f"Fixes: call {name} directly instead of through checkpointed, which keeps the write; "
        f"or change {name} so that it writes only arrays it creates (a copy it makes) and "
        "returns what the caller needs."
    )


@contextlib.contextmanager
def _read_only(arrays: list[np.ndarray], name: str, site: Site | None) -> Iterator[None]:
    """``arrays`` read-only while the block runs: numpy refuses a write to them, and the
    refusal is raised as checkpointed's, naming the line."""
    frozen = Frozen()
    frozen.freeze([a for a in arrays if a.base is None or can_freeze(a)])
    try:
        yield
    except ValueError as error:
        if "read-only" in str(error) and frozen.arrays:
            raise _write_refused(
                name, site,
                "an ndarray that it did not create (an argument, or an array it closes over)",
                innermost_user_site(error.__traceback__),
            ) from error  # fmt: skip
        raise
    finally:
        frozen.thaw()


__all__ = ["checkpointed"]
