"""Overwriting a value a pullback still needs: ``y = x * x; x.fill(0); return np.sum(y)``.

This is the case the seeds warn about. Seed "Which functions need rules?"
says that rules for functions which mutate their own input, "such as
``fill!(a, x)``", would make Zygote "sometimes quietly return the wrong
answer", and Zygote's answer is to refuse all mutation.

The pullback of ``x * x`` needs the old ``x`` (d/dx sum(x*x) = 2x), and
``x.fill(0)`` destroys it. A tape that simply read ``x`` during the backward
pass would return zeros. mutagrad never does:

* strict mode refuses the write (MutationError), like Zygote;
* poison mode lets the write happen but poisons the saved ``x``; the backward
  pass raises PoisonedCaptureError when it reaches it, naming both lines;
* snapshot mode copies the old ``x`` just before the write, because a
  pullback still needs it, and returns the correct ``2x``; ``bytes_copied``
  reports what the copies cost.

Run: ``python examples/overwrite_saved_value.py``
"""

import numpy as np
from _compare_modes import print_modes, print_section


def square_then_clear(x):
    y = x * x
    x.fill(0)
    return np.sum(y)


def main():
    x = np.array([1.0, 2.0, 3.0])
    print_section(f"y = x * x; x.fill(0); return np.sum(y) at x = {x} (correct: 2x)")
    outcomes = print_modes(square_then_clear, x)
    (snapshot_gradient,) = outcomes["snapshot"].grad
    print(f"  snapshot gradient equals 2x: {bool(np.allclose(snapshot_gradient, 2 * x))}")


if __name__ == "__main__":
    main()
