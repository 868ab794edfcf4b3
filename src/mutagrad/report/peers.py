"""The peer AD systems ``mutagrad report --engines`` runs each corpus program on, unchanged.

A corpus program is ordinary numpy code. The question the report answers
beside mutagrad's three modes is what the systems people actually use do
with that same code, so each peer runs it *as written*, changing only what a
user of that system would change:

* **JAX** (:class:`JaxPeer`): the program's module sees ``jax.numpy`` where
  it bound numpy (as if its ``import numpy as np`` read ``import jax.numpy as
  np``), the gradient comes from ``jax.value_and_grad`` over the
  differentiated arguments, with 64-bit floats enabled so that values compare
  with numpy's;
* **HIPS autograd** (:class:`AutogradPeer`): the same with ``autograd.numpy``
  and ``autograd.value_and_grad``;
* **MyGrad** (:class:`MygradPeer`): the program is not touched at all; its
  differentiated arguments are ``mygrad.tensor`` objects (MyGrad implements
  numpy's dispatch protocols), and ``.backward()`` on the result fills each
  tensor's ``.grad``.

PyTorch is not a peer: numpy functions cannot take a tensor that requires a
gradient (``np.sin(t)`` raises "Can't call numpy() on Tensor that requires
grad"), so running the corpus on it would mean translating every program by
hand (:data:`PYTORCH_NOTE`).

None of the peers is a dependency of mutagrad: they come with the extra
``peers`` (:data:`PEERS_EXTRA_HINT`), are imported only when a peer
runs, and :func:`installed_peers` says which are there.

The arguments a peer differentiates are the ones the finite-difference
reference has a gradient for; an integer among them (the seeds' ``y = 0``)
is handed over as a float, as finite differences perturb it, because JAX and
autograd refuse to differentiate integers. Every other argument is passed as
it is.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mutagrad.testing.verdicts import MUTAGRAD

# mutagrad is not on PyPI: its extras install from a clone, the peers themselves from anywhere.
PEERS_EXTRA_HINT = "pip install jax jaxlib autograd mygrad (in a clone: pip install -e '.[peers]')"
PYTORCH_NOTE = (
    "PyTorch is not compared: it cannot run numpy code unchanged. A numpy function given a "
    "tensor that requires a gradient raises (np.sin(t): \"Can't call numpy() on Tensor that "
    'requires grad"), so every program would have to be rewritten with torch functions by '
    "hand, and the comparison would then measure the translation, not the program."
)


def first_output(value: Any) -> Any:
    """The differentiated output of a program: its result, or a tuple result's first element."""
    return value[0] if isinstance(value, tuple) else value


def as_float_argument(value: Any) -> Any:
    """A differentiated argument as the peers need it: float64 arrays, Python floats."""
    if isinstance(value, np.ndarray):
        return value.astype(np.float64)
    return float(value)


def gradient_entry(gradient: Any, argument: Any) -> np.ndarray | float | None:
    """A peer's gradient for one argument as plain data: an ndarray for arrays, else a float."""
    if gradient is None:
        return None
    if isinstance(argument, np.ndarray):
        return np.array(gradient, dtype=np.float64)
    return float(np.asarray(gradient))


def _copy_function(function: types.FunctionType, namespace: dict[str, Any]) -> Any:
    copy = types.FunctionType(
        function.__code__,
        namespace,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__dict__.update(function.__dict__)
    return copy


class NumpyRebinding:
    """Copies of functions whose module sees another numpy-like module in numpy's place.

    ``rebind(f)`` gives ``f`` with new globals: a copy of its module's
    namespace in which every name bound to the ``numpy`` module is bound to
    ``replacement`` instead, and every plain function defined in that module
    (the helpers ``f`` calls) is itself copied onto the new namespace. That is
    what editing the module's import line would do, without editing anything.
    Objects that are not plain functions (a ``mutagrad.primitive``, a class)
    are left as they are. One namespace per module is built and reused, so a
    timed call does not pay for the copying.
    """

    def __init__(self, replacement: types.ModuleType):
        self.replacement = replacement
        # id(module globals) -> (those globals, kept alive so the id stays theirs; the copy)
        self._namespaces: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}

    def _namespace(self, original: dict[str, Any]) -> dict[str, Any]:
        known = self._namespaces.get(id(original))
        if known is not None:
            return known[1]
        namespace = dict(original)
        for name, value in original.items():
            if value is np:
                namespace[name] = self.replacement
            elif isinstance(value, types.FunctionType) and value.__globals__ is original:
                namespace[name] = _copy_function(value, namespace)
        self._namespaces[id(original)] = (original, namespace)
        return namespace

    def rebind(self, function: Callable[..., Any]) -> Callable[..., Any]:
        if not isinstance(function, types.FunctionType):
            return function
        return _copy_function(function, self._namespace(function.__globals__))


