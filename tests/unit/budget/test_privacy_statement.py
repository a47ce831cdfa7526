"""Issue 39: one typed privacy statement, and every ε and δ on every surface is its figure.

The special cases go through every surface: the card (HTML and Markdown, rendered from the statement), the release
pause form (its fields' titles and help, and the text above them), ``sdgov approve``'s summary, ``sdgov budget``'s
lines and the trail's ``released`` line. Each ε and δ a surface prints must be one the statement holds (formatted
as the statement formats it), and an unbounded statement's surfaces print no finite ε at all."""

from __future__ import annotations

import re

import pytest

from sdgov.agreement.resolve import resolve
from sdgov.agreement.spec import PrivacySpec, ReleaseSpec, SelectionSpec
from sdgov.audits.protocol import AuditReport, Check
from sdgov.budget.accounting import epsilon_of_rho, epsilon_pld_of_sigmas, plan_agreement, plan_privacy
from sdgov.budget.statement import PrivacyStatement, cumulative_epsilon, key_facts, num
from sdgov.data.schema import load_schema
from sdgov.demo import inputs
from sdgov.reporting.approver_summaries import form_fields, release_facts, release_md
from sdgov.reporting.card import Card, PhiEntry, render, split_summary
from sdgov.reporting.verdict import overall_verdict
from tests.statements import statement_of

CLIQUES = [("Age",), ("Sex",), ("Age", "Sex"), ("Region", "Health")]
SHA = "0123abcd" * 8
EPSILON = re.compile(r"ε\s*(?:=|≤)\s*(-?[0-9][0-9.e+-]*)")
DELTA = re.compile(r"δ\s*=\s*([0-9][0-9.e+-]*)")


def _split_plan():
    schema = load_schema(inputs() / "schema.yaml")
    parts = [
        {"name": n, "codes": [c], "share": s, "phi": {"marginals": [["Age"], ["Region", "Health"]]}}
        for n, c, s in (("men", 1, 1.0), ("women", 2, 3.0))
    ]
    spec = ReleaseSpec.model_validate(
        {
            "name": "x",
            "dataset": {"name": "d", "path": "d.csv"},
            "schema": "s.yaml",
            "split": {"attribute": "Sex", "parts": parts},
            "privacy": {"rho": 0.01},
            "seed": 1,
        }
    )
    agreement = resolve(spec, schema)
    return agreement, plan_agreement(agreement)


def _cases() -> dict[str, PrivacyStatement]:
    noisy = plan_privacy(PrivacySpec(epsilon=1.0), CLIQUES, delta=1e-9)
    selection = plan_privacy(PrivacySpec(rho=0.03, selection=SelectionSpec()), CLIQUES, delta=1e-9)
    _, split = _split_plan()
    # three releases sharing tables: this one's 4 tables, 2 of them reused; the account holds 6 distinct σs
    shared = [m.sigma for m in noisy.marginals] + [15.0, 20.0]
    total = sum(1 / (2 * s**2) for s in shared)
    three = statement_of(
        noisy,
        before=total - noisy.rho,
        cumulative=cumulative_epsilon(total, shared, 1e-9, False),
        sharing=["r1", "r2"],
    )
    return {
        "noise none": statement_of(plan_privacy(PrivacySpec(noise="none"), CLIQUES)),
        "after an exact release": statement_of(noisy, exact=True),
        "private selection": statement_of(selection),
        "split parts": statement_of(split),
        "three releases sharing tables": three,
        "one release": statement_of(noisy),
    }


CASES = _cases()


def figures(s: PrivacyStatement) -> tuple[set[str], set[str]]:
    """Every ε and every δ the statement holds, as surfaces print them."""
    eps = [s.release, s.cumulative, *s.parts.values()]
    epsilons = {num(x) for e in eps for x in (e.zcdp, e.pld) if x is not None}
    if s.floor is not None and s.floor.max_epsilon is not None:
        epsilons.add(num(s.floor.max_epsilon))
    return epsilons, {num(s.delta, 3)} if s.delta is not None else set()


