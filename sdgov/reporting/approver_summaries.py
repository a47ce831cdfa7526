"""What an approver reads before deciding: the facts of an agreement and of a release candidate.

Shown in the Prefect UI's resume form — both as the text above the fields and, because the Prefect UI collapses
that text on an ordinary laptop screen (0 px of it at 1280×800), as the fields' own titles and help, which it
renders at full height (:func:`form_fields`) — and printed by ``sdgov approve``. Built only from artifacts; every
ε and δ is the privacy statement's (:mod:`sdgov.budget.statement`), or for an agreement not yet measured its plan's
(:func:`~sdgov.budget.statement.release_epsilon`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sdgov.agreement.spec import Agreement
from sdgov.budget.accounting import PrivacyPlan
from sdgov.budget.statement import headline, key_facts, num, release_epsilon
from sdgov.governance.ledger import Account
from sdgov.reporting.card import Card


def hash_lines(sha256: str) -> str:
    """A 64-hex-digit hash as four groups of 16 (a line that wraps in the Prefect form instead of being cut off)."""
    return " ".join(f"`{sha256[i : i + 16]}`" for i in range(0, len(sha256), 16))


def hash_groups(sha256: str) -> str:
    """The hash as four plain groups of 16 (for one-line texts)."""
    return " ".join(sha256[i : i + 16] for i in range(0, len(sha256), 16))


@dataclass(frozen=True)
class Facts:
    """What an approver must see before deciding, as (label, Markdown) items in the order they are read."""

    question: str  # "Sign off the release of `x`?"
    items: list[tuple[str, str]]
    refused: str = ""  # why the last attempt was refused (the form's name field says it first)

    def markdown(self) -> str:
        """One paragraph per item (the Prefect form joins single line breaks, so paragraphs it is)."""
        return "\n\n".join(f"**{label}:** {text}" for label, text in self.items)

    def line(self) -> str:
        """The facts as one plain line (the pending record's ``key_facts``)."""
        return " · ".join(f"{label}: {text.replace('`', '')}" for label, text in self.items)


def _phi(plan: PrivacyPlan) -> str:
    # a split synthesis: each part's tables, measured on its own records
    return "; ".join(f"{f'[{m.part}] ' if m.part else ''}{' × '.join(m.clique)}" for m in plan.marginals)


def _rows(rows: int | None) -> str:
    return "the noisy total of the tables (a DP figure)" if rows is None else f"{rows:,} synthetic records"


def agreement_facts(agreement: Agreement, sha256: str, plan: PrivacyPlan, deadline: str, note: str = "") -> Facts:
    """The agreement pause's facts: Φ, the rows asked, the privacy cost the plan implies, the deadline, the hash."""
    eps = release_epsilon(plan)
    privacy = (
        f"{eps.words()} — NO NOISE: exact tables; no release of this dataset has a DP guarantee after this"
        if eps.unbounded
        else f"{eps.words()}, δ = {num(plan.delta, 3)} (ρ = {num(eps.rho, 6)}, zCDP)"
    )
    return Facts(
        question=f"Approve the Φ agreement `{agreement.spec_name}`?",
        refused=note,
        items=[
            (f"Φ ({len(plan.marginals)} tables of `{agreement.dataset_name}`)", _phi(plan)),
            ("Rows to release", _rows(agreement.rows)),
            ("Privacy of this release", privacy),
            ("Decide by", deadline or "no deadline"),
            ("Agreement hash (what you approve)", hash_lines(sha256)),
        ],
    )


def release_facts(candidate: str, card: Card, deadline: str, note: str = "") -> Facts:
    """The release pause's facts, all from the draft card (what is published: Prefect shows them to every holder
    of its login): the verdict and each audit row, Φ, the rows released, the privacy statement, the deadline and
    the full candidate hash."""
    verdict = card.verdict.label
    rows = [f"{c['result']} — {c['name']}" for c in card.audit["checks"]]
    rows += [f"{s['verdict']} — {s['title']} (overall)" for s in card.audit_sections.values()]
    blocked = " — the release is blocked whatever you decide" if card.verdict.result == "fail" else ""
    return Facts(
        question=f"Sign off the release `{card.release_id}`?",
        refused=note,
        items=[
            ("Overall verdict", f"**{verdict.upper()}**{blocked}"),
            ("Audit rows (computed without the confidential data)", "; ".join(rows) or "none"),
            (f"Φ ({len(card.phi)} tables of `{card.dataset['name']}`)", _phi(card.privacy)),
            (
                "Rows to release",
                f"{int(card.synthetic['rows']):,} synthetic records, public seed {card.synthetic['seed']}",
            ),
            ("Privacy", key_facts(card.statement)),
            ("Decide by", deadline or "no deadline"),
            ("Release candidate hash (what you approve)", hash_lines(candidate)),
        ],
    )


def form_fields(facts: Facts, subject: str, candidate: str) -> dict[str, tuple[str, str]]:
    """The form's field titles and help (field name → (title, Markdown)), which the Prefect UI shows at full height
    whatever the window: the facts under the Decision field, a refusal's reason under the name field, the hash
    again under the confirmation."""
    out = {
        "approver": (
            "Your name",
            (f"**{facts.refused}**\n\n" if facts.refused else "") + "exactly as listed in the approvers registry",
        ),
        "decision": (f"Decision — {facts.question}", facts.markdown()),
    }
    if subject == "release":
        out["confirm_hash"] = (
            "Confirm hash (to approve; leave empty to reject)",
            f"type the first 8 characters of the release candidate hash {hash_lines(candidate)}",
        )
    return out


def _budget_lines(plan: PrivacyPlan, acct: Account | None, card: Card | None = None) -> list[str]:
    if card is not None:
        lines = [f"- **Privacy:** {headline(card.statement)}"]
    else:
        eps = release_epsilon(plan)
        lines = [
            "- **Privacy: NO NOISE** — the statistics are declared public; no DP guarantee."
            if eps.unbounded
            else f"- **Privacy budget of this release:** ρ = {num(eps.rho, 6)} (zCDP) → {eps.words()} at "
            f"δ = {num(plan.delta, 3)}; σ per marginal: "
            + ", ".join(sorted({f"{m.sigma:.4g}" for m in plan.marginals}))
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
    agreement: Agreement, sha256: str, proposer: str, plan: PrivacyPlan, acct: Account | None, facts: Facts
) -> str:
    """The agreement pause's form text (Markdown): the facts, the budget, the generator and who decides. Every
    holder of the Prefect login reads it, so it names the dataset, never a hash of its content or a figure of it."""
    return "\n".join(
        [
            f"**{facts.question}** Proposed by **{proposer}** (analyst).",
            "",
            facts.markdown(),
            "",
            *_budget_lines(plan, acct),
            f"- **Generator:** {agreement.generator.name}, public seed {agreement.seed}",
            "",
            "Decide as a **data controller** listed in the approvers registry; the proposer cannot decide. "
            "Rejecting ends the run: no noise is drawn, nothing is released.",
        ]
    )


def release_md(proposer: str, plan: PrivacyPlan, acct: Account | None, card: Card, evidence: str, facts: Facts) -> str:
    """The release pause's form text: the facts first, then the privacy headline, the ledger and where the draft
    card and the evidence are.

    It is read through Prefect by anyone holding the server's login, so it holds only what the draft ``card``
    publishes (public facts and DP figures); what was computed on the confidential data (the utility against the
    real data, the pre-registered audits' figures) stays in the controller's evidence report, named by
    ``evidence`` (where it lies in the registry)."""
    return "\n".join(
        [
            f"**{facts.question}** Proposed by **{proposer}**.",
            "",
            facts.markdown(),
            "",
            "- **To approve**, type the first 8 characters of the candidate hash in the form's *Confirm hash* field; "
            "rejecting needs no hash.",
            "- **Draft card:** the *Artifacts* tab of this run shows the generator card exactly as it will be "
            "published (draft-card) and the release summary (release-candidate). On approval the card is published "
            "unchanged, with your sign-off appended.",
            *_budget_lines(plan, acct, card),
            "- **Controller side (not shown here):** the utility against the real data and the pre-registered "
            f"audits' figures are in the evidence report, `{evidence}` in the registry; `sdgov approve` on the "
            "controller's machine prints where it is. This form is readable by every holder of the Prefect login, "
            "so it carries only what the card publishes.",
            "",
            "Approving publishes an immutable release whose generator card lists this decision under *Sign-offs*. "
            "Rejecting ends the run; nothing is released.",
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
