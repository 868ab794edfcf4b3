"""``mutagrad report`` end to end on a small corpus: the terminal summary and the three files.

The small corpus (tests/report/small_corpus.py) has one program of each kind,
so every number in the outputs is known: strict accepts 1 of 4, poison 2,
snapshot 4; poison raises twice, once genuinely and once as a false alarm.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from pathlib import Path

import pytest

from mutagrad.__main__ import main
from mutagrad.report import (
    MODES,
    REPORT_FILES,
    SCHEMA,
    Outcome,
    load_corpus,
    render_html,
    run_report,
)

SMALL_CORPUS = Path(__file__).with_name("small_corpus.py")
NAMES = ["fresh buffer", "fill after x*x", "rewrite same value", "pure"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Run the CLI once on the small corpus; return (exit status, stdout, output directory).

    40 fuzzer programs: the default 2,000 are programs 0 to 1,999 of seed 0,
    which tests/testing/test_fuzz.py judges already; these are the first 40.
    """
    out = tmp_path_factory.mktemp("report")
    stdout = io.StringIO()  # capsys is function-scoped; this fixture is shared by the module
    with contextlib.redirect_stdout(stdout):
        status = main(
            ["report", "--corpus", str(SMALL_CORPUS), "--out", str(out), "--repeats", "1",
             "--engines", "mutagrad", "--fuzz", "40"]
        )  # fmt: skip
    return status, stdout.getvalue(), out


def test_cli_exits_cleanly_and_writes_the_three_files(written):
    status, _, out = written
    assert status == 0
    for name in REPORT_FILES:
        assert (out / name).is_file() and (out / name).stat().st_size > 0


def test_terminal_headline_states_the_counts(written):
    _, text, _ = written
    lines = text.splitlines()
    assert lines[0].startswith("4 programs and ")  # the lead: what was compared, the result
    assert "no mutagrad value or gradient was silently wrong (of the 4 programs, right in " \
        "forward 4, snapshot 4, poison 2, strict 1)" in lines[0]
    assert lines[1].startswith("- The 4 programs: 3 write arrays in place, 1 do not")
    assert "strict 1/4, poison 2/4, snapshot 4/4, forward 4/4" in text
    assert "Forward mode (jacfwd, every direction in one run) accepts 4 of the 4 programs, " \
        "against strict 1, poison 2, snapshot 4." in text
    assert "Poison errors: 2, of which 1 genuine" in text
    assert "1 false alarms (the gradient would have been right: rewrite same value)" in text
    assert "Times are medians of each call's samples" in text
    assert "\033[" not in text  # not a terminal: no colour


def test_terminal_table_has_a_row_per_program_and_a_column_per_mode(written):
    _, text, _ = written
    table = text.split("\n\n")[1].splitlines()
    assert table[0].split()[:6] == [
        "program", "category", "strict", "poison", "snapshot", "forward"]  # fmt: skip
    rows = {name: line for line in table[2:] for name in NAMES if line.startswith(name + " ")}
    assert set(rows) == set(NAMES)
    assert "MutationError" in rows["fresh buffer"] and rows["fresh buffer"].count(" ok") == 3
    assert "Poisoned (genuine)" in rows["fill after x*x"]
    assert "Poisoned (false alarm)" in rows["rewrite same value"]
    assert rows["pure"].split()[2:6] == ["ok", "ok", "ok", "ok"]