def _card(s: PrivacyStatement) -> Card:
    """A card as the draft stage builds it around ``s`` (its other figures are not privacy figures)."""
    agreement, plan = _split_plan() if s.parts else (None, plan_privacy(PrivacySpec(epsilon=1.0), CLIQUES, delta=1e-9))
    audit = AuditReport(
        verdict="pass", checks=[Check(name="measurements are exactly Φ", passed=True, detail="")], not_run=[]
    )
    return Card(
        title="Generator card — demo",
        release_id="demo-1",
        created="2026-11-29T00:00:00Z",
        agreement_sha256=SHA,
        psi_sha256=SHA,
        description="Toyland tables",
        dataset={
            "name": "toyland_census",
            "schema": "toyland",
            "source": "made up",
            "noisy_rows": 1000,
            "commitment": "hmac-sha256",
            "fingerprint_hmac": SHA,
            "sha256_hmac": SHA,
            "dvc_md5_hmac": SHA,
            "measurements_dvc_md5": SHA[:32],
        },  # fmt: skip
        attributes=[],
        phi=[
            PhiEntry(attributes=list(m.clique), plain="", cells=4, sigma=m.sigma, rho=m.rho, tvd=0.01, part=m.part)
            for m in plan.marginals
        ],  # fmt: skip
        not_preserved=[],
        privacy=plan,
        statement=s,
        generator={"name": "pgm"},
        synthetic={"rows": 900, "seed": 1, "chunk_rows": 1000, "file": "synthetic.parquet", "sha256": SHA},
        utility_note="",
        verdict=overall_verdict(audit),
        audit={"checks": [{"name": "measurements are exactly Φ", "result": "pass"}], "not_run": []},
        signoffs=[],
        provenance={"stages": [], "environment": {"sdgov": "1", "git_commit": "x", "python": "3.11", "packages": {}}},
        registry_key_fingerprint="sha256:" + "f" * 64,
        split=split_summary(agreement, plan, s, {}) if agreement is not None else None,
    )


def surfaces(s: PrivacyStatement) -> dict[str, str]:
    """The statement as every surface prints it."""
    from sdgov.commands.decide import approval_summary
    from sdgov.commands.registry import _privacy_lines
    from sdgov.registry.trail import render_text

    card = _card(s)
    texts = render(card, figures=False)
    facts = release_facts(SHA, card, "2026-11-30T00:00:00Z", note="")
    fields = form_fields(facts, "release", SHA)
    pending = {"run_id": "r", "subject": "release", "sha256": SHA, "proposer": "Ada Analyst",
               "summary": {"phi": ["Age"], "privacy": key_facts(s), "verdict": "pass", "rows": 900}}  # fmt: skip
    budget = {"epsilon": s.cumulative.model_dump(), "delta": s.delta,
              "releases": [{"release_id": "demo-1", "time": "t", "statement": s.model_dump(mode="json")}]}  # fmt: skip
    released = {"seq": 7, "time": "t", "who": "Carl Controller", "role": "controller", "event": "released",
                "what": "published the release", "dataset": "", "agreement_sha256": SHA, "release_id": "demo-1",
                "run_id": "r", "decision": "approve", "artifacts": {},
                "comment": f"released after sign-off of candidate {SHA}; privacy: {key_facts(s)}"}  # fmt: skip
    trail = {"root": "/r", "verified": True, "problems": [], "events": [released], "dataset": None, "total_events": 1}
    return {
        "card.html": texts["card.html"],
        "card.md": texts["card.md"],
        "form fields": "\n".join(f"{title}\n{help_}" for title, help_ in fields.values()),
        "form text": release_md("Ada Analyst", card.privacy, None, card, "runs/r/evidence/evidence.html", facts),
        "sdgov approve": approval_summary(pending),
        "sdgov budget": "\n".join(_privacy_lines(budget)),
        "trail": render_text(trail),
    }


