"""Generators shipped for audits and tests, all speaking :mod:`sdgov.audits.generator_protocol`.

Registered names (:mod:`sdgov.agreement.code_names`; pass them to ``sdgov audit decomposability --generator``):

``honest_pgm``                                the pipeline's Private-PGM (:func:`sdgov.generators.pgm_mbi.fit_pgm`) on Φ
``honest_ipf``                                the pipeline's IPF (:func:`sdgov.generators.ipf.fit_ipf`) on Φ
``independent``                               independent 1-way marginals (a subset of span(Φ): honest)
``dishonest_pgm``                             PGM on Φ **plus one non-Φ marginal** (the positive control)
``dishonest_ipf``                             IPF on Φ plus the same non-Φ marginal
``blend2_ipf``                                98 % honest IPF rows, 2 % from IPF on Φ plus one non-Φ 3-way (a weak
                                              positive control: the audit's power floor); ``blend5_ipf``,
                                              ``blend10_ipf`` the 5 % and 10 % blends; ``blend_ipf`` takes ``share``
``camo2_ipf``                                 the 2 % blend **camouflaged**: its Φ part fitted to Φ with the plan's
                                              noise (``sigma``, default 10), the leak read exactly; ``camo5_ipf``
``camo2u_ipf``                                the camouflaged 2 % blend with its sampling unseeded too (issue 37)

Each fit measures the marginals it is allowed (Φ, or Φ + the leaked one) from the weighted records and hands
them to the pipeline's own fitting code through a :class:`~sdgov.measurement.marginals.MeasurementSet`, then samples
with
the pipeline's seeded sampler (:func:`sdgov.generators.sampler.iter_chunks`).

Every generator registered in :mod:`sdgov.generators.registry` has the same two variants, ``honest_<name>`` (its
fit on Φ) and ``dishonest_<name>`` (on Φ plus the leaked marginal), registered under those names, without a line
here: see :func:`__getattr__`.

Memoised fits (``memo=True``, off by default). Every fit here is a deterministic function of the marginals it
measured (mbi's mirror descent and IPF draw no random numbers), so K fits on one dataset — and, for an honest
generator, the fits on D₊ and D₋, whose Φ marginals are equal — all produce the same model. With ``memo`` a fit
whose measured marginals (and settings) hash like an earlier one in this process reuses that model: the samples,
hence the audit, are exactly those of refitting (``tests/test_decomposability.py`` checks the bytes), only
faster. It is for power and false-positive studies of these shipped generators; an audit of a third party's
generator refits every time, as it must treat the generator as a black box.

Noise. By default the marginals are **exact** (``sigma=0``). Decomposability is a property of *which*
statistics the generator reads: DP noise is independent of the data, so it cannot make a generator that reads a
non-Φ statistic honest nor an honest one dishonest — it only adds fit-to-fit variance (less power per fit) and
slows convergence. With exact marginals the honest fits are a deterministic function of φ(D), the cleanest null
hypothesis. ``sigma > 0`` adds rounded Gaussian noise drawn from the fit seed (a simulation of the release
mechanism for power studies; it is *not* the DP mechanism of :mod:`sdgov.budget.accounting`, which has no seed).
The audit fits D₊ and D₋ in pairs that share a seed, so noise drawn from the seed alone is the same in both fits of a
pair and cancels in the comparison; ``unseeded_noise=True`` mixes a hash of the weighted records into the noise
seed, so the two fits of a pair get independent noise, as a release's unseeded noise would be (the camouflaged
controls and the noisy honest null of the power table use it). The hash only decorrelates the draws: the noise's
distribution is the same whatever the records.

The leaked marginal of the dishonest variants (``leak``): given explicitly, or by default Marital Status ×
Occupation × Hours worked per week when those three are audited and not inside one Φ marginal (Application 3);
otherwise the full joint of all audited attributes when it has at most ``max_leak_cells`` cells (Application 1:
the full 3-way; Application 2: the full 4-way); otherwise the first 3-way set not inside Φ.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import OrderedDict
from typing import Any

import numpy as np
import pandas as pd

from sdgov.audits.generator_protocol import AuditError, weighted_marginal
from sdgov.data.psi import Measurement, MeasurementSet
from sdgov.data.schema import Clique
from sdgov.generators.model import CliqueModel
from sdgov.generators.registry import GENERATORS, generator
from sdgov.generators.sampler import iter_chunks
from sdgov.generators.settings import GeneratorSpec

APP3_LEAK = ("Marital Status", "Occupation", "Hours worked per week")
MAX_LEAK_CELLS = 100_000
ROUNDING_SIGMA = 0.5  # the σ recorded for a count read exactly among noisy ones (only the fits' weights use it)
_MEMO: OrderedDict[str, CliqueModel] = OrderedDict()  # fit key → model, for ``memo=True`` (a few models at most)
_MEMO_SIZE = 4


class _MarginalGenerator:
    """Fit = measure some marginals of the weighted records, build a :class:`CliqueModel`; sample = the sampler."""

    kind = "base"
    generator_name = ""  # registry name of the pipeline generator whose fit this variant runs
    default_iterations: int | None = None  # None: GeneratorSpec's default

    def __init__(
        self,
        cliques: list[Clique],
        domain: dict[str, int],
        *,
        sigma: float = 0.0,
        iterations: int | None = None,
        leak: list[str] | tuple[str, ...] | None = None,
        max_leak_cells: int = MAX_LEAK_CELLS,
        memo: bool = False,
        leak_sigma: float | None = None,
        unseeded_noise: bool = False,
        unseeded_sampling: bool = False,
    ) -> None:
        if not domain:
            raise AuditError("empty domain", self.kind)
        unknown = sorted({a for c in cliques for a in c} - set(domain))
        if unknown:
            raise AuditError(f"Φ names attribute(s) {unknown} outside the domain", self.kind)
        self.domain = dict(domain)
        self.attributes = list(domain)
        self.phi = [tuple(c) for c in cliques]
        self.sigma = float(sigma)
        # noise on a marginal outside Φ (a dishonest variant's leak); None: the same σ as on Φ
        self.leak_sigma = self.sigma if leak_sigma is None else float(leak_sigma)
        self.unseeded_noise = bool(unseeded_noise)
        self.unseeded_sampling = bool(unseeded_sampling)
        self.records_key: list[int] = []
        self.iterations = iterations
        self.memo = bool(memo)
        self.fitted: list[Clique] = self._fitted_cliques(leak, max_leak_cells)
        self.model: CliqueModel | None = None

    # --- which marginals this generator reads
    def _fitted_cliques(self, leak: Any, max_leak_cells: int) -> list[Clique]:
        return self._order(self.phi)

    def _order(self, cliques: list[Clique]) -> list[Clique]:
        pos = {a: i for i, a in enumerate(self.attributes)}
        return [tuple(sorted(c, key=pos.__getitem__)) for c in cliques]

    # --- protocol
    def fit(self, records: pd.DataFrame, weights: np.ndarray | None = None, *, seed: int | None = None) -> None:
        if self.unseeded_noise or self.unseeded_sampling:
            self.records_key = _records_key(records, weights)
        rng = np.random.default_rng(seed if not self.unseeded_noise else [seed or 0, *self.records_key])
        ms = []
        phi = set(self._order(self.phi))
        noisy = self.sigma > 0 or (self.leak_sigma > 0 and len(self.fitted) > len(phi))
        for c in self.fitted:
            counts = weighted_marginal(records, weights, c, self.domain)
            sigma = self.sigma if c in phi else self.leak_sigma
            if sigma > 0:
                counts = counts + rng.normal(0.0, sigma, counts.shape)
            ms.append(
                Measurement(
                    clique=c,
                    shape=counts.shape,
                    # beside noisy ones, a marginal read exactly still carries its rounding (the fits weigh by σ)
                    sigma=sigma if sigma > 0 or not noisy else ROUNDING_SIGMA,
                    noisy_counts=np.rint(counts).astype(np.int64).ravel().tolist(),
                )
            )
        mset = MeasurementSet(
            agreement_sha256="audit",
            dataset_fingerprint="audit",
            schema_sha256="audit",
            attributes=self.attributes,
            domain=self.domain,
            noise="gaussian" if noisy else "none",
            measurements=ms,
        )
        if not self.memo:
            self.model = self._fit_model(mset)
            return
        key = hashlib.sha256(
            repr((self.kind, self.iterations, self.fitted, self.domain, self.sigma, self.leak_sigma)).encode()
            + b"".join(np.asarray(m.noisy_counts, np.int64).tobytes() for m in ms)
        ).hexdigest()
        if key not in _MEMO:
            _MEMO[key] = self._fit_model(mset)
            while len(_MEMO) > _MEMO_SIZE:
                _MEMO.popitem(last=False)
        self.model = _MEMO[key]

    def _fit_model(self, mset: MeasurementSet) -> CliqueModel:
        """The registered generator's own fit, on exactly the marginals this variant measured."""
        plugin = generator(self.generator_name)
        iterations = self.iterations or self.default_iterations
        spec = GeneratorSpec(name=plugin.name, **({"iterations": iterations} if iterations else {}))
        return plugin.fit(mset, spec)

    def sample(self, n: int, seed: int) -> pd.DataFrame:
        if self.model is None:
            raise AuditError("sample() called before fit()", self.kind)
        if self.unseeded_sampling:  # the sample seed keyed by the records too: the pair's samples are independent
            seed = int(np.random.SeedSequence([int(seed), *self.records_key]).generate_state(1)[0] >> 1)
        chunks = list(iter_chunks(self.model, int(n), int(seed)))
        return pd.DataFrame({a: np.concatenate([ch[a] for ch in chunks]) for a in self.attributes})


