"""Training a small model with implicit parameters and plain gradient descent.

The experiment-script shape of Flux's ``train!``: a model whose weights are
WrappedArrays (``mutagrad.array``, persistent across calls), collected in
``mutagrad.Params``; for each mini-batch, ``gradient(lambda: loss(x, y), ps)``
returns ``Grads`` keyed by the weights themselves, and ``gs.update_(lr)``
takes a descent step in place (``W -= lr * gs[W]`` for every parameter).

The model is a one-hidden-layer perceptron fitted to ``sin(x₀) + x₁²/2`` on
synthetic data. Its hidden activation is computed in place,
``np.tanh(h, out=h)``, as memory-conscious numpy code does: poison mode
accepts it, since tanh's pullback reads its output, which is ``h`` after the
write.

Run: ``python examples/train.py``
"""

import time

import numpy as np
from _compare_modes import print_section

import mutagrad

HIDDEN = 16
BATCH = 32
EPOCHS = 60
LEARNING_RATE = 0.1


class Perceptron:
    """``W2 · tanh(W1 x + b1) + b2``, with its weights as persistent WrappedArrays."""

    def __init__(self, rng):
        self.W1 = mutagrad.array(rng.normal(0.0, 0.5, (HIDDEN, 2)))
        self.b1 = mutagrad.array(np.zeros(HIDDEN))
        self.W2 = mutagrad.array(rng.normal(0.0, 0.5, (1, HIDDEN)))
        self.b2 = mutagrad.array(np.zeros(1))

    def parameters(self):
        return mutagrad.Params([self.W1, self.b1, self.W2, self.b2])

    def __call__(self, x):
        h = self.W1 @ x + self.b1[:, None]  # x: (2, batch)
        np.tanh(h, out=h)  # the activation, in place
        return (self.W2 @ h + self.b2[:, None])[0]


def mse(model, x, y):
    return np.mean((model(x) - y) ** 2)


def train(loss, ps, data, lr):
    """One pass over ``data``: a gradient over ``ps`` and a descent step per batch."""
    for x, y in data:
        gs = mutagrad.gradient(lambda: loss(x, y), ps)  # noqa: B023 (called right here)
        gs.update_(lr)


def main():
    rng = np.random.default_rng(0)
    inputs = rng.uniform(-2.0, 2.0, (2, 256))
    targets = np.sin(inputs[0]) + 0.5 * inputs[1] ** 2
    batches = [(inputs[:, i : i + BATCH], targets[i : i + BATCH])
               for i in range(0, inputs.shape[1], BATCH)]  # fmt: skip

    model = Perceptron(rng)
    ps = model.parameters()

    def loss(x, y):
        return mse(model, x, y)

    print_section(f"a {HIDDEN}-unit perceptron, Params and gradient descent (lr = {LEARNING_RATE})")
    start = time.perf_counter()
    first = float(loss(inputs, targets))
    print(f"  epoch {0:3d}  loss {first:.4f}")
    for epoch in range(1, EPOCHS + 1):
        train(loss, ps, batches, LEARNING_RATE)
        if epoch % 10 == 0:
            print(f"  epoch {epoch:3d}  loss {float(loss(inputs, targets)):.4f}")
    last = float(loss(inputs, targets))
    seconds = time.perf_counter() - start
    steps = EPOCHS * len(batches)
    print(f"  {steps} steps in {seconds:.2f} s ({seconds / steps * 1e3:.2f} ms per step)")
    print(f"  loss fell below a tenth of its first value: {last < first / 10}")


if __name__ == "__main__":
    main()
