"""Forward mode's speed bars (issue 23), rerunnable: ``python -m benchmarks.forward``.

Three measurements, each the median of interleaved samples (every sample at
least 20 ms of consecutive calls), every derivative checked against another
before it is timed:

1. **W3 at N=1e6**, ``mean((y - yh)**2)``: ``jvp`` in one direction of both
   arguments against the plain numpy forward. The bar: at most ~3x numpy.
2. **A square loop program**, 30 inputs and 30 outputs written element by
   element in a loop: ``jacfwd`` against ``jacrev``. The bar: ``jacfwd`` costs
   no more than ``jacrev``.
3. **Hessians**: forward over reverse (``jacfwd(jacrev(f))``) against reverse
   over reverse (``hessian_reverse``) on a loop program of 30 inputs and on
   the benchmark's network workload reduced to one 16x16 layer.
4. **linearize**: ``f_jvp`` (the recorded tangent steps replayed, ``f`` not
   run) against ``jvp`` (``f`` run in forward mode) on the loop program of
   300 elements and on a vectorised program at N=1e6, with the memory the
   recorded map holds.

Peers (JAX's ``jvp`` eager, ``torch.func.jvp``, autograd's ``make_jvp``) run
where they are installed; none is a dependency.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import mutagrad as mg


def _calls_per_sample(fn: Callable[[], Any], floor: float) -> int:
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, int(floor / once))


def measure(engines: dict[str, Callable[[], Any]], samples: int, floor: float) -> dict[str, float]:
    """The median seconds per call of each engine, samples interleaved round by round."""
    counts = {name: _calls_per_sample(fn, floor) for name, fn in engines.items()}
    times: dict[str, list[float]] = {name: [] for name in engines}
    names = list(engines)
    for round_ in range(samples):
        order = names if round_ % 2 == 0 else names[::-1]
        for name in order:
            fn, n = engines[name], counts[name]
            gc.collect()
            start = time.perf_counter()
            for _ in range(n):
                fn()
            times[name].append((time.perf_counter() - start) / n)
    return {name: statistics.median(t) for name, t in times.items()}


def _print(title: str, medians: dict[str, float], reference: str) -> None:
    print(f"\n{title}")
    base = medians[reference]
    for name, seconds in medians.items():
        print(f"  {name:<38} {seconds * 1e3:10.3f} ms   {seconds / base:7.2f}x {reference}")


def _peer(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# -- 1. W3 at N=1e6 ----------------------------------------------------------------------


def mse_vec(y: Any, yh: Any) -> Any:
    return np.mean((y - yh) ** 2)


def w3(n: int, samples: int, floor: float) -> dict[str, float]:
    rng = np.random.default_rng(3)
    y, yh, vy, vyh = (rng.normal(size=n) for _ in range(4))
    want = 2 * np.mean((y - yh) * (vy - vyh))
    got = mg.jvp(mse_vec, (y, yh), (vy, vyh))[1]
    assert abs(got - want) <= 1e-12 * abs(want) + 1e-15, (got, want)
    engines: dict[str, Callable[[], Any]] = {
        "numpy forward": lambda: mse_vec(y, yh),
        "mutagrad jvp": lambda: mg.jvp(mse_vec, (y, yh), (vy, vyh)),
        "mutagrad grad (reverse, for scale)": lambda: mg.grad(mse_vec, (0, 1))(y, yh),
    }
    autograd = _peer("autograd")
    if autograd is not None:
        import autograd.numpy as anp
        from autograd import make_jvp

        engines["autograd make_jvp"] = lambda: make_jvp(
            lambda a: anp.mean((a - yh) ** 2))(y)(vy)  # fmt: skip
    jax = _peer("jax")
    if jax is not None:
        jnp = importlib.import_module("jax.numpy")
        jy, jyh, jvy, jvyh = (jnp.asarray(a.copy()) for a in (y, yh, vy, vyh))
        engines["jax jvp (eager)"] = lambda: jax.block_until_ready(
            jax.jvp(lambda a, b: jnp.mean((a - b) ** 2), (jy, jyh), (jvy, jvyh))
        )
    torch = _peer("torch")
    if torch is not None:
        # (copies: a tensor from_numpy shares the array's memory, which keeps mutagrad from
        # proving that no view of its arguments exists, and makes it fingerprint them)
        ty, tyh, tvy, tvyh = (torch.from_numpy(a.copy()) for a in (y, yh, vy, vyh))
        engines["torch.func.jvp"] = lambda: torch.func.jvp(
            lambda a, b: torch.mean((a - b) ** 2), (ty, tyh), (tvy, tvyh)
        )
    medians = measure(engines, samples, floor)
    _print(f"1. W3 mse_vec at N={n}: jvp in one direction of both arguments", medians,
           "numpy forward")  # fmt: skip
    return medians


# -- 2. a square loop program: jacfwd against jacrev ------------------------------------


def loop_program(x: Any) -> Any:
    """30 in, 30 out: each output element written in a loop from the previous one."""
    out = np.zeros_like(x)
    out[0] = np.sin(x[0])
    for i in range(1, len(x)):
        out[i] = np.sin(x[i]) * out[i - 1] + x[i] * x[i - 1]
    return out


def square_loop(n: int, samples: int, floor: float) -> dict[str, float]:
    x = np.random.default_rng(4).uniform(0.5, 1.5, n)
    np.testing.assert_allclose(mg.jacfwd(loop_program)(x), mg.jacrev(loop_program)(x),
                               rtol=1e-12, atol=1e-14)  # fmt: skip
    engines: dict[str, Callable[[], Any]] = {
        "mutagrad jacrev": lambda: mg.jacrev(loop_program)(x),
        "mutagrad jacfwd": lambda: mg.jacfwd(loop_program)(x),
        "numpy forward (the loop alone)": lambda: loop_program(x.copy()),
    }
    medians = measure(engines, samples, floor)
    _print(f"2. square loop program, {n} inputs and {n} outputs", medians, "mutagrad jacrev")
    return medians


# -- 3. Hessians: forward over reverse against reverse over reverse ---------------------


def loop_loss(x: Any) -> Any:
    return np.sum(loop_program(x) ** 2)


def layer_loss(w: Any) -> Any:
    h = np.linspace(-1, 1, 8 * 16).reshape(8, 16)
    h = np.tanh(h @ w.reshape(16, 16)) * 0.5 + h
    return np.sum(h * h)


def hessians(samples: int, floor: float) -> list[dict[str, float]]:
    results = []
    for name, f, x in (
        ("loop program, 30 inputs", loop_loss, np.random.default_rng(5).uniform(0.5, 1.5, 30)),
        ("one 16x16 layer, 256 inputs", layer_loss,
         np.random.default_rng(6).normal(size=256) * 0.1),
    ):  # fmt: skip
        h_rr = mg.hessian_reverse(f, x)
        h_fr = mg.jacfwd(mg.jacrev(f))(x)
        np.testing.assert_allclose(h_fr, h_rr, rtol=1e-9, atol=1e-11)
        engines: dict[str, Callable[[], Any]] = {
            "hessian_reverse (reverse over reverse)": lambda f=f, x=x: mg.hessian_reverse(f, x),
            "jacfwd(jacrev(f)) (forward over reverse)": lambda f=f, x=x: mg.jacfwd(mg.jacrev(f))(x),
        }
        medians = measure(engines, max(3, samples // 3), floor)
        _print(f"3. Hessian of the {name}", medians, "hessian_reverse (reverse over reverse)")
        results.append(medians)
    return results


# -- 4. linearize: the replayed map against a forward run ---------------------------------


def vectorised(x: Any) -> Any:
    y = np.tanh(x) * x
    y += np.sin(x) ** 2
    return np.mean(np.exp(-y) * x)


def linearized(samples: int, floor: float, n: int) -> list[dict[str, float]]:
    results = []
    for name, f, x in (
        ("loop program, 300 elements", loop_loss,
         np.random.default_rng(7).uniform(0.5, 1.5, 300)),
        (f"vectorised program, N={n}", vectorised, np.random.default_rng(8).normal(size=n)),
    ):  # fmt: skip
        t = np.random.default_rng(9).normal(size=x.shape)
        _, f_jvp = mg.linearize(f, x)
        assert f_jvp.reruns is None
        want = mg.jvp(f, (x,), (t,))[1]
        assert abs(f_jvp(t) - want) <= 1e-12 * abs(want), (f_jvp(t), want)
        engines: dict[str, Callable[[], Any]] = {
            "jvp (f runs in forward mode)": lambda f=f, x=x, t=t: mg.jvp(f, (x,), (t,)),
            "linearize's f_jvp (replay)": lambda f_jvp=f_jvp, t=t: f_jvp(t),
            "linearize itself (the one run)": lambda f=f, x=x: mg.linearize(f, x),
        }
        medians = measure(engines, samples, floor)
        _print(f"4. linearize, {name}", medians, "jvp (f runs in forward mode)")
        print(f"  the recorded map holds {f_jvp.held_bytes() / 1e6:.3f} MB "
              f"(x itself: {x.nbytes / 1e6:.3f} MB)")  # fmt: skip
        results.append(medians)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few samples, N=1e4 (not figures)")
    args = parser.parse_args(argv)
    samples, floor, n = (3, 0.002, 10_000) if args.quick else (15, 0.02, 1_000_000)
    w3(n, samples, floor)
    square_loop(30, samples, floor)
    hessians(samples, floor)
    linearized(samples, floor, n)


if __name__ == "__main__":
    main()
