"""The command line: ``python -m benchmarks [--quick] [--only NAME] [--json PATH] ...``.

A run checks every engine's gradient against the hand-written one, times the
selected workloads on every installed engine, measures peak memory for
workloads 1 and 4, computes the issue's target checks, prints the tables and
writes ``benchmarks/results/<timestamp>.json`` with a plot next to it.

The exit status is 1 when an engine returned a wrong gradient or failed
unexpectedly (a benchmark of a wrong gradient is meaningless), 0 otherwise;
target FAILs are figures to act on, not errors.
"""

from __future__ import annotations

import argparse
import datetime
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from typing import Any

from benchmarks import engines

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from benchmarks.workloads import WORKLOAD_NAMES

    names = ", ".join(f"{k} {v}" for k, v in WORKLOAD_NAMES.items())
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="mutagrad against PyTorch, HIPS autograd, MyGrad and JAX (issue 6).",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="few repeats and small memory sizes: a smoke test, not figures",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help=f"workload number or name, or a case id prefix such as "
        f"mse_loop/N=300; repeatable or comma-separated. Workloads: {names} "
        f"(6 selects the cases of 1 and 5)",
    )
    parser.add_argument(
        "--engines",
        default="",
        metavar="LIST",
        help="comma-separated engines or families to run (default: all "
        f"installed): {', '.join(engines.ENGINES)}; 'mutagrad' = its modes",
    )
    parser.add_argument(
        "--json",
        metavar="PATH",
        help="where to write the results (default benchmarks/results/<time>.json)",
    )
    parser.add_argument("--markdown", metavar="PATH", help="also write the tables as markdown")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory measurements")
    parser.add_argument(
        "--jax-memory",
        action="store_true",
        help="also measure JAX's RSS (its warm-up at N=3000 takes minutes)",
    )
    parser.add_argument("--no-plot", action="store_true", help="do not draw the plot")
    parser.add_argument(
        "--at",
        metavar="REV",
        help="measure mutagrad as committed at git revision REV (e.g. HEAD, "
        "HEAD~1): its src/ is exported to a temporary directory and put "
        "first on the path; the benchmarks themselves are this checkout's",
    )
    parser.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        help="seconds of samples per engine and case (default 1, quick 0.05)",
    )
    return parser.parse_args(argv)


def select_engines(spec: str) -> list[str]:
    from benchmarks.workloads import family

    if not spec.strip():
        return list(engines.ENGINES)
    tokens = [t.strip() for t in spec.split(",") if t.strip()]
    unknown = [
        t
        for t in tokens
        if t not in engines.ENGINES and t not in {family(e) for e in engines.ENGINES}
    ]
    if unknown:
        raise SystemExit(f"unknown engine(s): {', '.join(unknown)}")
    return [e for e in engines.ENGINES if e in tokens or family(e) in tokens]


def select_cases(only: list[str]) -> list[Any]:
    from benchmarks.workloads import WORKLOAD_NAMES, all_cases

    cases = all_cases()
    tokens = [t.strip() for item in only for t in item.split(",") if t.strip()]
    if not tokens:
        return cases
    wanted: set[str] = set()
    by_name = {name: number for number, name in WORKLOAD_NAMES.items()}
    for token in tokens:
        number = int(token) if token.isdigit() else by_name.get(token)
        if number == 6:
            wanted |= {c.id for c in cases if c.workload in (1, 5)}
        elif number is not None:
            wanted |= {c.id for c in cases if c.workload == number}
        elif any(c.id == token for c in cases):
            wanted.add(token)
        else:
            matched = {c.id for c in cases if c.id.startswith(token)}
            if not matched:
                raise SystemExit(f"--only {token}: no such workload or case")
            wanted |= matched
    return [c for c in cases if c.id in wanted]


def _case_json(result: Any) -> dict[str, Any]:
    case = result.case
    torch_median = result.median("torch")
    poison_median = result.median("mutagrad-poison")
    entries = {}
    for engine, engine_result in result.engines.items():
        summary = engine_result.summary()
        median = summary["median_s"]
        summary["vs_torch"] = median / torch_median if median and torch_median else None
        summary["vs_mutagrad"] = median / poison_median if median and poison_median else None
        entries[engine] = summary
    return {
        "id": case.id,
        "workload": case.workload,
        "name": case.name,
        "size": case.size,
        "title": case.title,
        "reference_fd_rel_err": result.reference_fd_rel_err,
        "engines": entries,
        "probes": result.probes,
        "extra": result.extra,
    }


def _source() -> dict[str, Any]:
    info = engines.mutagrad_source()
    if os.environ.get(COMMIT_VARIABLE):  # an exported revision (--at) is not a git checkout
        info["commit"] = os.environ[COMMIT_VARIABLE]
        info["dirty"] = []
    return info


