"""numpy's own Python-level functions, differentiated by running numpy's code on traced arrays.

``np.cov``, ``np.corrcoef``, ``np.gradient`` and the others of
``mutagrad.rules.numpy_source.TRACED`` have no hand-written derivative: their
rule runs a copy of numpy's implementation whose ``np.asarray``/``array(...,
ndmin=2)`` return the traced array, so numpy's in-place writes (``X -=
avg[:, None]``, ``c *= 1 / fact``, ``out[1:-1] = ...``) are recorded on the
tape like the user's own. Values must be numpy's to the last bit; gradients
match finite differences to second order; strict mode refuses the writes.
"""

from __future__ import annotations

import numpy as np
import pytest
from rule_checks import check_op, weights

import mutagrad
from mutagrad.core.registry import FUNCTION_RULES
from mutagrad.rules.numpy_source import TRACED, traced_copy
from mutagrad.testing import check_gradient
from numpy_compat import EIG_IS_COMPLEX, needs_real_eig

RNG = np.random.default_rng(20261124)
A = RNG.standard_normal((3, 5))
A_F = np.asfortranarray(A)
B = RNG.standard_normal((2, 5))
V = RNG.standard_normal(6)
COORDS = np.cumsum(RNG.uniform(0.5, 1.5, 6))  # increasing, unevenly spaced
AWEIGHTS = RNG.uniform(0.5, 2.0, 5)
FWEIGHTS = np.array([1, 2, 1, 3, 1])


def quadratic(out):
    """A loss whose Hessian involves the function's Jacobian."""
    w = weights(np.shape(out))
    return np.sum(w * out + out * out / 4)


# (name, function, arguments): np.cov, np.corrcoef and np.gradient in their variants, on
# C and Fortran layouts.
CORE = [
    ("cov", np.cov, (A,)),
    ("cov F", np.cov, (A_F,)),
    ("cov rowvar=False", lambda a: np.cov(a, rowvar=False), (A.T.copy(),)),
    ("cov bias", lambda a: np.cov(a, bias=True), (A_F,)),
    ("cov ddof=3", lambda a: np.cov(a, ddof=3), (A,)),
    ("cov y", np.cov, (A, B)),
    ("cov 1-d", np.cov, (V,)),
    ("cov fweights", lambda a: np.cov(a, fweights=FWEIGHTS), (A,)),
    ("cov aweights", lambda a, w: np.cov(a, fweights=FWEIGHTS, aweights=w), (A_F, AWEIGHTS)),
    ("corrcoef", np.corrcoef, (A,)),
    ("corrcoef F", np.corrcoef, (A_F,)),
    ("corrcoef y rowvar=False", lambda a, b: np.corrcoef(a, b, rowvar=False), (A.T, B.T)),
    ("gradient 1-d", np.gradient, (V,)),
    ("gradient spacing", lambda v: np.gradient(v, 0.5, edge_order=2), (V,)),
    ("gradient coordinates", lambda v: np.gradient(v, COORDS), (V,)),
    ("gradient 2-d", lambda a: np.stack(np.gradient(a)), (A,)),
    ("gradient 2-d F", lambda a: np.stack(np.gradient(a, 2.0, edge_order=2)), (A_F,)),
    ("gradient axis", lambda a: np.gradient(a, COORDS[:5], axis=-1, edge_order=2), (A_F,)),
    ("gradient axes", lambda a: np.stack(np.gradient(a, 0.3, 1.5, axis=(1, 0))), (A,)),
]
IDS = [name for name, _, _ in CORE]


# Where numpy's code overwrites a value a pullback saved, poison mode refuses, naming the
# write: np.cov with traced aweights multiplies X by them (the pullback saves X) before
# X -= avg. The value is gone, so the error is genuine; snapshot mode differentiates.
# (np.corrcoef divides c in place and then clips c in place: true_divide's pullback reads
# the dividend, which the in-place write copies first, not the quotient the clip overwrites.)
OVERWRITTEN = {
    "cov aweights": "np.subtract(..., out=)",
}


def value_of(function, args, mode):
    def loss(*xs):
        out = function(*xs)
        return quadratic(out), out

    return mutagrad.withgradient(loss, *args, mode=mode).val[1]


@pytest.mark.parametrize(("name", "function", "args"), CORE, ids=IDS)
def test_value_is_numpys_bit_for_bit(name, function, args):
    expected = function(*[a.copy(order="K") for a in args])
    np.testing.assert_array_equal(value_of(function, args, "snapshot"), expected, strict=True)
    if name not in OVERWRITTEN:
        np.testing.assert_array_equal(value_of(function, args, "poison"), expected, strict=True)
    # Outside a gradient call, on constant WrappedArrays, numpy's code runs too.
    outside = function(*[mutagrad.array(a) for a in args])
    assert isinstance(outside, mutagrad.WrappedArray)
    np.testing.assert_array_equal(np.asarray(outside), expected, strict=True)


