"""How fast workload 3 at N=30 could be on a Python tape: ``python -m benchmarks.floor``.

``--instructions`` counts instructions per call instead (valgrind's callgrind, see
:mod:`benchmarks.instructions`): the same comparison without the machine's noise.

Issue 6 asks for the vectorised mse at N=30 in half of PyTorch's time. This
script measures, in one process and interleaved, four ways of computing
that gradient: numpy by hand (the floor of numpy's own work), a minimal
reverse-mode tape (below: tuples for nodes, no versions, no captures, no
sites, no activity, no protection of the caller's arrays, no modes), mutagrad
and PyTorch (when installed). The minimal tape is what a Python tape costs
before it checks anything; it is a measuring stick, not something to use.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

import mutagrad

ROUNDS = 15
CALLS = 2000


class _Traced:
    """An array on the minimal tape: its value and nothing else."""

    __slots__ = ("value",)

    def __init__(self, value: np.ndarray):
        self.value = value

    def __sub__(self, other: _Traced) -> _Traced:
        out = _Traced(self.value - other.value)
        _TAPE.append((out, lambda g: ((self, g), (other, -g))))
        return out

    def __pow__(self, p: int) -> _Traced:
        x = self.value
        out = _Traced(x**p)
        _TAPE.append((out, lambda g: ((self, g * p * x ** (p - 1)),)))
        return out


def _mean(a: _Traced) -> _Traced:
    shape, n = a.value.shape, a.value.size
    out = _Traced(np.add.reduce(a.value) / n)
    _TAPE.append((out, lambda g: ((a, np.full(shape, g / n)),)))
    return out


_TAPE: list[tuple[_Traced, Any]] = []


def minimal_gradient(y: np.ndarray, yh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradient of ``mean((y - yh) ** 2)`` on the minimal tape."""
    _TAPE.clear()
    a, b = _Traced(y), _Traced(yh)
    out = _mean((a - b) ** 2)
    cotangents = {id(out): 1.0}
    for node, pullback in reversed(_TAPE):
        g = cotangents.pop(id(node), None)
        if g is None:
            continue
        for source, c in pullback(g):
            key = id(source)
            cotangents[key] = cotangents[key] + c if key in cotangents else c
    return cotangents[id(a)], cotangents[id(b)]


def by_hand(y: np.ndarray, yh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    d = y - yh
    np.mean(d**2)
    g = d * (2 / d.size)
    return g, -g


# The same four computations for ``--instructions``: setup code and the call, counted
# by benchmarks.instructions (callgrind) in a fresh process each.
_SETUP = (
    "import sys; sys.path.insert(0, {root!r})\n"
    "from benchmarks.floor import by_hand, minimal_gradient\n"
    "rng = np.random.default_rng(0); y, yh = rng.random(30), rng.random(30)\n"
    "f = lambda a, b: np.mean((a - b) ** 2)\n"
)
_TORCH_SETUP = (
    "import torch; torch.set_num_threads(1)\n"
    "ty, tyh = (torch.tensor(v, requires_grad=True) for v in (y, yh))\n"
)
_COUNTED = {
    "numpy by hand": ("", "by_hand(y, yh)"),
    "minimal tape": ("", "minimal_gradient(y, yh)"),
    "mutagrad": ("", "mutagrad.gradient(f, y, yh)"),
    "torch": (_TORCH_SETUP, "torch.autograd.grad(((ty - tyh) ** 2).mean(), (ty, tyh))"),
}


def count_instructions() -> None:
    """Print instructions per call of each computation (torch when installed)."""
    from pathlib import Path

    from benchmarks.instructions import per_call

    root = str(Path(__file__).resolve().parent.parent)
    counts = {}
    for name, (extra, call) in _COUNTED.items():
        if name == "torch":
            try:
                import torch  # noqa: F401
            except ImportError:
                continue
        counts[name] = per_call(_SETUP.format(root=root) + extra, call)
    tape = counts["minimal tape"]
    print("vectorised mse, N=30: instructions per call (callgrind)")
    for name, n in counts.items():
        print(f"  {name:14s} {n:10,.0f}  {n / tape:5.2f}x the minimal tape")


def main() -> None:
    if "--instructions" in sys.argv[1:]:
        count_instructions()
        return
    rng = np.random.default_rng(0)
    y, yh = rng.random(30), rng.random(30)
    expected = by_hand(y, yh)
    engines: dict[str, Any] = {
        "numpy by hand": lambda: by_hand(y, yh),
        "minimal tape": lambda: minimal_gradient(y, yh),
        "mutagrad": lambda: mutagrad.gradient(lambda a, b: np.mean((a - b) ** 2), y, yh),
    }
    try:
        import torch

        torch.set_num_threads(1)
        ty, tyh = (torch.tensor(v, requires_grad=True) for v in (y, yh))
        engines["torch"] = lambda: torch.autograd.grad(((ty - tyh) ** 2).mean(), (ty, tyh))
    except ImportError:
        pass
    for name, run in engines.items():
        got = [np.asarray(g.detach() if hasattr(g, "detach") else g) for g in run()]
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12, err_msg=name)
    samples: dict[str, list[float]] = {name: [] for name in engines}
    names = list(engines)
    for k in range(ROUNDS):
        for name in names[k % len(names) :] + names[: k % len(names)]:
            run = engines[name]
            start = time.perf_counter()
            for _ in range(CALLS):
                run()
            samples[name].append((time.perf_counter() - start) / CALLS)
    medians = {name: float(np.median(v)) for name, v in samples.items()}
    reference = medians.get("torch")
    print(f"vectorised mse, N=30: median of {ROUNDS} interleaved rounds of {CALLS} calls")
    for name, t in medians.items():
        ratio = f"  {t / reference:5.2f}x torch" if reference else ""
        print(f"  {name:14s} {t * 1e6:7.1f} µs{ratio}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
