"""mutagrad.numpy as a drop-in for numpy in autograd-style programs (issue 12, section 3).

Each program is written once against a namespace ``ns``: run with ``numpy``
on plain arrays it gives the reference value, and central finite differences
of that run the reference gradient; run with ``mutagrad.numpy`` under
``mutagrad.gradient`` it must give both. The programs use what plain numpy
cannot intercept on traced values: lists and nested lists of them passed to
``array``, ``mean``, ``linalg.norm``, ``concatenate``..., ``r_``/``c_``, and
an integer cast used as an index.
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
import mutagrad.numpy as mnp
from mutagrad.testing import numerical_gradient

# ---------------------------------------------------------------------------
# The programs: (ns, *args) -> scalar.


def logistic_loss(ns, w, b):
    X = [[1.0, 2.0], [0.5, -1.0], [-1.5, 0.3]]
    y = [1.0, 0.0, 1.0]
    logits = ns.dot(X, w) + b
    preds = [1.0 / (1.0 + ns.exp(-z)) for z in logits]  # traced scalars, one by one
    p = ns.array(preds)
    return -ns.mean(y * ns.log(p) + (1.0 - ns.array(y)) * ns.log(1.0 - p))


def matrix_from_scalars(ns, a):
    M = ns.array([[a[0], a[1]], [a[2], a[0] * a[1]]])
    return ns.linalg.det(M) + ns.sum(M @ M)


def matrix_from_tuples(ns, a):
    M = ns.array(((a[0], 1.0), (a[1], a[2])), dtype=np.float64, ndmin=3, order="F")
    return ns.sum(ns.sin(M) * ns.arange(4.0).reshape(1, 2, 2))


def r_concatenation(ns, x):
    v = ns.r_[x, x[0] * 2.0, [x[1], 3.0], 0:2]
    return ns.sum(v**2 * ns.arange(len(v)))


def r_directive(ns, x):
    M = ns.r_["0,2", x, ns.sin(x)]
    return ns.sum(M**3 * ns.arange(M.size).reshape(M.shape))


def c_columns(ns, x):
    M = ns.c_[x, x**2, ns.ones(3)]
    return ns.sum((M @ np.array([1.0, -0.5, 2.0])) ** 2)


def mean_over_a_list(ns, x):
    return ns.sum(ns.mean([x, x + 2.0, x * x], axis=0) ** 2) + ns.mean([x[0], x[2]])


def norm_of_a_list(ns, x):
    return ns.linalg.norm([x[0], x[1] * 2.0, 3.0])


def int_cast_index(ns, W):
    # autograd's test_cast_to_int: the last column, cast to integers, indexes the rows.
    inds = np.ones(W.shape[0])[:, None]
    glued = ns.concatenate((W, inds), axis=1)
    new_W = glued[:, :-1]
    new_inds = ns.int64(glued[:, -1])
    assert new_inds.dtype == np.int64
    return ns.sum(new_W[new_inds] ** 2)


def loop_then_array(ns, x):
    h, hs = 0.5, []
    for t in range(len(x)):
        h = ns.tanh(0.8 * h + x[t])
        hs.append(h)
    H = ns.array(hs)
    return ns.sum(H**2 * ns.arange(1.0, len(x) + 1))


def append_list(ns, x):
    return ns.sum(ns.append([x[0], x[1]], x * 2.0) ** 2)


def concatenate_nested_lists(ns, x):
    v = ns.concatenate([x, [x[0] * x[1], 1.0]])
    M = ns.concatenate([ns.reshape(x[:2], (1, 2)), [[x[2], x[0]]]], axis=0)
    return ns.sum(v**2) + ns.sum(M**3)


def dot_and_sum_of_lists(ns, x):
    y = ns.dot([x[0], x[1], x[2]], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    return ns.sum(y**2) + ns.sum([x[0] * x[1], x[2]])


def ufuncs_on_lists(ns, x):
    return ns.sum(ns.exp([x[0], -x[1]])) + ns.sum(ns.maximum([x[0], x[1]], 1.5) ** 2)


def stack_family(ns, x):
    V = ns.vstack([[x[0], x[1]], x[1:]])
    S = ns.stack([[x[0], x[2]], [x[1], 1.0]], axis=1)
    return ns.sum(V * S)


def where_select_einsum(ns, x):
    a = ns.where(x > 1.5, [x[0], x[1], x[2]], x * 0.5)
    b = ns.select([x < 2.5, x >= 2.5], [[x[1], x[2], x[0]], x**2])
    return ns.sum(a * b) + ns.einsum("i,i", [x[0], x[1]], [x[1], x[2]])


def polynomial_coefficients(ns, x):
    grid = ns.linspace(x[0], x[2], 4)  # traced endpoints
    return ns.polyval([x[0], x[1], 1.0], 2.0) + ns.sum(ns.polyval([x[2], 1.0], grid))


def float_cast_keeps_gradient(ns, x):
    return ns.float64(x[0]) ** 2 + ns.sum(ns.float64(x) * x)


def asarray_keywords(ns, x):
    A = ns.asarray([[x[0], x[1]], [x[2], 2.0]], order="F")
    return ns.sum(ns.asarray(A, dtype=np.float64) ** 2) + ns.sum(ns.asarray(x[0]))


X3 = np.array([1.0, 2.0, 3.0])
PROGRAMS = [
    (logistic_loss, (np.array([0.3, -0.2]), 0.1)),
    (matrix_from_scalars, (X3,)),
    (matrix_from_tuples, (X3,)),
    (r_concatenation, (X3,)),
    (r_directive, (X3,)),
    (c_columns, (X3,)),
    (mean_over_a_list, (X3,)),
    (norm_of_a_list, (X3,)),
    (int_cast_index, (np.arange(12.0).reshape(4, 3) / 7.0,)),
    (loop_then_array, (np.array([0.1, -0.4, 0.7, 0.2]),)),
    (append_list, (X3,)),
    (concatenate_nested_lists, (X3,)),
    (dot_and_sum_of_lists, (X3,)),
    (ufuncs_on_lists, (X3,)),
    (stack_family, (X3,)),
    (where_select_einsum, (X3,)),
    (polynomial_coefficients, (X3,)),
    (float_cast_keeps_gradient, (X3,)),
    (asarray_keywords, (X3,)),
]


def check_program(program, args, mode=None):
    """mutagrad.numpy's value and gradient against numpy's value and finite differences."""
    want_value = program(np, *args)
    want_grads = numerical_gradient(lambda *a: program(np, *a), *args)
    result = mutagrad.withgradient(lambda *a: program(mnp, *a), *args, mode=mode)
    np.testing.assert_allclose(np.asarray(mutagrad.ignore_derivatives(result.val)), want_value,
                               rtol=1e-12)  # fmt: skip
    assert len(result.grad) == len(want_grads)
    for got, want in zip(result.grad, want_grads):
        assert got is not None
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("program, args", PROGRAMS, ids=[p.__name__ for p, _ in PROGRAMS])
def test_autograd_style_program_matches_numpy_and_finite_differences(program, args):
    check_program(program, args)


@pytest.mark.parametrize("program, args", PROGRAMS[:4], ids=[p.__name__ for p, _ in PROGRAMS[:4]])
def test_programs_agree_in_snapshot_mode(program, args):
    check_program(program, args, mode="snapshot")


def test_the_same_programs_refuse_with_plain_numpy():
    """The boundary: plain numpy cannot see traced values inside lists, so it refuses."""
    for program in (mean_over_a_list, norm_of_a_list, r_concatenation, loop_then_array):
        with pytest.raises(mutagrad.TracerConversionError):
            mutagrad.gradient(lambda x, p=program: p(np, x), X3)


# ---------------------------------------------------------------------------
# Writes after capture.


def write_after_use(ns, x, needs_old_value):
    A = ns.array([[x[0], x[1]], [x[2], 1.0]])
    # sin's pullback reads A (cos A); a product by a constant's does not.
    y = ns.sum(ns.sin(A)) if needs_old_value else ns.sum(A * 3.0)
    A[0, 0] = 5.0 * x[1]
    return y + ns.sum(A * A)


def test_write_into_an_mnp_array_its_pullback_needs_is_refused_in_poison_mode():
    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(lambda x: write_after_use(mnp, x, True), X3)


@pytest.mark.parametrize("needs_old_value", [True, False])
def test_write_into_an_mnp_array_after_use_is_right_when_it_is_allowed(needs_old_value):
    want = numerical_gradient(lambda x: write_after_use(np, x, needs_old_value), X3)[0]
    for mode in ["snapshot"] if needs_old_value else ["snapshot", "poison"]:
        (got,) = mutagrad.gradient(lambda x: write_after_use(mnp, x, needs_old_value), X3,
                                   mode=mode)  # fmt: skip
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def copies_and_aliases(ns, x):
    v = x * 1.0
    copied = ns.array([v, v])  # a copy: later writes to v do not show in it
    alias = ns.asarray(v)  # v itself, as np.asarray(v) is v
    v[0] = x[1] * x[2]
    return ns.sum(copied**2) + ns.sum(alias**3)


def test_array_copies_and_asarray_aliases_as_numpy_does():
    check_program(copies_and_aliases, (X3,))


# ---------------------------------------------------------------------------
# The namespace itself.


def test_sequences_of_arrays_keep_their_meaning():
    def f(x):
        v = mnp.concatenate([x, [x[0], x[1]]])  # [x[0], x[1]] is one array, not the list
        B = mnp.block([[x[0], x[1]], [x[2], x[0]]])  # block's nested lists are its structure
        assert v.shape == (5,) and B.shape == (2, 2)
        return mnp.sum(v) + mnp.sum(B)

    (g,) = mutagrad.gradient(f, X3)
    np.testing.assert_allclose(g, [2.0 + 2.0, 2.0 + 1.0, 1.0 + 1.0])


def test_a_traced_integer_in_a_shape_is_not_stacked():
    def f(x):
        n = mnp.sum(x > 0)  # a traced count (a constant of the call)
        return mnp.sum(mnp.reshape(x, (n, 1)) ** 2) + mnp.sum(mnp.tile(x, [n]))

    (g,) = mutagrad.gradient(f, X3)
    np.testing.assert_allclose(g, 2 * X3 + 3)


def test_functions_work_on_plain_values_as_numpy():
    assert mnp.mean([1.0, 2.0, 4.0]) == np.mean([1.0, 2.0, 4.0])
    np.testing.assert_array_equal(mnp.r_[1:4, 0, [5, 6]], np.r_[1:4, 0, [5, 6]])
    np.testing.assert_array_equal(mnp.c_[[1, 2], [3, 4]], np.c_[[1, 2], [3, 4]])
    np.testing.assert_array_equal(mnp.add.outer([1, 2], [3, 4]), np.add.outer([1, 2], [3, 4]))
    assert mnp.add.nin == 2 and mnp.ufunc is np.ufunc and mnp.pi == np.pi
    a = mnp.array([[1, 2]], ndmin=3, dtype=np.float32)
    assert type(a) is np.ndarray and a.shape == (1, 1, 2) and a.dtype == np.float32
    assert mnp.array(mnp.ones(2)[0]).shape == ()


def test_outside_a_call_every_result_is_numpys_own_type():
    """``import mutagrad.numpy as np`` for a whole script: what it gives outside a gradient
    call is what numpy gives, down to the type (json, isinstance and libraries see numpy)."""
    import json

    a = mnp.array([1.0, 2.0, 3.0])
    total = mnp.sum(a * a) - 1.0
    assert type(total) is np.float64 and total == 13.0
    assert json.dumps([float(total), a.tolist()]) == "[13.0, [1.0, 2.0, 3.0]]"
    made = {
        "array": a, "asarray": mnp.asarray([1.0]), "zeros": mnp.zeros(2), "ones": mnp.ones(2),
        "empty": mnp.empty(2), "full": mnp.full(2, 3.0), "arange": mnp.arange(3.0),
        "linspace": mnp.linspace(0.0, 1.0, 3), "logspace": mnp.logspace(0.0, 1.0, 3),
        "eye": mnp.eye(2), "identity": mnp.identity(2), "zeros_like": mnp.zeros_like(a),
        "ones_like": mnp.ones_like(a), "empty_like": mnp.empty_like(a),
        "full_like": mnp.full_like(a, 2.0), "ascontiguousarray": mnp.ascontiguousarray(a),
        "asfortranarray": mnp.asfortranarray(a), "r_": mnp.r_[a, 4.0], "c_": mnp.c_[a, a],
        "make_diagonal": mnp.make_diagonal(a, axis1=-1, axis2=-2), "kaiser": mnp.kaiser(4, 2.0),
        "vectorize": mnp.vectorize(lambda v: v + 1)(a), "linalg.inv": mnp.linalg.inv(mnp.eye(2)),
        "sin": mnp.sin(a), "mean of a list": mnp.mean([a, a], axis=0),
    }  # fmt: skip
    assert {name: type(value) for name, value in made.items()} == dict.fromkeys(made, np.ndarray)
    assert mnp.asarray(a) is a  # numpy's asarray: the same array, no copy
    assert type(mnp.float64(2.0)) is np.float64 and type(a[0]) is np.float64


def test_a_buffer_made_outside_a_call_is_a_plain_array_and_mutagrad_array_tracks_one():
    """A module-level scratch array from mnp.zeros is numpy's, so a traced write into it is
    refused with the fixes; mutagrad.array(np.zeros(n)) makes one that takes traced values."""
    scratch = mnp.zeros(2)

    def into_raw(x):
        scratch[0] = x[0]
        return np.sum(scratch)

    with pytest.raises(mutagrad.TracerConversionError, match=r"like=x"):
        mutagrad.grad(into_raw)(np.ones(2))
    tracked = mutagrad.array(np.zeros(2))

    def into_tracked(x):
        tracked[0] = x[0] * 3.0
        return np.sum(tracked)

    np.testing.assert_array_equal(mutagrad.grad(into_tracked)(np.ones(2)), [3.0, 0.0])


def test_array_copies_raw_data_and_respects_order_in_a_call():
    raw = np.arange(6.0).reshape(2, 3)

    def f(x):
        a = mnp.array(raw, copy=False)
        assert isinstance(a, mutagrad.WrappedArray)
        assert not np.shares_memory(mutagrad.ignore_derivatives(a), raw)
        assert mnp.array(raw, order="F").flags["F_CONTIGUOUS"]
        assert mnp.ascontiguousarray(mnp.asarray(raw).T).flags["C_CONTIGUOUS"]
        w = mnp.asarray(raw)
        assert mnp.asarray(w) is w and mnp.array(w, copy=False) is w and mnp.array(w) is not w
        return np.sum(x * w)

    np.testing.assert_array_equal(mutagrad.grad(f)(np.ones((2, 3))), raw)


def test_integer_types_cast_without_gradient_and_stay_numpy_types():
    assert np.zeros(2, dtype=mnp.int64).dtype == np.int64
    assert isinstance(np.int64(3), mnp.int64) and issubclass(np.int64, mnp.int64)
    assert type(mnp.int64(2.7)) is np.int64 and mnp.int64(2.7) == 2
    assert mnp.float32(1.5) == np.float32(1.5)

    def f(W):
        column = W[:, -1]
        cast = mnp.int64(column)
        assert cast.dtype == np.int64 and not mutagrad.is_traced(cast)
        cast[0] = 0  # the cast is a copy: W is not written
        return mnp.sum(W * W) + mnp.sum(W[:, 0][mnp.int32(W[0, -1])])

    W = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 0.0]])
    (g,) = mutagrad.gradient(f, W)
    want = 2 * W
    want[1, 0] += 1.0
    np.testing.assert_allclose(g, want)


def test_r_matrix_directive_is_refused_with_traced_values():
    # np.matrix cannot hold traced values: numpy's own conversion refuses them.
    with pytest.raises(mutagrad.TracerConversionError):
        mutagrad.gradient(lambda x: mnp.sum(mnp.r_["r", x, x]), X3)


def test_every_dispatched_numpy_function_takes_lists_of_traced_values():
    import mutagrad.numpy.linalg as linalg

    assert linalg is mnp.linalg
    dispatched = type(np.mean)
    for namespace, numpy_namespace in ((mnp, np), (mnp.linalg, np.linalg), (mnp.fft, np.fft)):
        for name in dir(numpy_namespace):
            value = getattr(numpy_namespace, name)
            if name in mnp.__all__:  # mutagrad.numpy's own (constructors returning WrappedArrays)
                continue
            if type(value) is dispatched or isinstance(value, np.ufunc):
                assert getattr(namespace, name).__wrapped__ is value, name


def test_a_traced_scalar_becomes_a_writable_0d_array():
    def f(x):
        a = mnp.asarray(x[0])
        assert isinstance(a, mutagrad.WrappedArray) and a.shape == ()
        a[()] = a * 3.0  # np.asarray of a scalar is a 0-d array: writable
        return a + mnp.array(x[1], dtype=np.float32, ndmin=1)[0]

    (g,) = mutagrad.gradient(f, X3)
    np.testing.assert_allclose(g, [3.0, 1.0, 0.0])


@pytest.mark.parametrize("window", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("beta", [0.0, 1.5, np.float32(6.0)])
def test_kaiser_differentiates_in_beta_with_numpys_window(window, beta):
    # np.kaiser converts a traced beta (np.array([0.0, M, beta])); mnp.kaiser keeps it.
    weights = np.linspace(-1.0, 2.0, window)
    value, _ = mutagrad.vjp(lambda b: mnp.kaiser(window, b), beta)
    np.testing.assert_array_equal(value, np.kaiser(window, beta), strict=True)

    def loss(b):
        return np.sum(mnp.kaiser(window, b) * weights)

    grad = mutagrad.grad(loss)(float(beta))
    want = numerical_gradient(lambda b: np.sum(np.kaiser(window, b) * weights), float(beta))[0]
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-8)
    if beta == 0.0:
        # numpy's i0 takes np.abs(x) first; abs has derivative 0 at 0 (as in every AD
        # system), so the second derivative at exactly beta = 0 is not i0's.
        return
    second = mutagrad.grad(mutagrad.grad(loss))(float(beta))
    want2 = numerical_gradient(mutagrad.grad(loss), float(beta))[0]
    np.testing.assert_allclose(second, want2, rtol=1e-5, atol=1e-7)


def test_make_diagonal_is_autograds():
    d = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -0.75]])
    out = mnp.make_diagonal(d, axis1=-1, axis2=-2)
    expected = np.zeros((2, 3, 3))
    expected[:, [0, 1, 2], [0, 1, 2]] = d
    np.testing.assert_array_equal(out, expected, strict=True)  # outside a call: numpy's type
    w = np.arange(18.0).reshape(2, 3, 3)
    grad = mutagrad.grad(lambda x: np.sum(mnp.make_diagonal(x, axis1=-1, axis2=-2) * w))(d)
    np.testing.assert_array_equal(grad, w[:, [0, 1, 2], [0, 1, 2]])
    with pytest.raises(NotImplementedError, match="axis1=-1, axis2=-2"):
        mnp.make_diagonal(d)


def test_the_namespace_reports_numpys_version():
    assert mnp.__version__ == np.__version__


def _relu_squared(v):
    return v * v if v > 0 else 0.0 * v


def _two_outputs(a, b, scale=1.0):
    return a * b * scale, a - b


M23 = np.array([[0.3, -1.2, 0.7], [2.0, -0.1, 0.4]])
W23 = np.arange(6.0).reshape(2, 3) - 2.0

# (name, keyword arguments of vectorize, function of (vectorize, x) -> scalar)
VECTORIZED = [
    ("elementwise", {}, lambda vec, x: np.sum(vec(_relu_squared)(x) * W23)),
    ("otypes", {"otypes": [float]}, lambda vec, x: np.sum(vec(_relu_squared)(x) * W23)),
    ("cache", {"cache": True}, lambda vec, x: np.sum(vec(_relu_squared)(x) * W23)),
    (
        "two outputs, excluded keyword, broadcast",
        {"excluded": {"scale"}},
        lambda vec, x: np.sum(vec(_two_outputs)(x, np.array([1.0, 2.0, 3.0]), scale=2.0)[0])
        + np.sum(vec(_two_outputs)(x, 1.5)[1] ** 2),
    ),
    (
        "signature",
        {"signature": "(n),(n)->()"},
        lambda vec, x: np.sum(vec(np.dot)(x, x[::-1] * 1.0) ** 2),
    ),
    (
        "signature with a new output dimension",
        {"signature": "(n)->(n,n)"},
        lambda vec, x: np.sum(vec(lambda u: np.outer(u, np.sin(u)))(x) ** 2),
    ),
]


@pytest.mark.parametrize(("name", "options", "loss"), VECTORIZED, ids=[v[0] for v in VECTORIZED])
def test_vectorize_differentiates_through_every_call(name, options, loss):
    def with_numpy(x):
        return loss(lambda f: np.vectorize(f, **options), x)

    def with_mnp(x):
        return loss(lambda f: mnp.vectorize(f, **options), x)

    value, grad = mutagrad.value_and_grad(with_mnp)(M23)
    assert value == with_numpy(M23.copy())
    np.testing.assert_allclose(grad, numerical_gradient(with_numpy, M23)[0], rtol=1e-6, atol=1e-8)


def test_vectorize_mirrors_numpys_values_dtypes_and_calls():
    calls = {"numpy": 0, "mnp": 0}

    def counted(key):
        def f(v):
            calls[key] += 1
            return 1 if v > 1.0 else v  # the first result is a float: every output is one

        return f

    def outputs(x):
        return mnp.vectorize(counted("mnp"))(x)

    out, _ = mutagrad.vjp(outputs, M23)
    expected = np.vectorize(counted("numpy"))(M23)
    np.testing.assert_array_equal(out, expected, strict=True)
    assert calls["mnp"] == calls["numpy"] == M23.size + 1  # numpy's extra first call

    first_int = np.array([5.0, 0.5])  # the first result is an int: numpy truncates the rest
    out, _ = mutagrad.vjp(mnp.vectorize(lambda v: 1 if v > 1.0 else v), first_int)
    np.testing.assert_array_equal(out, np.vectorize(lambda v: 1 if v > 1.0 else v)(first_int),
                                  strict=True)  # fmt: skip
    assert isinstance(mnp.vectorize(np.sin)(M23), np.ndarray)  # untraced: numpy's own


def test_vectorize_decorator_form_and_a_write_after_the_call():
    @mnp.vectorize(otypes=[float])
    def soft(v):
        return np.log1p(np.exp(v))

    def loss(x):
        y = soft(x)
        x[...] = 0.0  # the inputs' old values are read by the pullbacks: saved per element
        return np.sum(y * W23) + np.sum(x)

    def reference(x):
        y = np.log1p(np.exp(x))
        return np.sum(y * W23)

    grad = mutagrad.grad(loss)(M23)
    np.testing.assert_allclose(grad, numerical_gradient(reference, M23)[0], rtol=1e-6)


def test_looking_up_every_name_leaves_the_modules_builtins_alone():
    # mutagrad.numpy caches translated names as module globals; one named like a
    # builtin (mnp.any, mnp.max, mnp.bool) would shadow the builtin inside the
    # module's own functions. mnp.vectorize's any(a.size == 0 ...) then took numpy's
    # any of a generator (always true) and returned a constant: zero gradients.
    for name in dir(np):
        if not name.startswith("__"):
            getattr(mnp, name)
    module_globals = vars(mnp)
    assert not {"any", "all", "max", "min", "sum", "abs", "round", "bool"} & set(module_globals)
    assert mnp.any is not any and mnp.any([True, False])
    grad = mutagrad.grad(lambda x: np.sum(mnp.vectorize(_relu_squared)(x) * W23))(M23)
    np.testing.assert_allclose(grad, np.where(M23 > 0, 2 * M23 * W23, 0.0))


# ---------------------------------------------------------------------------
# Copies and views as numpy makes them, and iteration in numpy's order (issue 22).

GRID = np.array([[0.3, 1.2, -0.5], [2.0, -1.0, 0.7]])


def copies_or_views(ns, x):
    """Each result is written: a view writes y (as numpy's would), a copy does not."""
    y = x * 1.0
    outs = [ns.require(y.T, requirements=r) for r in (None, "C", ["F", "W"], "O", ["A", "E"])]
    outs += [ns.ascontiguousarray(y[:, ::2]), ns.asfortranarray(y), ns.asanyarray(y[0]),
             ns.ascontiguousarray(y[0, ::2]), ns.asfortranarray(y[1, ::-1])]  # fmt: skip
    for k, o in enumerate(outs):
        o[(0,) * o.ndim] = 7.0 + k
    return ns.sum(y * np.arange(6.0).reshape(2, 3)) + sum(ns.sum(o * o) for o in outs)


def enumerated(ns, x):
    total = 0.0
    for index, v in ns.ndenumerate(x.T):
        total = total + v * (index[0] + 2 * index[1] + 1)
    return total


def iterated(ns, x):
    total, k = 0.0, 1.0
    for v in ns.nditer(x[::-1].T):  # order 'K': memory order, numpy's own
        total, k = total + v * k, k + 1
    for a, b in ns.nditer([x, x[0]]):  # broadcast operands
        total, k = total + a * b * k, k + 1
    it = ns.nditer(x.T, flags=["multi_index", "c_index"])
    while not it.finished:
        total = total + it[0] * (it.multi_index[0] + 3 * it.index)
        it.iternext()
    with ns.nditer(x, order="F") as it:
        total = total + sum(v * (i + 1) for i, v in enumerate(it))
    return total


@pytest.mark.parametrize("program", [copies_or_views, enumerated, iterated])
def test_copies_views_and_iteration_as_numpy(program):
    expected = program(np, GRID.copy())
    result = mutagrad.withgradient(lambda x: program(mnp, x), GRID)
    assert result.val == expected
    np.testing.assert_allclose(
        result.grad[0], numerical_gradient(lambda x: program(np, x), GRID)[0], rtol=1e-6
    )


def test_nditer_values_are_read_only_views_as_numpy_s():
    def f(x):
        for v in mnp.nditer(x):
            v[...] = 1.0
        return mnp.sum(x)

    with pytest.raises(ValueError, match="read-only"):
        mutagrad.gradient(f, GRID)
    with pytest.raises(ValueError, match="read-only"):
        f(GRID.copy())  # numpy's own, outside a gradient call


def test_nditer_refuses_written_operands_by_name():
    def f(x):
        for v in mnp.nditer(x * 1.0, op_flags=["readwrite"]):
            v[...] = 2.0 * v
        return mnp.sum(x)

    with pytest.raises(mutagrad.NotDifferentiableError, match="'readwrite'"):
        mutagrad.gradient(f, GRID)
