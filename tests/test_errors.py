"""Every MutagradError raise site, triggered: each names the user's file:line and a fix.

The raise sites are read from mutagrad's source with ``ast`` (every ``raise``
of a call that is not a builtin exception); each trigger below runs a small
program that reaches one of them. The tests check that

* every raise site is reached by some trigger (a new raise site needs a
  trigger here, or a place in :data:`UNREACHABLE` with the reason);
* the error each trigger raises names a line of this file (``file:line``)
  and says how to fix it (``Fix:``, ``Fixes:`` or ``Possible fixes``).

Which site raised is read from the error's full traceback (filtering off):
its last frame is the ``raise`` statement.
"""

from __future__ import annotations

import ast
import builtins
import collections
import math
import os
import re
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import mutagrad
import mutagrad.numpy as mnp
from mutagrad.diagnostics.tracebacks import FILTERING_VARIABLE

SOURCE = Path(mutagrad.__file__).parent
THIS_FILE = Path(__file__).name
X = np.array([1.0, 2.0, 3.0, 4.0])

# Raise sites no program can reach, with the reason (file name, enclosing function).
UNREACHABLE = {
    ("memory.py", "__init__"): "x.view(other_dtype) of a traced array is refused first",
    ("memory.py", "element"): "views made by numpy operations stay on their base's grid",
    ("mutation.py", "_value_positions"): (
        "np.place, np.fill_diagonal and x.flat[k] = v copy values only: every number they "
        "leave is a value's"
    ),
    ("jvps.py", "transposed_jvp"): (
        "no vjp with a transposed forward rule is known to refuse on real values: svd's and "
        "qr's completing columns (the trigger this had) now take the hand forward rules of "
        "factorizations.py, cutoffs are refused before the rule runs, phases are complex"
    ),
    ("dispatch.py", "trace_through"): (
        "the recursion guard: every numpy function that calls a method of the same name has "
        "a rule (the other raise in trace_through is reached)"
    ),
}
# Callees whose raise is not a MutagradError made there, and the tools' own
# exceptions (a command-line argument's check, the time limit of a program run).
NOT_MUTAGRAD_ERRORS = {
    "LinAlgError", "for_the_user", "ArgumentTypeError", "ProgramTimeout", "Timeout",
    "_zygote_call_failed",  # a TypeError: jacobian(f, 1) meant as argnums (test_conventions)
    "InvalidArgument",  # hypothesis' error for a strategy's bad argument (test_strategies)
    "Unfingerprintable",  # the fingerprint's, raised by checkpointed as a MutagradError
}


def raise_sites() -> dict[tuple[str, int], tuple[str, int, int]]:
    """``(path, first line) -> (enclosing function, first line, last line)`` of each raise."""
    builtin_errors = {name for name in dir(builtins) if name.endswith(("Error", "Exception"))}
    sites = {}
    for path in sorted(SOURCE.rglob("*.py")):
        if "report" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            func = node.exc.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in builtin_errors or name in NOT_MUTAGRAD_ERRORS:
                continue
            enclosing = min(
                (f for f in functions if f.lineno <= node.lineno <= f.end_lineno),
                key=lambda f: f.end_lineno - f.lineno,
            )
            sites[str(path), node.lineno] = (enclosing.name, node.lineno, node.end_lineno)
    return sites


TRIGGERS: dict[str, Callable[[], object]] = {}


def trigger(fn: Callable[[], object]) -> Callable[[], object]:
    TRIGGERS[fn.__name__] = fn
    return fn


def raise_site_of(error: BaseException) -> tuple[str, int]:
    traceback = error.__traceback__
    while traceback.tb_next is not None:
        traceback = traceback.tb_next
    return traceback.tb_frame.f_code.co_filename, traceback.tb_lineno


# -- the API ---------------------------------------------------------------------------


@trigger
def boolean_result():
    mutagrad.gradient(lambda x: np.sum(x) > 0, X)


@trigger
def python_boolean_result():
    mutagrad.gradient(lambda x: bool(np.sum(x) > 0), X)


@trigger
def tuple_result_without_has_aux():
    mutagrad.grad(lambda x: (np.sum(x), x))(X)


@trigger
def has_aux_without_a_pair():
    mutagrad.grad(np.sum, has_aux=True)(X)


@trigger
def integer_result():
    mutagrad.gradient(lambda x: np.argmax(x), X)


@trigger
def non_numeric_result():
    mutagrad.gradient(lambda x: "done", X)


@trigger
def array_result():
    mutagrad.gradient(lambda x: x * 2.0, X)


@trigger
def jacobian_of_a_non_array_result():
    mutagrad.jacobian(lambda x: "done", X)


@trigger
def jacobian_of_a_boolean_result():
    mutagrad.jacobian(lambda x: x > 0, X)


@trigger
def argument_changed_through_an_outside_view():
    a = np.ones(3)
    outside = a[:]

    def f(x):
        outside[0] = 100.0
        return np.sum(x)

    mutagrad.gradient(f, a)


@trigger
def tangent_changed_through_an_outside_view():
    t = np.ones(3)
    outside = t[:]

    def f(x):
        outside[0] = 100.0
        return x * 2.0

    mutagrad.jvp(f, (np.ones(3),), (t,))


@trigger
def argument_made_writeable_while_f_ran():
    large = np.ones(20_000)  # held by this name only: proved to have no view, not read again

    def f(x):
        large.setflags(write=True)
        return np.sum(x)

    mutagrad.gradient(f, large)


