"""Python-convention transforms: ``grad``, ``value_and_grad``, ``vjp``, ``jacrev``, ``hessian``.

Zygote's functions (:func:`mutagrad.gradient`, ``withgradient``,
``pullback``, and ``jacobian``/``hessian`` called with arguments) compute at
once and return a tuple with one entry per argument, ``None`` where no
gradient flows, Jacobians flattened to matrices. The functions here give the
same derivatives in the convention of Python's AD libraries (JAX, HIPS
autograd):

* ``grad(f)`` is a function, called as ``f`` is: ``grad(f)(x, y)``;
* ``argnums`` (an int or a tuple of ints, default 0) picks the positional
  arguments to differentiate; the other positional arguments and every
  keyword argument reach ``f`` unchanged and are not differentiated;
* an int ``argnums`` gives the derivative itself, a tuple a tuple;
* an argument that does not influence the result gets zeros of its shape,
  never ``None``;
* a Jacobian has the shape ``out.shape + in.shape``, and a Hessian block
  ``in_i.shape + in_j.shape``;
* ``has_aux=True``: ``f`` returns ``(value, aux)`` and only ``value`` is
  differentiated.

``jacobian`` and ``hessian`` have both faces: called with only a function
(``jacobian(f)``, ``hessian(f, argnums=(0, 1))``) they are the transforms
here; called with arguments (``jacobian(f, x)``) they are Zygote's. Where
the other convention would have meant something, a failure says so:
``jacobian(g, 1)`` (JAX's argnums written positionally) differentiates ``g``
at the point 1, so when calling ``g`` there fails the TypeError names
``jacobian(g, argnums=1)``, and the tuple (or number) such a call returns
refuses to be called as a function would (``jacobian(np.sin, 0)(x)``) with
the same advice; ``grad(f, x)`` with an array for ``argnums`` names
``grad(f)(x)`` and ``gradient(f, x)``.

Arguments to differentiate may be arrays, numbers, or tuples, lists, dicts
of them (the derivative mirrors the structure), except for ``hessian``,
which takes arrays and numbers. The keywords ``argnums``, ``has_aux`` and
``mode`` (the mutation mode) belong to the transforms and never reach ``f``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mutagrad.call import call_with_gradient, owned_data, unwrap_output
from mutagrad.core.engine import current_trace
from mutagrad.core.tangents import cotangent_dtype
from mutagrad.core.trees import flatten
from mutagrad.diagnostics.tracebacks import api_boundary
from mutagrad.errors import MutagradError
from mutagrad.freezing import proving_boundary
from mutagrad.jacobians import call_with_jacobian, refuse_complex_arguments, zygote_hessian
from mutagrad.traced.value import WrappedValue
from mutagrad.zygote import pullback

Argnums = int | Sequence[int]


def _positions(argnums: Argnums, caller: str) -> tuple[tuple[int, ...], bool]:
    """The argument positions ``argnums`` names, and whether it was a single int."""
    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, (bool, np.bool_)):
        return (int(argnums),), True
    if isinstance(argnums, (tuple, list)) and all(
        isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)) for i in argnums
    ):
        return tuple(int(i) for i in argnums), False
    message = f"{caller}: argnums must be an int or a tuple of ints, got {argnums!r}"
    if isinstance(argnums, (np.ndarray, float, list, WrappedValue)):  # a point, not positions
        message += (
            f". {caller}(f, argnums) transforms f, and the result is called with the point: "
            f"{caller}(f)(x); to differentiate at x at once, as Zygote does, write "
            "mutagrad.gradient(f, x)"
        )
    raise TypeError(message)


def _looks_like_argnums(args: tuple[Any, ...]) -> bool:
    """Every argument an int or a tuple of ints: what JAX's ``argnums`` would be."""

    def position(a: Any) -> bool:
        return isinstance(a, int) and not isinstance(a, bool)

    return all(
        position(a) or (isinstance(a, tuple) and bool(a) and all(position(i) for i in a))
        for a in args
    )


def _as_argnums(args: tuple[Any, ...]) -> str:
    return repr(args[0]) if len(args) == 1 else repr(args)