class _Leaky:
    """Mixin: fit Φ plus one marginal outside span(Φ) — a generator whose card would be false."""

    def _fitted_cliques(self, leak: Any, max_leak_cells: int) -> list[Clique]:
        chosen = tuple(leak) if leak else default_leak(self.phi, self.domain, max_leak_cells)  # type: ignore[attr-defined]
        bad = [a for a in chosen if a not in self.domain]  # type: ignore[attr-defined]
        if bad:
            raise AuditError(f"leak names attribute(s) {bad} outside the domain", "dishonest generator")
        if any(set(chosen) <= set(c) for c in self.phi):  # type: ignore[attr-defined]
            raise AuditError(
                f"leak {chosen} is inside a Φ marginal, so it leaks nothing",
                "dishonest generator",
                "choose attributes not all inside one agreed marginal",
            )
        self.leak = chosen
        return self._order(list(self.phi) + [chosen])  # type: ignore[attr-defined]


def _records_key(records: pd.DataFrame, weights: np.ndarray | None) -> list[int]:
    """Four 32-bit words of a hash of the weighted records: mixed into the noise seed of ``unseeded_noise``, so two
    datasets fitted with one seed get independent noise, as a release's unseeded DP noise would be."""
    h = hashlib.sha256(np.ascontiguousarray(records.to_numpy(np.int64)).tobytes())
    if weights is not None:
        h.update(np.ascontiguousarray(np.asarray(weights, np.int64)).tobytes())
    return np.frombuffer(h.digest()[:16], dtype=np.uint32).tolist()


