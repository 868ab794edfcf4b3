"""Every ``np.ndarray`` method and attribute on a WrappedArray: numpy's value and the true
gradient, or a MutagradError that names it.

Values are compared bit for bit with the same code on plain ndarrays, gradients
with central finite differences. In-place methods are also checked against a
capture they overwrite: poison mode raises, snapshot mode gives the gradient of
the old value, strict mode refuses the write. ``test_every_public_ndarray_name``
walks ``dir(np.ndarray)`` with a plausible call for each name.
"""

from __future__ import annotations

import copy
import io
import os
import pickle

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient
from mutagrad.traced import value as array_value
from mutagrad.traced.value import WrappedArray

X = np.array([[0.5, 1.5, -2.0, 3.0], [0.25, -1.25, 2.5, -0.75], [1.75, -0.5, 0.0, 2.25]])
MASK = np.array([[True, False, True, True], [False, True, True, False], [True, True, False, True]])


def weights(shape):
    """A fixed cotangent with distinct entries of both signs, so misplaced terms show."""
    n = int(np.prod(shape, dtype=np.int64))
    return (np.linspace(0.5, 1.5, n) * (-1.0) ** np.arange(n)).reshape(shape)


def assert_identical(got, expected):
    """``got`` (from traced code) is ``expected`` (numpy's): the same type, dtype, shape and
    bits, except that a NaN's sign and payload may differ."""
    raw = got._raw if isinstance(got, mutagrad.WrappedValue) else got
    assert isinstance(raw, np.ndarray) == isinstance(expected, np.ndarray)
    np.testing.assert_array_equal(raw, expected, strict=True)
    numbers = ~np.isnan(expected) if np.result_type(expected).kind == "f" else ...
    assert np.array_equal(np.signbit(raw)[numbers], np.signbit(expected)[numbers])  # -0.0


def check(op, *args, gradient=True):
    """``op``'s value on traced arguments is numpy's; its weighted sum's gradient matches
    finite differences (``op`` may mutate its arguments: each run gets copies)."""
    expected = op(*[np.copy(a) for a in args])
    w = weights(np.shape(expected))

    def loss(*xs):
        out = op(*xs)
        return np.sum(out * w), out

    assert_identical(mutagrad.withgradient(loss, *args).val[1], expected)
    if gradient:
        check_gradient(loss, *args)


# -- the reported crashes ---------------------------------------------------------------


def test_an_empty_index_list_reads_and_writes_nothing():
    def f(x):
        y = x * 2.0
        y[[]] = 5.0
        y[[]] = x[0, 0]  # a traced value written nowhere
        return y + y[[]].sum()

    check(f, X)


REDUCTIONS_WITH_KEYWORDS = {
    "sum where": lambda x: x.sum(where=MASK),
    "sum initial": lambda x: x.sum(initial=1.0),
    "sum axis where keepdims": lambda x: x.sum(axis=0, where=MASK, keepdims=True),
    "sum positional keepdims initial": lambda x: x.sum(1, None, None, True, 0.5),
    "max initial": lambda x: x.max(initial=0.0),
    "max initial wins a group": lambda x: x.max(axis=1, initial=2.8),
    "max where": lambda x: x.max(axis=0, where=MASK, initial=-5.0),
    "min initial": lambda x: x.min(initial=-1.0),
    "min where": lambda x: x.min(axis=1, where=MASK, initial=10.0),
    "prod where initial": lambda x: x.prod(where=MASK, initial=2.0),
    "prod axis where (a zero left out)": lambda x: x.prod(axis=1, where=MASK),
    "prod axis where (a zero kept)": lambda x: x.prod(axis=0, where=~MASK, initial=1.5),
    "mean where": lambda x: x.mean(axis=1, where=MASK),
    "var where": lambda x: x.var(axis=0, where=MASK),
    "var where keepdims ddof": lambda x: x.var(axis=1, ddof=1, keepdims=True, where=MASK),
    "var mean": lambda x: x.var(axis=1, keepdims=True, mean=x.mean(axis=1, keepdims=True)),
    "std where": lambda x: x.std(where=MASK),
    "std where, a group of one": lambda x: x.std(axis=0, where=MASK & ~np.eye(3, 4, 1, bool)),
    "std mean": lambda x: x.std(axis=0, keepdims=True, mean=np.full((1, 4), 0.5)),
    "nansum where": lambda x: np.nansum(x, where=MASK),
    "nanprod where": lambda x: np.nanprod(x, axis=0, where=MASK),
    "nanmean where": lambda x: np.nanmean(x, axis=1, where=MASK),
    "nanvar where": lambda x: np.nanvar(x, axis=1, where=MASK),
    "nanvar mean": lambda x: np.nanvar(x, axis=0, keepdims=True, mean=np.zeros((1, 4))),
    "nanmax where": lambda x: np.nanmax(x, axis=0, where=MASK, initial=-9.0),
}


