"""Each fast path gives what the general path it unrolls gives, on the same inputs.

The hot paths are unrolled copies of general code, kept for speed (their
docstrings say which). A fast path that drifted from its general path would
give a different gradient only on the programs that reach it, so each is
switched off here, alone and all together, and the same programs are run:

* the operator fast path (:func:`mutagrad.traced.dispatch.binary`/``unary``)
  against :func:`~mutagrad.traced.dispatch.apply`;
* the one- and two-argument recorders (``record1``/``record2``) against
  :func:`~mutagrad.core.record.record`;
* the reductions' one-argument apply (:func:`~mutagrad.traced.dispatch.apply_one`)
  against :func:`~mutagrad.traced.dispatch.apply`;
* :meth:`VjpRule.backward` against its ``_backward_general``;
* :meth:`BackwardPass.accumulate` against ``accumulate_general``;
* outside a gradient call, ``__setitem__``'s int-index shortcut,
  ``_assign_untraced`` and ``_write_in_place_untraced`` against the full
  write path (values, versions, and what a later ``pullback`` reads);
* in a gradient call's set-up, skipping ``_mark_shared_inputs`` for arguments
  that all took the common case, against running it on the same arguments.

Gradients must be equal to the last bit (the same arithmetic in the same
order), errors of the same type, and each program's gradient is checked
against finite differences once so that "equal" is not "equally wrong".
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
from mutagrad.core import record as record_module
from mutagrad.core.engine import BackwardPass, VjpRule
from mutagrad.core.registry import UFUNC_RULES
from mutagrad.rules import reductions
from mutagrad.testing import check_gradient
from mutagrad.traced import dispatch, mutation
from mutagrad.traced.value import WrappedArray

# --- the general paths, each standing in for its fast path --------------------------------

_binary, _unary = dispatch.binary, dispatch.unary


def _binary_by_apply(ufunc, pyop, a, b):
    rule = UFUNC_RULES.get(ufunc)
    if type(rule) is VjpRule:
        return dispatch.apply(rule, (a, b))
    return _binary(ufunc, pyop, a, b)  # no rule of mutagrad's kind: nothing to compare


def _unary_by_apply(ufunc, pyop, a):
    rule = UFUNC_RULES.get(ufunc)
    if type(rule) is VjpRule:
        return dispatch.apply(rule, (a,))
    return _unary(ufunc, pyop, a)


def _record2_by_record(rule, a, b, ra, rb, na, nb, result, kwargs, trace, site):
    return record_module.record(rule, (a, b), [ra, rb], [na, nb], result, kwargs, trace, site)


def _record1_by_record(rule, a, ra, na, result, kwargs, trace, site):
    return record_module.record(rule, (a,), [ra], [na], result, kwargs, trace, site)


def _apply_one_by_apply(rule, a, kwargs, result):
    return dispatch.apply(rule, (a,), kwargs, result)


def _setitem_by_assign(w, index, value):
    mutation.assign(w, index, value, "__setitem__")


GENERAL_PATHS = {
    "operators": [(dispatch, "binary", _binary_by_apply), (dispatch, "unary", _unary_by_apply)],
    "recorders": [
        (dispatch, "record2", _record2_by_record),
        (dispatch, "record1", _record1_by_record),
    ],
    "reductions": [(reductions, "apply_one", _apply_one_by_apply)],
    "backward": [(VjpRule, "backward", VjpRule._backward_general)],
    "accumulate": [(BackwardPass, "accumulate", BackwardPass.accumulate_general)],
    "untraced writes": [
        (WrappedArray, "__setitem__", _setitem_by_assign),
        (mutation, "_assign_untraced", lambda *args: False),
        (mutation, "_write_in_place_untraced", lambda *args: False),
    ],
}
GENERAL_PATHS["all"] = [patch for patches in GENERAL_PATHS.values() for patch in patches]


def test_each_general_path_replaces_a_name_that_exists():
    # A renamed fast path would leave its patch setting a new, unused name: the
    # comparisons below would then compare the fast path with itself.
    for patches in GENERAL_PATHS.values():
        for owner, name, _ in patches:
            assert hasattr(owner, name), f"{owner.__name__}.{name}"


# --- the programs ---------------------------------------------------------------------------


def mse(x, y):
    return ((x - y) ** 2).mean()


def shared_cotangent(x, y):
    # add's pullback hands the same g to both inputs: neither may update it in place.
    z = x + x
    w = z + y
    return (w * z).sum() + (y + y).sum()


def unary_chain(x, y):
    return np.sum(np.tanh(x) * np.exp(-y) + np.sin(x * y) / (1.0 + x * x))


def broadcasting(x, y):
    return np.sum(x[:, None] * y[None, :] + x[:, None]) + (x * 2.0).sum()


def with_keywords(x, y):
    m = np.outer(x, y)
    return np.sum(np.sum(m, axis=0) * np.max(m, axis=1, keepdims=True).ravel()[: y.size])


def scalars(x, y):
    s = x.sum()
    t = y[0] * s
    return t * s + s - t / (1.0 + s * s)


def float32_inputs(x, y):
    a = x.astype(np.float32)
    return np.sum(a * a) + np.sum(y * np.float32(2.0))


def buffer_filled_in_a_loop(x, y):
    out = np.zeros_like(x)
    for i in range(x.size):
        out[i] = x[i] * y[i] + x[i]
    return np.sum(out * out)


def in_place_updates(x, y):
    z = x.copy()
    z *= 2.0
    z += y
    z -= x * y
    z /= 3.0
    return np.sum(z**2)


def matmul(x, y):
    a = np.outer(x, y)
    return np.sum(a @ y + (x @ a))


def integer_operand(x, y):
    # an int array meets floats: the int side has no derivative
    k = np.arange(x.size)
    return np.sum(x * k + y**k)


PROGRAMS = [
    mse,
    shared_cotangent,
    unary_chain,
    broadcasting,
    with_keywords,
    scalars,
    float32_inputs,
    buffer_filled_in_a_loop,
    in_place_updates,
    matmul,
    integer_operand,
]


def inputs():
    rng = np.random.default_rng(7)
    return rng.normal(size=5), rng.normal(size=5)


def gradients(program):
    x, y = inputs()
    return mutagrad.gradient(program, x, y)


def hessian_rows(program):
    """Second derivatives: the backward pass records (``recording=True``)."""
    x, y = inputs()
    return mutagrad.hessian(lambda x: program(x, y))(x)


@pytest.mark.parametrize(
    "program", [p for p in PROGRAMS if p is not float32_inputs], ids=lambda p: p.__name__
)
def test_the_programs_gradients_are_right(program):
    x, y = inputs()
    check_gradient(program, x, y)


def test_the_float32_programs_gradient_is_right():
    # (finite differences of a float32 sum are too coarse to check it)
    x, _ = inputs()
    gx, gy = gradients(float32_inputs)
    np.testing.assert_allclose(gx, 2 * x.astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(gy, np.full(5, 2.0))


def _run(monkeypatch, paths, compute, program):
    with monkeypatch.context() as patched:
        for owner, name, general in GENERAL_PATHS[paths]:
            patched.setattr(owner, name, general)
        return compute(program)


def assert_same(fast, general):
    assert type(fast) is type(general)
    if isinstance(fast, (tuple, list)):
        assert len(fast) == len(general)
        for f, g in zip(fast, general):
            assert_same(f, g)
    else:
        np.testing.assert_array_equal(fast, general, strict=True)  # (shapes and dtypes too)


@pytest.mark.parametrize("paths", list(GENERAL_PATHS))
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_gradients_on_the_general_paths_equal_the_fast_paths(monkeypatch, program, paths):
    fast = gradients(program)
    general = _run(monkeypatch, paths, gradients, program)
    assert_same(fast, general)


@pytest.mark.parametrize("paths", ["backward", "accumulate", "recorders", "reductions", "all"])
@pytest.mark.parametrize(
    "program",
    [mse, shared_cotangent, unary_chain, scalars, in_place_updates],
    ids=lambda p: p.__name__,
)
def test_recorded_backward_passes_equal_too(monkeypatch, program, paths):
    fast = hessian_rows(program)
    general = _run(monkeypatch, paths, hessian_rows, program)
    assert_same(fast, general)


def poisoned(x, y):
    e = np.exp(x)  # exp's pullback reads its output
    s = np.sum(e * y)
    e[0] = 0.0
    return s


def overwritten_operand(x, y):
    z = x * 1.0
    p = z * y  # reads z
    z += 1.0
    return np.sum(p)


@pytest.mark.parametrize("paths", list(GENERAL_PATHS))
@pytest.mark.parametrize("program", [poisoned, overwritten_operand], ids=lambda p: p.__name__)
def test_a_poisoned_capture_raises_on_every_path(monkeypatch, program, paths):
    def error_of(program):
        with pytest.raises(mutagrad.PoisonedCaptureError) as caught:
            gradients(program)
        return caught.value

    def what_and_which(error):
        # (the lines naming the user's code differ: a stand-in above is "user code" too)
        lines = str(error).splitlines()
        return lines[0], [line for line in lines if "captured by" in line]

    fast = error_of(program)
    general = _run(monkeypatch, paths, error_of, program)
    assert what_and_which(fast) == what_and_which(general)
    assert what_and_which(fast)[1]


# --- writes outside a gradient call ---------------------------------------------------------


def untraced_writes(_):
    """Writes outside any call, then a pullback over the arrays written: what each write did
    (values, versions) and what the pullback then reads."""
    x = mutagrad.array(np.arange(6.0))
    v = mutagrad.array(np.ones(3))
    x[1] = 5.0
    x[2] = np.float64(-1.0)
    x[0:2] = [7.0, 8.0]
    x[3:] = v
    x[3:] = x[3:]  # a self-assignment: no copy, no version
    x += 1.0
    np.multiply(x, 2.0, out=x)
    view = x[::2]
    view[1] = 3.0
    view *= 0.5
    versions = (x._version, v._version)
    values = x.copy()
    _, back = mutagrad.pullback(lambda a: np.sum(a * x), v[0] * np.ones(6))
    x[4] = 100.0  # after the capture: poisons what back reads
    with pytest.raises(mutagrad.PoisonedCaptureError) as caught:
        back(1.0)
    return values, versions, str(caught.value).splitlines()[0]


def test_writes_outside_a_call_equal_the_full_write_path(monkeypatch):
    fast = untraced_writes(None)
    general = _run(monkeypatch, "untraced writes", untraced_writes, None)
    np.testing.assert_array_equal(fast[0], general[0], strict=True)
    assert fast[1] == general[1]
    assert fast[2] == general[2]
    # and the shortcut was taken: the full path leaves the same versions
    assert fast[1][0] > 0


# --- the gradient call's set-up ---------------------------------------------------------------


def _argument_sets():
    a, b = np.arange(6.0), np.ones(6)
    c = np.full((3, 4), 2.0)
    return {
        "distinct owners": (a, b, c),
        "one array twice": (a, b, a),
        "overlapping views": (a[:4], a[2:]),
        "disjoint views": (a[:3], a[3:]),
        "an owner and its view": (a, a[::2]),
        "a view of a reshaped owner": (np.arange(12.0).reshape(3, 4), a),
        "a read-only owner": (a, np.frombuffer(b.tobytes())),
        "a memoryview's array": (np.frombuffer(memoryview(a)), a),
        "numbers among arrays": (a, 2.0, b),
    }


@pytest.mark.parametrize("name", list(_argument_sets()))
def test_shared_inputs_the_set_up_marks_equal_the_general_marking(name):
    """GradientCall skips _mark_shared_inputs when every array argument took the common case
    (a writeable array owning its memory, frozen on the spot): its marks are those the general
    marking makes of the same arguments."""
    from mutagrad.call import GradientCall, _mark_shared_inputs
    from mutagrad.traced.value import SHARED_INPUT

    args = _argument_sets()[name]
    call = GradientCall(args, None)
    try:
        fast = [bool(w._flags & SHARED_INPUT) for _, _, w in call.watched]
        for _, _, w in call.watched:
            w._flags &= ~SHARED_INPUT
        _mark_shared_inputs(call.watched)
        general = [bool(w._flags & SHARED_INPUT) for _, _, w in call.watched]
        skipped = call.owners == len(call.watched)
    finally:
        call.finish()
    assert fast == general
    assert skipped == (name in ("distinct owners", "numbers among arrays"))
    assert all(x.flags.writeable for x in args if isinstance(x, np.ndarray) and x.base is None)