def _zygote_call_failed(name: str, args: tuple[Any, ...], error: Exception) -> TypeError:
    """The error of ``name(f, 1)`` when calling ``f`` at 1 failed: JAX's argnums, maybe."""
    point = ", ".join(repr(a) for a in args)
    first = (str(error).strip().splitlines() or [""])[0]
    return TypeError(
        f"{name}(f, {point}) is Zygote's form: it differentiates f at the point ({point}), and "
        f"that failed ({type(error).__name__}: {first}). If {point} was meant as the "
        f"arguments to differentiate (JAX's argnums), write "
        f"{name}(f, argnums={_as_argnums(args)})(*args)."
    )


class _ComputedAt:
    """A Zygote-form result computed at ints, which may have been meant as ``argnums``:
    calling it, as JAX's transform would be called, says so."""

    _name: str
    _args: tuple[Any, ...]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        point = ", ".join(repr(a) for a in self._args)
        raise TypeError(
            f"{self._name}(f, {point}) is Zygote's form: it computed the {self._name} of f at "
            f"the point ({point}) and returned {self!r}, which cannot be called. For the "
            f"transform (JAX's "
            f"convention, {point} as argnums), write "
            f"{self._name}(f, argnums={_as_argnums(self._args)})(*args)."
        )


class _TupleComputedAt(_ComputedAt, tuple):
    __slots__ = ()


class _NumberComputedAt(_ComputedAt, float):
    __slots__ = ()


def _computed_at(result: Any, name: str, args: tuple[Any, ...]) -> Any:
    """``result`` as a tuple or float that explains itself when called (:class:`_ComputedAt`)."""
    if type(result) is tuple:
        marked: Any = _TupleComputedAt(result)
    elif type(result) is float:
        marked = _NumberComputedAt(result)
    else:
        return result
    marked._name, marked._args = name, args
    return marked


def autograd_argnum(argnums: Argnums, argnum: Argnums | None, caller: str) -> Argnums:
    """``argnums``, or ``argnum`` (autograd's spelling of it) when that is the one given."""
    if argnum is None:
        return argnums
    if argnums != 0:
        raise TypeError(f"{caller}: give argnums (or autograd's argnum), not both")
    return argnum


def _is_differentiable(leaf: Any) -> bool:
    """Numbers, real, complex or integer arrays and traced values; not bools, strings or None."""
    if isinstance(leaf, (bool, np.bool_)):
        return False
    if isinstance(leaf, (WrappedValue, np.ndarray)):
        return leaf.dtype.kind in "iufc"
    return isinstance(leaf, (int, float, complex, np.integer, np.inexact))


def _zeros_like(leaf: Any) -> Any:
    """The derivative of an argument that does not influence the result."""
    if isinstance(leaf, (int, float)) and not isinstance(leaf, np.generic):
        return 0.0
    if isinstance(leaf, complex):
        return 0j
    dtype = cotangent_dtype(np.dtype(leaf.dtype if hasattr(leaf, "dtype") else np.float64))
    if isinstance(leaf, np.generic):
        return dtype.type(0)
    return np.zeros(np.shape(leaf), dtype=dtype)


class _Selection:
    """A call ``f(*args, **kwargs)`` seen as a function of the leaves of the chosen arguments.

    The engine differentiates with respect to every argument it is given;
    handing it only the leaves of the arguments ``argnums`` names keeps the
    others out of the tape (an int used as an axis, a raw array used as a
    constant), and a flat list of leaves lines the derivatives up with the
    values that get zeros.
    """

    def __init__(
        self,
        f: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        argnums: Argnums,
        caller: str,
    ):
        positions, self.single = _positions(argnums, caller)
        n = len(args)
        chosen = []
        for i in positions:
            if not -n <= i < n:
                raise TypeError(
                    f"{caller}: argnums names argument {i}, but f was called with {n} "
                    "positional argument(s)"
                )
            chosen.append(i % n)
        if len(set(chosen)) != len(chosen):
            raise ValueError(f"{caller}: argnums {argnums!r} names an argument twice")
        self.f, self.args, self.kwargs = f, args, kwargs
        self.positions = chosen
        self.leaves: list[Any] = []
        self.rebuilds = []
        self.counts = []
        for p in chosen:
            leaves, rebuild = flatten(args[p])
            if not any(_is_differentiable(leaf) for leaf in leaves):
                raise TypeError(
                    f"{caller} differentiates argument {p}, a {type(args[p]).__name__}, which "
                    "holds no number or numeric array. Choose the arguments to differentiate "
                    "with argnums; the others pass through unchanged."
                )
            self.leaves.extend(leaves)
            self.rebuilds.append(rebuild)
            self.counts.append(len(leaves))

    def call(self, *leaves: Any) -> Any:
        """``f`` with the chosen arguments rebuilt from ``leaves``."""
        full = list(self.args)
        start = 0
        for p, rebuild, count in zip(self.positions, self.rebuilds, self.counts):
            full[p] = rebuild(list(leaves[start : start + count]))
            start += count
        return self.f(*full, **self.kwargs)

    def per_argument(self, derivatives: Sequence[Any]) -> Any:
        """One derivative per leaf, regrouped as the arguments: a bare one for an int argnums."""
        grouped = []
        start = 0
        for rebuild, count in zip(self.rebuilds, self.counts):
            grouped.append(rebuild(list(derivatives[start : start + count]), gradient=True))
            start += count
        return grouped[0] if self.single else tuple(grouped)


