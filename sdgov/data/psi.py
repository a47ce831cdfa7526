"""ψ: the noisy marginals, the one input a generator fits — a pure data model on the ground floor.

A :class:`MeasurementSet` holds no record, no exact count and no record total: each agreed marginal with its noise
scale (:mod:`sdgov.measurement` draws them, once per statistic; the generators read them). It lives here, below the
generators and the agreement, so that the generator plug-ins' input types sit below the plug-ins.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from sdgov.base.model import Frozen
from sdgov.data.schema import Clique


class Measurement(Frozen):
    clique: Clique
    shape: tuple[int, ...]
    sigma: float
    noisy_counts: list[int]
    statistic: str = ""  # published: the keyed commitment of its draw-once store key (dataset × attributes × σ)
    part: str | None = Field(default=None, exclude_if=lambda v: v is None)  # a split synthesis: whose records

    def array(self) -> np.ndarray:
        """The noisy counts as an int64 array of ``shape``, one axis per attribute of the clique, in its order."""
        return np.asarray(self.noisy_counts, dtype=np.int64).reshape(self.shape)


class MeasurementSet(Frozen):
    """The noisy-marginal artifact (persisted as JSON, tracked by DVC, hashed into every later artifact)."""

    agreement_sha256: str
    dataset_fingerprint: str  # published: the keyed commitment of the content fingerprint (sdgov.registry.commitment)
    schema_sha256: str
    attributes: list[str]
    domain: dict[str, int]
    noise: str
    measurements: list[Measurement]

    def of_part(self, name: str, attributes: list[str]) -> MeasurementSet:
        """A split synthesis's ψ restricted to one part: what that part's model is fitted to."""
        return self.model_copy(
            update={
                "attributes": attributes,
                "domain": {a: self.domain[a] for a in attributes},
                "measurements": [m for m in self.measurements if m.part == name],
            }
        )

    def noisy_total(self) -> float:
        """Inverse-variance weighted mean of the marginals' noisy totals: a DP estimate of N."""
        if self.noise == "none":
            return float(sum(self.measurements[0].noisy_counts))
        w = np.array([1.0 / (m.sigma**2 * len(m.noisy_counts)) for m in self.measurements])
        t = np.array([float(sum(m.noisy_counts)) for m in self.measurements])
        return float((w * t).sum() / w.sum())
