"""Structured arguments and outputs: tuples, lists, dicts, namedtuples, attrs classes.

Gradients mirror the arguments' structure, with None for leaves that get no
gradient; pullback and withgradient return structured values unwrapped and
accept structured cotangents.
"""

from __future__ import annotations

from collections import namedtuple

import attrs
import numpy as np
import pytest

import mutagrad

Point = namedtuple("Point", ["x", "y"])


@attrs.define
class Layer:
    weight: np.ndarray
    bias: np.ndarray
    name: str = "dense"
    width: int = 3


@attrs.frozen
class Scaled:
    value: float
    factor: float


def test_zygote_tuple_example():
    # gradient((a,t) -> sum(a .* t[1]) + t[2], [1,2,3], (4,5)) == ([4,4,4], (6, 1))
    ga, gt = mutagrad.gradient(lambda a, t: np.sum(a * t[0]) + t[1], np.array([1, 2, 3]), (4, 5))
    np.testing.assert_array_equal(ga, [4.0, 4.0, 4.0])
    assert gt == (6.0, 1.0) and type(gt) is tuple


def test_list_argument():
    (g,) = mutagrad.gradient(lambda xs: np.sum(xs[0] * xs[1]), [np.array([1.0, 2.0]), 3.0])
    assert type(g) is list
    np.testing.assert_array_equal(g[0], [3.0, 3.0])
    assert g[1] == 3.0


def test_dict_argument_with_non_differentiable_leaves():
    params = {"w": np.array([1.0, 2.0]), "scale": 2.0, "label": "run-1", "steps": 4}

    def f(p):
        return np.sum(p["w"] ** 2) * p["scale"]

    (g,) = mutagrad.gradient(f, params)
    assert list(g) == ["w", "scale", "label", "steps"]
    np.testing.assert_array_equal(g["w"], [4.0, 8.0])
    assert g["scale"] == 5.0
    assert g["label"] is None
    assert g["steps"] is None  # an unused number: no gradient flows


def test_namedtuple_argument_gives_a_namedtuple_gradient():
    (g,) = mutagrad.gradient(lambda p: p.x * p.y**2, Point(3.0, 2.0))
    assert type(g) is Point
    assert g == Point(4.0, 12.0)


def test_attrs_argument_gives_an_object_with_the_same_fields():
    layer = Layer(np.array([[1.0, 2.0]]), np.array([0.5]))
    x = np.array([3.0, -1.0])
    (g,) = mutagrad.gradient(lambda layer: np.sum(layer.weight @ x + layer.bias), layer)
    np.testing.assert_array_equal(g.weight, [[3.0, -1.0]])
    np.testing.assert_array_equal(g.bias, [1.0])
    assert g.name is None and g.width is None
    assert "LayerGradient" in repr(g)


def test_frozen_attrs_argument():
    (g,) = mutagrad.gradient(lambda s: s.value * s.factor, Scaled(2.0, 5.0))
    assert (g.value, g.factor) == (5.0, 2.0)


def test_nested_structures():
    arg = {"layers": [Point(np.array([1.0, 2.0]), 3.0), Point(np.array([4.0]), 5.0)],
           "extra": (np.array([2.0]), "tag")}  # fmt: skip

    def f(a):
        total = 0.0
        for p in a["layers"]:
            total = total + np.sum(p.x) * p.y
        return total * a["extra"][0][0]

    (g,) = mutagrad.gradient(f, arg)
    first, second = g["layers"]
    assert type(first) is Point
    np.testing.assert_array_equal(first.x, [6.0, 6.0])
    assert first.y == 6.0
    np.testing.assert_array_equal(second.x, [10.0])
    assert second.y == 8.0
    np.testing.assert_array_equal(g["extra"][0], [3.0 * 3 + 4.0 * 5])
    assert g["extra"][1] is None


def test_a_structured_argument_that_f_mutates_leaves_the_callers_arrays_alone():
    arg = {"buf": np.zeros(3), "x": np.array([1.0, 2.0, 3.0])}

    def f(a):
        a["buf"][:] = a["x"] ** 2
        return np.sum(a["buf"])

    (g,) = mutagrad.gradient(f, arg)
    np.testing.assert_array_equal(g["x"], [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(g["buf"], [0.0, 0.0, 0.0])  # fully overwritten
    np.testing.assert_array_equal(arg["buf"], np.zeros(3))


@pytest.mark.parametrize(
    "make, check",
    [
        (lambda x: (x * 2, x * 3), lambda y: type(y) is tuple),
        (lambda x: [x * 2, x * 3], lambda y: type(y) is list),
        (lambda x: {"a": x * 2, "b": x * 3}, lambda y: type(y) is dict),
        (lambda x: Point(x * 2, x * 3), lambda y: type(y) is Point),
    ],
)
def test_pullback_of_structured_outputs(make, check):
    x = np.array([1.0, 2.0])
    y, back = mutagrad.pullback(make, x)
    assert check(y)
    leaves = list(y.values()) if isinstance(y, dict) else list(y)
    assert all(type(leaf) is np.ndarray for leaf in leaves)
    np.testing.assert_array_equal(leaves[0], [2.0, 4.0])
    dy = type(y)(**{k: np.ones(2) for k in y}) if isinstance(y, dict) else None
    if dy is None:
        dy = Point(np.ones(2), np.ones(2)) if type(y) is Point else type(y)([np.ones(2)] * 2)
    (g,) = back(dy)
    np.testing.assert_array_equal(g, [5.0, 5.0])


def test_pullback_of_an_attrs_output_and_a_cotangent_that_skips_a_leaf():
    y, back = mutagrad.pullback(lambda x: Layer(x * 2, x * 3, name="out"), np.array([1.0]))
    assert type(y) is Layer and y.name == "out"
    assert type(y.weight) is np.ndarray
    (g,) = back(Layer(np.ones(1), None, name=None, width=None))
    np.testing.assert_array_equal(g, [2.0])


def test_withgradient_auxiliary_output_is_unwrapped_in_any_structure():
    def f(x):
        z = 1 / x
        return np.sum(z), {"z": z, "parts": [z[0], Point(z, 1)]}

    val, (g,) = mutagrad.withgradient(f, np.array([1, 2, 4]))
    # Zygote: withgradient([1,2,4]) do x; z = 1 ./ x; sum(z), z; end
    assert val[0] == 1.75
    np.testing.assert_array_equal(val[1]["z"], [1.0, 0.5, 0.25])
    assert type(val[1]["z"]) is np.ndarray
    assert type(val[1]["parts"][1]) is Point
    np.testing.assert_array_equal(g, [-1.0, -0.25, -0.0625])


def test_withgradient_of_a_namedtuple_differentiates_the_first_field():
    # Zygote: withgradient(3.0, 4.0) do x, y; (div = x/y, mul = x*y); end
    Result = namedtuple("Result", ["div", "mul"])
    val, grad = mutagrad.withgradient(lambda x, y: Result(x / y, x * y), 3.0, 4.0)
    assert val == Result(0.75, 12.0)
    assert grad == (0.25, -0.1875)


def test_jacobian_of_a_structured_argument_is_none_as_in_zygote():
    ja, jt = mutagrad.jacobian(lambda a, t: a * t["s"], np.ones(2), {"s": 2.0})
    np.testing.assert_array_equal(ja, 2 * np.eye(2))
    assert jt is None