@pytest.mark.parametrize("case", list(CASES))
def test_every_epsilon_and_delta_on_every_surface_is_the_statements(case):
    s = CASES[case]
    epsilons, deltas = figures(s)
    for surface, text in surfaces(s).items():
        shown_eps = set(EPSILON.findall(text))
        assert shown_eps <= epsilons, (case, surface, shown_eps - epsilons)
        assert set(DELTA.findall(text)) <= deltas, (case, surface, set(DELTA.findall(text)) - deltas)
        if s.spent:  # nothing finite to claim, anywhere
            assert not shown_eps and "ε = ∞" in text, (case, surface)
        elif surface not in ("trail",):
            assert num(s.release.zcdp) in shown_eps, (case, surface)
    html = surfaces(s)["card.html"]
    if s.cumulative.unbounded:
        assert "no differential-privacy guarantee" in html
    else:  # the card's figures table is the statement's rows, label by label
        from sdgov.budget.statement import rows

        for label, value in rows(s):
            assert f"<tr><th>{label}</th><td>{value}</td></tr>" in html, label


def test_the_statement_accounts_each_case():
    one, three, split, selection = (
        CASES[k] for k in ("one release", "three releases sharing tables", "split parts", "private selection")
    )
    plan = plan_privacy(PrivacySpec(epsilon=1.0), CLIQUES, delta=1e-9)
    assert one.release.zcdp == pytest.approx(plan.epsilon) == pytest.approx(1.0)
    assert one.release.pld == pytest.approx(epsilon_pld_of_sigmas([m.sigma for m in plan.marginals], 1e-9))
    assert one.cumulative == one.release  # the first release: the dataset's ε is its own
    assert three.cumulative.zcdp == pytest.approx(epsilon_of_rho(three.spent_after_rho, 1e-9))
    assert three.cumulative.zcdp > three.release.zcdp and three.earlier_releases_sharing == ["r1", "r2"]
    assert set(split.parts) == {"men", "women"} and all(p.zcdp < split.release.zcdp for p in split.parts.values())
    assert selection.release.pld is None and selection.selection_rho  # no PLD covers the exponential mechanism
    assert "private selection (MST)" in surfaces(selection)["card.md"]
    exact, after = CASES["noise none"], CASES["after an exact release"]
    assert exact.exact and exact.spent and exact.release.rho is None and exact.delta is None
    assert not after.exact and after.spent and after.release.unbounded and after.release.rho == pytest.approx(plan.rho)
    assert "THE DATASET'S PRIVACY IS SPENT" in surfaces(after)["card.md"]


def test_the_release_form_carries_what_is_signed_in_its_fields():
    """Prefect collapses the text above the fields on a laptop screen: Φ, the rows, the verdict and each audit row,
    ε/δ, the deadline, the full hash and a refusal's reason are in the fields' titles and help; rejecting needs no
    hash, the signature stays required."""
    from sdgov.flows.governed import form_for

    s = CASES["one release"]
    card = _card(s)
    facts = release_facts(SHA, card, "2026-11-30T10:00:00Z", note="Attempt 1 by 'Carl' was refused: wrong hash")
    texts = form_fields(facts, "release", SHA)
    form = form_for("release", allow_unsigned=False).for_pause("text above", texts)
    schema = form.model_json_schema()
    props = schema["properties"]
    shown = "\n".join(f"{p.get('title', '')}\n{p.get('description', '')}" for p in props.values())
    groups = [SHA[i : i + 16] for i in range(0, 64, 16)]
    for needle in ("Age × Sex", "900 synthetic records", "**PASS**", "pass — measurements are exactly Φ",
                   key_facts(s), "2026-11-30T10:00:00Z", "wrong hash", *groups):  # fmt: skip
        assert needle in shown, needle
    assert "Sign off the release `demo-1`?" in props["decision"]["title"]
    assert "wrong hash" in props["approver"]["description"]
    assert set(schema["required"]) == {"approver", "decision", "signature"}  # confirm_hash: approving only
    form(approver="Carl Controller", decision="reject", signature="sdgov1.x")  # a rejection without a hash
