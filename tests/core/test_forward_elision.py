"""Temporary elision in forward mode (mutagrad.traced.elision): each condition, and the results.

Where elision runs, the value must be numpy's bit for bit and the tangent the
general path's bit for bit (elision switched off: ``TEMPORARY_REFERENCES`` set
to -1), checked once against finite differences. Where a condition fails, the
operation must take the general path: each test below builds a temporary that
breaks exactly one condition, and fails if that condition's check is removed
(a wrong value, a caller's array written, an error, or the operand's memory
reused where it must not be). Elision is seen by the operand's and the
result's data addresses: the general path makes the result while the operand
is alive, so they differ unless the result was written into the operand.
"""

from __future__ import annotations

import collections
import operator
import weakref

import numpy as np
import pytest

import mutagrad as mg
from mutagrad.core.registry import UFUNC_RULES
from mutagrad.errors import NotDifferentiableError
from mutagrad.testing.finite_differences import directional_derivative
from mutagrad.traced import dispatch, elision
from mutagrad.traced.tangents import Borrowed, set_tangent
from mutagrad.traced.value import BORROWED, WrappedArray

# Large enough to be elided (numpy's threshold, 256 KiB), float32 too.
N = elision.MIN_ELIDED_BYTES // 4 + 8
RNG = np.random.default_rng(23)
X, Y, VX, VY = (RNG.normal(size=N) for _ in range(4))

pytestmark = pytest.mark.skipif(
    elision.TEMPORARY_REFERENCES < 0, reason="no elision on this interpreter"
)


def address(v):
    raw = v._raw if isinstance(v, WrappedArray) else v
    return raw.__array_interface__["data"][0]


class Addresses:
    """Notes the data address of the values passed through it, in order."""

    def __init__(self):
        self.seen = []

    def __call__(self, v):
        self.seen.append(address(v))
        return v

    def elided(self):
        """Whether the last value noted is in the memory of the one before it."""
        return self.seen[-1] == self.seen[-2]


def general_path(monkeypatch, run):
    """``run()`` with elision switched off: every operation takes the general path."""
    with monkeypatch.context() as m:
        m.setattr(dispatch, "TEMPORARY_REFERENCES", -1)
        return run()


def check_as_general_path(monkeypatch, f, primals, tangents, noted):
    """jvp of scalar ``f``: elided (as ``noted`` saw), the value numpy's and the tangent the
    general path's, bit for bit, and finite differences' along every argument's direction."""
    got = mg.jvp(f, primals, tangents)
    assert noted.elided()
    want = general_path(monkeypatch, lambda: mg.jvp(f, primals, tangents))
    np.testing.assert_array_equal(got[0], f(*primals), strict=True)
    np.testing.assert_array_equal(got[0], want[0], strict=True)
    np.testing.assert_array_equal(got[1], want[1], strict=True)
    fd = sum(directional_derivative(f, list(primals), k, v) for k, v in enumerate(tangents))
    assert abs(got[1] - fd) <= 1e-6 * max(1.0, abs(fd)), (got[1], fd)


# -- where it runs: W3, each operator, several directions ----------------------------------


def test_w3_squares_the_difference_in_place_and_is_exact(monkeypatch):
    noted = Addresses()

    def mse(y, yh):
        return np.mean(noted(noted(y - yh) ** 2))

    # (y - yh) ** 2 written into y - yh, value and tangent
    check_as_general_path(monkeypatch, mse, (X, Y), (VX, VY), noted)
    closed = 2 * np.mean((X - Y) * (VX - VY))
    t = mg.jvp(mse, (X, Y), (VX, VY))[1]
    assert abs(t - closed) <= 1e-12 * abs(closed)