@pytest.mark.parametrize("op", REDUCTIONS_WITH_KEYWORDS.values(), ids=REDUCTIONS_WITH_KEYWORDS)
def test_reduction_methods_take_every_keyword_of_ndarray(op):
    check(op, X)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_variance_keeps_the_dtype(dtype):
    check(lambda x: x.var(axis=1, where=MASK), X.astype(dtype), gradient=False)
    check(lambda x: x.std(axis=0, where=MASK), X.astype(dtype), gradient=False)


def test_reductions_ignore_nans_with_where_and_initial():
    x = np.array([[np.nan, 1.5, np.nan], [np.nan, -0.5, 2.0]])
    # An all-NaN group: NaN without initial=, the initial value with it (numpy's fmax).
    check(lambda x: np.nanmax(x, axis=0, initial=0.25), x)
    check(lambda x: np.nansum(x, axis=1, where=[True, False, True]), x)
    check(lambda x: np.nanmean(x, axis=1, where=[True, True, False]), x)
    # A group left empty is NaN, as in numpy (finite differences cannot check it).
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        check(lambda x: np.nanmean(x, axis=0, where=[[True], [False]]), x, gradient=False)


def reshaped_in_place(x):
    y = x * 1.0
    y.shape = (4, 3)
    return y * np.arange(3.0)


def view_reshaped_in_place(x):
    y = x * 1.0
    v = y[1:]  # a view of y: its new shape shares y's memory and version
    v.shape = (2, 2, 2)
    v[0, 1] = v[1, 0] * 3.0
    return y + v.sum()


def argument_reshaped_in_place(x):
    x.shape = (2, -1)  # x is a copy or a borrowed view of the caller's array: its shape stays
    x[0] *= x[1]
    return x


def reshaped_between_reads_and_writes(x):
    y = x * 1.0
    row = y[0]  # a view read before the reshape
    s = np.sum(row * row)  # saves row
    y.shape = (12,)
    y[5:] = y[:7] * 2.0  # overwrites y[1, 1:], not row
    return s + y.reshape(3, 4)[2] + row


@pytest.mark.parametrize(
    "program",
    [reshaped_in_place, view_reshaped_in_place, argument_reshaped_in_place,
     reshaped_between_reads_and_writes],
    ids=lambda f: f.__name__,
)  # fmt: skip
def test_setting_shape_reshapes_in_place(program):
    check(program, X)
    check_gradient(lambda x: np.sum(program(x) * 1.0), X, mode="snapshot")


def test_setting_the_shape_of_an_argument_keeps_the_caller_array():
    # A large argument is borrowed (shared, copied on its first write), a small one copied.
    large = np.random.default_rng(0).normal(size=(200, 300))
    for x in (X.copy(), large):
        original = x.copy()
        check_gradient(lambda x: np.sum(argument_reshaped_in_place(x) ** 2), x)
        assert x.shape == original.shape and np.array_equal(x, original)


def test_setting_shape_raises_numpy_errors():
    def incompatible(x):
        y = x.T  # not contiguous: numpy cannot reshape it without a copy
        y.shape = (12,)
        return np.sum(y)

    with pytest.raises(AttributeError, match="Incompatible shape") as numpy_error:
        incompatible(X.copy())
    with pytest.raises(AttributeError, match="Incompatible shape") as ours:
        mutagrad.gradient(incompatible, X)
    assert str(ours.value) == str(numpy_error.value)


def test_a_reshaped_capture_is_poisoned_by_a_write_after_the_reshape():
    def f(x):
        y = x * 1.0
        z = y * y  # saves y
        y.shape = (12,)
        y[3] = 0.0
        return np.sum(z)

    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(f, X)
    np.testing.assert_allclose(mutagrad.gradient(f, X, mode="snapshot")[0], 2 * X)


def partition_in_place(x):
    y = x * 1.0
    y.partition(1, axis=1)  # numpy partitions y itself, unlike np.partition
    return y


