"""A one-line progress bar for long report runs, on a terminal only.

:class:`ProgressBar` redraws ``[#####-----]  12/60  program (mode)`` in place on
its stream (standard error by default) when that stream is a TTY, and prints
nothing at all otherwise, so logs and pipes stay clean. ``close`` erases the
line.
"""

from __future__ import annotations

import shutil
import sys
from typing import TextIO


class ProgressBar:
    """Progress over ``total`` steps, drawn only when ``stream`` is a terminal."""

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 24):
        self.total = max(total, 1)
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty())
        self._drawn = 0  # length of the line on screen

    def update(self, done: int, label: str = "") -> None:
        """Show that ``done`` of ``total`` steps are finished and what runs now."""
        if not self.enabled:
            return
        filled = int(self.width * min(done, self.total) / self.total)
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"[{bar}] {done:>{len(str(self.total))}}/{self.total}  {label}"
        columns = shutil.get_terminal_size((80, 24)).columns
        line = line[: max(columns - 1, 10)]
        self.stream.write("\r" + line.ljust(self._drawn))
        self.stream.flush()
        self._drawn = len(line)

    def close(self) -> None:
        """Erase the bar."""
        if self.enabled and self._drawn:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self.stream.flush()
            self._drawn = 0