@trigger
def tangent_made_writeable_while_f_ran():
    large = np.ones(20_000)

    def f(x):
        large.setflags(write=True)
        return x * 2.0

    mutagrad.jvp(f, (np.ones(20_000),), (large,))


@trigger
def back_with_too_few_cotangents():
    _, back = mutagrad.pullback(lambda x: (x * 2.0, x * 3.0), X)
    back(np.ones(4))


@trigger
def back_with_a_cotangent_of_the_wrong_shape():
    _, back = mutagrad.pullback(lambda x: x * 2.0, X)
    back(np.ones(3))


@trigger
def back_after_the_enclosing_call_returned():
    kept = []
    mutagrad.gradient(lambda x: kept.append(mutagrad.pullback(np.sum, x)[1]) or np.sum(x), X)
    kept[0](1.0)


@trigger
def explain_inside_a_gradient_call():
    mutagrad.gradient(lambda x: mutagrad.explain(np.sum, x, file=None).outcome and np.sum(x), X)


@trigger
def returning_an_open_buffer():
    mutagrad.gradient(lambda y: mutagrad.Buffer(y), X)


@trigger
def parameters_in_use_by_another_thread():
    w = mutagrad.array(X)
    ps = mutagrad.Params([w])
    inside, release = threading.Event(), threading.Event()

    def hold():
        def loss():
            inside.set()
            release.wait(10)
            return np.sum(w)

        mutagrad.gradient(loss, ps)

    holder = threading.Thread(target=hold)
    holder.start()
    inside.wait(10)
    try:
        mutagrad.gradient(lambda: np.sum(w * 2.0), ps)
    finally:
        release.set()
        holder.join()


# -- modes -----------------------------------------------------------------------------


def _fill_after_use(x):
    y = x * x
    x[0] = 0.0
    return np.sum(y)


@trigger
def strict_mode_write():
    mutagrad.gradient(_fill_after_use, X, mode="strict")


@trigger
def poisoned_capture():
    mutagrad.gradient(_fill_after_use, X)


@trigger
def snapshot_of_a_closure_rule():
    @mutagrad.primitive
    def scaled(v):
        return v * 2.0

    @mutagrad.rrule(scaled)
    def scaled_rule(v):
        return v * 2.0, lambda dy: (dy * 2.0,)

    def f(x):
        y = scaled(x)
        x[0] = 5.0
        return np.sum(y)

    mutagrad.gradient(f, X, mode="snapshot")


@trigger
def frozen_buffer_write():
    def f(y):
        buf = mutagrad.Buffer(y)
        buf[:] = y
        out = buf.copy()
        buf[0] = 1.0
        return np.sum(out)

    mutagrad.gradient(f, X)


# -- conversions -----------------------------------------------------------------------


@trigger
def asarray_of_a_traced_array():
    mutagrad.gradient(lambda x: np.sum(np.asarray(x)), X)


@trigger
def float_of_a_traced_value():
    mutagrad.gradient(lambda x: float(x[0]), X)


@trigger
def complex_of_a_traced_value():
    mutagrad.gradient(lambda x: complex(x[0]).real, X)


@trigger
def item_of_a_traced_value():
    mutagrad.gradient(lambda x: x[0].item(), X)


@trigger
def tolist_of_a_traced_array():
    mutagrad.gradient(lambda x: sum(x.tolist()), X)


@trigger
def math_function_of_a_traced_value():
    mutagrad.gradient(lambda x: math.sin(x[0]), X)


@trigger
def bytes_of_a_traced_array():
    mutagrad.gradient(lambda x: len(x.tobytes()) * np.sum(x), X)


@trigger
def bytearray_of_an_array():
    bytearray(mutagrad.array([1, 2, 3]))  # Python would iterate it: 3 bytes for numpy's 24


@trigger
def bytes_concatenated_with_a_traced_scalar():
    mutagrad.gradient(lambda x: len(b"ab" + x[0]) * x[0], X)


@trigger
def bytes_of_a_0d_integer_array():
    bytes(mutagrad.array(3))  # a size to bytes(), memory to int.from_bytes()


@trigger
def ufunc_into_a_raw_array():
    def f(x):
        out = np.zeros(4)
        np.sin(x, out=out)
        return np.sum(out)

    mutagrad.gradient(f, X)


@trigger
def two_output_ufunc_into_raw_arrays():
    def f(x):
        fractional, whole = np.zeros(4), np.zeros(4)
        np.modf(x, out=(fractional, whole))
        return np.sum(fractional)

    mutagrad.gradient(f, X)


@trigger
def one_of_two_ufunc_outputs_into_a_raw_array():
    def f(x):
        fractional, whole = np.zeros(4), x * 0.0
        np.modf(x, out=(fractional, whole))
        return np.sum(whole)

    mutagrad.gradient(f, X)


@trigger
def function_out_into_a_raw_array():
    def f(x):
        out = np.zeros(())
        np.sum(x, out=out)
        return out

    mutagrad.gradient(f, X)


@trigger
def copyto_into_a_raw_array():
    def f(x):
        buf = np.zeros(4)
        np.copyto(buf, x)
        return np.sum(buf)

    mutagrad.gradient(f, X)


@trigger
def put_into_a_raw_array():
    def f(x):
        buf = np.zeros(4)
        np.put(buf, [0, 1], x[:2])
        return np.sum(buf)

    mutagrad.gradient(f, X)


@trigger
def written_after_asarray_exported_it():
    def f(x):
        y = x * 1.0
        plain = np.asarray(mutagrad.ignore_derivatives(y))
        y[0] = x[1]
        return np.sum(y) + np.sum(plain)

    mutagrad.gradient(f, X)


