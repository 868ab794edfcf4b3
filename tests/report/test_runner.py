"""The runner: verdicts, genuine vs false-alarm poison errors, crashes, hangs, wrong gradients.

Each test builds a few :class:`Program` records by hand and runs them with the
cheapest settings (one timing sample, no memory measurement) unless it checks
those measurements.
"""

from __future__ import annotations

import io
import time

import attrs
import numpy as np
import pytest

import mutagrad
from mutagrad.core.engine import STATE
from mutagrad.core.modes import MODE, POISON
from mutagrad.report import (
    Outcome,
    PoisonVerdict,
    Program,
    render_html,
    render_markdown,
    render_text,
    run_program,
    run_report,
)
from mutagrad.report import progress as progress_module
from mutagrad.report.progress import LOG_EVERY, Progress, clock
from mutagrad.report.runner import Settings, compare
from mutagrad.report.text import WRONG_MARKER
from mutagrad.testing.limits import ProgramTimeout, limit_available, time_limit

POINT = np.array([0.3, -1.2, 0.8, 2.0])
FAST = Settings(corpus="test", repeats=1, sample_seconds=1e-4, measure_memory=False)


def _program(function, name=None, mutates=True, args=(POINT,)) -> Program:
    return Program(
        name=name or function.__name__,
        category="test",
        description=function.__doc__ or function.__name__,
        function=function,
        args=args,
        mutates=mutates,
    )


def genuine(x):
    """y = x*x; x.fill(0); sum(y): multiply's pullback needs the old x"""
    y = x * x
    x.fill(0)
    return np.sum(y)


def same_value(x):
    """y = sin(x); x[0] = x[0]: the capture is poisoned but keeps its value"""
    y = np.sin(x)
    x[0] = x[0]
    return np.sum(y)


def test_a_genuine_poison_error_is_classified_genuine():
    result = run_program(_program(genuine), FAST)
    poison = result.mode("poison")
    assert poison.outcome is Outcome.REFUSED and poison.error_type == "PoisonedCaptureError"
    assert poison.poison_verdict is PoisonVerdict.GENUINE
    # The unchecked engine reads x after fill(0): gradient 0 where 2x = 4 at x = 2.
    assert poison.unchecked_max_abs_difference == pytest.approx(4.0, rel=1e-4)
    assert result.mode("strict").error_type == "MutationError"
    assert result.mode("snapshot").outcome is Outcome.RIGHT


def test_rewriting_a_captured_value_unchanged_is_a_false_alarm():
    poison = run_program(_program(same_value), FAST).mode("poison")
    assert poison.error_type == "PoisonedCaptureError"
    assert poison.poison_verdict is PoisonVerdict.FALSE_ALARM
    assert poison.unchecked_max_abs_difference < 1e-6


def test_the_unchecked_rerun_leaves_no_trace_and_the_mode_unset():
    run_program(_program(genuine), FAST)
    assert STATE.get() is None
    assert MODE.get() is POISON
    # and the next ordinary call checks its captures again
    with pytest.raises(mutagrad.PoisonedCaptureError):
        mutagrad.gradient(genuine, np.array([1.0, 2.0, 3.0]))


def test_ok_results_are_timed_and_measured():
    def buffer(x):
        b = np.empty_like(x)
        b[:] = np.sin(x)
        return np.sum(b)

    settings = Settings(corpus="test", repeats=3, sample_seconds=1e-3)
    result = run_program(_program(buffer), settings)
    assert result.forward_seconds > 0 and result.forward_peak_bytes > 0
    for mode in ("poison", "snapshot"):
        r = result.mode(mode)
        assert r.outcome is Outcome.RIGHT
        assert r.samples == 3 and r.calls_per_sample >= 1
        assert r.seconds > 0 and r.peak_bytes > 0
        assert result.overhead(mode) == pytest.approx(r.seconds / result.forward_seconds)
        assert r.bytes_copied == 0
    strict = result.mode("strict")
    assert strict.seconds is None and result.overhead("strict") is None


def test_snapshot_reports_the_bytes_it_copied():
    result = run_program(_program(genuine), FAST)
    assert result.mode("snapshot").bytes_copied == POINT.nbytes


