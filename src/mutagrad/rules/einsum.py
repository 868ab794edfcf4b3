"""``np.einsum``: any subscripts, ``...``, implicit output, repeated indices, broadcasting.

The subscripts are first rewritten in a canonical explicit form: ``...``
becomes fresh letters (right-aligned, as numpy broadcasts them) and an
implicit output is spelled out. In that form,

    out[O] = sum over the other labels of  x_0[L_0] * x_1[L_1] * ...

so the cotangent of operand ``k`` is another einsum: ``g`` (labels ``O``)
times every other operand, summed down to ``L_k``. Two things need care:

* a label repeated within ``L_k`` (``"ii->i"`` reads a diagonal): the
  cotangent lives on that diagonal only. Each repeated occurrence gets a
  fresh letter tied to the first by an identity matrix (a Kronecker delta)
  among the einsum's operands, which places the result on the diagonal.
* a label of ``L_k`` found nowhere else (``"ij->i"`` sums over ``j``): the
  cotangent is constant along it. A vector of ones with that label brings it
  into the einsum.

An operand of size 1 along a label that others have longer (numpy
broadcasts it) gets the full-size cotangent summed back to size 1.

Every vjp is an einsum (of the cotangent, the other operands and constant
deltas and ones), so it is itself differentiable. A one-operand einsum that
numpy answers with a view (``"ii->i"``, ``"ij->ji"``) is a view here too.
"""

from __future__ import annotations

import string
from functools import cache
from typing import Any

import numpy as np

from mutagrad.core.jvps import complex_exact, hand
from mutagrad.core.registry import VjpRule, implements
from mutagrad.core.tangents import unbroadcast
from mutagrad.errors import NotDifferentiableError
from mutagrad.traced.dispatch import apply
from mutagrad.traced.mutation import assign_out
from mutagrad.traced.value import WrappedValue, is_view_of, make_view, unwrap

LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _sublist_text(sublist: Any) -> str:
    """An einsum sublist (``[0, 1, Ellipsis]``) as subscript text (``"AB..."``)."""
    return "".join("..." if s is Ellipsis else LETTERS[int(s)] for s in sublist)


