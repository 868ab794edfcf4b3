"""Users' own rules: ``primitive``, ``defvjp``, ``rrule`` and ``non_differentiable``.

Two ways to give a function a derivative:

* ``mutagrad.defvjp(fn, vjp_0, vjp_1, ..., reads=...)`` – one vector-Jacobian
  product per argument, ``vjp_i(g, ans, *args, **kwargs)``, and what each one
  reads. The engine owns the saved values: it checks them for poisoning, and
  snapshot mode can copy them. Written with numpy, such vjps are themselves
  differentiable, so higher derivatives work. HIPS autograd's form of the
  same name, ``defvjp(fn, lambda ans, x: lambda g: ...)`` (a function of the
  output and the arguments that makes the vjp of ``g``), is recognised by how
  many positional arguments each function takes beside ``fn``'s, and
  accepted; a function that fits neither form is refused when it is
  registered.
* ``@mutagrad.rrule(fn)`` – ChainRules' form: ``rule(*args) -> (y, pullback)``
  with ``pullback(dy)`` returning one cotangent per positional argument. The
  rule receives the arguments unwrapped, so it may call ``fn`` itself. Since
  its closure may hold any of them, the engine treats every array argument
  and the output as saved (a later overlapping write poisons them) and cannot
  snapshot them.

A rule's function may return a view of an argument, or the argument itself:
the output stays numpy's alias of it, with the rule's node, and what the
rule's derivative cannot follow (a write through the output, a use of it after
a write to the argument) is refused by name (:mod:`mutagrad.traced.aliases`).
For an rrule the aliasing is ``fn``'s: a rule that returns its argument for a
function that copies it gives a new array.

Every error a user's rule raises while mutagrad runs it (a vjp or pullback
that fails, returns a function, a cotangent of the wrong shape, or the wrong
number of them) is a MutagradError that names the rule and the line that
registered it, with the rule's own error as its cause.

Rules take effect on the next call, including for functions differentiated
before (no restart, unlike Zygote #718). ``@mutagrad.primitive`` marks a
Python function as a unit that can carry a rule; without one its body is
traced as usual.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from mutagrad.core.engine import (
    ANS,
    BackwardPass,
    CallRule,
    Node,
    VjpRule,
    capture,
    current_trace,
)
from mutagrad.core.jvps import involves_complex
from mutagrad.core.memory import first_sharing
from mutagrad.core.record import owned_value, push
from mutagrad.core.registry import FUNCTION_RULES, NONDIFFERENTIABLE, PRIMITIVES, UFUNC_RULES
from mutagrad.core.tangents import NoTangent, cotangent_dtype, is_structural_zero
from mutagrad.diagnostics.messages import complex_message, missing_forward_rule_message
from mutagrad.diagnostics.sites import Site, format_site, user_site
from mutagrad.diagnostics.tracebacks import api_boundary
from mutagrad.errors import (
    MissingForwardRuleError,
    MutagradError,
    NotDifferentiableError,
)
from mutagrad.traced.aliases import (
    aliased_output,
    held_elsewhere,
    shared_argument,
    unowned_output,
)
from mutagrad.traced.dispatch import (
    apply,
    call_without_derivative,
    guarded_arguments,
    refusing_writes_by,
)
from mutagrad.traced.tangents import set_tangent, tangent_of
from mutagrad.traced.value import (
    WrappedValue,
    holds_wrapped,
    operand,
    tangents_among,
    unwrap,
    wrap,
    wrap_constant,
)
from mutagrad.transposition import transposed


def primitive(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``fn`` as a unit that a rule registered with defvjp/rrule can differentiate.

    The rule is used when a traced value is among the arguments: a positional
    one, one inside a tuple or list (``args=(k, c)`` of ``scipy.integrate.odeint``:
    its cotangent is a tuple of the same structure), or a keyword argument,
    which is passed to the rule positionally (in ``fn``'s parameter order), so
    that a vjp or pullback gives its cotangent like any positional argument's.
    """
    signature: list[inspect.Signature] = []

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        handler = FUNCTION_RULES.get(wrapper)
        if handler is None:
            return fn(*args, **kwargs)
        if any(isinstance(a, WrappedValue) for a in args) and not kwargs:
            return handler(*args)
        if not (holds_wrapped(args) or holds_wrapped(tuple(kwargs.values()))):
            return fn(*args, **kwargs)
        if any(holds_wrapped(v) for v in kwargs.values()):
            if not signature:
                signature.append(inspect.signature(fn))
            args, kwargs = _positional(signature[0], fn, args, kwargs)
        return handler(*args, **kwargs)

    PRIMITIVES[wrapper] = fn
    return wrapper


