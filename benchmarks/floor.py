"""How fast workload 3 at N=30 could be on a Python tape: ``python -m benchmarks.floor``.

``--instructions`` counts instructions per call instead (valgrind's callgrind, see
:mod:`benchmarks.instructions`): the same comparison without the machine's noise.

Issue 6 asks for the vectorised mse at N=30 in half of PyTorch's time. This
script measures, in one process and interleaved, five ways of computing
that gradient: numpy by hand (the floor of numpy's own work), a minimal
reverse-mode tape (below: tuples for nodes, no versions, no captures, no
sites, no activity, no protection of the caller's arrays, no modes), a
checked tape (the minimal tape plus the cheapest form of each check
mutagrad's promises ask of this call: see :func:`checked_gradient`), mutagrad
and PyTorch (when installed). The minimal tape is what a Python tape costs
before it checks anything, the checked tape what it costs with the checks and
nothing else; they are measuring sticks, not something to use.
"""

from __future__ import annotations

import sys
import threading
import time
from contextvars import ContextVar
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


class _Checked:
    """A value on the checked tape: one object per traced value, which is also its tape entry.

    It holds what mutagrad's promises need and nothing more: a version (a
    write would bump it; a pullback compares the version it saved), the
    user's site of the operation that made it (for an error to name), and
    the pullback.
    """

    __slots__ = ("pullback", "site", "value", "version")

    def __init__(self, value: np.ndarray):
        self.value = value
        self.version = 0
        self.pullback: Any = None
        self.site: Any = None

    def __sub__(self, other: _Checked) -> _Checked:
        tape = _CHECKED_TAPE.get()  # (None in another thread or context: refused there)
        out = _Checked(self.value - other.value)
        frame = sys._getframe(1)
        out.site = (frame.f_code, frame.f_lasti)
        out.pullback = lambda g: ((self, g), (other, -g))
        tape.append(out)
        return out

    def __pow__(self, p: int) -> _Checked:
        tape = _CHECKED_TAPE.get()
        x, version = self.value, self.version
        out = _Checked(x**p)
        frame = sys._getframe(1)
        out.site = (frame.f_code, frame.f_lasti)

        def pullback(g: Any) -> Any:
            if self.version != version:  # the saved operand was overwritten since
                raise RuntimeError(f"x ** {p} read an overwritten value (saved at {out.site})")
            return ((self, g * p * x ** (p - 1)),)

        out.pullback = pullback
        tape.append(out)
        return out


def _checked_mean(a: _Checked) -> _Checked:
    tape = _CHECKED_TAPE.get()
    shape, n = a.value.shape, a.value.size
    out = _Checked(np.add.reduce(a.value) / n)
    frame = sys._getframe(1)
    out.site = (frame.f_code, frame.f_lasti)
    out.pullback = lambda g: ((a, np.full(shape, g / n)),)
    tape.append(out)
    return out


_CHECKED_TAPE: ContextVar[Any] = ContextVar("checked_tape", default=None)
_FREEZING = threading.Lock()


def checked_gradient(y: np.ndarray, yh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradient of ``mean((y - yh) ** 2)`` on the checked tape: the minimal tape plus the
    least work each of mutagrad's promises asks of a call, each in its cheapest form.

    - The caller's arrays: borrowed as views, frozen under a lock (so that
      another thread's call cannot interleave), fingerprinted by their bytes
      on entry and compared on exit (a view made before the call can still
      write them), their flags given back.
    - The trace in a context variable, per thread and context; every
      operation reads it.
    - Per operation, the user's site; per saved operand, its version,
      compared when the pullback reads it.
    - The output checked to be a real scalar; every cotangent's shape compared
      with its value's before it is added.

    What mutagrad does besides (modes, views and writes, nested and forward
    levels, sites through numpy's protocols, explanations) is not here: this is a
    lower bound for a Python engine with the checks, not a design.
    """
    with _FREEZING:
        a, b = _Checked(y.view()), _Checked(yh.view())  # (views made before freezing)
        writeable = y.flags.writeable, yh.flags.writeable
        y.setflags(write=False)
        yh.setflags(write=False)
    fingerprints = y.tobytes(), yh.tobytes()
    token = _CHECKED_TAPE.set([])
    try:
        out = _checked_mean((a - b) ** 2)
        tape = _CHECKED_TAPE.get()
    finally:
        _CHECKED_TAPE.reset(token)
        with _FREEZING:
            y.setflags(write=writeable[0])
            yh.setflags(write=writeable[1])
    if (y.tobytes(), yh.tobytes()) != fingerprints:
        raise RuntimeError("an argument was written through a view made before the call")
    if out.value.shape != () or out.value.dtype.kind != "f":
        raise TypeError("the function must return a real scalar")
    cotangents = {out: 1.0}
    for node in reversed(tape):
        g = cotangents.pop(node, None)
        if g is None:
            continue
        for source, c in node.pullback(g):
            if np.shape(c) != source.value.shape:
                raise ValueError("a cotangent of the wrong shape")
            cotangents[source] = cotangents[source] + c if source in cotangents else c
    return cotangents[a], cotangents[b]


def by_hand(y: np.ndarray, yh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    d = y - yh
    np.mean(d**2)
    g = d * (2 / d.size)
    return g, -g


# The same four computations for ``--instructions``: setup code and the call, counted
# by benchmarks.instructions (callgrind) in a fresh process each.
_SETUP = (
    "import sys; sys.path.insert(0, {root!r})\n"
    "from benchmarks.floor import by_hand, checked_gradient, minimal_gradient\n"
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
    "checked tape": ("", "checked_gradient(y, yh)"),
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
        "checked tape": lambda: checked_gradient(y, yh),
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
