"""Look at a report page in a real browser: headless Chromium's screenshot and page width.

Run it on any written report to get a picture to look at::

    python tests/report/page_in_browser.py mutagrad-report/index.html shot.png [WIDTH]

It prints how wide the laid-out page is (wider than the window means a
horizontal scroll bar) and writes a screenshot of the top of the page.
test_page_in_browser.py uses the same functions. Chromium comes from Debian
(``apt-get install chromium``); :func:`chromium` is None without it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WINDOW_WIDTH = 1400
"""The window the outcome table must fit, as the issue that asked for the check says."""

# The page itself has no scripts; a copy gets this one, which writes the laid-out width
# where --dump-dom shows it.
MEASURE_WIDTH = "<script>document.title = 'width=' + document.documentElement.scrollWidth;</script>"


def chromium() -> str | None:
    """The path of a Chromium binary, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(browser: str, *arguments: str) -> str:
    done = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )  # fmt: skip
    return done.stdout


def page_width(page: Path, window_width: int = WINDOW_WIDTH) -> int:
    """The laid-out width of ``page`` in a ``window_width`` px window (the scroll width)."""
    browser = chromium()
    assert browser is not None, "no chromium"
    with tempfile.TemporaryDirectory() as directory:
        measured = Path(directory) / "measured.html"
        html = page.read_text(encoding="utf-8").replace("</body>", MEASURE_WIDTH + "</body>")
        measured.write_text(html, encoding="utf-8")
        dom = _run(browser, f"--window-size={window_width},1000", "--dump-dom", measured.as_uri())
    match = re.search(r"<title>width=(\d+)</title>", dom)
    assert match is not None, dom[:500]
    return int(match.group(1))


def screenshot(
    page: Path, picture: Path, window_width: int = WINDOW_WIDTH, height: int = 2400
) -> Path:
    """A PNG of the top ``height`` px of ``page`` in a ``window_width`` px window."""
    browser = chromium()
    assert browser is not None, "no chromium"
    _run(browser, f"--window-size={window_width},{height}", f"--screenshot={picture}",
         page.resolve().as_uri())  # fmt: skip
    return picture


def main(arguments: list[str]) -> int:
    if len(arguments) not in (2, 3):
        print(__doc__)
        return 2
    page, picture = Path(arguments[0]), Path(arguments[1])
    width = int(arguments[2]) if len(arguments) == 3 else WINDOW_WIDTH
    if chromium() is None:
        print("no chromium here: apt-get install chromium")
        return 2
    laid_out = page_width(page, width)
    screenshot(page, picture, width)
    fits = "fits" if laid_out <= width else "DOES NOT FIT"
    print(f"{page}: {laid_out} px wide in a {width} px window ({fits}); screenshot {picture}")
    return 0 if laid_out <= width else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