def _memory_growth(memory: list[Any]) -> list[dict[str, Any]]:
    from benchmarks.memory import growth_exponent

    groups: dict[tuple[str, str, str], list[Any]] = {}
    for m in memory:
        groups.setdefault((m.workload, m.engine, m.method), []).append(m)
    growth = []
    for (workload, engine, method), points in groups.items():
        points.sort(key=lambda m: m.size)
        if len(points) < 2:
            continue
        small, large = points[0], points[-1]
        ok = small.peak_bytes and large.peak_bytes
        growth.append(
            {
                "workload": workload,
                "engine": engine,
                "method": method,
                "size_ratio": large.size / small.size,
                "peak_ratio": large.peak_bytes / small.peak_bytes if ok else None,
                "exponent": growth_exponent(small, large),
            }
        )
    return growth


COMMIT_VARIABLE = "MUTAGRAD_BENCH_COMMIT"


def run_at_revision(revision: str, argv: list[str]) -> int:
    """Export mutagrad's ``src/`` at ``revision`` and run the benchmarks on it in a subprocess."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def git(*command: str) -> bytes:
        return subprocess.run(["git", "-C", root, *command], capture_output=True, check=True).stdout

    try:
        commit = git("rev-parse", "--verify", f"{revision}^{{commit}}").decode().strip()
        archive = git("archive", "--format=tar", commit, "src")
    except (OSError, subprocess.CalledProcessError) as error:
        raise SystemExit(f"--at {revision}: {error}") from error
    with tempfile.TemporaryDirectory(prefix=f"mutagrad-at-{commit[:12]}-") as directory:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(directory, filter="data")
            else:  # Python before 3.11.4: our own repository's archive, trusted
                tar.extractall(directory)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.join(directory, "src"), root, env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
        env[COMMIT_VARIABLE] = commit
        print(f"measuring mutagrad at {revision} = {commit[:12]}", flush=True)
        return subprocess.run(
            [sys.executable, "-m", "benchmarks", *argv], env=env, cwd=root, check=False
        ).returncode


def _without_at(argv: list[str]) -> list[str]:
    out, skip = [], False
    for item in argv:
        if skip:
            skip = False
        elif item == "--at":
            skip = True
        elif not item.startswith("--at="):
            out.append(item)
    return out


def main(argv: list[str] | None = None) -> int:
    engines.configure_environment()  # before anything imports jax
    args = parse_args(argv)
    if args.at:
        return run_at_revision(args.at, _without_at(sys.argv[1:] if argv is None else argv))
    from benchmarks import memory as memory_module
    from benchmarks import report, targets
    from benchmarks.timing import Settings, measure_case

    selected = select_engines(args.engines)
    cases = select_cases(args.only)
    settings = Settings.quick() if args.quick else Settings()
    if args.budget is not None:
        settings = Settings(**{**settings.__dict__, "engine_budget": args.budget})
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    json_path = args.json or os.path.join(RESULTS_DIR, f"{stamp}.json")
    missing = [e for e in selected if not engines.installed(e)]
    if missing:
        print(f"not installed, skipped: {', '.join(missing)}")
    started = time.perf_counter()
    load_before = engines.load_average()
    results = []
    problems: list[str] = []
    for case in cases:
        t0 = time.perf_counter()
        print(f"-- {case.id}: {case.title}", flush=True)
        result = measure_case(case, selected, settings)
        for engine, r in result.engines.items():
            if r.status in ("error", "wrong gradient"):
                problems.append(f"{case.id} on {engine}: {r.status} {r.error}".strip())
        if result.reference_fd_rel_err > 1e-5:
            problems.append(f"{case.id}: reference gradient fails the finite-difference check")
        results.append(result)
        print(f"   done in {time.perf_counter() - t0:.1f} s", flush=True)
    memory: list[Any] = []
    wants_memory = any(c.workload in (1, 4) for c in cases) and not args.no_memory
    if wants_memory:
        print("-- peak memory, workloads 1 and 4", flush=True)
        memory = memory_module.measure_memory(selected, args.quick, jax_rss=args.jax_memory)
    checks = targets.compute(results, memory)
    run = {
        "schema": 1,
        "meta": {
            "timestamp": stamp,
            "quick": args.quick,
            "argv": sys.argv[1:] if argv is None else argv,
            "settings": settings.__dict__,
            "versions": engines.versions(),
            "machine": engines.machine(),
            "mutagrad_source": _source(),
            "load_average": {"start": load_before, "end": engines.load_average()},
            "engines": {
                e: {"installed": engines.installed(e), "selected": e in selected}
                for e in engines.ENGINES
            },
            "seconds": time.perf_counter() - started,
        },
        "cases": [_case_json(r) for r in results],
        "memory": [m.__dict__ for m in memory],
        "memory_growth": _memory_growth(memory),
        "targets": [c.to_json() for c in checks],
        "problems": problems,
    }
    print()
    print(report.render(run))
    report.write_json(run, json_path)
    print(f"\nresults: {json_path}")
    if not args.no_plot:
        png = report.plot(run, os.path.splitext(json_path)[0] + ".png")
        print(f"plot: {png}" if png else "plot: skipped (matplotlib is not installed)")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(report.render(run, markdown=True) + "\n")
        print(f"markdown: {args.markdown}")
    if problems:
        print(f"\n!!! {len(problems)} problem(s): wrong gradients or failures, see above")
        return 1
    return 0
