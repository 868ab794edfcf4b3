"""Where mutagrad's time goes, per traced operation: ``python -m benchmarks.profiling``.

For workloads 1 (mse loop, N=3000), 4 (fill loop, N=1000) and 5 (network) in
poison mode, four views of one ``mutagrad.gradient`` call:

1. **Split** (unprofiled): forward (``f`` running on traced arrays), backward
   sweep, the rest of the API (wrapping inputs, extracting gradients,
   releasing the tape), and the garbage collector's share of all of it
   (``gc.callbacks``), per call and per tape node. Timed by wrapping
   ``mutagrad.call.GradientCall.run`` and ``mutagrad.call.backward`` for the duration
   of the measurement (mutagrad's source is not changed).
2. **Sampling profile** (pyinstrument, when installed; 0.1 ms interval): self
   time grouped by phase and by what the engine is doing (site lookup,
   recording, dispatch, wrappers, pullbacks, accumulation, ...). A function's
   self time includes the C calls it makes, so ``apply`` includes the ufunc it
   calls and ``record`` includes allocating the Node.
3. **Call counts** (cProfile): calls per tape node of the busiest functions,
   which is what a fast path has to remove.
4. **Ablations** (unprofiled, interleaved with the unchanged engine, median of
   rounds): the same call with ``user_site`` and ``user_site_from`` returning
   None (no site lookup), and with the garbage collector disabled. The time saved
   is an upper bound on what removing that cost can gain. Measurement only:
   error messages lose their source lines while the ablation runs.

Options: ``--only mse_loop,fill_loop,network`` (also ``sum3``, ``mse_vec30``,
``mse_vec1e6``, ``scratch``), ``--calls N`` (calls per profile), ``--rounds N``
(ablation rounds), ``--json PATH``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import cProfile
import gc
import json
import math
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks import engines

PROFILED_CASES = ("mse_loop", "fill_loop", "network")  # the default: workloads 1, 4 and 5
EXTRA_CASES = ("sum3", "mse_vec30", "mse_vec1e6", "scratch")  # on request, with --only


def _cases(only: list[str]) -> list[Any]:
    from benchmarks import workloads

    factories = {
        "mse_loop": lambda: workloads.mse_loop_case(3000),
        "fill_loop": lambda: workloads.fill_loop_case(1000),
        "network": workloads.network_case,
        "sum3": workloads.sum3_case,
        "mse_vec30": lambda: workloads.mse_vec_case(30),
        "mse_vec1e6": lambda: workloads.mse_vec_case(1_000_000),
        "scratch": lambda: workloads.scratch_case(1000),
    }
    return [factories[name]() for name in only]


def _runner(case: Any) -> Callable[[], Any]:
    from benchmarks.workloads import build_runner

    return build_runner(case, "mutagrad-poison", case.inputs())


# ---------------------------------------------------------------------------
# 1. The unprofiled split.


class _PhaseClock:
    """Times forward and backward by wrapping two of mutagrad's functions; counts tape nodes."""

    def __init__(self) -> None:
        self.forward = 0.0
        self.backward = 0.0
        self.nodes = 0
        self.rules: collections.Counter[str] = collections.Counter()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        import mutagrad.call as api

        run, backward = api.GradientCall.run, api.backward

        def timed_run(call: Any, f: Any, kwargs: Any = None) -> Any:
            start = time.perf_counter()
            try:
                return run(call, f, kwargs)
            finally:
                self.forward += time.perf_counter() - start

        def timed_backward(tape: Any, seeds: Any, start_index: int, *rest: Any, **kw: Any) -> Any:
            if not self.nodes:  # counted once, outside the figures that matter
                nodes = tape.nodes[start_index:]
                self.nodes = len(nodes)
                self.rules = collections.Counter(node.rule.name for node in nodes)
            start = time.perf_counter()
            try:
                return backward(tape, seeds, start_index, *rest, **kw)
            finally:
                self.backward += time.perf_counter() - start

        api.GradientCall.run, api.backward = timed_run, timed_backward
        try:
            yield
        finally:
            api.GradientCall.run, api.backward = run, backward


