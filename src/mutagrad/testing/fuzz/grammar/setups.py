"""Setups: how a program's arguments are made from its input arrays.

Each setup of :data:`mutagrad.testing.fuzz.blueprint.SETUPS` is a function
registered here with :func:`setup`: it says ``f``'s parameters, what ``make``
passes for each (an expression in the inputs ``a0``, ``a1``: the input
itself, a view, a copy in another layout or precision, a container holding
it), which input each argument's gradient belongs to, and the shape of the
inputs when the setup needs one. :func:`apply_setup` runs the blueprint's
setup and declares the arguments to the renderer.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np

from mutagrad.testing.fuzz.grammar.expressions import mask_literal
from mutagrad.testing.fuzz.grammar.renderer import Renderer, Var

__all__ = ["SETUP_FUNCTIONS", "apply_setup", "setup"]


@attrs.define
class Arguments:
    """``f``'s parameters, what ``make`` passes for them, and the input each one comes from.

    ``sources[i]`` is ``None`` for an argument without a derivative (an index
    array); a keyword argument (bound by ``make``) has a parameter but no
    entry in ``arguments`` and ``sources``.
    """

    shape: tuple[int, ...]
    params: list[str] = attrs.field(factory=lambda: ["x"])
    arguments: list[str] = attrs.field(factory=lambda: ["a0"])
    sources: list[int | None] = attrs.field(factory=lambda: [0])
    inputs: int = 1


SetupFunction = Callable[[Renderer, tuple[int, ...]], Arguments]
SETUP_FUNCTIONS: dict[str, SetupFunction] = {}


def setup(*names: str) -> Callable[[SetupFunction], SetupFunction]:
    """Register the decorated function as the setup(s) ``names``."""

    def register(function: SetupFunction) -> SetupFunction:
        for name in names:
            SETUP_FUNCTIONS[name] = function
        return function

    return register


@setup("one argument", "views made outside f")  # the views: see apply_setup
def _one_argument(r: Renderer, shape: tuple[int, ...]) -> Arguments:
    return Arguments(shape)


@setup("float32 argument")
def _float32_argument(r: Renderer, shape: tuple[int, ...]) -> Arguments:
    return Arguments(shape, arguments=["a0.astype(np.float32)"])


@setup("two arguments")
def _two_arguments(r: Renderer, shape: tuple[int, ...]) -> Arguments:
    return Arguments(shape, ["x", "y"], ["a0", "a1"], [0, 1], inputs=2)


@setup("three arguments")  # not the fuzzer's: mutagrad.testing.strategies.programs draws it
def _three_arguments(r: Renderer, shape: tuple[int, ...]) -> Arguments:
    return Arguments(shape, ["x", "y", "z"], ["a0", "a1", "a2"], [0, 1, 2], inputs=3)


#: Setups whose two arguments share memory: the arguments, and the input's
#: shape if they need one (``None``: the drawn shape).
SHARED_MEMORY_ARGUMENTS: dict[str, tuple[list[str], tuple[int, ...] | None]] = {
    "the same array twice": (["a0", "a0"], None),
    "overlapping slices": (["a0[:4]", "a0[2:]"], (6,)),
    "array and its transpose": (["a0", "a0.T"], (3, 3)),
    "array and its reverse": (["a0", "a0[::-1]"], (5,)),
}


def _shared_memory(name: str) -> SetupFunction:
    arguments, needed_shape = SHARED_MEMORY_ARGUMENTS[name]

    def make_arguments(r: Renderer, shape: tuple[int, ...]) -> Arguments:
        return Arguments(needed_shape or shape, ["x", "y"], list(arguments), [0, 0])

    return make_arguments


for _name in SHARED_MEMORY_ARGUMENTS:
    setup(_name)(_shared_memory(_name))


@setup("non-C layout")
def _non_c_layout(r: Renderer, shape: tuple[int, ...]) -> Arguments:
    layouts = (
        ["np.asfortranarray(a0)", "np.copy(a0, order='F')", "a0.T", "a0[:, ::-1]"]
        if len(shape) == 2
        else ["a0[::-1]", "a0[::2]", "a0[1:]"]
    )
    argument = layouts[r.blueprint.values[0] % len(layouts)]
    return Arguments((6,) if argument == "a0[::2]" else shape, arguments=[argument])


@setup("mask argument")
def _mask_argument(r: Renderer, shape: tuple[int, ...]) -> Arguments:
    # A boolean argument has no derivative, and a gradient call refuses it
    # positionally: the mask comes as a keyword, as users pass it (bound by
    # make, so that each call gets a fresh mask to mutate).
    r.keywords["m"] = mask_literal(shape, r.blueprint.values[1])
    return Arguments(shape, ["x", "m"], sources=[0])


@setup("index argument")
def _index_argument(r: Renderer, shape: tuple[int, ...]) -> Arguments:
    picks = [r.blueprint.values[k] % shape[0] for k in range(3)]
    return Arguments(shape, ["x", "k"], ["a0", f"np.array({picks})"], [0, None])


@setup("container argument")
def _container_argument(r: Renderer, shape: tuple[int, ...]) -> Arguments:
    # The array reaches f inside a container: a pytree that gradients mirror.
    forms = [
        ("", "OrderedDict(w=a0)", 'p["w"]'),
        ("", "defaultdict(list, w=a0)", 'p["w"]'),
        ('Pair = namedtuple("Pair", "w c")', "Pair(a0, 1.0)", "p.w"),
        ("@dataclasses.dataclass\nclass Holder:\n    w: object\n    c: float = 1.0",
         "Holder(a0)", "p.w"),
    ]  # fmt: skip
    definition, container, access = forms[r.blueprint.values[0] % len(forms)]
    if definition:
        r.outside.append(definition)
    r.lines.append(f"x = {access}")
    return Arguments(shape, ["p"], [container])


@setup("masked argument")
def _masked_argument(r: Renderer, shape: tuple[int, ...]) -> Arguments:
    # An ndarray subclass whose operations differ from a plain array's: refused.
    mask = mask_literal(shape, r.blueprint.values[1])
    return Arguments(shape, arguments=[f"np.ma.array(a0, mask=~{mask})"])


def apply_setup(r: Renderer, name: str, shape: tuple[int, ...]) -> None:
    """Make the arguments of setup ``name`` for inputs of ``shape``, and declare them to ``r``."""
    r.tags.append(name)
    made = SETUP_FUNCTIONS[name](r, shape)
    r.shape = made.shape
    r.n_inputs = made.inputs
    r.params = made.params
    r.arguments = made.arguments
    r.argument_sources = tuple(made.sources)
    _declare_arguments(r, name, made)
    if name == "views made outside f":
        _views_made_outside(r)


def _declare_arguments(r: Renderer, name: str, made: Arguments) -> None:
    """A :class:`Var` per argument, with the dtype and shape numpy gives it."""
    shape = made.shape
    input_dtype = np.float32 if r.grammar.dtype == "f4" else np.float64
    probe = [np.zeros(shape, input_dtype) for _ in range(made.inputs)]
    for param, argument, source in zip(made.params, made.arguments, made.sources):
        if name == "container argument":
            r.vars.append(Var("x", shape, "f8", argument_memory=True))
            continue
        if source is None:
            r.vars.append(Var("k", (3,), "i8", role="index", bound=shape[0]))
            continue
        value = eval(argument, {"np": np, **{f"a{k}": x for k, x in enumerate(probe)}})
        dtype = "f4" if value.dtype == np.float32 else "f8"
        r.vars.append(Var(param, value.shape, dtype, argument_memory=True))
    if name == "mask argument":
        r.vars.append(Var("m", shape, "b1", role="mask"))


def _views_made_outside(r: Renderer) -> None:
    """One or two views of the caller's array, made by ``make`` before ``f`` is called."""
    views = ["a0[:]", "a0[::2]", "a0.T", "a0.reshape(-1)", "a0[1:]", "a0[::-1]"]
    probe = np.zeros(r.shape)
    for k in range(1 + r.blueprint.values[2] % 2):
        view = views[r.blueprint.values[3 + k] % len(views)]
        name = f"o{k}"
        r.outside.append(f"{name} = {view}")
        view_shape = eval(view, {"a0": probe}).shape
        r.vars.append(Var(name, view_shape, "f8", role="outside"))
