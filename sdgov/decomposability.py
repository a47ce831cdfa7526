"""Black-box decomposability test (Houssiau et al. 2022, §3.2–3.3, eqs. 3–7): does a generator use only Φ?

Θ is the count vector of the joint table over the audited attributes; span(Φ) is spanned by the marginal-
indicator rows; Φ⊥ is its orthogonal complement. A generator that reads only φ(D) gives synthetic data with
the same distribution for any two datasets with the same φ; one that reads anything in Φ⊥ does not.

Everything works on the **count vector restricted to its non-empty cells** (weighted unique records), never on
rows, and every extremal dataset is built from **integer moves**: vectors

    u = ⊗_{a∈S} (e_{p_a} − e_{q_a}) ⊗_{a∉S} e_{j_a}        (S not inside any Φ marginal)

with entries in {−1, 0, +1} on 2^|S| cells. Every marginal of Φ sums u over some a ∈ S, where (e_p − e_q)·1 = 0,
so u ∈ Φ⊥ exactly; integer combinations keep counts integral and φ *exactly* unchanged (checked in code:
``φ(D±) == φ(D*)`` on integer tables). Moves are only built on cells that D* occupies, so D* ± c·u stays ≥ 0
for |c| up to the move's capacity.

Two regimes for the directions (the "basis"):

* **explicit** (small joint tables, e.g. Applications 1–2): an orthonormal basis V of Φ⊥ restricted to the
  occupied cells (``scipy.linalg.null_space`` of the marginal-indicator matrix), β = V z with z ~ N(0, I);
  â = Vᵀ(Θ̄₊ − Θ̄₋) (eq. 5), β* = V â (eq. 6). Extremal datasets: β is written in a basis of integer moves,
  scaled by the largest α whose rounded coefficients keep every count ≥ 0 in both D₊ and D₋.
* **random subspace** (large tables, e.g. Application 3, 1.56M cells): ``candidate_basis`` pairwise-disjoint
  moves anchored at random occupied higher-order cells (count-weighted), hence orthogonal; β has random signs
  and each move is pushed to its capacity (the extremal α per move); â_i per move (eq. 5), β* = Σ â_i v_i over
  the moves whose phase-1 t-statistic is at least ``beta_star_min_t`` (eq. 6), extremal along β* the same way.

Then K fresh fits on each of D±β* and a two-sided Welch t-test of g_β*(synthetic) = ⟨β*, Θ(synthetic)⟩
(eq. 7). The fits of the two phases are independent, so the test is exact in its null whatever β* is.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from scipy import linalg, sparse, stats

from sdgov.audit_protocol import (AuditError, Clique, Factory, check_sample, fit_generator, load_generator,
                                  make_generator)

MAX_JOINT = 2**62
EXPLICIT_MAX_CELLS = 5_000  # occupied cells up to which Φ⊥ gets an explicit orthonormal basis


# ----------------------------------------------------------------------------------------------- settings


class AuditSettings(BaseModel):
    """Pre-registered audit settings (mirrors the spec's ``audit`` section)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    alpha: float = Field(0.05, gt=0, lt=1, description="pre-registered significance level")
    K: int = Field(10, ge=2, description="fits per extremal dataset, in each phase")
    rows: int | None = Field(None, ge=1, description="synthetic rows per fit; default 10 × the records of D*")
    seed: int = Field(0, ge=0)
    candidate_basis: int = Field(1000, ge=1, description="moves spanning the random subspace (large tables)")
    explicit_max_cells: int = Field(EXPLICIT_MAX_CELLS, ge=1)
    beta_star_min_t: float = Field(2.0, ge=0, description="random-subspace β* keeps moves with |t| ≥ this")
    positive_control: str | None = Field(None, description="import path of a dishonest generator run beside")
    generator_params: dict[str, Any] = Field(default_factory=dict)
    control_params: dict[str, Any] = Field(default_factory=dict)


# ----------------------------------------------------------------------------------------------- result


class ControlResult(BaseModel):
    generator: str
    p_value: float
    verdict: Literal["pass", "fail"]
    caught: bool
    effect_size: float
    seconds: float


class DecomposabilityResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    test: str = "decomposability (Houssiau et al. 2022, eqs. 3-7)"
    generator: str
    generator_params: dict[str, Any]
    attributes: list[str]
    phi: list[list[str]]
    alpha: float
    K: int
    rows: int
    records: int
    seed: int
    p_value: float
    verdict: Literal["pass", "fail"]
    t_statistic: float
    effect_size: float = Field(description="Cohen's d of g_β* between D₊ and D₋ fits")
    mean_difference: float
    g_plus: list[float]
    g_minus: list[float]
    basis: dict[str, Any]
    extremal: dict[str, Any]
    top_cells: list[dict[str, Any]]
    top_interactions: list[dict[str, Any]]
    seeds: dict[str, list[int]]
    timing: dict[str, float]
    seconds: float
    control: ControlResult | None = None


# ----------------------------------------------------------------------------------------------- Θ space


class ThetaSpace:
    """The joint table over the audited attributes, held only at the occupied cells of D*."""

    def __init__(self, records: pd.DataFrame, cliques: list[Clique], domain: dict[str, int]) -> None:
        self.attributes = list(domain)
        self.domain = dict(domain)
        self.shape = tuple(domain[a] for a in self.attributes)
        if math.prod(self.shape) >= MAX_JOINT:
            raise AuditError(f"the joint table has {math.prod(self.shape):.3g} cells, too many to index",
                             "decomposability", "audit fewer attributes at a time")
        missing = [a for a in self.attributes if a not in records.columns]
        if missing:
            raise AuditError(f"the data lacks audited column(s) {missing}", "decomposability")
        if len(records) == 0:
            raise AuditError("no records to audit on", "decomposability")
        self.pos = {a: i for i, a in enumerate(self.attributes)}
        self.cliques = [tuple(sorted(c, key=self.pos.__getitem__)) for c in cliques]
        flat = np.ravel_multi_index(tuple(records[a].to_numpy().astype(np.int64) for a in self.attributes), self.shape)
        self.cells, counts = np.unique(flat, return_counts=True)
        self.x = counts.astype(np.int64)
        self.values = np.stack(np.unravel_index(self.cells, self.shape), axis=1).astype(np.int64)  # C × m
        self.records = pd.DataFrame({a: self.values[:, i].astype(np.int32) for i, a in enumerate(self.attributes)})
        self.index = {int(c): i for i, c in enumerate(self.cells)}

    @property
    def C(self) -> int:
        return len(self.cells)

    def inside_phi(self, s: tuple[str, ...]) -> bool:
        return any(set(s) <= set(c) for c in self.cliques)

    def minimal_non_phi_sets(self) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = []
        for k in range(1, len(self.attributes) + 1):
            for s in itertools.combinations(self.attributes, k):
                if not self.inside_phi(s) and not any(set(t) <= set(s) for t in out):
                    out.append(s)
        return out

    def phi_of(self, weights: np.ndarray) -> list[np.ndarray]:
        """Exact integer Φ marginals of a count vector on the occupied cells."""
        out = []
        for c in self.cliques:
            idx = [self.pos[a] for a in c]
            flat = np.ravel_multi_index(tuple(self.values[:, i] for i in idx), tuple(self.shape[i] for i in idx))
            out.append(_int_bincount(flat, weights, math.prod(self.shape[i] for i in idx)))
        return out

    def indicator_matrix(self) -> sparse.csr_matrix:
        """Marginal-indicator rows of Φ restricted to the occupied cells (rows: Φ cells, columns: occupied cells)."""
        blocks = []
        for c in self.cliques:
            idx = [self.pos[a] for a in c]
            size = math.prod(self.shape[i] for i in idx)
            flat = np.ravel_multi_index(tuple(self.values[:, i] for i in idx), tuple(self.shape[i] for i in idx))
            blocks.append(sparse.csr_matrix((np.ones(self.C), (flat, np.arange(self.C))), shape=(size, self.C)))
        return sparse.vstack(blocks).tocsr()

    def theta_of_sample(self, df: pd.DataFrame) -> np.ndarray:
        """Θ of a synthetic sample at the occupied cells of D* (β is zero everywhere else)."""
        flat = np.ravel_multi_index(tuple(df[a].to_numpy().astype(np.int64) for a in self.attributes), self.shape)
        i = np.searchsorted(self.cells, flat)
        i = np.minimum(i, self.C - 1)
        hit = self.cells[i] == flat
        return np.bincount(i[hit], minlength=self.C).astype(np.float64)

    def describe_cell(self, i: int, labels: dict[str, list[str]] | None) -> dict[str, Any]:
        out = {}
        for j, a in enumerate(self.attributes):
            v = int(self.values[i, j])
            out[a] = labels[a][v] if labels and a in labels and v < len(labels[a]) else v
        return out


def _int_bincount(flat: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    w = np.asarray(weights, dtype=np.int64)
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, flat, w)
    return out


#CORE


# ----------------------------------------------------------------------------------------------- spec entry point


def audit_spec(spec_path: str, generator: str, K: int | None = None, seed: int | None = None,
               data_path: str | None = None, overrides: dict[str, Any] | None = None) -> DecomposabilityResult:
    """Run the test for a release spec: its Φ, its data, its pre-registered ``audit`` settings."""
    from sdgov.schema import load_encoded
    from sdgov.spec import load_spec

    loaded = load_spec(spec_path)
    settings = settings_from_spec(loaded.spec)
    upd: dict[str, Any] = dict(overrides or {})
    if K is not None:
        upd["K"] = K
    if seed is not None:
        upd["seed"] = seed
    if upd:
        settings = AuditSettings(**{**settings.model_dump(), **upd})
    ag = loaded.agreement
    schema = loaded.schema_
    codes = load_encoded(data_path or loaded.data_path, schema)[ag.attributes]
    domain = {a: schema.by_name[a].size for a in ag.attributes}
    labels = {a: schema.by_name[a].labels() for a in ag.attributes}
    return run_decomposability(codes, [tuple(c) for c in ag.cliques], domain, generator, settings, labels)


def settings_from_spec(spec: Any) -> AuditSettings:
    """The spec's pre-registered ``audit`` section as :class:`AuditSettings` (defaults when absent)."""
    section = getattr(spec, "audit", None)
    if section is None:
        return AuditSettings()
    data = section.model_dump() if hasattr(section, "model_dump") else dict(section)
    keep = set(AuditSettings.model_fields)
    return AuditSettings(**{k: v for k, v in data.items() if k in keep})