@pytest.mark.parametrize("symbol", ["+", "-", "*"])
@pytest.mark.parametrize("right", ["traced", "constant array", "number", "no tangent"])
@pytest.mark.parametrize("left_tangent", [True, False])
def test_each_operator_elides_with_the_general_path_s_results(
    monkeypatch, symbol, right, left_tangent
):
    noted = Addresses()

    def f(x, y):
        scaled = x if left_tangent else mg.asarray(X)
        b = {"traced": y, "constant array": Y, "number": 0.75, "no tangent": mg.asarray(Y)}[right]
        # (Python expressions of a temporary: the frame executes the operator itself)
        if symbol == "+":
            out = noted(noted(scaled * 1.5) + b)
        elif symbol == "-":
            out = noted(noted(scaled * 1.5) - b)
        else:
            out = noted(noted(scaled * 1.5) * b)
        return np.sum(np.sin(out))

    check_as_general_path(monkeypatch, f, (X, Y), (VX, VY), noted)


def test_square_elides_with_the_general_path_s_results(monkeypatch):
    noted = Addresses()

    def f(x):
        return np.sum(noted(noted(x * 1.5) ** 2))

    check_as_general_path(monkeypatch, f, (X,), (VX,), noted)


def test_several_directions_at_once_as_the_general_path(monkeypatch):
    """jacfwd: tangents of three directions, written in place as one."""
    noted = Addresses()

    def f(s):
        big = noted(noted(noted(s[0] * X - s[1] * Y) * 2.0) ** 2)
        return np.stack([np.sum(big * s[2]), np.sum(big - Y)])

    s = np.array([0.5, -1.5, 2.0])
    got = mg.jacfwd(f)(s)
    assert noted.seen[0] == noted.seen[1] == noted.seen[2]
    want = general_path(monkeypatch, lambda: mg.jacfwd(f)(s))
    np.testing.assert_array_equal(got, want, strict=True)
    np.testing.assert_allclose(got, mg.jacrev(f)(s), rtol=1e-10)


# -- where it must not run: each condition broken alone ----------------------------------------


def test_an_operand_a_c_caller_borrows_is_not_elided():
    """operator.sub(*pair) gets the tuple's references, borrowed: the frame executes a call,
    not the operator, and pair[0] must keep its value. (numpy itself writes the difference
    into pair[0] here, numpy 2.4 on CPython 3.11: its C backtrace check accepts the operator
    module, built into the interpreter; so the oracle is the program without the tuple.)"""

    def f(x, y):
        pair = (x * 1.5, y)
        difference = operator.sub(*pair)
        return np.sum(difference * pair[0])

    out, _ = mg.jvp(f, (X, Y), (VX, VY))
    np.testing.assert_array_equal(out, np.sum((X * 1.5 - Y) * (X * 1.5)), strict=True)


def test_a_named_operand_is_not_elided():
    def f(x, y):
        scaled = x * 1.5
        difference = scaled - y
        return np.sum(difference * scaled)

    out, _ = mg.jvp(f, (X, Y), (VX, VY))
    np.testing.assert_array_equal(out, f(X, Y), strict=True)


def test_not_inside_a_gradient_call():
    """A reverse level records the operation; a forward level inside one has it as parent."""
    v = RNG.normal(size=N)

    def outer(x):
        def f(z):  # (mg.asarray(...) * 1.0: a temporary with no node; x has one)
            return np.sum((mg.asarray(Y) * 1.0 - x) * z)

        return mg.jvp(f, (X,), (v,))[1]

    np.testing.assert_allclose(mg.grad(outer)(X), -v, rtol=1e-12)
    # and the reverse level alone: a temporary minus the traced argument
    np.testing.assert_allclose(mg.grad(lambda x: np.sum(mg.asarray(Y) * 1.0 - x))(X), -1.0)


def test_not_while_linearize_records():
    """linearize's journal records every tangent step, for f_jvp to replay without f."""

    def f(x):  # (the temporary has no tangent: the journal holds no reference to one)
        return np.sum((mg.asarray(Y) * 1.5 - x) ** 2)

    _, f_jvp = mg.linearize(f, X)
    assert f_jvp.reruns is None
    np.testing.assert_allclose(f_jvp(VX), mg.jvp(f, (X,), (VX,))[1], rtol=1e-12)


