"""Utility reports: how well synthetic data answers what the real data answers (issue 5).

Every measure is a :class:`.metric.Metric` registered in :data:`.registry.METRICS`: generic fidelity
(:mod:`.univariate`, :mod:`.bivariate`, :mod:`.distinguish`, :mod:`.wasserstein`, wrapped in :mod:`.generic`)
and the marginal-error summary the card shows. Besides them: the analyst's declared tasks (:mod:`.tasks`,
declared in the spec via :mod:`.taskspec`), baselines
(:mod:`.baselines`), plots (:mod:`.plots`), the fitness statement (:mod:`.fitness`) and the report itself
(:mod:`.report`). Nothing is imported here so that ``sdgov.agreement.spec`` can use :mod:`.taskspec` cheaply.
"""
