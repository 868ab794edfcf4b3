"""index.html in headless Chromium: every table and chart fits a 1400 and a 1024 px window.

The report is run on the bundled programs whose names, categories and outcome
cells are the longest (the widest rows of the outcome table), and given the
three peer columns of a full run whether or not the peers are installed: each
peer's results are the widest a peer gave in the last full run (a long error
name, a WRONG gradient, a time with its ratio), so the tables are as wide as
a reader's. Each table and chart is measured where it ends in the window
(``getBoundingClientRect``, which a scrolled box does not clip): the page's
own width alone would call a table that scrolls inside its box a fit.
Skipped without Chromium (``apt-get install chromium``); page_in_browser.py
runs the same measurement, and keeps a screenshot, on any written report.
"""

from __future__ import annotations

import attrs
import pytest
from page_in_browser import WINDOW_WIDTHS, chromium, layout, screenshot

from mutagrad.report import (
    DEFAULT_CORPUS,
    PEERS,
    MeasuredResult,
    Outcome,
    load_corpus,
    run_report,
    write_report,
)
from mutagrad.report.plots import load_matplotlib

pytestmark = pytest.mark.skipif(chromium() is None, reason="needs chromium")

WIDEST_ROWS = (
    "defvjp_of_mutating_function",  # NotDifferentiableError in every mode
    "addone+rrule",  # a seed scenario: a wheel, without examples/, checks the others
    "softmax_shift_in_place",  # Poisoned (false alarm)
    "soft_knapsack_vectorised_row",  # the longest category, dynamic-programming
    "fill_diagonal_after_outer",
    "sorted_weighted_sum",
)

# What the peers gave in the last full run, widest cells first: each program gets them in turn.
PEER_RESULTS = (
    {"outcome": Outcome.REFUSED, "error_type": "TracerArrayConversionError",
     "detail": "The numpy.ndarray conversion method __array__() was called on traced "
     "array with shape float64[3]"},
    {"outcome": Outcome.RIGHT, "seconds": 0.0123, "sample_seconds": (0.0121, 0.0123, 0.0190)},
    {"outcome": Outcome.WRONG, "max_abs_difference": 1.5, "value_matches": True,
     "gradient_missing": True, "seconds": 2.5e-4, "sample_seconds": (2.4e-4, 2.5e-4, 2.6e-4)},
    {"outcome": Outcome.VALUE_DIFFERS, "max_abs_difference": 3.0, "value_matches": False,
     "seconds": 1.2e-4, "sample_seconds": (1.1e-4, 1.2e-4, 1.3e-4)},
    {"outcome": Outcome.REFUSED, "error_type": "NotImplementedError",
     "detail": "VJP of fill_diagonal wrt argnum 0 not defined"},
)  # fmt: skip


def with_every_peer(report):
    """``report`` with a column for each peer (jax, autograd, mygrad) of a full run."""
    programs = []
    for k, p in enumerate(report.programs):
        peers = tuple(
            MeasuredResult(program=p.name, mode=name, engine=name,
                       **PEER_RESULTS[(k + j) % len(PEER_RESULTS)])
            for j, name in enumerate(PEERS)
        )  # fmt: skip
        programs.append(attrs.evolve(p, peers=peers))
    settings = attrs.evolve(report.settings, engines=(*report.settings.engines, *PEERS))
    return attrs.evolve(report, settings=settings, programs=tuple(programs))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    programs = [p for p in load_corpus(DEFAULT_CORPUS) if p.name in WIDEST_ROWS]
    report = run_report(
        programs, corpus=DEFAULT_CORPUS, repeats=3, sample_seconds=1e-4, measure_memory=True
    )
    out = tmp_path_factory.mktemp("page")
    return write_report(with_every_peer(report), out)["index.html"]


@pytest.mark.parametrize("width", WINDOW_WIDTHS)
def test_every_table_and_chart_fits_the_window(page, width):
    laid_out = layout(page, width)
    tables = [e for e in laid_out.elements if e.tag == "table"]
    charts = [e for e in laid_out.elements if e.tag in ("svg", "img")]
    assert len(tables) >= 6  # outcomes, per system, refusals, categories, poison, measurements
    assert "measurements" in {e.id for e in tables}
    if load_matplotlib() is not None:
        assert len(charts) >= 3
    too_wide = [f"{e.name}: {e.left}..{e.right} px" for e in laid_out.too_wide()]
    assert too_wide == [], f"wider than the {width} px window: {too_wide}"
    assert laid_out.page <= laid_out.window


def test_the_screenshot_shows_a_drawn_page(page, tmp_path):
    width = WINDOW_WIDTHS[0]
    picture = screenshot(page, tmp_path / "page.png", width, height=1600)
    image = pytest.importorskip("PIL.Image").open(picture).convert("RGB")
    assert image.size == (width, 1600)
    assert len(image.getcolors(1 << 24)) > 50  # text, plots and table cells, not a blank page
    if load_matplotlib() is not None:
        green = (0x81, 0xC7, 0x84)  # the "right" colour, in the bars of the first plot
        top = image.crop((0, 0, width, 1000))
        assert green in {colour for _, colour in top.getcolors(1 << 24)}
