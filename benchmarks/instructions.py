"""Instructions per gradient call, counted by valgrind's callgrind: speed without the noise.

Wall-clock medians on a shared machine move by several percent from run to
run; instruction counts do not. For each workload this runs the call under
``valgrind --tool=callgrind`` with counting switched on only around
``REPEATS`` calls (after ``WARM_UP`` uncounted calls, with the cyclic collector off),
by two client requests in a small C library compiled on the spot, and
reports the average. Counts are repeatable for the same interpreter, numpy and
inputs, whatever else the machine is doing; they weigh every instruction alike
(a cache miss costs nothing here), so quote them beside interleaved medians,
not instead.

    python -m benchmarks.instructions                  # this checkout
    python -m benchmarks.instructions --at HEAD~3      # a committed revision
    python -m benchmarks.instructions --compare old.json new.json

``--json PATH`` saves the counts; ``--compare`` prints new/old per workload.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# Each workload: setup code (run once, before the counted calls) and the call.
WORKLOADS: dict[str, tuple[str, str]] = {
    "mse_vec N=30": (
        "rng = np.random.default_rng(0); y, yh = rng.normal(size=30), rng.normal(size=30)\n"
        "f = lambda y, yh: np.mean((y - yh) ** 2)",
        "mutagrad.gradient(f, y, yh)",
    ),
    "mse_loop N=300": (
        "rng = np.random.default_rng(0); y, yh = rng.normal(size=300), rng.normal(size=300)\n"
        "def f(y, yh):\n"
        "    s = 0.0\n"
        "    for i in range(len(y)):\n"
        "        s = s + (y[i] - yh[i]) ** 2\n"
        "    return s / len(y)",
        "mutagrad.gradient(f, y, yh)",
    ),
    "fill_loop N=300": (
        "x = np.random.default_rng(0).normal(size=300)\n"
        "def f(x):\n"
        "    out = np.zeros_like(x)\n"
        "    for i in range(len(x)):\n"
        "        out[i] = np.sin(x[i]) * x[i]\n"
        "    return np.sum(out)",
        "mutagrad.gradient(f, x)",
    ),
    "network": (
        "rng = np.random.default_rng(0); x = rng.normal(size=(8, 16))\n"
        "ws = [rng.normal(size=(16, 16)) * 0.25 for _ in range(25)]\n"
        "def f(x, *ws):\n"
        "    h = x\n"
        "    for w in ws:\n"
        "        h = np.tanh(h @ w) * 0.5 + h\n"
        "    return np.sum(h)",
        "mutagrad.gradient(f, x, *ws)",
    ),
    "mse_vec N=1e6": (
        "rng = np.random.default_rng(0); y, yh = rng.normal(size=10**6), rng.normal(size=10**6)\n"
        "f = lambda y, yh: np.mean((y - yh) ** 2)",
        "mutagrad.gradient(f, y, yh)",
    ),
    "numpy by hand, mse_vec N=1e6": (
        "rng = np.random.default_rng(0); y, yh = rng.normal(size=10**6), rng.normal(size=10**6)\n"
        "def f(y, yh):\n"
        "    d = y - yh\n"
        "    np.mean(d**2)\n"
        "    g = d * (2 / d.size)\n"
        "    return g, -g",
        "f(y, yh)",
    ),
    "jvp W3 N=1e6": (
        "rng = np.random.default_rng(0)\n"
        "y, yh, vy, vyh = (rng.normal(size=10**6) for _ in range(4))\n"
        "f = lambda y, yh: np.mean((y - yh) ** 2)",
        "mutagrad.jvp(f, (y, yh), (vy, vyh))",
    ),
    "numpy forward, W3 N=1e6": (
        "rng = np.random.default_rng(0); y, yh = rng.normal(size=10**6), rng.normal(size=10**6)\n"
        "f = lambda y, yh: np.mean((y - yh) ** 2)",
        "f(y, yh)",
    ),
    "outside a call: fill of 100": (
        "def f():\n"
        "    w = mutagrad.array(np.zeros(100))\n"
        "    for i in range(100):\n"
        "        w[i] = i * 0.5\n"
        "    return w[3]",
        "f()",
    ),
}
REPEATS = 20
# CPython 3.11 quickens a code object (rewrites its bytecode for specialisation) on its
# eighth run, once: fewer warm-up calls than that count the one-off rewrite of every
# function a call runs once (about 4.4k instructions per mse_vec call over 20 repeats).
WARM_UP = 10


# Two C functions whose only work is callgrind's client request to start and stop
# counting: the calls are counted, and nothing else the process does.
_MARKERS_C = r"""
#include <valgrind/callgrind.h>
void mutagrad_count_start(void) { CALLGRIND_TOGGLE_COLLECT; }
void mutagrad_count_stop(void) { CALLGRIND_TOGGLE_COLLECT; }
"""


def _markers(scratch: Path) -> Path:
    """The markers library, compiled with the machine's C compiler."""
    source, library = scratch / "markers.c", scratch / "markers.so"
    source.write_text(_MARKERS_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(library), str(source)], check=True)
    return library