# -- writes ----------------------------------------------------------------------------


@trigger
def float_into_an_integer_array():
    def f(x):
        counts = mnp.zeros(4, dtype=np.int64)
        counts[0] = x[0]
        return np.sum(x)

    mutagrad.gradient(f, X)


@trigger
def write_of_values_numpy_copies_element_by_element():
    def f(x):
        x[::2] = x[2:]
        return np.sum(x)

    mutagrad.gradient(f, np.arange(5.0)[::-1])  # a reversed argument written from itself


@trigger
def write_to_an_argument_sharing_memory():
    def f(a, b):
        a[0] = 1.0
        return np.sum(a * b)

    mutagrad.gradient(f, X, X)


@trigger
def write_through_a_detached_view():
    def f(x):
        y = x * 1.0
        mutagrad.ignore_derivatives(y)[0] = 0.0
        return np.sum(y)

    mutagrad.gradient(f, X)


@trigger
def write_to_a_value_handed_to_a_pullback():
    @mutagrad.primitive
    def square(v):
        return v * v

    def square_vjp(g, ans, v):
        v[...] = 0.0
        return 2.0 * g * v

    mutagrad.defvjp(square, square_vjp, reads=((0,),))
    mutagrad.hessian(lambda x: np.sum(square(x)), X)


@trigger
def list_of_views_of_the_array_copied_into():
    def f(x):
        y = (x * 1.0).reshape(2, 2)
        y.fill([y[1], y[0]])  # (a write whose order for a list mutagrad does not know)
        return np.sum(y)

    mutagrad.gradient(f, X)


