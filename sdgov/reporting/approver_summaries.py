"""What an approver reads before deciding: Markdown summaries of an agreement and of a release candidate.

Shown as the description of the Prefect UI's resume form (and by ``sdgov runs``). Built only from artifacts.
"""

from __future__ import annotations

from pathlib import Path

from sdgov.agreement.accounting import PrivacyPlan
from sdgov.agreement.spec import Agreement
from sdgov.governance.ledger import Account
from sdgov.reporting.card import Card, EpsilonSummary, privacy_headline


def hash_lines(sha256: str) -> str:
    """A 64-hex-digit hash as four groups of 16 (a line that wraps in the Prefect form instead of being cut off)."""
    return " ".join(f"`{sha256[i : i + 16]}`" for i in range(0, len(sha256), 16))


def key_facts(
    what: str, sha256: str, plan: PrivacyPlan, verdict: str | None = None, epsilon: EpsilonSummary | None = None
) -> str:
    """What an approver must see before anything else, in one line: the verdict, the privacy cost and the full hash
    they sign. It leads the form's text and is the Decision field's own help, which the Prefect UI keeps in view at
    1280×800 while the text above the fields scrolls out of sight."""
    if plan.noise == "none":
        privacy = "NO NOISE (no DP guarantee)"
    elif epsilon is not None:
        privacy = f"ε = {epsilon.release_epsilon:.4g} (zCDP bound)"
        if epsilon.release_epsilon_pld is not None:
            privacy += f", ε ≤ {epsilon.release_epsilon_pld:.4g} (PLD)"
        privacy += f", δ = {epsilon.delta:.3g}"
        if epsilon.dataset_epsilon is not None:
            privacy += f"; the dataset's ε over every release = {epsilon.dataset_epsilon:.4g}"
    else:
        privacy = f"ρ = {plan.rho:.6g} (zCDP) → ε = {plan.epsilon:.4g}, δ = {plan.delta:.3g}"
    head = [f"verdict {verdict.upper()}"] if verdict else []
    groups = " ".join(sha256[i : i + 16] for i in range(0, len(sha256), 16))  # wraps instead of being cut off
    return " · ".join([*head, privacy, f"{what} hash {groups}"])


def _budget_lines(plan: PrivacyPlan, acct: Account | None) -> list[str]:
    if plan.noise == "none":
        lines = ["- **Privacy: NO NOISE** — the statistics are declared public; no DP guarantee."]
    else:
        lines = [
            f"- **Privacy budget of this release:** ρ = {plan.rho:.6g} (zCDP) → ε = {plan.epsilon:.4g} at "
            f"δ = {plan.delta:.3g}; σ per marginal: " + ", ".join(sorted({f"{m.sigma:.4g}" for m in plan.marginals}))
        ]
    if acct is not None:
        lines.append(
            f"- **Ledger for dataset `{acct.dataset}`**: spent ρ = "
            f"{acct.spent_rho:.6g} in {len(acct.spends)} spend(s), remaining ρ = {acct.remaining_rho:.6g} "
            f"(lifetime ρ = {acct.lifetime_rho:.6g}, policy {acct.policy_entry}); marginals already measured at "
            "the same σ are reused and spend nothing"
        )
    return lines


def agreement_md(
    agreement: Agreement,
    sha256: str,
    proposer: str,
    plan: PrivacyPlan,
    acct: Account | None,
) -> str:
    """The agreement pause's form text (Markdown): the key facts first, then Φ table by table, the budget, the generator
    and the full hash to approve. Every holder of the Prefect login reads it, so it names the dataset, never a
    hash of its content or a figure of it (the rows warning is in the controller's evidence report)."""
    # a split synthesis: each part's tables, measured on its own records
    phi = "\n".join(f"  - {f'[{m.part}] ' if m.part else ''}{' × '.join(m.clique)}" for m in plan.marginals)
    return "\n".join(
        [
            f"**Approve the Φ agreement `{agreement.spec_name}`?** {key_facts('agreement', sha256, plan)}",
            "",
            f"**{proposer}** (analyst) proposes publishing these {len(plan.marginals)} noisy marginal tables of "
            f"dataset `{agreement.dataset_name}`:",
            "",
            phi,
            "",
            *_budget_lines(plan, acct),
            f"- **Generator:** {agreement.generator.name}, {agreement.rows or 'noisy total'} rows, public seed "
            f"{agreement.seed}",
            f"- **Agreement hash (what you approve):** {hash_lines(sha256)}",
            "",
            "Decide as a **data controller** listed in the approvers registry; the proposer cannot decide. "
            "Rejecting ends the run: no noise is drawn, nothing is released.",
        ]
    )