def subscripts_and_operands(args: tuple[Any, ...]) -> tuple[str, list[Any]]:
    """The subscripts (as text) and the operands of an einsum call, in either calling form."""
    if isinstance(args[0], str):
        return args[0], list(args[1:])
    operands = list(args[0::2][: len(args) // 2])
    terms = [_sublist_text(s) for s in args[1::2]]
    text = ",".join(terms)
    if len(args) % 2:
        text += "->" + _sublist_text(args[-1])
    return text, operands


def canonical(subscripts: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], str]:
    """The subscripts with ``...`` replaced by letters and the output spelled out.

    Returns one label string per operand and the output's labels.
    """
    text = subscripts.replace(" ", "")
    inputs_text, arrow, output_text = text.partition("->")
    terms = inputs_text.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: {len(terms)} terms in {subscripts!r} for {len(shapes)} operands")
    used = set(text) - set(".,->")
    free = [c for c in LETTERS if c not in used]
    widths = []
    for term, shape in zip(terms, shapes):
        named = len(term.replace("...", ""))
        widths.append(len(shape) - named if "..." in term else 0)
    ellipsis_ndim = max(widths, default=0)
    if ellipsis_ndim > len(free):
        raise NotDifferentiableError(
            "einsum: too many dimensions for the letters einsum allows.\n"
            "Fix: reshape the operands to fewer dimensions (merge the broadcast axes) first."
        )
    ellipsis = "".join(free[:ellipsis_ndim])
    labels = [
        term.replace("...", ellipsis[ellipsis_ndim - width :]) for term, width in zip(terms, widths)
    ]
    if arrow:
        output = output_text.replace("...", ellipsis)
    else:
        counts = {c: inputs_text.count(c) for c in used}
        output = ellipsis + "".join(sorted(c for c, k in counts.items() if k == 1))
    return labels, output


def _operand_vjp(k: int):
    def vjp(g, ans, *operands, labels, output):
        shapes = [np.shape(x) for x in operands]
        sizes: dict[str, int] = {}
        for term, shape in zip(labels, shapes):
            for c, n in zip(term, shape):
                sizes[c] = max(sizes.get(c, 1), n)
        for c, n in zip(output, np.shape(g)):
            sizes[c] = max(sizes.get(c, 1), n)
        used = set("".join(labels)) | set(output)
        fresh = iter(c for c in LETTERS if c not in used)
        terms = [output]
        arrays = [g]
        for j, (term, x) in enumerate(zip(labels, operands)):
            if j != k:
                terms.append(term)
                arrays.append(x)
        # The longest each label is among the cotangent and the other operands.
        elsewhere: dict[str, int] = {}
        for term, x in zip(terms, arrays):
            for c, n in zip(term, np.shape(x)):
                elsewhere[c] = max(elsewhere.get(c, 0), n)
        target = []
        for c in labels[k]:
            if c in target:
                # A repeated label: a fresh letter tied to it by a delta.
                d = next(fresh)
                terms.append(c + d)
                arrays.append(np.eye(sizes[c]))
                target.append(d)
                continue
            if elsewhere.get(c, 0) < sizes[c]:
                # Summed over in the forward pass (or only broadcast elsewhere):
                # the cotangent is constant along it.
                terms.append(c)
                arrays.append(np.ones(sizes[c]))
                elsewhere[c] = sizes[c]
            target.append(c)
        spec = ",".join(terms) + "->" + "".join(target)
        # optimize=True contracts through BLAS; order="C" keeps the cotangent C-ordered
        # (a transposed one would meet the engine's layout bug with view cotangents).
        cotangent = np.einsum(spec, *arrays, optimize=True, order="C")
        return unbroadcast(cotangent, shapes[k])

    return vjp


@complex_exact  # (multilinear)
@hand
def _einsum_jvp(tangents, ans, operands, kwargs):
    """An einsum is multilinear: for each operand with a tangent, the same einsum with the
    operand replaced by its tangent, whose batch axis is one more label kept in the output."""
    labels, output = kwargs["labels"], kwargs["output"]
    used = set("".join(labels) + output)
    batch = next(c for c in LETTERS if c not in used)
    total = None
    for i, t in enumerate(tangents):
        if t is None:
            continue
        terms = [batch + term if j == i else term for j, term in enumerate(labels)]
        arrays = [t if j == i else x for j, x in enumerate(operands)]
        part = np.einsum(",".join(terms) + "->" + batch + output, *arrays, optimize=True)
        total = part if total is None else total + part
    return total


@cache
def einsum_rule(n: int) -> VjpRule:
    """The rule of an einsum of ``n`` operands: the vjp of each reads the others."""
    reads = tuple(tuple(j for j in range(n) if j != k) for k in range(n))
    # (multilinear: each cotangent is an einsum of g and the other operands, no conjugates)
    return VjpRule("einsum", None, tuple(_operand_vjp(k) for k in range(n)), reads,
                   jvp=_einsum_jvp, handles_complex=True)  # fmt: skip


@implements(np.einsum)
def einsum(*operands, out=None, optimize=False, **kwargs):
    if not operands:
        raise ValueError("No input operands")
    subscripts, arrays = subscripts_and_operands(operands)
    arrays = [a if isinstance(a, WrappedValue) else np.asarray(a) for a in arrays]
    raw_kwargs = unwrap(kwargs)
    result = np.einsum(*unwrap(operands), optimize=optimize, **raw_kwargs)
    if len(arrays) == 1 and isinstance(arrays[0], WrappedValue):
        (a,) = arrays
        if type(result) is np.ndarray and is_view_of(result, a._raw):
            return assign_out(make_view(a, result), out, "np.einsum")
    labels, output = canonical(subscripts, [np.shape(a) for a in arrays])
    traced = apply(
        einsum_rule(len(arrays)), tuple(arrays), {"labels": labels, "output": output}, result
    )
    return assign_out(traced, out, "np.einsum")
