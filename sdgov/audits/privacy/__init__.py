"""Privacy-risk evidence for a release (issue 4): per-record attacks, an empirical DP lower bound, record checks.

Modules (none imports the orchestrator):

``base``        settings, the audited generator (protocol of :mod:`sdgov.audits.generator_protocol`), seeds, targets
``part``        what a part of the audit is (:class:`~sdgov.audits.privacy.part.PrivacyPart`): its fits, result, checks
``registry``    the parts, in the order they run; ``planner`` fits every part's shadow datasets, each shared fit once
``worlds``      the shadow datasets parts share: the membership game's pairs, the sample worlds
``mia``         linkability (membership-inference) game with shadow models — Stadler et al. 2022, §4.2
``attribute``   attribute inference on a declared sensitive attribute (same shadow worlds)
``canary``      DP lower bound from nearest-neighbour reconstruction of uniform canaries
``one_run``     DP lower bound from one fit with planted canaries (Steinke, Nasr & Jagielski 2023)
``memorisation`` copy share beyond Φ, over every pair of sample worlds
``beyond_phi``  interactions beyond Φ: the output's non-Φ tables against the Φ-only model of its own Φ tables
``disclosure``  exact matches, distance to closest record vs a real holdout, small synthetic cells
``policy``      pass / warn / fail thresholds from a policy file, the DP-lower-bound row over the parts' bounds
``report``      the result model, plots and the card's "Privacy evidence" section
``run``         one call that runs everything for a spec
``cost``        what the audit will make: its generator fits per part (shared ones once), the records it draws on
``calibration`` settings too light for a check ever to reach its fail level (refused at pre-flight)
``leaky``       deliberately leaky generators (positive controls for the tests and the benchmark)
"""
