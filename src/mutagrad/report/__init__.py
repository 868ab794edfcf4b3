"""``python -m mutagrad report``: how each mode handles the seed documents' scenarios.

The report has three parts:

* :mod:`mutagrad.report.scenarios` – the corpus: plain functions with their
  arguments and what the seeds say Zygote does with them;
* :mod:`mutagrad.report.runner` – differentiates every scenario in every mode
  and compares with central finite differences, producing
  :class:`~mutagrad.report.runner.ModeResult` records;
* :mod:`mutagrad.report.text` – renders the records as a terminal table.
"""

from mutagrad.report.runner import MODES, ModeResult, Report, Status, run_report, run_scenario
from mutagrad.report.scenarios import CORPUS, Scenario
from mutagrad.report.text import render_text

__all__ = [
    "CORPUS",
    "MODES",
    "ModeResult",
    "Report",
    "Scenario",
    "Status",
    "render_text",
    "run_report",
    "run_scenario",
]
