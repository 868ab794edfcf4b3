"""Rules of mutagrad/rules/shape.py: views (reshape, ravel, transpose, swapaxes, moveaxis,
rollaxis, squeeze, expand_dims, diagonal, broadcast_to, broadcast_arrays, flip, fliplr,
flipud, rot90, matrix_transpose, real, real_if_close, atleast_1d/2d/3d, ``x.view()``,
``x.T``) and copies (reshape/ravel of non-contiguous arrays, copy, astype, concatenate,
stack, block, column_stack, meshgrid); the split family, traced through.

Values on WrappedArrays equal numpy's and gradients match finite differences.
Inputs are also made non-contiguous (transposed, reversed, strided) so that
reshape and ravel take both their view path and their copy path, in every
index order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rule_checks import check_op, rules_defined_in

import mutagrad
from mutagrad.core.registry import FUNCTION_RULES
from mutagrad.testing import check_gradient

# -- helpers -------------------------------------------------------------------


ELEMENTS = st.floats(-3, 3, allow_nan=False, allow_infinity=False, allow_subnormal=False)
SIDES = st.integers(1, 3)


SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, max_side=3)


def arrays(shape=SHAPES):
    return hnp.arrays(np.float64, shape, elements=ELEMENTS)


def arrays_with_ndim(lo, hi=3):
    return arrays(hnp.array_shapes(min_dims=lo, max_dims=hi, max_side=3))


# Views of the traced input with other memory layouts (each is itself a view rule).
LAYOUTS = {
    "contiguous": lambda x: x,
    "transposed": np.transpose,
    "reversed": np.flip,
    "strided": lambda x: x[..., ::2] if np.ndim(x) else x,
}
LAYOUT_NAMES = st.sampled_from(sorted(LAYOUTS))


@st.composite
def new_shapes(draw, size):
    """A shape with ``size`` elements, maybe with a 1 and maybe with one -1."""
    dims, rest = [], size
    while rest > 1:
        d = draw(st.sampled_from([d for d in range(2, rest + 1) if rest % d == 0]))
        dims.append(d)
        rest //= d
    dims += [1] * draw(st.integers(0, 1))
    dims = list(draw(st.permutations(dims)))
    if dims and draw(st.booleans()):
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return tuple(dims)


# -- reshape and ravel ---------------------------------------------------------


@given(data=st.data())
def test_reshape(data):
    x = data.draw(arrays(), label="x")
    layout = LAYOUTS[data.draw(LAYOUT_NAMES, label="layout")]
    size = np.size(layout(x))
    shape = data.draw(new_shapes(size), label="shape")
    order = data.draw(st.sampled_from(["C", "F", "A"]), label="order")
    check_op(lambda x: np.reshape(layout(x), shape, order=order), x)
    check_op(lambda x: np.reshape(layout(x), shape, order), x)  # order by position
    if np.ndim(x):
        check_op(lambda x: layout(x).reshape(shape, order=order), x)
    if np.ndim(x) and shape:
        check_op(lambda x: layout(x).reshape(*shape), x)


@given(data=st.data())
def test_ravel(data):
    x = data.draw(arrays(), label="x")
    layout = LAYOUTS[data.draw(LAYOUT_NAMES, label="layout")]
    order = data.draw(st.sampled_from(["C", "F", "A", "K"]), label="order")
    check_op(lambda x: np.ravel(layout(x), order=order), x)
    check_op(lambda x: np.ravel(layout(x), order), x)  # order by position
    if np.ndim(x):
        check_op(lambda x: layout(x).ravel(order), x)


def test_ravel_in_memory_order_of_a_reversed_transposed_array():
    x = np.arange(12.0).reshape(3, 4)
    check_op(lambda x: np.ravel(x.T[::-1, ::2], order="K"), x)
    check_op(lambda x: np.ravel(x[::-1, ::2].T, order="K"), x)


# -- axis permutations ---------------------------------------------------------


@given(data=st.data())
def test_transpose(data):
    x = data.draw(arrays(), label="x")
    axes = data.draw(st.permutations(range(x.ndim)), label="axes")
    check_op(np.transpose, x)
    check_op(lambda x: np.transpose(x, axes), x)
    if x.ndim:
        check_op(lambda x: x.T, x)
        check_op(lambda x: x.transpose(axes), x)
        check_op(lambda x: x.transpose(*axes), x)
    if x.ndim >= 2:
        check_op(lambda x: x.mT, x)


@given(data=st.data())
def test_swapaxes(data):
    x = data.draw(arrays_with_ndim(1), label="x")
    axis = st.integers(-x.ndim, x.ndim - 1)
    a1, a2 = data.draw(axis, label="axis1"), data.draw(axis, label="axis2")
    check_op(lambda x: np.swapaxes(x, a1, a2), x)
    check_op(lambda x: x.swapaxes(a1, a2), x)


@given(data=st.data())
def test_moveaxis(data):
    x = data.draw(arrays_with_ndim(1), label="x")
    k = data.draw(st.integers(1, x.ndim), label="how many")
    source = data.draw(st.permutations(range(x.ndim)), label="source")[:k]
    destination = data.draw(st.permutations(range(-x.ndim, 0)), label="destination")[:k]
    check_op(lambda x: np.moveaxis(x, source, destination), x)
    check_op(lambda x: np.moveaxis(x, source[0], destination[0]), x)


@given(data=st.data())
def test_rollaxis(data):
    x = data.draw(arrays_with_ndim(1), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    start = data.draw(st.integers(-x.ndim, x.ndim), label="start")
    check_op(lambda x: np.rollaxis(x, axis, start), x)
    check_op(lambda x: np.rollaxis(x, axis), x)


# -- adding and removing axes ----------------------------------------------------


@given(data=st.data())
def test_squeeze(data):
    core = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), label="core")
    ones = data.draw(st.integers(1, 2), label="ones")
    shape = tuple(data.draw(st.permutations([*core, *([1] * ones)]), label="shape"))
    x = data.draw(arrays(shape), label="x")
    unit = [i for i, n in enumerate(shape) if n == 1]
    picked = data.draw(st.lists(st.sampled_from(unit), min_size=1, unique=True), label="axes")
    negative = tuple(i - x.ndim for i in picked)
    check_op(np.squeeze, x)
    check_op(lambda x: np.squeeze(x, axis=tuple(picked)), x)
    check_op(lambda x: np.squeeze(x, axis=negative[0]), x)
    check_op(lambda x: x.squeeze(negative), x)


@given(data=st.data())
def test_expand_dims(data):
    x = data.draw(arrays(), label="x")
    k = data.draw(st.integers(1, 2), label="new axes")
    n = x.ndim + k
    axes = tuple(data.draw(st.permutations(range(-n, 0)), label="axes")[:k])
    one = data.draw(st.integers(0, x.ndim), label="one axis")
    check_op(lambda x: np.expand_dims(x, axes), x)
    check_op(lambda x: np.expand_dims(x, one), x)
    if x.ndim:
        check_op(lambda x: x[None, ..., None], x)


ATLEAST = [np.atleast_1d, np.atleast_2d, np.atleast_3d]


@pytest.mark.parametrize("atleast", ATLEAST, ids=[f.__name__ for f in ATLEAST])
@given(x=arrays(), y=arrays(), s=ELEMENTS)
def test_atleast_nd(atleast, x, y, s):
    check_op(atleast, x)
    check_op(atleast, s)  # a Python float
    parts = mutagrad.withgradient(lambda x, y: (np.sum(x), atleast(x, y)), x, y).val[1]
    expected = atleast(x.copy(), y.copy())  # several arrays: a tuple
    assert len(parts) == len(expected) == 2
    for got, want in zip(parts, expected):
        np.testing.assert_array_equal(got, want, strict=True)
    check_op(lambda x, y: atleast(x, y)[0] * np.sum(atleast(x, y)[1]), x, y)


# -- diagonal, broadcast_to, flips, real ---------------------------------------


@given(data=st.data())
def test_diagonal(data):
    x = data.draw(arrays_with_ndim(2), label="x")
    axis1, axis2 = data.draw(st.permutations(range(x.ndim)), label="axes")[:2]
    offset = data.draw(st.integers(-x.shape[axis1] + 1, x.shape[axis2] - 1), label="offset")
    check_op(lambda x: np.diagonal(x, offset, axis1, axis2 - x.ndim), x)
    check_op(lambda x: np.diagonal(x), x)
    check_op(lambda x: x.diagonal(offset=offset, axis1=axis1, axis2=axis2), x)


@given(data=st.data())
def test_broadcast_to(data):
    """A view with zero strides: the cotangent of every repeat adds up."""
    x = data.draw(arrays(), label="x")
    lead = data.draw(st.lists(SIDES, max_size=2), label="new leading sides")
    target = (*lead, *(data.draw(SIDES) if n == 1 else n for n in x.shape))
    check_op(lambda x: np.broadcast_to(x, target), x)


@given(data=st.data())
def test_flip(data):
    x = data.draw(arrays(), label="x")
    choices = [st.none(), hnp.valid_tuple_axes(x.ndim, min_size=1)] if x.ndim else [st.none()]
    if x.ndim:
        choices.append(st.integers(-x.ndim, x.ndim - 1))
    axis = data.draw(st.one_of(choices), label="axis")
    check_op(lambda x: np.flip(x, axis), x)
    if x.ndim >= 1:
        check_op(np.flipud, x)
    if x.ndim >= 2:
        check_op(np.fliplr, x)
        check_op(lambda x: x[::-1, 1::2], x)


@given(data=st.data())
def test_rot90(data):
    x = data.draw(arrays_with_ndim(2), label="x")
    k = data.draw(st.integers(-5, 5), label="k")
    axes = tuple(data.draw(st.permutations(range(x.ndim)), label="axes")[:2])
    check_op(lambda x: np.rot90(x, k, axes), x)
    check_gradient(lambda x: np.sum(np.rot90(x, k, axes) ** 3), x, order=2)


@given(x=arrays_with_ndim(2, 2))
def test_rot90_is_a_view(x):
    def f(x):
        y = x * 1.0
        rotated = np.rot90(y)
        assert rotated.base is y
        rotated[0] = 0.0  # writes y[:, -1], as in numpy
        return y

    check_op(f, x)


def test_an_empty_diagonal_is_a_constant():
    """np.diagonal past the corner is an empty view: nothing to differentiate."""

    def f(x):
        empty = np.diagonal(x, 5)
        assert empty.shape == (0,) and not mutagrad.is_traced(empty)
        return np.sum(x) + np.trace(x, 5)

    np.testing.assert_array_equal(mutagrad.gradient(f, np.ones((2, 2)))[0], np.ones((2, 2)))


@given(x=arrays())
def test_real_of_a_real_array(x):
    check_op(np.real, x)
    check_op(lambda x: x.real * 2.0, x)
    check_op(lambda x: np.real_if_close(x) * 2.0, x, order=2)
    check_op(lambda x: np.imag(x) + x, x)  # zeros, whatever x is


def test_real_if_close_of_a_real_array_is_the_array():
    """As numpy: the argument itself, so a write through the result is a write to it."""

    def f(x):
        y = x * 1.0
        z = np.real_if_close(y)
        assert z is y
        z *= 3.0
        return np.sum(y**2)

    np.testing.assert_allclose(mutagrad.gradient(f, np.array([1.0, 2.0]))[0], [18.0, 36.0])


# The split family is traced through (numpy's Python code slices its input): each piece
# is a view, so a write into a piece is a write into the array split.
SPLITS = {
    "split": lambda x: np.split(x, 2),
    "split at indices": lambda x: np.split(x, [1, 3], axis=1),
    "array_split": lambda x: np.array_split(x, 3, axis=1),
    "hsplit": lambda x: np.hsplit(x, 2),
    "vsplit": lambda x: np.vsplit(x, [1]),
    "dsplit": lambda x: np.dsplit(x, [1]),
    "unstack": lambda x: np.unstack(x, axis=2),
}


@pytest.mark.parametrize("split", SPLITS.values(), ids=list(SPLITS))
@given(x=arrays((2, 4, 2)))
def test_split_family(split, x):
    def pieces_weighted(x):
        return np.concatenate([np.ravel(p) * (i + 1.0) for i, p in enumerate(split(x))])

    check_op(pieces_weighted, x, order=2)


@pytest.mark.parametrize("split", SPLITS.values(), ids=list(SPLITS))
def test_split_pieces_are_views(split):
    def f(x):
        y = x * 1.0
        first = split(y)[0]
        first *= 3.0  # writes into y
        return np.sum(y**2)

    x = np.linspace(0.5, 2.0, 16).reshape(2, 4, 2)
    (g,) = mutagrad.gradient(f, x)
    mask = np.zeros_like(x)
    first = split(mask)[0]
    first += 1.0
    np.testing.assert_allclose(g, 2 * x * np.where(mask == 1, 9.0, 1.0))


@given(x=arrays_with_ndim(1, 1))
def test_view_functions_of_a_traced_scalar(x):
    """x[0] is a WrappedScalar: no memory to view, so numpy copies its value."""
    check_op(lambda x: np.broadcast_to(x[0], (2, 3)), x)
    check_op(lambda x: np.expand_dims(x[-1], 0), x)
    check_op(lambda x: np.transpose(x[0]) * np.squeeze(x[-1]), x)
    check_op(lambda x: np.reshape(x[0], (1, 1)) + np.ravel(x[-1]), x)
    check_op(lambda x: np.flip(x[0]) * np.real(x[-1]), x)
    check_op(lambda x: np.atleast_2d(x[0]) - np.atleast_3d(x[-1]), x)


@given(x=arrays(()))
def test_flip_of_a_0d_array_is_a_scalar(x):
    check_op(np.flip, x)
    check_op(lambda x: np.flip(x * 2.0), x)


# -- views share memory with their base ----------------------------------------


@given(x=arrays_with_ndim(2))
def test_a_write_through_a_view_reaches_the_base(x):
    """Differentiating through writes into transpose/swapaxes/reshape views of a copy."""

    def f(x):
        y = x * 1.0
        np.transpose(y)[0] = np.transpose(y)[-1] * 2.0
        np.swapaxes(y, 0, -1)[..., 0] *= np.flip(x)[0, ..., -1]
        np.reshape(y, -1)[:1] += 3.0 * np.sum(x)
        return y

    check_op(f, x)


@given(x=arrays_with_ndim(1))
def test_view_method(x):
    check_op(lambda x: x.view() * 2.0, x)


def test_view_with_another_dtype_is_refused_on_traced_arrays():
    x = np.array([1.0, 2.0])
    with pytest.raises(mutagrad.NotDifferentiableError, match="view"):
        mutagrad.gradient(lambda x: np.sum(x.view(np.int64)), x)
    constant = mutagrad.asarray(x)
    got = mutagrad.gradient(lambda x: np.sum(x) + np.sum(constant.view(np.int64) > 0), x)
    np.testing.assert_array_equal(got[0], [1.0, 1.0])


# -- copies --------------------------------------------------------------------


@given(x=arrays(), order=st.sampled_from(["C", "F", "A", "K"]))
def test_copy(x, order):
    check_op(lambda x: np.copy(x, order=order), x)
    if x.ndim:
        check_op(lambda x: x.copy(), x)
        check_op(lambda x: np.transpose(x).copy(order="F"), x)


@given(x=arrays_with_ndim(1))
def test_a_copy_keeps_its_value_when_the_original_is_written(x):
    def f(x):
        kept = np.copy(x)
        x *= 3.0
        return kept * x + np.copy(x) ** 2

    check_op(f, x)


@given(x=arrays_with_ndim(1))
def test_astype(x):
    check_op(lambda x: x.astype(float), x)
    check_op(lambda x: x.astype(np.float64, copy=False) * 2.0, x)
    # float32 rounds: finite differences need a step far above its resolution.
    check_op(lambda x: x.astype(np.float32), x, eps=1e-2, atol=1e-3)


@given(x=arrays_with_ndim(1).map(lambda x: np.round(x) + 0.3))
def test_astype_to_integers_and_bools_has_no_derivative(x):
    """Values sit 0.3 from an integer and 0 is never reached, so the casts are locally flat."""

    def f(x):
        ints, bools = x.astype(np.int64), x.astype(bool)
        assert not mutagrad.is_traced(ints) and not mutagrad.is_traced(bools)
        return x * ints + bools

    check_op(f, x)


def test_astype_without_copy_returns_the_array_itself():
    def f(x):
        assert x.astype(np.float64, copy=False) is x
        assert x.astype(np.float64) is not x
        return np.sum(x)

    np.testing.assert_array_equal(mutagrad.gradient(f, np.ones(3))[0], np.ones(3))


# -- concatenate and stack -----------------------------------------------------


def _split_traced(arrays_, traced):
    """A function of the traced arrays that puts the constant ones back in place."""

    def assemble(*xs):
        it = iter(xs)
        return [next(it) if t else a for a, t in zip(arrays_, traced)]

    return assemble, [a for a, t in zip(arrays_, traced) if t]


@given(data=st.data())
def test_concatenate(data):
    base = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=3), label="shape")
    axis = data.draw(st.integers(-len(base), len(base) - 1), label="axis")
    n = data.draw(st.integers(1, 3), label="how many")
    parts = []
    for i in range(n):
        shape = list(base)
        shape[axis] = data.draw(SIDES, label=f"side {i}")
        parts.append(data.draw(arrays(tuple(shape)), label=f"array {i}"))
    traced = data.draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(any))
    assemble, args = _split_traced(parts, traced)
    check_op(lambda *xs: np.concatenate(assemble(*xs), axis=axis), *args)
    check_op(lambda *xs: np.concatenate(assemble(*xs), axis=None), *args)
    check_op(lambda *xs: np.concatenate(tuple(assemble(*xs)), axis, dtype=np.float64), *args)


@given(data=st.data())
def test_stack(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), label="shape")
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)), label="axis")
    n = data.draw(st.integers(1, 3), label="how many")
    parts = [data.draw(arrays(shape), label=f"array {i}") for i in range(n)]
    traced = data.draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(any))
    assemble, args = _split_traced(parts, traced)
    check_op(lambda *xs: np.stack(assemble(*xs), axis=axis), *args)
    check_op(lambda *xs: np.stack(assemble(*xs), axis, dtype=np.float64), *args)


@given(x=arrays((2, 3)), y=arrays((1, 3)))
def test_concatenate_and_stack_with_lists_and_out(x, y):
    def f(x, y):
        out = np.zeros_like(np.concatenate([x, y, [[1.0, 2.0, 3.0]]]))
        result = np.concatenate([x, y, [[1.0, 2.0, 3.0]]], out=out)
        assert result is out
        stacked = np.zeros_like(np.stack([x[0], y[0]], axis=1))
        np.stack([x[0], y[0]], axis=1, out=stacked)
        return np.concatenate([out.ravel(), stacked.ravel(), x[1, 1:], [4.0]])

    check_op(f, x, y)


@st.composite
def blocks(draw):
    """A nested list for np.block, and the traced arrays it holds (the others are constants)."""
    rows, columns = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    heights = [draw(SIDES) for _ in range(rows)]
    widths = [draw(SIDES) for _ in range(columns)]
    traced, layout = [], []
    for h in heights:
        row = []
        for w in widths:
            shape = (h, w) if h > 1 or draw(st.booleans()) else (w,)  # 1-D leaves are rows
            row.append(len(traced))
            traced.append(draw(arrays(shape)))
        layout.append(row)
    lead = draw(st.integers(0, 1))  # one more level of nesting: a 3-D result
    return traced, layout, lead


@given(case=blocks(), constant=st.booleans())
def test_block(case, constant):
    arrays_, layout, lead = case

    def assemble(*xs):
        xs = list(xs)
        if constant:  # the first leaf is a constant the function closes over
            xs[0] = arrays_[0]
        nested = [[xs[i] for i in row] for row in layout]
        return np.block([nested] if lead else nested)

    check_op(assemble, *arrays_)


@given(x=arrays_with_ndim(1, 2))
def test_block_of_one_array_is_a_copy(x):
    def f(x):
        y = x * 1.0
        b = np.block(y)
        y[...] = 0.0  # as in numpy, the block keeps the old values
        return b

    check_op(f, x)


@given(data=st.data())
def test_broadcast_arrays(data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    x, y, z = (data.draw(arrays(s)) for s in shapes.input_shapes)

    def f(x, y, z):
        result = np.broadcast_arrays(x, y, z, 1.5)
        assert isinstance(result, tuple) and len(result) == 4
        return np.stack(result)

    check_op(f, x, y, z)


@given(x=arrays_with_ndim(2, 2), y=arrays_with_ndim(1, 1))
def test_column_stack(x, y):
    column = y[: x.shape[0]] if y.shape[0] >= x.shape[0] else np.resize(y, x.shape[0])
    check_op(lambda x, c: np.column_stack([c, x, c * 2]), x, column)
    check_op(lambda x: np.column_stack([x[:1, 0], x[:1]]), x)


@given(x=arrays_with_ndim(2))
def test_matrix_transpose(x):
    check_op(np.matrix_transpose, x)
    check_op(np.linalg.matrix_transpose, x)


@given(
    xs=st.lists(arrays_with_ndim(1, 1), min_size=1, max_size=3),
    indexing=st.sampled_from(["xy", "ij"]),
    sparse=st.booleans(),
    copy=st.booleans(),
)
def test_meshgrid(xs, indexing, sparse, copy):
    def f(*xs):
        grids = np.meshgrid(*xs, indexing=indexing, sparse=sparse, copy=copy)
        plain = np.meshgrid(*(np.zeros(1) for _ in xs), sparse=sparse, copy=copy)
        assert type(grids) is type(plain)  # numpy 2.5: a tuple; before, a list when sparse
        assert len(grids) == len(xs)
        return np.concatenate([np.ravel(g * (i + 1)) for i, g in enumerate(grids)])

    check_op(f, *xs)


# -- core bugs found while testing these rules ----------------------------------


def test_a_traced_array_nested_two_lists_deep(monkeypatch):
    monkeypatch.delitem(FUNCTION_RULES, np.block)  # the rule that works around it
    x = np.array([1.0, 2.0])
    try:
        (g,) = mutagrad.gradient(lambda x: np.sum(np.block([[x, x]])), x)
    except mutagrad.MissingRuleError:
        return  # refusing would be right too
    np.testing.assert_array_equal(g, [2.0, 2.0])


def test_flatten_in_memory_order():
    check_op(lambda x: x.T.flatten("K"), np.arange(6.0).reshape(2, 3))


# -- coverage ------------------------------------------------------------------


TESTED = {
    np.reshape, np.ravel, np.transpose, np.swapaxes, np.moveaxis, np.rollaxis, np.squeeze,
    np.expand_dims, np.diagonal, np.broadcast_to, np.flip, np.fliplr, np.flipud, np.rot90, np.real,
    np.imag,  # (its complex cases: tests/rules/test_complex.py)
    np.real_if_close,
    np.atleast_1d, np.atleast_2d, np.atleast_3d, np.copy, np.concatenate, np.stack, np.block,
    np.broadcast_arrays, np.column_stack, np.matrix_transpose, np.linalg.matrix_transpose,
    np.meshgrid,
    np.ndarray.view,  # x.view(): test_view_method, test_view_with_another_dtype_is_refused_...
    np.ndarray.astype,  # x.astype(): tests/rules/test_library.py::test_astype
    np.lib.stride_tricks.sliding_window_view,  # tests/core/test_strided_views.py
}  # fmt: skip


def test_every_rule_of_the_module_is_tested():
    registered = rules_defined_in("mutagrad.rules.shape")
    assert registered, "found no rules: did the registry change?"
    missing = {getattr(r, "__name__", repr(r)) for r in registered - TESTED}
    assert not missing, f"rules without a test: {sorted(missing)}"
