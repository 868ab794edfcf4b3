"""The helpers people port with from HIPS autograd and JAX, in their shapes.

* :func:`elementwise_grad` (autograd): the derivative of each output element
  with respect to its own input element, for an elementwise ``f``: the
  vector-Jacobian product with ones;
* :func:`hessian_vector_product` (autograd's ``hessian_tensor_product``
  shape: ``hessian_vector_product(f)(x, v)``) and :func:`hvp` (JAX's
  ``hvp(f, primals, tangents)``): ``H v`` by reverse over reverse (the
  gradient of ``<grad f(x), v>``), without forming ``H``;
* :func:`make_vjp` (autograd): ``make_vjp(f, argnum)(*args)`` returns
  ``(vjp, value)``, the vjp giving the cotangent of that one argument
  (:func:`mutagrad.vjp` is JAX's: ``(value, vjp)`` and every argument's);
* :func:`ravel_pytree` (``jax.flatten_util``) and :func:`flatten`
  (``autograd.misc.flatten``): a structure of arrays as one flat vector and
  the function that rebuilds the structure from such a vector (traced values
  stay traced: a vector made inside a gradient call differentiates);
* :func:`sgd`, :func:`adam`, :func:`rmsprop`: optimizers that update the
  parameter array **in place** (and keep their state in arrays they update
  in place), which autograd, whose arrays cannot be written, cannot offer.

Each takes ``argnum`` (autograd's spelling) or ``argnums``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mutagrad.core.trees import flatten as _leaves
from mutagrad.transforms import autograd_argnum, grad, vjp


def _position(argnums: Any, argnum: Any, caller: str) -> int:
    chosen = autograd_argnum(argnums, argnum, caller)
    if not isinstance(chosen, (int, np.integer)) or isinstance(chosen, bool):
        raise TypeError(f"{caller}: argnum must be an int (one argument), got {chosen!r}")
    return int(chosen)


def _with(args: tuple[Any, ...], position: int, value: Any) -> tuple[Any, ...]:
    return (*args[:position], value, *args[position + 1 :])


def elementwise_grad(f: Callable[..., Any], argnums: int = 0, *,
                     argnum: int | None = None) -> Callable[..., Any]:  # fmt: skip
    """``elementwise_grad(f)(x)``: the vjp of ``f`` at ``x`` with ones (the sum of the
    Jacobian's rows), which for an elementwise ``f`` is each element's own derivative."""
    position = _position(argnums, argnum, "elementwise_grad")

    def elementwise_grad_of_f(*args: Any, **kwargs: Any) -> Any:
        def of_one(x: Any) -> Any:
            return f(*_with(args, position, x), **kwargs)

        out, back = vjp(of_one, args[position])
        return back(np.ones_like(out))[0]

    return elementwise_grad_of_f


def hessian_vector_product(f: Callable[..., Any], argnums: int = 0, *,
                           argnum: int | None = None) -> Callable[..., Any]:  # fmt: skip
    """``hessian_vector_product(f)(*args, v)``: the Hessian of scalar ``f`` in one argument
    times ``v`` (of that argument's shape), by reverse over reverse."""
    position = _position(argnums, argnum, "hessian_vector_product")

    def hvp_of_f(*args_and_vector: Any, **kwargs: Any) -> Any:
        *args, v = args_and_vector

        def directional(x: Any) -> Any:
            gradient = grad(f, position)(*_with(tuple(args), position, x), **kwargs)
            return np.sum(gradient * v)

        return grad(directional)(args[position])

    return hvp_of_f


def hvp(f: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> Any:
    """JAX's ``hvp(f, primals, tangents)``: the Hessian of ``f`` at ``primals`` times
    ``tangents`` (a tuple with one tangent per primal), as one tuple per primal's cotangent
    when ``f`` has several arguments, else the one array."""
    positions = tuple(range(len(primals)))

    def directional(*xs: Any) -> Any:
        gradients = grad(f, positions)(*xs)
        return sum(np.sum(g * t) for g, t in zip(gradients, tangents))

    result = grad(directional, positions)(*primals)
    return result[0] if len(primals) == 1 else result


def make_vjp(f: Callable[..., Any], argnums: int = 0, *,
             argnum: int | None = None) -> Callable[..., Any]:  # fmt: skip
    """autograd's ``make_vjp(f, argnum)(*args)``: ``(vjp, value)``, ``vjp(g)`` being the
    cotangent of argument ``argnum`` alone."""
    position = _position(argnums, argnum, "make_vjp")

    def make(*args: Any, **kwargs: Any) -> tuple[Callable[[Any], Any], Any]:
        def of_one(x: Any) -> Any:
            return f(*_with(args, position, x), **kwargs)

        value, back = vjp(of_one, args[position])
        return (lambda g: back(g)[0]), value

    return make


def ravel_pytree(tree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(flat, unravel)``: the leaves of ``tree`` (tuples, lists, dicts of arrays and
    numbers) raveled and concatenated in order, and the function rebuilding ``tree``'s
    structure, shapes and dtypes from a vector like ``flat``."""
    leaves, rebuild = _leaves(tree)
    shapes = [np.shape(leaf) for leaf in leaves]
    dtypes = [np.result_type(leaf) for leaf in leaves]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    flat = np.concatenate([np.ravel(leaf) for leaf in leaves]) if leaves else np.zeros(0)

    def unravel(vector: Any) -> Any:
        pieces, start = [], 0
        for shape, dtype, size in zip(shapes, dtypes, sizes):
            piece = np.reshape(vector[start : start + size], shape)
            pieces.append(piece if np.result_type(piece) == dtype else piece.astype(dtype))
            start += size
        return rebuild(pieces)

    return flat, unravel


flatten = ravel_pytree  # autograd.misc.flatten: the same pair


# -- optimizers that update in place ------------------------------------------------------


def sgd(gradient: Callable[[Any, int], Any], x: np.ndarray, *, steps: int = 100,
        step_size: float = 0.1, mass: float = 0.9,
        callback: Callable[..., Any] | None = None) -> np.ndarray:  # fmt: skip
    """Gradient descent with momentum, writing each step into ``x`` (returned).

    ``gradient(x, i)`` is the gradient at step ``i`` (autograd's signature);
    ``callback(x, i, g)`` runs after each gradient.
    """
    velocity = np.zeros_like(x)
    for i in range(steps):
        g = gradient(x, i)
        if callback is not None:
            callback(x, i, g)
        velocity *= mass
        velocity -= (1.0 - mass) * g
        x += step_size * velocity
    return x


def rmsprop(gradient: Callable[[Any, int], Any], x: np.ndarray, *, steps: int = 100,
            step_size: float = 0.1, gamma: float = 0.9, eps: float = 1e-8,
            callback: Callable[..., Any] | None = None) -> np.ndarray:  # fmt: skip
    """RMSProp, writing each step into ``x`` (returned); arguments as for :func:`sgd`."""
    average = np.ones_like(x)
    for i in range(steps):
        g = gradient(x, i)
        if callback is not None:
            callback(x, i, g)
        average *= gamma
        average += (1 - gamma) * g * g
        x -= step_size * g / (np.sqrt(average) + eps)
    return x


def adam(gradient: Callable[[Any, int], Any], x: np.ndarray, *, steps: int = 100,
         step_size: float = 0.001, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
         callback: Callable[..., Any] | None = None) -> np.ndarray:  # fmt: skip
    """Adam (Kingma and Ba, 2015), writing each step into ``x`` (returned); arguments as for
    :func:`sgd`."""
    m, v = np.zeros_like(x), np.zeros_like(x)
    for i in range(steps):
        g = gradient(x, i)
        if callback is not None:
            callback(x, i, g)
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * g * g
        m_hat = m / (1 - b1 ** (i + 1))
        v_hat = v / (1 - b2 ** (i + 1))
        x -= step_size * m_hat / (np.sqrt(v_hat) + eps)
    return x


__all__ = [
    "adam", "elementwise_grad", "flatten", "hessian_vector_product", "hvp", "make_vjp",
    "ravel_pytree", "rmsprop", "sgd",
]  # fmt: skip
