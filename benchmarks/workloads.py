"""The workloads of issue 6, each as one function per engine, with a hand-written gradient.

Every workload is forward + backward of a scalar. A :class:`Case` is one
workload at one size: its inputs (float64, from a seeded generator), the
plain-numpy loss (for finite differences), a hand-written numpy gradient (the
reference every engine is checked against, and the ``numpy-hand`` column), and
per engine the code that runs. Workload code is written once against a small
namespace of array functions (``ops.sin``, ``ops.zeros_like``, ...) so that
every engine runs the same program; where an engine cannot express the
program (no item assignment in autograd and JAX; torch refusing to reuse a
buffer a pullback needs) the closest idiomatic equivalent runs instead and
the note says so.

Workloads (numbers as in the issue):

1. ``mse_loop``: ``s = s + (y[i] - yh[i])**2`` over scalars, then ``s / N``.
2. ``sum3``: ``a[0] + a[1] + a[2]`` on a 30-element array.
3. ``mse_vec``: ``mean((y - yh)**2)``, vectorised.
4. ``fill_loop``: ``out[i] = sin(x[i]) * x[i]`` into ``zeros_like(x)``, then ``sum(out)``.
5. ``network``: 25 layers of ``h = tanh(h @ W) * 0.5 + h`` on an 8x16 batch, ``sum(h)``;
   gradient with respect to the input and all 25 16x16 weights.
6. the poison/strict comparison of 1 and 5 (every case runs both modes).
7. ``scratch``: a scratch buffer reused across iterations (``scratch[:] = sin(x * c)``;
   ``total += sum(scratch * scratch)``), which needs snapshot mode.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from benchmarks import engines

Runner = Callable[[], list[Any]]  # one forward + backward; returns the gradients, flattened

NETWORK_LAYERS = 25
NETWORK_BATCH = 8
NETWORK_WIDTH = 16
SCRATCH_ITERATIONS = 10


# ---------------------------------------------------------------------------
# The programs, written once for every engine.


def mse_loop(ops: Any, y: Any, yh: Any) -> Any:
    """Workload 1: the seed's mse as a Python loop over scalars."""
    n = len(y)
    s = 0.0
    for i in range(n):
        s = s + (y[i] - yh[i]) ** 2
    return s / n


def sum3(ops: Any, a: Any) -> Any:
    """Workload 2: three scalar reads."""
    return a[0] + a[1] + a[2]


def mse_vec(ops: Any, y: Any, yh: Any) -> Any:
    """Workload 3: vectorised mse."""
    return ops.mean((y - yh) ** 2)


def fill_loop(ops: Any, x: Any) -> Any:
    """Workload 4: a fresh buffer filled element by element (the easy case of mutation)."""
    out = ops.zeros_like(x)
    for i in range(len(x)):
        out[i] = ops.sin(x[i]) * x[i]
    return ops.sum(out)


def fill_loop_buffer(ops: Any, x: Any) -> Any:
    """Workload 4 for strict mode, which refuses ``out[i] = ...``: a mutagrad.Buffer."""
    import mutagrad

    out = mutagrad.Buffer(x)
    for i in range(len(x)):
        out[i] = ops.sin(x[i]) * x[i]
    return ops.sum(out.copy())


def fill_loop_stack(ops: Any, x: Any) -> Any:
    """Workload 4 without item assignment: a list of scalars, stacked."""
    return ops.sum(ops.stack([ops.sin(x[i]) * x[i] for i in range(len(x))]))


def fill_loop_at_set(ops: Any, x: Any) -> Any:
    """Workload 4 in JAX's functional update form: ``out = out.at[i].set(v)``."""
    out = ops.zeros_like(x)
    for i in range(len(x)):
        out = out.at[i].set(ops.sin(x[i]) * x[i])
    return ops.sum(out)


def network(ops: Any, x: Any, weights: Sequence[Any]) -> Any:
    """Workload 5: a residual tanh network, one layer per weight matrix."""
    h = x
    for w in weights:
        h = ops.tanh(h @ w) * 0.5 + h
    return ops.sum(h)


