"""checkpointed(f, ...) where f writes an argument: refused in every mode, never a wrong answer.

``f`` runs on arrays of its own holding its arguments' values (so that the
backward pass can run it again from them), so a write to an argument would
not reach the caller's array as it does in numpy: the value and the gradient
would silently differ from numpy's. Every write path is checked, in every
mode, against plain numpy and central finite differences: mutagrad either
agrees with both or raises a MutagradError that names the line of the write.
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
import mutagrad.numpy as mnp
from mutagrad.testing import check_gradient, numerical_gradient

MODES = ("poison", "strict", "snapshot")
X = np.array([0.9, 1.3, 0.4, 1.7])
WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0])  # so that reading back a sorted y differs too


def through_checkpoint(segment, wrap=lambda y: (y,), read_back=lambda args: args[0]):
    """A program that hands ``y`` (packed by ``wrap``) to ``segment`` and reads ``y`` afterwards."""

    def program(x):
        y = x * 1.0
        args = wrap(y)
        s = mutagrad.checkpointed(segment, *args)
        return s + np.sum(read_back(args) ** 2 * WEIGHTS)

    return program


def item_assignment(y):
    y[0] = y[0] * 2
    return np.sum(y * y)


def augmented_assignment(y):
    y *= 1.5
    return np.sum(np.sin(y))


def ufunc_out(y):
    np.multiply(y, y, out=y)
    return np.sum(y)


def unary_ufunc_out(y):
    np.sin(y, out=y)
    return np.sum(y * y)


def copyto(y):
    np.copyto(y, y * 3.0)
    return np.sum(y)


def fill(y):
    s = np.sum(y * y)
    y.fill(2.0)
    return s


def sort(y):
    y.sort()
    return np.sum(y * np.arange(len(y)))


def write_through_a_view(y):
    tail = y[1:]
    tail *= 3.0
    return np.sum(y * y)


def write_through_a_reshaped_view(y):
    grid = y.reshape(2, 2)
    grid[:, 0] = 0.5
    return np.sum(y * y)


def write_through_a_view_taken_in_a_helper(y):
    def scale_head(a):
        a[:2] *= 2.0

    scale_head(y)
    return np.sum(y**3)


def first_of_pair(pair):
    pair[0][1] = pair[1][0] * 4.0
    return np.sum(pair[0] * pair[1])


def rebinds_a_list_element(items):
    items[0] = items[0] * 2.0
    return np.sum(items[0])


def first_of_dict(params):
    params["w"][-1] = 0.0
    return np.sum(params["w"] * params["b"])


WRITES = {
    "item assignment": through_checkpoint(item_assignment),
    "augmented assignment": through_checkpoint(augmented_assignment),
    "ufunc out=": through_checkpoint(ufunc_out),
    "unary ufunc out=": through_checkpoint(unary_ufunc_out),
    "np.copyto": through_checkpoint(copyto),
    ".fill": through_checkpoint(fill),
    ".sort": through_checkpoint(sort),
    "through a view": through_checkpoint(write_through_a_view),
    "through a reshaped view": through_checkpoint(write_through_a_reshaped_view),
    "in a helper": through_checkpoint(write_through_a_view_taken_in_a_helper),
    "nested in a tuple": through_checkpoint(
        first_of_pair, wrap=lambda y: ((y, y[::-1] * 1.0),), read_back=lambda a: a[0][0]
    ),
    "nested in a list": through_checkpoint(
        first_of_pair, wrap=lambda y: ([y, y * 2.0],), read_back=lambda a: a[0][0]
    ),
    "a list element rebound": through_checkpoint(
        rebinds_a_list_element, wrap=lambda y: ([y],), read_back=lambda a: a[0][0]
    ),
    "nested in a dict": through_checkpoint(
        first_of_dict, wrap=lambda y: ({"w": y, "b": y + 1.0},), read_back=lambda a: a[0]["w"]
    ),
}


def view_of_a_bigger_array(x):
    big = np.concatenate([x, x]) * 1.0
    s = mutagrad.checkpointed(item_assignment, big[2:6])
    return s + np.sum(big**2)


def strided_view_of_a_bigger_array(x):
    big = np.concatenate([x, x]) * 1.0
    s = mutagrad.checkpointed(augmented_assignment, big[::2])
    return s + np.sum(big**2)


def constant_ndarray_argument(x):
    scale = np.array([1.0, 2.0, 3.0, 4.0])  # a raw ndarray: no gradient of its own

    def segment(h, c):
        c *= 2.0
        return np.sum(h * c)

    s = mutagrad.checkpointed(segment, x * 1.0, scale)
    return s + np.sum(x * scale)


def constant_wrapped_argument(x):
    offsets = mnp.zeros(4)  # a WrappedArray that carries no gradient

    def segment(h, c):
        c[1] = 5.0
        return np.sum(h * h + c)

    s = mutagrad.checkpointed(segment, x * 1.0, offsets)
    return s + np.sum(x * offsets)


WRITES.update(
    {
        "a view of a bigger array": view_of_a_bigger_array,
        "a strided view of a bigger array": strided_view_of_a_bigger_array,
        "a raw ndarray argument": constant_ndarray_argument,
        "a constant WrappedArray argument": constant_wrapped_argument,
    }
)


def never_wrong(program, x, mode):
    """mutagrad agrees with numpy and finite differences, or raises; returns the error or None."""
    try:
        result = mutagrad.withgradient(program, x.copy(), mode=mode)
    except mutagrad.MutagradError as error:
        return error
    np.testing.assert_allclose(result.val, program(x.copy()), rtol=1e-12)
    check_gradient(program, x.copy(), mode=mode)
    return None


# Writes that strict mode does not see: to a raw ndarray (numpy refuses them,
# read-only) and to a list (not an array). checkpointed refuses them itself.
UNSEEN_BY_STRICT = {"a raw ndarray argument", "a list element rebound"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(WRITES))
def test_a_write_to_an_argument_is_refused_at_its_line(name, mode):
    error = never_wrong(WRITES[name], X, mode)
    assert error is not None, f"{name}: the write to an argument was not refused in {mode} mode"
    if mode == "strict" and name not in UNSEEN_BY_STRICT:
        assert isinstance(error, mutagrad.MutationError)  # strict mode refuses every write
        return
    what, _ = str(error).split("in the call at")
    assert "argument" in what
    if name != "a list element rebound":  # a rebound list element has no line to name
        assert "test_checkpointed_argument_writes.py:" in what


def test_the_message_names_the_write_and_the_fix():
    with pytest.raises(mutagrad.MutagradError) as info:
        mutagrad.gradient(WRITES["item assignment"], X)
    message = str(info.value)
    assert "checkpointed(item_assignment) writes an array of shape (4,)" in message
    assert "(its argument)" in message
    assert "y[0] = y[0] * 2" in message
    assert "s = mutagrad.checkpointed(segment, *args)" in message
    assert "call item_assignment directly instead of through checkpointed" in message


def test_the_reported_program_is_refused_in_every_mode():
    def g(y):
        y[0] = y[0] * 2  # g writes its argument
        return np.sum(y * y)

    def f(x):
        y = x * 1.0
        s = mutagrad.checkpointed(g, y)
        return s + np.sum(y)  # numpy: y was written by g

    x = np.array([1.0, 1.0])
    assert f(x.copy()) == 8.0
    np.testing.assert_allclose(numerical_gradient(f, x)[0], [10.0, 3.0], rtol=1e-6)
    for mode in MODES:
        with pytest.raises(mutagrad.MutagradError):
            mutagrad.withgradient(f, x, mode=mode)


def test_a_raw_argument_is_writable_and_unchanged_after_the_refusal():
    scale = np.array([1.0, 2.0, 3.0, 4.0])

    def loss(x):
        return mutagrad.checkpointed(lambda h, c: np.sum(h * np.multiply(c, 2.0, out=c)), x, scale)

    with pytest.raises(mutagrad.MutagradError, match="writes an ndarray"):
        mutagrad.gradient(loss, X)
    assert scale.flags.writeable
    np.testing.assert_array_equal(scale, [1.0, 2.0, 3.0, 4.0])


# -- what f may still do ---------------------------------------------------------------


def writes_a_copy(y):
    z = y.copy()
    z[0] = z[0] * 2
    return np.sum(z * z)


def fills_its_own_buffer(y):
    out = np.empty_like(y)
    for i in range(len(y)):
        out[i] = np.sin(y[i]) * y[i]
    return np.sum(out)


def writes_a_view_of_its_result(y):
    z = y * 2.0
    z[1:] += y[:-1]
    return np.sum(z**2)


ALLOWED = {
    "writes a copy": through_checkpoint(writes_a_copy),
    "fills its own buffer": through_checkpoint(fills_its_own_buffer),
    "writes a view of its result": through_checkpoint(writes_a_view_of_its_result),
    "nested arguments, only read": through_checkpoint(
        lambda pair: np.sum(pair[0] * pair[1]),
        wrap=lambda y: ([y, y * 2.0],),
        read_back=lambda a: a[0][0],
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(ALLOWED))
def test_writes_to_arrays_f_creates_are_fine(name, mode):
    error = never_wrong(ALLOWED[name], X, mode)
    if mode == "strict" and name != "nested arguments, only read":
        assert isinstance(error, mutagrad.MutationError)  # strict mode refuses every write
    else:
        assert error is None


def test_outside_a_gradient_call_f_writes_its_argument_as_numpy_does():
    y = X.copy()
    assert mutagrad.checkpointed(item_assignment, y) == np.sum(y * y)
    assert y[0] == 2 * X[0]


def _private_copies(value):
    """``value`` with every array in it copied: what the segment used to receive."""
    if isinstance(value, (np.ndarray, mutagrad.WrappedArray)):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return type(value)(_private_copies(v) for v in value)
    if isinstance(value, dict):
        return {k: _private_copies(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("name", [n for n in WRITES if n != "a raw ndarray argument"])
def test_each_refusal_prevents_a_wrong_value(name, monkeypatch):
    """Run on private copies of its arguments (as before the refusal), each program's value
    differs from numpy's: none of the refusals is vacuous."""
    program = WRITES[name]
    numpy_value = program(X.copy())
    monkeypatch.setattr(mutagrad, "checkpointed", lambda f, *args: f(*_private_copies(args)))
    assert program(X.copy()) != pytest.approx(numpy_value)