def default_leak(phi: list[Clique], domain: dict[str, int], max_cells: int = MAX_LEAK_CELLS) -> Clique:
    """The non-Φ marginal a dishonest variant reads (see the module docstring)."""

    def inside(s: tuple[str, ...]) -> bool:
        return any(set(s) <= set(c) for c in phi)

    if set(APP3_LEAK) <= set(domain) and not inside(APP3_LEAK):
        return APP3_LEAK
    attrs = tuple(domain)
    if not inside(attrs) and int(np.prod([domain[a] for a in attrs], dtype=np.float64)) <= max_cells:
        return attrs
    for k in range(2, len(attrs) + 1):
        for s in itertools.combinations(attrs, k):
            if not inside(s):
                return s
    raise AuditError("Φ already contains the full joint: nothing is left to leak", "dishonest generator")


class HonestPGM(_MarginalGenerator):
    kind = "honest PGM"
    generator_name = "pgm"
    default_iterations = 1000


class HonestIPF(_MarginalGenerator):
    kind = "honest IPF"
    generator_name = "ipf"


class DishonestPGM(_Leaky, HonestPGM):
    kind = "dishonest PGM"


class DishonestIPF(_Leaky, HonestIPF):
    kind = "dishonest IPF"


class Independent(_MarginalGenerator):
    """Independent 1-way marginals: uses only the 1-way margins, which every Φ over these attributes implies."""

    kind = "independent marginals"

    def _fitted_cliques(self, leak: Any, max_leak_cells: int) -> list[Clique]:
        covered = {a for c in self.phi for a in c}
        return [(a,) for a in self.attributes if a in covered]

    def _fit_model(self, mset: MeasurementSet) -> CliqueModel:
        tables = {m.clique[0]: np.clip(m.array().astype(np.float64), 0, None) for m in mset.measurements}
        marginals = []
        for a in self.attributes:  # an attribute outside Φ is drawn uniformly: nothing about it may be read
            t = tables.get(a, np.ones(self.domain[a]))
            marginals.append(t / t.sum() if t.sum() > 0 else np.full(t.shape, 1.0 / t.size))
        return CliqueModel(
            attributes=tuple(self.attributes),
            domain=dict(self.domain),
            cliques=[(a,) for a in self.attributes],
            marginals=marginals,
            order=list(self.attributes),
            total=max(mset.noisy_total(), 1.0),
            fit_info={"estimator": "independent 1-way"},
        )