def scratch_reuse(ops: Any, x: Any) -> Any:
    """Workload 7: one scratch buffer overwritten every iteration while its old value is needed."""
    scratch = ops.zeros_like(x)
    total = 0.0
    for k in range(SCRATCH_ITERATIONS):
        scratch[:] = ops.sin(x * (k + 1.0))
        total = total + ops.sum(scratch * scratch)
    return total


def scratch_fresh(ops: Any, x: Any) -> Any:
    """Workload 7 rewritten without mutation: a fresh array every iteration."""
    total = 0.0
    for k in range(SCRATCH_ITERATIONS):
        scratch = ops.sin(x * (k + 1.0))
        total = total + ops.sum(scratch * scratch)
    return total


# ---------------------------------------------------------------------------
# Hand-written numpy: forward as a person would write it, gradient by hand.


def hand_mse_loop(y: np.ndarray, yh: np.ndarray) -> tuple[float, list[np.ndarray]]:
    loss = mse_loop(np, y, yh)
    g = (y - yh) * (2.0 / len(y))
    return loss, [g, -g]


def hand_sum3(a: np.ndarray) -> tuple[float, list[np.ndarray]]:
    loss = a[0] + a[1] + a[2]
    g = np.zeros_like(a)
    g[:3] = 1.0
    return loss, [g]


def hand_mse_vec(y: np.ndarray, yh: np.ndarray) -> tuple[float, list[np.ndarray]]:
    d = y - yh
    loss = np.mean(d**2)
    g = d * (2.0 / len(y))
    return loss, [g, -g]


def hand_fill_loop(x: np.ndarray) -> tuple[float, list[np.ndarray]]:
    loss = fill_loop(np, x)
    return loss, [np.cos(x) * x + np.sin(x)]


def hand_network(x: np.ndarray, weights: Sequence[np.ndarray]) -> tuple[float, list[np.ndarray]]:
    hs, ts = [x], []
    h = x
    for w in weights:
        t = np.tanh(h @ w)
        h = t * 0.5 + h
        hs.append(h)
        ts.append(t)
    loss = np.sum(h)
    gh = np.ones_like(h)
    gws = [np.empty(0)] * len(weights)
    for k in range(len(weights) - 1, -1, -1):
        ga = gh * 0.5 * (1.0 - ts[k] ** 2)
        gws[k] = hs[k].T @ ga
        gh = gh + ga @ weights[k].T
    return loss, [gh, *gws]


def hand_scratch(x: np.ndarray) -> tuple[float, list[np.ndarray]]:
    loss = scratch_reuse(np, x)
    g = np.zeros_like(x)
    for k in range(SCRATCH_ITERATIONS):
        c = k + 1.0
        g += c * np.sin(2.0 * c * x)  # d/dx sin(cx)^2
    return loss, [g]


# ---------------------------------------------------------------------------
# Cases.


@dataclasses.dataclass(frozen=True)
class Impl:
    """The program one engine runs, and why it differs from the workload as written."""

    fn: Callable[..., Any]
    note: str = ""


@dataclasses.dataclass
class Case:
    """One workload at one size."""

    workload: int
    name: str
    size: int
    title: str
    inputs: Callable[[], list[np.ndarray]]  # flat, float64, deterministic
    hand: Callable[..., tuple[float, list[np.ndarray]]]
    impls: dict[str, Impl]  # by engine name or family ("mutagrad", "jax")
    structure: Callable[[list[Any]], tuple[Any, ...]] = tuple
    jit: bool = False  # add the jax-jit reference column
    snapshot: bool = False  # add the mutagrad-snapshot column
    # Programs run once to record what an engine does with the mutating
    # program it cannot time (raises, or returns a wrong gradient).
    probes: dict[str, Impl] = dataclasses.field(default_factory=dict)
    size_label: str = "N"
    hand_note: str = ""

    @property
    def id(self) -> str:
        return f"{self.name}/{self.size_label}={self.size}"

    def engines(self) -> list[str]:
        """The engines this case runs on, installed or not, in column order."""
        chosen = []
        for engine in engines.ENGINES:
            if engine == "mutagrad-snapshot" and not self.snapshot:
                continue
            if engine == "jax-jit" and not self.jit:
                continue
            chosen.append(engine)
        return chosen

    def impl(self, engine: str) -> Impl:
        if engine == "numpy-hand":
            return Impl(self.hand, self.hand_note)
        return self.impls.get(engine) or self.impls[family(engine)]

    def loss(self, flat: list[np.ndarray]) -> float:
        """The plain-numpy loss, for finite differences."""
        return float(self.hand(*self.structure(flat))[0])