def partition_of_a_view(x):
    y = x * 1.0
    y[:, 1:].partition((0, 2), axis=0)
    return y


def test_partition_is_in_place():
    check(partition_in_place, X)
    check(partition_of_a_view, X)


def test_conjugate_searchsorted_and_imag():
    check(lambda x: x.conjugate() * 2.0, X)
    check(lambda x: np.sort(x.ravel()).searchsorted(x[0], side="right"), X, gradient=False)
    check(lambda x: x.imag + x, X)  # zeros, without a derivative
    check(lambda x: x[1, 2].imag * x, X)  # a WrappedScalar's


def test_imag_of_a_real_array_is_read_only_as_in_numpy():
    def f(x):
        x.imag[0] = 1.0
        return np.sum(x)

    with pytest.raises(ValueError, match="read-only"):
        f(X.copy())
    with pytest.raises(ValueError, match="read-only"):
        mutagrad.gradient(f, X)


# -- methods routed to numpy functions ---------------------------------------------------


ROUTED = {
    "compress": lambda x: x.compress([True, False, True], axis=0),
    "compress flat": lambda x: x.compress([False, True, True, False, True]),
    "choose": lambda x: (x > 0.4).astype(np.intp).choose([x, 2.0 * x]),
    "cumsum": lambda x: x.cumsum(axis=1),
    "cumprod": lambda x: x.cumprod(),
    "nonzero": lambda x: x.nonzero()[1],
    "argpartition": lambda x: x.argpartition(2, axis=1),
    "argsort stable": lambda x: x.argsort(axis=0, stable=True),
    "std": lambda x: x.std(axis=1, ddof=1),
    "var": lambda x: x.var(0, None, None, 0, True),
    "sort stable": lambda x: (x.sort(axis=0, stable=True), x)[1],
    "astype subok": lambda x: x.astype(np.float64, subok=False, copy=True),
    "argmax keepdims": lambda x: x.argmax(axis=1, keepdims=True),
    "all where": lambda x: x.all(axis=0, where=MASK),
    "any where": lambda x: (x > 2).any(axis=1, where=MASK),
    "round": lambda x: x.round(2),  # no element of X is a rounding boundary
    "repeat": lambda x: x.repeat(2, axis=1),
    "take": lambda x: x.take([3, 0], axis=1),
    "trace": lambda x: x.trace(1),
    "dot": lambda x: x.dot(x.T),
    "view": lambda x: x.view() * 2.0,
    "getfield same dtype": lambda x: x.getfield(np.float64) * 2.0,
    "rdivmod": lambda x: divmod(7.0, x + 5.0)[1],
}


@pytest.mark.parametrize("op", ROUTED.values(), ids=ROUTED)
def test_routed_methods_match_numpy(op):
    expected = op(X.copy())
    check(op, X, gradient=np.result_type(expected).kind == "f")


# -- in-place methods -------------------------------------------------------------------


def overwrites_a_capture(method):
    """A program in which ``method(y)`` overwrites a value a pullback saved."""

    def program(x):
        y = x * 1.0
        z = y * y  # saves y
        method(y)
        return np.sum(z) + np.sum(y * weights(y.shape))

    return program


IN_PLACE = {
    "partition": lambda y: y.partition(1, axis=1),
    "sort": lambda y: y.sort(axis=0, stable=True),
    "fill": lambda y: y.fill(0.5),
    "put": lambda y: y.put([0, 5], [1.0, 2.0]),
    "setfield": lambda y: y.setfield(y[0] * 3.0, np.float64),
    "real =": lambda y: setattr(y, "real", y[::-1] * 2.0),
}


@pytest.mark.parametrize("method", IN_PLACE.values(), ids=IN_PLACE)
def test_in_place_methods_after_a_capture(method):
    program = overwrites_a_capture(method)
    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(program, X)
    same = mutagrad.withgradient(program, X, mode="snapshot")
    assert same.val == program(X.copy())
    check_gradient(program, X, mode="snapshot")
    with pytest.raises(mutagrad.MutationError):
        mutagrad.gradient(program, X, mode="strict")


@pytest.mark.parametrize("method", IN_PLACE.values(), ids=IN_PLACE)
def test_in_place_methods_without_a_capture(method):
    def program(x):
        y = x * 1.0
        method(y)
        return y * x

    check(program, X)