def test_not_a_value_of_the_gradient_call_around_forwarddiff():
    """forwarddiff's level has no parent; a value of the call around it (it has a node there)
    is refused by name, temporary or not."""

    def loss(x):
        held = collections.deque([x * 1.5])  # (popleft: its only reference on the stack)
        return np.sum(mg.forwarddiff(lambda z: held.popleft() - z, x))

    with pytest.raises(NotDifferentiableError):
        mg.grad(loss)(X)


def reused(f, *args):
    """Whether ``f(noted)``'s last operation was written into its left operand at jvp."""
    noted = Addresses()
    mg.jvp(lambda x, y: f(noted, x, y), (X, Y), (VX, VY))
    return noted.elided()


def test_a_small_temporary_is_not_elided():
    x = X[:1000]
    noted = Addresses()
    mg.jvp(lambda x: noted(noted(x * 1.5) - 1.0), (x,), (VX[:1000],))
    assert not noted.elided()


def test_a_borrowed_buffer_is_not_written():
    """A raw array that views another one's memory (a caller's): never written."""
    backing = X.copy()

    def f(noted, x, y):
        return noted(noted(WrappedArray(backing[:N])) - y)

    assert not reused(f)
    np.testing.assert_array_equal(backing, X)


def test_a_raw_array_held_elsewhere_is_not_written():
    held = []

    def f(noted, x, y):
        return noted(noted(_holding(held, x * 1.5)) - y)

    assert not reused(f)
    np.testing.assert_array_equal(held[0], X * 1.5)


def _holding(held, v):
    held.append(v._raw)
    return v


def test_a_raw_array_weakly_referenced_is_not_written():
    watched = []

    def f(noted, x, y):
        return noted(noted(_watching(watched, x * 1.5, lambda v: v._raw)) - y)

    assert not reused(f)


def _watching(watched, v, part):
    """``v``, with a weak reference to ``part(v)`` kept in ``watched``."""
    watched.append(weakref.ref(part(v)))
    return v


def test_a_tangent_held_elsewhere_is_not_written():
    held = []

    def f(noted, x, y):
        return noted(noted(_tangent_held(held, x * 1.5)) - y)

    assert not reused(f)
    np.testing.assert_array_equal(held[0][0], VX * 1.5)


def _tangent_held(held, v):
    held.append(_tangent(v))
    return v


def test_a_weakly_referenced_tangent_is_not_written():
    watched = []

    def f(noted, x, y):
        return noted(noted(_watching(watched, x * 1.5, _tangent)) - y)

    assert not reused(f)


def _tangent(v):
    return next(iter(v._tangents.values()))


def _tangent_level(v):
    return next(iter(v._tangents))


# Each a state of a temporary the checks must refuse, set by hand where no program reaches it
# alone (another check refuses it too): the operation then takes the general path.
TAMPERED = {
    "a flag (BORROWED: the caller's memory)": lambda v: setattr(v, "_flags", BORROWED),
    "a capture": lambda v: setattr(v, "_captures", []),
    "a base": lambda v: setattr(v, "_base", WrappedArray(np.zeros(N))),
    "a list of views": lambda v: setattr(v, "_views", []),
    "a lent tangent": lambda v: v._tangents.update({_tangent_level(v): Borrowed(VX[None])}),
    "a tangent at another level": lambda v: v._tangents.update({object(): VX[None]}),
}


@pytest.mark.parametrize("state", list(TAMPERED))
def test_a_temporary_in_a_refused_state_takes_the_general_path(monkeypatch, state):
    def tampered(v):
        TAMPERED[state](v)
        return v

    noted = Addresses()

    def f(x, y):
        return np.sum(np.sin(noted(noted(tampered(x * 1.5)) - y)))

    got = mg.jvp(f, (X, Y), (VX, VY))
    assert not noted.elided()
    want = general_path(monkeypatch, lambda: mg.jvp(f, (X, Y), (VX, VY)))
    np.testing.assert_array_equal(got[1], want[1], strict=True)