@pytest.mark.parametrize("mode", ["poison", "snapshot"])
@pytest.mark.parametrize(("name", "function", "args"), CORE, ids=IDS)
def test_gradient_matches_finite_differences_to_second_order(name, function, args, mode):
    def loss(*xs):
        return quadratic(function(*xs))

    if mode == "poison" and name in OVERWRITTEN:
        with pytest.raises(mutagrad.PoisonedCaptureError) as error:
            mutagrad.gradient(loss, *args)
        assert f"overwritten by {OVERWRITTEN[name]}" in str(error.value)
        return
    check_gradient(loss, *args, mode=mode, order=2)


@pytest.mark.parametrize(("name", "function", "args"), CORE, ids=IDS)
def test_strict_mode_refuses_numpys_internal_writes(name, function, args):
    with pytest.raises(mutagrad.MutationError, match="Mutating arrays is not supported"):
        mutagrad.gradient(lambda *xs: quadratic(function(*xs)), *args, mode="strict")


def test_the_internal_in_place_writes_are_on_the_tape():
    def writes_of(function, *args):
        tape = mutagrad.explain(lambda *xs: quadratic(function(*xs)), *args, file=None,
                                writes=True, mode="snapshot")  # fmt: skip
        assert tape.outcome == "gradient computed"
        return [(op.name, op.details[-1]) for op in tape.operations if op.writes]

    # np.cov: X -= avg[:, None] (a subtract into X), c *= np.true_divide(1, fact).
    names = [name for name, _ in writes_of(np.cov, A)]
    assert names == ["subtract", "multiply"]
    # np.corrcoef: np.cov's two, c /= stddev[:, None], c /= stddev[None, :], np.clip(out=c).
    names = [name for name, _ in writes_of(np.corrcoef, A)]
    assert names == ["subtract", "multiply", "divide", "divide", "write: np.clip"]
    # np.gradient along the last axis: out[:, 1:-1], then the edges out[:, 0] and out[:, -1].
    written = writes_of(lambda a: np.gradient(a, axis=1), A)
    assert [name for name, _ in written] == ["write: __setitem__"] * 3
    for (_, detail), region in zip(written, ["[:, 1:4]", "[:, 0]", "[:, 4]"]):
        assert f"writes a1 {region}:" in detail


def overwritten_after_use(function, what):
    """``function`` with its argument's traced copy (or its result) overwritten after use."""

    def f(*args):
        copies = [a * 1.0 for a in args]
        out = function(*copies)
        loss = quadratic(out)
        for array in copies if what == "inputs" else [out]:
            array[...] = 7.0
        return loss

    return f


