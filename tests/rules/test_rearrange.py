"""Rules of mutagrad/rules/rearrange.py: tile, repeat, roll, resize, take, compress, choose,
delete, insert, append, tril, triu, diag, diagflat, partition and pad.

Values on WrappedArrays equal numpy's exactly, gradients match finite
differences, and so do Hessian-vector products (``check_gradient(order=2)``;
the loss is quadratic in the output, so the second-order check exercises the
pullback's own pullback). Repeated sources (tile, repeat, take with repeated
or wrapped indices, resize) accumulate; every np.pad mode is covered, with
pads wider than the array (reflect and wrap then iterate), ``reflect_type``,
``stat_length``, and traced ``constant_values``/``end_values``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import rule_checks
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rule_checks import rules_defined_in, weights

import mutagrad

check_op = functools.partial(rule_checks.check_op, order=2, quadratic=True)

# -- helpers -------------------------------------------------------------------


def floats(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


ELEMENTS = floats(-3, 3)
# Distinct grid values: no ties for partition and the maximum/minimum/median pads.
GRID = st.integers(-40, 40).map(lambda k: k / 8 + 0.05)
SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, max_side=3)


def arrays(shape=SHAPES, elements=ELEMENTS, unique=False):
    return hnp.arrays(np.float64, shape, elements=elements, unique=unique)


# -- tile, repeat, roll, resize --------------------------------------------------


@given(data=st.data())
def test_tile(data):
    x = data.draw(arrays(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)), label="x")
    reps = data.draw(
        st.one_of(st.integers(0, 3), st.lists(st.integers(0, 2), min_size=1, max_size=3)),
        label="reps",
    )
    check_op(lambda x: np.tile(x, reps), x)


@given(data=st.data())
def test_repeat(data):
    x = data.draw(arrays(), label="x")
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)), label="axis")
    length = x.size if axis is None else x.shape[axis]
    repeats = data.draw(
        st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), min_size=length, max_size=length)),
        label="repeats",
    )
    check_op(lambda x: np.repeat(x, repeats, axis=axis), x)
    check_op(lambda x: x.repeat(repeats, axis), x, order=1)


@given(data=st.data())
def test_roll(data):
    x = data.draw(arrays(), label="x")
    if data.draw(st.booleans(), label="flat"):
        shift, axis = data.draw(st.integers(-7, 7), label="shift"), None
    else:
        axis = tuple(data.draw(st.permutations(range(x.ndim)), label="axes")[:2])
        shift = tuple(data.draw(st.integers(-4, 4)) for _ in axis)
    check_op(lambda x: np.roll(x, shift, axis=axis), x)


@given(x=arrays(), shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=5))
def test_resize(x, shape):
    """np.resize cycles through the elements: a source may be used several times."""
    check_op(lambda x: np.resize(x, shape), x)


def test_empty_rearrangements_are_constants():
    x = np.zeros((0, 2))
    (g,) = mutagrad.gradient(lambda x: np.sum(np.tile(x, 2)) + np.sum(np.resize(x, 3)), x)
    assert g is None or g.shape == (0, 2)


# -- take ------------------------------------------------------------------------


@given(data=st.data())
def test_take(data):
    x = data.draw(arrays(), label="x")
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)), label="axis")
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]), label="mode")
    length = x.size if axis is None else x.shape[axis]
    bound = length if mode == "raise" else 2 * length + 2
    indices = data.draw(
        st.one_of(
            st.integers(-length, length - 1),
            hnp.arrays(np.intp, hnp.array_shapes(min_dims=1, max_dims=2, max_side=3),
                       elements=st.integers(-bound, bound - 1)),
        ).filter(lambda i: mode != "raise" or np.all((-length <= np.asarray(i))
                                                     & (np.asarray(i) < length))),
        label="indices",
    )  # fmt: skip
    check_op(lambda x: np.take(x, indices, axis=axis, mode=mode), x)
    check_op(lambda x: x.take(indices, axis=axis, mode=mode), x, order=1)


@given(x=arrays(hnp.array_shapes(min_dims=2, max_dims=2, max_side=3)))
def test_take_into_out(x):
    def take_into(x):
        out = np.zeros_like(x, shape=(x.shape[0], 3))
        result = np.take(x, [0, -1, 0], axis=1, out=out)
        assert result is out
        return out

    check_op(take_into, x)


def test_take_by_hand():
    x = np.array([1.0, 2.0, 3.0])
    (g,) = mutagrad.gradient(lambda x: np.sum(np.take(x, [0, 0, 2, 5], mode="wrap")), x)
    np.testing.assert_array_equal(g, [2.0, 0.0, 2.0])


# -- compress, choose, delete, insert, append --------------------------------------


@given(data=st.data())
def test_compress(data):
    x = data.draw(arrays(), label="x")
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)), label="axis")
    length = x.size if axis is None else x.shape[axis]
    condition = data.draw(st.lists(st.booleans(), max_size=length), label="condition")
    check_op(lambda x: np.compress(condition, x, axis=axis), x)


@given(data=st.data())
def test_choose(data):
    choices = data.draw(arrays(hnp.array_shapes(min_dims=2, max_dims=3, max_side=3)))
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]), label="mode")
    n = choices.shape[0]
    bound = (0, n - 1) if mode == "raise" else (-n - 2, 2 * n)
    a = data.draw(hnp.arrays(np.intp, choices.shape[1:], elements=st.integers(*bound)))
    check_op(lambda c: np.choose(a, c, mode=mode), choices)
    # a list of choices (arrays and numbers) that broadcast together
    check_op(lambda c: np.choose(a, [c[0], 2.0, c[-1][..., :1]], mode="clip"), choices)


@given(data=st.data())
def test_delete(data):
    x = data.draw(arrays(), label="x")
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)), label="axis")
    length = x.size if axis is None else x.shape[axis]
    obj = data.draw(
        st.one_of(
            st.integers(-length, length - 1),
            st.lists(st.integers(0, length - 1), max_size=3),
            st.builds(slice, st.integers(0, length), st.integers(0, length)),
            st.lists(st.booleans(), min_size=length, max_size=length).map(np.array),
        ),
        label="obj",
    )
    check_op(lambda x: np.delete(x, obj, axis=axis), x)


@given(data=st.data())
def test_insert(data):
    """Both the array and the inserted values (broadcast by numpy) have gradients."""
    x = data.draw(arrays(), label="x")
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)), label="axis")
    length = x.size if axis is None else x.shape[axis]
    obj = data.draw(
        st.one_of(st.integers(-length, length),
                  st.lists(st.integers(0, length), min_size=1, max_size=3)),
        label="obj",
    )  # fmt: skip
    count = 1 if isinstance(obj, int) else len(obj)
    slot = list(x.shape)
    if axis is None:
        slot = [count]
    else:
        slot[axis] = count
    if isinstance(obj, int) and axis is not None:
        del slot[axis]  # a scalar index inserts one slice: values have its shape
    values = data.draw(
        st.one_of(floats(-3, 3), arrays(tuple(slot)), arrays(tuple(slot[-1:]) or ())),
        label="values",
    )
    check_op(lambda x, v: np.insert(x, obj, v, axis=axis), x, values)
    check_op(lambda x: np.insert(x, obj, values, axis=axis), x)


@given(x=arrays(), y=arrays())
def test_append(x, y):
    check_op(lambda x, y: np.append(x, y), x, y)
    check_op(lambda x: np.append(x, x[..., :1] if x.ndim else x, axis=x.ndim - 1 or None), x)


# -- triangles and diagonals --------------------------------------------------------


@pytest.mark.parametrize("triangle", [np.tril, np.triu], ids=["tril", "triu"])
@given(x=arrays(hnp.array_shapes(min_dims=2, max_dims=3, max_side=3)), k=st.integers(-3, 3))
def test_triangle(triangle, x, k):
    check_op(lambda x: triangle(x, k), x)


@given(x=arrays(hnp.array_shapes(min_dims=1, max_dims=2, max_side=4)), k=st.integers(-3, 3))
def test_diag_and_diagflat(x, k):
    """A vector becomes a diagonal matrix (written into zeros); a matrix gives its diagonal."""
    if x.ndim == 2:
        k = min(max(k, -x.shape[0] + 1), x.shape[1] - 1)
    check_op(lambda x: np.diag(x, k), x)
    check_op(lambda x: np.diagflat(x, k), x)


def test_diag_of_a_matrix_is_a_view():
    def f(x):
        d = np.diag(x)
        assert d.base is x or d.base is x.base
        return d * 2.0

    check_op(f, np.arange(9.0).reshape(3, 3))


# -- partition -------------------------------------------------------------------


@given(data=st.data())
def test_partition(data):
    x = data.draw(arrays(elements=GRID, unique=True), label="x")
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)), label="axis")
    length = x.size if axis is None else x.shape[axis]
    kth = data.draw(
        st.one_of(st.integers(-length, length - 1),
                  st.lists(st.integers(0, length - 1), min_size=1, max_size=2, unique=True)),
        label="kth",
    )  # fmt: skip
    check_op(lambda x: np.partition(x, kth, axis=axis), x)


def test_partition_with_ties_gives_numpy_values():
    """Tied values may come from either source: each output still has exactly one source."""
    x = np.array([[2.0, 1.0, 2.0, 0.5, 1.0], [3.0, 3.0, 3.0, -1.0, 0.0]])
    w = weights(x.shape)
    for kth in (0, 2, 4):
        expected = np.partition(x, kth)
        (_, got), (g,) = mutagrad.withgradient(
            lambda x, kth=kth: (np.sum(np.partition(x, kth) * w), np.partition(x, kth)), x
        )
        np.testing.assert_array_equal(got, expected, strict=True)
        np.testing.assert_array_equal(np.sort(g, axis=1), np.sort(w, axis=1))
        np.testing.assert_allclose(np.sum(g * x, axis=1), np.sum(w * expected, axis=1))


def test_partition_of_structured_arrays_is_refused():
    def f(x):
        return np.partition(x, 1, order="a")

    with pytest.raises(mutagrad.NotDifferentiableError, match="order="):
        mutagrad.gradient(lambda x: np.sum(f(x)), np.ones(3))


# -- pad -------------------------------------------------------------------------

MODES = ["constant", "edge", "wrap", "reflect", "symmetric", "linear_ramp", "mean", "maximum",
         "minimum", "median"]  # fmt: skip


@st.composite
def pad_widths(draw, ndim):
    """np.pad's pad_width in each of its forms: one int, one pair, or a pair per axis."""
    width = st.integers(0, 4)
    form = draw(st.sampled_from(["int", "pair", "per axis"]))
    if form == "int":
        return draw(width)
    if form == "pair":
        return (draw(width), draw(width))
    return tuple((draw(width), draw(width)) for _ in range(ndim))