def _filled(leaves: Sequence[Any], derivatives: Sequence[Any]) -> list[Any]:
    """``derivatives`` with zeros in place of ``None`` for leaves that can have one."""
    return [
        _zeros_like(leaf) if d is None and _is_differentiable(leaf) else d
        for leaf, d in zip(leaves, derivatives)
    ]


class _Aux:
    """Splits ``(value, aux)`` returned by a ``has_aux`` function.

    Without ``has_aux``, a tuple is refused unless ``structured`` (vjp takes
    outputs of any structure; a gradient needs one scalar).
    """

    def __init__(self, has_aux: bool, caller: str, structured: bool = False):
        self.has_aux = has_aux
        self.caller = caller
        self.structured = structured
        self.aux: Any = None

    def value_of(self, out: Any) -> Any:
        if self.has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise MutagradError(
                    f"{self.caller} was called with has_aux=True, so f must return a pair "
                    f"(value, aux), but it returned {type(out).__name__}.\n"
                    "Fix: return (value, aux), or drop has_aux=True."
                )
            value, self.aux = out
            return value
        if isinstance(out, tuple) and not self.structured:
            raise MutagradError(
                f"{self.caller} needs f to return one value, but it returned a tuple of "
                f"{len(out)}.\n"
                "Fix: pass has_aux=True if f returns (value, aux), or return a single value."
            )
        return out


def _transform_name(f: Callable[..., Any], what: str) -> str:
    return f"{what} of {getattr(f, '__name__', type(f).__name__)}"


def _value_and_grad(
    f: Callable[..., Any],
    argnums: Argnums,
    has_aux: bool,
    mode: str | None,
    caller: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    holomorphic: bool = False,
) -> tuple[Any, Any]:
    selection = _Selection(f, args, kwargs, argnums, caller)
    aux = _Aux(has_aux, caller)
    result = call_with_gradient(
        lambda *leaves: aux.value_of(selection.call(*leaves)),
        tuple(selection.leaves),
        None,
        mode,
        caller,
        holomorphic,
    )
    grads = selection.per_argument(_filled(selection.leaves, result.grad))
    value = result.val
    if has_aux:
        # Inside an enclosing gradient call the value stays traced, as it does for the value.
        nested = isinstance(value, WrappedValue)
        value = (value, aux.aux if nested else unwrap_output(aux.aux))
    return value, grads


