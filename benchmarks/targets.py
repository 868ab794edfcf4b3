"""The targets of issue 6, checked against the figures of one run.

These are benchmark figures on a shared 2-core machine, not tests: a FAIL is
information for whoever optimises the engine. Every ratio compares engines
measured in the same run, interleaved round by round (see
:mod:`benchmarks.timing`).
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any

from benchmarks.memory import MemoryResult, growth_exponent
from benchmarks.timing import CaseResult

POISON = "mutagrad-poison"
STRICT = "mutagrad-strict"


@dataclasses.dataclass
class Check:
    """One target: a measured value against a limit."""

    name: str
    value: float | None
    limit: float
    kind: str = "ratio"  # ratio | percent | exponent | bytes
    detail: str = ""

    @property
    def status(self) -> str:
        if self.value is None:
            return "N/A"
        return "PASS" if self.value <= self.limit else "FAIL"

    def text(self) -> str:
        if self.value is None:
            shown = "not measured"
        elif self.kind == "percent":
            shown = f"{self.value:+.1f}%"
        elif self.kind == "bytes":
            shown = f"{self.value:,.0f} B"
        else:
            shown = f"{self.value:.2f}"
        limit = f"{self.limit:g}%" if self.kind == "percent" else f"{self.limit:g}"
        if self.kind == "bytes":
            limit = f"{self.limit:,.0f} B"
        detail = f"  [{self.detail}]" if self.detail else ""
        return f"{self.name} = {shown} (target ≤ {limit}) {self.status}{detail}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "limit": self.limit,
            "kind": self.kind,
            "status": self.status,
            "detail": self.detail,
            "text": self.text(),
        }


def _find(results: list[CaseResult], case_id: str) -> CaseResult | None:
    return next((r for r in results if r.case.id == case_id), None)


def _ratio(results: list[CaseResult], case_id: str, engine: str, peer: str) -> float | None:
    found = _find(results, case_id)
    if found is None:
        return None
    a, b = found.median(engine), found.median(peer)
    return a / b if a is not None and b else None


def paired_overhead(result: CaseResult | None) -> tuple[float | None, str]:
    """Median over rounds of poison / strict - 1, in percent (samples pair up by round)."""
    if result is None:
        return None, ""
    poison, strict = result.engines.get(POISON), result.engines.get(STRICT)
    if poison is None or strict is None or poison.status != "ok" or strict.status != "ok":
        return None, ""
    pairs = list(zip(poison.samples, strict.samples))
    if not pairs:
        return None, ""
    ratios = [p / s for p, s in pairs]
    medians = (poison.median or 0) / (strict.median or 1)
    detail = f"{len(pairs)} paired rounds; ratio of medians {medians:.3f}"
    return (statistics.median(ratios) - 1) * 100, detail


def _memory(
    memory: list[MemoryResult], workload: str, engine: str, method: str
) -> list[MemoryResult]:
    found = [m for m in memory if m.workload == workload and m.engine == engine]
    return sorted((m for m in found if m.method == method), key=lambda m: m.size)


def compute(results: list[CaseResult], memory: list[MemoryResult]) -> list[Check]:
    """Every target the run has the figures for (absent figures give N/A)."""
    checks: list[Check] = []
    ids = {r.case.id for r in results}

    def add_ratio(name: str, case_id: str, peer: str, limit: float) -> None:
        if case_id in ids:
            checks.append(Check(name, _ratio(results, case_id, POISON, peer), limit))

    add_ratio("workload 1 N=3000: mutagrad/torch", "mse_loop/N=3000", "torch", 1.0)
    if "mse_loop/N=3000" in ids and "mse_loop/N=300" in ids:
        big, small = _find(results, "mse_loop/N=3000"), _find(results, "mse_loop/N=300")
        assert big is not None and small is not None
        for engine in (POISON, STRICT):
            a, b = big.median(engine), small.median(engine)
            value = a / b if a is not None and b else None
            label = engine.split("-")[1]
            checks.append(Check(f"workload 1 {label}: time(3000)/time(300)", value, 11.0))
    add_ratio("workload 3 N=1e6: mutagrad/numpy-hand", "mse_vec/N=1000000", "numpy-hand", 1.15)
    add_ratio("workload 3 N=30: mutagrad/torch", "mse_vec/N=30", "torch", 0.5)
    add_ratio("workload 4 N=1000: mutagrad/torch", "fill_loop/N=1000", "torch", 1.0)
    add_ratio("workload 5 network: mutagrad/torch", "network/layers=25", "torch", 1.0)
    for case_id in ("mse_loop/N=30", "mse_loop/N=300", "mse_loop/N=3000", "network/layers=25"):
        if case_id in ids:
            value, detail = paired_overhead(_find(results, case_id))
            name = f"workload 6 poison/strict overhead, {case_id}"
            checks.append(Check(name, value, 5.0, "percent", detail))
    for workload, label in (("mse_loop", "workload 1"), ("fill_loop", "workload 4")):
        points = _memory(memory, workload, POISON, "tracemalloc")
        if len(points) >= 2:
            small, large = points[0], points[-1]
            exponent = growth_exponent(small, large)
            detail = (
                f"peak {small.peak_bytes / 1e6:.2f} MB at N={small.size}, "
                f"{large.peak_bytes / 1e6:.2f} MB at N={large.size}"
                if small.peak_bytes and large.peak_bytes
                else ""
            )
            name = f"{label} memory growth exponent (1 = linear, 2 = quadratic)"
            checks.append(Check(name, exponent, 1.1, "exponent", detail))
    for result in results:
        if "bytes_copied" in result.extra:
            copied, expected = result.extra["bytes_copied"], result.extra["bytes_expected"]
            name = f"workload 7 {result.case.id}: snapshot bytes copied"
            detail = f"(iterations - 1) * N * 8 = {expected:,} B expected"
            checks.append(Check(name, copied, expected, "bytes", detail))
    return checks