@st.composite
def pad_options(draw, mode, ndim):
    if mode in ("reflect", "symmetric"):
        return {"reflect_type": draw(st.sampled_from(["even", "odd"]))}
    if mode in ("mean", "maximum", "minimum", "median") and draw(st.booleans()):
        lengths = st.integers(1, 4)
        return {"stat_length": draw(st.one_of(lengths, st.tuples(lengths, lengths)))}
    if mode == "constant" and draw(st.booleans()):
        return {"constant_values": draw(floats(-2, 2))}
    if mode == "linear_ramp" and draw(st.booleans()):
        return {"end_values": ((draw(floats(-2, 2)), draw(floats(-2, 2))),) * ndim}
    return {}


PRIMES = np.array([p for p in range(2, 200) if all(p % d for d in range(2, p))], dtype=float)


def irrational_jitter(shape):
    """Tiny offsets with no rational relation (square roots of distinct primes).

    Added to distinct grid values, they keep every mean of two elements (the
    median pad of an even window) distinct from every other, so no median of
    medians sits on a tie, where it has a kink.
    """
    n = int(np.prod(shape, dtype=np.int64))
    return np.sqrt(PRIMES[:n]).reshape(shape) * 1e-3


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data())
def test_pad(mode, data):
    x = data.draw(arrays(elements=GRID, unique=True), label="x")
    x = x + irrational_jitter(x.shape)
    widths = data.draw(pad_widths(x.ndim), label="pad_width")
    options = data.draw(pad_options(mode, x.ndim), label="options")
    # The selection modes have kinks where two candidates tie; the jitter keeps drawn
    # inputs off them, but not by more than the step of second-order differences.
    order = 1 if mode in SELECTING_MODES else 2
    check_op(lambda x: np.pad(x, widths, mode, **options), x, order=order)