def value_and_grad(
    f: Callable[..., Any],
    argnums: Argnums = 0,
    *,
    has_aux: bool = False,
    mode: str | None = None,
    argnum: Argnums | None = None,
    holomorphic: bool = False,
) -> Callable[..., tuple[Any, Any]]:
    """A function returning ``(f(*args), the gradient of f)``, in JAX's convention.

    The gradient is taken with respect to the positional arguments
    ``argnums`` names: one array (or number) for an int, a tuple for a
    tuple; zeros for an argument the result does not depend on. ``f`` must
    return a scalar; with ``has_aux=True`` it returns ``(value, aux)`` and the
    result is ``((value, aux), gradient)``. Keyword arguments of the call
    reach ``f`` undifferentiated. ``mode`` is the mutation mode ("poison",
    "strict", "snapshot"). ``holomorphic=True``: see :func:`grad`.
    """
    argnums = autograd_argnum(argnums, argnum, "value_and_grad")
    _positions(argnums, "value_and_grad")  # refuse a bad argnums now, not at the call

    @proving_boundary
    @functools.wraps(f)
    def value_and_grad_of_f(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        return _value_and_grad(
            f, argnums, has_aux, mode, "value_and_grad", args, kwargs, holomorphic
        )

    value_and_grad_of_f.__doc__ = _transform_name(f, "value and gradient")
    return value_and_grad_of_f


def grad(
    f: Callable[..., Any],
    argnums: Argnums = 0,
    *,
    has_aux: bool = False,
    mode: str | None = None,
    argnum: Argnums | None = None,
    holomorphic: bool = False,
) -> Callable[..., Any]:
    """The gradient of scalar-valued ``f`` as a function, in JAX's convention.

    ``grad(f)(x)`` is an array shaped like ``x``; ``grad(f, argnums=(0, 1))(x,
    y)`` a tuple ``(dx, dy)``. An argument that does not influence the result
    gets zeros, never ``None``. With ``has_aux=True``, ``f`` returns ``(value,
    aux)`` and the result is ``(gradient, aux)``. Keyword arguments of the
    call reach ``f`` undifferentiated. A boolean or integer result raises
    (it has no derivative). An array of one element counts as the scalar
    (``np.sum(x, keepdims=True)``), as in autograd and PyTorch, where JAX
    raises. :func:`mutagrad.gradient` is Zygote's form.

    Complex arguments follow JAX's and autograd's convention: for real ``f``,
    ``grad(f)(z)`` is ``df/dx - i df/dy``. A complex ``f`` is refused unless
    ``holomorphic=True``, which returns ``f'(z)`` and checks, with a second
    sweep, that ``f`` is holomorphic at ``z``.
    """
    argnums = autograd_argnum(argnums, argnum, "grad")
    _positions(argnums, "grad")

    @proving_boundary
    @functools.wraps(f)
    def grad_of_f(*args: Any, **kwargs: Any) -> Any:
        value, grads = _value_and_grad(
            f, argnums, has_aux, mode, "grad", args, kwargs, holomorphic
        )
        return (grads, value[1]) if has_aux else grads

    grad_of_f.__doc__ = _transform_name(f, "gradient")
    return grad_of_f


@proving_boundary
def vjp(
    f: Callable[..., Any],
    *primals: Any,
    has_aux: bool = False,
    mode: str | None = None,
    **kwargs: Any,
) -> tuple[Any, ...]:
    """``(f(*primals), vjp_fn)``: the value and its vector-Jacobian product, as in JAX.

    ``f`` may return arrays, numbers, or tuples, lists and dicts of them.
    ``vjp_fn(cotangent)``, with ``cotangent`` of the structure and shapes of ``f``'s output,
    returns a tuple with one cotangent per primal (zeros for one the output
    does not depend on), and may be called many times. With ``has_aux=True``,
    ``f`` returns ``(out, aux)`` and ``vjp`` returns ``(out, vjp_fn, aux)``.
    Keyword arguments reach ``f`` undifferentiated. Built on
    :func:`mutagrad.pullback` (Zygote's form), so the primals are copied.
    Inside a gradient call (``grad`` of a function that calls ``vjp``) the
    value stays traced and ``vjp_fn`` is differentiated by that call, in the
    primals and in the cotangent alike.
    """
    selection = _Selection(f, primals, kwargs, tuple(range(len(primals))), "vjp")
    aux = _Aux(has_aux, "vjp", structured=True)
    out, back = pullback(
        lambda *leaves: aux.value_of(selection.call(*leaves)), *selection.leaves, mode=mode
    )

    @api_boundary
    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        derivatives = back(cotangent)
        return selection.per_argument(_filled(selection.leaves, derivatives))

    if has_aux:
        if current_trace() is not None:  # nested: aux stays traced, as the value does
            return out, vjp_fn, aux.aux
        return out, vjp_fn, unwrap_output(aux.aux, owned_data)  # copies what vjp_fn reads
    return out, vjp_fn


def _jacrev(
    f: Callable[..., Any],
    argnums: Argnums,
    has_aux: bool,
    mode: str | None,
    caller: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    holomorphic: bool = False,
) -> Any:
    selection = _Selection(f, args, kwargs, argnums, caller)
    aux = _Aux(has_aux, caller)
    value, matrices = call_with_jacobian(
        lambda *leaves: aux.value_of(selection.call(*leaves)),
        tuple(selection.leaves),
        None,
        mode,
        caller,
        holomorphic,
    )
    out_shape = np.shape(value._raw if isinstance(value, WrappedValue) else value)
    # Zygote's layout (a row per output element, a column per input element) reshaped.
    jacobians = [
        None if m is None else np.reshape(m, out_shape + np.shape(_data(leaf)))
        for leaf, m in zip(selection.leaves, matrices)
    ]
    result = selection.per_argument(jacobians)
    if has_aux:
        nested = isinstance(value, WrappedValue)
        return result, aux.aux if nested else unwrap_output(aux.aux)
    return result


def _data(leaf: Any) -> Any:
    return leaf._raw if isinstance(leaf, WrappedValue) else leaf


def jacrev(
    f: Callable[..., Any],
    argnums: Argnums = 0,
    *,
    has_aux: bool = False,
    mode: str | None = None,
    holomorphic: bool = False,
) -> Callable[..., Any]:
    """The Jacobian of ``f`` as a function, by reverse mode, in JAX's convention.

    ``jacrev(f)(x)`` has the shape ``f(x).shape + x.shape``: element
    ``[i..., j...]`` is ``∂f(x)[i...] / ∂x[j...]``; a tuple ``argnums`` gives a
    tuple. ``f`` returns one array or number. ``f`` runs once and the tape is
    swept once per element of its output. With ``has_aux=True``, ``f``
    returns ``(out, aux)`` and the result is ``(jacobian, aux)``.
    ``holomorphic=True``: ``f`` is a complex function of complex arguments, and
    the result is the complex Jacobian ``df/dz`` (one sweep more checks that ``f``
    is holomorphic there; without it, complex outputs are refused, as JAX's).
    """
    _positions(argnums, "jacrev")

    @proving_boundary
    @functools.wraps(f)
    def jacobian_of_f(*args: Any, **kwargs: Any) -> Any:
        return _jacrev(f, argnums, has_aux, mode, "jacrev", args, kwargs, holomorphic)

    jacobian_of_f.__doc__ = _transform_name(f, "Jacobian")
    return jacobian_of_f


def _hessian(
    f: Callable[..., Any],
    argnums: Argnums,
    mode: str | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    selection = _Selection(f, args, kwargs, argnums, "hessian")
    if any(count != 1 for count in selection.counts):
        raise TypeError(
            "hessian differentiates arrays and numbers; pass the parts of a structured "
            "argument as separate arguments"
        )
    sizes = [int(np.size(_data(leaf))) for leaf in selection.leaves]
    shapes = [np.shape(_data(leaf)) for leaf in selection.leaves]

    def all_gradients(*leaves: Any) -> Any:
        # The gradient with respect to every chosen argument, as one flat vector:
        # its Jacobian holds every block of the Hessian.
        grads = call_with_gradient(selection.call, leaves, None, mode, "hessian").grad
        parts = [
            np.zeros(size) if g is None else np.reshape(g, (size,))
            for g, size in zip(grads, sizes)
        ]
        return np.concatenate(parts)

    _, columns = call_with_jacobian(all_gradients, tuple(selection.leaves), None, mode, "hessian")
    offsets = np.cumsum([0, *sizes])
    rows = []
    for i in range(len(sizes)):
        row = []
        for j, column in enumerate(columns):
            block = np.reshape(column, (-1, sizes[j]))[offsets[i] : offsets[i + 1]]
            row.append(_shaped_block(block, shapes[i] + shapes[j], selection.leaves[i]))
        rows.append(tuple(row))
    return rows[0][0] if selection.single else tuple(rows)


def _shaped_block(block: Any, shape: tuple[int, ...], leaf: Any) -> Any:
    """A Hessian block in its shape; between two numbers, a number of the kind ``grad`` gives."""
    shaped = np.reshape(block, shape)
    if shape != () or isinstance(shaped, WrappedValue) or isinstance(leaf, np.ndarray):
        return shaped
    if isinstance(leaf, np.generic):
        return cotangent_dtype(leaf.dtype).type(shaped)
    return float(shaped)


def _hessian_transform(f: Callable[..., Any], argnums: Argnums, mode: str | None) -> Any:
    _positions(argnums, "hessian")

    @proving_boundary
    @functools.wraps(f)
    def hessian_of_f(*args: Any, **kwargs: Any) -> Any:
        refuse_complex_arguments(args, "hessian")
        return _hessian(f, argnums, mode, args, kwargs)

    hessian_of_f.__doc__ = _transform_name(f, "Hessian")
    return hessian_of_f


def _refuse_mixed_forms(name: str, argnums: Any, has_aux: bool) -> None:
    if argnums is not None or has_aux:
        raise TypeError(
            f"{name}(f, *args) is Zygote's form, which differentiates every argument; "
            f"argnums and has_aux belong to the transform {name}(f, argnums=...)(*args)"
        )


@proving_boundary
def jacobian(
    f: Callable[..., Any],
    *args: Any,
    argnums: Argnums | None = None,
    has_aux: bool = False,
    mode: str | None = None,
    holomorphic: bool = False,
    **kwargs: Any,
) -> Any:
    """``jacobian(f)`` is :func:`jacrev`; ``jacobian(f, *args)`` is Zygote's jacobian.

    The transform (JAX's and autograd's ``jacobian``) gives ``out.shape +
    in.shape``; Zygote's form computes at once and gives, per argument, a
    matrix with a row per output element and a column per input element
    (see :func:`mutagrad.jacobians.withjacobian`). ``holomorphic=True``, in
    both forms: the complex Jacobian ``df/dz`` of a holomorphic ``f`` (see
    :func:`jacrev`).
    """
    if args:
        _refuse_mixed_forms("jacobian", argnums, has_aux)
        if not _looks_like_argnums(args):
            return call_with_jacobian(f, args, kwargs, mode, "jacobian", holomorphic).grad
        try:
            result = call_with_jacobian(f, args, kwargs, mode, "jacobian", holomorphic).grad
        except Exception as error:
            raise _zygote_call_failed("jacobian", args, error) from error
        return _computed_at(result, "jacobian", args)
    if kwargs:
        raise TypeError(f"jacobian(f) takes no keyword arguments for f: {sorted(kwargs)}")
    return jacrev(f, 0 if argnums is None else argnums, has_aux=has_aux, mode=mode,
                  holomorphic=holomorphic)  # fmt: skip


@proving_boundary
def hessian(
    f: Callable[..., Any],
    *args: Any,
    argnums: Argnums | None = None,
    mode: str | None = None,
    **kwargs: Any,
) -> Any:
    """``hessian(f, argnums=0)`` is JAX's transform; ``hessian(f, x)`` is Zygote's hessian.

    The transform returns a function of ``f``'s arguments: for an int
    ``argnums``, the Hessian with the shape ``x.shape + x.shape``; for a
    tuple, the blocks ``H[i][j]`` of shape ``xi.shape + xj.shape`` (second
    derivatives across arguments included). ``f`` returns a scalar. Zygote's
    form ``hessian(f, x)`` takes one argument and gives a square matrix of
    side ``x.size`` (a number for a number). Both are reverse over reverse.
    """
    if args:
        _refuse_mixed_forms("hessian", argnums, False)
        if len(args) != 1:
            raise TypeError(
                f"hessian(f, x) is Zygote's form, for one argument (got {len(args)}); "
                "for several, use hessian(f, argnums=(0, 1, ...))(*args)"
            )
        if not _looks_like_argnums(args):
            return zygote_hessian(f, args[0], mode, kwargs, "hessian")
        try:
            result = zygote_hessian(f, args[0], mode, kwargs, "hessian")
        except Exception as error:
            raise _zygote_call_failed("hessian", args, error) from error
        return _computed_at(result, "hessian", args)
    if kwargs:
        raise TypeError(f"hessian(f) takes no keyword arguments for f: {sorted(kwargs)}")
    return _hessian_transform(f, 0 if argnums is None else argnums, mode)


__all__ = ["grad", "hessian", "jacobian", "jacrev", "value_and_grad", "vjp"]
