"""Progress of a report run: a bar on a terminal, plain lines in a log.

:class:`Progress` redraws ``[#####-----]  12/60  program`` in place on its
stream (standard error by default) when that stream is a terminal, and
erases it at the end. Anywhere else (a pipe, a file, CI's log) a bar would
be one endless line, so it prints one line each time a category of the
corpus is finished, and at least every :data:`LOG_EVERY` programs, with the
time so far: ``  17/117 programs (seed done), 2.3 s``.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO

LOG_EVERY = 50
"""Longest run of programs without a log line (a corpus of one big category)."""


class Progress:
    """Progress over ``total`` programs on ``stream``: a bar on a terminal, lines elsewhere."""

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 24):
        self.total = max(total, 1)
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        isatty = getattr(self.stream, "isatty", None)
        self.terminal = bool(isatty and isatty())
        self._drawn = 0  # length of the bar's line on screen
        self._started = time.perf_counter()
        self._category: str | None = None
        self._last_logged = 0

    def starting(self, done: int, name: str, category: str) -> None:
        """``done`` programs are finished; program ``name`` of ``category`` runs now."""
        if self.terminal:
            self._draw(done, name)
            return
        if self._category is not None and category != self._category:
            self._log(done, f"{self._category} done")
        elif done - self._last_logged >= LOG_EVERY:
            self._log(done, f"in {category}")
        self._category = category

    def finished(self) -> None:
        """Every program is finished."""
        if self.terminal:
            self._draw(self.total, "done")
        elif self._category is not None:
            self._log(self.total, f"{self._category} done")

    def close(self) -> None:
        """Erase the bar (on a terminal; a log keeps its lines)."""
        if self.terminal and self._drawn:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self.stream.flush()
            self._drawn = 0

    def _draw(self, done: int, label: str) -> None:
        filled = int(self.width * min(done, self.total) / self.total)
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"[{bar}] {done:>{len(str(self.total))}}/{self.total}  {label}"
        columns = shutil.get_terminal_size((80, 24)).columns
        line = line[: max(columns - 1, 10)]
        self.stream.write("\r" + line.ljust(self._drawn))
        self.stream.flush()
        self._drawn = len(line)

    def _log(self, done: int, what: str) -> None:
        seconds = time.perf_counter() - self._started
        self.stream.write(f"  {done:>{len(str(self.total))}}/{self.total} programs ({what}), ")
        self.stream.write(f"{seconds:.1f} s\n")
        self.stream.flush()
        self._last_logged = done