SELECTING_MODES = ("maximum", "minimum", "median")


@pytest.mark.parametrize("mode", SELECTING_MODES)
def test_pad_selecting_modes_at_second_order(mode):
    x = np.array([[0.1, 1.3, -0.9], [2.2, -1.7, 0.6]])  # every candidate far from every other
    check_op(lambda x: np.pad(x, 2, mode), x, order=2)


@given(x=arrays(elements=GRID))
def test_pad_empty_mode(x):
    """The pads of mode 'empty' are uninitialised (no value to compare); the rest has slope 1."""
    inside = tuple(slice(1, 1 + n) for n in x.shape)
    check_op(lambda x: np.pad(x, 1, "empty")[inside], x)


@given(data=st.data())
def test_pad_with_traced_values(data):
    """Gradients of constant_values and end_values, in every form np.pad accepts."""
    x = data.draw(arrays(hnp.array_shapes(min_dims=1, max_dims=2, max_side=3)), label="x")
    widths = data.draw(pad_widths(x.ndim), label="pad_width")
    mode, key = data.draw(
        st.sampled_from([("constant", "constant_values"), ("linear_ramp", "end_values")])
    )
    value_shape = data.draw(st.sampled_from([(), (1,), (2,), (1, 2), (x.ndim, 1), (x.ndim, 2)]))
    values = data.draw(arrays(value_shape, floats(-2, 2)), label="values")
    check_op(lambda x, v: np.pad(x, widths, mode, **{key: v}), x, values)
    # np.pad dispatches on its first argument only: a constant array that
    # mutagrad sees is a WrappedArray (a raw one would convert v to a raw array).
    constant = mutagrad.asarray(x)
    check_op(lambda v: np.pad(constant, widths, mode, **{key: v}), values, order=1)


