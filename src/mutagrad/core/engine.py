"""The tape engine: traces, nodes, captures, rules and the backward loop.

This module knows nothing about numpy functions; every numpy fact lives in
``mutagrad.rules``. It provides:

* :class:`Tape` – the nodes of one outermost gradient call, in the order they
  were recorded (a valid reverse topological order for the backward pass).
* :class:`Trace` – one level of (possibly nested) differentiation, held in a
  context variable so that threads and tasks never see each other's tapes.
* :class:`Node` – one recorded operation: its rule, its input nodes and what
  its pullback will read.
* :class:`Capture` – a saved array a pullback will read. It records the
  version of the array it saw; an in-place write that overlaps it *poisons*
  it, and reading a poisoned capture raises :class:`PoisonedCaptureError`
  instead of returning a wrong gradient.
* :class:`VjpRule` – a differentiation rule with one vector-Jacobian product
  per argument and a declaration of what each one reads, so the engine (not
  a closure) owns the saved values and can check or snapshot them.
* :func:`backward` – the reverse sweep.

Nodes are made and pushed in :mod:`mutagrad.core.record`, the one recording
path.

Activity: a node's ``tag`` is a bitmask of the nesting levels whose inputs it
depends on. A value with no node on the current tape is a constant; a rule
only saves what the gradients of its *active* inputs need, so values kept for
constants can never poison anything.

Higher order: the backward sweep of an inner gradient call that runs inside an
outer one is itself recorded (pullbacks are written in traceable numpy), so
the outer call can differentiate it.
"""

from __future__ import annotations

import functools
import gc
import weakref
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from contextvars import ContextVar
from itertools import islice
from threading import get_ident
from typing import Any, final

import numpy as np
from numpy import float64, ndarray  # (by name: see mutagrad.core.record)

from mutagrad.core.jvps import Derivation
from mutagrad.core.memory import describe_part, has_layout, owned_copy
from mutagrad.core.tangents import (
    ZERO,
    Meta,
    NoTangent,
    SparseCotangent,
    ZeroTangent,
    cotangent_dtype,
    unbroadcast,
)
from mutagrad.diagnostics.messages import (
    closure_snapshot_message,
    complex_message,
    no_vjp_message,
    other_thread_message,
    other_thread_write_message,
)
from mutagrad.diagnostics.sites import (
    Site,
)
from mutagrad.errors import (
    MutagradError,
    NotDifferentiableError,
    SnapshotUnavailableError,
)


class Tape:
    """Everything recorded by one outermost gradient call (and calls nested in it)."""

    __slots__ = (
        "__weakref__",
        "bytes_copied",
        "capture_bases",
        "captures",
        "complex_values",
        "guard_bytes",
        "journal",
        "nodes",
        "other_thread_error",
        "touched",
    )

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        # The first refusal of such a use: the thread that met it may swallow it
        # (threading's excepthook prints it), so the gradient call raises it too.
        self.other_thread_error: MutagradError | None = None
        # Arrays whose current node or captures point into this tape, held
        # weakly: ``release`` detaches the ones still alive, so a long-lived
        # array (a parameter, a constant in a closure) keeps no dead tape.
        self.touched: dict[int, weakref.ref] = {}
        self.capture_bases: dict[int, weakref.ref] = {}
        self.captures: list[Capture] = []  # every capture taken for this tape's nodes
        self.bytes_copied = 0  # snapshot mode: old data copied before writes
        self.guard_bytes = 0  # raw ndarrays copied because a pullback reads them
        # mutagrad.explain sets a list: (number of nodes so far, WriteRecord) per write.
        self.journal: list[tuple[int, WriteRecord]] | None = None
        # Set by the first complex node: from then on every node's inputs are checked
        # too (a real result of a complex input, abs(z), needs a complex rule as well).
        self.complex_values = False

    def touch(self, base: Any) -> None:
        """Remember that ``base._node`` now points into this tape."""
        _remember(self.touched, base)

    def holds_captures_on(self, base: Any) -> None:
        """Remember that ``base`` lists captures of this tape, which :meth:`release` drops."""
        _remember(self.capture_bases, base)

    def release(self) -> None:
        """Detach this tape from long-lived arrays: their nodes and captures."""
        if self.touched:  # (an empty table stays: a vectorised call often touches nothing)
            for ref in self.touched.values():
                base = ref()
                if base is None:
                    continue
                if base._node is not None and base._node.tape is self:
                    base._node = None
                if base._captures:
                    base._captures = [c for c in base._captures if c.tape is not self]
            self.touched = {}
        if self.capture_bases:
            for ref in self.capture_bases.values():
                base = ref()
                if base is not None and base._captures:
                    base._captures = [c for c in base._captures if c.tape is not self]
            self.capture_bases = {}
        # A released tape is never swept again. Its captures and nodes form
        # reference cycles (an array lists its captures and each capture points
        # back at the array; a node saves captures that point back at the node):
        # break them, so that the arrays are freed as soon as the caller drops
        # them, not whenever the cyclic collector next runs (a large array held
        # until then costs fresh memory, and page faults, in the next call).
        for c in self.captures:
            c.base = None
            c.node = None  # type: ignore[assignment]  # a released tape's captures are never read
            c.region = None  # inert: the next write to the array drops it
        self.captures = []
        self.nodes = []  # (nodes point at their tape)


