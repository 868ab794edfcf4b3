"""Forward rules derived from reverse ones: the jvp helpers every rule module uses.

A forward rule (``VjpRule.jvp``) is a function ``jvp(tangents, ans, args,
kwargs)``: ``tangents[i]`` is argument ``i``'s tangent, or None where the
argument has none; it returns the output's tangent (None for none). Tangents
are *batched*: at a forward level of width ``k`` the tangent of a value of
shape ``S`` has shape ``(k,) + S``, one slice per direction (``jvp`` pushes
one direction, ``jacfwd`` all unit directions in one pass). A result may
broadcast to ``(k,) + ans.shape``; the array room finishes it.

Most rules need no hand-written jvp; the rule modules declare one of:

* :data:`ELEMENTWISE` - for functions with a diagonal Jacobian (ufuncs, and
  functions that broadcast like them): the jvp is the sum of the vjps applied
  to the tangents, each tangent lifted to the output's rank so that
  broadcasting lines it up (no unbroadcast: a diagonal Jacobian is its own
  transpose, elementwise);
* :func:`linear` - for a function linear in its differentiable arguments
  together (``sum``, ``reshape``, ``concatenate``, ``take``): the function
  itself applied to the tangents, zeros for an argument without one;
* :func:`multilinear` - linear in each differentiable argument separately
  (``matmul``, ``einsum``, ``outer``): the sum over arguments of the function
  with that argument replaced by its tangent;
* :data:`TRANSPOSED` - for any other function (a factorization, ``pinv``,
  ``softmax``): the vjps transposed (:mod:`mutagrad.transposition`).

Both of the last take ``batched``, the call that handles the leading batch
axis at once (an ``axis`` shifted by one); without it each slice is one call.
This module knows no numpy function: it is array algebra, as
:func:`mutagrad.core.tangents.unbroadcast` is.

Complex values (JAX's convention, see :class:`mutagrad.core.engine.Rule`): a
tangent of a complex value is complex, and a jvp is the derivative as a
real-linear map, ``dz -> a dz + b conj(dz)`` elementwise (``a = df/dz``, ``b =
df/dconj(z)``, Wirtinger's derivatives). A vjp in JAX's convention is its
transpose under the pairing ``Re(u * v)``, ``g -> g a + conj(g) conj(b)``, so
applying it to the tangent is right only where ``b = 0``; the derivations here
read ``a`` and ``b`` off the vjp of ``1`` and of ``1j`` instead
(:func:`wirtinger_parts`). The linear, multilinear and transposed ones are
right as they stand (a real-linear function applied to complex tangents is
its own derivative; a transpose transposed is the map itself). A hand-written
rule declares itself right for complex values with :func:`complex_exact`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mutagrad.core.tangents import cotangent_dtype, unbroadcast
from mutagrad.diagnostics.messages import missing_forward_rule_message
from mutagrad.errors import MissingForwardRuleError, MutagradError, NotDifferentiableError


def lift(t: Any, ndim: int) -> Any:
    """A tangent ``(k,) + S`` as ``(k,) + (1,) * (ndim - len(S)) + S``, to broadcast like its value.

    numpy aligns shapes from the right: a value of shape ``S`` broadcasts
    against an output of rank ``ndim`` as it is, but its tangent's leading
    batch axis would line up with the output's first axis instead.
    """
    pad = ndim + 1 - t.ndim
    if pad <= 0:
        return t
    shape = t.shape
    return np.reshape(t, (shape[0], *(1,) * pad, *shape[1:]))


def _width(tangents: list[Any]) -> int:
    for t in tangents:
        if t is not None:
            return int(t.shape[0])
    raise ValueError("a jvp needs at least one tangent")


def stacked(slices: list[Any]) -> Any:
    """The batch of one result per direction, as one array with the batch axis first."""
    if len(slices) == 1:
        return np.expand_dims(slices[0], 0)
    return np.stack(slices)


class Derivation:
    """A forward rule derived from the reverse rule it is declared on (``VjpRule(jvp=...)``)."""

    def bind(self, applied: Callable[..., Any], vjps: tuple[Any, ...]) -> Callable[..., Any]:
        """The jvp of the rule whose vjps are ``vjps``; ``applied(*args, **kwargs)`` applies
        the rule itself (recorded where its arguments are traced: at a level with levels
        around it, the jvp's own computation is differentiated by them)."""
        raise NotImplementedError


class Elementwise(Derivation):
    """``sum_i vjp_i(t_i, ans, *args)``: right for a diagonal Jacobian only."""

    kind = "elementwise"

    def bind(self, applied: Callable[..., Any], vjps: tuple[Any, ...]) -> Callable[..., Any]:
        def elementwise_jvp(tangents: list[Any], ans: Any, args: Any, kwargs: Any) -> Any:
            if involves_complex(ans, tangents):
                return _complex_elementwise(vjps, tangents, ans, args, kwargs)
            ndim = ans.ndim
            total = None
            passed = False  # total is an argument's tangent itself (x + 1)
            for i, t in enumerate(tangents):
                if t is None or i >= len(vjps) or vjps[i] is None:
                    continue
                g = lift(t, ndim)
                c = vjps[i](g, ans, *args, **kwargs) if kwargs else vjps[i](g, ans, *args)
                if c is None:
                    continue  # no derivative in this argument (an integer exponent)
                if total is None:
                    total, passed = c, c is g
                    continue
                # A sum written into a summand this jvp made (x - y: -ty += tx), not into a
                # new array: at N=1e6 a fresh array's pages cost as much as the pass.
                if not passed and _into(total, c, tangents):
                    total += c
                elif _into(c, total, tangents):
                    c += total
                    total = c
                else:
                    total = total + c
                passed = False
            # The output never shares an argument's tangent (a write into one would change
            # the other): copied only where no sum made a new array (x - y does not copy).
            return total.copy() if passed and total is not None else total

        elementwise_jvp.kind = self.kind  # type: ignore[attr-defined]
        return complex_exact(elementwise_jvp)


ELEMENTWISE = Elementwise()


def involves_complex(ans: Any, tangents: list[Any]) -> bool:
    """Whether a jvp meets complex numbers: a complex output or a complex tangent."""
    if _kind(ans) == "c":
        return True
    return any(t is not None and _kind(t) == "c" for t in tangents)


def _kind(x: Any) -> str:
    """``x``'s dtype kind: read off the array where it is one (every forward step asks)."""
    dtype = getattr(x, "dtype", None)
    return str((dtype if dtype is not None else np.result_type(x)).kind)


def wirtinger_parts(vjp: Callable[[Any], Any], ans: Any) -> tuple[Any, Any] | None:
    """``(a, conj(b))`` of a derivative ``dz -> a dz + b conj(dz)`` from its vjp in JAX's
    convention, ``vjp(g) = g a + conj(g) conj(b)``: ``vjp(1) = a + conj(b)`` and
    ``vjp(1j) = 1j (a - conj(b))``. ``vjp(g)`` takes a cotangent shaped like ``ans``.

    For a real ``ans`` (the cotangent is real: ``abs``, ``angle``, a norm) only ``vjp(1)``
    exists; then ``b = conj(a)`` and the jvp is ``Re(vjp(1) dz)``, given as ``(vjp(1),
    None)``. None where the vjp gives none (no derivative in that argument).
    """
    one = np.ones(np.shape(ans), cotangent_dtype(np.result_type(ans)))
    at_one = vjp(one)
    if at_one is None or _kind(ans) != "c":
        return None if at_one is None else (at_one, None)
    at_i = vjp(1j * one)
    return (at_one - 1j * at_i) / 2, (at_one + 1j * at_i) / 2


def applied_parts(parts: tuple[Any, Any], t: Any) -> Any:
    """``a t + b conj(t)`` elementwise, from :func:`wirtinger_parts`' ``(a, conj(b))``."""
    a, conj_b = parts
    if conj_b is None:  # a real output: Re(2a t)
        return np.real(a * t)
    if _kind(t) != "c":  # (a real tangent: conj(t) = t)
        return (a + np.conjugate(conj_b)) * t
    return a * t + np.conjugate(conj_b * t)


def _complex_elementwise(vjps: tuple[Any, ...], tangents: list[Any], ans: Any, args: Any,
                         kwargs: Any) -> Any:  # fmt: skip
    """The elementwise jvp where complex numbers meet it: per argument, its Wirtinger
    parts (two vjps, elementwise) applied to its tangent lifted to the output's rank."""
    total = None
    for i, t in enumerate(tangents):
        if t is None or i >= len(vjps) or vjps[i] is None:
            continue
        parts = wirtinger_parts(_bound(vjps[i], ans, args, kwargs), ans)
        if parts is None:
            continue
        part = applied_parts(parts, lift(t, np.ndim(ans)))
        total = part if total is None else total + part
    return total


def _bound(vjp: Callable[..., Any], ans: Any, args: Any, kwargs: Any) -> Callable[[Any], Any]:
    """``vjp`` as a function of the cotangent alone."""

    def of_cotangent(g: Any) -> Any:
        return vjp(g, ans, *args, **kwargs) if kwargs else vjp(g, ans, *args)

    return of_cotangent


def complex_exact(jvp: Any) -> Any:
    """Mark a forward rule right for complex values as written (see the module docstring);
    a rule without the mark meets complex values through its transposed vjps."""
    jvp.complex_exact = True
    return jvp


def is_complex_exact(jvp: Any) -> bool:
    """Whether ``jvp`` was marked with :func:`complex_exact`."""
    return getattr(jvp, "complex_exact", False)


def _into(a: Any, b: Any, tangents: list[Any]) -> bool:
    """Whether ``a + b`` may be written into ``a``: a raw array a vjp just made (it owns its
    memory and is no argument's tangent), of the sum's shape and dtype."""
    return (
        type(a) is np.ndarray
        and a.base is None
        and a.flags.writeable
        and not any(a is t for t in tangents)
        and type(b) is np.ndarray
        and a.shape == np.broadcast_shapes(a.shape, b.shape)
        and np.result_type(a, b) == a.dtype
    )


def _differentiable(vjps: tuple[Any, ...], n: int) -> list[bool]:
    return [i < len(vjps) and vjps[i] is not None for i in range(n)]


class Linear(Derivation):
    """The function applied to the tangents (jointly linear), or to each in turn (multilinear)."""

    def __init__(self, kind: str, batched: Callable[..., Any] | None):
        self.kind = kind
        self.batched = batched

    def bind(self, applied: Callable[..., Any], vjps: tuple[Any, ...]) -> Callable[..., Any]:
        fun = applied
        batched, jointly = self.batched, self.kind == "linear"

        def linear_jvp(tangents: list[Any], ans: Any, args: Any, kwargs: Any) -> Any:
            if batched is not None:
                return batched(tangents, ans, args, kwargs or {})
            kw = kwargs or {}
            k = _width(tangents)
            differentiable = _differentiable(vjps, len(args))
            if jointly:
                slots = [
                    t if t is not None else (np.zeros((k, *np.shape(a)), np.result_type(a))
                                             if d else None)
                    for t, a, d in zip(tangents, args, differentiable)
                ]  # fmt: skip
                return stacked([
                    fun(*(a if s is None else s[b] for a, s in zip(args, slots)), **kw)
                    for b in range(k)
                ])  # fmt: skip
            total = None
            for i, t in enumerate(tangents):
                if t is None or not differentiable[i]:
                    continue
                part = stacked([fun(*args[:i], t[b], *args[i + 1 :], **kw) for b in range(k)])
                total = part if total is None else total + part
            return total

        linear_jvp.kind = self.kind  # type: ignore[attr-defined]
        # (a batched jvp that reads only what the rule's vjps declare says so: linearize
        # keeps no more of the primal values for it)
        linear_jvp.reads_declared = getattr(batched, "reads_declared", False)  # type: ignore[attr-defined]
        return complex_exact(linear_jvp)


def linear(batched: Callable[..., Any] | None = None) -> Linear:
    """The jvp of a function linear in its differentiable arguments together.

    ``batched(tangents, ans, args, kwargs)``, if given, computes every
    direction at once (its tangents may be None: an argument without one);
    otherwise the function runs once per direction on the tangents' slices,
    with zeros for a differentiable argument that has none.
    """
    return Linear("linear", batched)


def multilinear(batched: Callable[..., Any] | None = None) -> Linear:
    """The jvp of a function linear in each differentiable argument separately
    (a product): the sum over arguments of the function with that one argument
    replaced by its tangent. ``batched`` as for :func:`linear`."""
    return Linear("multilinear", batched)


# The function that transposes a vjp (mutagrad.transposition.transposed, registered there:
# it runs gradient calls, which sit above the rules and this module).
_TRANSPOSER: list[Callable[..., Any]] = []


def register_transposer(transposed: Callable[..., Any]) -> None:
    """Set the function :data:`TRANSPOSED` rules call: ``transposed(pulled, shape, dtype,
    tangents)`` is ``J t`` for every direction, where ``pulled(g)`` gives ``J_i^T g``."""
    _TRANSPOSER[:] = [transposed]


class Transposed(Derivation):
    """The jvp of a rule as the transpose of its vjps (see the module docstring)."""

    kind = "transposed"

    def bind(self, applied: Callable[..., Any], vjps: tuple[Any, ...]) -> Callable[..., Any]:
        rule = applied.__self__  # type: ignore[attr-defined]  # (the rule's bound method)
        name = rule.name if rule.name.startswith("scipy.") else f"np.{rule.name}"

        def transposed_jvp(tangents: list[Any], ans: Any, args: Any, kwargs: Any) -> Any:
            if type(ans) is not np.ndarray and not isinstance(ans, np.generic):  # (traced:
                # levels around this one, which would have to differentiate the jvp)
                raise MissingForwardRuleError(
                    missing_forward_rule_message(name)
                    + "\n(Its forward rule transposes the reverse rule, at a forward level "
                    "alone: jvp, jacfwd.)"
                )
            kw = kwargs or {}
            # (an argument without a vjp has no derivative, in reverse mode as here)
            moving = [i for i, t in enumerate(tangents)
                      if t is not None and i < len(vjps) and vjps[i] is not None]  # fmt: skip
            if not moving:
                return None

            def pulled(g: Any) -> tuple[Any, ...]:
                cotangents = []
                for i in moving:
                    c = vjps[i](g, ans, *args, **kw)
                    shape = np.shape(args[i])
                    # (as the engine does with a vjp's result: summed over what broadcast)
                    cotangents.append(np.zeros(shape) if c is None else unbroadcast(c, shape))
                return tuple(cotangents)

            dtype = cotangent_dtype(np.result_type(ans))
            try:
                return _TRANSPOSER[0](pulled, np.shape(ans), dtype, [tangents[i] for i in moving])
            except NotDifferentiableError:
                raise  # (the derivative does not exist there: the vjp's own refusal says why)
            except (MutagradError, ValueError) as error:
                raise MissingForwardRuleError(
                    missing_forward_rule_message(name)
                    + f"\n(Its reverse rule could not be transposed: "
                    f"{str(error).splitlines()[0]})"
                ) from error

        transposed_jvp.kind = self.kind  # type: ignore[attr-defined]
        return complex_exact(transposed_jvp)


TRANSPOSED = Transposed()


def hand(jvp: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a hand-written forward rule (for the coverage table's forward column)."""
    jvp.kind = "hand"  # type: ignore[attr-defined]
    return jvp


def kind_of(jvp: Any) -> str | None:
    """How a rule's forward rule was made: elementwise, linear, multilinear, hand (None: none)."""
    if jvp is None:
        return None
    return getattr(jvp, "kind", "hand")


def batch_axis(axis: Any, ndim: int) -> Any:
    """A numpy ``axis`` argument of a value of rank ``ndim``, for its batched tangent.

    ``None`` (every axis) becomes every axis but the batch axis; a
    non-negative axis moves up by one; a negative one names the same axis.
    """
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(a + 1 if a >= 0 else a for a in axis)
    return axis + 1 if axis >= 0 else axis


__all__ = [
    "ELEMENTWISE",
    "TRANSPOSED",
    "Derivation",
    "applied_parts",
    "batch_axis",
    "complex_exact",
    "hand",
    "involves_complex",
    "is_complex_exact",
    "kind_of",
    "lift",
    "linear",
    "multilinear",
    "passed_on",
    "register_transposer",
    "stacked",
    "through_gradient",
    "wirtinger_parts",
]


def through_gradient(vjp: Callable[..., Any], axes_of: Callable[..., Any]) -> Callable[..., Any]:
    """The jvp of a reduction-like function of its first argument: each output element
    depends on one group of input elements (a reduction, a determinant, a norm).

    ``J t`` is then the group sum of the gradient times the tangent, and the
    gradient of every element at once is the vjp of ones: the same Jacobian
    entries the reverse rule uses (ties of ``max`` shared as it shares them),
    at the cost of one vjp. ``axes_of(ndim, kwargs)`` gives ``(the reduced
    axes, keepdims)`` for an argument of rank ``ndim``.
    """

    def gradient_jvp(tangents: list[Any], ans: Any, args: Any, kwargs: Any) -> Any:
        t = tangents[0]
        kw = kwargs or {}
        axes, keepdims = axes_of(np.ndim(args[0]), kw)
        if involves_complex(ans, tangents):  # (each group's Wirtinger parts)
            parts = wirtinger_parts(_bound(vjp, ans, args, kw), ans)
            if parts is None:
                return None
            summands = applied_parts(parts, t)
        else:
            summands = vjp(np.ones_like(ans), ans, *args, **kw) * t
        return np.sum(summands, axis=tuple(a + 1 for a in axes), keepdims=keepdims)

    gradient_jvp.kind = "gradient"  # type: ignore[attr-defined]
    return complex_exact(gradient_jvp)


def passed_on(tangents: list[Any], ans: Any, args: Any, kwargs: Any) -> Any:
    """The jvp of a copy (``np.copy``, ``astype``): the tangent itself (the forward step
    copies it, so the output owns its tangent)."""
    return tangents[0]


passed_on.kind = "linear"  # type: ignore[attr-defined]
complex_exact(passed_on)  # (a copy, or a cast: the cast of the tangent, done by the forward step)