@mutagrad.primitive
def _cube(x):
    return np.sum(x**3)


@mutagrad.rrule(_cube)
def _cube_rule_that_forgets_the_square(x):
    def pullback(dy):
        return mutagrad.NoTangent(), dy * 3 * x  # should be 3 * x**2

    return _cube(x), pullback


def test_a_wrong_gradient_is_detected_and_shown_in_red_everywhere():
    wrong = _program(_cube, name="wrong rule", mutates=False, args=(np.array([1.0, 2.0]),))
    report = run_report([wrong], repeats=1, sample_seconds=1e-4, measure_memory=False)
    # (forward mode transposes the same wrong pullback: wrong too)
    assert [r.outcome for r in report.results] == [Outcome.WRONG] * 4
    assert report.results[0].max_abs_difference == pytest.approx(6.0, rel=1e-4)  # 12 vs 6
    assert len(report.failures) == 4

    text = render_text(report, color=True)
    sentence = "SILENTLY WRONG values or gradients: wrong rule [strict, poison, snapshot, forward]."
    assert "\033[31;1m- " + sentence in text
    lead = text.splitlines()[0]
    assert lead.startswith("\033[31;1m1 program was differentiated") and "MUTAGRAD FAILED" in lead
    assert WRONG_MARKER in text and "BUGS" in text
    html = render_html(report, plots=None)
    assert '<li class="alarm">' + sentence in html
    assert '<td class="result wrong"' in html
    md = render_markdown(report)
    assert '<span style="color:#c62828">**' + sentence in md


def test_a_wrong_value_is_a_failure_even_with_a_right_gradient():
    @mutagrad.primitive
    def shifted(x):
        return np.sum(x)

    @mutagrad.rrule(shifted)
    def _shifted_rule(x):
        return np.sum(x) + 1.0, lambda dy: (mutagrad.NoTangent(), dy * np.ones_like(x))

    result = run_program(_program(shifted, mutates=False), FAST)
    r = result.mode("poison")
    assert r.outcome is Outcome.VALUE_DIFFERS and r.value_matches is False
    assert r.cell == "WRONG value"
    assert r.max_abs_difference < 1e-6
    report = run_report([_program(shifted, mutates=False)], repeats=1, measure_memory=False)
    assert len(report.failures) == 4  # a mutagrad value that differs is a bug like a gradient


def _hangs_when_traced(x):
    if isinstance(x, mutagrad.WrappedArray):
        time.sleep(30)
    return np.sum(x)


def _crashes_when_traced(x):
    if isinstance(x, mutagrad.WrappedArray):
        raise RuntimeError("boom")
    return np.sum(x)


def _fails_everywhere(x):
    raise ValueError("not even on plain ndarrays")


def _loops_forever(x):
    while True:
        x = x + 0.0


@pytest.mark.skipif(not limit_available(), reason="SIGALRM needs the main thread")
def test_crashes_and_hangs_are_recorded_and_the_run_goes_on():
    programs = [
        _program(_hangs_when_traced, mutates=False),
        _program(_crashes_when_traced, mutates=False),
        _program(_fails_everywhere, mutates=False),
        _program(_loops_forever, mutates=False),
        _program(genuine),
    ]
    start = time.perf_counter()
    report = run_report(
        programs, repeats=1, time_limit=0.3, sample_seconds=1e-4, measure_memory=False
    )
    assert time.perf_counter() - start < 10
    hang = report.program("_hangs_when_traced")
    assert {r.outcome for r in hang.modes} == {Outcome.TIMEOUT}
    assert "time limit of 0.3 s" in hang.mode("poison").detail
    crash = report.program("_crashes_when_traced")
    assert {r.outcome for r in crash.modes} == {Outcome.CRASH}
    assert crash.mode("strict").error_type == "RuntimeError"
    assert crash.mode("strict").detail == "boom"
    broken = report.program("_fails_everywhere")
    assert broken.reference_error == (
        "_fails_everywhere fails on plain ndarrays (test_runner.py, line "
        f"{_fails_everywhere.__code__.co_firstlineno + 1}): ValueError: not even on plain ndarrays"
    )
    assert {r.cell for r in broken.modes} == {"program error"}
    forever = report.program("_loops_forever")
    assert (
        forever.reference_error
        == "_loops_forever on plain ndarrays exceeded the time limit of 0.3 s"
    )
    assert {r.outcome for r in forever.modes} == {Outcome.PROGRAM_ERROR}
    assert report.program("genuine").mode("snapshot").outcome is Outcome.RIGHT  # went on
    assert [p.name for p in report.program_errors] == ["_fails_everywhere", "_loops_forever"]
    # Errors in the corpus are not mutagrad bugs: they get their own block.
    assert {r.program for r in report.failures} == {"_hangs_when_traced", "_crashes_when_traced"}
    text = render_text(report)
    assert "Crashed: _crashes_when_traced [strict, poison, snapshot, forward]" in text
    assert "timed out: _hangs_when_traced [strict, poison, snapshot, forward]" in text
    errors = text[text.index("PROGRAM ERRORS") : text.index("BUGS")]
    assert "_fails_everywhere fails on plain ndarrays" in errors and "_loops_forever" in errors
    assert STATE.get() is None


