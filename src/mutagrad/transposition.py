"""Forward rules from reverse ones by transposition: ``J t`` from a function that computes
``J^T g``.

A vjp (and an rrule's pullback) is linear in its cotangent ``g``, so its own
derivative with respect to ``g`` is ``J`` whatever ``g`` is: running it once
on a traced ``g`` (a gradient call of its own) and sweeping that tape with
``t`` as the cotangent gives ``J t``, exactly as reverse mode gives anything
(:func:`transposed`). Where the vjp cannot be traced (it writes ``g`` into a
raw array), ``J t`` is built from the Jacobian's rows instead, ``J^T e_k``
for each output element ``k`` (:func:`by_rows`). Both are run on raw arrays
at a forward level with no level around it; under other levels (a Hessian,
a gradient call around) the jvp would have to be differentiated in turn, so
it is refused by name (:class:`~mutagrad.errors.MissingForwardRuleError`),
and hessian and hvp fall back to reverse over reverse.

:data:`mutagrad.core.jvps.TRANSPOSED` is the derivation a rule module
declares (``VjpRule(jvp=TRANSPOSED)``) for a function whose Jacobian is
neither diagonal nor the function itself (a factorization, ``pinv``,
``softmax``); it calls :func:`transposed`, registered here (the rules sit
below the gradient calls it runs): one traced run of its vjps per operation,
one sweep per direction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mutagrad.core.engine import STATE
from mutagrad.core.jvps import register_transposer
from mutagrad.errors import MutagradError
from mutagrad.zygote import pullback


def by_rows(pulled: Callable[..., Any], shape: tuple[int, ...], dtype: Any,
            tangents: list[Any]) -> Any:  # fmt: skip
    """``J t`` for every direction from the Jacobian's rows: ``pulled(e_k)`` is row ``k``
    (one cotangent per tangent), so output element ``k``'s tangent is the sum over the
    arguments of that row times the argument's tangent."""
    width = tangents[0].shape[0]
    out = np.zeros((width, int(np.prod(shape, dtype=np.int64))), dtype)
    unit = np.zeros(out.shape[1], dtype)
    for k in range(out.shape[1]):
        unit[k] = 1
        rows = pulled(unit.reshape(shape).copy())
        unit[k] = 0
        for row, t in zip(rows, tangents):
            row = np.broadcast_to(row, t.shape[1:])
            out[:, k] += np.reshape(t, (width, -1)) @ np.reshape(row, -1)
    return out.reshape((width, *shape))


def transposed(pulled: Callable[..., Any], shape: tuple[int, ...], dtype: Any,
               tangents: list[Any]) -> Any:  # fmt: skip
    """``J t`` for every direction, ``(width,) + shape``, where ``pulled(g)`` gives ``J_i^T g``
    for each argument ``i`` that has a tangent (``tangents[i]``, ``(width,) + its shape``).

    Raises :class:`MutagradError` or ``ValueError`` where neither the traced
    transposition nor the rows can be computed (the caller refuses by name).
    """
    width = tangents[0].shape[0]
    token = STATE.set(None)  # (a gradient call of its own, apart from the forward level)
    try:
        try:
            # Any g will do (J does not depend on it); ones, not zeros, so that a vjp that
            # skips work for a zero cotangent is still traced through.
            _, transpose = pullback(pulled, np.ones(shape, dtype))
            columns = [transpose(tuple(t[b] for t in tangents))[0] for b in range(width)]
            return np.stack([np.broadcast_to(c, shape) for c in columns])
        except MutagradError:
            return by_rows(pulled, shape, dtype, tangents)
    finally:
        STATE.reset(token)


register_transposer(transposed)

__all__ = ["by_rows", "transposed"]
