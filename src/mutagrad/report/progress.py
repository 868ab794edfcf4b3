"""Progress of a report run: a bar with an ETA on a terminal, plain lines in a log.

:class:`Progress` is told each program as it finishes (:meth:`Progress.advance`).
When its stream (standard error by default) is a terminal it redraws
``[#####-----]  12/60  program  0:04 left`` in place, and erases it at the end
(:meth:`Progress.close`, also on an error or Ctrl-C, so that nothing is
printed over it). Anywhere else (a pipe, a file, CI's log) a bar would be one
endless line, so it prints a line when the last program of a category is
finished, and at least every :data:`LOG_EVERY` programs, with the time so far
and the time left: ``  17/117 programs (seed done), 2.3 s, about 13 s left``.
A category whose programs are not next to each other in the corpus is done
once, after its last program.

The time left is the time so far per finished program times the programs
left; it is shown once :data:`ETA_AFTER` programs are done.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import TextIO

LOG_EVERY = 50
"""Longest run of programs without a log line (a corpus of one big category)."""

ETA_AFTER = 3
"""Programs finished before the time left is estimated (the first ones import and warm up)."""


def clock(seconds: float) -> str:
    """``0:07``, ``12:30``, ``1:02:03``: a duration as a reader reads a clock."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


class Progress:
    """Progress over the programs of ``categories`` (one entry per program, in run order)."""

    def __init__(self, categories: Sequence[str], stream: TextIO | None = None, width: int = 24):
        self.total = max(len(categories), 1)
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        isatty = getattr(self.stream, "isatty", None)
        self.terminal = bool(isatty and isatty())
        self.done = 0
        self._left = Counter(categories)  # programs not yet finished, per category
        self._drawn = 0  # length of the bar's line on screen
        self._started = time.perf_counter()
        self._last_logged = 0

    def seconds_left(self) -> float | None:
        """The estimated time until every program is finished (None before :data:`ETA_AFTER`)."""
        if self.done < min(ETA_AFTER, self.total):
            return None
        elapsed = time.perf_counter() - self._started
        return elapsed / self.done * (self.total - self.done)

    def running(self, name: str) -> None:
        """Program ``name`` runs now (shown on the bar; a log waits for it to finish)."""
        if self.terminal:
            self._draw(name)

    def advance(self, name: str, category: str) -> None:
        """Program ``name`` of ``category`` is finished."""
        self.done += 1
        self._left[category] -= 1
        if self.terminal:
            self._draw(name)
        elif self._left[category] == 0:
            self._log(f"{category} done")
        elif self.done - self._last_logged >= LOG_EVERY:
            self._log(f"in {category}")

    def close(self) -> None:
        """Erase the bar (on a terminal; a log keeps its lines)."""
        if self.terminal and self._drawn:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self.stream.flush()
            self._drawn = 0

    def _left_text(self, about: str = "") -> str:
        left = self.seconds_left()
        if left is None or self.done >= self.total:
            return ""
        return f"{about}{clock(left)} left"

    def _draw(self, label: str) -> None:
        filled = int(self.width * min(self.done, self.total) / self.total)
        bar = "#" * filled + "-" * (self.width - filled)
        eta = self._left_text()
        line = f"[{bar}] {self.done:>{len(str(self.total))}}/{self.total}  {label}"
        columns = shutil.get_terminal_size((80, 24)).columns
        room = max(columns - 1 - (len(eta) + 2 if eta else 0), 10)
        line = line[:room] + (f"  {eta}" if eta else "")
        self.stream.write("\r" + line.ljust(self._drawn))
        self.stream.flush()
        self._drawn = len(line)

    def _log(self, what: str) -> None:
        seconds = time.perf_counter() - self._started
        eta = self._left_text("about ")
        self.stream.write(
            f"  {self.done:>{len(str(self.total))}}/{self.total} programs ({what}), "
            f"{seconds:.1f} s" + (f", {eta}" if eta else "") + "\n"
        )
        self.stream.flush()
        self._last_logged = self.done