def collector_paused(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate an API entry point to keep Python's cyclic garbage collector off while it runs.

    A tape is thousands of small objects freed by reference counting; the
    collector would traverse all of them again and again as they pile up,
    making a long loop's cost grow faster than its length. Only the outermost
    call toggles it: the API pauses it across a whole gradient call, so that
    it resumes after the tape is released and has little left to traverse.
    (A plain wrapper, not a ``contextmanager``: this runs on every call.)
    """

    @functools.wraps(fn)
    def paused(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return paused


def _remember(table: dict[int, weakref.ref], obj: Any) -> None:
    ref = table.get(id(obj))
    if ref is None or ref() is not obj:
        table[id(obj)] = weakref.ref(obj)


class Trace:
    """One active level of differentiation; ``mode`` is its policy (mutagrad.core.modes).

    ``thread`` is the thread that runs it: the trace lives in a context
    variable, which a thread started inside ``f`` does not inherit.
    ``forward`` holds the forward levels (:class:`ForwardTrace`)
    this level sees, outermost first: every operation computes their tangents. It
    is empty for reverse levels alone, the one thing reverse mode checks for them.
    """

    __slots__ = ("bit", "depth", "forward", "mode", "parent", "tape", "thread")

    def __init__(self, tape: Tape | None, depth: int, mode: Any, parent: Trace | None):
        # None only for a forward level that no reverse level encloses. Typed as a Tape: the
        # paths that read it (records, writes with nodes, sweeps) run only where a value has
        # a node, which needs a reverse level, hence a tape.
        self.tape: Tape = tape  # type: ignore[assignment]
        self.depth = depth
        self.bit = 1 << depth
        self.mode = mode
        self.parent = parent
        self.thread = get_ident()
        self.forward: tuple[ForwardTrace, ...] = parent.forward if parent is not None else ()


class ForwardTrace(Trace):
    """A forward level: every operation computes its tangents at the moment it runs.

    ``width`` is the number of directions pushed at once (the leading batch
    axis of every tangent). A forward level records nothing; ``tape`` and
    ``mode`` are those of the reverse level around it (for the operations it
    runs there, which that level records), or None when none encloses it.
    ``sealed``: the tape of a gradient call whose traced values the level
    refuses to read (``forwarddiff``'s level, which runs apart from the call
    around it, with no parent). ``journal``: what records the level's tangent
    steps for ``linearize`` to replay (:mod:`mutagrad.traced.linear`), or None.
    ``arbitrary_function`` and ``arbitrary_basis``: which factor and where the
    level gave the completing columns of a non-square factor (``svd(...,
    full_matrices=True)``, ``qr(..., mode='complete')``) their NaN tangent,
    which an output must not carry ("" and None: none).
    """

    __slots__ = (
        "arbitrary_basis", "arbitrary_function", "journal", "other_thread_error", "sealed", "width",
    )

    def __init__(
        self, depth: int, parent: Trace | None, width: int, mode: Any, sealed: Tape | None = None
    ):
        # Around a reverse level, its tape and policy (for what the level's operations do
        # there); alone, ``mode`` (mutagrad.core.modes.FORWARD: every write allowed).
        tape = parent.tape if parent is not None else None
        super().__init__(tape, depth, parent.mode if parent is not None else mode, parent)
        self.width = width
        self.sealed = sealed
        self.forward = (*self.forward, self)
        # (as Tape.other_thread_error, for a level with no tape)
        self.other_thread_error: MutagradError | None = None
        self.journal: Any = None
        self.arbitrary_basis: Site | None = None
        self.arbitrary_function = ""


def raise_other_thread_error(holder: Any) -> None:
    """The function of a call returned: raise what another thread was refused, kept on
    ``holder`` (the call's tape, or its forward level)."""
    error = holder.other_thread_error
    holder.other_thread_error = None
    raise error


def refuse_other_thread(tape: Tape, operation: str, site: Site | None) -> None:
    """Refuse a traced value of ``tape`` used in a thread its call does not trace.

    Called where no trace is active: if a gradient call on ``tape`` is
    running its function in another thread, the value came from there (a
    thread started inside ``f``, or a pool's worker) and would count as a
    constant here, with a wrong gradient.
    """
    here = get_ident()
    running = [t for t in RUNNING if t.tape is tape]
    if not running or any(t.thread == here for t in running):
        return
    error = NotDifferentiableError(other_thread_message(operation, site, running[-1].thread))
    if tape.other_thread_error is None:
        tape.other_thread_error = error
    raise error


def refuse_other_thread_tangent(levels: tuple[Any, ...], operation: str, site: Site | None) -> None:
    """Refuse a value with a tangent at one of the forward ``levels`` used in a thread the
    level does not trace (as :func:`refuse_other_thread` for a tape): forward mode
    would take it for a constant there, with a zero tangent."""
    here = get_ident()
    running = [t for t in RUNNING if t in levels]
    if not running or any(t.thread == here for t in running):
        return
    error = NotDifferentiableError(other_thread_message(operation, site, running[-1].thread))
    holder: Any = running[-1].tape if running[-1].tape is not None else running[-1]
    if holder.other_thread_error is None:
        holder.other_thread_error = error
    raise error


def refuse_other_thread_write(trace: Trace, operation: str, site: Site | None) -> None:
    """Refuse an in-place write recorded from a thread other than the one ``trace`` runs in."""
    error = NotDifferentiableError(other_thread_write_message(operation, site, trace.thread))
    if trace.tape.other_thread_error is None:
        trace.tape.other_thread_error = error
    raise error


STATE: ContextVar[Trace | None] = ContextVar("mutagrad_trace", default=None)
# STATE.get, bound once: CPython 3.11 does not specialise a method load on a ContextVar,
# so ``STATE.get()`` makes and frees a bound method on every call (~460 instructions,
# once per traced operation).
current_trace = STATE.get
# The traces whose function is running now, in any thread (api.GradientCall.run
# appends and removes them). Where no trace is active, a traced value of one of
# their tapes came from another thread; while this is empty, none can have.
RUNNING: list[Trace] = []


FLOAT64 = np.dtype(float64)  # (numpy's one instance: ``is`` tells it)


class Node:
    """One recorded operation; also the identity of the value it produced.

    ``saved`` holds what the vjps read of the arguments and the output (one
    slot each, in order; see :mod:`mutagrad.core.record`); ``aux`` what the
    pullback needs besides: a rule's numpy keywords (``axis=``), a write's
    place, a hook's function, a closure rule's pullback.
    """

    __slots__ = ("aux", "dtype", "inputs", "rule", "saved", "shape", "site", "tag", "tape")

    def __init__(
        self,
        rule: Rule,
        inputs: tuple[Node | None, ...],
        tape: Tape,
        tag: int,
        value: Any,
        site: Site | None,
        operation: str | None = None,
    ):
        # ``value`` lends its shape and dtype: a float64 scalar's without reading them
        # (each read makes a new object; most nodes of a traced loop are such scalars).
        # A complex value that carries a derivative, or a value computed from one, is
        # refused here for every kind of node whose rule is not written for complex
        # values (``operation`` names it in the error); until a tape meets one, a
        # float64 value costs two comparisons.
        if type(value) is float64:
            dtype, shape = FLOAT64, ()
        else:
            dtype, shape = value.dtype, value.shape
        if tape.complex_values or (dtype is not FLOAT64 and dtype.kind == "c"):
            check_complex(rule, inputs, tape, dtype, operation, site)
        self.rule = rule
        self.inputs = inputs
        self.tape = tape
        self.tag = tag
        self.shape = shape
        self.dtype = dtype
        self.site = site
        self.saved: tuple[Any, ...] = ()
        self.aux: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"<Node {self.rule.name} shape={self.shape}>"


class WriteRecord:
    """What an in-place write did, for error messages and ``explain``.

    ``key`` is the index written (``Ellipsis`` for the whole array) and
    ``view_shape`` the shape of the view it was applied to (``None`` when
    written through the base itself); both are only formatted on demand.
    """

    __slots__ = ("array", "base_shape", "key", "operation", "place", "site", "version")

    def __init__(
        self,
        array: Any,
        operation: str,
        site: Site | None,
        version: int,
        key: Any,
        place: ndarray,
    ):
        self.array = array  # the base WrappedArray written
        self.operation = operation
        self.site = site
        self.version = version
        self.key = key  # the index written, for an advanced index
        self.place = place  # the view written (the indexed array, for an advanced index)
        self.base_shape = array._raw.shape

    @property
    def region(self) -> str:
        """Where in the base array the write landed, as index text."""
        part = describe_part(self.place, self.array._raw)
        fancy = isinstance(self.key, tuple) and any(isinstance(k, ndarray) for k in self.key)
        if fancy or isinstance(self.key, ndarray):
            return f"{format_index(self.key)} within {part}"
        return part


def format_index(key: Any) -> str:
    """A numpy index as source text: ``[1:3, ...]``."""

    def one(k: Any) -> str:
        if isinstance(k, slice):
            start = "" if k.start is None else str(k.start)
            stop = "" if k.stop is None else str(k.stop)
            return f"{start}:{stop}" + ("" if k.step is None else f":{k.step}")
        if k is Ellipsis:
            return "..."
        if k is None:
            return "None"
        if isinstance(k, ndarray):
            return f"<{k.dtype} index of shape {k.shape}>"
        return str(k)

    parts = key if isinstance(key, tuple) else (key,)
    return "[" + ", ".join(one(k) for k in parts) + "]"


class Capture:
    """A saved array, valid until an overlapping in-place write poisons it.

    ``data`` is what the pullback reads; ``region`` is where the value lives
    in its base array's current memory (the two differ only after snapshot
    mode or a copy-on-write moved one of them).
    """

    __slots__ = (
        "base",
        "closure",
        "copied_by",
        "data",
        "mode",
        "node",
        "poisoned_by",
        "region",
        "tangents",  # set by detach where forward levels hold tangents of the data
        "tape",
        "version",
    )

    def __init__(self, data: ndarray, base: Any, node: Node, mode: Any, closure: bool):
        self.data = data
        self.region: ndarray | None = data
        self.base = base
        self.version = base._version
        self.node = node
        self.tape = node.tape
        self.mode = mode  # the policy of the call that saved it: poison, snapshot...
        self.closure = closure  # held by a user closure: cannot be redirected
        self.poisoned_by: WriteRecord | None = None
        self.copied_by: WriteRecord | None = None  # the write a snapshot was taken for

    @property
    def valid(self) -> bool:
        return self.poisoned_by is None

    def saved_part(self) -> str:
        """Which part of its base array the saved value is, as index text ("" if copied)."""
        return describe_part(self.region, self.base._raw) if self.region is not None else ""

    def read(self) -> ndarray:
        if self.poisoned_by is not None:
            return self.mode.read_poisoned(self)
        return self.data

    def detach(self) -> None:
        """Keep a private copy of the data; no write can poison it any more.

        A forward level that encloses this capture's sweep reads the tangents of
        the saved value too: they are copied with it (see :class:`TracedType`).
        """
        if self.region is not None and self.base._tangents is not None:
            self.tangents = TRACED.region_tangents(self.base, self.region)
        # (in the data's own memory order: a recomputation that reads it sees the layout,
        # and so the views' regions, that the first run saw)
        self.data = self.data.copy(order="K")
        self.region = None

    def keep_old_value(self, write: WriteRecord, counted: bool = True) -> None:
        """Copy the saved data out before ``write`` overwrites it (snapshot mode).

        ``counted``: the copy is reported in ``bytes_copied`` (not for an
        operation's own input, which any mode keeps this way).
        """
        if self.closure:
            raise SnapshotUnavailableError(
                closure_snapshot_message(self.node.rule.name, self.node.site, write)
            )
        self.detach()
        self.copied_by = write
        if counted:
            self.tape.bytes_copied += self.data.nbytes


class Rule:
    """How the engine differentiates one kind of node.

    ``handles_complex``: its pullback is right for complex values, by JAX's
    convention (the vjp is the transpose of the derivative as a real-linear map,
    under the pairing ``Re(u * v)``: a holomorphic function's vjp multiplies by
    ``f'(z)``, unconjugated, and the gradient of a real ``f`` is ``df/dx - i df/dy``).
    Nodes of a rule without it refuse complex values (:func:`check_complex`).
    """

    __slots__ = ("name",)
    leaf = False
    handles_complex = False
    # Whether node.saved holds what the pullback reads of each argument by position,
    # then of the output (VjpRule): a poison error can then name the argument to copy.
    saves_by_position = False

    def __init__(self, name: str):
        self.name = name

    def backward(self, node: Node, g: Any, owned: bool, bk: BackwardPass) -> None:
        raise NotImplementedError

    def poison_fixes(self, capture: Capture) -> list[list[str]] | None:
        """This rule's own fixes for a poisoned ``capture``; None where the standard ones
        (mutagrad.diagnostics.advice) apply."""
        return None

    def pullback_reads(self, node: Node) -> tuple[Any, ...]:
        """Everything ``node``'s pullback reads besides the cotangent and the input nodes.

        ``checkpointed`` fingerprints it to tell a recomputation that would
        pull back differently (:mod:`mutagrad.tape_fingerprint`): ``saved``
        and ``aux``, unless a rule keeps there what its pullback does not read
        (arrays held for their addresses only), and says what it reads instead.
        """
        return (node.saved, node.aux)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class LeafRule(Rule):
    """An input of a gradient call: the backward sweep stops here.

    Its one instance is :data:`LEAF`, which the sweep tells by identity.
    """

    __slots__ = ()
    leaf = True
    handles_complex = True


LEAF = LeafRule("input")


class IdentityRule(Rule):
    """An input of a nested gradient call, linked to the outer value it came from."""

    __slots__ = ()
    handles_complex = True

    def backward(self, node: Node, g: Any, owned: bool, bk: BackwardPass) -> None:
        (outer,) = node.inputs
        if outer is not None and outer.tag & bk.bit:
            bk.accumulate(outer, g, owned)


IDENTITY = IdentityRule("input")


class CallRule(Rule):
    """A ufunc's rule that records its own call instead of being applied as a VjpRule.

    A user's closure rule (:class:`mutagrad.custom.ClosureRule`), a ufunc with
    several outputs (``mutagrad.rules.ufuncs.MultipleOutputs``).
    """

    __slots__ = ()

    def call(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
        raise NotImplementedError


ANS = "ans"  # in a rule's ``reads``: the pullback reads the function's output


def plan_key(active: int, n: int) -> Any:
    """The cache key of a rule's plan for ``n`` arguments with activity bitmask ``active``."""
    return (n << 16) | active if n <= 16 else (active, n)


@final  # (apply and binary tell it from a CallRule by type(rule) is VjpRule)
class VjpRule(Rule):
    """A rule given as one vector-Jacobian product per positional argument.

    ``vjps[i](g, ans, *args, **kwargs)`` returns the cotangent of argument
    ``i`` (``None`` where the argument has no derivative). ``reads[i]`` names
    what that vjp looks at: argument positions and/or :data:`ANS`. The engine
    saves exactly what the vjps of the active arguments read; every other
    array argument reaches the vjp as a :class:`Meta` (shape and dtype only).
    ``fun`` computes the primal value from raw arrays.

    ``jvp(tangents, ans, args, kwargs)`` is its forward rule (None: it has
    none, and forward mode refuses it by name): the output's tangent from the
    arguments' (None for an argument without one), each with a leading batch
    axis. The rule modules build it with :mod:`mutagrad.core.jvps`'s helpers.
    """

    __slots__ = (
        "_plans",
        "fast_arity",
        "fun",
        "handles_complex",
        "jvp",
        "params",
        "plan1",
        "plans2",
        "reads",
        "trusted",
        "vjps",
    )
    saves_by_position = True

    def __init__(
        self,
        name: str,
        fun: Callable[..., Any] | None,
        vjps: tuple[Callable[..., Any] | None, ...],
        reads: tuple[tuple[int | str, ...], ...],
        params: bool = True,
        trusted: bool = True,
        jvp: Callable[..., Any] | Derivation | None = None,
        handles_complex: bool = False,
    ):
        super().__init__(name)
        self.jvp = jvp.bind(self.applied, vjps) if isinstance(jvp, Derivation) else jvp
        if len(reads) != len(vjps):
            raise ValueError(f"rule {name}: {len(vjps)} vjps but {len(reads)} read declarations")
        self.fun = fun
        self.vjps = vjps
        self.reads = reads
        # Whether the vjps receive the call's keyword arguments (a ufunc's
        # dtype= or casting= do not change its derivative, so ufunc vjps don't).
        self.params = params
        # mutagrad's own rules are trusted not to write into or alias their
        # arguments; a user's rule gets read-only views and its output is
        # copied if it aliases an argument.
        self.trusted = trusted
        # The number of inputs of the nodes :meth:`backward` takes its fast path for (-1:
        # none): one or two, for mutagrad's own rule with a vjp for every argument (one
        # without: an index, an integer). One comparison per node instead of three tests.
        complete = trusted and all(vjp is not None for vjp in vjps)
        self.fast_arity = len(vjps) if complete and len(vjps) <= 2 else -1
        self.handles_complex = handles_complex  # (see Rule)
        self._plans: dict[Any, tuple[tuple[bool, ...], bool]] = {}
        # The plans of one and of two arguments, by activity bitmask, made now: record1
        # and record2 read them by a tuple index, not a dictionary lookup per operation.
        self.plan1 = self.plan(1, 1)
        self.plans2 = tuple(self.plan(active, 2) for active in range(4))

    def applied(self, *args: Any, **kwargs: Any) -> Any:
        """This rule applied like a primitive (:func:`call_rule`): what a jvp derived by
        :mod:`mutagrad.core.jvps` calls on the tangents."""
        return call_rule(self, args, kwargs or None)

    def plan(self, active: int, n: int) -> tuple[tuple[bool, ...], bool]:
        """Which of the ``n`` arguments, and whether the output, must be saved.

        ``active`` has bit ``i`` set when argument ``i`` needs a gradient.
        """
        key = plan_key(active, n)
        plan = self._plans.get(key)
        if plan is None:
            need = [False] * n
            need_ans = False
            for i in range(min(n, len(self.reads))):
                if not active >> i & 1:
                    continue
                for item in self.reads[i]:
                    if item == ANS:
                        need_ans = True
                    elif isinstance(item, int) and item < n:
                        need[item] = True
            plan = self._plans[key] = (tuple(need), need_ans)
        return plan

    def backward(self, node: Node, g: Any, owned: bool, bk: BackwardPass) -> None:
        """One or two inputs, each with a vjp, mutagrad's own, on plain arrays: nearly every
        node. :meth:`_backward_general` unrolled (``tests/core/test_fast_paths.py`` runs both
        on the same nodes); anything else goes there.

        One function, not one per arity: a call more per node costs 1.4-2.3% of the
        instructions of a gradient call (mse_vec, network, mse_loop; callgrind), so this
        stays the one function in the engine above cyclomatic complexity 25.
        """
        inputs = node.inputs
        n_inputs = len(inputs)
        if n_inputs != self.fast_arity or (bk.recording and bk.needs_recording(node, g)):
            self._backward_general(node, g, owned, bk)
            return
        # mutagrad's vjps return g or fresh arrays (never a saved value); the engine
        # may update a cotangent in place only if it owns it and no other input got it.
        # (self.fast_arity: no vjp is None, which mypy cannot know)
        vjps: tuple[Callable[..., Any], ...] = self.vjps  # type: ignore[assignment]
        kwargs = node.aux
        bit = bk.bit
        if n_inputs == 1:
            inp = inputs[0]
            if inp is None or not inp.tag & bit:
                return
            x, ans = node.saved
            if type(x) is Capture:
                x = x.read()
            if type(ans) is Capture:
                ans = ans.read()
            # ``f(**{})`` costs more than ``f()``: most nodes have no keywords.
            c = vjps[0](g, ans, x, **kwargs) if kwargs else vjps[0](g, ans, x)
            # (_fresh(c), spelled out here and below: a call fewer per node)
            bk.accumulate(inp, c, owned if c is g else type(c) is ndarray and c.base is None)
            return
        inp0, inp1 = inputs
        x, y, ans = node.saved
        if type(x) is Capture:
            x = x.read()
        if type(y) is Capture:
            y = y.read()
        if type(ans) is Capture:
            ans = ans.read()
        live0 = inp0 is not None and inp0.tag & bit
        live1 = inp1 is not None and inp1.tag & bit
        if kwargs:
            c0 = vjps[0](g, ans, x, y, **kwargs) if live0 else None
            c1 = vjps[1](g, ans, x, y, **kwargs) if live1 else None
        else:
            c0 = vjps[0](g, ans, x, y) if live0 else None
            c1 = vjps[1](g, ans, x, y) if live1 else None
        alone = not (live0 and live1) or c0 is not c1
        # (live0 and live1 say that inp0 and inp1 are nodes, which mypy cannot follow)
        if live0:
            bk.accumulate(inp0, c0, alone and (owned if c0 is g else  # type: ignore[arg-type]
                                               type(c0) is ndarray and c0.base is None))
        if live1:
            bk.accumulate(inp1, c1, alone and (owned if c1 is g else  # type: ignore[arg-type]
                                               type(c1) is ndarray and c1.base is None))

    def _backward_general(self, node: Node, g: Any, owned: bool, bk: BackwardPass) -> None:
        """Any number of inputs; traced values in a recorded sweep; a user's (untrusted) vjps."""
        inputs = node.inputs
        vals, trusted = self._readable(node, g, bk)
        ans = vals.pop()
        kwargs = node.aux or _NO_KWARGS
        vjps = self.vjps
        bit = bk.bit
        results = []
        for i, inp in enumerate(inputs):
            if inp is None or not inp.tag & bit:
                continue
            vjp = vjps[i] if i < len(vjps) else None
            if vjp is None:
                self._no_derivative(inp, i)
                continue
            results.append((inp, vjp(g, ans, *vals, **kwargs)))
        # A user's vjp may return a saved value or a view: only g itself, or an
        # array mutagrad's own vjp allocated, may be updated in place; and one
        # cotangent handed to two inputs by neither.
        for inp, c in results:
            alone = len(results) == 1 or sum(other is c for _, other in results) == 1
            bk.accumulate(inp, c, alone and (owned if c is g else trusted and _fresh(c)))

    def _readable(self, node: Node, g: Any, bk: BackwardPass) -> tuple[list[Any], bool]:
        """What the vjps of ``node`` read, and whether they are trusted with it: traced
        values in a recorded sweep, read-only views for a user's rule."""
        inputs = node.inputs
        saved = node.saved
        if bk.recording and bk.needs_recording(node, g):
            n = len(inputs)
            return [bk.traced(v, inputs[i] if i < n else node) for i, v in enumerate(saved)], False
        vals = [v.read() if type(v) is Capture else v for v in saved]
        if not self.trusted:
            vals = [read_only(v) for v in vals]
        return vals, self.trusted

    def _no_derivative(self, inp: Node, i: int) -> None:
        """An active argument without a vjp: fine for an integer (an index, a size)."""
        if inp.dtype.kind not in "biu":
            raise NotDifferentiableError(no_vjp_message(self.name, i))


_NO_KWARGS: dict[str, Any] = {}


def _fresh(c: Any) -> bool:
    """An array that owns its memory (not a view such as broadcast_to's)."""
    return type(c) is ndarray and c.base is None


def read_only(value: Any) -> Any:
    """A read-only view of an ndarray (other values as they are)."""
    if type(value) is ndarray and value.flags.writeable:
        value = value.view()
        value.flags.writeable = False
    return value


class TracedType:
    """The traced array type, as the engine knows it: registered by :mod:`mutagrad.traced`.

    The engine records and sweeps without importing the array type (which is
    built on it); the array room tells it, once, the four things it needs:

    * ``kind``: the base class of traced values (:func:`is_wrapped`);
    * ``apply(rule, args, kwargs)``: record a rule applied to traced values
      (:func:`call_rule`, so that the linear maps of the write path work on raw
      arrays and, in a higher-order sweep, on traced ones);
    * ``handle(value, node, base)``: a traced read-only array for a saved value,
      what a recorded sweep's pullbacks read;
    * ``densify(sparse)``: a sparse cotangent with traced values made dense with
      recorded operations;
    * ``region_tangents(base, region)``: the tangents (per forward level) of a
      part of a base array, copied, for a capture that stops reading the
      base's memory (:meth:`Capture.detach`); ``handle`` gives them back.
    """

    __slots__ = ("apply", "densify", "handle", "kind", "region_tangents")

    def __init__(self) -> None:
        self.kind: type = _NoTracedType
        self.apply: Callable[..., Any] = _not_registered
        self.handle: Callable[..., Any] = _not_registered
        self.densify: Callable[[SparseCotangent], Any] = _not_registered
        self.region_tangents: Callable[[Any, ndarray], Any] = _not_registered


class _NoTracedType:
    """What :data:`TRACED` holds until mutagrad.traced registers the traced type."""


def _not_registered(*args: Any) -> Any:
    raise RuntimeError("mutagrad.traced has not registered the traced type with the engine")


TRACED = TracedType()


def register_traced_type(
    kind: type,
    apply: Callable[..., Any],
    handle: Callable[..., Any],
    densify: Callable[[SparseCotangent], Any],
    region_tangents: Callable[[Any, ndarray], Any],
) -> None:
    """Tell the engine the traced type and how to record on it (see :class:`TracedType`)."""
    TRACED.kind, TRACED.apply, TRACED.handle, TRACED.densify = kind, apply, handle, densify
    TRACED.region_tangents = region_tangents


def call_rule(rule: VjpRule, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> Any:
    """Apply ``rule`` like a primitive: raw in, raw out; recorded when an argument is traced."""
    kind = TRACED.kind
    for a in args:
        if isinstance(a, kind):
            return TRACED.apply(rule, args, kwargs)
    # (rule.fun is None only in rules whose callers pass the result to apply)
    return rule.fun(*args, **kwargs) if kwargs else rule.fun(*args)  # type: ignore[misc]


def is_wrapped(x: Any) -> bool:
    """True for a traced value (in a sweep, only a recorded one meets them)."""
    return isinstance(x, TRACED.kind)


class BackwardPass:
    """State of one reverse sweep: the cotangent of every node reached so far.

    ``owned`` holds the nodes whose cotangent array the engine allocated itself;
    only those may be updated in place. A cotangent returned by a pullback may
    be shared (``add`` hands the same array to both inputs), so it is never
    modified.
    """

    __slots__ = ("bit", "cots", "outer_mask", "owned", "recording", "tape")

    def __init__(self, tape: Tape, bit: int, recording: bool, everything: bool = False):
        self.tape = tape
        self.bit = bit
        self.recording = recording  # a nested sweep, differentiated by the enclosing level
        # The levels enclosing this one; with ``everything`` (a forward level encloses the
        # sweep, and forward levels put no bits in tags) every node is recorded.
        self.outer_mask = -1 if everything else bit - 2
        self.cots: dict[Node, Any] = {}
        self.owned: set[Node] = set()

    def needs_recording(self, node: Node, g: Any) -> bool:
        """Whether this node's pullback must run on traced values."""
        return bool(node.tag & self.outer_mask) or is_wrapped(g)

    def traced(self, value: Any, node: Node | None) -> Any:
        base = None
        tangents = None
        if type(value) is Capture:
            # Still the array's live memory (not a snapshot or the caller's
            # original): the handle must be a view of that array, so that a
            # later write to it poisons or snapshots what the enclosing level
            # saves from the handle (and reads its tangents through it).
            base = value.base if value.region is value.data else None
            if base is None:
                tangents = getattr(value, "tangents", None)
            value = value.read()
        if isinstance(value, Meta):
            return value
        if node is None and (
            self.outer_mask != -1
            or (tangents is None and getattr(base if base is not None else value, "_tangents",
                                             None) is None)
        ):  # fmt: skip
            # A constant of this tape: raw, unless a forward level around the sweep gave it
            # a tangent (a value the function closes over): the pullback's result depends on
            # it there, and the handle carries its tangents to that level.
            return value
        return TRACED.handle(value, node, base, tangents)

    def accumulate(self, node: Node, c: Any, owned: bool = False) -> None:
        """Add cotangent ``c`` into ``node``'s, after unbroadcasting and casting it.

        The common case, a float64 cotangent of a float64 value, is here; everything else
        is :meth:`accumulate_general`'s.
        """
        kind = type(c)
        if kind is float64:  # (its dtype and shape known, not read: each read makes an object)
            common = node.dtype is FLOAT64 and node.shape == ()
        else:
            common = kind is ndarray and c.dtype is node.dtype
            if common and c.shape != node.shape:
                c = unbroadcast(c, node.shape)
        if common:
            # The common case: a float64 cotangent for a float64 value.
            cots = self.cots
            old = cots.get(node)
            if old is None or old is ZERO:
                cots[node] = c
                if owned:
                    self.owned.add(node)
                return
            kind_old = type(old)
            if kind_old is ndarray:  # a dense cotangent of the node's dtype and shape
                if node in self.owned:
                    old += c
                else:
                    total = cots[node] = old + c
                    if type(total) is ndarray:
                        self.owned.add(node)
                return
            if kind is float64 and kind_old is float64:
                cots[node] = old + c
                return
        self.accumulate_general(node, c, owned)

    def accumulate_general(self, node: Node, c: Any, owned: bool = False) -> None:
        """:meth:`accumulate` for every cotangent: structural zeros, sparse ones, other dtypes
        and shapes, traced values (the fast path above is its float64 case, unrolled;
        ``tests/core/test_fast_paths.py`` runs both on the same cotangents)."""
        kind = type(c)
        if c is None or kind is NoTangent:
            return
        cots = self.cots
        if type(c) is ZeroTangent:
            if node not in cots:
                cots[node] = ZERO
            return
        old = cots.get(node)
        if type(c) is SparseCotangent:
            if old is None or old is ZERO:
                cots[node] = c
            elif type(old) is SparseCotangent:
                old.entries.extend(c.entries)
            else:
                self._add_sparse_into(node, old, c)
            return
        if not hasattr(c, "shape"):
            c = np.asarray(c)
        if c.shape != node.shape:
            c = unbroadcast(c, node.shape)
        want = cotangent_dtype(node.dtype)
        if c.dtype != want:
            if c.dtype.kind == "c" and want.kind != "c":
                # A real value's cotangent is the real part of what its complex uses
                # hand it (JAX's convention: the pairing Re(u * v) with a real v).
                c = np.real(c)
            if not is_wrapped(c):
                c = c.astype(want)
                owned = True
        if old is None or old is ZERO:
            cots[node] = c
            if owned:
                self.owned.add(node)
        elif type(old) is SparseCotangent:
            reusable = owned and type(c) is ndarray and has_layout(c, old.layout)
            buf = c if reusable else owned_copy(c, want, old.layout)  # regions assume the layout
            cots[node] = old.add_to(buf) if not is_wrapped(buf) else buf + TRACED.densify(old)
            self.owned.add(node)
        elif node in self.owned and type(old) is ndarray and not is_wrapped(c):
            old += c
        else:
            cots[node] = old + c
            if type(cots[node]) is ndarray:
                self.owned.add(node)

    def accumulate_entry(self, node: Node, entry: tuple[int, Any, Any], layout: Any = None) -> None:
        """Add one sparse contribution (kind, where, value) into ``node``'s cotangent.

        The same as :meth:`accumulate` of a SparseCotangent holding ``entry``,
        without making one when the node already has a pending sparse
        cotangent (a loop of ``x[i]`` reads adds thousands of entries).
        """
        pending = self.cots.get(node)
        if type(pending) is SparseCotangent:
            pending.entries.append(entry)
            return
        sparse = SparseCotangent(node.shape, cotangent_dtype(node.dtype), layout)
        sparse.entries.append(entry)
        self.accumulate(node, sparse)

    def _add_sparse_into(self, node: Node, old: Any, sparse: SparseCotangent) -> None:
        if is_wrapped(old) or sparse_is_wrapped(sparse):
            self.cots[node] = old + TRACED.densify(sparse)
            return
        owned = node in self.owned and type(old) is ndarray
        if not (owned and has_layout(old, sparse.layout)):
            old = owned_copy(old, sparse.dtype, sparse.layout)
            self.owned.add(node)
        self.cots[node] = sparse.add_to(old)


def sparse_is_wrapped(sparse: SparseCotangent) -> bool:
    """Whether any entry of ``sparse`` holds a traced value (a recorded sweep's)."""
    if not sparse.entries:
        return False
    # By the values' types, found in C: a loop of N element reads leaves N entries.
    _, _, values = zip(*sparse.entries)
    kind = TRACED.kind
    return any(issubclass(value_type, kind) for value_type in set(map(type, values)))


def backward(
    tape: Tape,
    seeds: list[tuple[Node, Any]],
    start: int,
    bit: int,
    stop: AbstractSet[Node],
    recording: bool = False,
    everything: bool = False,
) -> BackwardPass:
    """Run the reverse sweep over ``tape.nodes[start:]`` from ``seeds``.

    With ``recording`` the sweep is recorded (it runs inside an enclosing
    gradient call, which differentiates it): pullbacks run on traced values
    (:attr:`TracedType.handle`); with ``everything`` too, every pullback does
    (a forward level encloses the sweep).

    Nodes in ``stop`` (the inputs being differentiated) keep their cotangent
    and are not propagated through. Nodes whose cotangent is a structural zero
    are not called; the zero is passed on so that an input reached only
    through overwritten values gets zeros rather than ``None``.
    """
    bk = BackwardPass(tape, bit, recording, everything)
    for node, g in seeds:
        bk.accumulate(node, g)
    nodes = tape.nodes
    cots = bk.cots
    owned_nodes = bk.owned
    pop = cots.pop
    # A nested sweep being recorded appends to ``nodes``: the count is fixed here.
    for node in islice(reversed(nodes), len(nodes) - start):
        g = pop(node, None)
        if g is None:
            continue
        rule = node.rule
        # (LEAF is the one leaf rule: ``rule.leaf``, a class attribute, is an unspecialised
        # attribute load per node on CPython 3.11, where an identity test is not)
        if rule is LEAF or node in stop:
            cots[node] = g  # an input's cotangent is the result
            continue
        if g is ZERO:
            for inp in node.inputs:
                if inp is not None and inp.tag & bit and inp not in cots:
                    cots[inp] = ZERO
            continue
        owned = False
        if owned_nodes and node in owned_nodes:
            owned_nodes.discard(node)
            owned = True
        if type(g) is SparseCotangent:
            if sparse_is_wrapped(g):
                g, owned = TRACED.densify(g), False
            else:
                g, owned = g.dense(), True
        rule.backward(node, g, owned, bk)
    return bk


def check_complex(
    rule: Rule,
    inputs: tuple[Node | None, ...],
    tape: Tape,
    dtype: np.dtype,
    operation: str | None,
    site: Site | None,
) -> None:
    """Refuse a node whose value or inputs are complex unless its rule handles complex values.

    A rule's vjps written for real values can be silently wrong for complex
    ones (a missing conjugate, a dropped imaginary part), so complex values
    pass only through rules marked :attr:`Rule.handles_complex`, each tested
    against finite differences in the real and the imaginary direction.
    """
    if rule.handles_complex:
        if dtype.kind == "c":
            tape.complex_values = True
        return
    if dtype.kind == "c" or any(n is not None and n.dtype.kind == "c" for n in inputs):
        raise complex_refusal(rule, site, operation)


def complex_refusal(
    rule: Any, site: Site | None, operation: str | None = None
) -> NotDifferentiableError:
    """The refusal of complex values at a rule not written for them (reverse or forward mode),
    naming ``operation``, or the rule: a user's rule and SciPy's as they are, numpy's with np."""
    trusted = getattr(rule, "trusted", True)
    numpy_rule = trusted and not rule.name.startswith("scipy.")
    name = f"np.{rule.name}" if numpy_rule else rule.name
    return NotDifferentiableError(complex_message(operation or name, site, not trusted))


# A WrappedArray flag (see mutagrad.traced.value): np.asarray handed the array's
# memory to numpy as a plain, writable ndarray, whose writes no version sees; or the
# array is a user's rule's output over memory plain numpy code holds too
# (mutagrad.traced.aliases).
EXPORTED = 256


def capture(
    wrapped: Any, data: ndarray, node: Node, mode: Any, closure: bool = False
) -> Capture:
    """Register ``data`` (memory of ``wrapped``) as saved for ``node``'s pullback.

    ``mode`` is the policy of the call recording ``node``: it decides what an
    overlapping write does to the capture, and what reading it then gives.
    The memory of an exported array can change behind its version, so such a
    capture keeps a copy instead (as a raw ndarray's does).
    """
    base = wrapped._base if wrapped._base is not None else wrapped
    c = Capture(data, base, node, mode, closure)
    if base._flags & EXPORTED and not closure:
        c.detach()
        node.tape.guard_bytes += c.data.nbytes
        return c
    node.tape.captures.append(c)
    caps = base._captures
    if caps is None:
        base._captures = [c]
    else:
        caps.append(c)
    current = base._node
    if current is None or current.tape is not node.tape:
        # A long-lived array (a constant, a parameter): release must find it. An
        # array whose value is on this tape was made or written in this call, and
        # release reaches the written ones through ``touched``.
        _remember(node.tape.capture_bases, base)
    return c
