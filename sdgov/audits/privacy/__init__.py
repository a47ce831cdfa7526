"""Privacy-risk evidence for a release (issue 4): per-record attacks, an empirical DP lower bound, record checks.

Modules (none imports the orchestrator):

``base``        settings, the audited generator (protocol of :mod:`sdgov.audits.generator_protocol`), seeds, targets
``mia``         linkability (membership-inference) game with shadow models — Stadler et al. 2022, §4.2
``attribute``   attribute inference on a declared sensitive attribute (same shadow worlds)
``canary``      DP lower bound from nearest-neighbour reconstruction of uniform canaries
``disclosure``  exact matches, distance to closest record vs a real holdout, small synthetic cells
``policy``      pass / warn / fail thresholds from a policy file
``report``      the result model, plots and the card's "Privacy evidence" section
``run``         one call that runs everything for a spec
``cost``        what the audit will make: its generator fits per part, the records it draws on
``calibration`` settings too light for a check ever to reach its fail level (refused at pre-flight)
``leaky``       deliberately leaky generators (positive controls for the tests and the benchmark)
"""