@pytest.mark.parametrize("what", ["inputs", "result"])
@pytest.mark.parametrize(("name", "function", "args"), CORE, ids=IDS)
def test_overwriting_after_use_raises_or_changes_nothing(name, function, args, what):
    expected = mutagrad.gradient(lambda *xs: quadratic(function(*xs)), *args, mode="snapshot")
    changed = overwritten_after_use(function, what)
    try:
        poison = mutagrad.gradient(changed, *args)
    except mutagrad.PoisonedCaptureError:
        assert what == "result" or name in OVERWRITTEN
    else:
        for got, want in zip(poison, expected):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for got, want in zip(mutagrad.gradient(changed, *args, mode="snapshot"), expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_the_callers_arrays_are_not_written():
    """numpy's cov centres a copy of m (array(m, ndmin=2) copies): the input keeps its values."""
    versions = []

    def f(x):
        y = x * 1.0
        c = np.cov(y)
        versions.append(y.version)
        return quadratic(c) + quadratic(y)

    grad = mutagrad.gradient(f, A)[0]
    assert versions == [0]
    expected = mutagrad.gradient(lambda x: quadratic(np.cov(x)) + quadratic(x * 1.0), A)[0]
    np.testing.assert_array_equal(grad, expected)


def test_traced_array_keeps_numpys_aliasing():
    """asarray returns the traced array itself; array(copy=True) a traced copy; ndmin a view."""

    copy = traced_copy(np.cov, True)
    assert copy.__code__ is np.cov._implementation.__code__  # numpy's own code
    namespace = copy.__globals__

    def run(x):
        asarray = namespace["np"].asarray
        same, view, fresh, ints = (asarray(x), namespace["array"](x, ndmin=3, copy=None),
                                   namespace["array"](x), asarray(x, int))  # fmt: skip
        assert same is x and view.base is x and view.shape == (1, 3, 5)
        assert fresh is not x and fresh.base is None and fresh.version == 0
        assert ints.dtype == np.dtype(int) and not mutagrad.is_traced(ints)
        fresh[...] = 0.0  # a copy: x keeps its values
        view[0, 0, 0] = 2.0  # a view: x sees the write, in value and in gradient
        return np.sum(x * x)

    grad = mutagrad.gradient(run, A)[0]
    expected = 2 * A
    expected[0, 0] = 0.0  # overwritten by the view's write
    np.testing.assert_array_equal(grad, expected)
    # The substitutions live in the copy's namespace: numpy's module keeps its own.
    assert np.lib._function_base_impl.__dict__["array"] is np.array
    assert namespace["array"] is not np.array


def test_lists_buffers_and_layouts_keep_the_gradient():
    """The substitutes stack lists of traced values, fill buffers, and copy where numpy copies."""
    namespace = traced_copy(np.polydiv, True).__globals__["NX"]  # with buffers

    def f(x):
        filled = namespace.full((2, 3), x[0])  # a traced fill value
        stacked = namespace.array([x[1], x[2]], ndmin=2)
        mixed = namespace.ascontiguousarray([x[0], 2.0])
        strided = namespace.ascontiguousarray(x[::2])  # numpy copies a strided view
        buffer = namespace.zeros(2)
        buffer[1] = x[3] ** 2  # a traced value written into an allocated buffer
        assert filled.shape == (2, 3) and stacked.shape == (1, 2) and mixed.shape == (2,)
        assert strided.flags.c_contiguous and strided.base is None
        parts = [filled, stacked**2, mixed, strided**3, buffer]
        return sum(np.sum(p) for p in parts)

    x = np.array([1.0, 2.0, 3.0, 4.0])
    grad = mutagrad.gradient(f, x)[0]
    np.testing.assert_array_equal(grad, [6 + 1 + 3 * 1.0, 2 * 2.0, 2 * 3.0 + 3 * 9.0, 2 * 4.0])


# Every other function traced through: (name, function, arguments).
OTHERS = [
    ("polyfit", lambda y: np.polyfit([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], y, 2), (V,)),
    ("polyfit x", lambda x: np.polyfit(x, np.arange(6.0) ** 2, 2), (COORDS,)),
    ("polyfit w", lambda y, w: np.polyfit([0.0, 1.0, 2.0, 3.0, 4.0], y, 1, w=w), (V[:5], AWEIGHTS)),
    ("polyfit cov", lambda y: np.polyfit(np.arange(6.0), y, 1, cov=True)[1], (V,)),
    ("polyfit 2-d", lambda y: np.polyfit(np.arange(5.0), y, 2), (A.T,)),
    ("poly", np.poly, (V,)),
    ("poly of a matrix", lambda a: np.poly(a + a.T), (A[:, :3],)),
    ("polydiv quotient", lambda u, v: np.polydiv(u, v)[0], (V, B[0, :3])),
    ("polydiv remainder", lambda u, v: np.polydiv(u, v)[1], (V, B[0, :3])),
    ("roots", lambda c: np.roots(np.poly(c)), (COORDS[:4],)),
    ("piecewise", lambda x: np.piecewise(x, [x < 0, x > 1], [np.sin, 2.0, lambda v: v**3]), (V,)),
    ("trim_zeros", lambda x: np.trim_zeros(x * (np.abs(x) > 0.4)), (COORDS - 0.5,)),
    ("unwrap", lambda p: np.unwrap(4 * p), (V,)),
    ("unwrap axis", lambda p: np.unwrap(4 * p, axis=0, period=5.0), (A,)),
    ("histogram edges", lambda x: np.histogram(x, bins=4)[1], (V,)),
    ("histogram weights", lambda x: np.histogram(x, bins=3, weights=x**2)[0], (V,)),
    ("histogram given bins", lambda x: np.histogram(x, [-2.0, 0.0, 2.0], weights=x)[0], (V,)),
    ("histogram density", lambda x: np.histogram(x, bins=3, density=True)[0], (V,)),
    ("histogram_bin_edges", lambda x: np.histogram_bin_edges(x, bins="auto"), (V,)),
    ("histogramdd edges", lambda a: np.concatenate(np.histogramdd(a, bins=3)[1]), (A.T,)),
    ("histogramdd list", lambda x, y: np.histogramdd([x, y], bins=(2, 3))[1][1], (V, COORDS)),
    ("histogramdd weights", lambda a: np.histogramdd(a, bins=2, weights=a[:, 0] ** 2)[0], (A.T,)),
    ("histogram2d edges", lambda x: np.concatenate(np.histogram2d(x, x[::-1], bins=2)[1:]), (V,)),
    ("histogram2d raw y", lambda x: np.histogram2d(COORDS, x, bins=[2, 3])[2], (V,)),
    (
        "histogram2d weights",
        lambda x, w: np.histogram2d(x, x**2, bins=3, weights=w)[0],
        (V, COORDS),
    ),
    ("histogram2d density", lambda x: np.histogram2d(x, COORDS, bins=3, density=True)[0], (V,)),
    (
        "histogram2d given bins",
        lambda x: np.histogram2d(x, x, [-2.0, 0.0, 2.0], weights=x)[0],
        (V,),
    ),
    ("i0", np.i0, (V * 3,)),  # across numpy's two series, at 8
    # A traced scalar: numpy's conversion makes it a 0-d array, which piecewise indexes.
    ("i0 of a scalar", lambda x: np.i0(x[2] * 3), (V,)),
    ("piecewise of a scalar", lambda x: np.piecewise(x[1], [x[1] < 0], [np.sin, np.cos]), (V,)),
    ("geomspace", lambda x: np.geomspace(x[0], x[1], 5), (COORDS[2:] + 0.5,)),
    ("ix_", lambda x: np.ix_(x, x[:2])[0] * np.ix_(x, x[:2])[1], (V,)),
    # The set functions: common values are common by construction (the same elements of x),
    # so they stay common under finite differences; each is taken from ar1.
    ("union1d", lambda x, y: np.union1d(x, np.append(x[3:], y[:3] ** 2)), (V, COORDS)),
    ("intersect1d", lambda x: np.intersect1d(x, x[[4, 1, 1]]), (V,)),
    (
        "intersect1d return_indices",
        lambda x: np.intersect1d(x[::-1], x[:3], assume_unique=True, return_indices=True)[0],
        (V,),
    ),
    ("setdiff1d", lambda x: np.setdiff1d(x, x[1:3]), (V,)),
    ("setxor1d", lambda x, y: np.setxor1d(x, np.append(x[:2], y[:2])), (V, COORDS)),
]


# Genuine overwrites in numpy's code: polyfit saves lhs for lhs * lhs, then lhs /= scale.
OTHERS_OVERWRITTEN = {"polyfit x", "polyfit w"}
NEED_REAL_EIG = {"poly of a matrix", "roots"}  # np.linalg.eigvals of a matrix


@pytest.mark.parametrize(("name", "function", "args"), OTHERS, ids=[n for n, _, _ in OTHERS])
def test_other_functions_traced_through(name, function, args):
    if name in NEED_REAL_EIG and EIG_IS_COMPLEX:
        pytest.skip(needs_real_eig.kwargs["reason"])
    expected = function(*[a.copy() for a in args])
    np.testing.assert_array_equal(value_of(function, args, "snapshot"), expected, strict=True)

    def loss(*xs):
        return quadratic(function(*xs))

    check_gradient(loss, *args, mode="snapshot")
    if name in OTHERS_OVERWRITTEN:
        with pytest.raises(mutagrad.PoisonedCaptureError, match=r"np\.divide"):
            mutagrad.gradient(loss, *args)
    else:
        check_gradient(loss, *args)


def test_histogram_counts_carry_no_derivative():
    """Counts are piecewise constant: integers, no gradient, and no refusal either."""

    def f(x):
        counts, edges = np.histogram(x, bins=3)
        assert counts.dtype.kind == "i" and not mutagrad.is_traced(counts)
        return np.sum(edges * edges) + np.sum(counts)

    grad = mutagrad.gradient(f, V)[0]
    np.testing.assert_allclose(grad, check_gradient(f, V)[0])
    assert np.count_nonzero(grad) == 2  # only the minimum and the maximum move the edges


def test_histogram2d_to_second_order():
    """np.histogram2d runs numpy's code, whose np.histogramdd stacks ``[x, y]`` (traced)."""

    def loss(x, w):
        counts, xedges, yedges = np.histogram2d(x, x[::-1] ** 2, bins=[2, 3], weights=x * w)
        density = np.histogram2d(x, w, bins=2, density=True)[0]
        return quadratic(counts) + quadratic(xedges * yedges[:3]) + quadratic(density)

    check_gradient(loss, V, COORDS, order=2)
    check_gradient(loss, V, COORDS, order=2, mode="snapshot")


def test_every_traced_function_is_registered_and_tested():
    tested = {name.split()[0] for name, _, _ in CORE + OTHERS}
    assert {f.__name__ for f in TRACED} == tested
    for function in TRACED:
        assert FUNCTION_RULES[function].__name__ == f"traced_{function.__name__}"


def test_gradient_with_respect_to_coordinates():
    # np.gradient builds shape = np.ones(N, dtype=int) and calls a.reshape(shape).
    check_op(lambda v, c: np.gradient(v, c), V, COORDS)
