"""``python -m mutagrad.testing.fuzz``: see :func:`mutagrad.testing.fuzz.cli.main`."""

import sys

from mutagrad.testing.fuzz.cli import main

sys.exit(main())