def _positional(signature: inspect.Signature, fn: Any, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:  # fmt: skip
    """The call with every keyword argument that can be positional made positional (the
    defaults of the parameters before it filled in), so a rule's vjps see traced ones."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    for name, value in bound.kwargs.items():  # keyword-only parameters
        if holds_wrapped(value):
            raise NotDifferentiableError(
                f"the keyword-only argument {name}= of {getattr(fn, '__name__', fn)} holds a "
                f"traced value, called at\n{format_site(user_site())}\nA rule gives cotangents "
                "to positional arguments only.\nFix: make it a positional parameter of the "
                f"primitive, or pass mutagrad.ignore_derivatives(...) as {name}= if no gradient "
                "should flow through it."
            )
    return bound.args, bound.kwargs


def _raw_function(fn: Any) -> Any:
    return PRIMITIVES.get(fn, fn)


def _check_registrable(fn: Any) -> None:
    if isinstance(fn, np.ufunc) or fn in PRIMITIVES:
        return
    if getattr(fn, "__module__", "").startswith("numpy"):
        return
    raise MutagradError(
        f"{getattr(fn, '__name__', fn)} is not a numpy function or a mutagrad.primitive.\n"
        "Fix: decorate it with @mutagrad.primitive (before registering the rule), so that "
        "its calls can use the rule."
    )


# The rule each function got from defvjp, which defjvp completes with a forward rule.
_VJP_RULES: dict[Any, VjpRule] = {}


def _register(fn: Any, rule: VjpRule | ClosureRule) -> None:
    if isinstance(rule, VjpRule):
        _VJP_RULES[fn] = rule
    else:
        _VJP_RULES.pop(fn, None)
    if isinstance(fn, np.ufunc):
        _forget_methods(fn)
        UFUNC_RULES[fn] = rule
    else:
        FUNCTION_RULES[fn] = lambda *args, **kwargs: apply(rule, args, kwargs or None)


def _positional_range(function: Any) -> tuple[int, float] | None:
    """How many positional arguments ``function`` takes, (fewest, most); None if unknown."""
    if isinstance(function, np.ufunc):
        return function.nin, function.nin
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in parameters if p.kind in kinds]
    required = sum(p.default is inspect.Parameter.empty for p in positional)
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
    return required, float("inf") if variadic else len(positional)


def _takes(function: Any, low: float, high: float) -> bool | None:
    """Whether ``function`` can be called with some number of positional arguments in
    [low, high]; None when its signature cannot be read."""
    accepted = _positional_range(function)
    if accepted is None:
        return None
    return max(accepted[0], low) <= min(accepted[1], high)


def _registered_at(site: Site | None) -> str:
    return f"registered at\n{format_site(site)}"


def _vjp_in_our_form(
    vjp: Callable[..., Any], i: int, name: str, arguments: tuple[int, float]
) -> Callable[..., Any]:
    """``vjp`` as ``vjp(g, ans, *args, **kwargs)``: as it is, or adapted from autograd's form."""
    low, high = arguments
    if _takes(vjp, low + 2, high + 2) is not False:
        return vjp
    if _takes(vjp, low + 1, high + 1):  # autograd's: vjp(ans, *args) returns the vjp of g

        def from_autograd(g: Any, ans: Any, *args: Any, **kwargs: Any) -> Any:
            return vjp(ans, *args, **kwargs)(g)

        from_autograd.__name__ = getattr(vjp, "__name__", "vjp")
        return from_autograd
    takes = _positional_range(vjp)
    assert takes is not None

    def count(fewest: float, most: float) -> str:
        return f"{fewest:g}" if fewest == most else f"{fewest:g} to {most:g}"

    raise MutagradError(
        f"defvjp({name}, ...): vjp {i} takes {count(*takes)} positional argument(s), which fits "
        f"neither form: for {name}, of {count(low, high)} argument(s), mutagrad's "
        f"vjp(g, ans, *args) takes {count(low + 2, high + 2)}, autograd's (ans, *args) "
        f"{count(low + 1, high + 1)}.\n"
        f"Fix: write it as mutagrad's vjp(g, ans, *args) (g: the output's cotangent, ans: the "
        f"output, then {name}'s arguments), returning argument {i}'s cotangent; or as "
        "autograd's form, a function of (ans, *args) returning the function of g."
    )


def _checked_vjp(vjp: Callable[..., Any], i: int, name: str, site: Site | None) -> Any:
    """``vjp`` whose failures, and cotangents that cannot be argument ``i``'s, raise a
    MutagradError naming the rule and the line that registered it."""

    def checked(g: Any, ans: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            cotangent = vjp(g, ans, *args, **kwargs)
        except MutagradError:
            raise
        except Exception as error:
            raise MutagradError(
                f"the vjp for argument {i} of {name}, {_registered_at(site)}\n"
                f"raised {type(error).__name__}: {error}\n"
                f"Fix: correct that vjp; it is called as vjp(g, ans, *args): g the cotangent "
                f"of {name}'s output, ans the output, then {name}'s arguments (those the rule "
                "does not read, by its reads=, come with their shape and dtype only)."
            ) from error
        if i < len(args):
            _check_cotangent(cotangent, args[i], f"the vjp for argument {i} of {name}", site)
        return cotangent

    checked.__name__ = getattr(vjp, "__name__", "vjp")
    return checked


def _check_cotangent(cotangent: Any, argument: Any, what: str, site: Site | None) -> None:
    """Refuse a cotangent that cannot be ``argument``'s: a function, or the wrong shape."""
    if callable(cotangent) and not isinstance(cotangent, (np.ndarray, np.generic, WrappedValue)):
        raise MutagradError(
            f"{what}, {_registered_at(site)}\nreturned a function, not a cotangent: the form of "
            "HIPS autograd's defvjp, lambda ans, *args: lambda g: ..., given where mutagrad's "
            "vjp(g, ans, *args) was expected (the two cannot be told apart when the function "
            "has optional arguments).\nFix: write it as lambda g, ans, *args: ... returning "
            "the cotangent."
        )
    if not isinstance(cotangent, (np.ndarray, np.generic, WrappedValue, float, int)):
        return  # None, NoTangent, a structural zero, a tuple argument's tuple: no shape here
    # The argument: an array, a Meta (shape only) or a number; for a pullback, the input's node.
    want = tuple(argument.shape) if hasattr(argument, "shape") else np.shape(argument)
    have = np.shape(cotangent)
    try:
        fits = np.broadcast_shapes(want, have) == have  # summed over broadcast axes
    except ValueError:
        fits = False
    if not fits:
        raise MutagradError(
            f"{what}, {_registered_at(site)}\nreturned a cotangent of shape {have} for an "
            f"argument of shape {want}.\nFix: return an array of the argument's shape "
            f"{want} (or one that broadcasts from it, which mutagrad sums back)."
        )


@api_boundary
def defvjp(
    fn: Any,
    *vjps: Callable[..., Any] | None,
    reads: tuple[tuple[int | str, ...], ...] | None = None,
    handles_complex: bool = False,
) -> None:
    """Register vjps for ``fn``: ``vjps[i](g, ans, *args, **kwargs)`` is argument i's cotangent.

    ``reads[i]`` lists what ``vjps[i]`` looks at: argument positions and/or
    ``mutagrad.ANS`` (the output). Omitted, every vjp is assumed to read all
    arguments and the output. autograd's form, ``vjps[i](ans, *args, **kwargs)``
    returning the function of ``g``, is accepted too; a vjp that takes a number of
    positional arguments that fits neither is refused here.

    ``handles_complex=True`` declares the vjps right for complex values in JAX's
    convention (see ``Rule.handles_complex``); without it a complex value reaching
    the rule is refused, naming it.
    """
    _check_registrable(fn)
    site = user_site()
    if reads is None:
        reads = tuple((*range(len(vjps)), ANS) for _ in vjps)
    name = getattr(fn, "__name__", repr(fn))
    low, high = _positional_range(_raw_function(fn)) or (len(vjps), len(vjps))
    if high == float("inf"):  # fn(*args): a vjp for each argument it is given
        low = max(low, len(vjps))
    checked = tuple(
        None
        if vjp is None
        else _checked_vjp(_vjp_in_our_form(vjp, i, name, (low, high)), i, name, site)
        for i, vjp in enumerate(vjps)
    )
    _register(fn, VjpRule(name, _raw_function(fn), checked, reads, trusted=False,
                          handles_complex=handles_complex))  # fmt: skip


@api_boundary
def defjvp(fn: Any, *jvps: Callable[..., Any] | None) -> None:
    """Give ``fn`` a forward rule (for jvp, jacfwd, hvp, hessian), beside its defvjp rule.

    ``jvps[i](t, ans, *args, **kwargs)`` is the output's tangent due to
    argument i's tangent ``t`` (one direction, ``t`` shaped like argument i);
    the tangents of the arguments that have one are summed. ``None`` (or a
    missing entry) refuses forward mode through that argument. ``fn`` must
    have a rule from :func:`defvjp` first.
    """
    rule = _VJP_RULES.get(fn)
    name = getattr(fn, "__name__", repr(fn))
    if rule is None:
        raise MutagradError(
            f"defjvp({name}, ...): {name} has no rule from mutagrad.defvjp.\n"
            f"Fix: register its vjps first with mutagrad.defvjp({name}, ...) (a forward rule "
            "alone is not supported), then call defjvp."
        )
    rule.jvp = _user_jvp(name, jvps)


def _user_jvp(name: str, jvps: tuple[Callable[..., Any] | None, ...]) -> Callable[..., Any]:
    """A forward rule from a user's per-argument jvps, one direction at a time."""

    def user_jvp(tangents: list[Any], ans: Any, args: Any, kwargs: Any) -> Any:
        kw = kwargs or {}
        total = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            jvp = jvps[i] if i < len(jvps) else None
            if jvp is None:
                raise MissingForwardRuleError(
                    f"the forward rule of {name} (mutagrad.defjvp) has no jvp for its argument "
                    f"{i}, which has a tangent here.\nFix: give one: defjvp({name}, "
                    + ("jvp_0)." if i == 0 else f"jvp_0, ..., jvp_{i}).")
                )
            part = np.stack([
                np.broadcast_to(jvp(t[b], ans, *args, **kw), np.shape(ans))
                for b in range(t.shape[0])
            ])  # fmt: skip
            total = part if total is None else total + part
        return total

    user_jvp.kind = "user"  # type: ignore[attr-defined]
    return user_jvp


class ClosureRule(CallRule):
    """A ChainRules-style rule: ``rule(*args) -> (y, pullback)``, registered at ``site``."""

    __slots__ = ("function", "handles_complex", "rule", "site")
    trusted = False  # (a user's rule: a complex value's refusal names the opt-in)

    def __init__(
        self,
        name: str,
        function: Callable[..., Any],
        rule: Callable[..., Any],
        site: Site | None = None,
        handles_complex: bool = False,
    ):
        super().__init__(name)
        self.function = function
        self.rule = rule
        self.site = site
        self.handles_complex = handles_complex  # (see Rule)

    def _failed(self, part: str, error: Exception) -> MutagradError:
        return MutagradError(
            f"the {part} of the rrule for {self.name}, {_registered_at(self.site)}\n"
            f"raised {type(error).__name__}: {error}\n"
            f"Fix: correct the rule; rule(*args) returns (y, pullback), and pullback(dy) one "
            "cotangent per positional argument."
        )

    def call(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
        kwargs = kwargs or {}
        trace = current_trace()
        tape = trace.tape if trace is not None else None
        # A tuple or list holding traced values (args=(k, c)) is one argument whose
        # elements are inputs of the node: ``leaves`` are the arguments' traced parts.
        leaves = [_leaves_of(a) for a in args]
        flat = [leaf for group in leaves for leaf in group]
        resolved = [operand(a, tape) for a in flat]
        raw_leaves = [r for r, _ in resolved]
        nodes = [n for _, n in resolved]
        raw = _regroup(args, leaves, raw_leaves)
        if trace is not None and trace.forward and tangents_among(tuple(flat), trace.forward):
            return self._transposed(args, kwargs, leaves, flat, raw_leaves, trace)
        if all(n is None for n in nodes):
            y = self.function(*raw, **unwrap(kwargs))
            unowned = held_elsewhere(y)
            out = wrap_constant(y, args, raw)
            return unowned_output(out) if unowned else out
        assert trace is not None and tape is not None  # (an argument has a node: a call runs)
        y, back, source, unowned = self._run(args, kwargs, leaves, flat, raw_leaves)
        tag = 0
        for n in nodes:
            if n is not None:
                tag |= n.tag
        y = np.asarray(y) if not isinstance(y, (np.ndarray, np.generic)) else y
        site = user_site()
        node = Node(self, tuple(nodes), tape, tag, y, site, f"the rrule for {self.name}")
        mode = trace.mode
        # The closure may hold any argument: all of them count as saved.
        saved: list[Any] = [
            capture(a, r, node, mode, closure=True)
            for a, r in zip(flat, raw_leaves)
            if isinstance(a, WrappedValue) and type(r) is np.ndarray
        ]
        out = wrap(y, node) if source is None else aliased_output(y, source, node, self.name)
        if unowned:
            unowned_output(out)
        if type(y) is np.ndarray:
            saved.append(capture(out, y, node, mode, closure=True))
        groups = [None if g is None else len(g) for g in (
            group if isinstance(a, (tuple, list)) else None for a, group in zip(args, leaves))]
        push(node, tuple(saved), {"pullback": back, "groups": groups})
        return out

    def _run(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Any], flat: list[Any],
        raw_leaves: list[Any],
    ) -> tuple[Any, Any, WrappedValue | None, bool]:  # fmt: skip
        """The rule's ``(y, pullback)`` on read-only raw arguments, the argument whose
        memory ``y`` shares (:mod:`mutagrad.traced.aliases`), if any, and whether ``y`` is
        memory something else holds (:func:`~mutagrad.traced.aliases.held_elsewhere`)."""
        guarded_leaves = guarded_arguments(flat, raw_leaves)
        guarded = _regroup(args, leaves, guarded_leaves)
        try:
            with refusing_writes_by(self.name):
                # The pullback closure may keep keyword arrays: it gets copies of them.
                y, back = self.rule(*guarded, **owned_value(kwargs))
        except MutagradError:  # a write into an argument among them
            raise
        except Exception as error:
            raise self._failed("forward pass", error) from error
        if isinstance(y, tuple):
            raise NotDifferentiableError(
                f"the rrule for {self.name} returned several outputs; only one is supported.\n"
                "Fix: return one array (np.concatenate the outputs, or a primitive per output)."
            )
        if first_sharing(y, guarded_leaves) is not None and not self._primal_aliases(
            args, kwargs, leaves, flat, raw_leaves
        ):
            return y.copy(), back, None, False  # (the rule's own alias: fn returns new memory)
        source = shared_argument(self.name, y, flat, guarded_leaves)
        return y, back, source, source is None and held_elsewhere(y, back)

    def _primal_aliases(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Any], flat: list[Any],
        raw_leaves: list[Any],
    ) -> bool:  # fmt: skip
        """Whether the function itself returns memory of an argument, as the rule's output
        does. numpy's aliasing is the function's: a rule may return its argument for a
        function that copies it (``identity(x) = x.copy()``), and the call then returns new
        memory. The function runs once more, only for a rule whose output is an alias."""
        guarded_leaves = guarded_arguments(flat, raw_leaves)
        try:
            with refusing_writes_by(self.name):
                y = self.function(*_regroup(args, leaves, guarded_leaves), **owned_value(kwargs))
        except MutagradError:
            raise
        except Exception as error:
            raise MutagradError(
                f"{self.name} raised {type(error).__name__}: {error}, run (once more) to see "
                f"whether it returns memory of its argument as its rrule does, "
                f"{_registered_at(self.site)}\nFix: make {self.name} run on the arguments the "
                "rule receives, or return a copy from the rule."
            ) from error
        return first_sharing(y, guarded_leaves) is not None

    def _transposed(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Any], flat: list[Any],
        raw_leaves: list[Any], level: Any,
    ) -> Any:  # fmt: skip
        """The rule's value with its tangent, at a forward level with no level around it.

        The pullback is linear in the cotangent: ``pullback(g) = J^T g``, so
        ``J t`` is the pullback's own pullback applied to ``t``
        (:func:`mutagrad.transposition.transposed`: the pullback runs once on a
        traced ``g`` and its tape is swept once per direction, or, where it
        cannot be traced, it runs once per output element). Nested levels (a
        Hessian through an rrule) are refused by name.
        """
        if level.parent is not None or level.tape is not None:
            raise MissingForwardRuleError(missing_forward_rule_message(self.name, "rrule"))
        if level.journal is not None:  # (its pullback reads what the closure holds, unseen)
            level.journal.give_up(f"the rrule for {self.name}, whose pullback is a closure")
        y, back, source, unowned = self._run(args, kwargs, leaves, flat, raw_leaves)
        y = np.asarray(y) if not isinstance(y, (np.ndarray, np.generic)) else y
        out = wrap(y) if source is None else aliased_output(y, source, None, self.name)
        if unowned:
            unowned_output(out)
        tangents = [tangent_of(a, level) for a in flat]
        if not self.handles_complex and involves_complex(y, tangents):
            raise NotDifferentiableError(complex_message(self.name, user_site(), True))
        moving = [i for i, t in enumerate(tangents) if t is not None]
        groups = [None if not isinstance(a, (tuple, list)) else len(group)
                  for a, group in zip(args, leaves)]  # fmt: skip

        def pulled(g: Any) -> Any:
            cots = back(g)
            cots = cots if isinstance(cots, tuple) else (cots,)
            if len(cots) == len(groups) + 1 and is_structural_zero(cots[0]):
                cots = cots[1:]  # ChainRules' leading cotangent for the function itself
            per_leaf = _flat_cotangents(cots, groups) if len(cots) == len(groups) else None
            if per_leaf is None or len(per_leaf) != len(flat):  # (refused below, by name)
                raise ValueError(f"it gave {len(cots)} cotangents for {len(args)} arguments")
            return tuple(
                np.zeros(np.shape(raw_leaves[i]))
                if per_leaf[i] is None or is_structural_zero(per_leaf[i])
                else per_leaf[i]
                for i in moving
            )

        dtype = cotangent_dtype(np.result_type(y))
        try:
            t = transposed(pulled, np.shape(y), dtype, [np.asarray(tangents[i]) for i in moving])
        except (MutagradError, ValueError) as error:
            raise MissingForwardRuleError(
                missing_forward_rule_message(self.name, "rrule")
                + f"\n(Its pullback could not be transposed: {str(error).splitlines()[0]})"
            ) from error
        set_tangent(out, level, t.astype(cotangent_dtype(np.result_type(y)), copy=False))
        return out

    def backward(self, node: Node, g: Any, owned: bool, bk: BackwardPass) -> None:
        for c in node.saved:
            c.read()  # raises PoisonedCaptureError if overwritten
        if bk.recording and node.tag & bk.outer_mask:
            raise NotDifferentiableError(
                f"the rrule for {self.name} is a closure over raw arrays, so its pullback "
                "cannot be differentiated again (a higher-order derivative passes through it).\n"
                f"Fix: register it with mutagrad.defvjp({self.name}, ...) instead: vjps written "
                "with numpy are differentiable."
            )
        assert node.aux is not None
        try:
            cots = node.aux["pullback"](g)
        except MutagradError:
            raise
        except Exception as error:
            raise self._failed("pullback", error) from error
        if not isinstance(cots, tuple):
            cots = (cots,)
        groups = node.aux["groups"]
        n = len(groups)
        if len(cots) == n + 1 and is_structural_zero(cots[0]):
            cots = cots[1:]  # ChainRules' leading cotangent for the function itself
        flat = _flat_cotangents(cots, groups) if len(cots) == n else None
        if flat is None:
            raise MutagradError(
                f"the pullback of the rrule for {self.name}, {_registered_at(self.site)}\n"
                f"returned {len(cots)} cotangents for {n} arguments, called at\n"
                f"{format_site(node.site)}\n"
                "Fix: return one cotangent per positional argument (mutagrad.NoTangent() for "
                "one without a derivative; for a tuple argument, a tuple with one per element), "
                "optionally after a leading NoTangent() for the function itself."
            )
        for i, (inp, c) in enumerate(zip(node.inputs, flat)):
            if inp is not None and inp.tag & bk.bit and not isinstance(c, NoTangent):
                what = f"the pullback of the rrule for {self.name}, for its input {i}"
                _check_cotangent(c, inp, what, self.site)
                bk.accumulate(inp, c)


