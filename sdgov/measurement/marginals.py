"""Noisy measurement of the agreed marginals: the only place the confidential data meets the noise.

The result, a :class:`MeasurementSet`, is the *only* input the generate stage receives. It holds no record,
no exact count and no record total — just each agreed marginal with its noise scale. Each noisy marginal is
drawn once per dataset and noise scale and reused by every later agreement that asks for it
(:mod:`sdgov.measurement.store`); ``statistic`` names it there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import Field

from sdgov.agreement.accounting import PrivacyPlan, add_noise
from sdgov.agreement.spec import Agreement
from sdgov.base.model import Frozen
from sdgov.data.schema import Clique, Schema
from sdgov.data.tables import contingency_table


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


def marginal_counts(codes: pd.DataFrame, schema: Schema, clique: Clique) -> np.ndarray:
    """Exact contingency table of ``clique`` (axes in clique order) from encoded data."""
    return contingency_table(codes, clique, schema.shape(clique)).astype(np.int64)


def noisy_measurements(exact: dict[Clique, np.ndarray], sigmas: dict[Clique, float]) -> list[Measurement]:
    """Each clique's exact table plus fresh noise at its σ: the one place noise meets the data. The exact
    tables come from the engine's one grouped scan (:meth:`sdgov.engines.base.Engine.marginals`) in a release,
    or from :func:`marginal_counts` on records in memory."""
    out = []
    for clique, table in exact.items():
        noisy = add_noise(table, sigmas[clique])
        out.append(
            Measurement(clique=clique, shape=table.shape, sigma=sigmas[clique], noisy_counts=noisy.ravel().tolist())
        )
    return out


def measure_cliques(
    codes: pd.DataFrame, schema: Schema, cliques: list[Clique], sigmas: dict[Clique, float]
) -> list[Measurement]:
    """:func:`noisy_measurements` of records held in memory (simulations, audits, benchmarks)."""
    return noisy_measurements({c: marginal_counts(codes, schema, c) for c in cliques}, sigmas)


def measure_agreement(
    codes: pd.DataFrame, schema: Schema, agreement: Agreement, plan: PrivacyPlan, dataset_fingerprint: str
) -> MeasurementSet:
    """Every agreed marginal drawn afresh (simulations and benchmarks; a release draws through the store)."""
    return MeasurementSet(
        agreement_sha256=agreement.sha256(),
        dataset_fingerprint=dataset_fingerprint,
        schema_sha256=agreement.schema_sha256,
        attributes=agreement.attributes,
        domain=schema.domain(agreement.attributes),
        noise=plan.noise,
        measurements=measure_cliques(codes, schema, agreement.cliques, plan.sigmas),
    )
