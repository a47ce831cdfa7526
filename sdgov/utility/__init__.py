"""Utility reports: how well synthetic data answers what the real data answers (issue 5).

Every measure is a :class:`.metric.Metric` registered in :data:`.registry.METRICS`: generic fidelity
(:mod:`.univariate`, :mod:`.bivariate`, :mod:`.distinguish`, :mod:`.wasserstein`, wrapped in :mod:`.generic`)
and the marginal-error summary the card shows. Besides them: the analyst's declared tasks (:mod:`.tasks`,
declared in the spec via :mod:`.taskspec`), baselines
(:mod:`.baselines`), plots (:mod:`.plots`), the fitness statement (:mod:`.fitness`) and the report itself
(:mod:`.report`). Nothing is imported here so that ``sdgov.agreement.spec`` can use :mod:`.taskspec` cheaply.

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "FAST": "report",
    "ReportSettings": "metric",
    "UtilitySummary": "summary",
    "build_report": "report",
    "radar": "plots",
    "report_of_file": "file_report",
    "utility_summary": "summary",
    "write_report": "report",
}
__all__ = [
    "FAST",
    "ReportSettings",
    "UtilitySummary",
    "build_report",
    "radar",
    "report_of_file",
    "utility_summary",
    "write_report",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
