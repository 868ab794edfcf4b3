"""Entry point: ``python -m benchmarks`` runs the benchmark suite (see ``--help``)."""

from benchmarks.harness import main

raise SystemExit(main())
