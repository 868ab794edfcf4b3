"""Formatting shared by report.md and index.html: cells of the measurement tables.

One row per program: the plain numpy time, each mode's and peer's gradient
time with its ratio to plain numpy, the peak memory of the plain call and of
each mode (the peers' is not measured), and the bytes snapshot mode copied.

Times are printed with a unit that keeps three significant digits (µs, ms,
s), memory in KiB, ratios as ``12.3x``; a value that was not measured is "–".
"""

from __future__ import annotations

from typing import Any

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
    version = report.environment.get("hypothesis")
    return (
        f"{settings.generated}, drawn from mutagrad.testing.strategies.programs() with seed "
        f"{settings.seed}" + (f" (hypothesis {version})" if version else "")
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


def time_cell(program: ProgramResult, mode: str) -> str:
    """``1.23 ms (45.0x)`` for an accepted result, else "–"."""
    result = program.mode(mode)
    ratio = program.overhead(mode)
    if ratio is None:
        return MISSING
    return f"{seconds_text(result.seconds)} ({ratio_text(ratio)})"


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


def measurement_header(report: Report) -> list[str]:
    return [
        "program",
        "plain forward",
        *(f"{m}: time (overhead)" for m in report.systems),
        "peak memory: plain",
        *(f"{m}: peak memory" for m in report.modes),
        "snapshot: bytes copied",
    ]


def measurement_row(report: Report, program: ProgramResult) -> list[str]:
    return [
        program.name,
        seconds_text(program.forward_seconds),
        *(time_cell(program, m) for m in report.systems),
        bytes_text(program.forward_peak_bytes),
        *(memory_cell(program, m) for m in report.modes),
        copied_cell(program),
    ]
