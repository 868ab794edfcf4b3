"""The report at scale: generated programs, --no-timing, --jobs N and a dask.distributed cluster.

Every run here is small (a few programs, two workers) so that the file takes
seconds; the 1000-program run the README quotes is made by hand.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from mutagrad.__main__ import main
from mutagrad.report import (
    Outcome,
    load_corpus,
    render_html,
    render_json,
    render_markdown,
    render_text,
    run_report,
)
from mutagrad.report.generated import GENERATED_CATEGORY, draw, draw_program, listing
from mutagrad.report.parallel import DASK_HINT, default_jobs
from mutagrad.report.summary import headline, summarize
from mutagrad.report.tables import MISSING, NOT_TIMED, memory_row, time_row
from mutagrad.testing.limits import ProgramTimeout, time_limit

SMALL_CORPUS = Path(__file__).with_name("small_corpus.py")

HANGING_CORPUS = """
import numpy as np
import mutagrad
from mutagrad.report import Program


def sleeps_when_traced(x):
    if isinstance(x, mutagrad.WrappedArray):
        import time
        time.sleep(30)
    return np.sum(x)


def loops_when_traced(x):
    while isinstance(x, mutagrad.WrappedArray):
        pass
    return np.sum(x)


def fine(x):
    y = np.sin(x)
    y[0] = 1.0
    return np.sum(y * x)


