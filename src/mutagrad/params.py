"""Implicit parameters: :class:`Params` and the :class:`Grads` a gradient returns for them.

The implicit style differentiates a function of no arguments with respect to
arrays it uses directly (from a closure, a model object, module globals)::

    W = mutagrad.array(rng.standard_normal((3, 2)))
    b = mutagrad.array(np.zeros(3))
    ps = mutagrad.Params([W, b])
    gs = mutagrad.gradient(lambda: np.sum((W @ x + b) ** 2), ps)
    gs[W], gs[b]            # gradients, keyed by the arrays themselves
    gs.update_(0.1)         # W -= 0.1 * gs[W], b -= 0.1 * gs[b], in place

Parameters are WrappedArrays (``mutagrad.array(...)``): they persist across
calls, and identity (``is``), not value, tells them apart. During a call each
one gets a fresh input node on the call's tape; it is never copied, so the
closure reads and writes the parameter itself.
"""

from __future__ import annotations

import numbers
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from mutagrad.errors import MutagradError
from mutagrad.traced.value import WrappedArray, WrappedScalar, WrappedValue


def _check_parameter(x: Any) -> WrappedArray:
    if isinstance(x, WrappedArray):
        if x._base is not None:
            raise TypeError(
                "Params holds whole arrays, but this WrappedArray is a view of another one "
                f"(shape {x.shape} of an array of shape {x._base.shape}); put the array it "
                "views in Params, and index it inside the loss."
            )
        return x
    if isinstance(x, np.ndarray):
        raise TypeError(
            f"Params holds mutagrad arrays, but got a numpy ndarray of shape {x.shape}. "
            "Wrap it once, W = mutagrad.array(W), and use that W in the loss: a raw ndarray "
            "cannot be followed by the tape (numpy gives it no hook), so its gradient would "
            "be lost."
        )
    if isinstance(x, (WrappedScalar, numbers.Number, np.generic)):
        raise TypeError(
            f"Params holds arrays, but got the scalar {x!r}. Scalars are immutable, so a loss "
            "cannot keep using the same one across updates; use a 0-d array, "
            "w = mutagrad.array(1.0), and update it in place."
        )
    raise TypeError(
        f"Params holds mutagrad arrays (mutagrad.array(...)), but got {type(x).__name__}"
    )


class Params:
    """An ordered set of WrappedArrays, compared by identity: the implicit parameters.

    ``gradient(lambda: loss(), ps)`` differentiates with respect to them.
    Adding an array twice keeps one entry. A raw ndarray, a view or a scalar
    is refused with a TypeError that says how to wrap it.
    """

    __slots__ = ("_arrays",)

    def __init__(self, arrays: Iterable[WrappedArray] = ()):
        if isinstance(arrays, (np.ndarray, WrappedValue)):
            raise TypeError(
                "Params takes a list of arrays, Params([W, b]), not a single array; "
                "write Params([W])"
            )
        self._arrays: list[WrappedArray] = []
        for x in arrays:
            self.add(x)

    def add(self, x: WrappedArray) -> None:
        """Add ``x`` (Zygote's ``push!``); an array already present is not added again."""
        x = _check_parameter(x)
        if x not in self:
            self._arrays.append(x)

    def discard(self, x: WrappedArray) -> None:
        """Remove ``x`` if present (Zygote's ``delete!``)."""
        self._arrays = [a for a in self._arrays if a is not x]

    def __contains__(self, x: object) -> bool:
        return any(a is x for a in self._arrays)

    def __iter__(self) -> Iterator[WrappedArray]:
        return iter(list(self._arrays))

    def __len__(self) -> int:
        return len(self._arrays)

    def __getitem__(self, i: int) -> WrappedArray:
        return self._arrays[i]

    def __or__(self, other: Params) -> Params:
        """The union, in order: this set's arrays, then the other's new ones."""
        if not isinstance(other, Params):
            return NotImplemented
        return Params([*self._arrays, *other._arrays])

    def copy(self) -> Params:
        return Params(self._arrays)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in self._arrays)
        return f"Params([{shapes}])"

    # -- flat vectors (Zygote's copy! between Params and a vector) -------------

    def to_vector(self) -> np.ndarray:
        """Every parameter's values, flattened (row-major) and concatenated, as float64."""
        if not self._arrays:
            return np.zeros(0)
        return np.concatenate([np.ravel(a._raw).astype(np.float64) for a in self._arrays])

    def load_vector_(self, vector: Any) -> None:
        """Write ``vector`` (as from :meth:`to_vector`) back into the parameters, in place."""
        vector = np.asarray(vector)
        total = sum(a.size for a in self._arrays)
        if vector.shape != (total,):
            raise ValueError(
                f"a vector of {total} elements is needed for these parameters, got shape "
                f"{vector.shape}"
            )
        start = 0
        for a in self._arrays:
            a[...] = vector[start : start + a.size].reshape(a.shape)
            start += a.size