def _load(out: Path) -> dict:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_results_json_schema(written):
    data = _load(written[2])
    assert data["schema"] == SCHEMA
    environment = data["environment"]
    for key, kind in {
        "python": str,
        "numpy": str,
        "mutagrad": str,
        "platform": str,
        "machine": str,
        "cpu_count": int,
        "date": str,
    }.items():
        assert isinstance(environment[key], kind), key
    assert environment["load_average"] is None or len(environment["load_average"]) == 3
    settings = data["settings"]
    assert settings["modes"] == ["strict", "poison", "snapshot", "forward"]
    assert settings["engines"] == ["mutagrad"] and settings["peers"] == []
    assert settings["repeats"] == 1
    assert settings["corpus"] == str(SMALL_CORPUS)
    assert isinstance(settings["time_limit_seconds"], (int, float))
    assert isinstance(data["seconds"], float) and isinstance(data["started"], str)

    mode_keys = {
        "engine": str,
        "outcome": str,
        "cell": str,
        "error_type": (str, type(None)),
        "error_message": (str, type(None)),
        "max_abs_difference": (float, type(None)),
        "value_matches": (bool, type(None)),
        "gradient_missing": bool,
        "bytes_copied": (int, type(None)),
        "seconds": (float, type(None)),
        "sample_seconds": list,
        "spread": type(None),  # one repeat: too few samples to tell
        "noisy": bool,
        "samples": int,
        "calls_per_sample": int,
        "peak_bytes": (int, type(None)),
        "overhead_ratio": (float, type(None)),
        "poison_verdict": (str, type(None)),
        "unchecked_max_abs_difference": (float, type(None)),
        "unchecked_error": (str, type(None)),
    }
    assert [p["name"] for p in data["programs"]] == NAMES
    for program in data["programs"]:
        for key in ("category", "description", "zygote", "source", "note", "arguments"):
            assert isinstance(program[key], str), key
        assert isinstance(program["mutates"], bool)
        assert isinstance(program["forward_seconds"], float) and program["forward_seconds"] > 0
        assert isinstance(program["forward_peak_bytes"], int)
        assert len(program["forward_sample_seconds"]) == 1
        assert program["forward_spread"] is None and program["forward_noisy"] is False
        assert program["reference_error"] is None
        assert set(program["modes"]) == {"strict", "poison", "snapshot", "forward"}
        assert program["peers"] == {}
        for mode, entry in program["modes"].items():
            assert set(entry) == set(mode_keys), mode
            for key, kind in mode_keys.items():
                assert isinstance(entry[key], kind), (program["name"], mode, key, entry[key])
            assert entry["outcome"] in {o.value for o in Outcome if o is not Outcome.PROGRAM_ERROR}
            assert entry["engine"] == "mutagrad"
            if entry["outcome"] == "right":
                assert entry["seconds"] > 0 and entry["overhead_ratio"] > 0
                assert entry["sample_seconds"] == [entry["seconds"]]  # one repeat
                assert entry["peak_bytes"] > 0 and entry["bytes_copied"] >= 0
                assert entry["max_abs_difference"] < 1e-5


def test_results_json_numbers(written):
    data = _load(written[2])
    summary = data["summary"]
    assert summary["programs"] == 4 and summary["mutating"] == 3
    assert summary["accepted"] == {"strict": 1, "poison": 2, "snapshot": 4, "forward": 4}
    assert summary["poison_errors"] == {
        "total": 2,
        "genuine": 1,
        "false_alarm": 1,
        "undetermined": 0,
    }
    assert summary["genuine"] == [["fill after x*x", "poison"]]
    assert summary["false_alarms"] == [["rewrite same value", "poison"]]
    assert summary["wrong"] == [] and summary["crashed"] == [] and summary["timed_out"] == []
    assert summary["program_errors"] == []
    assert summary["systems"]["poison"] == {
        "engine": "mutagrad",
        "label": "mutagrad poison",
        "right": 2,
        "refused": 2,
        "value_differs": 0,
        "gradient_wrong": 0,
        "gradient_missing": 0,
        "crashed": 0,
        "silently_wrong": 0,
        "median_seconds": summary["systems"]["poison"]["median_seconds"],
        "median_overhead": summary["systems"]["poison"]["median_overhead"],
    }
    assert summary["systems"]["poison"]["median_seconds"] > 0
    assert summary["errors_by_mode"]["strict"] == {"MutationError": 3}
    assert "no mutagrad value or gradient was silently wrong" in summary["headline"][0]
    assert summary["by_category"]["seed"] == {
        "programs": 1,
        "accepted": {"strict": 0, "poison": 0, "snapshot": 1, "forward": 1},
        "genuine": 1,
        "false_alarms": 0,
    }
    assert summary["by_category"]["scratch"]["false_alarms"] == 1

    programs = {p["name"]: p for p in data["programs"]}
    genuine = programs["fill after x*x"]["modes"]
    assert genuine["poison"]["error_type"] == "PoisonedCaptureError"
    assert genuine["poison"]["poison_verdict"] == "genuine"
    # Unchecked, the engine reads the zeros fill wrote: gradient 0 instead of 2x.
    assert genuine["poison"]["unchecked_max_abs_difference"] == pytest.approx(4.0, rel=1e-4)
    assert genuine["snapshot"]["outcome"] == "right"
    assert genuine["snapshot"]["bytes_copied"] >= 4 * 8
    alarm = programs["rewrite same value"]["modes"]["poison"]
    assert alarm["poison_verdict"] == "false alarm"
    assert alarm["unchecked_max_abs_difference"] < 1e-6
    assert programs["fresh buffer"]["modes"]["snapshot"]["bytes_copied"] == 0
    for name in NAMES:
        outcomes = [programs[name]["modes"][m]["outcome"] for m in MODES]
        assert "wrong" not in outcomes and "crash" not in outcomes


