"""The seed-scenario report: corpus coverage, verdicts per mode, rendering and the CLI."""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad
from mutagrad.__main__ import main
from mutagrad.report import CORPUS, MODES, Scenario, Status, render_text, run_report, run_scenario
from mutagrad.report.text import WRONG_MARKER


@pytest.fixture(scope="module")
def report():
    return run_report()


def test_corpus_names_are_unique_and_described():
    names = [s.name for s in CORPUS]
    assert len(names) == len(set(names))
    assert all(s.description and s.seed_section for s in CORPUS)


def test_every_scenario_has_a_result_in_every_mode(report):
    assert MODES == ("strict", "poison", "snapshot")
    assert len(report.results) == len(CORPUS) * len(MODES)
    for scenario in CORPUS:
        for mode in MODES:
            assert report.result(scenario.name, mode).mode == mode


def test_no_gradient_is_wrong_and_nothing_crashes(report):
    assert report.failures == (), render_text(report)
    assert all(r.status in (Status.OK, Status.ERROR) for r in report.results)


def test_strict_mode_refuses_every_scenario_that_writes_a_traced_array(report):
    for scenario in CORPUS:
        result = report.result(scenario.name, "strict")
        if scenario.writes_traced_array:
            assert result.cell == "MutationError", scenario.name
        else:
            assert result.cell == "ok", scenario.name


@pytest.mark.parametrize("name", ["f!", "g", "addone"])
def test_poison_mode_accepts_writes_no_pullback_needs(report, name):
    result = report.result(name, "poison")
    assert result.status is Status.OK
    assert result.max_abs_difference is not None and result.max_abs_difference < 1e-6


def test_overwriting_a_saved_value_is_refused_or_snapshotted(report):
    assert report.result("fill after x*x", "poison").cell == "PoisonedCaptureError"
    snapshot = report.result("fill after x*x", "snapshot")
    assert snapshot.cell == "ok"
    assert snapshot.bytes_copied is not None and snapshot.bytes_copied >= 3 * 8


def test_scenarios_without_mutation_are_ok_in_every_mode(report):
    for scenario in CORPUS:
        if not scenario.writes_traced_array:
            assert {report.result(scenario.name, m).cell for m in MODES} == {"ok"}


@mutagrad.primitive
def _cube(x):
    return np.sum(x**3)


@mutagrad.rrule(_cube)
def _cube_rule_that_forgets_the_square(x):
    def pullback(dy):
        return mutagrad.NoTangent(), dy * 3 * x  # should be 3 * x**2

    return _cube(x), pullback


WRONG_RULE = Scenario(
    name="wrong rule",
    description="a custom rule with a deliberately wrong pullback",
    function=_cube,
    args=(np.array([1.0, 2.0]),),
    writes_traced_array=False,
    zygote="",
    seed_section="test only",
)


def test_a_wrong_gradient_is_detected_and_stands_out():
    results = run_scenario(WRONG_RULE)
    assert [r.status for r in results] == [Status.WRONG] * len(MODES)
    assert results[0].max_abs_difference == pytest.approx(6.0, rel=1e-4)  # 12 vs 6 at x = 2

    report = run_report(scenarios=(WRONG_RULE,))
    text = render_text(report)
    assert "WRONG" in text and WRONG_MARKER in text
    assert "BUGS" in text
    assert "strict: 0 ok, 0 refused, 1 WRONG" in text


def test_main_report_prints_the_table(capsys):
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header[:4] == ["scenario", "strict", "poison", "snapshot"]
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:] if line.strip()}
    assert rows["f!"][1:4] == ["MutationError", "ok", "ok"]
    assert "summary: strict:" in out
    assert "WRONG" in out  # only in the legend and the counts
    assert WRONG_MARKER not in out and "BUGS" not in out


def test_main_without_a_command_exits_with_usage(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