def family(engine: str) -> str:
    """``mutagrad-poison`` -> ``mutagrad``; ``jax-jit`` -> ``jax``; others unchanged."""
    return engine.split("-")[0] if engine != "numpy-hand" else engine


def _same_everywhere(fn: Callable[..., Any]) -> dict[str, Impl]:
    return {name: Impl(fn) for name in ("mutagrad", "torch", "autograd", "mygrad", "jax")}


def _vectors(seed: int, count: int, n: int) -> Callable[[], list[np.ndarray]]:
    def make() -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(n) for _ in range(count)]

    return make


def _network_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((NETWORK_BATCH, NETWORK_WIDTH))
    scale = 1.0 / np.sqrt(NETWORK_WIDTH)
    shape = (NETWORK_WIDTH, NETWORK_WIDTH)
    weights = [rng.standard_normal(shape) * scale for _ in range(NETWORK_LAYERS)]
    return [x, *weights]


STACK_NOTE = "no item assignment: list of scalars + stack"
LOOP_HAND_NOTE = "the same loop on raw numpy; gradient by hand, vectorised"
FRESH_NOTE = "fresh array per iteration"


def mse_loop_case(n: int) -> Case:
    """Workload 1 at size ``n``; jax-jit only at N=30, where compiling the loop is cheap."""
    return Case(
        workload=1,
        name="mse_loop",
        size=n,
        title=f"mse as a loop over {n} scalars",
        inputs=_vectors(1, 2, n),
        hand=hand_mse_loop,
        impls=_same_everywhere(mse_loop),
        jit=n <= 30,
        hand_note=LOOP_HAND_NOTE,
    )


def sum3_case() -> Case:
    """Workload 2."""
    return Case(
        workload=2,
        name="sum3",
        size=30,
        title="a[0] + a[1] + a[2] on 30 elements",
        inputs=_vectors(2, 1, 30),
        hand=hand_sum3,
        impls=_same_everywhere(sum3),
        jit=True,
    )


def mse_vec_case(n: int) -> Case:
    """Workload 3 at size ``n``."""
    return Case(
        workload=3,
        name="mse_vec",
        size=n,
        title=f"vectorised mse, N = {n:,}",
        inputs=_vectors(3, 2, n),
        hand=hand_mse_vec,
        impls=_same_everywhere(mse_vec),
        jit=True,
    )


def fill_loop_case(n: int) -> Case:
    """Workload 4 at size ``n``, with each engine's closest equivalent of the item assignment."""
    impls = _same_everywhere(fill_loop)
    impls["mutagrad-strict"] = Impl(fill_loop_buffer, "strict refuses out[i]=: mutagrad.Buffer")
    impls["autograd"] = Impl(fill_loop_stack, STACK_NOTE)
    impls["jax"] = Impl(fill_loop_at_set, "immutable arrays: out = out.at[i].set(v)")
    impls["mygrad"] = Impl(fill_loop, "in-place item assignment (MyGrad supports it)")
    impls["torch"] = Impl(fill_loop, "in-place item assignment (out[i] = ...)")
    return Case(
        workload=4,
        name="fill_loop",
        size=n,
        title=f"fill loop out[i] = sin(x[i]) * x[i], N = {n}",
        inputs=_vectors(4, 1, n),
        hand=hand_fill_loop,
        impls=impls,
        hand_note=LOOP_HAND_NOTE,
    )