def _leaves_of(argument: Any) -> list[Any]:
    """The parts of an argument that may be traced: itself, or a tuple's or list's elements."""
    if isinstance(argument, (tuple, list)) and holds_wrapped(argument):
        return list(argument)
    return [argument]


def _regroup(args: tuple[Any, ...], leaves: list[list[Any]], values: list[Any]) -> list[Any]:
    """``values`` (one per leaf) put back into the arguments' tuples and lists."""
    regrouped, start = [], 0
    for a, group in zip(args, leaves):
        part = values[start : start + len(group)]
        start += len(group)
        regrouped.append(type(a)(part) if isinstance(a, (tuple, list)) and holds_wrapped(a)
                         else part[0])  # fmt: skip
    return regrouped


def _flat_cotangents(cots: tuple[Any, ...], groups: list[int | None]) -> tuple[Any, ...] | None:
    """One cotangent per leaf (a tuple argument's cotangent is a tuple of its elements'), or
    None when a tuple argument's cotangent has another length."""
    flat: list[Any] = []
    for c, group in zip(cots, groups):
        if group is None:
            flat.append(c)
        elif isinstance(c, (tuple, list)):
            if len(c) != group:
                return None
            flat.extend(c)
        elif c is None or is_structural_zero(c):  # none for the whole tuple
            flat.extend([c] * group)
        else:
            return None
    return tuple(flat)


