"""Timings a reader can trust: the spread shown, noisy times marked and left out of medians.

A time is the median of its samples; its spread is the width of the samples'
middle half over that median. A time spread wider than NOISY_SPREAD (other
work took the CPU for some samples) is marked ``~`` in the tables and drawn
hollow in the plots, and left out of every median, so that the headline's,
the tables' and the plots' medians are the same numbers. A busy machine (the
load average at the start at least half the CPUs) is said in the headline.
"""

from __future__ import annotations

import io
import statistics
from pathlib import Path

import attrs
import pytest

from mutagrad.report import load_corpus, render_html, render_markdown, run_report
from mutagrad.report.plots import load_matplotlib, overhead_plot, ratio_label
from mutagrad.report.runner import NOISY_SPREAD, is_noisy, spread
from mutagrad.report.summary import headline, overhead_ratios, summarize

SMALL_CORPUS = Path(__file__).with_name("small_corpus.py")

BIMODAL = (89e-6, 6.5e-6, 89e-6, 89e-6, 7.1e-6)  # the plain-forward samples of issue 24
ONE_OUTLIER = (10.0, 10.2, 10.3, 10.5, 19.0)


def test_spread_reads_the_middle_half_of_the_samples():
    assert spread(BIMODAL) > NOISY_SPREAD and is_noisy(BIMODAL)
    assert spread(ONE_OUTLIER) == pytest.approx(0.3 / 10.3) and not is_noisy(ONE_OUTLIER)
    assert spread((1.0, 2.0)) is None and not is_noisy((1.0, 2.0))  # too few to tell


@pytest.fixture(scope="module")
def report():
    programs = load_corpus(str(SMALL_CORPUS))
    timed = run_report(programs, repeats=3, sample_seconds=1e-4, progress=io.StringIO())

    def steady(result):  # this machine's own noise must not decide the test
        samples = (result.seconds,) * 3 if result.seconds else ()
        return attrs.evolve(result, sample_seconds=samples)

    programs = []
    for p in timed.programs:
        p = attrs.evolve(p, modes=tuple(steady(r) for r in p.modes),
                         forward_sample_seconds=(p.forward_seconds,) * 3)  # fmt: skip
        if p.name == "pure":  # its plain forward time was taken while other work ran
            p = attrs.evolve(p, forward_sample_seconds=BIMODAL,
                             forward_seconds=statistics.median(BIMODAL))  # fmt: skip
        programs.append(p)
    return attrs.evolve(timed, programs=tuple(programs))


def test_a_noisy_time_is_left_out_of_the_medians_and_marked(report):
    summary = summarize(report)
    readable, noisy = overhead_ratios(report, "snapshot")
    pure = report.program("pure")
    assert noisy == [pure.overhead("snapshot")] and len(readable) == 3
    assert summary.median_overhead_accepted["snapshot"] == statistics.median(readable)
    # a time per program (plain numpy) and per accepted result; noisy: pure's plain time
    assert summary.timed == 4 + sum(summary.accepted.values()) and summary.noisy == 1
    sentences = [s.text for s in headline(summary)]
    assert any(f"{summary.noisy} of the {summary.timed} measured are too spread" in s
               for s in sentences)  # fmt: skip
    html = render_html(report, plots=None)
    row = html[html.index('<table id="measurements">') :]
    row = row[row.index("<td>pure</td>") :].split("</tr>")[0]
    assert '<td class="time noisy"' in row and ">~" in row
    assert "~" in render_markdown(report).split("## Measurements")[1].split("| pure |")[1]


def test_the_plot_states_the_headlines_median(report):
    figure = load_matplotlib()
    if figure is None:
        pytest.skip("needs matplotlib")
    svg = overhead_plot(report, figure)
    summary = summarize(report)
    for system in report.systems:
        median = summary.median_overhead_accepted[system]
        if median is not None:
            assert f"median {ratio_label(median)}" in svg


@pytest.mark.parametrize(("load", "busy"), [(3.7, True), (0.2, False)])
def test_a_busy_machine_is_said_in_the_headline(report, load, busy):
    environment = {**report.environment, "load_average": [load, load, load], "cpu_count": 2}
    summary = summarize(attrs.evolve(report, environment=environment))
    assert summary.busy is busy
    said = any("The machine was busy" in s.text and "load average 3.7 on 2 CPUs" in s.text
               for s in headline(summary))  # fmt: skip
    assert said is busy