class PeerEngine:
    """One peer AD system: whether it is installed, its versions, and one gradient call.

    Subclasses set the class attributes and implement :meth:`value_and_gradient`.
    """

    name: str = ""
    """The name on the command line and in results.json (``jax``)."""
    title: str = ""
    """The name in tables and sentences (``JAX``)."""
    module: str = ""
    """The module that imports when the peer is installed."""
    distributions: tuple[str, ...] = ()
    """The installed distributions whose versions the report states."""
    how: str = ""
    """One sentence: how a corpus program runs on this peer."""
    timing_caveat: str = ""
    """What a reader of this peer's times must know beside each one (JAX: not compiled)."""

    def available(self) -> bool:
        """Whether the peer imports here (an install missing a part, like jaxlib, does not)."""
        try:
            importlib.import_module(self.module)
        except ImportError:
            return False
        return True

    def versions(self) -> dict[str, str | None]:
        found: dict[str, str | None] = {}
        for distribution in self.distributions:
            try:
                found[distribution] = importlib.metadata.version(distribution)
            except importlib.metadata.PackageNotFoundError:
                found[distribution] = None
        return found

    @property
    def version(self) -> str:
        """The version of the peer's main distribution ("?" when unknown)."""
        return self.versions().get(self.distributions[0]) or "?"

    def prepare(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """What the peer calls in place of ``function`` (once per program, before timing)."""
        return function

    def value_and_gradient(
        self, function: Callable[..., Any], args: Sequence[Any], wrt: Sequence[int]
    ) -> tuple[float, list[Any]]:
        """``function(*args)``'s value and its gradient for the arguments at positions ``wrt``.

        The gradient list has one entry per argument (``None`` outside
        ``wrt``). ``function`` comes from :meth:`prepare`; ``args`` are fresh
        copies the call may mutate.
        """
        raise NotImplementedError


def _with_differentiated(
    args: Sequence[Any], wrt: Sequence[int], values: Sequence[Any]
) -> list[Any]:
    call = list(args)
    for k, value in zip(wrt, values):
        call[k] = value
    return call


def _spread(gradients: Sequence[Any], args: Sequence[Any], wrt: Sequence[int]) -> list[Any]:
    """Per-argument gradient list from the gradients of the arguments at ``wrt``."""
    spread: list[Any] = [None] * len(args)
    for k, gradient in zip(wrt, gradients):
        spread[k] = gradient_entry(gradient, args[k])
    return spread


class _RebindingPeer(PeerEngine):
    """A peer reached by rebinding numpy in the program's module, with a functional gradient."""

    def __init__(self) -> None:
        self._rebinding: NumpyRebinding | None = None

    def _numpy_module(self) -> types.ModuleType:
        raise NotImplementedError

    def _value_and_grad(self) -> Callable[..., Any]:
        raise NotImplementedError

    def prepare(self, function: Callable[..., Any]) -> Callable[..., Any]:
        if self._rebinding is None:
            self._rebinding = NumpyRebinding(self._numpy_module())
        return self._rebinding.rebind(function)

    def value_and_gradient(
        self, function: Callable[..., Any], args: Sequence[Any], wrt: Sequence[int]
    ) -> tuple[float, list[Any]]:
        def loss(differentiated: tuple[Any, ...]) -> Any:
            return first_output(function(*_with_differentiated(args, wrt, differentiated)))

        point = tuple(as_float_argument(args[k]) for k in wrt)
        value, gradients = self._value_and_grad()(loss)(point)
        return float(value), _spread(gradients, args, wrt)


class JaxPeer(_RebindingPeer):
    name = "jax"
    title = "JAX"
    module = "jax"
    distributions = ("jax", "jaxlib")
    how = (
        "the program's module sees jax.numpy where it bound numpy; jax.value_and_grad over "
        "the differentiated arguments, 64-bit floats enabled, no jax.jit (the programs branch "
        "and index on values, which jit cannot trace), so every operation is dispatched alone"
    )
    timing_caveat = "eager, no jit"

    def _numpy_module(self) -> types.ModuleType:
        import jax

        # The corpus computes in float64; JAX would silently round to float32 otherwise.
        jax.config.update("jax_enable_x64", True)
        return importlib.import_module("jax.numpy")

    def _value_and_grad(self) -> Callable[..., Any]:
        import jax

        return jax.value_and_grad


class AutogradPeer(_RebindingPeer):
    name = "autograd"
    title = "autograd"
    module = "autograd"
    distributions = ("autograd",)
    how = (
        "the program's module sees autograd.numpy where it bound numpy; autograd.value_and_grad "
        "over the differentiated arguments"
    )

    def _numpy_module(self) -> types.ModuleType:
        return importlib.import_module("autograd.numpy")

    def _value_and_grad(self) -> Callable[..., Any]:
        import autograd

        return autograd.value_and_grad


class MygradPeer(PeerEngine):
    name = "mygrad"
    title = "MyGrad"
    module = "mygrad"
    distributions = ("mygrad",)
    how = (
        "the program unchanged, called with mygrad.tensor arguments (numpy dispatches to "
        "MyGrad); .backward() on the result, gradients from each tensor's .grad"
    )

    def value_and_gradient(
        self, function: Callable[..., Any], args: Sequence[Any], wrt: Sequence[int]
    ) -> tuple[float, list[Any]]:
        import mygrad

        tensors = [mygrad.tensor(as_float_argument(args[k])) for k in wrt]
        result = first_output(function(*_with_differentiated(args, wrt, tensors)))
        # As a MyGrad user would: a result that is not a tensor has no .backward and raises.
        result.backward()
        return float(result), _spread([t.grad for t in tensors], args, wrt)


PEERS: dict[str, PeerEngine] = {
    peer.name: peer for peer in (JaxPeer(), AutogradPeer(), MygradPeer())
}
ENGINE_NAMES: tuple[str, ...] = (MUTAGRAD, *PEERS)


def column_title(system: str) -> str:
    """A table column's title: the mode (``poison``) or the peer's name (``JAX``)."""
    peer = PEERS.get(system)
    return system if peer is None else peer.title


def system_label(system: str) -> str:
    """A system in sentences and plots: ``mutagrad poison`` for a mode, ``JAX 0.10.2``."""
    peer = PEERS.get(system)
    return f"mutagrad {system}" if peer is None else f"{peer.title} {peer.version}"


def timed_label(system: str) -> str:
    """A system where its times are stated: ``JAX 0.10.2 (eager, no jit)``."""
    peer = PEERS.get(system)
    label = system_label(system)
    return f"{label} ({peer.timing_caveat})" if peer is not None and peer.timing_caveat else label


def installed_peers() -> tuple[str, ...]:
    """The names of the peers that are installed here, in :data:`PEERS` order."""
    return tuple(name for name, peer in PEERS.items() if peer.available())


def default_engines() -> tuple[str, ...]:
    """mutagrad and every installed peer: what ``mutagrad report`` runs without ``--engines``."""
    return (MUTAGRAD, *installed_peers())


class EngineChoiceError(ValueError):
    """An ``--engines`` list naming an unknown or uninstalled engine, or leaving out mutagrad."""


def parse_engines(text: str) -> tuple[str, ...]:
    """``"mutagrad,jax"`` -> ``("mutagrad", "jax")``, checked: known, installed, mutagrad first."""
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ENGINE_NAMES]
    if unknown:
        raise EngineChoiceError(
            f"unknown engine {', '.join(unknown)}; choose from {', '.join(ENGINE_NAMES)}"
        )
    if MUTAGRAD not in names:
        raise EngineChoiceError("the report compares with mutagrad: --engines must include it")
    missing = [name for name in names if name != MUTAGRAD and not PEERS[name].available()]
    if missing:
        raise EngineChoiceError(f"{', '.join(missing)} not installed: {PEERS_EXTRA_HINT}")
    return (MUTAGRAD, *(name for name in dict.fromkeys(names) if name != MUTAGRAD))