def release_md(
    agreement: Agreement,
    candidate: str,
    proposer: str,
    plan: PrivacyPlan,
    acct: Account | None,
    card: Card,
    evidence: str,
    note: str = "",
    facts: str = "",
) -> str:
    """The release pause's form text: what is approved first (Φ, ε/δ, the overall verdict, the full candidate hash,
    where the draft card is), then the audit rows the card states. Hashes are split in groups so that they wrap.

    It is read through Prefect by anyone holding the server's login, so it holds only what the draft ``card``
    publishes (public facts and DP figures: its verdict, rows and privacy headline); what was computed on the
    confidential data (the utility against the real data, the pre-registered audits' figures) stays in the
    controller's evidence report, named by ``evidence`` (where it lies in the registry). ``facts``: :func:`key_facts`,
    as the form's Decision field repeats them (one string for both)."""
    verdict = card.verdict.label
    if verdict == "fail":
        verdict = "FAIL — the release is blocked whatever you decide"
    checks = [f"  - **{c['result']}** — {c['name']}" for c in card.audit["checks"]]
    privacy = (
        "**no noise** — the statistics are declared public; no DP guarantee"
        if plan.noise == "none"
        else privacy_headline(card.epsilon)
        if card.epsilon is not None
        else f"ε = {plan.epsilon:.4g}, δ = {plan.delta:.3g} (ρ = {plan.rho:.6g} zCDP)"
    )
    return "\n".join(
        [
            f"**Sign off the release of `{agreement.spec_name}`?** {facts}",
            "",
            f"Proposed by **{proposer}**.",
            "",
            f"- **Overall verdict:** **{verdict.upper() if verdict == 'pass' else verdict}**",
            f"- **Φ:** {'; '.join(' × '.join(c) for c in agreement.cliques)}",
            f"- **Privacy:** {privacy}",
            f"- **Release candidate hash (what you approve):** {hash_lines(candidate)}",
            "- **To approve**, type the first 8 characters of this hash in the form's *Confirm hash* field.",
            "- **Draft card:** the *Artifacts* tab of this run shows the generator card exactly as it will be "
            "published (draft-card) and the release summary (release-candidate). On approval the card is published "
            "unchanged, with your sign-off appended.",
            "",
            "Audit checks the card states (computed without the confidential data; the overall verdict above is the "
            "one rule over all of them):",
            "",
            *checks,
            "",
            *_budget_lines(plan, acct),
            "- **Controller side (not shown here):** the utility against the real data and the pre-registered "
            f"audits' figures are in the evidence report, `{evidence}` in the registry; `sdgov approve` on the "
            "controller's machine prints where it is. This form is readable by every holder of the Prefect login, "
            "so it carries only what the card publishes.",
            "",
            "Approving publishes an immutable release whose generator card lists this decision under *Sign-offs*. "
            "Rejecting ends the run; nothing is released.",
            *([f"\n> **{note}**"] if note else []),
        ]
    )


def budget_md(dataset: str, message: str, note: str = "") -> str:
    """The budget refusal's form text (Markdown): the ledger's ``message``, that no noise was drawn, and what approving
    (one retry under the raised policy) and rejecting do; a non-empty ``note`` closes it as a quote."""
    return "\n".join(
        [
            f"## Privacy budget refused for dataset `{dataset}`",
            "",
            message,
            "",
            "No noise was drawn. To go on, a data controller raises the lifetime budget in the registry's "
            "`policy.yaml` (signed in with `sdgov approvers commit`) — and, where the dataset's account in the "
            "controller's budget authority was set through another registry, with `sdgov budget lifetime` — and then "
            "**approves** here (the measurement is retried once under the new lifetime); **reject** ends the run.",
            *([f"\n> **{note}**"] if note else []),
        ]
    )


def existing(paths: dict[str, str | Path | None]) -> dict[str, str]:
    """The entries of ``paths`` whose file exists, the paths as strings; unset or missing ones are left out."""
    return {k: str(v) for k, v in paths.items() if v and Path(v).exists()}