def test_report_md_has_headline_table_and_environment(written):
    text = (written[2] / "report.md").read_text(encoding="utf-8")
    assert text.startswith("# mutagrad report")
    assert "strict 1/4, poison 2/4, snapshot 4/4" in text
    assert "| program | category | strict | poison | snapshot | forward | Zygote (not measured) |" \
        in text
    assert "| fill after x*x | seed | MutationError | Poisoned (genuine) | ok | ok |" in text
    assert "## Measurements" in text and "## Settings and environment" in text
    assert "- numpy: " in text and "Regenerate with `make report" in text
    assert "No peer AD system ran in this report" in text and ".[peers]" in text
    assert "PyTorch is not compared: it cannot run numpy code unchanged" in text


def test_index_html_is_self_contained_and_has_the_table(written):
    html = (written[2] / "index.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html and "<link" not in html and "@import" not in html
    for attribute, value in re.findall(r'\b(src|href)\s*=\s*"([^"]*)"', html):
        assert value.startswith(("#", "data:")), (attribute, value)
    assert "url(http" not in html
    table = html[html.index('<table id="outcomes">') :]
    table = table[: table.index("</table>")]
    assert table.count("<tr>") == 1 + len(NAMES)
    assert '<td class="result genuine"' in table and '<td class="result false-alarm"' in table
    assert '<td class="result mutation"' in table and '<td class="result ok"' in table
    assert "Zygote (not measured)" in table
    assert "strict 1/4, poison 2/4, snapshot 4/4" in html
    assert 'class="alarm"' not in html


def test_index_html_embeds_two_plots_with_matplotlib(written):
    pytest.importorskip("matplotlib")
    html = (written[2] / "index.html").read_text(encoding="utf-8")
    assert html.count("<svg") == 3
    for name in ("accepted", "overhead", "relative"):
        assert f'id="plot-{name}"' in html
    assert 'id="no-plots"' not in html


def test_index_html_without_matplotlib_says_how_to_get_plots(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    report = run_report(load_corpus(str(SMALL_CORPUS))[3:], repeats=1, sample_seconds=1e-4)
    html = render_html(report)
    assert "<svg" not in html
    assert 'id="no-plots"' in html
    assert "pip install matplotlib" in html and "make report" in html


def test_out_defaults_to_mutagrad_report_in_the_working_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    status = main(["report", "--corpus", str(SMALL_CORPUS), "--select", "pure", "--repeats", "1",
                   "--fuzz", "0"])  # fmt: skip
    assert status == 0
    assert sorted(p.name for p in (tmp_path / "mutagrad-report").iterdir()) == sorted(REPORT_FILES)
    assert "(1 program, " in capsys.readouterr().out


def test_select_matches_names_and_categories(tmp_path, capsys):
    status = main(
        ["report", "--corpus", str(SMALL_CORPUS), "--select", "seed", "--select", "pure",
         "--fuzz", "0",
         "--out", "", "--repeats", "1"]
    )  # fmt: skip
    assert status == 0
    out = capsys.readouterr().out
    assert out.startswith("2 programs")
    assert "wrote" not in out  # --out "" writes no files


def test_select_matching_nothing_and_a_bad_corpus_exit_with_status_2(tmp_path, capsys):
    assert main(["report", "--corpus", str(SMALL_CORPUS), "--select", "nothing"]) == 2
    assert main(["report", "--corpus", str(tmp_path / "missing.py")]) == 2
    assert "no such corpus file" in capsys.readouterr().err


def test_main_without_a_command_exits_with_usage():
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2


WRONG_RULE_CORPUS = """
import numpy as np
import mutagrad
from mutagrad.report import Program


@mutagrad.primitive
def cube(x):
    return np.sum(x**3)


@mutagrad.rrule(cube)
def _cube_rule(x):
    return cube(x), lambda dy: (mutagrad.NoTangent(), dy * 3 * x)  # should be 3 * x**2


def known_wrong(x):
    return cube(x)


def plain_wrong(x):
    return cube(x)


CORPUS = [
    Program(name="known wrong", category="c", description="d", function=known_wrong,
            args=(np.array([1.0, 2.0]),), mutates=False, known_issue="a wrong rule, on purpose"),
    Program(name="plain wrong", category="c", description="d", function=plain_wrong,
            args=(np.array([1.0, 2.0]),), mutates=False),
]
"""


def test_exit_status_is_1_for_a_wrong_gradient_unless_marked_as_a_known_issue(tmp_path, capsys):
    corpus = tmp_path / "wrong_rules.py"
    corpus.write_text(WRONG_RULE_CORPUS)
    common = ["report", "--corpus", str(corpus), "--out", "", "--repeats", "1", "--fuzz", "0"]
    assert main([*common, "--select", "plain"]) == 1
    out = capsys.readouterr().out
    # (forward mode transposes the same wrong pullback: wrong too)
    assert "SILENTLY WRONG values or gradients: plain wrong [strict, poison, snapshot, forward]." \
        in out
    assert "  WRONG    plain wrong [strict, poison, snapshot, forward]: gradient differs" in out
    assert main([*common, "--select", "known"]) == 0
    out = capsys.readouterr().out
    assert (
        "SILENTLY WRONG values or gradients: known wrong [strict, poison, snapshot, forward]. "
        "Each "
        "reproduces a known mutagrad bug" in out
    )
    assert "known wrong [known bug]" in out
    assert (
        "  KNOWN    known wrong [strict, poison, snapshot, forward]: wrong; a wrong rule, on "
        "purpose" in out
    )


def test_both_pages_list_the_programs_that_reproduce_a_known_bug(tmp_path):
    corpus = tmp_path / "wrong_rules.py"
    corpus.write_text(WRONG_RULE_CORPUS)
    out = tmp_path / "out"
    args = ["report", "--corpus", str(corpus), "--out", str(out), "--repeats", "1", "--fuzz", "0"]
    assert main([*args, "--select", "known"]) == 0
    markdown = (out / "report.md").read_text()
    assert "## Known mutagrad bugs reproduced by the corpus" in markdown
    row = (
        "known wrong | strict: WRONG gradient, poison: WRONG gradient, snapshot: WRONG gradient, "
        "forward: WRONG gradient | a wrong rule, on purpose"
    )
    assert row in markdown
    page = (out / "index.html").read_text()
    assert "Known mutagrad bugs reproduced by the corpus" in page
    assert "a wrong rule, on purpose" in page


BROKEN_CORPUS = """
import numpy as np
from mutagrad.report import Program


def vector_return(x):
    return x * 2


def name_error(x):
    return np.sum(x) + undefined_name


def fine(x):
    return np.sum(x**2)


CORPUS = [
    Program(name=f.__name__, category="c", description="d", function=f,
            args=(np.linspace(0.1, 0.6, 6),), mutates=False)
    for f in (vector_return, name_error, fine)
]
"""


def test_errors_in_the_users_programs_get_their_own_heading_and_status_2(tmp_path, capsys):
    corpus = tmp_path / "broken.py"
    corpus.write_text(BROKEN_CORPUS)
    out = tmp_path / "out"
    args = ["report", "--corpus", str(corpus), "--out", str(out), "--repeats", "1", "--fuzz", "0"]
    assert main([*args, "--engines", "mutagrad"]) == 2
    text = capsys.readouterr().out
    assert "BUGS" not in text and "No crash, no timeout." in text
    errors = text[text.index("PROGRAM ERRORS") :].splitlines()
    assert errors[1:3] == [
        "  vector_return returns shape (6,); programs must return a scalar",
        "  name_error fails on plain ndarrays (broken.py, line 11): NameError: name "
        "'undefined_name' is not defined",
    ]
    assert (
        "Accepted (value and gradient match plain numpy and finite differences): strict 1/1" in text
    )
    page = (out / "index.html").read_text()
    assert 'id="program-errors"' in page
    assert "vector_return returns shape (6,); programs must return a scalar" in page
    markdown = (out / "report.md").read_text()
    assert "## Program errors: corpus programs that fail on plain numpy" in markdown
    assert _load(out)["summary"]["program_errors"][0][0] == "vector_return"