def test_a_user_rule_for_the_ufunc_takes_the_general_path(monkeypatch):
    """A rule that is not mutagrad's own has its own jvp, not the one elision writes."""
    monkeypatch.setattr(UFUNC_RULES[np.subtract], "trusted", False)

    def f(noted, x, y):
        return noted(noted(x * 1.5) - y)

    assert not reused(f)


def test_a_read_only_temporary_is_not_written():
    def read_only():
        raw = X * 1.5
        raw.flags.writeable = False
        return WrappedArray(raw)

    def f(noted, x, y):
        return noted(noted(read_only()) - y)

    assert not reused(f)


def test_the_result_s_layout_is_numpy_s():
    """A Fortran-ordered temporary minus a C-ordered array: numpy writes the difference into
    the temporary, Fortran-ordered, and so does elision."""
    c = Y.reshape(8, -1)

    def f(x):
        return noted(noted(WrappedArray(np.asfortranarray(X.reshape(8, -1))) * 1.0) - c)

    noted = Addresses()
    got = mg.jvp(f, (X,), (VX,))[0]
    assert noted.elided()
    want = np.asfortranarray(X.reshape(8, -1)) * 1.0 - c
    np.testing.assert_array_equal(got, want, strict=True)
    assert got.strides == want.strides


def test_an_integer_temporary_is_not_elided():
    """int64 - 0.5 is float64: numpy's result, not a cast into the integers."""

    def f(x):
        return np.sum(mg.asarray(np.arange(N)) * 2 - 0.5) * x

    out, _ = mg.jvp(f, (1.0,), (1.0,))
    assert out == np.sum(np.arange(N) * 2 - 0.5)


def test_a_tangent_of_another_dtype_is_not_written():
    """A float32 temporary whose tangent is float64 (set by hand: the general path casts
    a tangent to its value's dtype, so no program makes one)."""

    def widened(v):
        set_tangent(v, _tangent_level(v), np.asarray(v._tangents[_tangent_level(v)], np.float64))
        return v

    noted = Addresses()

    def f(x, y):
        return np.sum(noted(noted(widened(x.astype(np.float32) * 1.5)) - y.astype(np.float32)))

    got = mg.jvp(f, (X, Y), (VX, VY))
    assert not noted.elided()
    assert got[1].dtype == np.float32


def test_powers_other_than_two_are_not_elided():
    def f(noted, x, y):
        return noted(noted(x * 1.5) ** 3)

    assert not reused(f)
    out = mg.jvp(lambda x: np.sum((x * 1.5) ** 3), (X,), (VX,))[0]
    assert out == np.sum((X * 1.5) ** 3)


@pytest.mark.parametrize(
    "other",
    [np.float64(0.25), np.zeros((2, N), np.float32), Y],
    ids=["numpy scalar (float64 wins)", "broadcast to more rows", "a wider dtype"],
)
def test_a_result_of_another_dtype_or_shape_is_not_elided(other):
    def f(x):
        return noted(noted(x.astype(np.float32) * 1.5) - other)

    noted = Addresses()
    got = mg.jvp(f, (X,), (VX,))[0]
    assert not noted.elided()
    want = X.astype(np.float32) * 1.5 - other
    np.testing.assert_array_equal(got, want, strict=True)


def test_a_lent_traced_tangent_of_the_other_operand():
    """The caller's tangent a traced array (lent as it is): numpy would hand it to mutagrad."""

    def f(noted, x, y):
        return noted(noted(x * 1.5) - y)

    noted = Addresses()
    got = mg.jvp(lambda x, y: f(noted, x, y), (X, Y), (VX, mg.asarray(VY)))
    assert not noted.elided()
    np.testing.assert_array_equal(got[1], VX * 1.5 - VY, strict=True)
