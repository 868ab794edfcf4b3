"""The environment a report ran in: versions, machine and date, for results.json and the pages."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
from typing import Any

import numpy as np

import mutagrad


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    """Python, numpy, mutagrad and matplotlib versions, platform, CPU count, load and date.

    ``load_average`` (1, 5 and 15 minutes, where the OS reports it) tells a
    reader whether other work competed for the CPU while the timings were taken.
    """
    load = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    return {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "numpy": np.__version__,
        "mutagrad": mutagrad.__version__,
        "matplotlib": _version("matplotlib"),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average": load,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
