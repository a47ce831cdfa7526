"""The sampler's default way of drawing records (:mod:`sdgov.generators.sampler`'s docstring says what each does).

A module of its own, so that resolving a spec reads it without loading the sampler (pyarrow): an agreement states the
default whenever it is not i.i.d. (:meth:`sdgov.agreement.spec.GeneratorSpec.stating_sampling`), and an agreement that
states none draws i.i.d. for good (:attr:`~sdgov.agreement.spec.GeneratorSpec.drawn`). Rounding became the default
(issue 40) by the one line below: agreements made after it state ``sampling: round``, every release made before it
regenerates bit for bit as it was released, and every draw that does not say how (the audits' generators) follows the
new default. ``tests/unit/synthesis/test_sampling_default.py`` holds all three.
"""

from __future__ import annotations

from typing import Literal

Sampling = Literal["iid", "round"]
# Rounded since issue 40: both audits measured calibrated with it (20 seeds per app: decomposability's honest false
# alarms 1/20 App 1, 0/20 App 2; the privacy audit 20/20 clean on both: docs/decomposability.md).
SAMPLING: Sampling = "round"
