"""Rules of mutagrad/rules/einsum.py: np.einsum.

Random einsum calls (one to three operands, labels repeated within an
operand, ``...`` anywhere in a term with broadcast ellipsis dimensions,
size-1 dimensions broadcast against longer ones, implicit and explicit
outputs, the sublist calling form, ``optimize=``) give numpy's values
exactly, and gradients and Hessian-vector products that match finite
differences for every operand. One-operand einsums that numpy answers with a
view (``"ii->i"``, ``"ij->ji"``) return views here too.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import rule_checks
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rule_checks import rules_defined_in

import mutagrad
from mutagrad.rules.einsum import canonical
from mutagrad.testing import check_gradient

check_op = functools.partial(rule_checks.check_op, quadratic=True)

# -- helpers -------------------------------------------------------------------


ELEMENTS = st.floats(-2, 2, allow_nan=False, allow_infinity=False, allow_subnormal=False)
LETTERS = "ijkl"


@st.composite
def einsum_calls(draw, max_operands=3):
    """``(subscripts, operands)`` for a random valid einsum."""
    n = draw(st.integers(1, max_operands), label="operands")
    sizes = {c: draw(st.integers(1, 3)) for c in LETTERS}
    ellipsis_shapes = [()] * n
    if draw(st.booleans(), label="ellipsis"):
        ellipsis_shapes = draw(
            hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=2, max_side=2)
        ).input_shapes
    terms, shapes, uses_ellipsis = [], [], False
    for k in range(n):
        labels = draw(st.lists(st.sampled_from(LETTERS), max_size=3), label=f"labels {k}")
        shape = []
        for c in labels:
            # A label used once here may be broadcast (size 1) against the others.
            single = labels.count(c) == 1
            shape.append(1 if single and draw(st.integers(0, 4)) == 0 else sizes[c])
        term = "".join(labels)
        if ellipsis_shapes[k] or (ellipsis_shapes != [()] * n and draw(st.booleans())):
            at = draw(st.integers(0, len(labels)))
            term = term[:at] + "..." + term[at:]
            shape[at:at] = ellipsis_shapes[k]
            uses_ellipsis = True
        terms.append(term)
        shapes.append(tuple(shape))
    subscripts = ",".join(terms)
    if draw(st.booleans(), label="explicit output"):
        present = sorted(set("".join(terms)) - {"."})
        output = "".join(draw(st.permutations(present))[: draw(st.integers(0, len(present)))])
        if uses_ellipsis:
            at = draw(st.integers(0, len(output)))
            output = output[:at] + "..." + output[at:]
        subscripts += "->" + output
    operands = [draw(hnp.arrays(np.float64, s, elements=ELEMENTS)) for s in shapes]
    return subscripts, operands


def as_sublists(subscripts):
    """The same call in einsum's sublist form: a function of the operands."""
    inputs, arrow, output = subscripts.partition("->")

    def sublist(term):
        parts = term.replace("...", ".").split(".") if "..." in term else [term]
        result = []
        for i, part in enumerate(parts):
            if i:
                result.append(Ellipsis)
            result.extend(LETTERS.index(c) for c in part)
        return result

    terms = [sublist(t) for t in inputs.split(",")]

    def call(*operands):
        args = [x for pair in zip(operands, terms) for x in pair]
        if arrow:
            args.append(sublist(output))
        return np.einsum(*args)

    return call


# -- einsum --------------------------------------------------------------------


@given(call=einsum_calls(), optimize=st.sampled_from([False, True, "greedy"]))
def test_einsum(call, optimize):
    subscripts, operands = call
    check_op(lambda *xs: np.einsum(subscripts, *xs, optimize=optimize), *operands)


@given(call=einsum_calls(max_operands=2))
def test_einsum_second_order(call):
    subscripts, operands = call
    check_op(lambda *xs: np.einsum(subscripts, *xs), *operands, order=2)


@given(call=einsum_calls())
def test_einsum_sublist_form(call):
    subscripts, operands = call
    check_op(as_sublists(subscripts), *operands)


@given(call=einsum_calls(max_operands=2))
def test_einsum_with_one_operand_constant(call):
    subscripts, operands = call
    if len(operands) == 2:
        a, b = operands
        check_op(lambda a: np.einsum(subscripts, a, b), a)
        check_op(lambda b: np.einsum(subscripts, a, b), b)


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ii", [(3, 3)]),  # the trace: implicit output, a repeated label summed away
    ("ii->i", [(3, 3)]),  # the diagonal (a view)
    ("iij->ij", [(2, 2, 3)]),
    ("ii,ij->ij", [(3, 3), (3, 2)]),
    ("iii->", [(2, 2, 2)]),
    ("ij->", [(2, 3)]),
    ("i,j,k->ijk", [(2,), (3,), (2,)]),
    ("...ij,...jk", [(2, 2, 3), (3, 2)]),  # batched matmul with broadcasting
    ("i...,i...->...", [(3, 2), (3, 1)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),  # a size-1 dimension broadcast
    ("ba,ac", [(3, 2), (2, 4)]),  # implicit output in alphabetical order: "bc"
    ("Ab,bA", [(2, 3), (3, 2)]),  # upper-case letters sort first
    ("i,i", [(3,), (1,)]),
]


@pytest.mark.parametrize(("subscripts", "shapes"), EINSUM_CASES, ids=[c for c, _ in EINSUM_CASES])
@given(data=st.data())
def test_einsum_cases(subscripts, shapes, data):
    operands = [data.draw(hnp.arrays(np.float64, s, elements=ELEMENTS)) for s in shapes]
    check_op(lambda *xs: np.einsum(subscripts, *xs), *operands, order=2)


def test_canonical_subscripts():
    assert canonical("ij,jk", [(2, 3), (3, 4)]) == (["ij", "jk"], "ik")
    assert canonical("...i,i->...", [(5, 2, 3), (3,)]) == (["ABi", "i"], "AB")
    assert canonical("...,...i", [(2,), (4, 2, 3)]) == (["B", "ABi"], "ABi")
    assert canonical("ii", [(3, 3)]) == (["ii"], "")


def test_one_operand_views_share_memory_and_version():
    """numpy's einsum returns a writable view here; writing it writes the base."""

    def f(x):
        y = x * 1.0
        diagonal = np.einsum("ii->i", y)
        transposed = np.einsum("ij->ji", y)
        assert diagonal.base is y and transposed.base is y
        diagonal *= 10.0  # writes y's diagonal, as in numpy
        return np.sum(transposed * np.arange(9.0).reshape(3, 3)), y

    x = np.arange(9.0).reshape(3, 3)
    (_, y), _ = mutagrad.withgradient(f, x)
    expected = x * 1.0
    np.einsum("ii->i", expected)[...] *= 10.0
    np.testing.assert_array_equal(y, expected)
    check_gradient(f, x)


@given(call=einsum_calls(max_operands=2))
def test_einsum_into_out(call):
    subscripts, operands = call

    def einsum_into(*xs):
        out = np.zeros_like(xs[0], shape=np.shape(np.einsum(subscripts, *operands)))
        result = np.einsum(subscripts, *xs, out=out)
        assert result is out
        return out

    check_op(einsum_into, *operands)


# -- coverage ------------------------------------------------------------------


def test_every_rule_of_the_module_is_tested():
    registered = rules_defined_in("mutagrad.rules.einsum")
    assert registered, "found no rules: did the registry change?"
    missing = {r.__name__ for r in registered - {np.einsum}}
    assert not missing, f"rules without a test: {sorted(missing)}"
