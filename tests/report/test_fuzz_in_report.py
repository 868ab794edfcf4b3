"""The report's headline carries the differential fuzzer's figure beside the corpus."""

from __future__ import annotations

import io
import json
from pathlib import Path

import attrs

from mutagrad.report import load_corpus, render_json, run_report
from mutagrad.report.summary import headline, summarize
from mutagrad.testing.fuzz import FuzzFigures

SMALL_CORPUS = Path(__file__).with_name("small_corpus.py")


def small_report(fuzz_programs: int):
    programs = load_corpus(str(SMALL_CORPUS))[:2]
    return run_report(
        programs,
        corpus=str(SMALL_CORPUS),
        repeats=1,
        sample_seconds=0.0,
        measure_memory=False,
        fuzz_programs=fuzz_programs,
        progress=io.StringIO(),
    )


def test_the_headline_states_the_fuzzer_s_run():
    report = small_report(fuzz_programs=30)
    assert report.fuzz is not None and report.fuzz.programs == 30
    sentences = [s.text for s in headline(summarize(report))]
    assert sentences[0].startswith(f"2 programs and {report.fuzz.judged} random ones of the ")
    fuzz = [s for s in sentences if "The differential fuzzer judged" in s]
    assert fuzz and f"judged {report.fuzz.judged} random" in fuzz[0]
    assert json.loads(render_json(report))["fuzz"]["programs"] == 30


def test_a_wrong_gradient_from_the_fuzzer_is_an_alarm():
    report = small_report(fuzz_programs=0)
    assert report.fuzz is None
    assert not any("differential fuzzer" in s.text for s in headline(summarize(report)))
    found = FuzzFigures(10, 10, 0, {"strict": 0, "poison": 1, "snapshot": 0},
                        {"strict": 0, "poison": 0, "snapshot": 0})  # fmt: skip
    alarms = [s for s in headline(summarize(attrs.evolve(report, fuzz=found))) if s.alarm]
    assert any("poison 1 wrong" in s.text for s in alarms)


def test_the_report_shows_the_fuzzer_s_refusals_by_reason():
    from mutagrad.report import render_markdown

    report = small_report(fuzz_programs=0)
    reason = "MissingRuleError: no rule for np.frob"
    found = FuzzFigures(10, 10, 0, dict.fromkeys(("strict", "poison", "snapshot"), 0),
                        dict.fromkeys(("strict", "poison", "snapshot"), 0),
                        {"poison": {reason: 2}, "snapshot": {reason: 3}})  # fmt: skip
    text = render_markdown(attrs.evolve(report, fuzz=found))
    assert "## What the differential fuzzer's programs were refused for" in text
    assert f"| {reason} | 0 | 2 | 3 |" in text