@pytest.mark.skipif(not limit_available(), reason="SIGALRM needs the main thread")
def test_time_limit_interrupts_and_restores_the_alarm():
    with pytest.raises(ProgramTimeout), time_limit(0.05):
        time.sleep(5)
    with time_limit(1.0):
        pass
    time.sleep(0.01)  # no stray alarm fires after the block
    with time_limit(None):
        pass


def test_compare_treats_missing_gradients_as_zeros_and_skips_no_derivative():
    assert compare((None, None), [np.zeros(2), None], 1e-4, 1e-5) == (True, 0.0)
    assert compare((np.ones(2),), [np.ones(3)], 1e-4, 1e-5)[0] is False
    assert compare((np.ones(2),), [np.ones(2), None], 1e-4, 1e-5)[0] is False
    matches, worst = compare((np.array([1000.0 + 5e-3]),), [np.array([1000.0])], 1e-4, 1e-5)
    assert matches and worst == pytest.approx(5e-3)


class _FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_on_a_terminal_with_the_time_left_and_erases_itself(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: now[0])
    stream = _FakeTerminal()
    progress = Progress(["seed"] * 6, stream)
    progress.running("first")
    assert "\r[------------------------] 0/6  first" in stream.getvalue()
    for k in range(3):
        now[0] += 2.0
        progress.advance(f"p{k}", "seed")
    # 6 s for 3 programs: 3 more take about 6 s
    assert stream.getvalue().endswith("[############------------] 3/6  p2  0:06 left")
    progress.close()
    text = stream.getvalue()
    assert text.endswith("\r") and "\n" not in text


def test_progress_in_a_log_is_one_line_per_category_once_all_its_programs_are_done():
    stream = io.StringIO()
    programs = [_program(same_value, name=f"p{i}") for i in range(4)]
    categories = ["a", "b", "a", "c"]  # a's programs are not next to each other
    programs = [attrs.evolve(p, category=c) for p, c in zip(programs, categories)]
    run_report(programs, repeats=1, sample_seconds=1e-4, measure_memory=False, progress=stream)
    lines = stream.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "  2/4 programs (b done)",
        "  3/4 programs (a done)",
        "  4/4 programs (c done)",
    ]
    assert "left" not in lines[0]  # too early to tell
    assert ", about " in lines[1] and lines[1].endswith(" left") and lines[-1].endswith(" s")


def test_progress_in_a_log_of_one_big_category_prints_every_few_dozen_programs():
    stream = io.StringIO()
    progress = Progress(["one"] * 120, stream)
    for done in range(120):
        progress.advance(f"p{done}", "one")
    counts = [line.split("/")[0].strip() for line in stream.getvalue().splitlines()]
    assert counts == [str(LOG_EVERY), str(2 * LOG_EVERY), "120"]


def test_a_clock_reads_minutes_and_hours():
    assert [clock(s) for s in (6.4, 75, 3723)] == ["0:06", "1:15", "1:02:03"]