POINT = np.array([0.5, -1.0, 2.0])
CORPUS = [
    Program(name=f.__name__, category="test", description=f.__name__, function=f,
            args=(POINT,), mutates=f is fine)
    for f in (sleeps_when_traced, loops_when_traced, fine)
]
"""


def _report(programs, corpus, **options):
    options.setdefault("repeats", 1)
    options.setdefault("sample_seconds", 0.0)
    options.setdefault("measure_memory", False)
    return run_report(programs, corpus=corpus, progress=io.StringIO(), **options)


def verdicts(report) -> list[tuple]:
    """Everything a report says about each program but the timings."""
    return [
        (
            p.name,
            p.program.code,
            p.reference_error,
            [
                (r.mode, r.outcome, r.error_type, r.detail, r.max_abs_difference,
                 r.value_matches, r.bytes_copied, r.poison_verdict, r.unchecked_max_abs_difference)
                for r in p.results
            ],
        )
        for p in report.programs
    ]  # fmt: skip


# ---------------------------------------------------------------------------
# Generated programs


def test_a_draw_is_reproducible_and_independent_of_the_others():
    first = [draw((7, k)) for k in range(4)]
    again = [draw((7, k)) for k in (3, 2, 1, 0)][::-1]  # another order, the same programs
    for a, b in zip(first, again):
        assert a.code == b.code and a.mutates == b.mutates
        assert all(np.array_equal(x, y) for x, y in zip(a.args, b.args))
    assert len({d.code for d in first}) == 4  # four different programs
    other_seed = [draw((8, k)).code for k in range(4)]
    assert other_seed != [d.code for d in first]


def test_a_draw_is_the_same_in_a_fresh_process():
    here = [draw((5, k)).code for k in range(4)]
    script = (
        "from mutagrad.report.generated import draw; print([draw((5, k)).code for k in range(4)])"
    )
    fresh = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert fresh.strip() == repr(here)


def test_a_drawn_program_runs_on_numpy_and_shows_its_source():
    program = draw_program(0, 3)
    assert program.name == "generated-3" and program.category == GENERATED_CATEGORY
    assert program.code.startswith("def f(") and "seed 0, draw 3" in program.source
    value = program.function(*[a.copy() for a in program.args])
    assert np.ndim(value) == 0 and np.isfinite(value)
    # The listing (imports, text, arguments) reproduces the program's value in a bare namespace.
    namespace: dict = {}
    exec("\n".join(listing(program)), namespace)
    arguments = [namespace[f"a{k}"] for k in range(len(program.args))]
    assert namespace["f"](*arguments) == value


def test_drawn_programs_are_the_fuzzers_plain_numpy_programs():
    drawn = [draw_program(4, k) for k in range(40)]
    for program in drawn:
        assert "mutagrad" not in program.code and "def make" not in program.code
        assert all(a.dtype == np.float64 for a in program.args)
    assert sum(p.mutates for p in drawn) > 10  # most write in place, not all


def test_generated_programs_are_judged_and_shown_in_every_output():
    report = _report([], "", generated=6, seed=1, timing=False)
    assert [p.name for p in report.programs] == [f"generated-{k}" for k in range(6)]
    assert [p.program.code for p in report.programs] == [draw((1, k)).code for k in range(6)]
    assert report.settings.generated == 6 and report.settings.seed == 1
    assert not report.failures  # mutagrad is never silently wrong on them
    outcomes = {r.outcome for p in report.programs for r in p.modes}
    assert Outcome.RIGHT in outcomes and outcomes <= {Outcome.RIGHT, Outcome.REFUSED}
    sentences = [s.text for s in headline(summarize(report))]
    assert any("6 of them are random mutating programs" in s and "seed 1" in s for s in sentences)
    html, markdown = render_html(report, plots=None), render_markdown(report)
    document = json.loads(render_json(report))
    for p in report.programs:
        first_statement = p.program.code.splitlines()[1].strip()
        assert f'<details id="{p.name}">' in html
        assert first_statement.replace("'", "&#x27;") in html
        assert first_statement in markdown
    assert [e["code"] for e in document["programs"]] == [p.program.code for p in report.programs]
    assert document["settings"]["generated"] == 6 and document["settings"]["seed"] == 1
    assert "differential fuzzer's generator with seed 1" in markdown
    text = render_text(report)  # the terminal counts them instead of listing 6 rows
    assert "generated-0" not in text and "(and 6 generated programs" in text


def test_the_first_programs_of_a_larger_draw_are_the_same():
    small = _report([], "", generated=2, timing=False, fuzz_programs=0)
    large = _report([], "", generated=4, timing=False, fuzz_programs=0)
    assert verdicts(small) == verdicts(large)[:2]


# ---------------------------------------------------------------------------
# --no-timing


def test_without_timing_every_time_and_memory_cell_is_absent():
    programs = load_corpus(str(SMALL_CORPUS))
    report = _report(programs, str(SMALL_CORPUS), timing=False, measure_memory=True)
    assert report.settings.timing is False and report.settings.measure_memory is False
    for p in report.programs:
        assert p.forward_seconds is None and p.reference_seconds is None
        for r in p.results:
            assert r.seconds is None and r.sample_seconds == () and r.peak_bytes is None
        assert [cell for cell in time_row(report, p)[1:]] == [[MISSING]] * 5  # plain, 4 columns
        assert set(memory_row(report, p)[1:-1]) == {MISSING}  # bytes copied stays
    timed = _report(programs[:1], str(SMALL_CORPUS))
    assert timed.programs[0].forward_seconds is not None  # the default still times
    html = render_html(report)
    assert NOT_TIMED in html and 'id="plot-overhead"' not in html
    assert "not timed (--no-timing)" in render_markdown(report)
    assert json.loads(render_json(report))["settings"]["timing"] is False
    # The verdicts are those of a timed run.
    assert verdicts(report)[:1] == verdicts(timed)


# ---------------------------------------------------------------------------
# --jobs


def test_worker_processes_give_the_verdicts_of_this_process():
    programs = load_corpus(str(SMALL_CORPUS))
    options = {"generated": 6, "seed": 2, "timing": False, "fuzz_programs": 20}
    here = _report(programs, str(SMALL_CORPUS), jobs=1, **options)
    workers = _report(programs, str(SMALL_CORPUS), jobs=2, **options)
    assert here.settings.jobs == 1 and workers.settings.jobs == 2
    assert verdicts(workers) == verdicts(here)
    assert workers.fuzz == here.fuzz and workers.fuzz.programs == 20 and workers.fuzz.seed == 2
    assert len(workers.programs) == len(programs) + 6
    assert [p.program for p in workers.programs[:4]] == list(programs)  # the caller's records
    assert "2 worker processes" in render_markdown(workers)


def test_a_hang_in_a_worker_process_is_a_timeout_and_the_run_goes_on(tmp_path):
    corpus = tmp_path / "hanging.py"
    corpus.write_text(HANGING_CORPUS)
    programs = load_corpus(str(corpus))
    start = time.perf_counter()
    report = _report(programs, str(corpus), jobs=2, time_limit=0.3)
    assert time.perf_counter() - start < 20
    for name in ("sleeps_when_traced", "loops_when_traced"):
        assert {r.outcome for r in report.program(name).modes} == {Outcome.TIMEOUT}
    assert report.program("fine").mode("poison").outcome is Outcome.RIGHT


def test_a_program_a_worker_cannot_load_is_refused_before_the_run():
    program = load_corpus(str(SMALL_CORPUS))[0]
    with pytest.raises(ValueError, match="not in the corpus"):
        _report([program], "no.such.corpus", jobs=2, generated=1, timing=False)


def test_the_cli_runs_generated_programs_in_workers_without_timing(tmp_path, capsys):
    out = tmp_path / "out"
    status = main(
        ["report", "--corpus", str(SMALL_CORPUS), "--select", "pure", "--generated", "4",
         "--seed", "3", "--no-timing", "--jobs", "2", "--fuzz", "0", "--engines", "mutagrad",
         "--out", str(out)]
    )  # fmt: skip
    assert status == 0
    printed = capsys.readouterr()
    assert "(5 programs," in printed.out and "(and 4 generated programs" in printed.out
    assert "drawing 4 programs" in printed.err
    document = json.loads((out / "results.json").read_text())
    assert [p["name"] for p in document["programs"]] == ["pure"] + [
        f"generated-{k}" for k in range(4)
    ]
    assert document["programs"][2]["code"] == draw((3, 1)).code
    assert document["settings"]["jobs"] == 2 and document["settings"]["timing"] is False
    assert "generated-3" in (out / "index.html").read_text()


def test_jobs_defaults_to_the_cpu_count_and_must_be_positive(capsys):
    from mutagrad.__main__ import build_parser

    assert build_parser().parse_args(["report"]).jobs == default_jobs() >= 1
    with pytest.raises(SystemExit):
        build_parser().parse_args(["report", "--jobs", "0"])
    assert "must be 1 or more" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# The time limit outside the main thread (dask runs its tasks in threads)


def test_the_time_limit_interrupts_a_thread_and_leaves_nothing_behind():
    seen: dict[str, object] = {}

    def work():
        start = time.perf_counter()
        try:
            with time_limit(0.2):
                while True:
                    pass
        except ProgramTimeout as timeout:
            seen["timeout"] = str(timeout)
            seen["seconds"] = time.perf_counter() - start
        with time_limit(0.3):
            time.sleep(0.05)
        time.sleep(0.4)  # a stray timeout would arrive here
        seen["after"] = True

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(10)
    assert seen.get("timeout") == "exceeded the time limit of 0.2 s"
    assert 0.2 <= seen["seconds"] < 2
    assert seen.get("after") is True


# ---------------------------------------------------------------------------
# --scheduler: a dask.distributed cluster


def test_a_dask_cluster_gives_the_verdicts_of_this_process(tmp_path):
    distributed = pytest.importorskip("distributed")
    corpus = tmp_path / "hanging.py"
    corpus.write_text(HANGING_CORPUS)
    # Not the program that sleeps: a thread's time limit arrives between bytecodes, after
    # a call into C (time.sleep) returns.
    programs = [p for p in load_corpus(str(corpus)) if p.name != "sleeps_when_traced"]
    options = {"generated": 4, "timing": False, "time_limit": 0.3}
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        on_cluster = _report(programs, str(corpus), scheduler=cluster.scheduler_address, **options)
    here = _report(programs, str(corpus), jobs=1, **options)
    assert on_cluster.settings.scheduler == cluster.scheduler_address
    assert verdicts(on_cluster) == verdicts(here)
    # The worker threads have a time limit too.
    assert {r.outcome for r in on_cluster.program("loops_when_traced").modes} == {Outcome.TIMEOUT}
    assert "dask.distributed cluster" in render_markdown(on_cluster)


def test_without_dask_the_scheduler_option_says_how_to_install_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    status = main(
        ["report", "--corpus", str(SMALL_CORPUS), "--select", "pure", "--fuzz", "0",
         "--scheduler", "tcp://127.0.0.1:8786", "--out", ""]
    )  # fmt: skip
    assert status == 2
    error = capsys.readouterr().err
    assert DASK_HINT in error and 'pip install "dask[distributed]"' in error