@trigger
def rows_shuffled_by_numpys_c_code():
    def f(x):
        y = (x * 1.0).reshape(2, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # numpy's: "not a Sequence"
            np.random.default_rng(0).shuffle(y)  # (it swaps the rows, views, as a list's)
        return np.sum(y)

    mutagrad.gradient(f, X)


@trigger
def out_overlapping_an_input_in_another_dtype():
    def f(x):
        y = mutagrad.array(np.arange(4.0))
        np.concatenate([y[:2].view(np.int64), y[2:]], out=y, casting="unsafe")
        return np.sum(x * y)

    mutagrad.gradient(f, X)


@trigger
def place_with_values_sharing_memory_in_another_dtype():
    def f(x):
        y = mutagrad.array(np.arange(4.0))
        np.place(y, y > 2.0, y.view(np.int64))
        return np.sum(x * y)

    mutagrad.gradient(f, X)


@trigger
def writeable_sliding_windows():
    windows = np.lib.stride_tricks.sliding_window_view
    mutagrad.gradient(lambda x: np.sum(windows(x, 2, writeable=True)), X)


@trigger
def nditer_with_a_readwrite_operand():
    def f(x):
        for v in mutagrad.numpy.nditer(x * 1.0, op_flags=["readwrite"]):
            v[...] = 2.0 * v
        return np.sum(x)

    mutagrad.gradient(f, X)


@trigger
def ufunc_where_without_out():
    mutagrad.gradient(lambda x: np.sum(np.sin(x, where=x > 2.0)), X)


@trigger
def ufunc_out_with_where_of_two_outputs():
    def f(x):
        y, z = x * 1.0, x * 2.0
        np.modf(x, out=(y, z), where=x > 2.0)
        return np.sum(y)

    mutagrad.gradient(f, X)


@trigger
def ufunc_at_of_a_ufunc_with_a_closure_rule():
    rules = mutagrad.core.registry.UFUNC_RULES
    saved = rules[np.hypot]

    @mutagrad.rrule(np.hypot)
    def hypot_rule(x, y):
        z = np.hypot(x, y)
        return z, lambda g: (mutagrad.NoTangent(), g * x / z, g * y / z)

    def f(x):
        y = x * 1.0
        np.hypot.at(y, [0], 2.0)
        return np.sum(y)

    try:
        mutagrad.gradient(f, X)
    finally:
        mutagrad.custom.clear_rule(np.hypot)
        rules[np.hypot] = saved


@trigger
def reduce_that_numpy_does_not_fold():
    # numpy 2.2 to 2.5 compute power.reduce of three or more elements along a contiguous
    # axis as x[0] ** x[-1] (the fold along other axes).
    mutagrad.gradient(lambda x: np.power.reduce(x[1:]), X)


# -- missing rules ---------------------------------------------------------------------
# Ufuncs made with np.frompyfunc never have a rule; numpy's own functions may gain one.


def _halve(v):
    return v / 2


def _average(a, b):
    return (a + b) / 2


HALVE = np.frompyfunc(_halve, 1, 1)
AVERAGE = np.frompyfunc(_average, 2, 1)


@trigger
def ufunc_without_a_rule():
    mutagrad.gradient(lambda x: np.sum(AVERAGE(x, 1.0)), X)


@trigger
def unary_ufunc_without_a_rule():
    mutagrad.gradient(lambda x: np.sum(HALVE(x)), X)


@trigger
def ufunc_method_without_a_rule():
    mutagrad.gradient(lambda x: np.sum(AVERAGE.outer(x, x)), X)


@trigger
def ufunc_without_a_rule_into_a_traced_array():
    def f(x):
        y = x * 1.0
        HALVE(y, out=y)
        return np.sum(y)

    mutagrad.gradient(f, X)


@trigger
def c_function_without_a_rule():
    # One of the few numpy functions implemented in C with no rule, meant for dates
    # (numpy itself refuses floats here; mutagrad answers first).
    mutagrad.gradient(lambda x: np.sum(np.is_busday(x)) + np.sum(x), X)


@trigger
def python_function_that_converts():
    mutagrad.gradient(lambda x: np.sum(np.sort_complex(x).real), X)


@trigger
def function_mutagrad_cannot_run():
    def f(x):
        y = x * 1.0
        np.isposinf(y, y)
        return np.sum(y)

    mutagrad.gradient(f, X)


# -- ndarray attributes and methods ----------------------------------------------------


@trigger
def ctypes_of_an_array():
    return mutagrad.array(X).ctypes


@trigger
def method_of_a_scalar():
    # An element read is a WrappedScalar in a gradient call (outside one, numpy's scalar).
    mutagrad.gradient(lambda x: x[0].fill(1.0), X)


@trigger
def setting_dtype():
    w = mutagrad.array(X)
    w.dtype = np.int64


@trigger
def setting_strides():
    w = mutagrad.array(X)
    w.strides = (16,)


@trigger
def setting_flat_of_a_scalar():
    def f(x):
        s = x[0]
        s.flat = [1.0]
        return s

    mutagrad.gradient(f, X)


@trigger
def reading_flat_of_a_traced_scalar():
    mutagrad.gradient(lambda x: x[0].flat[0], X)


@trigger
def setting_data():
    w = mutagrad.array(X)
    w.data = memoryview(b"")


@trigger
def resize_in_place():
    mutagrad.array(X).resize(8)


@trigger
def dlpack_without_copy():
    return np.from_dlpack(mutagrad.array(X))


@trigger
def byteswap_of_a_traced_array():
    mutagrad.gradient(lambda x: np.sum(x.byteswap()), X)


@trigger
def getfield_of_a_traced_array():
    mutagrad.gradient(lambda x: np.sum(x.getfield(np.float32, 4)), X)


@trigger
def setfield_of_a_traced_array():
    def f(x):
        y = x * 1.0
        y.setfield(np.ones(4, dtype=np.float32), np.float32, 4)
        return np.sum(y)

    mutagrad.gradient(f, X)


@trigger
def setting_real_of_a_scalar():
    def f(x):
        element = x[0]
        element.real = 2.0

    mutagrad.gradient(f, X)


@trigger
def setting_shape_of_a_scalar():
    def f(x):
        element = x[0]
        element.shape = (1,)

    mutagrad.gradient(f, X)


@trigger
def setting_shape_of_a_value_handed_to_a_pullback():
    @mutagrad.primitive
    def square(v):
        return v * v

    def square_vjp(g, ans, v):
        v.shape = (2, 2)
        return 2.0 * g * v

    mutagrad.defvjp(square, square_vjp, reads=((0,),))
    mutagrad.hessian(lambda x: np.sum(square(x)), X)


@trigger
def setting_shape_of_an_array_another_call_recorded():
    w = mutagrad.array(X)
    _, back = mutagrad.pullback(lambda: np.sum(w * w), mutagrad.Params([w]))
    w.shape = (2, 2)  # while back, which recorded w, is alive
    return back


@trigger
def making_a_read_only_array_writeable():
    w = mutagrad.array(X)
    w.setflags(write=False)
    w.setflags(write=True)


@trigger
def view_changing_dtype():
    mutagrad.gradient(lambda x: np.sum(x.view(np.int64)), X)


@trigger
def view_changing_dtype_inside_a_view():
    mutagrad.gradient(lambda x: np.sum(x[1:].view(np.float32)), X)


# -- rules -----------------------------------------------------------------------------


@trigger
def complex_value_in_a_rule_for_real_values():
    mutagrad.gradient(lambda x: np.sum(np.abs(np.interp(x, [0.0, 9.0], [1j, 2.0]))), X)


@trigger
def loss_that_depends_on_the_phase_of_complex_eigenvectors():
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    mutagrad.gradient(lambda a: np.sum(np.real(np.linalg.eig(a)[1])), rotation)


@trigger
def holomorphic_derivative_of_a_function_that_is_not():
    mutagrad.grad(lambda z: np.conj(z) * z, holomorphic=True)(1 + 2j)


@trigger
def holomorphic_jacobian_of_a_function_that_is_not():
    mutagrad.jacobian(lambda z: np.conj(z) * z, holomorphic=True)(np.array([1 + 2j, 3j]))


@trigger
def holomorphic_jacobian_of_a_real_argument():
    mutagrad.jacobian(lambda x: x * 1j, holomorphic=True)(X)


@trigger
def holomorphic_derivative_of_a_real_argument():
    mutagrad.grad(lambda z: z * z, holomorphic=True)(1.0)


@trigger
def jacobian_of_complex_values():
    mutagrad.jacobian(lambda x: x * 1j, X)


@trigger
def hessian_of_complex_arguments():
    mutagrad.hessian(lambda z: np.sum(np.abs(z) ** 2), X * 1j)


@trigger
def rule_without_a_vjp_for_an_active_argument():
    @mutagrad.primitive
    def blend(a, b):
        return a * b

    mutagrad.defvjp(blend, lambda g, ans, a, b: g * b, None, reads=((1,), ()))
    mutagrad.gradient(lambda x: np.sum(blend(x, x * 2.0)), X)


@trigger
def registering_a_rule_for_an_undecorated_function():
    def plain(v):
        return v

    mutagrad.defvjp(plain, lambda g, ans, v: g)


@trigger
def rrule_with_several_outputs():
    @mutagrad.primitive
    def pair(v):
        return v, v

    @mutagrad.rrule(pair)
    def pair_rule(v):
        return (v, v), lambda dy: (dy,)

    mutagrad.gradient(lambda x: np.sum(pair(x)[0]), X)


def _reversed_view():
    """A primitive whose output is a view of its argument, as numpy's x[::-1]."""

    @mutagrad.primitive
    def reversed_view(v):
        return v[::-1]

    mutagrad.defvjp(reversed_view, lambda g, ans, v: g[::-1], reads=((),))
    mutagrad.defjvp(reversed_view, lambda t, ans, v: t[::-1])
    return reversed_view


@trigger
def write_through_a_rule_output_that_is_a_view_of_its_argument():
    reversed_view = _reversed_view()

    def f(x):
        y = x * 1.0
        r = reversed_view(y)
        r[0] = 5.0
        return np.sum(y)

    mutagrad.gradient(f, X)


def _output_read_after_its_argument_is_written():
    reversed_view = _reversed_view()

    def f(x):
        y = x * 1.0
        r = reversed_view(y)
        y[0] = 5.0
        return np.sum(r * x)

    return f


@trigger
def rule_output_read_after_its_argument_is_written():
    mutagrad.gradient(_output_read_after_its_argument_is_written(), X)


@trigger
def rule_output_s_argument_written_at_a_forward_level():
    mutagrad.jvp(_output_read_after_its_argument_is_written(), (X,), (X,))


@trigger
def rule_output_sharing_memory_with_a_plain_array_argument():
    @mutagrad.primitive
    def second(v, c):
        return c[::-1]

    mutagrad.defvjp(second, lambda g, ans, v, c: np.zeros_like(v), None)
    c = np.ones(3)
    mutagrad.gradient(lambda x: np.sum(second(x, c) * x), X)


@trigger
def rrule_aliasing_its_argument_for_a_function_that_fails():
    @mutagrad.primitive
    def stub(v):
        raise NotImplementedError("only the rule is written")

    @mutagrad.rrule(stub)
    def stub_rule(v):
        return v, lambda dy: (dy,)

    mutagrad.gradient(lambda x: np.sum(stub(x * 1.0)), X)


def _cube_with_an_rrule():
    """A primitive with a ChainRules-style rule (whose pullback is a closure)."""

    @mutagrad.primitive
    def cube(v):
        return v**3

    @mutagrad.rrule(cube)
    def cube_rule(v):
        return v**3, lambda dy: (3 * v**2 * dy,)

    return cube


@trigger
def rrule_differentiated_twice():
    cube = _cube_with_an_rrule()
    mutagrad.hessian(lambda x: np.sum(cube(x)), X)


@trigger
def rrule_pullback_with_too_many_cotangents():
    @mutagrad.primitive
    def double(v):
        return 2.0 * v

    @mutagrad.rrule(double)
    def double_rule(v):
        return 2.0 * v, lambda dy: (2.0 * dy, dy, dy)

    mutagrad.gradient(lambda x: np.sum(double(x)), X)


@trigger
def defvjp_of_neither_form():
    @mutagrad.primitive
    def double(v):
        return 2.0 * v

    mutagrad.defvjp(double, lambda g: 2.0 * g)  # mutagrad's takes (g, ans, v), autograd's (ans, v)


@trigger
def vjp_that_raises():
    @mutagrad.primitive
    def double(v):
        return 2.0 * v

    mutagrad.defvjp(double, lambda g, ans, v: 2.0 * g * undefined_scale)  # noqa: F821
    mutagrad.gradient(lambda x: np.sum(double(x)), X)


@trigger
def vjp_returning_a_function():
    @mutagrad.primitive
    def scaled(v, k=2.0):
        return k * v

    # autograd's form with an optional argument: mutagrad's call fits it too
    mutagrad.defvjp(scaled, lambda ans, v, k=2.0: lambda g: k * g)
    mutagrad.gradient(lambda x: np.sum(scaled(x)), X)


@trigger
def vjp_cotangent_of_the_wrong_shape():
    @mutagrad.primitive
    def square(v):
        return v * v

    mutagrad.defvjp(square, lambda g, ans, v: np.sum(2.0 * v * g))
    mutagrad.gradient(lambda x: np.sum(square(x)), X)


@trigger
def rrule_that_raises():
    @mutagrad.primitive
    def double(v):
        return 2.0 * v

    @mutagrad.rrule(double)
    def double_rule(v):
        return 2.0 * v, lambda dy: (2.0 * dy * undefined_scale,)  # noqa: F821

    mutagrad.gradient(lambda x: np.sum(double(x)), X)


@trigger
def rrule_whose_forward_pass_raises():
    @mutagrad.primitive
    def double(v):
        return 2.0 * v

    @mutagrad.rrule(double)
    def double_rule(v):
        return 2.0 * v.undefined_attribute, lambda dy: (2.0 * dy,)

    mutagrad.gradient(lambda x: np.sum(double(x)), X)


@trigger
def rule_writing_its_argument():
    @mutagrad.primitive
    def normalise(v):
        v /= np.sum(v)
        return v

    @mutagrad.rrule(normalise)
    def normalise_rule(v):
        y = normalise(v)
        return y, lambda dy: (dy,)

    mutagrad.gradient(lambda x: np.sum(normalise(x)), X)


@trigger
def einsum_with_too_many_dimensions():
    many = np.ones((1,) * 53)
    mutagrad.gradient(lambda m: np.sum(np.einsum("...,...->...", m, m)), many)


@trigger
def sort_with_order():
    mutagrad.gradient(lambda x: np.sum(np.sort(x, order="f0")), X)


@trigger
def partition_with_order():
    mutagrad.gradient(lambda x: np.sum(np.partition(x, 1, order="f0")), X)


@trigger
def pad_with_a_function_as_mode():
    def pad_with(vector, width, axis, kwargs):
        vector[: width[0]] = 0.0

    mutagrad.gradient(lambda x: np.sum(np.pad(x, 1, pad_with)), X)


@trigger
def percentile_of_traced_q():
    mutagrad.gradient(lambda q: np.percentile(X, q), 50.0)


@trigger
def percentile_with_weights():
    mutagrad.gradient(
        lambda x: np.percentile(x, 50.0, weights=np.ones(4), method="inverted_cdf"), X
    )


@trigger
def svd_columns_that_complete_a_basis():
    a = np.arange(6.0).reshape(3, 2) + np.eye(3, 2)
    mutagrad.gradient(lambda a: np.sum(np.linalg.svd(a)[0]), a)


@trigger
def eigenvectors_with_complex_eigenvalues():
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    mutagrad.gradient(lambda a: np.sum(np.linalg.eig(a)[1].real), rotation)


@trigger
def qr_householder_reflectors():
    mutagrad.gradient(lambda a: np.sum(np.linalg.qr(a, mode="raw")[0]), np.eye(2) + 0.5)


@trigger
def pinv_cutoff_discarding_singular_values():
    mutagrad.gradient(lambda a: np.sum(np.linalg.pinv(a, rcond=0.9)), np.diag([1.0, 0.5]))


@trigger
def vector_gufunc_with_axes():
    mutagrad.gradient(lambda x: np.sum(np.vecdot(x, x, axes=[(0,), (0,), ()])), X)


@trigger
def singular_condition_number():
    mutagrad.gradient(lambda a: np.linalg.cond(a), np.zeros((2, 2)))


@trigger
def interp_with_a_period():
    mutagrad.gradient(lambda x: np.sum(np.interp(x, [0.0, 1.0], [1.0, 2.0], period=3.0)), X)


# -- checkpointed --------------------------------------------------------------------


@trigger
def checkpointed_recomputes_another_value():
    rng = np.random.default_rng(0)

    def noisy(v):
        return v * rng.standard_normal()

    mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(noisy, x)), X)


