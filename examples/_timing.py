"""Shared timing helper for the example scripts: the median of a few repeats."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(run: Callable[[], object], repeats: int = 7, calls: int = 20) -> float:
    """Median over ``repeats`` of the mean time of ``calls`` consecutive calls to ``run``."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)