class BlendIPF:
    """A weak cheat: ``share`` of the rows from IPF on Φ plus one non-Φ **3-way** marginal, the rest from the honest
    IPF on Φ. It reads the leaked marginal but shows it only in a small fraction of its output — the kind of leak
    (a 2 % blend on Application 2) that the |t| ≥ 2 β* rule of the earlier audit missed in 6 of 6 seeds (issue 13).

    The leaked set (``leak``) defaults to Application 3's Marital Status × Occupation × Hours when audited, else the
    first 3-way set (in the domain's attribute order) not inside a Φ marginal."""

    def __init__(
        self,
        cliques: list[Clique],
        domain: dict[str, int],
        *,
        share: float = 0.02,
        leak: list[str] | tuple[str, ...] | None = None,
        leak_seed: int | None = None,
        **params: Any,
    ) -> None:
        if not 0 < float(share) <= 1:
            raise AuditError(f"share {share} is not in (0, 1]", "blend generator", "give the leaked rows' share")
        self.share = float(share)
        chosen = (
            tuple(leak)
            if leak
            else _first_non_phi(list(cliques), domain, 3)
            if leak_seed is None
            else random_minimal_leak(list(cliques), domain, int(leak_seed))
        )
        self.honest = HonestIPF(cliques, domain, **params)
        self.leaky = DishonestIPF(cliques, domain, leak=chosen, **params)
        self.attributes = list(domain)

    def fit(self, records: pd.DataFrame, weights: np.ndarray | None = None, *, seed: int | None = None) -> None:
        """Fit the honest and the leaky IPF on the same weighted records and seed."""
        self.honest.fit(records, weights, seed=seed)
        self.leaky.fit(records, weights, seed=seed)

    def sample(self, n: int, seed: int) -> pd.DataFrame:
        """``n`` records, ``share`` of them (rounded) from the leaky fit and the rest from the honest one (``seed +
        1``), shuffled with ``seed``."""
        k = int(round(self.share * int(n)))
        parts = [self.leaky.sample(k, seed), self.honest.sample(int(n) - k, seed + 1)]
        rows = pd.concat(parts, ignore_index=True)
        order = np.random.default_rng(seed).permutation(len(rows))
        return rows.iloc[order].reset_index(drop=True)


