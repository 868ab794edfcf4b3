"""The environment a report ran in: versions (mutagrad's and every peer's), machine and date.

:func:`environment` gives the dict that results.json and the pages show.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
from collections.abc import Sequence
from typing import Any

import numpy as np

import mutagrad
from mutagrad.report.peers import PEERS


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment(peers: Sequence[str] = ()) -> dict[str, Any]:
    """Python, numpy, mutagrad and matplotlib versions, platform, CPU count, load and date.

    ``peers`` names the peer engines of the run: the versions of their
    distributions follow mutagrad's (``jax``, ``jaxlib``, ``autograd``, ``mygrad``).

    ``load_average`` (1, 5 and 15 minutes, where the OS reports it) tells a
    reader whether other work competed for the CPU while the timings were taken.
    """
    load = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    return {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "numpy": np.__version__,
        "mutagrad": mutagrad.__version__,
        **{
            distribution: version
            for name in peers
            for distribution, version in PEERS[name].versions().items()
        },
        "matplotlib": _version("matplotlib"),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average": load,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