def constant_overwritten_by(method):
    """A program in which ``method`` writes a constant that ``x * c`` saved."""

    def program(x):
        c = mutagrad.array(np.linspace(0.5, 2.0, 12).reshape(3, 4))
        z = x * c  # saves c, for x's gradient
        method(c)
        return np.sum(z)

    return program


WRITES_WITHOUT_DERIVATIVE = {
    "byteswap inplace": lambda c: c.byteswap(inplace=True),
    "setfield of another dtype": lambda c: c.setfield(7, np.int32, 4),
}


@pytest.mark.parametrize("method", WRITES_WITHOUT_DERIVATIVE.values(),
                         ids=WRITES_WITHOUT_DERIVATIVE)  # fmt: skip
def test_writes_without_derivative_into_a_constant(method):
    program = constant_overwritten_by(method)
    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(program, X)
    old_c = np.linspace(0.5, 2.0, 12).reshape(3, 4)
    np.testing.assert_array_equal(mutagrad.gradient(program, X, mode="snapshot")[0], old_c)
    with pytest.raises(mutagrad.MutationError):
        mutagrad.gradient(program, X, mode="strict")


def test_writes_without_derivative_match_numpy_outside_a_gradient_call():
    for method in WRITES_WITHOUT_DERIVATIVE.values():
        plain = X.copy()
        wrapped = mutagrad.array(X)
        method(plain)
        method(wrapped)
        assert_identical(wrapped, plain)
        assert wrapped.version == 1


@pytest.mark.parametrize(
    "op",
    [
        lambda y: y.byteswap(),
        lambda y: y.byteswap(inplace=True),
        lambda y: y.getfield(np.int32, 4),
        lambda y: y.setfield(7, np.int32),
        lambda y: mutagrad.array(np.zeros(4, np.int64)).setfield(y[0, 0], np.float64),
    ],
)
def test_reinterpreting_bytes_of_a_traced_array_is_refused(op):
    def f(x):
        op(x * 1.0)
        return np.sum(x)

    with pytest.raises(mutagrad.NotDifferentiableError, match=r"(getfield|setfield|byteswap)"):
        mutagrad.gradient(f, X)


def test_setflags_makes_the_array_read_only_and_never_writeable_again():
    def read_only_product(x):
        y = x * 2.0
        y.setflags(write=False)
        assert not y.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            y[0] = 1.0
        return y * x

    check(read_only_product, X)

    def writeable_again(x):
        y = x * 2.0
        y.setflags(write=False)
        y.setflags(write=True)  # numpy allows it; mutagrad cannot tell whose memory it is
        return np.sum(y)

    with pytest.raises(mutagrad.UnsupportedAttributeError, match="setflags"):
        mutagrad.gradient(writeable_again, X)
    borrowed = X.copy()
    mutagrad.gradient(lambda x: (x.setflags(write=False), np.sum(x))[1], borrowed)
    assert borrowed.flags.writeable  # the caller's array keeps its own flags


# -- refusals and exports ---------------------------------------------------------------


REFUSED = {
    "resize": lambda y: y.resize((2, 6)),
    "ctypes": lambda y: y.ctypes,
    "__dlpack__": lambda y: np.from_dlpack(y),
    "strides": lambda y: setattr(y, "strides", (8, 24)),
    "dtype": lambda y: setattr(y, "dtype", np.int64),
    "data": lambda y: setattr(y, "data", memoryview(b"")),
}


@pytest.mark.parametrize("name", REFUSED)
def test_refused_attributes_name_themselves(name):
    def on_a_constant(x):
        REFUSED[name](mutagrad.array(X))
        return np.sum(x)

    def on_a_traced_array(x):
        REFUSED[name](x * 1.0)
        return np.sum(x)

    for program in (on_a_constant, on_a_traced_array):
        with pytest.raises(mutagrad.UnsupportedAttributeError, match=name) as info:
            mutagrad.gradient(program, X)
        assert isinstance(info.value, AttributeError)  # hasattr(x, name) stays an answer
        assert "Fix:" in str(info.value)


def test_dlpack_exports_a_copy_of_a_constant():
    w = mutagrad.array(X)
    exported = np.from_dlpack(w, copy=True)
    exported[0, 0] = 100.0
    assert w[0, 0] == X[0, 0]
    assert w.__dlpack_device__() == X.__dlpack_device__()


EXPORTS = {
    "data": lambda y: bytes(y.data),
    "tobytes": lambda y: y.tobytes(order="F"),
    "dumps": lambda y: pickle.loads(y.dumps()),
    "dump": lambda y: (y.dump(buffer := io.BytesIO()), pickle.loads(buffer.getvalue()))[1],
}


