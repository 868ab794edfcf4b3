"""What a Python user meets first: the two conventions of one name, autograd's defvjp, buffers
allocated from a shape, and tracebacks (issue 24's newcomer scripts).

* ``jacobian``/``hessian`` are Zygote's when given arguments and JAX's transforms when
  given only ``argnums``; an int written where ``argnums`` was meant fails with an
  error that names ``argnums=``, whether calling ``f`` at it fails or its result is
  then called; ``grad(f, x)`` with an array names ``grad(f)(x)``;
* ``defvjp`` takes autograd's form (``lambda ans, x: lambda g: ...``) and gives the
  same derivatives, to second order; a vjp of neither form is refused where it is
  registered; every failure of a user's rule names the rule and its registering line;
* a traced write into ``np.zeros(n)`` names numpy's own fix, ``like=x``, which works;
  a module-level scratch array gets ``mutagrad.array(np.zeros(n))``;
* a filtered traceback holds no frame of mutagrad at all.
"""

from __future__ import annotations

import traceback
from pathlib import Path

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient

X = np.array([0.3, -1.2, 2.0])
HERE = Path(__file__).name


def two_arguments(x, y):
    return x * y


def indexes_its_argument(x):
    return np.sum(x[0] ** 2 * x[1])


# -- two conventions, one name ------------------------------------------------------------


def test_jax_argnums_written_as_zygotes_point_names_argnums():
    with pytest.raises(TypeError, match=r"write jacobian\(f, argnums=1\)\(\*args\)") as info:
        mutagrad.jacobian(two_arguments, 1)
    assert "missing 1 required positional argument" in str(info.value)
    with pytest.raises(TypeError, match=r"hessian\(f, argnums=0\)") as info:
        mutagrad.hessian(indexes_its_argument, 0)
    assert "is Zygote's form: it differentiates f at the point (0)" in str(info.value)
    with pytest.raises(TypeError, match=r"jacobian\(f, argnums=\(0, 1\)\)"):
        mutagrad.jacobian(two_arguments, (0, 1))


def test_a_zygote_result_computed_at_ints_explains_itself_when_called():
    result = mutagrad.jacobian(np.sin, 0)
    np.testing.assert_array_equal(result[0], [1.0])  # still Zygote's tuple
    assert result == (result[0],) and len(result) == 1
    with pytest.raises(TypeError, match=r"returned \(array\(\[1\.\]\),\), which cannot be "):
        result(np.ones(2))
    number = mutagrad.hessian(lambda x: x**3, 2)
    assert number == 12.0 and number + 1 == 13.0
    with pytest.raises(TypeError, match=r"write hessian\(f, argnums=2\)\(\*args\)"):
        number(1.0)


def test_the_transform_is_told_apart_from_zygotes_call_and_both_work():
    np.testing.assert_array_equal(
        mutagrad.jacobian(two_arguments, argnums=1)(X, 2 * X), np.diag(X)
    )
    (zygote,) = mutagrad.jacobian(lambda x: 2 * x, X)
    np.testing.assert_array_equal(zygote, 2 * np.eye(3))
    assert type(mutagrad.jacobian(lambda x: 2 * x, X)) is tuple  # arrays: nothing to explain


def test_grad_given_the_point_names_both_fixes():
    with pytest.raises(TypeError, match=r"grad\(f\)\(x\).*mutagrad\.gradient\(f, x\)"):
        mutagrad.grad(indexes_its_argument, X)


# -- defvjp: autograd's form and errors that name the rule -----------------------------------


def test_autograds_form_of_defvjp_gives_the_same_derivatives():
    @mutagrad.primitive
    def softplus(x):
        return np.log1p(np.exp(x))

    mutagrad.defvjp(softplus, lambda ans, x: lambda g: g / (1 + np.exp(-x)))
    np.testing.assert_allclose(
        mutagrad.grad(lambda x: np.sum(softplus(x)))(X), 1 / (1 + np.exp(-X))
    )
    check_gradient(lambda x: np.sum(softplus(x) ** 2), X, order=2)

    @mutagrad.primitive
    def weighted(x, w):
        return x * w

    mutagrad.defvjp(weighted, lambda ans, x, w: lambda g: g * w, lambda ans, x, w: lambda g: g * x)
    check_gradient(lambda x, w: np.sum(weighted(x, w) ** 2), X, X + 1.0, order=2)