def _program(setup: str, call: str, repeats: int, source: str | None, markers: Path) -> str:
    path = f"import sys; sys.path.insert(0, {source!r})\n" if source else ""
    # The cyclic collector is off while counting: where it runs depends on every
    # allocation since start-up.
    return (
        f"{path}import ctypes, gc\nimport numpy as np\nimport mutagrad\n{setup}\n"
        f"count = ctypes.CDLL({str(markers)!r})\n"
        f"for _ in range({WARM_UP}):\n    {call}\n"  # first-use caches and quickening
        f"gc.collect()\ngc.disable()\ncount.mutagrad_count_start()\n"
        f"for _ in range({repeats}):\n    {call}\n"
        f"count.mutagrad_count_stop()\n"
    )


def per_call(setup: str, call: str, source: str | None = None) -> float:
    """Instructions of one ``call`` after ``setup``: the average over REPEATS counted calls."""
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        log = scratch / "log"
        program = _program(setup, call, REPEATS, source, _markers(scratch))
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--log-file={log}",
             f"--callgrind-out-file={scratch / 'out'}", sys.executable, "-c", program],
            check=True, env={**os.environ, "PYTHONHASHSEED": "0"},
        )  # fmt: skip
        found = re.search(r"Collected : (\d+)", log.read_text())
        if found is None:
            raise RuntimeError(f"callgrind printed no count:\n{log.read_text()}")
        return int(found.group(1)) / REPEATS


def _export(revision: str) -> str:
    """``src/`` as committed at ``revision``, in a temporary directory (kept for the run)."""
    target = tempfile.mkdtemp(prefix="mutagrad-at-")
    archive = subprocess.run(["git", "archive", revision, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", target], input=archive.stdout, check=True)
    return str(Path(target) / "src")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.instructions",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("--at", help="measure mutagrad as committed at this git revision")
    parser.add_argument("--only", help="workloads whose name contains this text")
    parser.add_argument("--json", type=Path, help="save the counts here")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"),
                        help="print NEW/OLD per workload from two saved runs")  # fmt: skip
    args = parser.parse_args(argv)
    if args.compare:
        old, new = (json.loads(p.read_text()) for p in args.compare)
        print(f"{'workload':32} {'old':>12} {'new':>12} {'new/old':>8}")
        for name in new:
            if name in old:
                print(f"{name:32} {old[name]:12.0f} {new[name]:12.0f} {new[name] / old[name]:8.3f}")
        return 0
    source = _export(args.at) if args.at else None
    counts = {}
    for name, (setup, call) in WORKLOADS.items():
        if args.only and args.only not in name:
            continue
        counts[name] = per_call(setup, call, source)
        print(f"{name:32} {counts[name]:12.0f} instructions per call", flush=True)
    if args.json:
        args.json.write_text(json.dumps(counts, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