def _first_non_phi(phi: list[Clique], domain: dict[str, int], k: int) -> Clique:
    if set(APP3_LEAK) <= set(domain) and not any(set(APP3_LEAK) <= set(c) for c in phi):
        return APP3_LEAK
    for size in [k, *range(2, len(domain) + 1)]:
        for s in itertools.combinations(domain, size):
            if not any(set(s) <= set(c) for c in phi):
                return s
    raise AuditError("Φ already contains the full joint: nothing is left to leak", "blend generator")


def random_minimal_leak(phi: list[Clique], domain: dict[str, int], seed: int) -> Clique:
    """A non-Φ set drawn with ``seed`` among the minimal ones (every proper subset inside a Φ marginal: App 2's three
    3-way sets, App 1's one): a blend whose leaked table the auditor cannot guess."""

    def inside(s: tuple[str, ...]) -> bool:
        return any(set(s) <= set(c) for c in phi)

    minimal = [
        s
        for k in range(1, len(domain) + 1)
        for s in itertools.combinations(domain, k)
        if not inside(s) and all(inside(t) for t in itertools.combinations(s, k - 1))
    ]
    if not minimal:
        raise AuditError("Φ already contains the full joint: nothing is left to leak", "blend generator")
    return minimal[int(np.random.default_rng([seed, 38]).integers(len(minimal)))]


def blend_ipf(cliques: list[Clique], domain: dict[str, int], **params: Any) -> BlendIPF:
    """A :class:`BlendIPF` at the given ``share`` (default 2 %)."""
    return BlendIPF(cliques, domain, **params)


def blend2_ipf(cliques: list[Clique], domain: dict[str, int], **params: Any) -> BlendIPF:
    """A :class:`BlendIPF` with 2 % of its rows from the leaky fit (unless ``share`` is given)."""
    return BlendIPF(cliques, domain, **{"share": 0.02, **params})


def blend5_ipf(cliques: list[Clique], domain: dict[str, int], **params: Any) -> BlendIPF:
    """A :class:`BlendIPF` with 5 % of its rows from the leaky fit (unless ``share`` is given)."""
    return BlendIPF(cliques, domain, **{"share": 0.05, **params})


def blend10_ipf(cliques: list[Clique], domain: dict[str, int], **params: Any) -> BlendIPF:
    """A :class:`BlendIPF` with 10 % of its rows from the leaky fit (unless ``share`` is given)."""
    return BlendIPF(cliques, domain, **{"share": 0.10, **params})


#: the plan's noise on every Φ count in the census examples (``privacy: sigma: 10``): a camouflaged blend's default
CAMOUFLAGE_SIGMA = 10.0


def camo_ipf(cliques: list[Clique], domain: dict[str, int], **params: Any) -> BlendIPF:
    """A **camouflaged** blend: its Φ part carries the plan's noise (``sigma``, default 10: it measures Φ with
    Gaussian noise and fits IPF to the noisy counts, as an honest generator of a noisy release would), and ``share``
    (default 2 %) of its rows come from IPF on the same noisy Φ plus one non-Φ 3-way read exactly (``leak_sigma``
    0). The noise is unseeded (``unseeded_noise``: independent between the audit's paired fits, as a release's noise
    would be, so the pairing cannot cancel it): every fit differs, the audit's fits vary as much as an honest noisy
    generator's, and a weak leak hides in that variance (issue 29: such a 2 % blend with seeded noise passed 4 of 10
    seeds on Application 2 under the earlier unpaired test)."""
    defaults = {"share": 0.02, "sigma": CAMOUFLAGE_SIGMA, "leak_sigma": 0.0, "unseeded_noise": True}
    return BlendIPF(cliques, domain, **{**defaults, **params})


def camo2u_ipf(cliques: list[Clique], domain: dict[str, int], **params: Any) -> BlendIPF:
    """The camouflaged 2 % blend with *every* random draw outside the audit's seed (issue 37 item 5): its noise and
    its sampling are keyed by the records it was fitted on (``unseeded_sampling``), so the two fits of an audit
    pair share nothing but the data — the pairing cancels neither the noise nor the sampling, as for a generator
    that draws from its own entropy — and its leaked table is drawn with ``leak_seed`` among the minimal non-Φ
    sets when given."""
    return camo_ipf(cliques, domain, **{"share": 0.02, "unseeded_sampling": True, **params})