@trigger
def checkpointed_recomputes_the_same_value_another_way():
    settings = {"k": 1.0, "c": 0.0}

    def loss(x):
        y = mutagrad.checkpointed(lambda v: np.sum(v * settings["k"]) + settings["c"], x)
        settings.update(k=2.0, c=-10.0)  # the same value at X, another gradient
        return y

    mutagrad.gradient(loss, X)


@trigger
def checkpointed_writes_a_raw_array_it_closes_over():
    table = np.ones(4)

    def block(v):
        table[0] = 2.0
        return v * table

    mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(block, x)), X)


@trigger
def checkpointed_writes_a_traced_array_it_closes_over():
    w = mutagrad.array(X)

    def block(v):
        w[0] = 2.0
        return v * 2.0

    mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(block, x)), X)


@trigger
def checkpointed_writes_its_argument():
    def block(v):
        v[0] = 2.0
        return v * 2.0

    mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(block, x * 1.0)), X)


@trigger
def checkpointed_changes_a_list_argument():
    def block(items):
        items.append(items[0])
        return items[0] * 2.0

    mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(block, [x * 1.0])), X)


@trigger
def checkpointed_reads_a_traced_value_it_does_not_receive():
    box = collections.deque([None])  # a container checkpointed does not look into

    def block(v):
        return v * box[0]

    def f(x):
        box[0] = x * 3.0
        return np.sum(mutagrad.checkpointed(block, x))

    mutagrad.gradient(f, X)