def test_a_vjp_of_neither_form_is_refused_where_it_is_registered():
    @mutagrad.primitive
    def double(x):
        return 2.0 * x

    with pytest.raises(mutagrad.MutagradError) as info:
        mutagrad.defvjp(double, lambda g: 2.0 * g)  # the line the message names
    message = str(info.value)
    assert "vjp 0 takes 1 positional argument(s), which fits neither form" in message
    assert "mutagrad's vjp(g, ans, *args) takes 3, autograd's (ans, *args) 2" in message
    assert f"{HERE}:" in message and "the line the message names" in message


@pytest.mark.parametrize(
    ("vjp", "says"),
    [
        (lambda g, ans, x: np.sum(2.0 * x * g), "returned a cotangent of shape () for an "
         "argument of shape (3,)"),
        (lambda g, ans, x: g * undefined_factor, "raised NameError"),  # noqa: F821
        (lambda ans, x, k=2.0: lambda g: k * g, "returned a function, not a cotangent"),
    ],
    ids=["wrong shape", "raises", "autograd's form, ambiguous"],
)  # fmt: skip
def test_every_failure_of_a_vjp_names_the_rule_and_its_registering_line(vjp, says):
    @mutagrad.primitive
    def scaled(x, k=2.0):
        return k * x

    mutagrad.defvjp(scaled, vjp)  # registered here
    with pytest.raises(mutagrad.MutagradError) as info:
        mutagrad.grad(lambda x: np.sum(scaled(x)))(X)
    message = str(info.value)
    assert message.startswith("the vjp for argument 0 of scaled, registered at")
    assert "mutagrad.defvjp(scaled, vjp)  # registered here" in message and says in message


def test_every_failure_of_an_rrule_names_the_rule_and_its_registering_line():
    @mutagrad.primitive
    def cube(x):
        return x**3

    @mutagrad.rrule(cube)  # registered here
    def cube_rule(x):
        return cube(x), lambda dy: (mutagrad.NoTangent(), np.sum(dy))

    with pytest.raises(mutagrad.MutagradError) as info:
        mutagrad.grad(lambda x: np.sum(cube(x)))(X)
    message = str(info.value)
    assert message.startswith("the pullback of the rrule for cube, for its input 0, registered")
    assert "@mutagrad.rrule(cube)  # registered here" in message
    assert "returned a cotangent of shape () for an argument of shape (3,)" in message


# -- buffers from a shape ---------------------------------------------------------------------


def fills_a_raw_buffer(x):
    out = np.zeros(3)
    out[1:] = x[:2] * x[1:]
    return np.sum(out**2)


SCRATCH = np.zeros(3)


def fills_a_module_level_buffer(x):
    SCRATCH[:] = x * 2.0
    return np.sum(SCRATCH)


def test_a_buffer_from_a_shape_names_numpys_like_fix_and_it_works():
    with pytest.raises(mutagrad.TracerConversionError) as info:
        mutagrad.grad(fills_a_raw_buffer)(X)
    message = str(info.value)
    # numpy's own fixes first: the routine keeps returning ndarrays to plain callers
    # (issue 26); mutagrad.numpy's last
    assert "becomes: `out = np.zeros(3, like=x)`" in message
    assert "or: `out = np.zeros_like(x, shape=3)`" in message
    assert message.index("like=x") < message.index("`out = mnp.zeros(3)`")

    def shaped_like(x):
        out = np.zeros_like(x, shape=3)
        out[1:] = x[:2] * x[1:]
        return np.sum(out**2)

    check_gradient(shaped_like, X, order=2)
    assert type(shaped_like(X)) is np.float64

    def with_like(x):
        out = np.zeros(3, like=x)
        out[1:] = x[:2] * x[1:]
        return np.sum(out**2)

    check_gradient(with_like, X, order=2)
    assert with_like(X) == fills_a_raw_buffer(X)


def test_a_module_level_buffer_names_the_fixes_for_a_buffer_kept_across_calls():
    with pytest.raises(mutagrad.TracerConversionError) as info:
        mutagrad.grad(fills_a_module_level_buffer)(X)
    message = str(info.value)
    assert "np.zeros(n, like=x)" in message and "mutagrad.array(np.zeros(n))" in message


# -- tracebacks --------------------------------------------------------------------------------


def test_a_filtered_traceback_shows_no_frame_of_mutagrad():
    def fill_after_use(x):
        y = x * x
        x.fill(0)
        return np.sum(y)

    with pytest.raises(mutagrad.PoisonedCaptureError) as info:
        mutagrad.gradient(fill_after_use, np.ones(3))
    shown = "".join(traceback.format_exception(info.value))
    source = str(Path(mutagrad.__file__).parent)
    assert source not in shown, shown
    assert "mutagrad.gradient(fill_after_use, np.ones(3))" in shown
