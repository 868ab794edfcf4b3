"""Where a program talks to Python instead of numpy: each question gets numpy's answer, or a
MutagradError that names the construct and the fix.

numpy's protocols see every array operation; nothing sees ``isinstance``, a
thread, a container or a builtin. The classes here: type questions about
arrays and elements, ndarray subclasses, threads, argument containers and
leaves that cannot be differentiated, Python builtins on elements (round,
math.floor, hash, pickle, format), unbound ndarray methods, writes to a
frozen caller's array, C code that takes a traced array for a Python sequence (numpy's
shuffle), and integer buffers. Every case is checked against
numpy's value and central finite differences in every mode.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import functools
import math
import numbers
import operator
import pickle
import threading
import warnings
from collections import OrderedDict, defaultdict, namedtuple
from concurrent.futures import ThreadPoolExecutor

import attrs
import numpy as np
import pytest

import mutagrad
import mutagrad.numpy as mnp
from mutagrad.testing import check_gradient

MODES = ("poison", "snapshot", "strict")
X = np.array([0.31, 1.07, 0.73, 1.91])


def same_as_numpy(f, *args, mode="poison"):
    """f's value equals numpy's run of it, and its gradient central finite differences."""
    value = mutagrad.withgradient(f, *[np.copy(a) for a in args], mode=mode).val
    assert value == f(*[np.copy(a) for a in args])
    return check_gradient(f, *args, mode=mode)


# -- type questions ----------------------------------------------------------------------


def doubled_if_ndarray(x):
    y = x * 1.0
    if isinstance(y, np.ndarray):  # True in numpy
        y = y * 2.0
    return np.sum(y**2)


def scaled_elements(x):
    total = 0.0
    for i in range(len(x)):
        v = x[i] * 1.0
        if isinstance(v, float) and isinstance(v, np.floating) and isinstance(v, numbers.Real):
            v = v * 3.0
        if isinstance(v, numbers.Number) and np.isscalar(v) and np.ndim(v) == 0:
            v = v + v
        if not isinstance(v, np.ndarray) and isinstance(v, np.generic):
            total = total + v
    return total


def library_helper(x):
    def normalise(a):  # the usual guard in scientific code
        if not isinstance(a, np.ndarray):
            a = np.asarray(a)
        return a / np.sum(a)

    return np.sum(np.sin(normalise(x * x)))


@pytest.mark.parametrize("mode", ("poison", "snapshot"))
@pytest.mark.parametrize("f", [doubled_if_ndarray, scaled_elements, library_helper])
def test_type_questions_get_numpys_answers(f, mode):
    same_as_numpy(f, X, mode=mode)


def test_the_issue_example_value_and_gradient():
    val, (g,) = mutagrad.withgradient(doubled_if_ndarray, X)
    assert val == pytest.approx(np.sum((2 * X) ** 2))
    np.testing.assert_allclose(g, 8 * X)


def test_what_python_sees_inside_and_outside_a_call():
    seen = {}

    def f(x):
        v = x[0]
        seen.update(array=x.__class__, element=v.__class__, shape=np.shape(x), ndim=np.ndim(x),
                    scalar=(np.isscalar(x), np.isscalar(v)), types=(type(x), type(v)))  # fmt: skip
        assert issubclass(x.__class__, np.ndarray) and isinstance(x, np.ndarray)
        assert not isinstance(x, np.generic) and not isinstance(v, np.ndarray)
        return v

    mutagrad.gradient(f, X)
    assert seen["array"] is np.ndarray and seen["element"] is np.float64
    assert seen["shape"] == (4,) and seen["ndim"] == 1 and seen["scalar"] == (False, True)
    # type() is the one question answered differently (README, "What is not promised")
    assert seen["types"] == (mutagrad.WrappedArray, mutagrad.WrappedScalar)
    assert isinstance(mnp.zeros(3), np.ndarray)  # outside a call too
    float32 = mutagrad.array(np.ones(2, np.float32))
    assert isinstance(float32.sum(), np.float32) and not isinstance(float32.sum(), float)


def test_singledispatch_picks_the_ndarray_implementation():
    @functools.singledispatch
    def scale(value):
        return value

    @scale.register
    def _(value: np.ndarray):
        return value * 3.0

    check_gradient(lambda x: np.sum(scale(x * 1.0)), X)
    assert mutagrad.grad(lambda x: np.sum(scale(x)))(X) == pytest.approx(np.full(4, 3.0))


def test_numpys_own_python_code_branches_as_for_ndarrays():
    # np.piecewise asks isinstance(condlist[0], ndarray) of the conditions, traced arrays here
    def f(x):
        return np.sum(np.piecewise(x, [x < 1.0, x >= 1.0], [lambda v: v**2, lambda v: v**3]))

    same_as_numpy(f, X)


# -- ndarray subclasses --------------------------------------------------------------------


def matrix(values):
    with warnings.catch_warnings():  # np.matrix is deprecated: still a subclass users pass
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.matrix(values)


SUBCLASS_ARGUMENTS = [
    np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0]),
    matrix([[1.0, 2.0], [3.0, 4.0]]),
    np.rec.fromarrays([np.array([1.0, 2.0])], names="a").view(np.recarray)["a"].view(np.recarray),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("argument", SUBCLASS_ARGUMENTS, ids=lambda a: type(a).__name__)
def test_an_ndarray_subclass_argument_is_refused_by_name(argument, mode):
    with pytest.raises(mutagrad.NotDifferentiableError, match=type(argument).__name__) as info:
        mutagrad.withgradient(lambda x: np.sum(x**2), argument, mode=mode)
    assert "np.asarray" in str(info.value) and __file__ in str(info.value)
    assert argument.flags.writeable


@pytest.mark.parametrize(
    "entry",
    [
        lambda f, a: mutagrad.grad(f)(a),
        lambda f, a: mutagrad.jacobian(f, a),
        lambda f, a: mutagrad.pullback(f, a),
        lambda f, a: mutagrad.value_and_grad(f)(a),
    ],
)
def test_every_entry_point_refuses_a_masked_argument(entry):
    with pytest.raises(mutagrad.NotDifferentiableError, match="MaskedArray"):
        entry(lambda x: np.sum(x**2), SUBCLASS_ARGUMENTS[0])


MASK = np.ma.array([1.0, 2.0, 3.0, 4.0], mask=[0, 1, 0, 0])
MATRIX = matrix(np.eye(4) * 2.0)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.sum(x * MASK),
        lambda x: np.sum(MASK * x),
        lambda x: np.sum(np.multiply(x, MASK)),
        lambda x: np.sum(np.concatenate([x, MASK])),
        lambda x: np.sum(x @ MATRIX),
        lambda x: np.sum(np.dot(x, MATRIX)),
        lambda x: np.sum(MATRIX @ x),
    ],
)
def test_a_subclass_meeting_a_traced_value_inside_f_is_refused(f):
    with pytest.raises((mutagrad.NotDifferentiableError, mutagrad.TracerConversionError)):
        mutagrad.gradient(f, X)


def test_a_memmap_is_a_plain_array(tmp_path):
    mapped = np.memmap(tmp_path / "x", dtype=float, mode="w+", shape=(4,))
    mapped[:] = X
    np.testing.assert_allclose(mutagrad.gradient(lambda x: np.sum(x**2), mapped)[0], 2 * X)
    np.testing.assert_array_equal(mapped, X)


# -- threads ---------------------------------------------------------------------------------


def test_a_pool_thread_using_a_traced_value_is_refused_naming_the_threads():
    def f(x):
        with ThreadPoolExecutor(2) as pool:
            parts = list(pool.map(np.sin, [x[0:1], x[1:2]]))
        return np.sum(parts[0]) + np.sum(parts[1])

    with pytest.raises(mutagrad.NotDifferentiableError, match="ThreadPoolExecutor") as info:
        mutagrad.gradient(f, np.array([1.0, 2.0]))
    assert "MainThread" in str(info.value) and "Fix:" in str(info.value)


@pytest.mark.parametrize("mode", MODES)
def test_a_refusal_the_thread_swallows_still_fails_the_call(mode):
    def f(x):
        y = np.zeros_like(x)

        def work():
            y[:] = 2 * x  # the thread dies; threading's excepthook prints the error

        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        return np.sum(y * x)

    swallowed = []
    previous = threading.excepthook
    threading.excepthook = swallowed.append
    try:
        with pytest.raises(mutagrad.NotDifferentiableError, match="thread"):
            mutagrad.gradient(f, np.array([1.0, 2.0]), mode=mode)
    finally:
        threading.excepthook = previous
    assert len(swallowed) == 1


@pytest.mark.parametrize(
    "work",
    [
        lambda x, out: out.append(float(x[0])),
        lambda x, out: out.append(x[0] + 1.0),
        lambda x, out: out.append(np.asarray(x)),
        lambda x, out: out.append(x.tolist()),
        lambda x, out: out.append(mutagrad.gradient(lambda v: np.sum(v * v), x)),
        lambda x, out: x.sort(),
        lambda x, out: x.__setitem__(0, 1.0),
    ],
)
def test_every_kind_of_use_from_another_thread_is_refused(work):
    def f(x):
        out = []
        thread = threading.Thread(target=work, args=(x * 1.0, out))
        thread.start()
        thread.join()
        return np.sum(x)

    previous = threading.excepthook
    threading.excepthook = lambda args: None
    try:
        with pytest.raises(mutagrad.MutagradError):
            mutagrad.gradient(f, X)
    finally:
        threading.excepthook = previous


def test_a_thread_given_values_without_gradient_works():
    def f(x):
        with ThreadPoolExecutor(2) as pool:
            weights = pool.submit(np.exp, mutagrad.ignore_derivatives(x)).result()
        return np.sum(weights * x)

    np.testing.assert_allclose(mutagrad.gradient(f, X)[0], np.exp(X))


def test_a_thread_run_in_the_calls_context_is_traced_for_reads_and_refused_for_writes():
    def reads(x):
        context = contextvars.copy_context()
        with ThreadPoolExecutor(2) as pool:
            parts = list(pool.map(lambda v: context.run(np.sin, v), [x[0:2], x[2:]]))
        return np.sum(parts[0]) + np.sum(parts[1])

    np.testing.assert_allclose(mutagrad.gradient(reads, X)[0], np.cos(X))

    def writes(x):
        y = np.zeros_like(x)

        def work():
            y[:2] = x[:2] * 2.0

        context = contextvars.copy_context()
        thread = threading.Thread(target=context.run, args=(work,))
        thread.start()
        thread.join()
        return np.sum(y)

    previous = threading.excepthook
    threading.excepthook = lambda args: None
    try:
        with pytest.raises(mutagrad.NotDifferentiableError, match="writes"):
            mutagrad.gradient(writes, X)
    finally:
        threading.excepthook = previous


def test_a_value_used_by_a_thread_after_the_call_returned_is_a_constant():
    kept = []
    mutagrad.gradient(lambda x: kept.append(x * 2.0) or np.sum(x), X)
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(lambda: np.sum(kept[0])).result()
    assert result == pytest.approx(2 * np.sum(X))


def test_threads_differentiating_with_one_callers_array_do_not_see_each_other():
    shared = np.array([1.0, 2.0, 3.0])
    failures = []

    def f(x):
        y = x * 1.0
        y[0] = 2.0
        x[1] = 5.0  # the argument itself: copied on this first write
        return np.sum(y * x)

    def worker():
        for _ in range(150):
            try:
                np.testing.assert_allclose(mutagrad.gradient(f, shared)[0], [2.0, 5.0, 6.0])
                np.testing.assert_allclose(mutagrad.grad(np.sum)(shared), np.ones(3))
            except Exception as error:
                failures.append(repr(error))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert shared.flags.writeable
    np.testing.assert_array_equal(shared, [1.0, 2.0, 3.0])


def test_a_nested_call_on_the_same_array_leaves_it_writable():
    shared = np.array([1.0, 2.0])

    def outer(x):
        inner = mutagrad.gradient(lambda y: np.sum(y * y), shared)[0]  # frozen twice
        return np.sum(x * inner)

    np.testing.assert_allclose(mutagrad.gradient(outer, shared)[0], 2 * shared)
    assert shared.flags.writeable


# -- containers and leaves -----------------------------------------------------------------


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: np.ndarray

    def loss(self):
        return np.sum(self.w**2) + np.sum(self.b)


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    scale: float = 2.0


@attrs.define
class Converted:
    w: np.ndarray = attrs.field(converter=np.asarray)

    def loss(self):
        return np.sum(np.sin(self.w))


Pair = namedtuple("Pair", "w b")
W, B = np.array([1.0, 2.0]), np.array([0.5, -1.0])


@pytest.mark.parametrize(
    "argument, kind",
    [
        (OrderedDict(w=W, b=B), OrderedDict),
        (defaultdict(list, w=W, b=B), defaultdict),
        ({"w": W, "b": B}, dict),
        (Pair(W, B), Pair),
    ],
)
def test_mapping_and_tuple_containers_are_pytrees(argument, kind):
    (g,) = mutagrad.gradient(lambda p: np.sum(p["w"] ** 2) + np.sum(p["b"]) if isinstance(
        p, dict) else np.sum(p.w ** 2) + np.sum(p.b), argument)  # fmt: skip
    assert type(g) is kind
    w, b = (g["w"], g["b"]) if isinstance(g, dict) else (g.w, g.b)
    np.testing.assert_allclose(w, 2 * W)
    np.testing.assert_allclose(b, np.ones(2))
    if kind is defaultdict:
        assert g.default_factory is list


def test_a_dataclass_argument_keeps_its_class_for_f_and_gives_a_fields_gradient():
    (g,) = mutagrad.gradient(lambda p: p.loss(), Params(W, B))  # a method of the class
    np.testing.assert_allclose(g.w, 2 * W)
    np.testing.assert_allclose(g.b, np.ones(2))
    (g,) = mutagrad.gradient(lambda p: np.sum(p.w) * p.scale, Frozen(W))
    np.testing.assert_allclose(g.w, [2.0, 2.0])
    assert g.scale == pytest.approx(3.0)


def test_an_attrs_argument_keeps_its_methods_and_skips_its_converter():
    (g,) = mutagrad.gradient(lambda p: p.loss(), Converted(W))
    np.testing.assert_allclose(g.w, np.cos(W))


def test_structured_outputs_come_back_as_plain_arrays():
    out, _ = mutagrad.pullback(lambda x: OrderedDict(a=x * 2.0, b=Params(x, x)), W)
    assert type(out) is OrderedDict and type(out["a"]) is np.ndarray
    assert type(out["b"]) is Params and type(out["b"].w) is np.ndarray


ENTRY_POINTS = {
    "gradient": lambda f, a: mutagrad.gradient(f, a),
    "withgradient": lambda f, a: mutagrad.withgradient(f, a),
    "pullback": lambda f, a: mutagrad.pullback(f, a),
    "jacobian": lambda f, a: mutagrad.jacobian(f, a),
    "hessian": lambda f, a: mutagrad.hessian(f, a),
    "grad": lambda f, a: mutagrad.grad(f)(a),
    "value_and_grad": lambda f, a: mutagrad.value_and_grad(f)(a),
    "vjp": lambda f, a: mutagrad.vjp(f, a),
    "jacrev": lambda f, a: mutagrad.jacrev(f)(a),
}


class Opaque:
    def __init__(self):
        self.w = np.array([1.0])


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
@pytest.mark.parametrize(
    "leaf",
    [np.array([1.0, 2.0], dtype=object), np.array([True, False]), True, np.bool_(False),
     Opaque()],
    ids=["object", "bool", "python-bool", "numpy-bool", "unknown"],
)
def test_a_leaf_that_cannot_be_differentiated_is_refused_by_every_entry_point(name, leaf):
    with pytest.raises((mutagrad.MutagradError, TypeError)) as info:
        ENTRY_POINTS[name](lambda a: 1.0, leaf)
    assert isinstance(info.value, mutagrad.MutagradError) or "differentiates" in str(info.value)


# Each entry point's gradient of |a|^2 (2 conj(a), JAX's convention) from its result.
GRADIENT_OF = {
    "gradient": lambda result: result[0],
    "withgradient": lambda result: result.grad[0],
    "pullback": lambda result: result[1](1.0)[0],
    "jacobian": lambda result: np.reshape(result[0], -1 if np.ndim(result[0]) else ()),
    "grad": lambda result: result,
    "value_and_grad": lambda result: result[1],
    "vjp": lambda result: result[1](1.0)[0],
    "jacrev": lambda result: result,
}


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("leaf", [np.array([1 + 2j, 3j]), 2j], ids=["array", "number"])
def test_a_complex_leaf_is_differentiated_by_every_entry_point(name, leaf):
    def f(a):
        return np.sum(np.abs(a) ** 2)

    if name == "hessian":  # its gradient is complex: refused, naming the real parts as the fix
        with pytest.raises(mutagrad.NotDifferentiableError, match=r"f\(x \+ 1j \* y\)"):
            ENTRY_POINTS[name](f, leaf)
        return
    np.testing.assert_allclose(GRADIENT_OF[name](ENTRY_POINTS[name](f, leaf)), 2 * np.conj(leaf))


def test_an_unknown_object_names_its_class_and_the_fixes():
    with pytest.raises(mutagrad.NotDifferentiableError, match="Opaque") as info:
        mutagrad.gradient(lambda o: np.sum(o.w), Opaque())
    assert "keyword argument" in str(info.value) and "dataclass" in str(info.value)


def test_arguments_that_are_not_data_pass_through_with_no_gradient():
    def f(x, label, fn, nothing):
        return np.sum(fn(x))

    assert mutagrad.gradient(f, W, "run", np.sin, None)[1:] == (None, None, None)


@pytest.mark.parametrize("not_a_function", [3, None, "f", np.array([1.0])])
@pytest.mark.parametrize("name", ["gradient", "withgradient", "pullback", "jacobian"])
def test_a_function_that_is_not_callable_is_refused_before_anything_runs(not_a_function, name):
    x = np.array([1.0, 2.0])
    with pytest.raises(TypeError, match="differentiates a function") as info:
        getattr(mutagrad, name)(not_a_function, x)
    assert "not callable" not in str(info.value) and x.flags.writeable


# -- builtins on elements and values -----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_round_floor_ceil_trunc_divmod_and_format_answer_as_numpy(mode):
    def f(x):
        v = x[0] * 10.0
        assert round(v) == 3 and type(round(v)) is int
        assert isinstance(round(v, 1), np.float64) and round(v, 1) == 3.1
        assert (math.floor(v), math.ceil(v), math.trunc(v)) == (3, 4, 3)
        _, r = divmod(x[1], 0.5)
        assert f"{x[0]:.2f}" == "0.31" and f"{x}".startswith("[0.3")
        return x[1] * math.floor(v) + r + round(x[2], 1) + divmod(7.0, x[3])[1]

    same_as_numpy(f, X, mode=mode)


def test_a_traced_scalar_is_not_hashable_and_a_constant_one_is():
    @functools.lru_cache
    def cached(v):
        return v * v

    with pytest.raises(mutagrad.TracerConversionError, match="hash") as info:
        mutagrad.gradient(lambda x: cached(x[0]) + cached(x[1]), X)
    assert "lru_cache" in str(info.value) and __file__ in str(info.value)
    constant = mutagrad.array(X)[0]
    assert hash(constant) == hash(np.float64(X[0]))
    assert {np.float64(X[0]): "found"}[mutagrad.WrappedScalar(np.float64(X[0]))] == "found"


def test_copy_and_deepcopy_of_traced_values_keep_their_gradient():
    check_gradient(lambda x: np.sum(copy.copy(x) * copy.deepcopy([x])[0] * x), X)


def test_pickling_a_traced_value_is_refused_and_a_constant_round_trips():
    with pytest.raises(mutagrad.TracerConversionError, match="pickling") as info:
        mutagrad.gradient(lambda x: np.sum(pickle.loads(pickle.dumps(x * 2.0)) * x), X)
    assert __file__ in str(info.value)
    buffer = mutagrad.Buffer(3)
    buffer[1] = 2.0
    restored = pickle.loads(pickle.dumps(buffer))
    assert type(restored) is mutagrad.Buffer
    np.testing.assert_array_equal(np.asarray(restored), [0.0, 2.0, 0.0])
    scalar = pickle.loads(pickle.dumps(mutagrad.WrappedScalar(np.float64(X[2]))))
    assert type(scalar) is mutagrad.WrappedScalar and scalar == X[2]


# -- bytes: Python's consumers of the buffer protocol ------------------------------------------


def bytes_of_an_integer_intermediate(x):
    b = bytes(np.argsort(x))  # numpy: the int64 indices' 24 bytes, not one per element
    return np.sum(x) * len(b) + int.from_bytes(np.argsort(x)[:1], "little") * x[0]


@pytest.mark.parametrize("mode", MODES)
def test_bytes_of_an_integer_array_inside_a_call_are_its_memory(mode):
    x = np.array([3.0, 1.0, 2.0])
    g = same_as_numpy(bytes_of_an_integer_intermediate, x, mode=mode)[0]
    np.testing.assert_allclose(g, [25.0, 24.0, 24.0])  # len(b) = 24; argsort's first index 1


@pytest.mark.parametrize(
    "value",
    [
        np.array([1, 2, 3]),
        np.arange(6.0).reshape(2, 3).T,
        np.array([True, False]),
        np.array(2.5),
        np.array([1, 2], np.uint8),
    ],
    ids=["int64", "float-transposed", "bool", "float-0d", "uint8"],
)
def test_bytes_and_int_from_bytes_of_a_constant_read_its_memory_as_numpy(value):
    def both(a):
        return bytes(a), int.from_bytes(a, "little"), b"%b" % a

    expected = both(value.copy())
    assert both(mutagrad.array(value)) == expected

    def f(x):
        assert both(mutagrad.array(value)) == expected  # a constant inside the call
        return np.sum(x)

    mutagrad.gradient(f, X)


@pytest.mark.parametrize("convert", [bytes, lambda y: int.from_bytes(y, "little")],
                         ids=["bytes", "int.from_bytes"])  # fmt: skip
def test_bytes_of_a_traced_value_are_refused_as_tobytes_is(convert):
    def f(x):
        convert(x * 2.0)
        return np.sum(x)

    with pytest.raises(mutagrad.TracerConversionError, match="carry no gradient") as info:
        mutagrad.gradient(f, X)
    assert __file__ in str(info.value) and "(mutagrad.ignore_derivatives(" in str(info.value)


def test_bytes_of_a_0d_integer_array_is_refused_naming_both_readings():
    # numpy answers bytes(np.array(3)) with 3 zero bytes (a size) and int.from_bytes with
    # its memory; a WrappedArray is asked the same question by both.
    for convert in (bytes, lambda y: int.from_bytes(y, "little")):
        with pytest.raises(mutagrad.UnsupportedAttributeError, match="0-d integer") as info:
            convert(mutagrad.array(3))
        assert __file__ in str(info.value) and "bytes(int(x))" in str(info.value)
    # a traced integer element is numpy's scalar: bytes() reads it as a size, as numpy does
    mutagrad.gradient(lambda x: x[0] * len(bytes(np.argmax(x))), X)


@pytest.mark.parametrize("mode", MODES)
def test_bytes_concatenated_with_an_element_are_its_memory_or_refused(mode):
    constant = np.array([1.5, 2.0])

    def f(x):  # numpy: the element's 8 bytes, read through its buffer
        return x[0] * len(b"ab" + mutagrad.array(constant)[1] + bytearray(b"c"))

    same_as_numpy(f, X, mode=mode)
    with pytest.raises(mutagrad.TracerConversionError, match="bytes concatenation") as info:
        mutagrad.gradient(lambda x: x[0] * len(b"ab" + x[1]), X, mode=mode)
    assert __file__ in str(info.value)
    with pytest.raises(mutagrad.TracerConversionError, match="bytes concatenation"):
        mutagrad.jvp(lambda x: x[0] * len(b"ab" + x[1]), (X,), (X,))


@pytest.mark.parametrize("inside", [False, True], ids=["constant", "in-a-call"])
@pytest.mark.parametrize("value", [np.array([1, 2, 3]), np.array([1.5, 2.0]), np.array(2.5)],
                         ids=["int", "float", "float-0d"])  # fmt: skip
def test_bytearray_of_an_array_is_refused_by_name_rather_than_iterated(value, inside):
    # numpy copies the buffer (24 bytes for three int64); without one, Python would
    # iterate the elements (3 bytes) or raise an unclear TypeError.
    def f(x):
        y = mutagrad.array(value)
        if inside and value.dtype.kind == "f":
            y = mnp.zeros(value.shape)
            y[...] = value + 0.0 * x[0]  # traced (a 0-d one too)
        with pytest.raises(mutagrad.UnsupportedAttributeError, match="bytearray") as info:
            bytearray(y)
        assert __file__ in str(info.value) and "bytearray(x.tobytes())" in str(info.value)
        return np.sum(x)

    if inside:
        mutagrad.gradient(f, X)
    else:
        f(X)


def test_iteration_and_sizes_after_a_refused_index_still_answer_as_numpy():
    w = mutagrad.array([1, 2, 3])
    assert bytearray(mutagrad.array(3)) == bytearray(np.array(3))  # a 0-d integer: a size
    assert bytes(iter(w)) == bytes(iter(np.array([1, 2, 3]))) == b"\x01\x02\x03"
    for _ in range(2):  # the same instructions, after a refused index each time
        with pytest.raises(TypeError):
            operator.index(w)
        assert list(w) == [1, 2, 3] and [int(v) for v in w] == [1, 2, 3]
    assert np.array_equal(np.zeros(w[:2]), np.zeros((1, 2)))


# -- unbound methods and frozen caller arrays ---------------------------------------------------


@pytest.mark.parametrize(
    "call, fix",
    [
        (lambda y, x: np.ndarray.sort(y), "y.sort"),
        (lambda y, x: np.ndarray.__iadd__(y, x), "y += value"),
        (lambda y, x: np.ndarray.fill(y, 0.0), "y.fill"),
    ],
)
def test_an_unbound_ndarray_method_on_a_traced_value_is_explained(call, fix):
    def f(x):
        y = x * 1.0
        call(y, x)
        return np.sum(y)

    with pytest.raises(mutagrad.UnsupportedAttributeError, match="unbound") as info:
        mutagrad.gradient(f, X)
    assert fix in str(info.value) and __file__ in str(info.value)


def test_writing_the_base_of_a_view_argument_names_the_argument_and_the_fix():
    big = np.arange(6.0)

    def f(v):
        big[2] = 5.0  # big is read-only while the call runs: v is a view of it
        return np.sum(v)

    with pytest.raises(mutagrad.NotDifferentiableError, match="argument 0") as info:
        mutagrad.gradient(f, big[1:4])
    assert "a view of an array of shape (6,)" in str(info.value)
    assert "Fixes:" in str(info.value) and __file__ in str(info.value)
    assert big.flags.writeable and big[2] == 2.0


# -- C code that takes a traced array for a Python sequence -----------------------------------
#
# numpy's shuffle checks for an ndarray in C, which a traced array is not, and swaps the rows
# of anything else as Python would, `x[i], x[j] = x[j], x[i]`: rows that are views come out
# duplicated, where an ndarray's are swapped through a buffer. Row shuffles are refused; a 1-D
# shuffle (its elements are scalars, not views) and writes spelled in Python are numpy's.

ROWS_WEIGHTS = np.arange(1.0, 13.0) ** 2


def shuffled_rows(shuffle, shape=(6, 2)):
    def f(x):
        y = x.reshape(shape) * 1.0
        shuffle(y)
        return np.sum(y.reshape(-1) * ROWS_WEIGHTS)

    return f


def _seeded_global_shuffle(y):
    np.random.seed(3)
    np.random.shuffle(y)


ROW_SHUFFLES = {
    "Generator": lambda y: np.random.default_rng(3).shuffle(y),
    "RandomState": lambda y: np.random.RandomState(3).shuffle(y),
    "np.random.shuffle": _seeded_global_shuffle,
}


@pytest.mark.parametrize("shape", [(6, 2), (3, 2, 2), (12, 1)])
@pytest.mark.parametrize("name", ROW_SHUFFLES)
@pytest.mark.parametrize("mode", MODES)
def test_a_shuffle_of_rows_is_refused_naming_the_line_and_the_fix(name, shape, mode):
    f = shuffled_rows(ROW_SHUFFLES[name], shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # numpy's own: "not a subclass of Sequence"
        with pytest.raises(mutagrad.NotDifferentiableError, match="rows are views") as info:
            mutagrad.withgradient(f, np.arange(1.0, 13.0), mode=mode)
    where, source = str(info.value).splitlines()[1:3]  # the user's line: file:line, its code
    assert where.strip().startswith(f"{__file__}:") and "shuffle(y)" in source
    assert "permutation(len(y))" in str(info.value) and "does not promise" in str(info.value)


def test_a_shuffle_of_rows_is_refused_outside_a_gradient_call_too():
    y = mutagrad.array(np.arange(12.0).reshape(6, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(mutagrad.NotDifferentiableError, match="rows are views"):
            np.random.default_rng(3).shuffle(y)


@pytest.mark.parametrize("make", [np.random.default_rng, np.random.RandomState])
@pytest.mark.parametrize("mode", ("poison", "snapshot"))
def test_the_suggested_permutation_gives_numpys_shuffle(make, mode):
    def permuted(x):
        y = x.reshape(6, 2) * 1.0
        y[...] = y[make(3).permutation(len(y))]
        return np.sum(y.reshape(-1) * ROWS_WEIGHTS)

    def shuffled(x):
        y = x.reshape(6, 2) * 1.0
        make(3).shuffle(y)
        return np.sum(y.reshape(-1) * ROWS_WEIGHTS)

    x = np.arange(1.0, 13.0)
    assert mutagrad.withgradient(permuted, x, mode=mode).val == shuffled(x.copy())
    check_gradient(permuted, x, mode=mode)


@pytest.mark.parametrize(
    "shuffle",
    [
        lambda y: np.random.default_rng(3).shuffle(y.reshape(-1)),
        lambda y: np.random.RandomState(3).shuffle(y.reshape(-1)),
        lambda y: np.random.default_rng(3).shuffle(y[:, 1]),  # a strided 1-D view
    ],
)
@pytest.mark.parametrize("mode", ("poison", "snapshot"))
def test_a_one_d_shuffle_is_numpys(shuffle, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        same_as_numpy(shuffled_rows(shuffle), np.arange(1.0, 13.0), mode=mode)


@pytest.mark.parametrize(
    "write",
    [
        lambda y: y.__setitem__(0, y[1]),
        lambda y: operator.setitem(y, slice(1, None), y[:-1]),
    ],
)
def test_rows_written_by_a_call_spelled_in_python_are_numpys(write):
    same_as_numpy(shuffled_rows(write), np.arange(1.0, 13.0))


@pytest.mark.parametrize(
    "write, called",
    [
        (lambda y: list(map(y.__setitem__, [0], [y[1]])), "list()"),
        # (the call is read by the name it is spelled with: setitem behind a partial is not)
        (lambda y: functools.partial(operator.setitem, y)(0, y[1]), "partial(operator.setitem"),
    ],
)
def test_c_code_storing_a_view_of_the_array_written_is_refused(write, called):
    f = shuffled_rows(write)
    with pytest.raises(mutagrad.NotDifferentiableError, match="C code run by") as info:
        mutagrad.gradient(f, np.arange(1.0, 13.0))
    assert called in str(info.value).splitlines()[0]
    assert f"{__file__}:" in str(info.value) and "fancy index" in str(info.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda y: np.random.default_rng(3).permutation(y),
        lambda y: np.random.RandomState(3).permutation(y),
        lambda y: np.random.default_rng(3).permuted(y, axis=0),
        lambda y: np.random.default_rng(3).choice(y, 3),
        lambda y: np.random.RandomState(3).choice(y[:, 0], 3),
    ],
)
def test_numpys_random_functions_that_read_an_array_refuse_a_traced_one(call):
    def f(x):
        return np.sum(call(x.reshape(6, 2) * 1.0))

    with pytest.raises(mutagrad.TracerConversionError, match=r"np\.asarray"):
        mutagrad.gradient(f, np.arange(1.0, 13.0))


# -- integer buffers: one rule ---------------------------------------------------------------


def store_element(x):
    buffer = np.zeros(4, int)
    buffer[0] = x[0] * 3.0
    return np.sum(buffer) + x[1]


def store_slice(x):
    buffer = np.zeros(4, int)
    buffer[:] = x * 3.0
    return np.sum(buffer) + x[1]


def store_fill(x):
    buffer = np.zeros(4, int)
    buffer.fill(x[0] * 3.0)
    return np.sum(buffer) + x[1]


def store_traced_buffer(x):
    buffer = np.zeros_like(x, dtype=int)
    buffer[0] = x[0] * 3.0
    return np.sum(buffer) + x[1]


@pytest.mark.parametrize("f", [store_element, store_slice, store_fill, store_traced_buffer])
def test_a_traced_float_stored_into_an_integer_array_is_refused(f):
    with pytest.raises((mutagrad.TracerConversionError, mutagrad.NotDifferentiableError)) as info:
        mutagrad.gradient(f, X)
    assert "int" in str(info.value) and "astype(int)" in str(info.value)


def cast_then_store(x):
    buffer = np.zeros(4, int)
    buffer[0] = int(x[0] * 3.0)
    buffer[1] = np.int64(x[1] * 3.0)
    buffer[2] = round(x[2] * 3.0)
    buffer[:2] += (x[:2] * 3.0).astype(int)
    buffer[2:] = np.asarray(x[2:] * 3.0, dtype=int)
    return np.sum(buffer * x)


@pytest.mark.parametrize("mode", ("poison", "snapshot"))
def test_an_explicit_cast_before_the_store_is_a_constant(mode):
    g = same_as_numpy(cast_then_store, X, mode=mode)[0]
    np.testing.assert_allclose(g, [0.0, 6.0, 2.0, 5.0])  # the truncated buffer itself


@pytest.mark.parametrize("op", [operator.mul, operator.add, operator.sub, operator.truediv])
def test_a_python_complex_with_a_traced_float_scalar(op):
    # Python's complex operators take an np.float64 (a float) and answer a Python complex:
    # the traced result is that value, with its derivative.
    def f(x):
        return np.abs(op(1j + 0.5, np.sum(x))) ** 2

    x = np.array([0.3, 0.4])
    value, (g,) = mutagrad.withgradient(f, x)
    assert value == f(x.copy())
    h = 1e-6
    step = np.array([h, 0.0])
    numerical = (f(x + step) - f(x - step)) / (2 * h)
    np.testing.assert_allclose(g, [numerical, numerical], rtol=1e-6)