def camo2_ipf(cliques: list[Clique], domain: dict[str, int], **params: Any) -> BlendIPF:
    """A camouflaged blend (:func:`camo_ipf`) with 2 % of its rows from the leaky fit."""
    return camo_ipf(cliques, domain, **{"share": 0.02, **params})


def camo5_ipf(cliques: list[Clique], domain: dict[str, int], **params: Any) -> BlendIPF:
    """A camouflaged blend (:func:`camo_ipf`) with 5 % of its rows from the leaky fit."""
    return camo_ipf(cliques, domain, **{"share": 0.05, **params})


def honest_pgm(cliques: list[Clique], domain: dict[str, int], **params: Any) -> HonestPGM:
    """The pipeline's Private-PGM, fitted on the Φ marginals only."""
    return HonestPGM(cliques, domain, **params)


def honest_ipf(cliques: list[Clique], domain: dict[str, int], **params: Any) -> HonestIPF:
    """The pipeline's IPF, fitted on the Φ marginals only."""
    return HonestIPF(cliques, domain, **params)


def independent(cliques: list[Clique], domain: dict[str, int], **params: Any) -> Independent:
    """Independent 1-way marginals (an attribute outside Φ drawn uniformly): honest."""
    return Independent(cliques, domain, **params)


def dishonest_pgm(cliques: list[Clique], domain: dict[str, int], **params: Any) -> DishonestPGM:
    """Private-PGM on Φ plus one leaked non-Φ marginal (``leak``): the positive control."""
    return DishonestPGM(cliques, domain, **params)


def dishonest_ipf(cliques: list[Clique], domain: dict[str, int], **params: Any) -> DishonestIPF:
    """IPF on Φ plus one leaked non-Φ marginal (``leak``): a positive control."""
    return DishonestIPF(cliques, domain, **params)


def honest_variant(generator: str) -> str:
    """Registered name of the honest audit variant of the pipeline's generator ``generator`` ('pgm' or 'ipf'): what
    the release's audits run when the spec names no generator of its own."""
    return f"honest_{generator}"


def __getattr__(attr: str) -> Any:
    """``honest_<name>`` / ``dishonest_<name>`` for every registered generator without a class above: a new
    generator gets its audit variants (and their registered names) from its registration alone."""
    honesty, _, name = attr.partition("_")
    if honesty not in ("honest", "dishonest") or name not in GENERATORS:
        raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
    bases: tuple[type, ...] = (_MarginalGenerator,) if honesty == "honest" else (_Leaky, _MarginalGenerator)
    variant = type(f"{honesty.title()}[{name}]", bases, {"kind": f"{honesty} {name}", "generator_name": name})

    def factory(cliques: list[Clique], domain: dict[str, int], **params: Any) -> _MarginalGenerator:
        return variant(cliques, domain, **params)

    factory.__name__ = factory.__qualname__ = attr
    return factory


SHIPPED = {
    "honest_pgm": "honest Private-PGM on Φ (the pipeline's generator)",
    "honest_ipf": "honest IPF on Φ (the pipeline's generator)",
    "independent": "independent 1-way marginals (honest: a subset of Φ)",
    "dishonest_pgm": "PGM on Φ plus one non-Φ marginal (positive control)",
    "dishonest_ipf": "IPF on Φ plus one non-Φ marginal (positive control)",
    "blend2_ipf": "2 % of rows from IPF on Φ plus one non-Φ 3-way (weak positive control)",
    "blend5_ipf": "5 % of rows from IPF on Φ plus one non-Φ 3-way (weak positive control)",
    "blend10_ipf": "10 % of rows from IPF on Φ plus one non-Φ 3-way (positive control)",
    "camo2_ipf": "2 % blend, its Φ part with the plan's noise (camouflaged control)",
    "camo5_ipf": "5 % blend, its Φ part with the plan's noise (camouflaged control)",
    "camo2u_ipf": "2 % camouflaged blend, noise and sampling unseeded (camouflaged control)",
}