def _same_parameters(a: Params, b: Params) -> bool:
    return len(a) == len(b) and all(x in b for x in a)


def _combine(x: Any, y: Any, op: Callable[[Any, Any], Any], negate: bool) -> Any:
    """``op(x, y)`` with None as "no gradient": a zero that is never allocated."""
    if x is None:
        return None if y is None else (-y if negate else y)
    if y is None:
        return x
    return op(x, y)


# A parameter bound to a call holds that call's input node, which the arrays it
# is read through look up. Only one call tree (one tape; nested calls share
# it) may hold a parameter at a time: another thread's call would otherwise
# replace the node and turn the parameter into a constant for the first one.
_CLAIMS_LOCK = threading.Lock()
_CLAIMS: dict[int, tuple[weakref.ref, Any, int]] = {}  # id(array) -> (array, tape, depth)


def claim_parameter(w: WrappedArray, tape: Any) -> None:
    """Reserve ``w`` for the calls recording on ``tape``; refuse if another tape holds it."""
    with _CLAIMS_LOCK:
        entry = _CLAIMS.get(id(w))
        if entry is not None and entry[0]() is w:
            if entry[1] is not tape:
                raise MutagradError(
                    f"a parameter (an array of shape {w.shape}) is already in use by a gradient "
                    "call in progress elsewhere, probably in another thread. A parameter holds "
                    "the tape node of one call at a time.\nFix: differentiate with respect to "
                    "the same Params from one thread at a time, or give each thread its own copies."
                )
            _CLAIMS[id(w)] = (entry[0], tape, entry[2] + 1)
        else:
            _CLAIMS[id(w)] = (weakref.ref(w), tape, 1)


def release_parameter(w: WrappedArray, tape: Any) -> None:
    """Undo one :func:`claim_parameter` of ``w`` by ``tape``."""
    with _CLAIMS_LOCK:
        entry = _CLAIMS.get(id(w))
        if entry is None or entry[0]() is not w or entry[1] is not tape:
            return
        if entry[2] <= 1:
            del _CLAIMS[id(w)]
        else:
            _CLAIMS[id(w)] = (entry[0], tape, entry[2] - 1)