@trigger
def checkpointed_returns_a_tuple():
    mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(lambda v: (v, v), x)[0]), X)


@trigger
def checkpointed_returns_a_view_of_its_argument():
    mutagrad.gradient(lambda x: np.sum(mutagrad.checkpointed(lambda v: v[::-1], x * 1.0)), X)


@trigger
def checkpointed_pullback_holds_an_object_it_cannot_compare():
    lock = threading.Lock()

    def block(v):
        return np.sum(mutagrad.hook(lambda g: (lock, g)[1], v))  # (its closure holds the lock)

    mutagrad.gradient(lambda x: mutagrad.checkpointed(block, x), X)


@trigger
def traced_keyword_only_argument_of_a_primitive():
    def weighted(x, *, weight):
        return x * weight

    p = mutagrad.primitive(weighted)
    mutagrad.defvjp(p, lambda g, ans, x: g)
    mutagrad.gradient(lambda w: np.sum(p(X, weight=w)), X)


# -- numpy's edge: what Python asks of a value -------------------------------------------


@trigger
def masked_array_argument():
    mutagrad.gradient(lambda x: np.sum(x**2), np.ma.array([1.0, 2.0], mask=[0, 1]))


@trigger
def object_array_argument():
    mutagrad.gradient(lambda z: 1.0, np.array([1.0, 2.0], dtype=object))


@trigger
def complex_argument_of_jacfwd():
    mutagrad.jacfwd(lambda z: np.sum(np.abs(z)))(X * 1j)


@trigger
def real_argument_of_a_holomorphic_jacfwd():
    mutagrad.jacfwd(lambda z: z * z, holomorphic=True)(X)


@trigger
def holomorphic_jacfwd_of_a_function_that_is_not():
    mutagrad.jacfwd(lambda z: z * np.conj(z), holomorphic=True)(X * 1j)


@trigger
def complex_tangent_through_a_rule_for_real_values():
    mutagrad.jvp(lambda z: np.vecdot(z, z), (X * 1j,), (X * 1j,))


