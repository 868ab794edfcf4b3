"""The command line under bad input: checked before any work, one line, a documented status.

* an unwritable ``--out`` (a file, a place that cannot be created) is found
  before any program runs: exit 3, one line, no traceback;
* the three files are written together: a failure while writing leaves the
  last complete report, and no temporary file;
* options out of range are argparse's usage error (exit 2), for ``report``
  and for the fuzzer;
* Ctrl-C (SIGINT to the report's process alone, as a terminal's Ctrl-C may
  not reach the workers) ends a run of worker processes within seconds,
  with one line and exit 130, the queue cancelled;
* a reader that goes away (``| head``) gets no traceback;
* NO_COLOR turns the colours off; a narrow terminal gets a table cut to fit.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mutagrad import __main__ as cli
from mutagrad.__main__ import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_IO,
    EXIT_OK,
    EXIT_USAGE,
    main,
)
from mutagrad.report import REPORT_FILES, load_corpus, render_text, run_report, write_report
from mutagrad.testing import fuzz

SMALL_CORPUS = Path(__file__).with_name("small_corpus.py")
ROOT = Path(__file__).parents[2]

# A corpus whose programs each take a second: a run of it is still going when interrupted.
SLOW_CORPUS = """
import os
import time
import numpy as np
from mutagrad.report import Program

def slow(x):
    open(os.environ["MUTAGRAD_TEST_STARTED"], "a").close()  # the test waits for the first call
    time.sleep(0.5)
    return np.sum(x * x)

CORPUS = [Program(name=f"slow {k}", category="slow", description="sleeps", function=slow,
                  mutates=False,
                  args=(np.ones(2),)) for k in range(40)]
