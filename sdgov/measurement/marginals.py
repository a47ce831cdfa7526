"""Noisy measurement of the agreed marginals: the only place the confidential data meets the noise.

The result, a :class:`~sdgov.data.psi.MeasurementSet` (ψ), is the *only* input the generate stage receives. It holds
no record, no exact count and no record total — just each agreed marginal with its noise scale. Each noisy marginal is
drawn once per dataset and noise scale and reused by every later agreement that asks for it
(:mod:`sdgov.measurement.store`); ``statistic`` names it there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdgov.agreement.spec import Agreement
from sdgov.budget.accounting import PrivacyPlan, add_noise
from sdgov.data.psi import Measurement, MeasurementSet
from sdgov.data.schema import Clique, Schema
from sdgov.data.tables import contingency_table


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