@trigger
def complex_tangent_through_a_users_rrule_for_real_values():
    @mutagrad.primitive
    def cube(z):
        return z**3

    @mutagrad.rrule(cube)
    def _(z):
        return z**3, lambda g: (g * 3 * z**2,)

    mutagrad.jvp(cube, (X * 1j,), (X * 1j,))


@trigger
def complex_output_of_a_gradient():
    mutagrad.gradient(lambda z: np.sum(z * z), np.array([1.0 + 2.0j]))


@trigger
def masked_array_meets_a_traced_result():
    masked = np.ma.array([1.0, 2.0, 3.0, 4.0], mask=[0, 1, 0, 0])
    mutagrad.gradient(lambda x: np.sum(np.sin(x)[::-1] + masked * 1.0), X)


@trigger
def masked_array_operand():
    masked = np.ma.array([1.0, 2.0, 3.0, 4.0], mask=[0, 1, 0, 0])
    mutagrad.gradient(lambda x: np.sum(x * masked), X)


@trigger
def masked_array_in_a_numpy_function():
    masked = np.ma.array([1.0, 2.0, 3.0, 4.0], mask=[0, 1, 0, 0])
    mutagrad.gradient(lambda x: np.sum(np.concatenate([x, masked])), X)


@trigger
def pickled_traced_value():
    import pickle

    mutagrad.gradient(lambda x: np.sum(pickle.loads(pickle.dumps(x * 2.0))), X)


@trigger
def hashed_traced_scalar():
    mutagrad.gradient(lambda x: {x[0]: 1.0}[x[0]] * x[1], X)


@trigger
def traced_float_stored_into_an_integer_array():
    def f(x):
        counts = np.zeros(4, dtype=int)
        counts[0] = x[0] * 3.0
        return np.sum(counts) + x[1]

    mutagrad.gradient(f, X)


@trigger
def hessian_of_an_object_array():
    mutagrad.hessian(lambda z: 1.0, np.array([1.0], dtype=object))


@trigger
def primitive_returning_a_masked_array():
    masked = mutagrad.primitive(lambda x: np.ma.masked_less(x, 2.0))
    mutagrad.defvjp(masked, lambda g, ans, x: g)
    mutagrad.gradient(lambda x: np.sum(masked(x)), X)


# -- SciPy (its triggers skip without it, and its raise sites are then not counted) ----


def _scipy(module: str = "scipy.special") -> object:
    return pytest.importorskip(module)


@trigger
def scipy_ufunc_without_a_rule():
    special = _scipy()
    mutagrad.gradient(lambda x: np.sum(special.kolmogorov(x)), X)


@trigger
def scipy_derivative_in_an_order():
    special = _scipy()
    mutagrad.gradient(lambda v: np.sum(special.jv(v, X)), X)


# -- forward mode ------------------------------------------------------------------------


@trigger
def forward_rule_missing():
    @mutagrad.primitive
    def halved(x):
        return x / 2

    mutagrad.defvjp(halved, lambda g, ans, x: g / 2, reads=((),))
    mutagrad.jvp(halved, (X,), (X,))


@trigger
def rrule_under_two_forward_levels():
    @mutagrad.primitive
    def cube(v):
        return v**3

    @mutagrad.rrule(cube)
    def cube_rule(v):
        return v**3, lambda dy: (3 * v**2 * dy,)

    inner = lambda x: mutagrad.jvp(lambda y: cube(y), (x,), (X,))[1]  # noqa: E731
    mutagrad.jvp(inner, (X,), (X,))


@trigger
def rrule_whose_pullback_cannot_be_transposed():
    @mutagrad.primitive
    def cube(v):
        return v**3

    @mutagrad.rrule(cube)
    def cube_rule(v):
        return v**3, lambda dy: (3 * v**2 * dy, dy)  # one cotangent too many

    mutagrad.jvp(lambda x: cube(x), (X,), (X,))


@trigger
def defjvp_without_defvjp():
    @mutagrad.primitive
    def square(v):
        return v * v

    mutagrad.defjvp(square, lambda t, ans, v: 2 * v * t)


@trigger
def defjvp_without_a_jvp_for_an_argument():
    @mutagrad.primitive
    def product(a, b):
        return a * b

    mutagrad.defvjp(product, lambda g, ans, a, b: g * b, lambda g, ans, a, b: g * a)
    mutagrad.defjvp(product, lambda t, ans, a, b: t * b)
    mutagrad.jvp(lambda x: product(X, x), (X,), (X,))


@trigger
def jacfwd_of_a_string_result():
    mutagrad.jacfwd(lambda x: "done")(X)


@trigger
def jacfwd_of_an_integer_result():
    mutagrad.jacfwd(lambda x: np.argmax(x))(X)


@trigger
def forward_jacobian_of_a_boolean_array():
    mutagrad.forward_jacobian(lambda x: x, X > 2)


@trigger
def snapshot_under_two_forward_levels():
    def f(y):
        z = y * y
        s = np.sin(z)  # saves z
        z[0] = 0.0  # snapshot mode copies it, tangents too: these are differentiated again
        return np.sum(s)

    def inner(x):
        return mutagrad.jvp(lambda y: mutagrad.grad(f, mode="snapshot")(y), (x,), (X,))[1]

    mutagrad.jvp(inner, (X,), (X,))


@trigger
def tangent_used_in_another_thread():
    def f(x):
        box = []
        worker = threading.Thread(target=lambda: box.append(np.cos(x)))
        worker.start()
        worker.join()
        return x * 2

    mutagrad.jvp(f, (X,), (X,))


