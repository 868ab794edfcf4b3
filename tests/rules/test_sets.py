"""Rules of mutagrad/rules/sets.py (np.unique, unique_values, unique_counts, unique_inverse,
unique_all), and numpy's union1d, intersect1d, setdiff1d and setxor1d traced through
(mutagrad/rules/numpy_source.py), which reach np.unique's rule.

* Values on traced arrays are numpy's, bit for bit (signed zeros, NaNs), with
  numpy's dtype, order and integer outputs, over inputs full of duplicates
  and NaNs, every keyword, axis None or an int, 0-d and 0-size inputs,
  float64, float32 and integers; named tuples are numpy's types.
* On inputs without ties gradients and Hessian-vector products match finite
  differences. With ties the functions have no derivative, and the
  documented convention is checked: a value's gradient goes to its first
  occurrence (in ``ar1`` before ``ar2`` for the set functions), computed
  here by a plain loop.
* Writing into the input after the call leaves the gradient right.
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
from mutagrad.testing.finite_differences import numerical_gradient
from numpy_compat import UNIQUE_TAKES_SORTED

check_op = functools.partial(rule_checks.check_op, order=2, quadratic=True)

UNIQUE_FUNCTIONS = (np.unique, np.unique_values, np.unique_counts, np.unique_inverse, np.unique_all)
SET_FUNCTIONS = (np.union1d, np.intersect1d, np.setdiff1d, np.setxor1d)

# -- helpers -------------------------------------------------------------------

# Few distinct values, so duplicates are common; zeros of both signs and NaN.
TIED = st.sampled_from([-1.5, -0.0, 0.0, 0.25, 1.0, 2.0, np.nan])
TIED_NO_NAN = st.sampled_from([-1.5, -0.0, 0.0, 0.25, 1.0, 2.0])
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
DTYPES = st.sampled_from([np.float64, np.float32, np.int64])
# Distinct values: no ties, so the functions are differentiable.
GRID = st.integers(-40, 40).map(lambda k: k / 8 + 0.05)
DISTINCT = hnp.arrays(
    np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), elements=GRID, unique=True
)


@st.composite
def tied_arrays(draw, dtype=DTYPES, shape=SHAPES, elements=TIED):
    dtype = np.dtype(draw(dtype))
    if dtype.kind == "i":
        elements = st.integers(-3, 3)
    return draw(hnp.arrays(dtype, draw(shape), elements=elements))


@st.composite
def unique_keywords(draw, ndim):
    axes = [None, *range(-ndim, ndim)]
    return {
        "return_index": draw(st.booleans()),
        "return_inverse": draw(st.booleans()),
        "return_counts": draw(st.booleans()),
        "axis": draw(st.sampled_from(axes)),
        "equal_nan": draw(st.booleans()),
        **({"sorted": draw(st.booleans())} if UNIQUE_TAKES_SORTED else {}),
    }


def on_traced(function, *arrays):
    """``function(*arrays)`` on traced arrays (a constant one for integers), inside a
    gradient call: its result as the call hands it back, and the types ``function``'s
    caller saw (the values traced, everything else numpy's)."""
    seen = {}

    def loss(*ps):
        ts = [p if a.dtype.kind == "f" else mutagrad.asarray(a) for p, a in zip(ps, arrays)]
        out = function(*ts)
        items = out if isinstance(out, tuple) else (out,)
        seen["types"] = (type(out), *(type(v) for v in items))
        return np.sum(ps[0]) * 0.0, out

    floats = [a if a.dtype.kind == "f" else a.astype(np.float64) for a in arrays]
    return mutagrad.withgradient(loss, *floats).val[1], seen["types"]


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def assert_same(got, want):
    """Equal results: the same tuple type, and each array equal in shape, dtype and bits."""
    assert type(got) is type(want)
    for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
        np.testing.assert_array_equal(g, w, strict=True)
        np.testing.assert_array_equal(bits(g), bits(w))


def assert_same_as_numpy(function, *arrays):
    try:
        want = function(*[a.copy() for a in arrays])
    except Exception as error:  # numpy's own error, raised the same on traced arrays
        with pytest.raises(type(error)):
            on_traced(function, *arrays)
        return None
    got, types = on_traced(function, *arrays)
    assert_same(got, want)
    return want, types


def dense(gradients, *args):
    """Gradients with zeros for None (an argument the result does not depend on)."""
    return [np.zeros_like(a) if g is None else g for g, a in zip(gradients, args)]


def same_value(a, b):
    """Whether input element (or slice) ``b`` holds the unique value ``a`` (NaN holds NaN)."""
    return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def first_occurrence_gradient(values, candidates, weight):
    """The gradient of ``sum(weight * values)`` under the convention, by a plain loop.

    ``candidates`` are the input's elements (or slices) in order; each value's
    weight goes to the first one holding it that no earlier value took (a value
    is taken twice only as NaN, each NaN a value of its own with equal_nan=False).
    """
    gradient = np.zeros((len(candidates), *np.shape(weight)[1:]))
    taken = set()
    for k, value in enumerate(values):
        i = next(i for i, c in enumerate(candidates) if i not in taken and same_value(value, c))
        taken.add(i)
        gradient[i] += weight[k]
    return gradient


# -- values equal numpy's ------------------------------------------------------


@given(data=st.data())
def test_unique_values_and_integer_outputs_are_numpy_s(data):
    x = data.draw(tied_arrays(), label="x")
    kwargs = data.draw(unique_keywords(x.ndim), label="kwargs")
    found = assert_same_as_numpy(lambda x: np.unique(x, **kwargs), x)
    if found is not None:
        want, types = found
        several = isinstance(want, tuple)
        assert types[0] is (tuple if several else mutagrad.WrappedArray)
        if several:  # the values traced, numpy's own integer arrays beside them
            assert types[1] is mutagrad.WrappedArray
            assert all(t is np.ndarray for t in types[2:])


@pytest.mark.parametrize("function", UNIQUE_FUNCTIONS[1:], ids=lambda f: f.__name__)
@given(data=st.data())
def test_array_api_unique_functions_are_numpy_s(function, data):
    x = data.draw(tied_arrays(), label="x")
    want, types = assert_same_as_numpy(function, x)
    if function is np.unique_values:
        assert types == (mutagrad.WrappedArray, mutagrad.WrappedArray)
    else:  # numpy's named tuple, its values traced
        assert types[0] is type(want) and types[0] is not tuple
        assert types[1] is mutagrad.WrappedArray
        assert all(t is np.ndarray for t in types[2:])


@pytest.mark.skipif(not UNIQUE_TAKES_SORTED, reason="np.unique has no sorted= (numpy < 2.3)")
def test_unique_values_is_not_sorted_when_numpy_s_is_not():
    """numpy 2.4's unique_values (a hash table, sorted=False) may keep any order: its own."""
    x = np.random.default_rng(3).integers(0, 500, 400).astype(np.float64)
    assert_same_as_numpy(np.unique_values, x)
    assert_same_as_numpy(lambda x: np.unique(x, sorted=False), x)
    with_nan = np.append(x, [np.nan, np.nan])
    assert_same_as_numpy(lambda x: np.unique(x, sorted=False, equal_nan=False), with_nan)


def test_nans_and_signed_zeros_keep_numpy_s_bits():
    """numpy's hash table gives NaNs its own bits, and may keep -0.0 where 0.0 came first."""
    rng = np.random.default_rng(0)
    negative_nan = -np.nan
    for _ in range(20):
        x = rng.choice([0.0, -0.0, 1.0, np.nan, negative_nan], size=rng.integers(1, 300))
        for function in (
            np.unique,
            np.unique_values,
            np.unique_all,
            lambda x: np.unique(x, equal_nan=False),
            lambda x: np.unique(x, return_inverse=True),
            *([lambda x: np.unique(x, sorted=False)] if UNIQUE_TAKES_SORTED else []),
        ):
            assert_same_as_numpy(function, x)


def test_axis_values_are_numpy_s():
    x = np.array([[1.0, 2.0, 1.0, 2.0], [0.0, np.nan, -0.0, np.nan], [3.0, 3.0, 3.0, 3.0]])
    for axis in (0, 1, -1, None):
        for equal_nan in (True, False):
            kwargs = {"axis": axis, "equal_nan": equal_nan}
            assert_same_as_numpy(lambda x, kw=kwargs: np.unique(x, True, True, True, **kw), x)
    for shape, axis in [((0, 3), 0), ((0, 3), 1), ((3, 0), 0), ((3, 0), 1), ((2, 0, 2), 2)]:
        empty = np.ones(shape)
        assert_same_as_numpy(lambda x, a=axis: np.unique(x, return_counts=True, axis=a), empty)


def test_numpy_s_errors_are_raised():
    scalar = np.array(2.0)
    assert assert_same_as_numpy(lambda x: np.unique(x, axis=0), scalar) is None
    assert assert_same_as_numpy(lambda x: np.unique(x, axis=2), np.ones((2, 2))) is None
    with pytest.raises(np.exceptions.AxisError):
        on_traced(lambda x: np.unique(x, axis=-3), np.ones((2, 2)))


# -- gradients: no ties --------------------------------------------------------


@given(data=st.data())
def test_unique_gradient(data):
    x = data.draw(DISTINCT, label="x")
    axis = data.draw(st.sampled_from([None, *range(-x.ndim, x.ndim)]), label="axis")
    flags = data.draw(st.lists(st.booleans(), min_size=3, max_size=3), label="flags")
    equal_nan = data.draw(st.booleans(), label="equal_nan")

    def values(x):
        result = np.unique(x, *flags, axis=axis, equal_nan=equal_nan)
        return result[0] if isinstance(result, tuple) else result

    check_op(values, x)


@given(x=DISTINCT)
def test_unique_inverse_rebuilds_the_input(x):
    """``u[inverse]`` (numpy's integer output indexing the traced values) is ``x`` again."""

    def rebuilt(x):
        u, inverse = np.unique(x, return_inverse=True)
        return u[inverse]

    check_op(rebuilt, x)
    check_op(lambda x: np.take(*np.unique(x, return_inverse=True, axis=0), axis=0), x)


@pytest.mark.parametrize("function", UNIQUE_FUNCTIONS[1:], ids=lambda f: f.__name__)
@given(x=DISTINCT)
def test_array_api_unique_gradient(function, x):
    if function is np.unique_values:
        check_op(function, x)
    else:
        check_op(lambda x: function(x).values, x)


def test_gradient_against_numerical_gradient_by_hand():
    x = np.array([[0.7, -0.2, 1.3], [0.4, 2.1, -1.1]])
    w = weights((6,))

    def loss(x):
        return np.sum(np.unique(x) * w)

    (g,) = mutagrad.gradient(loss, x)
    np.testing.assert_allclose(g, numerical_gradient(loss, x)[0], rtol=1e-7)
    # sorted: -1.1, -0.2, 0.4, 0.7, 1.3, 2.1
    np.testing.assert_array_equal(g, [[w[3], w[1], w[4]], [w[2], w[5], w[0]]])


PAIRS = st.integers(1, 6).flatmap(
    lambda n: hnp.arrays(np.float64, 2 * n, elements=GRID, unique=True).map(
        lambda v: (v[:n].copy(), v[n:].copy())
    )
)


@given(pair=PAIRS, assume_unique=st.booleans())
def test_set_functions_gradient_without_common_values(pair, assume_unique):
    """Disjoint, tie-free arrays: union and xor sort both, setdiff keeps ar1."""
    x, y = pair
    check_op(np.union1d, x, y)
    check_op(lambda x, y: np.setdiff1d(x, y, assume_unique=assume_unique), x, y)
    check_op(lambda x, y: np.setxor1d(x, y, assume_unique=assume_unique), x, y)
    check_op(lambda x, y: np.intersect1d(x, y, assume_unique=assume_unique), x, y)  # empty


@st.composite
def shared(draw):
    """Distinct parameters ``p`` and positions: ``x = p[ix]`` and ``y = p[iy]`` share values
    by construction, so common values stay common under any perturbation of ``p``."""
    p = draw(hnp.arrays(np.float64, draw(st.integers(1, 6)), elements=GRID, unique=True))
    positions = st.lists(st.integers(0, p.size - 1), min_size=1, max_size=6)
    return p, np.array(draw(positions)), np.array(draw(positions))


@given(case=shared(), assume_unique=st.booleans())
def test_set_functions_gradient_with_common_values(case, assume_unique):
    """Ties between the arrays that move together: the set functions are smooth in ``p``."""
    p, ix, iy = case
    if assume_unique:
        ix, iy = np.unique(ix), np.unique(iy)
    flags = {"assume_unique": assume_unique}
    check_op(lambda p: np.union1d(p[ix], p[iy]), p)
    check_op(lambda p: np.intersect1d(p[ix], p[iy], **flags), p)
    check_op(lambda p: np.intersect1d(p[ix], p[iy], return_indices=True, **flags)[0], p)
    check_op(lambda p: np.setdiff1d(p[ix], p[iy], **flags), p)
    check_op(lambda p: np.setxor1d(p[ix], p[iy], **flags), p)


# -- the convention: ties go to the first occurrence ---------------------------


@given(data=st.data())
def test_tied_values_take_their_gradient_from_the_first_occurrence(data):
    x = data.draw(tied_arrays(dtype=st.sampled_from([np.float64, np.float32])), label="x")
    kwargs = data.draw(unique_keywords(x.ndim), label="kwargs")
    try:
        result = np.unique(x.copy(), **kwargs)
    except Exception:
        return  # numpy refuses (checked above)
    values = result[0] if isinstance(result, tuple) else result
    w = weights(values.shape).astype(x.dtype)

    def loss(x):  # NaN where a value is NaN; its gradient is still w
        result = np.unique(x, **kwargs)
        return np.sum((result[0] if isinstance(result, tuple) else result) * w)

    (g,) = mutagrad.gradient(loss, x)
    axis = kwargs["axis"]
    if axis is None or x.ndim == 1:
        expected = first_occurrence_gradient(values.ravel(), x.ravel(), w.ravel())
        np.testing.assert_array_equal(g, expected.reshape(x.shape))
    else:  # slices along the axis: each one's weights go to the first equal slice
        move = functools.partial(np.moveaxis, source=axis, destination=0)
        expected = first_occurrence_gradient(move(values), move(x), move(w))
        np.testing.assert_array_equal(g, np.moveaxis(expected, 0, axis))


@pytest.mark.parametrize("function", UNIQUE_FUNCTIONS[1:], ids=lambda f: f.__name__)
@given(x=tied_arrays(dtype=st.just(np.float64)))
def test_array_api_ties_take_the_first_occurrence(function, x):
    """equal_nan=False: every NaN is its own value, the k-th from the k-th NaN."""
    values = np.unique_values(x.copy()) if function is np.unique_values else function(x).values
    w = weights(values.shape)

    def loss(x):
        out = function(x)
        return np.sum((out if function is np.unique_values else out.values) * w)

    (g,) = mutagrad.gradient(loss, x)
    expected = first_occurrence_gradient(values, x.ravel(), w)
    np.testing.assert_array_equal(g, expected.reshape(x.shape))


def test_ties_by_hand():
    x = np.array([2.0, -0.0, np.nan, 2.0, 0.0, np.nan, 1.0])
    w = np.array([1.0, 10.0, 100.0, 1000.0])

    def loss(x):
        return np.sum(np.unique(x) * w)  # -0.0, 1.0, 2.0, nan: from x[1], x[6], x[0], x[2]

    np.testing.assert_array_equal(
        mutagrad.gradient(loss, x)[0], [100.0, 1.0, 1000.0, 0.0, 0.0, 0.0, 10.0]
    )
    # equal_nan=False: each NaN is a value, from its own element
    w = np.array([1.0, 10.0, 100.0, 1000.0, 1e4])
    (g,) = mutagrad.gradient(lambda x: np.sum(np.unique(x, equal_nan=False) * w), x)
    np.testing.assert_array_equal(g, [100.0, 1.0, 1000.0, 0.0, 0.0, 1e4, 10.0])
    # rows: the first of two equal rows
    m = np.array([[1.0, 2.0], [0.5, 3.0], [1.0, 2.0]])
    (g,) = mutagrad.gradient(lambda m: np.sum(np.unique(m, axis=0) * [[1.0, 2.0], [3.0, 4.0]]), m)
    np.testing.assert_array_equal(g, [[3.0, 4.0], [1.0, 2.0], [0.0, 0.0]])


@given(
    x=tied_arrays(dtype=st.just(np.float64), elements=TIED_NO_NAN),
    y=tied_arrays(dtype=st.just(np.float64), elements=TIED_NO_NAN),
    function=st.sampled_from(SET_FUNCTIONS),
)
def test_set_functions_take_ties_from_the_first_occurrence_in_ar1_then_ar2(x, y, function):
    values = function(x.copy(), y.copy())
    w = weights(values.shape)

    def loss(x, y):
        return np.sum(function(x, y) * w)

    gx, gy = dense(mutagrad.gradient(loss, x, y), x, y)
    expected = first_occurrence_gradient(values, np.concatenate([x.ravel(), y.ravel()]), w)
    np.testing.assert_array_equal(gx, expected[: x.size].reshape(x.shape))
    np.testing.assert_array_equal(gy, expected[x.size :].reshape(y.shape))


def test_set_functions_ties_by_hand():
    x = np.array([3.0, 1.0, 3.0, 0.0])
    y = np.array([1.0, -0.0, 5.0, 3.0])

    def gradients(function, w):
        return dense(mutagrad.gradient(lambda x, y: np.sum(function(x, y) * w), x, y), x, y)

    # union: 0.0 1.0 3.0 5.0, each from x where x has it
    g = gradients(np.union1d, np.array([1.0, 10.0, 100.0, 1000.0]))
    np.testing.assert_array_equal(g[0], [100.0, 10.0, 0.0, 1.0])
    np.testing.assert_array_equal(g[1], [0.0, 0.0, 1000.0, 0.0])
    # intersection: 0.0 1.0 3.0, all from x; numpy's zero keeps its own sign
    g = gradients(np.intersect1d, np.array([1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(g[0], [100.0, 10.0, 0.0, 1.0])
    np.testing.assert_array_equal(g[1], [0.0, 0.0, 0.0, 0.0])
    g = gradients(lambda x, y: np.setdiff1d(x, y[2:]), np.array([1.0, 10.0]))  # 0.0 1.0
    np.testing.assert_array_equal(g[0], [0.0, 10.0, 0.0, 1.0])
    g = gradients(lambda x, y: np.setxor1d(x, y[1:3]), np.array([1.0, 10.0, 100.0]))  # 1 3 5
    np.testing.assert_array_equal(g[0], [10.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(g[1], [0.0, 0.0, 100.0, 0.0])


# -- set functions: values equal numpy's ---------------------------------------

SET_CALLS = {
    "union1d": np.union1d,
    "intersect1d": np.intersect1d,
    "intersect1d assume_unique": lambda x, y: np.intersect1d(x, y, assume_unique=True),
    "intersect1d return_indices": lambda x, y: np.intersect1d(x, y, return_indices=True),
    "intersect1d both": lambda x, y: np.intersect1d(x, y, True, True),
    "setdiff1d": np.setdiff1d,
    "setdiff1d assume_unique": lambda x, y: np.setdiff1d(x, y, assume_unique=True),
    "setxor1d": np.setxor1d,
    "setxor1d assume_unique": lambda x, y: np.setxor1d(x, y, assume_unique=True),
}


@pytest.mark.parametrize("call", SET_CALLS.values(), ids=SET_CALLS.keys())
@given(x=tied_arrays(), y=tied_arrays())
def test_set_functions_values_are_numpy_s(call, x, y):
    found = assert_same_as_numpy(call, x, y)
    if found is not None:
        assert found[1][1] is mutagrad.WrappedArray  # the values: traced


@pytest.mark.parametrize("call", SET_CALLS.values(), ids=SET_CALLS.keys())
def test_set_functions_values_on_large_arrays(call):
    """numpy's other paths: its sort-based isin (ar2 long) and its integer table."""
    rng = np.random.default_rng(1)
    for x, y in [
        (rng.integers(0, 40, 50).astype(float), rng.integers(0, 40, 3000).astype(float)),
        (rng.integers(0, 40, 300), rng.integers(0, 40, 200)),
        (rng.integers(-3, 3, 200) * 0.0, rng.integers(-3, 3, 100) * -0.0),  # signed zeros
        (rng.integers(0, 9, 100).astype(np.float32), rng.integers(0, 9, 50).astype(np.float32)),
    ]:
        assert_same_as_numpy(call, x, y)


# -- second order --------------------------------------------------------------


def test_second_order():
    x = np.array([[0.7, -0.2, 1.3], [0.4, 2.1, -1.1]])
    check_op(lambda x: np.unique(x, return_index=True, axis=1)[0] ** 2, x)
    check_op(lambda x: np.unique_all(x).values * np.unique_counts(x[::-1]).values, x)
    check_op(lambda x: np.union1d(x[0], x[1] ** 2), x)
    check_op(lambda x: np.intersect1d(x[0], x.ravel()[1:4], return_indices=True)[0] ** 3, x)
    check_op(lambda x: np.setxor1d(x[0], x[1, :1])[:3] * np.setdiff1d(x[1], x[0]), x)


# -- writes after the call -----------------------------------------------------

CALLS = {
    "unique": np.unique,
    "unique axis=0": lambda x: np.unique(x, return_inverse=True, axis=0)[0].ravel(),
    "unique_values": np.unique_values,
    "unique_all": lambda x: np.unique_all(x).values,
    "union1d": lambda x: np.union1d(x[0], x[1]),
    "intersect1d": lambda x: np.intersect1d(x[0], x[1]),
    "setdiff1d": lambda x: np.setdiff1d(x[0], x[1]),
    "setxor1d": lambda x: np.setxor1d(x[0], x[1], assume_unique=True),
}
TIED_MATRIX = np.array([[0.5, -1.0, 0.5, 2.0], [2.0, 0.25, -1.0, 3.0]])
# A write into the argument, and the derivative of the sum of what it leaves there.
WRITES = {
    "x[...] = 0": (lambda x: x.__setitem__(Ellipsis, 0.0), 0.0),
    "x *= 2": (lambda x: x.__imul__(2.0), 2.0),
    "x.sort()": (lambda x: x.sort(), 1.0),
}


@pytest.mark.parametrize(("write", "slope"), WRITES.values(), ids=WRITES.keys())
@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
@pytest.mark.parametrize("mode", ["poison", "snapshot"])
def test_writing_into_the_input_after_the_call(call, write, slope, mode):
    """The gradient is the one without the write, plus the written values' own; or,
    in poison mode, a PoisonedCaptureError: never another number."""
    w = weights(call(TIED_MATRIX.copy()).shape)

    def overwritten(x):
        loss = np.sum(call(x) * w)
        write(x)  # the argument itself, after every rule has run
        return loss + np.sum(x)

    (expected,) = mutagrad.gradient(lambda x: np.sum(call(x) * w), TIED_MATRIX)
    try:
        (g,) = mutagrad.gradient(overwritten, TIED_MATRIX, mode=mode)
    except mutagrad.PoisonedCaptureError:
        assert mode == "poison"
        return
    np.testing.assert_array_equal(g, expected + slope)


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_the_pullback_reads_nothing_of_the_input(call):
    """Nothing saved: overwriting a copy of the input after the call, whatever was
    computed from it, changes nothing in poison mode either."""
    w = weights(call(TIED_MATRIX.copy()).shape)

    def overwritten(x):
        y = x * 2.0
        loss = np.sum(call(y) * w)
        y[...] = 7.0
        y *= 3.0
        return loss

    (expected,) = mutagrad.gradient(lambda x: np.sum(call(x * 2.0) * w), TIED_MATRIX)
    (g,) = mutagrad.gradient(overwritten, TIED_MATRIX)
    np.testing.assert_array_equal(g, expected)


# -- the module's rules are all tested -----------------------------------------


def test_int_inputs_carry_no_gradient():
    x = np.array([3, 1, 3, 2])

    def loss(p):
        values = np.unique(mutagrad.asarray(x) + (p > 0).astype(np.int64))
        assert values.dtype == np.int64
        return np.sum(p) + np.sum(values) * 0.0

    np.testing.assert_array_equal(mutagrad.gradient(loss, np.ones(4))[0], np.ones(4))


def test_every_rule_is_tested():
    assert rules_defined_in("mutagrad.rules.sets") == set(UNIQUE_FUNCTIONS)