@pytest.mark.parametrize("export", EXPORTS.values(), ids=EXPORTS)
def test_exports_of_a_constant_match_numpy_and_refuse_a_traced_value(export):
    expected = export(X.copy())
    got = export(mutagrad.array(X))
    if isinstance(expected, bytes):
        assert got == expected
    else:
        assert_identical(got, expected)

    def f(x):
        export(x * 1.0)
        return np.sum(x)

    with pytest.raises(mutagrad.TracerConversionError):
        mutagrad.gradient(f, X)


def test_tofile_writes_a_constant_as_numpy_does(tmp_path):
    mutagrad.array(X).tofile(tmp_path / "wrapped.txt", sep=",")
    X.tofile(tmp_path / "plain.txt", sep=",")
    assert (tmp_path / "wrapped.txt").read_text() == (tmp_path / "plain.txt").read_text()


def test_memory_a_constant_exports_is_read_only():
    w = mutagrad.array(X)
    assert w.data.readonly
    assert not w.view(np.ndarray).flags.writeable
    # np.asarray is numpy's alias, writable; its writes are made safe by detaching
    # what pullbacks saved (tests/test_soundness.py).
    alias = np.asarray(w)
    alias[0, 0] = 7.0
    assert w[0, 0] == 7.0


def test_wrapped_scalars_refuse_in_place_methods():
    # An element read is a WrappedScalar in a gradient call (outside one, numpy's scalar).
    def f(x):
        s = x[0, 1]
        assert isinstance(s, mutagrad.WrappedScalar)
        for name in ("fill", "put", "partition", "resize", "setflags", "setfield", "ctypes"):
            with pytest.raises(mutagrad.UnsupportedAttributeError, match=name):
                getattr(s, name)
        with pytest.raises(mutagrad.UnsupportedAttributeError, match="shape"):
            s.shape = (1,)
        assert f"{s:.2f}" == "1.50"
        return s

    mutagrad.gradient(f, X)


# -- the walk over dir(np.ndarray) ------------------------------------------------------


PLAUSIBLE_CALLS = {
    "T": lambda y: y.T,
    "all": lambda y: y.all(axis=0),
    "any": lambda y: y.any(where=MASK),
    "argmax": lambda y: y.argmax(),
    "argmin": lambda y: y.argmin(axis=0),
    "argpartition": lambda y: y.argpartition(1),
    "argsort": lambda y: y.argsort(),
    "astype": lambda y: y.astype(np.float32),
    "base": lambda y: y.base,
    "byteswap": lambda y: y.byteswap(),
    "choose": lambda y: (y > 0).astype(np.intp).choose([y, -y]),
    "clip": lambda y: y.clip(0.2, 0.8),
    "compress": lambda y: y.compress([True, False, True], axis=0),
    "conj": lambda y: y.conj(),
    "conjugate": lambda y: y.conjugate(),
    "copy": lambda y: y.copy(),
    "ctypes": lambda y: y.ctypes,
    "cumprod": lambda y: y.cumprod(axis=1),
    "cumsum": lambda y: y.cumsum(),
    "data": lambda y: y.data,
    "device": lambda y: y.device,
    "diagonal": lambda y: y.diagonal(),
    "dot": lambda y: y.dot(y.T),
    "dtype": lambda y: y.dtype,
    "dump": lambda y: y.dump(io.BytesIO()),
    "dumps": lambda y: y.dumps(),
    "fill": lambda y: y.fill(1.0),
    "flags": lambda y: y.flags,
    "flat": lambda y: y.flat,
    "flatten": lambda y: y.flatten(),
    "getfield": lambda y: y.getfield(np.float64),
    "imag": lambda y: y.imag,
    "item": lambda y: y.item(0),
    "itemsize": lambda y: y.itemsize,
    "mT": lambda y: y.mT,
    "max": lambda y: y.max(axis=0, initial=0.0),
    "mean": lambda y: y.mean(where=MASK),
    "min": lambda y: y.min(initial=2.0),
    "nbytes": lambda y: y.nbytes,
    "ndim": lambda y: y.ndim,
    "nonzero": lambda y: y.nonzero(),
    "partition": lambda y: y.partition(1),
    "prod": lambda y: y.prod(axis=1, where=MASK),
    "put": lambda y: y.put([0, 5], [1.0, 2.0]),
    "ravel": lambda y: y.ravel(),
    "real": lambda y: y.real,
    "repeat": lambda y: y.repeat(2, axis=0),
    "reshape": lambda y: y.reshape(4, 3),
    "resize": lambda y: y.resize((2, 6)),
    "round": lambda y: y.round(1),
    "searchsorted": lambda y: np.sort(y.ravel()).searchsorted(0.5),
    "setfield": lambda y: y.setfield(np.ones(4), np.float64),
    "setflags": lambda y: y.setflags(write=False),
    "shape": lambda y: y.shape,
    "size": lambda y: y.size,
    "sort": lambda y: y.sort(axis=0),
    "squeeze": lambda y: y[None].squeeze(0),
    "std": lambda y: y.std(ddof=1),
    "strides": lambda y: y.strides,
    "sum": lambda y: y.sum(where=MASK),
    "swapaxes": lambda y: y.swapaxes(0, 1),
    "take": lambda y: y.take([0, 2], axis=1),
    "to_device": lambda y: y.to_device("cpu"),
    "tobytes": lambda y: y.tobytes(),
    "tofile": lambda y: y.tofile(os.devnull),
    "tolist": lambda y: y.tolist(),
    "trace": lambda y: y.trace(),
    "transpose": lambda y: y.transpose(1, 0),
    "var": lambda y: y.var(axis=0),
    "view": lambda y: y.view(),
}