@trigger
def reduce_with_a_differentiated_initial_in_forward_mode():
    mutagrad.jvp(lambda x: np.add.reduce(x, initial=x[0]), (X,), (X,))


@trigger
def transposed_forward_rule_under_a_level_around_it():
    f = lambda x: np.sum(np.linalg.pinv(np.reshape(x, (2, 2))) ** 2)  # noqa: E731
    mutagrad.grad(lambda z: np.sum(mutagrad.jvp(f, (z,), (X,))[1]))(X)


@trigger
def forward_tangent_through_an_arbitrary_basis():
    # (the left singular vectors of a tall matrix, full_matrices=True: an arbitrary basis)
    mutagrad.jvp(lambda x: np.linalg.svd(np.reshape(x, (4, 1)))[0], (X,), (X,))


@trigger
def vectors_of_repeated_eigenvalues():
    mutagrad.grad(lambda d: np.sum(np.linalg.eigh(np.diag(d))[1][0]))(np.array([2.0, 2.0, 5.0]))


@trigger
def linearize_batched_without_recorded_steps():
    cube = _cube_with_an_rrule()
    _, f_jvp = mutagrad.linearize(lambda x: cube(x), X)  # (an rrule: f_jvp runs f again)
    f_jvp.batched(X[None])


@trigger
def forwarddiff_reading_another_traced_value():
    def loss(w):
        c = w[0] * 2
        return np.sum(mutagrad.forwarddiff(lambda z: z * c, w))

    mutagrad.grad(loss)(X)


@trigger
def forwarddiff_inside_a_second_derivative():
    mutagrad.hessian_reverse(lambda w: np.sum(mutagrad.forwarddiff(np.sin, w)), X)


# -- the tests ---------------------------------------------------------------------------


def _run(name: str) -> BaseException:
    with pytest.raises(BaseException) as raised:
        TRIGGERS[name]()
    if isinstance(raised.value, pytest.skip.Exception):
        raise raised.value  # a SciPy trigger without SciPy
    return raised.value


def _needs_missing_scipy(path: str) -> bool:
    """A module of mutagrad's SciPy support (or first_use.py, whose raise is for a SciPy
    ufunc without a rule), when SciPy is not installed."""
    try:
        import scipy  # noqa: F401
    except ImportError:
        relative = Path(path).relative_to(SOURCE).as_posix()
        return "scipy" in relative or relative.endswith("first_use.py")
    return False


@pytest.fixture
def full_tracebacks(monkeypatch):
    monkeypatch.setenv(FILTERING_VARIABLE, "off")


def test_every_raise_site_is_reached_by_a_trigger(full_tracebacks):
    sites = raise_sites()
    reached = set()
    for name in TRIGGERS:
        try:
            filename, line = raise_site_of(_run(name))
        except pytest.skip.Exception:
            continue
        for (path, first), (_, start, end) in sites.items():
            if path == filename and start <= line <= end:
                reached.add((path, first))
    missing = [
        f"{Path(path).relative_to(SOURCE.parent)}:{first} (in {function})"
        for (path, first), (function, _, _) in sorted(sites.items())
        if (path, first) not in reached and (Path(path).name, function) not in UNREACHABLE
        and not _needs_missing_scipy(path)
    ]
    assert not missing, "raise sites no trigger in tests/test_errors.py reaches:\n" + "\n".join(
        missing
    )


def test_the_unreachable_sites_exist():
    functions = {(Path(path).name, function) for (path, _), (function, _, _) in
                 raise_sites().items()}  # fmt: skip
    assert set(UNREACHABLE) <= functions


@pytest.mark.parametrize("name", sorted(TRIGGERS))
def test_the_error_names_the_users_line_and_a_fix(name):
    error = _run(name)
    assert isinstance(error, mutagrad.MutagradError), f"{type(error).__name__}: {error}"
    message = str(error)
    lines = re.findall(rf"{re.escape(THIS_FILE)}:(\d+)", message)
    assert lines, f"no {THIS_FILE}:line in:\n{message}"
    assert re.search(r"(?i)\bfix(es)?\b", message), f"no fix in:\n{message}"


def test_a_filtered_traceback_keeps_only_the_users_frames_and_says_how_to_see_all(monkeypatch):
    monkeypatch.delenv(FILTERING_VARIABLE, raising=False)
    error = _run("ufunc_into_a_raw_array")
    frames = []
    traceback = error.__traceback__
    while traceback is not None:
        frames.append(traceback.tb_frame.f_code.co_filename)
        traceback = traceback.tb_next
    internal = [f for f in frames if f.startswith(str(SOURCE)) and "tracebacks.py" not in f]
    assert not internal
    assert frames[-1] == __file__  # it ends at the user's line
    assert any(FILTERING_VARIABLE in note for note in getattr(error, "__notes__", ()))
    monkeypatch.setenv(FILTERING_VARIABLE, "off")
    error = _run("ufunc_into_a_raw_array")
    assert raise_site_of(error)[0].startswith(str(SOURCE))  # ends where mutagrad raised


def test_errors_that_are_not_mutagrads_keep_every_frame():
    def f(x):
        return np.sum(x) + undefined_name  # noqa: F821

    with pytest.raises(NameError) as raised:
        mutagrad.gradient(f, X)
    frames = []
    traceback = raised.value.__traceback__
    while traceback is not None:
        frames.append(os.path.basename(traceback.tb_frame.f_code.co_filename))
        traceback = traceback.tb_next
    assert "call.py" in frames