def network_case() -> Case:
    """Workload 5: the input and the 25 weight matrices are the differentiated arguments."""
    return Case(
        workload=5,
        name="network",
        size=NETWORK_LAYERS,
        title=f"{NETWORK_LAYERS} layers h = tanh(h @ W) * 0.5 + h, "
        f"batch {NETWORK_BATCH}x{NETWORK_WIDTH}",
        inputs=_network_inputs,
        hand=hand_network,
        impls=_same_everywhere(network),
        structure=lambda flat: (flat[0], list(flat[1:])),
        jit=True,
        size_label="layers",
        hand_note="backpropagation by hand",
    )


def scratch_case(n: int) -> Case:
    """Workload 7 at size ``n``: the reused buffer where an engine can run it, else fresh arrays."""
    impls = {
        "mutagrad-snapshot": Impl(scratch_reuse, "scratch reused; snapshot copies old values"),
        "mutagrad": Impl(scratch_fresh, f"{FRESH_NOTE} (reuse raises, see probe)"),
        "torch": Impl(scratch_fresh, f"{FRESH_NOTE} (reuse raises, see probe)"),
        "autograd": Impl(scratch_fresh, f"{FRESH_NOTE} (no item assignment)"),
        "mygrad": Impl(scratch_reuse, "scratch reused (MyGrad copies on in-place writes)"),
        "jax": Impl(scratch_fresh, f"{FRESH_NOTE} (immutable arrays)"),
    }
    probes = {
        "mutagrad-poison": Impl(scratch_reuse),
        "mutagrad-strict": Impl(scratch_reuse),
        "torch": Impl(scratch_reuse),
    }
    return Case(
        workload=7,
        name="scratch",
        size=n,
        title=f"scratch buffer reused over {SCRATCH_ITERATIONS} iterations, N = {n:,}",
        inputs=_vectors(7, 1, n),
        hand=hand_scratch,
        impls=impls,
        jit=False,
        snapshot=True,
        probes=probes,
        hand_note="scratch reused; gradient by hand",
    )


def all_cases() -> list[Case]:
    """Every timed case, in report order."""
    return [
        mse_loop_case(30),
        mse_loop_case(300),
        mse_loop_case(3000),
        sum3_case(),
        mse_vec_case(30),
        mse_vec_case(1_000_000),
        fill_loop_case(1000),
        network_case(),
        scratch_case(1000),
        scratch_case(100_000),
    ]


# Workload numbers and names accepted by --only; 6 is the strict comparison of 1 and 5.
WORKLOAD_NAMES = {
    1: "mse_loop",
    2: "sum3",
    3: "mse_vec",
    4: "fill_loop",
    5: "network",
    6: "strict_overhead",
    7: "scratch",
}


# ---------------------------------------------------------------------------
# Engines: the array namespace each one uses, and the runner around its program.


def ops_for(engine: str) -> Any:
    """The array functions the programs call, for ``engine``."""
    fam = family(engine)
    if fam in ("numpy-hand", "mutagrad"):
        module: Any = np
    elif fam == "torch":
        module = engines.load("torch")
    elif fam == "autograd":
        engines.load("autograd")
        import autograd.numpy as module
    elif fam == "mygrad":
        module = engines.load("mygrad")
    elif fam == "jax":
        engines.load("jax")
        import jax.numpy as module
    else:
        raise ValueError(f"unknown engine {engine}")
    return SimpleNamespace(
        sin=module.sin,
        tanh=module.tanh,
        sum=module.sum,
        mean=module.mean,
        zeros_like=module.zeros_like,
        stack=module.stack,
    )


def flatten(value: Any) -> list[Any]:
    """Leaves of nested tuples and lists, in order."""
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in flatten(item)]
    return [value]