@api_boundary
def rrule(
    fn: Any, *, handles_complex: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``rule(*args) -> (y, pullback)`` for ``fn`` (a primitive or numpy function).

    ``handles_complex``: as :func:`defvjp`'s.
    """
    _check_registrable(fn)
    site = user_site()

    def register(rule_fn: Callable[..., Any]) -> Callable[..., Any]:
        name = getattr(fn, "__name__", repr(fn))
        _register(fn, ClosureRule(name, _raw_function(fn), rule_fn, site, handles_complex))
        return rule_fn

    return register


@api_boundary
def non_differentiable(fn: Any) -> Any:
    """Declare that ``fn``'s outputs carry no derivative; returns ``fn``."""
    _check_registrable(fn)
    if isinstance(fn, np.ufunc) or getattr(fn, "__module__", "").startswith("numpy"):
        NONDIFFERENTIABLE.add(fn)
    else:
        raw = _raw_function(fn)

        def rule(*args: Any, **kwargs: Any) -> Any:
            return call_without_derivative(raw, args, kwargs, users=True)

        FUNCTION_RULES[fn] = rule
    return fn


def clear_rule(fn: Any) -> None:
    """Remove a rule registered for ``fn`` with defvjp, rrule or non_differentiable."""
    FUNCTION_RULES.pop(fn, None)
    NONDIFFERENTIABLE.discard(fn)
    if isinstance(fn, np.ufunc):
        _forget_methods(fn)
        UFUNC_RULES.pop(fn, None)


def _forget_methods(ufunc: np.ufunc) -> None:
    """Drop the rules of ``ufunc.reduce``, ``.outer``... derived from its rule: its next
    method call derives them from the new one (mutagrad.rules.ufunc_methods)."""
    for key in [k for k in UFUNC_RULES if isinstance(k, tuple) and k[0] is ufunc]:
        del UFUNC_RULES[key]


__all__ = ["ANS", "defjvp", "defvjp", "non_differentiable", "primitive", "rrule"]