class _GcClock:
    """Time spent in the garbage collector, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = collections.Counter[int]()
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start
            self.collections[info["generation"]] += 1

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        gc.callbacks.append(self)
        try:
            yield
        finally:
            gc.callbacks.remove(self)


def split(run: Callable[[], Any], calls: int) -> dict[str, Any]:
    """Median per-call forward / backward / rest / GC times over ``calls`` calls."""
    run()
    gc.collect()
    gc.freeze()  # as in the benchmark: collections see only what the calls allocate
    rows = []
    clock = _PhaseClock()
    with clock.installed():
        run()  # counts the tape
    for _ in range(calls):
        gc.collect()
        clock.forward = clock.backward = 0.0
        gc_clock = _GcClock()
        with clock.installed(), gc_clock.installed():
            start = time.perf_counter()
            run()
            total = time.perf_counter() - start
        rows.append(
            (
                total,
                clock.forward,
                clock.backward,
                gc_clock.seconds,
                sum(gc_clock.collections.values()),
                gc_clock.collections[2],
            )
        )
    gc.unfreeze()
    median = {
        key: statistics.median(r[i] for r in rows)
        for i, key in enumerate(("total", "forward", "backward", "gc", "gc_runs", "gc_gen2"))
    }
    median["rest"] = median["total"] - median["forward"] - median["backward"]
    median["calls"] = calls
    median["nodes"] = clock.nodes
    median["rules"] = dict(clock.rules.most_common())
    return median


# ---------------------------------------------------------------------------
# 2. The sampling profile, grouped.

_PHASES = {
    ("zygote.py", "gradient"): "api",
    ("zygote.py", "withgradient"): "api",
    ("call.py", "run"): "forward",
    ("call.py", "sweep"): "backward",
    ("engine.py", "backward"): "backward",
    ("call.py", "gradients"): "gradients out",
    ("call.py", "finish"): "release tape",
    ("call.py", "__init__"): "wrap inputs",
}

# (file suffix or directory, function names or None for any) -> category; first match wins.
_CATEGORIES: list[tuple[str, tuple[str, ...] | None, str]] = [
    ("diagnostics/sites.py", None, "site lookup (sites.py)"),
    (
        "core/engine.py",
        ("record", "save_value", "capture", "_remember", "save_output", "plan", "__init__"),
        "record: Node, saves, captures",
    ),
    ("core/engine.py", ("backward", "take"), "sweep loop + VjpRule.backward"),
    ("core/engine.py", ("accumulate", "_add_sparse_into"), "accumulate cotangents"),
    ("core/engine.py", ("read",), "pullbacks (vjps, Capture.read)"),
    ("core/engine.py", ("release", "touch"), "tape release"),
    ("traced/value.py", ("wrap", "__init__", "make_view"), "result wrappers (WrappedArray)"),
    ("traced/value.py", ("node_of", "is_active", "any_active"), "node_of / activity"),
    ("traced/value.py", ("apply",), "apply (incl. the numpy call)"),
    ("traced/value.py", None, "dispatch: operators, __array_ufunc__"),
    ("traced/indexing.py", ("backward",), "pullbacks (vjps, Capture.read)"),
    ("traced/indexing.py", None, "indexing: getitem, normalize_index"),
    ("traced/mutation.py", None, "writes: setitem, invalidate, write node"),
    ("rules/inplace.py", None, "writes: setitem, invalidate, write node"),
    ("core/tangents.py", ("Meta",), "record: Node, saves, captures"),
    (
        "core/tangents.py",
        (
            "Region",
            "_address",
            "layout_of",
            "is_dense",
            "_may_self_overlap",
            "describe_part",
            "flat_indices",
        ),
        "regions: view/write pullbacks",
    ),
    ("core/tangents.py", None, "accumulate cotangents"),
    ("core/regions.py", None, "regions: view/write pullbacks"),
    ("rules/", None, "rule functions (vjps, adapters)"),
    ("mutagrad/call.py", None, "api: inputs, output, gradients"),
    ("mutagrad/core/trees.py", None, "api: inputs, output, gradients"),
    ("mutagrad/buffer.py", None, "api: inputs, output, gradients"),
    ("benchmarks/workloads.py", None, "the user's program itself"),
    ("site-packages/numpy/", None, "numpy's Python code"),
    ("contextlib.py", None, "context managers (incl. GC on re-enable)"),
]


def _category(file_path: str | None, function: str, class_name: str | None = None) -> str:
    """What a function's self time is spent on (``functions`` match a name or its class)."""
    path = (file_path or "").replace(os.sep, "/")
    for suffix, functions, category in _CATEGORIES:
        if suffix in path and (
            functions is None
            or function in functions
            or (class_name is not None and class_name in functions)
        ):
            return category
    if function.startswith("<built-in>") or function in ("[self]", "[await]"):
        return "other"
    return "other: " + (os.path.basename(path) or function)


