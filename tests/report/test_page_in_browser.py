"""index.html in headless Chromium: the page fits a 1400 px window and renders its plots.

The report is run on the bundled programs whose names, categories and outcome
cells are the longest (the widest rows of the outcome table), with every peer
that is installed, so the table has as many columns as a full run. Skipped
without Chromium (``apt-get install chromium``); page_in_browser.py runs the
same check, and keeps the screenshot, on any written report.
"""

from __future__ import annotations

import pytest
from page_in_browser import WINDOW_WIDTH, chromium, page_width, screenshot

from mutagrad.report import (
    DEFAULT_CORPUS,
    default_engines,
    load_corpus,
    run_report,
    write_report,
)
from mutagrad.report.plots import load_matplotlib

pytestmark = pytest.mark.skipif(chromium() is None, reason="needs chromium")

WIDEST_ROWS = (
    "defvjp_of_mutating_function",  # NotDifferentiableError in every mode
    "addone+rrule",  # JAX: TracerArrayConversionError
    "softmax_shift_in_place",  # Poisoned (false alarm)
    "soft_knapsack_vectorised_row",  # the longest category, dynamic-programming
    "fill_diagonal_after_outer",  # NotImplementedError on two peers
    "sorted_weighted_sum",
)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    programs = [p for p in load_corpus(DEFAULT_CORPUS) if p.name in WIDEST_ROWS]
    report = run_report(
        programs,
        corpus=DEFAULT_CORPUS,
        engines=default_engines(),
        repeats=1,
        sample_seconds=1e-4,
        measure_memory=False,
    )
    out = tmp_path_factory.mktemp("page")
    return write_report(report, out)["index.html"]


def test_the_page_fits_a_1400_px_window(page):
    assert page_width(page) <= WINDOW_WIDTH


def test_the_screenshot_shows_a_drawn_page(page, tmp_path):
    picture = screenshot(page, tmp_path / "page.png", height=1600)
    image = pytest.importorskip("PIL.Image").open(picture).convert("RGB")
    assert image.size == (WINDOW_WIDTH, 1600)
    assert len(image.getcolors(1 << 24)) > 50  # text, plots and table cells, not a blank page
    if load_matplotlib() is not None:
        green = (0x81, 0xC7, 0x84)  # the "right" colour, in the bars of the first plot
        top = image.crop((0, 0, WINDOW_WIDTH, 1000))
        assert green in {colour for _, colour in top.getcolors(1 << 24)}