def test_pad_corners_belong_to_the_last_axis():
    """numpy pads axis 0 first, then axis 1 over everything: corners hold axis 1's value."""
    x, values = mutagrad.asarray(np.ones((2, 2))), np.array([[1.0, 2.0], [3.0, 4.0]])
    (g,) = mutagrad.gradient(lambda v: np.sum(np.pad(x, 1, constant_values=v)), values)
    np.testing.assert_array_equal(g, [[2.0, 2.0], [4.0, 4.0]])


def test_pad_of_a_singleton_axis_in_reflect_mode():
    """numpy's legacy rule: reflecting a length-1 axis repeats its edge."""
    check_op(lambda x: np.pad(x, ((2, 3), (1, 1)), "reflect"), np.array([[1.0, 2.0, 4.0]]))


def test_pad_with_a_function_is_refused_on_traced_arrays():
    def pad_with(vector, width, axis, kwargs):
        vector[: width[0]] = 1.0

    with pytest.raises(mutagrad.NotDifferentiableError, match=r"np\.pad with a function"):
        mutagrad.gradient(lambda x: np.sum(np.pad(x, 1, pad_with)), np.ones(2))
    # On constants it runs as in numpy.
    padded = np.pad(mutagrad.asarray(np.ones(2)), 1, pad_with)
    np.testing.assert_array_equal(padded, np.pad(np.ones(2), 1, pad_with))


def test_pad_by_hand():
    x = np.array([1.0, 2.0, 3.0])
    (g,) = mutagrad.gradient(lambda x: np.sum(np.pad(x, (2, 1), "reflect")), x)
    np.testing.assert_array_equal(g, [1.0, 3.0, 2.0])  # [3, 2, 1, 2, 3, 2]
    (g,) = mutagrad.gradient(lambda x: np.sum(np.pad(x, 2, "mean", stat_length=2)), x)
    np.testing.assert_array_equal(g, [2.0, 3.0, 2.0])


# -- coverage ------------------------------------------------------------------


TESTED = {
    np.tile,
    np.repeat,
    np.roll,
    np.resize,
    np.take,
    np.partition,
    np.pad,
    np.compress,
    np.choose,
    np.delete,
    np.insert,
    np.append,
    np.tril,
    np.triu,
    np.diag,
    np.diagflat,
}


def test_every_rule_of_the_module_is_tested():
    registered = rules_defined_in("mutagrad.rules.rearrange")
    assert registered, "found no rules: did the registry change?"
    missing = {getattr(r, "__name__", repr(r)) for r in registered - TESTED}
    assert not missing, f"rules without a test: {sorted(missing)}"
