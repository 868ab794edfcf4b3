"""One gradient call: the machinery every entry point builds on.

A :class:`GradientCall` wraps the array arguments in WrappedArrays with fresh
input nodes, runs ``f`` with a :class:`~mutagrad.core.engine.Trace` active,
and sweeps the tape backwards. The caller's arrays are never written: an
argument ``f`` mutates is copied on its first write, and the caller's array
is read-only while the call runs (:class:`Frozen`) so that a closure cannot
change it behind the tape; one written through a view made before the call
is caught by its fingerprint.

With implicit parameters (``gradient(lambda: loss(), ps)``, ``ps`` a
:class:`~mutagrad.params.Params`) nothing is wrapped: each parameter, a
WrappedArray the closure uses directly, gets a fresh input node on the call's
tape for the duration of the call, and the result is a
:class:`~mutagrad.params.Grads`.

The faces built on it: Zygote's names (:mod:`mutagrad.zygote`), the
JAX-style transforms (:mod:`mutagrad.transforms`), the Jacobians
(:mod:`mutagrad.jacobians`), ``checkpointed``, ``hook`` and ``explain``.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections import namedtuple
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np
from xxhash import xxh3_128_intdigest as _xxh3_128

from mutagrad.buffer import check_not_open_buffer
from mutagrad.core.engine import (
    FLOAT64,
    RUNNING,
    STATE,
    ZERO,
    BackwardPass,
    Node,
    Tape,
    Trace,
    backward,
    collector_paused,
    current_trace,
    raise_other_thread_error,
    sparse_is_wrapped,
)
from mutagrad.core.memory import copy_keeping_layout
from mutagrad.core.modes import MODE, Mode, mode_named
from mutagrad.core.record import input_node
from mutagrad.core.regions import traced_densify
from mutagrad.core.tangents import SparseCotangent, cotangent_dtype
from mutagrad.core.trees import FLAT_TUPLE, flatten
from mutagrad.diagnostics.messages import (
    PLAIN_SUBCLASSES,
    complex_output_message,
    frozen_write_message,
    leaf_message,
    made_writeable_message,
    not_callable_message,
    subclass_message,
    unbound_method_called,
    unbound_method_message,
)
from mutagrad.diagnostics.sites import innermost_user_site, raised_by_mutagrad, with_article
from mutagrad.diagnostics.tracebacks import conversion_hidden_by
from mutagrad.errors import (
    MutagradError,
    NotDifferentiableError,
    UnsupportedAttributeError,
    forget_conversion_errors,
)
from mutagrad.freezing import PENDING, Frozen, Pending, can_freeze, frozen_by_a_call, lock, unlock
from mutagrad.params import Grads, Params, claim_parameter, release_parameter
from mutagrad.traced.mutation import overlaps
from mutagrad.traced.tangents import share_tangents
from mutagrad.traced.value import (
    BORROWED,
    SHARED_INPUT,
    WrappedArray,
    WrappedValue,
    check_thread,
    node_of,
    wrap,
)

_WithGradientFields = namedtuple("_WithGradientFields", ["val", "grad"])


class WithGradient(_WithGradientFields):
    """``(val, grad)``, with what the call copied to keep the gradient right.

    ``bytes_copied``: old data snapshot mode copied before writes.
    ``bytes_guarded``: raw ndarrays copied because a pullback reads them
    (wrap such a constant with ``mutagrad.array`` to avoid the copy).
    """

    bytes_copied: int = 0
    bytes_guarded: int = 0


def _is_differentiable_leaf(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (int, float, complex, np.integer, np.inexact, WrappedValue)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "iufc"


# Arguments that get no gradient, as Zygote's `nothing`: no numbers in them.
_PASSING_TYPES = (
    str,
    bytes,
    type(None),
    type(Ellipsis),
    range,
    slice,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    functools.partial,
    np.ufunc,
)


def passes_through(x: Any) -> bool:
    """An argument that is not data: it reaches ``f`` as it is and gets no gradient."""
    return isinstance(x, _PASSING_TYPES)


class GradientCall:
    """One differentiation call: wrapped inputs, the trace, and the caller's arrays.

    Every entry point builds one: ``gradient`` and ``withgradient`` here, the
    Jacobians in :mod:`mutagrad.jacobians`, ``checkpointed`` and ``hook`` in
    :mod:`mutagrad.checkpoint` and :mod:`mutagrad.hook`, :func:`mutagrad.explain`, and, through
    ``call_with_gradient``, the transforms.

    With ``params`` (implicit parameters) the call has no arguments; each
    parameter gets an input node instead, and :meth:`gradients` returns Grads.
    Every gradient call builds one, so construction keeps to plain loops.
    """

    __slots__ = (
        "_claimed",
        "_rebound",
        "args",
        "borrow",
        "borrowed",
        "frozen",
        "inputs",
        "leaves",
        "locked",
        "owners",
        "owns_tape",
        "param_nodes",
        "params",
        "parent",
        "pending",
        "rebuild",
        "start",
        "tape",
        "to_freeze",
        "trace",
        "watched",
    )

    def __init__(
        self,
        args: tuple[Any, ...],
        mode_name: str | Mode | None,
        params: Params | None = None,
        borrow: bool = True,
    ):
        policy = MODE.get() if mode_name is None else mode_named(mode_name)
        parent = self.parent = current_trace()
        trace = self.trace = self._level(parent, policy)
        tape = self.tape = trace.tape
        # A call inside another on its tape: that call releases it. A reverse level
        # inside forward levels alone makes a tape of its own.
        self.owns_tape = tape is not None and (parent is None or parent.tape is not tape)
        self.start = len(tape.nodes) if tape is not None else 0
        # The arrays a proving boundary froze for this call (see mutagrad.freezing), adopted
        # by the first call built after it: they are borrowed through its views, and those
        # proved unviewed are not fingerprinted.
        pending: Pending | None = PENDING.get()
        if pending is not None and not pending.adopted:
            pending.adopted = True
            self.frozen = pending.frozen
        else:
            self.frozen = Frozen()
            pending = None
        self.pending = pending
        self.borrow = borrow
        self.borrowed: list[WrappedArray] = []  # large inputs sharing the caller's memory
        # Every array argument, its fingerprint on entry (checked when f returns)
        # and its input.
        # (None: proved to have no view, see mutagrad.freezing)
        self.watched: list[tuple[np.ndarray, bytes | int | None, WrappedValue]] = []
        leaves, self.rebuild = flatten(args)
        self.leaves = leaves
        self.inputs: list[Node | None] = []
        # The caller's arrays to freeze. Borrowing and freezing happen under the lock
        # of Frozen (taken at the first array argument), so that a call in another
        # thread cannot freeze an array between this one's check and its borrow.
        self.to_freeze: list[np.ndarray] = []
        self.locked = False
        # How many array arguments took the common case of _wrap_callers_array: writeable
        # arrays that own their memory, frozen there, so none of them is another (passed
        # twice, the second is read-only by then) and none can share another's memory.
        self.owners = 0
        try:
            wrapped = []
            for x in leaves:  # (a loop: a comprehension is a function made and called)
                wrapped.append(self._wrap(x))
            if self.locked:
                self.frozen.freeze_held(self.to_freeze)  # (and registers what _wrap froze)
        except BaseException:
            # An argument refused: the caller's arrays are theirs again, under the lock
            # (not yet taken if no array argument came before the refused one, while the
            # proving boundary's frozen arrays wait to be thawed).
            if self.locked:
                self.frozen.thaw_held()
            else:
                self.frozen.thaw()
            raise
        finally:
            if self.locked:
                unlock()
        self.args = tuple(wrapped) if self.rebuild is FLAT_TUPLE else self.rebuild(wrapped)
        if len(self.watched) > self.owners and len(self.watched) > 1:
            _mark_shared_inputs(self.watched)  # (it would find nothing to mark among owners)
        self.params = params
        self.param_nodes: list[Node] = []
        self._rebound: list[tuple[WrappedArray, Node | None, Node]] = []
        self._claimed: list[WrappedArray] = []
        if params:
            try:
                for w in params:
                    self.param_nodes.append(self._bind_parameter(w))
            except BaseException:
                self.finish()
                raise

    @property
    def errors(self) -> Any:
        """Where a refusal met in another thread waits for this call (its tape, or its level)."""
        return self.tape if self.tape is not None else self.trace

    def _level(self, parent: Trace | None, policy: Mode) -> Trace:
        """The level this call differentiates at: reverse, on the enclosing tape if any."""
        depth = parent.depth + 1 if parent is not None else 1
        if parent is None or parent.tape is None:
            return Trace(Tape(), depth, policy, parent)
        return Trace(parent.tape, depth, policy, parent)

    def _link(self, w: WrappedValue, x: Any, outer: Node | None) -> Node | None:
        """Give ``w``, the value ``f`` receives for argument leaf ``x``, its input node (linked
        to ``outer``, ``x``'s node in an enclosing call) and ``x``'s tangents at the forward
        levels around this call (``w`` holds a copy of ``x``'s value: they are shared)."""
        node = input_node(self.tape, self.trace.bit, outer, w._raw)
        w._node = node
        if self.trace.forward and isinstance(x, WrappedValue):
            share_tangents(x, w, self.trace.forward)
        return node

    def _wrap(self, x: Any) -> Any:
        """Argument leaf ``x`` as ``f`` sees it: a WrappedValue with an input node, or
        ``x`` itself where it passes through undifferentiated (a string, None)."""
        outer = None
        w: WrappedValue
        if type(x) is np.ndarray and x.dtype.kind in "iufc":
            w = self._wrap_callers_array(x)
        elif not _is_differentiable_leaf(x):
            if not passes_through(x):
                name = (
                    f"argument {len(self.inputs)}"
                    if self.rebuild is FLAT_TUPLE
                    else f"leaf {len(self.inputs)} of the arguments"
                )
                raise NotDifferentiableError(leaf_message(x, name))
            self.inputs.append(None)
            return x
        elif isinstance(x, WrappedValue):
            if self.parent is None:
                check_thread(x, "a gradient call")
            outer = node_of(x, self.tape) if self.parent is not None else None
            w = wrap(np.copy(x._raw) if isinstance(x._raw, np.ndarray) else x._raw)
        elif isinstance(x, np.ndarray):  # an ndarray subclass
            if type(x) not in PLAIN_SUBCLASSES:  # np.matrix, np.ma: not plain semantics
                raise NotDifferentiableError(
                    subclass_message(type(x), f"argument {len(self.inputs)} of the gradient call")
                )
            w = WrappedArray(np.array(x, copy=True))
        elif isinstance(x, (int, np.integer)):
            w = wrap(np.int64(x))
        else:
            w = wrap(np.float64(x) if isinstance(x, float) else
                     np.complex128(x) if isinstance(x, complex) else x)  # fmt: skip
        self.inputs.append(self._link(w, x, outer))
        return w

    def _wrap_callers_array(self, x: np.ndarray) -> WrappedArray:
        """The caller's numeric ndarray: borrowed (copied on ``f``'s first write to it) and
        frozen, so ``f`` cannot write it by name; or copied where it cannot be borrowed.

        A view of it made before the call (``v = a[:]``, a memoryview,
        ``np.frombuffer``) stays writable whatever flags are set here: a write
        through it during ``f`` is caught by the fingerprint check in :meth:`run`.
        """
        pending = self.pending
        if pending is not None:
            view = pending.view_of(x)
            if view is not None:  # frozen by the boundary, after it made this view
                w = self._borrow(view) if self.borrow else WrappedArray(copy_keeping_layout(x)[0])
                self.watched.append((x, None if id(x) in pending.unviewed else fingerprint(x), w))
                return w
        if not self.locked:
            lock()  # (released by __init__, after freezing)
            self.locked = True
        flags = x.flags
        if self.borrow and x.base is None and flags.writeable and (
            flags.c_contiguous or flags.f_contiguous
        ):  # the common case, the caller's own array: borrowed and frozen here
            w = self._borrow(x)  # (its view stays writeable: made before)
            x.setflags(False)  # type: ignore[call-arg]  # (write=False, see Frozen.freeze_held)
            self.frozen.arrays.append(x)
            if flags.owndata:  # (no base, yet not owning: memory a C extension lent it)
                self.owners += 1
        elif self.borrow and _borrowable(x):
            w = self._borrow(x)
            self.to_freeze.append(x)
        else:
            w = WrappedArray(copy_keeping_layout(x)[0])  # numpy's strides, exactly
            if not flags.writeable and not frozen_by_a_call(x):
                w._raw.flags.writeable = False  # numpy would refuse f's writes to it
            elif x.base is None or can_freeze(x):
                self.to_freeze.append(x)
        self.watched.append((x, fingerprint(x), w))
        return w

    def _borrow(self, x: np.ndarray) -> WrappedArray:
        """A WrappedArray over the caller's array, copied on its first write.

        Made before ``x`` is frozen, so that its view of ``x`` stays writeable
        (or of a view a proving boundary made before it froze the caller's array).
        """
        w = WrappedArray(x.view())
        w._flags = BORROWED
        w._views = []
        self.borrowed.append(w)
        return w

    def _bind_parameter(self, w: WrappedArray) -> Node:
        """Give parameter ``w`` (used directly by the closure, never copied) an input node."""
        claim_parameter(w, self.tape)
        self._claimed.append(w)
        outer = node_of(w, self.tape) if self.parent is not None else None
        node = input_node(self.tape, self.trace.bit, outer, w._raw)
        self._rebound.append((w, w._node, node))
        w._node = node
        self.tape.touch(w)
        return node

    def _unbind_parameters(self) -> None:
        """Give parameters back the node they had before the call, unless ``f`` wrote them.

        A parameter ``f`` wrote keeps its new node: inside an enclosing call
        that node is the parameter's current value there too.
        """
        for w, previous, node in reversed(self._rebound):
            if w._node is node:
                w._node = previous
        self._rebound = []
        self.release_parameter_claims()

    def release_parameter_claims(self) -> None:
        """Let other calls bind the parameters (a pullback keeps their nodes, not the claim)."""
        for w in self._claimed:
            release_parameter(w, self.tape)
        self._claimed = []

    def thaw(self) -> None:
        """Give the caller's arrays their flags back."""
        self.frozen.thaw()

    def run(self, f: Callable[..., Any], kwargs: dict[str, Any] | None = None) -> Any:
        """Call ``f`` on the traced arguments; ``kwargs`` pass through untraced.

        An error of numpy's or Python's that a traced value caused is raised as
        the MutagradError that explains it (:meth:`explained`); a refusal that
        a thread started by ``f`` met is raised even if that thread swallowed it.
        """
        if not callable(f):
            raise TypeError(not_callable_message(f))
        trace = self.trace
        RUNNING.append(trace)
        token = STATE.set(trace)
        try:
            out = f(*self.args, **kwargs) if kwargs else f(*self.args)
        except MutagradError:
            raise
        except Exception as error:
            explanation = self.explained(error)
            if explanation is None:
                raise
            raise explanation from error
        finally:
            forget_conversion_errors()
            STATE.reset(token)
            RUNNING.remove(trace)  # (threads: not always the last one)
            errors = self.tape if self.tape is not None else trace  # (self.errors, inlined)
            if errors.other_thread_error is not None:
                raise_other_thread_error(errors)
        if self.watched:
            self.check_arguments_unchanged()
        return out

    def explained(self, error: Exception) -> MutagradError | None:
        """The MutagradError behind ``error``, raised by numpy or Python while ``f`` ran."""
        hidden = conversion_hidden_by(error)
        if hidden is not None:
            return hidden  # numpy raised its own error in place of mutagrad's
        if self.errors.other_thread_error is not None:
            return self.errors.other_thread_error  # a thread's refusal, then its consequence
        site = innermost_user_site(error.__traceback__)
        if (
            isinstance(error, ValueError)
            and "read-only" in str(error)
            and self.frozen.arrays
            and not raised_by_mutagrad(error)  # (a read-only traced value, as numpy's)
        ):
            return NotDifferentiableError(frozen_write_message(self.frozen_arguments(), site))
        if isinstance(error, TypeError):
            method = unbound_method_called(str(error))
            if method is not None:
                return UnsupportedAttributeError(unbound_method_message(*method, site))
        return None

    def frozen_arguments(self) -> list[tuple[int, np.ndarray]]:
        """The caller's arrays (by position among the array arguments) this call froze."""
        frozen = {id(a) for a in self.frozen.arrays}
        found = []
        for i, (x, _, _) in enumerate(self.watched):
            a: Any = x
            while isinstance(a, np.ndarray):
                if id(a) in frozen:
                    found.append((i, x))
                    break
                a = a.base
        return found

    def check_arguments_unchanged(self) -> None:
        """Raise if a caller's array changed while ``f`` ran.

        f's own writes go to the traced input (a copy, or a copy made on the
        first write), never to the caller's array: a change there was made
        through memory mutagrad does not see. For a borrowed input, captures
        read that memory; for a copied one, numpy's f would have seen the
        change. Either way the result would not be numpy's.
        """
        for x, before, _ in self.watched:
            if type(before) is bytes and x.tobytes() == before:
                continue  # (check_unchanged's test of a small array, without its call)
            check_unchanged(x, before, "an argument", (
                "an argument of the gradient call changed while f ran, through an array "
                "that shares its memory and was made before the call (a view such as "
                "v = a[:], a memoryview or np.frombuffer), so mutagrad could not see the "
                "write; the gradient would be wrong.\n"
                "Fix: pass a copy (gradient(f, a.copy())), or write through the argument "
                "f receives instead of through the outside view."
            ))

    def stop_nodes(self) -> AbstractSet[Node]:
        """The nodes a sweep stops at besides leaves: the call's inputs and parameters.

        Outside every other call they are all leaves, at which every sweep stops.
        """
        if self.parent is None:
            return _ONLY_LEAVES
        stop = {n for n in self.inputs if n is not None}
        stop.update(self.param_nodes)
        return stop

    def output_node(self, out: Any, what: str, holomorphic: bool = False) -> Node | None:
        """The node of the scalar ``f`` returned (None for a constant); raises for non-scalars,
        and for a complex one unless the caller asked for a holomorphic derivative."""
        check_not_open_buffer(out, what)
        if not isinstance(out, WrappedValue):
            if isinstance(out, (bool, np.bool_)) and self.inputs_active():
                raise NotDifferentiableError(
                    f"{what} needs f to return a floating-point number, but it returned a "
                    "boolean, which has no derivative.\n"
                    "Fix: return the quantity itself, e.g. np.sum(x) rather than np.sum(x) > 0."
                )
            if isinstance(out, (int, float, np.number)) or (
                isinstance(out, np.ndarray) and out.shape == ()
            ):
                return None
            raise MutagradError(
                f"{what} needs f to return a scalar, but it returned {type(out).__name__}.\n"
                "Fix: return one number; for array outputs use mutagrad.jacobian."
            )
        dtype = out._raw.dtype  # (out.dtype and out.size without the properties' calls)
        if out._raw.size != 1:
            # One element of any shape is the scalar (np.sum(x, keepdims=True)), as
            # autograd and PyTorch take it; its seed has its shape (see _seed).
            raise MutagradError(
                f"{what} needs f to return a scalar, but it returned an array of shape "
                f"{out.shape}.\n"
                "Fix: reduce it (np.sum(y)), or use mutagrad.jacobian for array outputs."
            )
        node = node_of(out, self.tape)
        if dtype.kind == "c" and not holomorphic and (node is not None or self.inputs_active()):
            raise NotDifferentiableError(complex_output_message(what))
        if node is None and dtype.kind in "biu" and self.inputs_active():
            raise NotDifferentiableError(
                f"{what} needs f to return a floating-point number, but it returned "
                f"{with_article(str(dtype))} value, which has no derivative (a comparison, "
                "a count, an index).\n"
                "Fix: return the quantity itself, e.g. np.sum(x) rather than np.sum(x) > 0."
            )
        return node

    def inputs_active(self) -> bool:
        """Whether the call differentiates anything (arguments or parameters)."""
        return any(n is not None for n in self.inputs) or bool(self.param_nodes)

    def sweep(self, out_node: Node | None, seed: Any) -> BackwardPass | None:
        if out_node is None:
            return None
        stop = self.stop_nodes()
        parent = self.parent
        if parent is None:  # STATE is already None outside every call
            return backward(self.tape, [(out_node, seed)], self.start, self.trace.bit, stop)
        token = STATE.set(parent)  # a nested sweep is recorded by the enclosing level
        try:
            # Forward levels around put no bits in tags: every pullback runs on traced
            # values, which carry their tangents, for those levels to differentiate.
            return backward(self.tape, [(out_node, seed)], self.start, self.trace.bit, stop,
                            recording=True, everything=bool(parent.forward))  # fmt: skip
        finally:
            STATE.reset(token)

    def gradients(self, bk: BackwardPass | None) -> Any:
        """The arguments' gradients in their structure, or Grads for implicit parameters."""
        if self.params is not None:
            values = [None if bk is None else input_gradient(w, node, bk)
                      for w, node in zip(self.params, self.param_nodes)]  # fmt: skip
            return Grads(self.params, values)
        grads = []
        for leaf, node in zip(self.leaves, self.inputs):
            grads.append(None if node is None or bk is None else input_gradient(leaf, node, bk))
        return tuple(grads) if self.rebuild is FLAT_TUPLE else self.rebuild(grads, gradient=True)

    def finish(self) -> None:
        if self.frozen.arrays:
            self.frozen.thaw()  # (self.thaw(), one call less)
        for w in self.borrowed:
            if w._views:  # views of an input and the input point at each other:
                for v in w._views:  # (and an aliased output and its views)
                    if v._views:
                        v._views = []
                w._views = []  # break the cycle, so that they are freed at once
        if self._rebound or self._claimed:
            self._unbind_parameters()
        if self.owns_tape:
            self.tape.release()


_ONLY_LEAVES: frozenset[Node] = frozenset()


def _borrowable(x: np.ndarray) -> bool:
    """An array whose memory can be shared for the call (and made read-only meanwhile)."""
    return x.flags.writeable and can_freeze(x)


def check_unchanged(x: np.ndarray, before: bytes | int | None, what: str, changed: str) -> None:
    """Raise if the caller's array ``x`` changed while ``f`` ran: its fingerprint is no longer
    ``before`` (the message ``changed``), or, proved to have no view (``before`` None, see
    mutagrad.freezing), it was made writeable again (``what`` names it)."""
    if before is None:
        # (x and the array it views, both frozen: a lent tangent is a view t[None] of the
        # caller's, an argument may view an array only it refers to)
        if x.flags.writeable or (x.base is not None and x.base.flags.writeable):
            raise NotDifferentiableError(made_writeable_message(what))
    elif fingerprint(x) != before:
        raise NotDifferentiableError(changed)


def fingerprint(a: np.ndarray) -> bytes | int:
    """What :meth:`GradientCall.check_arguments_unchanged` compares: a's bytes, or their hash.

    A small array is compared exactly: copying its bytes costs less than
    hashing them. A larger one by one pass over its memory with xxHash's XXH3
    (128 bits): at 8 MB it costs about what reading the array once costs, where
    the checksum it replaced (a wrapping sum and a weighted sum, two vectorised
    passes) cost ~90 times more on this project's machine. A change is missed
    only if the 128-bit hashes of the old and new bytes collide, a 2**-128
    chance for a program that does not search for one.
    """
    if a.nbytes <= EXACT_LIMIT:
        return a.tobytes()
    # (ravel keeps a C- or F-contiguous array's memory as a view, and copies any
    # other layout into one contiguous buffer, which is what the hash reads; an ndarray
    # is a buffer, which numpy's stubs say only from Python 3.12)
    return _xxh3_128(a if a.flags.c_contiguous else a.ravel(order="K"))  # type: ignore[arg-type]


# Up to this many bytes an argument's fingerprint is its bytes (see fingerprint).
EXACT_LIMIT = 4096


def _mark_shared_inputs(watched: list[tuple[np.ndarray, Any, WrappedValue]]) -> None:
    """Flag inputs whose caller's arrays share memory (``f(x, x)``, ``f(a[:4], a[2:])``).

    Each input is differentiated as an array of its own; in numpy a write
    through one of them would show through the other. Reads agree either
    way, so only a write to such an input is refused (by
    :func:`mutagrad.traced.mutation.prepare_write`). Distinct arrays that own
    their memory cannot share it: the common case costs one pass, and the
    exact test runs only within groups of arrays over one buffer.
    """
    seen: set[int] = set()
    for x, _, _ in watched:
        if x.base is not None or id(x) in seen:
            break
        seen.add(id(x))
    else:
        return
    groups: dict[int, list[tuple[np.ndarray, WrappedValue]]] = {}
    for x, _, w in watched:
        groups.setdefault(id(_owner(x)), []).append((x, w))
    for group in groups.values():
        for i, (a, wa) in enumerate(group):
            for b, wb in group[i + 1 :]:
                if overlaps(a, b, max_work=100_000):
                    wa._flags |= SHARED_INPUT
                    wb._flags |= SHARED_INPUT


def _owner(a: np.ndarray) -> Any:
    """The object that provides ``a``'s memory: its base array, or the buffer behind it."""
    owner: Any = a
    while True:
        base = owner.base if isinstance(owner, np.ndarray) else getattr(owner, "obj", None)
        if base is None:
            return owner
        owner = base


def input_gradient(leaf: Any, node: Node, bk: BackwardPass) -> Any:
    cot = bk.cots.get(node)
    if type(cot) is np.ndarray and cot.dtype is node.dtype and cot.ndim:
        # The common case: a dense cotangent of an array argument. One the
        # sweep allocated is handed over; any other (a pullback's g, a
        # broadcast view) may be shared, so the caller gets a copy.
        return cot if node in bk.owned else cot.copy(order="K")
    if cot is None:
        return None
    dtype = cotangent_dtype(node.dtype)
    if cot is ZERO:
        cot = np.zeros(node.shape, dtype=dtype)
    elif type(cot) is SparseCotangent:
        cot = cot.dense() if not sparse_is_wrapped(cot) else _traced_dense(cot)
    if isinstance(cot, WrappedValue):
        return cot
    if isinstance(leaf, (int, float)) and not isinstance(leaf, np.generic):
        return float(cot)
    if node.shape == () and not isinstance(leaf, (np.ndarray, WrappedValue)):
        return dtype.type(cot)
    return np.array(cot, dtype=dtype, copy=node not in bk.owned or None)


def _traced_dense(sparse: SparseCotangent) -> Any:
    return traced_densify(sparse)


def _data_of(w: WrappedValue) -> Any:
    return w._raw


def unwrap_output(value: Any, data: Callable[[WrappedValue], Any] = _data_of) -> Any:
    """``value`` with each traced leaf replaced by ``data(leaf)``, its structure kept."""
    if isinstance(value, WrappedValue):
        return data(value)
    leaves, rebuild = flatten(value)
    if not any(isinstance(leaf, WrappedValue) for leaf in leaves):
        return value
    return rebuild([data(leaf) if isinstance(leaf, WrappedValue) else leaf for leaf in leaves])


def first_output(out: Any) -> Any:
    # (WrappedValue first: isinstance(out, tuple) would ask a traced value its __class__)
    return out[0] if not isinstance(out, WrappedValue) and isinstance(out, tuple) else out


def check_holomorphic(call: GradientCall, node: Node | None, seed: Any, first: Any,
                      caller: str) -> None:  # fmt: skip
    """Refuse ``holomorphic=True`` for real arguments, or where ``f`` is not holomorphic.

    ``first`` is the sweep of ``seed``; the sweep of ``1j * seed`` must be ``1j`` times it.
    """
    if any(n is not None and n.dtype.kind != "c" for n in call.inputs) or call.param_nodes:
        raise NotDifferentiableError(
            f"{caller}(..., holomorphic=True) differentiates a complex function of complex "
            "arguments, but an argument is real.\n"
            "Fix: pass complex arguments (x.astype(complex)), or drop holomorphic=True for "
            "a real-valued f."
        )
    if node is None or first is None:
        return
    turned = call.sweep(node, seed * 1j)
    assert turned is not None  # (a sweep from a node)
    for leaf, n in zip(call.leaves, call.inputs):
        if n is None:
            continue
        g = np.asarray(input_gradient(leaf, n, first))
        h = np.asarray(input_gradient(leaf, n, turned))
        scale = max(float(np.max(np.abs(g), initial=0.0)), np.finfo(g.dtype).tiny)
        if not np.all(np.abs(h - 1j * g) <= 1e-8 * scale):
            raise NotDifferentiableError(
                f"{caller}(..., holomorphic=True): f is not holomorphic at these arguments (its "
                "change depends on the direction of the change in z, as that of np.conj, "
                "np.abs or z.real does), so it has no complex derivative f'(z).\n"
                "Fix: differentiate a real-valued function of z (np.abs(f(z)) ** 2, "
                "np.real(f(z))), or take mutagrad.jacobian of np.real(f(z)) and np.imag(f(z))."
            )


# The seed of nearly every call: a float64 scalar, immutable, so one serves them all.
_FLOAT64_ONE = np.float64(1.0)


def scalar_seed(node: Node) -> Any:
    """The cotangent 1 of a scalar output (of one element, shaped as the output)."""
    if node.dtype is FLOAT64 and node.shape == ():
        return _FLOAT64_ONE
    one = cotangent_dtype(node.dtype).type(1.0)
    return one if node.shape == () else np.full(node.shape, one)


def implicit_parameters(f: Callable[..., Any], args: tuple[Any, ...], what: str) -> Params | None:
    """``ps`` when ``args`` is ``(ps,)`` with ``ps`` a Params (implicit style), else None."""
    if len(args) != 1 or not isinstance(args[0], Params):
        return None
    try:
        signature = inspect.signature(f)
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return args[0]
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if required:
        raise TypeError(
            f"{what}(f, ps) with ps a Params differentiates a function of no arguments, "
            f"lambda: loss(...), that uses the parameters directly; but f takes "
            f"{', '.join(required)}. Close over the values instead, or pass them explicitly: "
            f"{what}(f, *args)."
        )
    return args[0]


@collector_paused
def call_with_gradient(
    f: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None,
    mode: str | Mode | None,
    caller: str,
    holomorphic: bool = False,
) -> WithGradient:
    """:func:`withgradient`'s work; ``caller`` is the entry point its error messages name.

    ``holomorphic``: ``f`` is a complex function of complex arguments and the
    result is ``f'(z)``, the pullback of the cotangent 1 (JAX's
    ``holomorphic=True``). A second sweep, of the cotangent ``1j``, must give
    ``1j`` times the first, as it does exactly when ``f`` is holomorphic at
    the arguments; otherwise the call raises rather than return a number
    that is no derivative.
    """
    params = implicit_parameters(f, args, caller) if len(args) == 1 else None
    call = GradientCall(args if params is None else (), mode, params=params)
    try:
        out = call.run(f, kwargs)
        if not isinstance(out, WrappedValue):  # else output_node checks it
            check_not_open_buffer(out, "f")
        node = call.output_node(first_output(out), caller, holomorphic)
        seed = scalar_seed(node) if node is not None else None
        bk = call.sweep(node, seed)
        if holomorphic:
            check_holomorphic(call, node, seed, bk, caller)
        grads = call.gradients(bk)
        bytes_copied = call.tape.bytes_copied
        bytes_guarded = call.tape.guard_bytes
    finally:
        call.finish()
    result = WithGradient(nested_output(out, call), grads)
    # (the class's 0 unless the call copied: an instance attribute makes the result a dict)
    if bytes_copied:
        result.bytes_copied = bytes_copied
    if bytes_guarded:
        result.bytes_guarded = bytes_guarded
    return result


def nested_output(
    out: Any, call: GradientCall, data: Callable[[WrappedValue], Any] = _data_of
) -> Any:
    """``out`` for the caller: traced inside an enclosing gradient call, else ``data`` of it.

    Inside, the enclosing call differentiates what the caller does with it.
    """
    return out if call.parent is not None else unwrap_output(out, data)


def owned_data(w: WrappedValue) -> Any:
    """``w``'s data for the caller, copied if a pullback still reads that memory.

    A write to the returned plain array would not reach the version checks,
    and a later ``back(dy)`` would read the new values.
    """
    value = w._raw
    if isinstance(value, np.ndarray):
        base = w._base if w._base is not None else w
        if base._captures:
            return value.copy()
    return value
