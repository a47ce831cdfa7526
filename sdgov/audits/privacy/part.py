"""What a part of the privacy-risk audit is: the protocol every attack or check speaks, what it is handed and the
fits it asks for.

A part (membership inference, the one-run bound, memorisation, …; :data:`sdgov.audits.privacy.registry.PRIVACY_PARTS`)
does three things, and the audit (:class:`sdgov.audits.privacy.run.PrivacyAuditRun`) calls them in turn:

1. ``requests(frame)`` — the generator fits it needs, as :class:`FitRequest`\\ s: a training dataset, the fit's seed,
   the sample sets it wants from the fit and what it keeps of them (a *reducer*, run where the fit ran, so that
   features and counts travel instead of synthetic records). Requests with the same ``key`` are one fit: the
   planner (:mod:`sdgov.audits.privacy.planner`) merges them, fits each key once through the audit's executor and
   hands every part its own share. This is how parts share fits — the membership game's shadow worlds serve
   every target and attribute inference; the memorisation worlds serve the beyond-Φ check
   (:mod:`sdgov.audits.privacy.worlds`). ``fit_keys(settings, shape)`` names the same keys from the settings and
   the audit's :class:`AuditShape` alone, so its cost is known before it runs
   (:func:`sdgov.audits.privacy.cost.planned_fits`).
2. ``run(frame, fitted)`` — its result from its fitted shares, in the order of its requests (a part may also fit
   on datasets of its own that nothing else could share — the canary audits plant made-up records — counted by
   ``own_fits``).
3. ``checks(result, frame)`` — its rows of the verdict under its own section(s) of the policy file
   (:class:`~sdgov.agreement.sections.privacy_risk.RiskPolicy`), and ``bound(result)`` the ε lower bound it offers,
   if any: the audit's "DP lower bound" row takes the largest of those that refute (at a share of β each,
   :meth:`AuditFrame.beta_share`) and reports the others beside it (:func:`sdgov.audits.privacy.policy.epsilon_check`).

Adding an attack is one module with a :class:`PrivacyPart` subclass and one line in the registry (and its name in
:data:`~sdgov.agreement.sections.privacy_risk.PARTS`, where the command line and the settings find it without
loading the audit; the registry refuses, at import, a part missing there).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from sdgov.base.model import Frozen

if TYPE_CHECKING:
    from sdgov.agreement.sections.privacy_risk import RiskPolicy, RiskSettings
    from sdgov.audits.privacy.base import GeneratorRef, Progress, Target
    from sdgov.audits.privacy.canary import Metric
    from sdgov.audits.privacy.policy import PolicyCheck
    from sdgov.audits.privacy.worlds import ShadowPairs
    from sdgov.base.executor import Executor

Reducer = Callable[[list[np.ndarray]], Any]
T = TypeVar("T")


@dataclass(frozen=True)
class FitRequest:
    """One fit a part needs and what it takes from it: ``sample_seeds`` sets of ``set_rows`` records each, each set as
    ``keep`` makes it when it is drawn (a picklable function of its records — a lean form, so that many sets need not
    be held as records at once; None: the records), reduced by ``reduce`` (a picklable function of the list of sets,
    run where the fit ran; None: the sets themselves).

    ``key`` is the fit's identity: requests with the same key must carry the same ``rows`` and ``fit_seed``, and are
    one fit (each request's sets drawn at its own ``set_rows``)."""

    key: tuple[Hashable, ...]
    rows: np.ndarray
    fit_seed: int
    set_rows: int
    sample_seeds: tuple[int, ...]
    reduce: Reducer | None = None
    keep: Callable[[np.ndarray], Any] | None = None


@dataclass(frozen=True)
class AuditShape:
    """What the audit's fits depend on besides its settings, known before it runs: the number of targets, the
    reference records (every record but the targets), the domain and Φ — None where not known, read as "large
    enough" (every part runs, at its full size)."""

    targets: int
    reference_rows: int | None = None
    domain: dict[str, int] | None = None
    cliques: tuple[tuple[str, ...], ...] | None = None

    def rows(self, n: int, share: int = 1) -> int:
        """``n`` records, at most ``1/share`` of the reference records."""
        return n if self.reference_rows is None else min(n, self.reference_rows // share)


class EpsilonBound(Frozen):
    """An ε lower bound a part offers: ``refutes`` (it may fail the claim; its β is the part's share) or reported
    beside them (the membership scores' bound)."""

    epsilon_lower: float
    epsilon_lower_pure: float | None = None
    confidence: float
    refutes: bool = True


@dataclass
class AuditFrame:
    """What every part is handed: the audited generator, the targets and the reference records (every record but
    the targets), the settings and policy, the release's claim, where trials run — and the shared shadow designs,
    built once on first use."""

    ref: GeneratorRef
    targets: list[Target]
    reference: np.ndarray
    sizes: list[int]
    sensitive: str
    numeric_sensitive: bool
    settings: RiskSettings
    policy: RiskPolicy
    claimed_epsilon: float | None
    claimed_delta: float | None
    executor: Executor
    progress: Progress | None = None
    canary_metric: Metric = "unit"
    refuting_parts: int = 1  # the asked parts whose ε bound may refute the claim (they share β)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def attributes(self) -> list[str]:
        """The audited attributes, in the domain's order."""
        return self.ref.attributes

    @property
    def target_rows(self) -> np.ndarray:
        """The targets' records (targets × attributes, cell indices)."""
        return np.array([[t.record[a] for a in self.attributes] for t in self.targets], dtype=np.int64).reshape(
            len(self.targets), len(self.attributes)
        )

    def shape(self) -> AuditShape:
        """What its fits depend on besides the settings (:func:`sdgov.audits.privacy.cost.planned_fits`)."""
        return AuditShape(len(self.targets), len(self.reference), dict(self.ref.domain), tuple(self.ref.cliques))

    def cached(self, key: str, build: Callable[[], T]) -> T:
        """``build()``, once per audit: what several parts (or a part's requests and its run) share."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def membership_worlds(self) -> ShadowPairs:
        """The membership game's shadow pairs (:func:`sdgov.audits.privacy.worlds.shadow_pairs`), built once."""
        from sdgov.audits.privacy.worlds import shadow_pairs

        st = self.settings
        return self.cached(
            "membership-worlds",
            lambda: shadow_pairs(self.reference, self.target_rows, st.train_rows, st.n_shadow, st.seed),
        )

    def beta_share(self) -> float:
        """β over the asked parts whose ε bounds may refute the claim (Bonferroni: their maximum holds at 1 − β)."""
        return self.settings.beta / max(1, self.refuting_parts)


class PrivacyPart:
    """A part of the privacy-risk audit (module docstring); a subclass overrides what it does — by default no shared
    fit, no own fit, no check and no bound."""

    name: ClassVar[str]
    result_field: ClassVar[str]  # the field of PrivacyAuditResult it fills (else its result goes to ``other_parts``)
    splits_beta: ClassVar[bool] = False  # its bound may refute the claim: it takes a share of β

    def fit_keys(self, settings: RiskSettings, shape: AuditShape) -> list[tuple[Hashable, ...]]:
        """The keys of the fits :meth:`requests` will ask for, from the settings and the audit's shape alone."""
        return []

    def own_fits(self, settings: RiskSettings) -> int:
        """Fits the part makes itself, on datasets nothing else could share."""
        return 0

    def requests(self, frame: AuditFrame) -> list[FitRequest]:
        """The fits it needs (keys as :meth:`fit_keys`)."""
        return []

    def run(self, frame: AuditFrame, fitted: list[Any]) -> Any:
        """Its result, from its shares of the fits (in the order of :meth:`requests`)."""
        raise NotImplementedError

    def checks(self, result: Any, frame: AuditFrame) -> list[PolicyCheck]:
        """Its rows of the verdict, under its own section(s) of the policy."""
        return []

    def bound(self, result: Any, frame: AuditFrame) -> EpsilonBound | None:
        """The ε lower bound it offers, if any."""
        return None