"""


def run_cli(*arguments: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mutagrad", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        **options,
    )


@pytest.mark.parametrize("where", ["a file", "/proc"])
def test_an_unwritable_out_is_refused_before_any_work(tmp_path, where):
    if where == "a file":
        out = tmp_path / "taken.txt"
        out.write_text("mine")
    else:
        if not Path("/proc/self").is_dir():
            pytest.skip("no /proc here")
        out = Path("/proc/mutagrad-report")
    start = time.perf_counter()
    done = run_cli("report", "--corpus", str(SMALL_CORPUS), "--out", str(out), "--fuzz", "0")
    assert done.returncode == EXIT_IO
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"mutagrad report: --out {out}")
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert time.perf_counter() - start < 30  # no program ran (the whole report takes longer)
    if where == "a file":
        assert out.read_text() == "mine"


def test_a_failure_while_writing_leaves_the_last_complete_report(tmp_path, monkeypatch):
    programs = [p for p in load_corpus(str(SMALL_CORPUS)) if p.name == "pure"]
    report = run_report(programs, repeats=1, sample_seconds=1e-4, progress=io.StringIO())
    write_report(report, tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in REPORT_FILES}

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("mutagrad.report.os.replace", broken)
    with pytest.raises(OSError, match="No space"):
        write_report(report, tmp_path)
    assert {name: (tmp_path / name).read_bytes() for name in REPORT_FILES} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(REPORT_FILES)  # no leftovers
    mode = (tmp_path / "report.md").stat().st_mode & 0o777
    assert mode & 0o044 == 0o044  # readable by others, as open() would have made it


@pytest.mark.parametrize(
    "option",
    [["--repeats", "0"], ["--repeats", "-1"], ["--time-limit", "-5"], ["--time-limit", "nan"],
     ["--fuzz", "-1"], ["--generated", "-2"], ["--jobs", "0"]],
    ids=lambda o: " ".join(o),
)  # fmt: skip
def test_options_out_of_range_are_usage_errors(option, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["report", "--corpus", str(SMALL_CORPUS), *option])
    assert exit_info.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("usage:") and f"argument {option[0]}" in err


@pytest.mark.parametrize("option", [["--jobs", "0"], ["--count", "-5"], ["--time-limit", "-1"]])
def test_the_fuzzers_options_out_of_range_are_usage_errors(option, capsys):
    with pytest.raises(SystemExit) as exit_info:
        fuzz.main(option)
    assert exit_info.value.code == EXIT_USAGE
    assert f"argument {option[0]}" in capsys.readouterr().err


def test_ctrl_c_cancels_the_queue_and_exits_130_with_one_line(tmp_path):
    corpus = tmp_path / "slow_corpus.py"
    corpus.write_text(SLOW_CORPUS)
    started = tmp_path / "started"
    process = subprocess.Popen(
        [sys.executable, "-m", "mutagrad", "report", "--corpus", str(corpus), "--jobs", "2",
         "--fuzz", "0", "--repeats", "1", "--out", str(tmp_path / "out")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
             "MUTAGRAD_TEST_STARTED": str(started)},
    )  # fmt: skip
    deadline = time.perf_counter() + 60
    while not started.exists() and time.perf_counter() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # the workers are some way into the 40 programs (0.5 s each, and more)
    sent = time.perf_counter()
    process.send_signal(signal.SIGINT)  # the parent alone: its workers go on unless stopped
    stdout, stderr = process.communicate(timeout=60)
    waited = time.perf_counter() - sent
    assert process.returncode == EXIT_INTERRUPTED, stderr
    assert stderr.strip() == "mutagrad report: interrupted"
    assert stdout == ""
    assert waited < 5, f"took {waited:.1f} s to stop"  # the queue would take about 10 s more
    assert not (tmp_path / "out").exists()  # made for the run, removed again: nothing written


def test_a_reader_that_goes_away_gets_no_traceback():
    process = subprocess.Popen(
        [sys.executable, "-m", "mutagrad", "coverage"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    process.stdout.close()  # as `| head` does once it has its lines
    stderr = process.stderr.read().decode()
    process.wait(timeout=120)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr
    assert process.returncode == EXIT_BROKEN_PIPE


def test_no_color_turns_the_colours_off(monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert cli._use_color("auto")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not cli._use_color("auto")
    assert cli._use_color("always")  # an explicit choice wins, as no-color.org says
    monkeypatch.setenv("NO_COLOR", "")  # set but empty: colours stay on
    assert cli._use_color("auto")


def test_a_narrow_terminal_gets_the_table_cut_to_fit(capsys):
    programs = load_corpus(str(SMALL_CORPUS))
    report = run_report(programs, repeats=1, sample_seconds=1e-4, progress=io.StringIO())
    whole = render_text(report).split("\n\n")[1].splitlines()
    cut = render_text(report, width=70).split("\n\n")[1].splitlines()
    assert max(len(line) for line in whole) > 70
    assert all(len(line) <= 70 for line in cut[:-1])
    assert "…" in "\n".join(cut) and cut[-1].startswith("(cells cut to fit 70 columns")
    for short, full in zip(cut[2:-1], whole[2:], strict=True):  # every row, names cut at most
        assert full.startswith(short.split()[0].rstrip("…"))


def test_version_and_help_work_from_the_installed_command():
    script = Path(sys.executable).with_name("mutagrad")  # pip puts it beside the interpreter
    if not script.exists():
        pytest.skip("mutagrad is not installed in this environment (only importable)")
    for arguments, says in ((["--version"], "mutagrad 0"), (["report", "--help"], "--out DIR")):
        done = subprocess.run([str(script), *arguments], capture_output=True, text=True,
                              timeout=120, check=False)  # fmt: skip
        assert done.returncode == EXIT_OK and says in done.stdout, done.stderr


def test_the_exit_statuses_are_documented_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    for status in (EXIT_OK, 1, EXIT_USAGE, EXIT_IO, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE):
        assert f"| {status} |" in readme
        assert f"* {status} (" in cli.__doc__


def test_a_corpus_that_raises_while_loading_is_a_usage_error(tmp_path, capsys):
    corpus = tmp_path / "broken_corpus.py"
    corpus.write_text("import numpy as np\nCORPUS = [1 / 0]\n")
    assert main(["report", "--corpus", str(corpus), "--out", ""]) == EXIT_USAGE
    assert capsys.readouterr().err == (
        f"mutagrad report: loading {corpus} raised ZeroDivisionError: division by zero (line 2)\n"
    )
