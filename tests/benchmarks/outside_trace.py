"""How much a WrappedArray costs outside any gradient call, next to an ndarray.

Not a test (no timing assertion on a shared machine): run it by hand,
``python tests/benchmarks/outside_trace.py``, before and after a change to the
write path or to indexing. It prints the median time of single operations on
WrappedArray buffers (``mutagrad.array(np.zeros(n))``; ``mnp.zeros`` gives numpy's own
array outside a call) and on ``np.zeros`` buffers, and the ratio, then the
same for a few small loops (element fill and read, an RNN writing rows,
vector updates).
"""

from __future__ import annotations

import statistics
import timeit

import numpy as np

import mutagrad


def _tracked_zeros(n: int):
    return mutagrad.array(np.zeros(n))


def _medians(a, b, number: int, repeat: int = 21) -> tuple[float, float]:
    """Median seconds per call of ``a`` and of ``b``, sampled in turn (the machine is shared)."""
    times_a, times_b = [], []
    for _ in range(repeat):
        times_a.append(timeit.timeit(a, number=number))
        times_b.append(timeit.timeit(b, number=number))
    return statistics.median(times_a) / number, statistics.median(times_b) / number


def _ops(zeros):
    w = zeros(10)
    w[3] = 1.5
    s = w[3]
    return {
        "w[3] = 1.5": (lambda: w.__setitem__(3, 1.5), 20000),
        "w[3]": (lambda: w[3], 20000),
        "w[3] * w[3] (scalar * scalar)": (lambda: s * s, 20000),
        "w[2:5] = w[5:8]": (lambda: w.__setitem__(slice(2, 5), w[5:8]), 5000),
        "w += 1.0": (lambda: w.__iadd__(1.0), 5000),
        "w * w": (lambda: w * w, 5000),
    }


def fill_read(zeros, n: int = 100) -> float:
    b = zeros(n)
    for i in range(n):
        b[i] = 0.5 * i
    total = 0.0
    for i in range(n):
        total += b[i] * b[i]
    return float(total)


def rnn(zeros, steps: int = 20, hidden: int = 8) -> float:
    rng = np.random.default_rng(0)
    W = rng.normal(size=(hidden, hidden)) * 0.3
    U = rng.normal(size=(hidden, 3))
    x = rng.normal(size=(steps, 3))
    h = zeros((steps + 1, hidden))
    for t in range(steps):
        h[t + 1] = np.tanh(W @ h[t] + U @ x[t])
    return float(np.sum(h[-1]))


def vector_loop(zeros, n: int = 50, steps: int = 30) -> float:
    x = np.linspace(0.0, 1.0, n)
    y = zeros(n)
    for _ in range(steps):
        y[:] = 0.9 * y + x
        y[1:] -= 0.1 * y[:-1]
    return float(np.sum(y))


def main() -> None:
    mine, theirs = _ops(_tracked_zeros), _ops(np.zeros)
    print(f"{'operation':34} {'wrapped':>11} {'np.zeros':>11} {'ratio':>7}")
    for name, (op, number) in mine.items():
        a, b = _medians(op, theirs[name][0], number)
        print(f"{name:34} {a * 1e6:9.2f}us {b * 1e6:9.3f}us {a / b:6.1f}x")
    print()
    print(f"{'loop':34} {'wrapped':>11} {'np.zeros':>11} {'ratio':>7}")
    for name, loop, number in (
        ("fill+read 100 elements", fill_read, 100),
        ("RNN, 20 row writes", rnn, 50),
        ("vector loop, 30 steps", vector_loop, 50),
    ):
        assert loop(_tracked_zeros) == loop(np.zeros)
        a, b = _medians(lambda loop=loop: loop(_tracked_zeros), lambda loop=loop: loop(np.zeros),
                        number, repeat=11)  # fmt: skip
        print(f"{name:34} {a * 1e6:9.1f}us {b * 1e6:9.1f}us {a / b:6.1f}x")


if __name__ == "__main__":
    main()
