"""mutagrad's benchmark suite (issue 6): mutagrad against PyTorch, HIPS autograd, MyGrad and JAX.

Run ``python -m benchmarks`` (or ``make bench``); ``python -m benchmarks --help``
lists the options. ``python -m benchmarks.profiling`` breaks mutagrad's time
down per traced operation. See ``benchmarks/README.md``.

Modules:

* :mod:`benchmarks.engines` – which peers are installed, their versions and setup.
* :mod:`benchmarks.workloads` – the workloads, one implementation per engine.
* :mod:`benchmarks.timing` – interleaved median timing and gradient checks.
* :mod:`benchmarks.memory` – peak memory (tracemalloc, and RSS in a subprocess).
* :mod:`benchmarks.targets` – the issue's target checks, computed from a run.
* :mod:`benchmarks.report` – the printed tables, the JSON file and the plot.
* :mod:`benchmarks.harness` – the command line.
* :mod:`benchmarks.profiling` – where mutagrad's time goes, per traced operation.
"""