def to_numpy(value: Any) -> np.ndarray:
    """An engine's gradient as a float64 numpy array."""
    if hasattr(value, "detach"):  # torch
        value = value.detach().numpy()
    return np.asarray(value, dtype=np.float64)


def _called_with_names(gradient: Any, program: Any, args: Any, mode: str) -> Runner:
    """``gradient(program, a0, a1, ..., mode=mode)`` on copies of ``args`` bound to names, as
    a script calls it: the harness's lists also hold the arrays, and mutagrad proves that
    no view of an argument exists (and skips its fingerprint) only when names alone refer
    to it (see mutagrad.freezing). With the arrays in a container, every argument larger
    than 4 KiB is hashed at each end of the call instead."""
    names = [f"a{i}" for i in range(len(args))]
    namespace: dict[str, Any] = {n: np.array(a, copy=True) for n, a in zip(names, args)}
    namespace.update(gradient=gradient, program=program, flatten=flatten, mode=mode)
    runner: Runner = eval(  # (a lambda whose globals are the names: no list holds them)
        f"lambda: flatten(gradient(program, {', '.join(names)}, mode=mode))", namespace
    )
    return runner


def build_runner(
    case: Case, engine: str, flat: list[np.ndarray], impl: Impl | None = None
) -> Runner:
    """One forward + backward of ``case`` on ``engine``; inputs are prepared outside it.

    Peers get their leaf tensors (torch, MyGrad) or device arrays (JAX) once,
    as a training loop holds its parameters; mutagrad, autograd and
    numpy-hand take the numpy arrays (mutagrad wraps them on every call).
    """
    impl = impl or case.impl(engine)
    ops = ops_for(engine)
    fn = impl.fn
    fam = family(engine)

    if fam == "numpy-hand":
        args = case.structure(flat)

        def run_hand() -> list[Any]:
            return case.hand(*args)[1]

        return run_hand

    if fam == "mutagrad":
        import mutagrad

        mode = engine.split("-", 1)[1]
        args = case.structure(flat)

        def program(*a: Any) -> Any:
            return fn(ops, *a)

        if all(type(a) is np.ndarray for a in args):
            return _called_with_names(mutagrad.gradient, program, args, mode)

        def run_mutagrad() -> list[Any]:
            return flatten(mutagrad.gradient(program, *args, mode=mode))

        return run_mutagrad

    if fam == "torch":
        torch = engines.load("torch")
        leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in flat]
        args = case.structure(leaves)

        def run_torch() -> list[Any]:
            return list(torch.autograd.grad(fn(ops, *args), leaves))

        return run_torch

    if fam == "autograd":
        autograd = engines.load("autograd")
        args = case.structure(flat)
        grad = autograd.grad(lambda packed: fn(ops, *packed))

        def run_autograd() -> list[Any]:
            return flatten(grad(args))

        return run_autograd

    if fam == "mygrad":
        mygrad = engines.load("mygrad")
        leaves = [mygrad.tensor(a) for a in flat]
        args = case.structure(leaves)

        def run_mygrad() -> list[Any]:
            fn(ops, *args).backward()
            return [leaf.grad for leaf in leaves]

        return run_mygrad

    if fam == "jax":
        jax = engines.load("jax")
        args = case.structure([jax.numpy.asarray(a) for a in flat])
        grad = jax.grad(lambda *a: fn(ops, *a), argnums=tuple(range(len(args))))
        if engine == "jax-jit":
            grad = jax.jit(grad)

        def run_jax() -> list[Any]:
            return flatten(jax.block_until_ready(grad(*args)))

        return run_jax

    raise ValueError(f"unknown engine {engine}")


def bytes_copied(case: Case, flat: list[np.ndarray], mode: str = "snapshot") -> int:
    """What mutagrad's snapshot mode copied for one call of ``case``."""
    import mutagrad

    ops = ops_for("mutagrad-" + mode)
    impl = case.impl("mutagrad-" + mode)
    result = mutagrad.withgradient(lambda *a: impl.fn(ops, *a), *case.structure(flat), mode=mode)
    return int(result.bytes_copied)