PUBLIC_NAMES = sorted(name for name in dir(np.ndarray) if not name.startswith("_"))


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_every_public_ndarray_name(name):
    """Works on a traced array or raises a MutagradError; never an internal crash.

    A name this numpy has and the table does not (a newer numpy's) must be
    refused by name when it is looked up.
    """
    call = PLAUSIBLE_CALLS.get(name, lambda y: getattr(y, name))

    def f(x):
        y = x * 1.0
        call(y)
        return np.sum(y)

    try:
        mutagrad.gradient(f, X)
    except mutagrad.MutagradError as error:
        assert name in str(error)
        assert name in PLAUSIBLE_CALLS or isinstance(error, mutagrad.UnsupportedAttributeError)


def test_an_ndarray_attribute_nobody_checked_is_refused_by_name(monkeypatch):
    # As if the installed numpy had ndarray.frobnicate, which WrappedArray does not define:
    # the names are the installed numpy's, read when mutagrad.traced is imported.
    monkeypatch.setattr(array_value, "NDARRAY_ATTRIBUTES",
                        array_value.NDARRAY_ATTRIBUTES | {"frobnicate"})  # fmt: skip
    array_value.refuse_missing_ndarray_attributes(WrappedArray)
    try:
        w = mutagrad.array(X)
        with pytest.raises(mutagrad.UnsupportedAttributeError, match=r"x\.frobnicate"):
            w.frobnicate()
        assert not hasattr(w, "frobnicate")
        assert not hasattr(WrappedArray, "frobnicate")
        with pytest.raises(AttributeError, match="frobnicat"):
            w.frobnicat  # noqa: B018  # a name numpy does not have: plainly absent
    finally:
        del WrappedArray.frobnicate


def test_every_ndarray_attribute_is_provided_or_refused_by_name():
    w = mutagrad.array(X)
    for name in sorted(array_value.NDARRAY_ATTRIBUTES):
        try:
            getattr(w, name)
        except mutagrad.UnsupportedAttributeError as error:
            assert f"x.{name}" in str(error)


def test_dunders_numpy_and_python_use():
    w = mutagrad.array(X)
    for absent in ("__array_interface__", "__array_struct__", "__array_finalize__",
                   "__array_wrap__", "__setstate__"):  # fmt: skip
        assert not hasattr(w, absent)  # numpy would read the memory through them
    assert w.__array_namespace__() is np
    assert 1.5 in w and 9.0 not in w
    assert WrappedArray[float] is not None
    with pytest.raises(ValueError, match="cannot delete"):
        del w[0]
    restored = pickle.loads(pickle.dumps(w))
    assert_identical(restored._raw, X)
    assert_identical(copy.deepcopy(w)._raw, X)
    assert_identical(copy.copy(w)._raw, X)
    assert f"{w[0, 0]:.3f}" == f"{X[0, 0]:.3f}"

    with pytest.raises(AttributeError) as info:
        getattr(w, "not_an_ndarray_attribute")  # noqa: B009 (the lookup is the test)
    assert not isinstance(info.value, mutagrad.MutagradError)
