"""Formatting shared by report.md and index.html: cells of the measurement tables.

Two tables, one row per program: the times (the plain numpy call, and each
mode's and peer's gradient call with its spread and its ratio to plain
numpy; a time too spread to read marked ``~``), and the memory (the peak of
the plain call and of each mode, the peers' not measured, and the bytes
snapshot mode copied).

Times are printed with a unit that keeps three significant digits (µs, ms,
s), memory in KiB, ratios as ``12.3x``; a value that was not measured is "–".
"""

from __future__ import annotations

from typing import Any

from mutagrad.report.peers import column_title
from mutagrad.report.runner import ProgramResult, Report

MISSING = "–"
REGENERATE = (
    "make report  (or: python -m mutagrad report --out DIR [--corpus path_or_module] "
    "[--engines mutagrad,jax,autograd,mygrad] [--repeats N] [--time-limit SECONDS] "
    "[--generated N --seed S] [--no-timing] [--jobs N | --scheduler ADDRESS])"
)
NOT_TIMED = (
    "Not timed (--no-timing): every time and memory cell is –, and there are no timing plots."
)


def timing_text(settings: Any) -> str:
    """How the calls were timed, for the settings table."""
    if not settings.timing:
        return "not timed (--no-timing)"
    return f"median of {settings.repeats} samples of ~{settings.sample_seconds * 1e3:g} ms"


def workers_text(settings: Any) -> str:
    """Where the programs ran: this process, worker processes, or a dask cluster."""
    if settings.scheduler:
        return f"the dask.distributed cluster of the scheduler {settings.scheduler}"
    if settings.jobs > 1:
        return f"{settings.jobs} worker processes"
    return "this process"


def generated_text(report: Report) -> str:
    """How many programs were generated, from what, with which seed."""
    settings = report.settings
    if not settings.generated:
        return "none"
    return (
        f"{settings.generated}, drawn by the differential fuzzer's generator with seed "
        f"{settings.seed} (mutagrad {report.environment.get('mutagrad', '?')})"
    )


def seconds_text(seconds: float | None) -> str:
    if seconds is None:
        return MISSING
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def bytes_text(n: int | None) -> str:
    if n is None:
        return MISSING
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KiB"


def ratio_text(ratio: float | None) -> str:
    return MISSING if ratio is None else f"{ratio:.1f}x"


def spread_text(spread: float | None) -> str:
    """``±4%``: half the spread of the samples' middle half, around the median."""
    return "" if spread is None else f"±{spread / 2:.0%}"


def time_cell(program: ProgramResult, system: str) -> list[str]:
    """``["~148 µs", "±40% (~19.4x)"]`` for a result with a time: the time (``~`` when too
    spread to read), its spread and its ratio to plain numpy (``~`` when either time is too
    spread); ``["–"]`` without one."""
    result = program.mode(system)
    ratio = program.overhead(system)
    if ratio is None:
        return [MISSING]
    mark = NOISY_MARK if result.noisy else ""
    ratio_mark = NOISY_MARK if program.overhead_noisy(system) else ""  # or plain numpy's is
    below = " ".join(
        t for t in (spread_text(result.spread), f"({ratio_mark}{ratio_text(ratio)})") if t
    )
    return [f"{mark}{seconds_text(result.seconds)}", below]


def forward_cell(program: ProgramResult) -> list[str]:
    """The plain numpy time and its spread, as :func:`time_cell`."""
    if program.forward_seconds is None:
        return [MISSING]
    mark = NOISY_MARK if program.forward_noisy else ""
    spread = spread_text(program.forward_spread)
    return [f"{mark}{seconds_text(program.forward_seconds)}", *([spread] if spread else [])]


def memory_cell(program: ProgramResult, mode: str) -> str:
    result = program.mode(mode)
    if program.overhead(mode) is None:
        return MISSING
    return bytes_text(result.peak_bytes)


def copied_cell(program: ProgramResult) -> str:
    if "snapshot" not in [r.mode for r in program.modes]:
        return MISSING
    result = program.mode("snapshot")
    return MISSING if result.bytes_copied is None else bytes_text(result.bytes_copied)


NOISY_MARK = "~"
TIMES_NOTE = (
    "Time of one call: the median of its samples; ± half the spread of the samples' middle "
    "half; in brackets the ratio to plain numpy's time. ~ marks a time too spread to read "
    "(its samples' middle half spans more than half the median: other work took the CPU): it "
    "is left out of every median, the headline's and the plots'. JAX runs eagerly (no jit)."
)
MEMORY_NOTE = (
    "Peak memory of one call (tracemalloc, in a separate call; mutagrad's modes only: the "
    "peers allocate outside Python's allocator) and the bytes snapshot mode copied."
)


def time_header(report: Report) -> list[str]:
    return ["program", "plain numpy", *(column_title(s) for s in report.systems)]


def time_row(report: Report, program: ProgramResult) -> list[list[str]]:
    """One program's times: each cell a list of lines (see :func:`time_cell`)."""
    return [
        [program.name],
        forward_cell(program),
        *(time_cell(program, s) for s in report.systems),
    ]


def memory_header(report: Report) -> list[str]:
    return ["program", "plain numpy", *report.modes, "snapshot: bytes copied"]


def memory_row(report: Report, program: ProgramResult) -> list[str]:
    return [
        program.name,
        bytes_text(program.forward_peak_bytes),
        *(memory_cell(program, m) for m in report.modes),
        copied_cell(program),
    ]
