"""The engines a benchmark runs on, which of them are installed, and their one-time setup.

Peers are measurement tools, not dependencies of mutagrad: an engine whose
package is missing is skipped (and reported as such). Every engine computes
in float64 on the CPU with one thread:

* PyTorch: ``torch.set_num_threads(1)`` (and one inter-op thread).
* JAX: ``JAX_PLATFORMS=cpu``, ``jax_enable_x64``, and XLA's CPU backend told
  not to spread Eigen work over threads. Eager means ``jax.grad`` called
  without ``jax.jit``: every primitive is dispatched one by one. ``jax-jit``
  (``jax.jit(jax.grad(f))``, compiled during warm-up) is a reference column.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import os
import platform
import subprocess
import sys
from functools import cache
from types import ModuleType
from typing import Any

import numpy as np

# Column order in every table.
ENGINES = (
    "numpy-hand",
    "mutagrad-poison",
    "mutagrad-strict",
    "mutagrad-snapshot",
    "torch",
    "autograd",
    "mygrad",
    "jax",
    "jax-jit",
)
MUTAGRAD_ENGINES = ("mutagrad-poison", "mutagrad-strict", "mutagrad-snapshot")
# Engines that are pip packages other than mutagrad, and the module each needs.
PEER_MODULES = {
    "torch": "torch",
    "autograd": "autograd",
    "mygrad": "mygrad",
    "jax": "jax",
    "jax-jit": "jax",
}
# What each engine is, for the tables' legend.
DESCRIPTIONS = {
    "numpy-hand": "plain numpy forward + a hand-written gradient (the floor)",
    "mutagrad-poison": "mutagrad.gradient, mode='poison' (the default)",
    "mutagrad-strict": "mutagrad.gradient, mode='strict' (no mutation allowed)",
    "mutagrad-snapshot": "mutagrad.gradient, mode='snapshot'",
    "torch": "PyTorch eager, CPU, 1 thread, torch.autograd.grad",
    "autograd": "HIPS autograd, autograd.grad",
    "mygrad": "MyGrad, tensor.backward()",
    "jax": "JAX eager: jax.grad without jit (op-by-op dispatch)",
    "jax-jit": "JAX jax.jit(jax.grad(f)), compiled in warm-up (reference only)",
}


def configure_environment() -> None:
    """Set the variables JAX reads at import: CPU only, single-threaded Eigen.

    Must run before anything imports jax; the harness calls it first.
    """
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    flag = "--xla_cpu_multi_thread_eigen=false"
    flags = os.environ.get("XLA_FLAGS", "")
    if flag not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {flag}".strip()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def installed(engine: str) -> bool:
    """Whether ``engine`` can run here (mutagrad and numpy always can)."""
    module = PEER_MODULES.get(engine)
    return module is None or importlib.util.find_spec(module) is not None


@cache
def load(module_name: str) -> ModuleType:
    """Import a peer once, with its single-thread float64 setup applied."""
    if module_name == "jax":
        configure_environment()
        jax = importlib.import_module("jax")
        jax.config.update("jax_enable_x64", True)
        return jax
    module = importlib.import_module(module_name)
    if module_name == "torch":
        module.set_num_threads(1)
        # Only settable before the first parallel work; harmless if already set.
        with contextlib.suppress(RuntimeError):
            module.set_num_interop_threads(1)
    return module


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, Any]:
    """Versions of Python, numpy, mutagrad and every peer (None when not installed)."""
    return {
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "mutagrad": _version("mutagrad"),
        "torch": _version("torch"),
        "autograd": _version("autograd"),
        "mygrad": _version("mygrad"),
        "jax": _version("jax"),
        "jaxlib": _version("jaxlib"),
        "matplotlib": _version("matplotlib"),
    }


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
    }


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def mutagrad_source() -> dict[str, Any]:
    """Which mutagrad was measured: its directory, and the git commit it is at when known.

    ``dirty`` lists changed files under that directory (uncommitted edits), so
    a figure can be traced back to the code it measured.
    """
    import mutagrad

    path = os.path.dirname(os.path.abspath(mutagrad.__file__))
    info: dict[str, Any] = {"path": path, "commit": None, "dirty": None}
    try:
        commit = subprocess.run(
            ["git", "-C", path, "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", path, "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return info
    info["commit"] = commit
    info["dirty"] = [line[3:] for line in status.splitlines()]
    return info


def load_average() -> list[float] | None:
    """1, 5 and 15 minute load averages: how busy the shared machine was."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None
