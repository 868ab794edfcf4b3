"""Look at a report page in a real browser: what a reader sees of each table and chart.

Run it on any written report::

    python tests/report/page_in_browser.py mutagrad-report/index.html shot.png [WIDTH ...]

For each window width (default: 1400 and 1024 px) it prints how wide the
laid-out page is and, for every table and chart, how far its right edge
reaches: an element wider than the window is cut off or hidden in a scrolled
box, whatever the page's own width says. It writes a screenshot of the top of
the page at the first width. test_page_in_browser.py uses the same
functions. Chromium comes from Debian (``apt-get install chromium``);
:func:`chromium` is None without it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs

WINDOW_WIDTHS = (1400, 1024)
"""A desktop window and a small laptop's: every table and chart must fit both."""

# The page itself has no scripts; the measured copy gets this one. It writes, where
# --dump-dom shows it, the window's width, the page's laid-out width and, for every table
# and every top-level chart (svg, img), its extent: getBoundingClientRect ignores the
# clipping of a scrolled box, so a table in an overflow-x box is measured at its full width.
MEASURE = """<script>
(function () {
  var items = [];
  var heading = function (el) {
    var node = el;
    while (node && node !== document.body) {
      var previous = node.previousElementSibling;
      while (previous) {
        if (/^H[1-6]$/.test(previous.tagName)) { return previous.textContent.trim(); }
        previous = previous.previousElementSibling;
      }
      node = node.parentElement;
    }
    return "";
  };
  document.querySelectorAll("table, svg, img").forEach(function (el) {
    if (el.parentElement && el.parentElement.closest("svg")) { return; }
    var box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) { return; }  /* folded away: not shown */
    var holder = el.closest("[id]");
    items.push({
      tag: el.tagName.toLowerCase(),
      id: holder ? holder.id : "",
      heading: heading(el),
      left: Math.round(box.left),
      right: Math.round(box.right),
      width: Math.round(Math.max(box.width, el.scrollWidth))
    });
  });
  var out = document.createElement("pre");
  out.id = "page-measured";
  out.textContent = JSON.stringify({
    window: document.documentElement.clientWidth,
    page: document.documentElement.scrollWidth,
    items: items
  });
  document.body.appendChild(out);
})();
</script>"""


@attrs.frozen
class Element:
    """One table or chart as laid out: where it starts and ends, in px from the window's left."""

    tag: str
    id: str
    heading: str
    left: int
    right: int
    width: int

    @property
    def name(self) -> str:
        return f"{self.tag}#{self.id}" if self.id else f"{self.tag} under {self.heading!r}"


@attrs.frozen
class Layout:
    """The page laid out in a window ``window`` px wide."""

    window: int
    page: int
    elements: tuple[Element, ...]

    def too_wide(self) -> list[Element]:
        """The tables and charts a reader cannot see whole without scrolling sideways."""
        return [e for e in self.elements if e.right > self.window or e.left < 0]


def chromium() -> str | None:
    """The path of a Chromium binary, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(browser: str, *arguments: str) -> str:
    with tempfile.TemporaryDirectory() as profile:  # a fresh profile: no state between runs
        done = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", *arguments],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )  # fmt: skip
    return done.stdout


def layout(page: Path, window_width: int) -> Layout:
    """How ``page`` lays out in a window ``window_width`` px wide."""
    browser = chromium()
    assert browser is not None, "no chromium"
    with tempfile.TemporaryDirectory() as directory:
        measured = Path(directory) / "measured.html"
        html = page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>")
        measured.write_text(html, encoding="utf-8")
        dom = _run(browser, f"--window-size={window_width},1000", "--dump-dom", measured.as_uri())
    found = re.search(r'<pre id="page-measured">(.*?)</pre>', dom, re.DOTALL)
    assert found is not None, dom[:500]
    text = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    data = json.loads(text.replace("&amp;", "&"))
    elements = tuple(Element(**item) for item in data["items"])
    return Layout(window=data["window"], page=data["page"], elements=elements)


def screenshot(page: Path, picture: Path, window_width: int, height: int = 2400) -> Path:
    """A PNG of the top ``height`` px of ``page`` in a ``window_width`` px window."""
    browser = chromium()
    assert browser is not None, "no chromium"
    _run(browser, f"--window-size={window_width},{height}", f"--screenshot={picture}",
         page.resolve().as_uri())  # fmt: skip
    return picture


def main(arguments: list[str]) -> int:
    if len(arguments) < 2:
        print(__doc__)
        return 2
    page, picture = Path(arguments[0]), Path(arguments[1])
    widths = [int(w) for w in arguments[2:]] or list(WINDOW_WIDTHS)
    if chromium() is None:
        print("no chromium here: apt-get install chromium")
        return 2
    status = 0
    for width in widths:
        laid_out = layout(page, width)
        print(f"{page} in a {width} px window: the page is {laid_out.page} px wide")
        for element in laid_out.elements:
            mark = "ok" if element not in laid_out.too_wide() else "DOES NOT FIT"
            print(f"  {element.name}: {element.left}..{element.right} px  {mark}")
        if laid_out.too_wide():
            status = 1
    screenshot(page, picture, widths[0])
    print(f"screenshot: {picture}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