class Grads:
    """Gradients (or Jacobians) keyed by parameter: ``gs[W]``, ``W in gs``, ``for W in gs``.

    ``gs[W]`` is None for a parameter the loss did not depend on. Arithmetic
    follows Zygote's: ``gs1 + gs2`` and ``gs1 - gs2`` (the same parameters),
    ``2 * gs``, ``gs / n``, ``-gs``, and ``gs.map(fn)`` make new Grads, with
    None standing for zero. ``gs.update_(lr)`` steps the parameters in place.
    """

    __slots__ = ("_params", "_values")

    def __init__(self, params: Params, values: Iterable[Any]):
        self._params = params.copy()
        self._values = list(values)
        if len(self._values) != len(self._params):
            raise ValueError(f"{len(self._params)} parameters but {len(self._values)} values")

    @property
    def params(self) -> Params:
        """The parameters, in order."""
        return self._params.copy()

    def _index(self, x: object) -> int:
        for i, a in enumerate(self._params):
            if a is x:
                return i
        raise KeyError(
            "this array is not one of the parameters the gradient was taken with "
            f"({len(self._params)} parameters: {self._params!r}); add it to the Params"
        )

    def __getitem__(self, x: WrappedArray) -> Any:
        return self._values[self._index(x)]

    def get(self, x: WrappedArray, default: Any = None) -> Any:
        if x not in self:
            return default
        return self._values[self._index(x)]

    def __contains__(self, x: object) -> bool:
        return x in self._params

    def __iter__(self) -> Iterator[WrappedArray]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def keys(self) -> list[WrappedArray]:
        return list(self._params)

    def values(self) -> list[Any]:
        return list(self._values)

    def items(self) -> list[tuple[WrappedArray, Any]]:
        return list(zip(self._params, self._values))

    def copy(self) -> Grads:
        """New Grads with copies of the gradient arrays."""
        return self.map(lambda g: g.copy() if hasattr(g, "copy") else g)

    def __repr__(self) -> str:
        parts = []
        for a, g in self.items():
            value = "None" if g is None else np.array2string(np.asarray(g), threshold=6)
            parts.append(f"{a.dtype}{list(a.shape)}: {value}")
        return "Grads(" + ", ".join(parts) + ")"

    # -- arithmetic ------------------------------------------------------------

    def map(self, fn: Callable[[Any], Any]) -> Grads:
        """Grads with ``fn(g)`` for every gradient ``g`` (None stays None)."""
        return Grads(self._params, [None if g is None else fn(g) for g in self._values])

    def _zip(self, other: Grads, op: Callable[[Any, Any], Any], negate: bool) -> Grads:
        if not _same_parameters(self._params, other._params):
            raise ValueError(
                "these Grads were taken with different parameters "
                f"({self._params!r} and {other._params!r}); combine Grads of the same Params"
            )
        values = [_combine(g, other[a], op, negate) for a, g in self.items()]
        return Grads(self._params, values)

    def __add__(self, other: Any) -> Grads:
        if not isinstance(other, Grads):
            return NotImplemented
        return self._zip(other, lambda x, y: x + y, negate=False)

    def __sub__(self, other: Any) -> Grads:
        if not isinstance(other, Grads):
            return NotImplemented
        return self._zip(other, lambda x, y: x - y, negate=True)

    def __neg__(self) -> Grads:
        return self.map(lambda g: -g)

    def __mul__(self, scale: Any) -> Grads:
        if isinstance(scale, Grads) or np.ndim(scale) != 0:
            return NotImplemented
        return self.map(lambda g: g * scale)

    __rmul__ = __mul__

    def __truediv__(self, scale: Any) -> Grads:
        if isinstance(scale, Grads) or np.ndim(scale) != 0:
            return NotImplemented
        return self.map(lambda g: g / scale)

    def __or__(self, other: Grads) -> Grads:
        """The union of two Grads; for a parameter in both, ``other``'s value (Zygote's merge!)."""
        if not isinstance(other, Grads):
            return NotImplemented
        params = self._params | other._params
        return Grads(params, [other[a] if a in other else self[a] for a in params])

    # -- updates and flat vectors ----------------------------------------------

    def update_(self, lr: float) -> None:
        """Gradient descent in place: ``W -= lr * gs[W]`` for every parameter with a gradient.

        The write goes through the WrappedArray, so its version grows and any
        pullback still reading the old values is poisoned, never silently wrong.
        """
        for a, g in self.items():
            if g is not None:
                a -= lr * g

    def to_vector(self) -> np.ndarray:
        """Every gradient flattened (row-major) and concatenated; zeros for None."""
        parts = [
            np.zeros(a.size) if g is None else np.ravel(np.asarray(g)).astype(np.float64)
            for a, g in self.items()
        ]
        return np.concatenate(parts) if parts else np.zeros(0)


__all__ = ["Grads", "Params"]