def sampled_profile(run: Callable[[], Any], calls: int) -> dict[str, Any] | None:
    """Self time by (phase, category), in seconds per call; None without pyinstrument."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        return None
    run()
    profiler = Profiler(interval=0.0001)
    profiler.start()
    for _ in range(calls):
        run()
    profiler.stop()
    root = profiler.last_session.root_frame()
    by_phase: collections.Counter[str] = collections.Counter()
    by_category: collections.Counter[tuple[str, str]] = collections.Counter()

    def walk(frame: Any, phase: str, parent_category: str) -> None:
        name = frame.function or ""
        basename = os.path.basename(frame.file_path or "")
        phase = (
            _PHASES.get((basename, name), phase) if "mutagrad" in (frame.file_path or "") else phase
        )
        if name.startswith("[") or getattr(frame, "is_synthetic_leaf", False):
            category = parent_category  # "[self]": time of the parent frame itself
            own = frame.time
        else:
            category = _category(frame.file_path, name, getattr(frame, "class_name", None))
            own = frame.time - sum(child.time for child in frame.children)
            if name.startswith("<built-in>") or (frame.file_path or "") == "<built-in>":
                category = parent_category  # C calls count for their caller
        if own > 0:
            by_phase[phase] += own
            by_category[(phase, category)] += own
        for child in frame.children:
            walk(child, phase, category)

    walk(root, "outside gradient()", "other")
    total = sum(by_phase.values())
    return {
        "calls": calls,
        "total": total / calls,
        "phases": {k: v / calls for k, v in by_phase.most_common()},
        "categories": [
            {"phase": p, "category": c, "seconds": v / calls, "share": v / total}
            for (p, c), v in by_category.most_common()
        ],
    }


# ---------------------------------------------------------------------------
# 3. Call counts.


def call_counts(run: Callable[[], Any], calls: int, nodes: int, top: int) -> list[dict[str, Any]]:
    """The ``top`` functions by own time under cProfile, with calls per tape node."""
    run()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        run()
    profile.disable()
    stats = pstats.Stats(profile)
    rows = []
    for (path, line, function), (_, ncalls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append(
            {
                "function": f"{_short_path(path)}:{line} {function}",
                "calls_per_node": ncalls / calls / max(nodes, 1),
                "tottime_share": tottime,
                "cumtime_per_call": cumtime / calls,
            }
        )
    total = sum(r["tottime_share"] for r in rows) or 1.0
    for r in rows:
        r["tottime_share"] /= total
    rows.sort(key=lambda r: r["tottime_share"], reverse=True)
    return rows[:top]


def _short_path(path: str) -> str:
    for marker in ("/mutagrad/", "/numpy/", "/benchmarks/"):
        if marker in path:
            return marker.strip("/") + "/" + path.split(marker, 1)[1]
    return os.path.basename(path) or path


# ---------------------------------------------------------------------------
# 4. Ablations.


@contextlib.contextmanager
def _no_user_site() -> Iterator[None]:
    from mutagrad.diagnostics import sites

    # Every name a module binds the site lookups to: user_site(depth) and
    # user_site_from(frame), which the operator, indexing and write paths call.
    stand_ins = {"user_site": lambda depth=2: None, "user_site_from": lambda frame: None}
    patched = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("mutagrad"):
            continue
        for attr, stand_in in stand_ins.items():
            original = getattr(sites, attr)
            if getattr(module, attr, None) is original:
                patched.append((module, attr, original))
                setattr(module, attr, stand_in)
    try:
        yield
    finally:
        for module, attr, original in patched:
            setattr(module, attr, original)


@contextlib.contextmanager
def _gc_disabled() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


ABLATIONS: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    "no site lookup": _no_user_site,
    "garbage collector disabled": _gc_disabled,
}


def ablations(run: Callable[[], Any], rounds: int) -> dict[str, Any]:
    """Per-call time of the engine as is and under each ablation, interleaved round by round.

    The saving is the median over rounds of ``1 - ablated / baseline`` (each
    ratio from adjacent samples, so machine load cancels); ``spread`` is the
    interquartile range of those savings.
    """
    variants: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
        "baseline": contextlib.nullcontext,
        **ABLATIONS,
    }
    with _no_user_site():
        run()  # warm every path once
    start = time.perf_counter()
    run()
    calls = max(1, math.ceil(0.02 / (time.perf_counter() - start)))
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, make in variants.items():
            gc.collect()
            with make():
                start = time.perf_counter()
                for _ in range(calls):
                    run()
                samples[name].append((time.perf_counter() - start) / calls)
    base = samples["baseline"]
    out: dict[str, Any] = {"baseline": statistics.median(base), "rounds": rounds, "calls": calls}
    for name in ABLATIONS:
        savings = sorted(1 - a / b for a, b in zip(samples[name], base))
        quartiles = statistics.quantiles(savings, n=4) if len(savings) >= 2 else [0, 0, 0]
        out[name] = {
            "seconds": statistics.median(samples[name]),
            "saved": statistics.median(savings),
            "spread": quartiles[2] - quartiles[0],
        }
    return out


# ---------------------------------------------------------------------------
# The report.


def profile_case(case: Any, calls: int, rounds: int, top: int) -> dict[str, Any]:
    run = _runner(case)
    phases = split(run, calls)
    return {
        "case": case.id,
        "title": case.title,
        "split": phases,
        "sampled": sampled_profile(run, calls),
        "counts": call_counts(run, max(1, calls // 2), phases["nodes"], top),
        "ablations": ablations(run, rounds),
    }


def render(result: dict[str, Any]) -> str:
    s = result["split"]
    nodes = s["nodes"]

    def per_node(seconds: float) -> str:
        return f"{seconds / nodes * 1e6:6.2f} µs/node" if nodes else ""

    lines = [f"== {result['case']}: {result['title']} (mutagrad poison) =="]
    rules = ", ".join(f"{k} {v}" for k, v in s["rules"].items())
    lines.append(f"tape nodes per call: {nodes} ({rules})")
    lines.append(f"per call (median of {s['calls']} calls), unprofiled:")
    for key in ("total", "forward", "backward", "rest"):
        share = s[key] / s["total"] * 100
        lines.append(f"  {key:9} {s[key] * 1e3:8.2f} ms {share:5.1f}%  {per_node(s[key])}")
    lines.append(
        f"  of which GC {s['gc'] * 1e3:6.2f} ms {s['gc'] / s['total'] * 100:5.1f}% "
        f"({s['gc_runs']:.0f} collections, {s['gc_gen2']:.0f} of generation 2)"
    )
    sampled = result["sampled"]
    if sampled:
        lines.append("sampling profile (pyinstrument), self time by phase and activity:")
        for category in sampled["categories"]:
            if category["share"] < 0.01:
                continue
            # Scale the profiled seconds to the unprofiled call time.
            seconds = category["seconds"] * s["total"] / sampled["total"]
            lines.append(
                f"  {category['share'] * 100:5.1f}%  {category['phase']:14} "
                f"{category['category']:40} {per_node(seconds)}"
            )
    lines.append("busiest functions (cProfile): share of own time, calls per tape node")
    for row in result["counts"]:
        lines.append(
            f"  {row['tottime_share'] * 100:5.1f}%  {row['calls_per_node']:6.2f}/node  "
            f"{row['function']}"
        )
    ab = result["ablations"]
    lines.append(
        f"ablations ({ab['rounds']} interleaved rounds of {ab['calls']} calls; "
        f"baseline {ab['baseline'] * 1e3:.2f} ms per call):"
    )
    for name in ABLATIONS:
        entry = ab[name]
        lines.append(
            f"  {name:28} {entry['seconds'] * 1e3:8.2f} ms  saves {entry['saved'] * 100:5.1f}% "
            f"(IQR {entry['spread'] * 100:.1f} points)"
        )
    return "\n".join(lines)


def scaling(calls: int, sizes: tuple[int, ...] = (300, 3000)) -> dict[str, Any]:
    """The split of workload 1 at two sizes: which phase grows faster than the tape."""
    from benchmarks import workloads

    return {str(n): split(_runner(workloads.mse_loop_case(n)), calls) for n in sizes}


def render_scaling(result: dict[str, Any]) -> str:
    sizes = list(result)
    lines = [f"== scaling of workload 1, N = {' -> '.join(sizes)}: time per tape node =="]
    for key in ("total", "forward", "backward", "rest", "gc"):
        per_node = [result[n][key] / result[n]["nodes"] * 1e6 for n in sizes]
        growth = result[sizes[-1]][key] / result[sizes[0]][key] if result[sizes[0]][key] else 0
        cells = "  ".join(f"{v:6.2f} µs" for v in per_node)
        lines.append(f"  {key:9} {cells}   time ratio {growth:5.1f}")
    node_ratio = result[sizes[-1]]["nodes"] / result[sizes[0]]["nodes"]
    lines.append(f"  (tape nodes ratio {node_ratio:.1f}; linear scaling keeps µs/node constant)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    engines.configure_environment()
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.profiling", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--only",
        default=",".join(PROFILED_CASES),
        help="comma-separated, from: " + ", ".join(PROFILED_CASES + EXTRA_CASES),
    )
    parser.add_argument("--calls", type=int, default=9, help="calls per profile (default 9)")
    parser.add_argument("--rounds", type=int, default=9, help="ablation rounds (default 9)")
    parser.add_argument("--top", type=int, default=15, help="functions listed from cProfile")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROFILED_CASES + EXTRA_CASES]
    if unknown:
        parser.error(f"unknown case(s): {', '.join(unknown)}")
    results = []
    for case in _cases(names):
        result = profile_case(case, args.calls, args.rounds, args.top)
        results.append(result)
        print(render(result), flush=True)
        print()
    scaling_result = None
    if "mse_loop" in names:
        scaling_result = scaling(args.calls)
        print(render_scaling(scaling_result), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(
                {"versions": engines.versions(), "results": results, "scaling": scaling_result},
                handle,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
