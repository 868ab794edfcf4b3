"""Peak memory of one forward + backward, for workloads 1 and 4 at two sizes each.

Two measures, because the engines allocate in different places:

* ``tracemalloc`` (numpy-based engines: mutagrad, HIPS autograd, MyGrad,
  numpy-hand): the peak of every Python allocation *and* every numpy array
  buffer (numpy reports its data allocations to tracemalloc) during one call,
  above what was allocated before it. Exact and deterministic; counts the
  tape, the wrappers and the cotangent buffers alike.
* ``rss`` (PyTorch, and JAX with ``--jax-memory``, whose tensors and graphs
  live in C++ allocators that tracemalloc cannot see): the growth of the
  process's resident set during one call, in a
  fresh subprocess (``python -m benchmarks.memory ENGINE CASE SIZE``), after
  one warm-up call at the same size and ``malloc_trim(0)`` (so that memory the
  allocator kept from the warm-up is handed back rather than silently
  reused). The peak is the larger of a 0.5 ms sampling thread reading
  ``/proc/self/statm`` and ``ru_maxrss`` (when the call raised it). It
  includes allocator slack and has page granularity, so small figures are
  rough. It is not used for the numpy-based engines: Python's small-object
  allocator keeps its arenas after the warm-up call and reuses them, so their
  RSS growth undercounts (mutagrad: 0.15 MB measured for 0.61 MB allocated
  at N=300). JAX is left out by default (``--jax-memory`` adds it): eager JAX
  compiles one kernel per distinct static index on first use, so its warm-up
  call at N=3000 takes minutes and its compile cache reaches gigabytes.

Linear growth shows as peak(N2) / peak(N1) close to N2 / N1; the report gives
the growth exponent ``log(peak ratio) / log(size ratio)`` (1 = linear, 2 = quadratic).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import gc
import json
import math
import os
import resource
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from benchmarks import engines
from benchmarks.workloads import Case, Runner, build_runner, fill_loop_case, mse_loop_case

CASE_FACTORIES: dict[str, Callable[[int], Case]] = {
    "mse_loop": mse_loop_case,
    "fill_loop": fill_loop_case,
}
SIZES = {"mse_loop": (300, 3000), "fill_loop": (1000, 4000)}
QUICK_SIZES = {"mse_loop": (30, 300), "fill_loop": (100, 400)}
TRACEMALLOC_ENGINES = ("numpy-hand", "mutagrad-poison", "autograd", "mygrad")
RSS_ENGINES = ("torch",)
RSS_TIMEOUT = 300.0


@dataclasses.dataclass
class MemoryResult:
    workload: str
    size: int
    engine: str
    method: str  # tracemalloc | rss
    peak_bytes: int | None
    seconds: float | None = None
    error: str = ""


def tracemalloc_peak(run: Runner) -> tuple[int, float]:
    """Peak bytes allocated during one call of ``run`` (after one untraced warm-up call)."""
    run()
    gc.collect()
    gc.freeze()  # collections inside the call scan only what it allocates
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        start = time.perf_counter()
        run()
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        gc.unfreeze()
    return peak - before, seconds


def _resident_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _release_free_heap() -> None:
    """Ask glibc to return free heap pages to the system (no-op elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def rss_growth(run: Runner) -> tuple[int, float]:
    """Peak resident-set growth during one call of ``run`` (see the module docstring)."""
    gc.collect()
    _release_free_heap()
    baseline = _resident_bytes()
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak = baseline
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _resident_bytes())
            time.sleep(0.0005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    try:
        run()
    finally:
        seconds = time.perf_counter() - start
        done.set()
        sampler.join()
    peak = max(peak, _resident_bytes())
    maxrss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if maxrss_after > maxrss_before:
        peak = max(peak, maxrss_after * 1024)
    return peak - baseline, seconds


def _rss_in_subprocess(engine: str, workload: str, size: int) -> MemoryResult:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    command = [sys.executable, "-m", "benchmarks.memory", engine, workload, str(size)]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=RSS_TIMEOUT,
            cwd=root,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return MemoryResult(workload, size, engine, "rss", None, error="timed out")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return MemoryResult(workload, size, engine, "rss", None, error=tail[:200])
    data = json.loads(lines[-1])
    return MemoryResult(workload, size, engine, "rss", data["peak_bytes"], data["seconds"])


def measure_memory(
    selected: list[str], quick: bool, jax_rss: bool = False, log: Any = print
) -> list[MemoryResult]:
    """Both measures for workloads 1 and 4 at their two sizes, on the ``selected`` engines."""
    rss_engines = RSS_ENGINES + (("jax",) if jax_rss else ())
    results: list[MemoryResult] = []
    sizes = QUICK_SIZES if quick else SIZES
    for workload, pair in sizes.items():
        for size in pair:
            case = CASE_FACTORIES[workload](size)
            flat = case.inputs()
            for engine in TRACEMALLOC_ENGINES:
                if engine not in selected or not engines.installed(engine):
                    continue
                try:
                    peak, seconds = tracemalloc_peak(build_runner(case, engine, flat))
                    result = MemoryResult(workload, size, engine, "tracemalloc", peak, seconds)
                except Exception as error:
                    result = MemoryResult(
                        workload,
                        size,
                        engine,
                        "tracemalloc",
                        None,
                        error=f"{type(error).__name__}: {error}"[:200],
                    )
                results.append(result)
                log(_line(result))
            if quick:
                continue  # a fresh interpreter per engine and size is too slow for a smoke test
            for engine in rss_engines:
                if engine in selected and engines.installed(engine):
                    result = _rss_in_subprocess(engine, workload, size)
                    results.append(result)
                    log(_line(result))
    return results


def _line(result: MemoryResult) -> str:
    peak = f"{result.peak_bytes / 1e6:8.2f} MB" if result.peak_bytes is not None else result.error
    where = f"{result.workload} N={result.size:<5} {result.engine:16} {result.method:11}"
    return f"  memory {where} {peak}"


def growth_exponent(small: MemoryResult, large: MemoryResult) -> float | None:
    """log(peak ratio) / log(size ratio): 1 for linear growth, 2 for quadratic."""
    if not small.peak_bytes or not large.peak_bytes or small.peak_bytes <= 0:
        return None
    if large.peak_bytes <= 0:
        return None
    return math.log(large.peak_bytes / small.peak_bytes) / math.log(large.size / small.size)


def _main_subprocess(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="RSS growth of one call, in this process")
    parser.add_argument("engine", choices=engines.ENGINES)
    parser.add_argument("workload", choices=sorted(CASE_FACTORIES))
    parser.add_argument("size", type=int)
    args = parser.parse_args(argv)
    engines.configure_environment()
    case = CASE_FACTORIES[args.workload](args.size)
    run = build_runner(case, args.engine, case.inputs())
    run()  # warm-up: lazy imports, kernels, caches
    peak, seconds = rss_growth(run)
    print(json.dumps({"peak_bytes": peak, "seconds": seconds}))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main_subprocess())
