"""Audit-trail review: every event of the hash-chained log, readable, filterable, exportable to W3C PROV-JSON.

For a compliance reviewer reconstructing *who approved what, on which evidence*: each row is one log event —
who (actor), in which role, what happened, when, the artifact hashes it names, the decision and the comment —
and the whole table carries the verification status of the chain and of every released byte
(:meth:`sdgov.registry.log.Registry.verify`).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from sdgov.registry.log import Event, Registry

WHAT = {
    "registry_created": "created the registry (its id and signing key)",
    "policy_changed": "adopted a new version of a controller file",
    "approvers_changed": "adopted a new version of the approvers registry (who may propose and decide)",
    "agreement_signed": "signed the Φ agreement (standing approval)",
    "agreement_proposed": "proposed the Φ agreement",
    "agreement_approved": "approved the Φ agreement",
    "agreement_rejected": "rejected the Φ agreement",
    "approval_refused": "attempted a decision that was refused",
    "approval_timeout": "no decision before the timeout",
    "run_refused": "refused a run that could not start (scheduled, or parameters not the controller's)",
    "proposal_refused": "refused a proposal (unsigned, wrongly signed, replayed or stale)",
    "selection_proposed": "proposed a draft for private selection of Φ",
    "decision_pending": "recorded what a paused run awaits (what approvers are shown)",
    "run_tampered": "detected a change to the run's record on the Prefect server by someone else",
    "worker_started": "started the controller's worker (its configuration's hash)",
    "commitment_secret": "committed the id of the commitment secret in force (first use, or rotated)",
    "budget_spent": "privacy budget spent (ledger)",
    "budget_refused": "privacy budget refused the measurement",
    "budget_lifetime_changed": "set the dataset's lifetime ρ in the controller's budget authority",
    "budget_retry_approved": "approved a retry after the budget was raised",
    "budget_rejected": "declined to raise the privacy budget",
    "measured": "drew and persisted the noisy marginals",
    "release_approved": "approved the release candidate",
    "release_rejected": "rejected the release candidate",
    "release_blocked": "release blocked",
    "run_failed": "the run failed: nothing was released",
    "released": "published the release",
    "phi_selected": "proposed Φ by private selection",
    "phi_reviewed": "reviewed the proposed Φ (pairs dropped or forced, and why)",
    "phi_review_refused": "attempted a review of Φ that was refused",
    "phi_proposed": "proposed the reviewed Φ for agreement",
}

PERFORMED_BY_SDGOV = {"released"}
"""Events sdgov performs on a person's decision: the log names the approver, the trail says sdgov acted."""

SIGNED_AT = "standing_approval_signed"
"""The artifact of an event that applies a standing approval: when its person signed it, or ``unsigned``
(sdgov/governance/standing.py writes it)."""

DECISIONS = {
    "agreement_approved",
    "agreement_rejected",
    "agreement_signed",
    "approval_refused",
    "budget_retry_approved",
    "budget_rejected",
    "phi_reviewed",
    "release_approved",
    "release_rejected",
}
"""Events that record a person's decision: only these show it (a system event is never tagged [approve])."""

EXACT = "(noise: none, no privacy)"
"""How the ``measured`` event's comment marks marginals measured exactly (sdgov/measurement/store.py)."""

STANDING_SUBJECT = {"agreement_signed": "the Φ agreement", "release_approved": "the release candidate"}


def standing_signed(r: dict[str, Any]) -> str | None:
    """For an event that applied a standing approval, when its person signed it ('' if the log does not say,
    'unsigned' in a sandbox registry); None for any other event. sdgov applied it at the event's time."""
    if r["event"] not in STANDING_SUBJECT:
        return None
    at = r["artifacts"].get(SIGNED_AT)
    if isinstance(at, str):
        return at
    if r["event"] == "agreement_signed" or r["comment"].startswith("standing approval"):  # logs before the artifact
        return ""
    return None


def readable(r: dict[str, Any]) -> tuple[str, str]:
    """Who did it and what, as a reader should see it: sdgov publishes, on the approver's decision; sdgov applies a
    standing approval, which its person signed at their own time."""
    if r["event"] == "measured" and EXACT in r["comment"]:
        return f"{r['who']} ({r['role']})", "measured and persisted the marginals exactly (no noise, no privacy)"
    if r["event"] in PERFORMED_BY_SDGOV:
        return "sdgov (system)", f"{r['what']}, approved by {r['who']} ({r['role']})"
    at = standing_signed(r)
    if at is not None:
        when = {"": "", "unsigned": " (unsigned: typed names, not verified)"}.get(at, f" at {at}")
        return (
            "sdgov (system)",
            f"applied the standing approval of {STANDING_SUBJECT[r['event']]} signed by {r['who']} ({r['role']}){when}",
        )
    return f"{r['who']} ({r['role']})", r["what"]


ARTIFACT_LABELS = {"spec": "spec file", "candidate": "release candidate hash", "release": "release candidate hash"}
"""One name per hash (see :func:`artifact_label`)."""


AGREEMENT_FILE_EVENTS = {"agreement_proposed", "agreement_signed"}
"""The agree stages' events: their ``agreement`` artifact is the run's agreement.json file, hashed as bytes."""


def artifact_label(r: dict[str, Any], name: str, value: object) -> str:
    """What a logged artifact is: the agree stages name the run's agreement.json file (its bytes' sha256); every
    other event naming ``agreement`` or ``budget`` — a decision, a pause, a refusal by the flow or by ``sdgov
    approve`` — names the agreement hash (the sha256 of the agreement's canonical JSON)."""
    if name == "agreement" and r["event"] in AGREEMENT_FILE_EVENTS and value != r["agreement_sha256"]:
        return "agreement.json (file sha256)"
    if name in ("agreement", "budget"):
        return "agreement hash"
    if name == SIGNED_AT:
        return "standing approval signed"
    return ARTIFACT_LABELS.get(name, name)


OUTCOMES = {
    "released": "released",
    "agreement_rejected": "rejected (the Φ agreement)",
    "release_rejected": "rejected (the release)",
    "budget_rejected": "rejected (the budget retry)",
    "approval_timeout": "timed out awaiting a decision",
    "release_blocked": "blocked (an audit failed)",
    "budget_refused": "refused by the privacy budget",
    "run_failed": "failed",
    "run_refused": "refused before it started",
}
"""The events that end a run, and its outcome in words (``sdgov runs``)."""


def finished_runs(events: list[Event]) -> list[dict[str, str]]:
    """Every run the log saw end, newest last: its run id, when, how (:data:`OUTCOMES`), who decided it when a
    person did, the release id when released, and the event's comment (why it failed or was refused)."""
    last: dict[str, Event] = {}
    for e in events:
        if e.event in OUTCOMES and e.run_id:
            last.pop(e.run_id, None)
            last[e.run_id] = e  # a budget refusal the controller retried is followed by the run's real end
    return [
        {
            "run_id": run_id,
            "time": e.time,
            "outcome": OUTCOMES[e.event],
            "event": e.event,
            "who": e.actor if e.role not in ("system", "unverified") else "",
            "release_id": e.release_id,
            "comment": e.comment,
        }
        for run_id, e in last.items()
    ]


def decision_of(r: dict[str, Any]) -> str:
    return r["decision"] if r["event"] in DECISIONS and r["role"] != "system" else ""


def comment_fields(comment: str) -> list[tuple[str, str]] | None:
    """A comment that holds a JSON object (the ledger's) as readable ``key: value`` pairs; None for plain text."""
    if not comment.startswith("{"):
        return None
    try:
        d = json.loads(comment)
    except ValueError:
        return None
    if not isinstance(d, dict):
        return None
    return [(str(k), v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)) for k, v in d.items()]


def dataset_index(registry: Registry) -> dict[str, str]:
    """agreement sha256 → declared dataset name, from every agreement.json the registry holds."""
    out: dict[str, str] = {}
    for p in list(registry.root.glob("runs/*/agreement.json")) + list(
        registry.root.glob("releases/*/artifacts/agreement.json")
    ):
        try:
            d = json.loads(p.read_text())
            out[d["sha256"]] = d["agreement"]["dataset_name"]
        except (ValueError, KeyError, OSError):
            continue
    return out


def _dataset_of(e: Event, index: dict[str, str]) -> str:
    if e.event in ("budget_spent", "budget_refused", "budget_lifetime_changed"):
        try:
            return json.loads(e.comment)["dataset"]
        except (ValueError, KeyError):
            pass
    return index.get(e.agreement_sha256, "")


def build_trail(registry: Registry, dataset: str | None = None) -> dict[str, Any]:
    problems = registry.verify()
    try:
        events = registry.events()
    except ValueError:  # a corrupted line: show what can be read
        events = []
        for line in registry.log_path.read_text(errors="replace").splitlines():
            try:
                events.append(Event.model_validate_json(line))
            except ValueError:
                continue
    index = dataset_index(registry)
    rows = []
    for e in events:
        ds = _dataset_of(e, index)
        if dataset and ds != dataset:
            continue
        rows.append(
            {
                "seq": e.seq,
                "time": e.time,
                "who": e.actor,
                "role": e.role,
                "event": e.event,
                "what": WHAT.get(e.event, e.event),
                "dataset": ds,
                "agreement_sha256": e.agreement_sha256,
                "release_id": e.release_id,
                "run_id": e.run_id,
                "decision": e.decision,
                "comment": e.comment,
                "artifacts": dict(e.artifacts),
                "hash": e.hash,
                "prev": e.prev,
            }
        )
    return {
        "root": str(registry.root.resolve()),
        "verified": not problems,
        "problems": problems,
        "events": rows,
        "dataset": dataset,
        "total_events": len(events),
    }


def render_text(t: dict[str, Any]) -> str:
    head = (
        "chain and artifacts VERIFIED"
        if t["verified"]
        else "VERIFICATION FAILED:\n" + "\n".join(f"  {p}" for p in t["problems"])
    )
    lines = [
        f"{t['root']}: {head}; {len(t['events'])} of {t['total_events']} event(s)"
        + (f" for dataset {t['dataset']!r}" if t["dataset"] else "")
    ]
    for r in t["events"]:
        who, what = readable(r)
        lines.append(
            f"#{r['seq']:<3} {r['time']}  {who} {what}"
            + (f" [{decision_of(r)}]" if decision_of(r) else "")
            + (f" agreement hash {r['agreement_sha256'][:12]}…" if r["agreement_sha256"] else "")
            + (f" release {r['release_id']}" if r["release_id"] else "")
        )
        if r["comment"]:
            lines.append(f"      comment: {r['comment']}")
        for k, v in r["artifacts"].items():
            lines.append(f"      {artifact_label(r, k, v)}: {v}")
    return "\n".join(lines)


def render_trail_html(t: dict[str, Any]) -> str:
    e = html.escape
    status = (
        '<p class="ok">✔ The hash chain and every released artifact verify.</p>'
        if t["verified"]
        else '<p class="bad">✘ Verification FAILED:</p><ul>'
        + "".join(f"<li>{e(p)}</li>" for p in t["problems"])
        + "</ul>"
    )

    def comment(text: str) -> str:
        fields = comment_fields(text)
        if fields is None:
            return e(text)
        return "<dl>" + "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in fields) + "</dl>"

    rows = "".join(
        f"<tr><td>{r['seq']}</td><td>{e(r['time'])}</td><td>{e(readable(r)[0])}</td>"
        f"<td>{e(readable(r)[1])}<br><code>{e(r['event'])}</code></td><td>{e(r['dataset'])}</td>"
        f"<td>{e(decision_of(r))}</td><td class='c'>{comment(r['comment'])}</td><td class='h'>"
        + (f"agreement hash {e(r['agreement_sha256'])}<br>" if r["agreement_sha256"] else "")
        + (f"release {e(r['release_id'])}<br>" if r["release_id"] else "")
        + "".join(f"{e(artifact_label(r, k, v))}: {e(v)}<br>" for k, v in r["artifacts"].items())
        + f"</td><td class='h'>{e(r['hash'])}</td></tr>"
        for r in t["events"]
    )
    title = "Audit trail" + (f" — dataset {t['dataset']}" if t["dataset"] else "")
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title><style>
body{{font-family:system-ui,sans-serif;margin:2em;color:#222}}
table{{border-collapse:collapse;font-size:13px;width:100%;table-layout:fixed}}
td,th{{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left;overflow-wrap:anywhere}}
th{{background:#f3f3f3}} .c dl{{margin:0}} .c dt{{font-weight:600}} .c dd{{margin:0 0 .2em .8em}}
.h{{font-family:monospace;font-size:11px;word-break:break-all}} .ok{{color:#1b7837;font-weight:bold}}
.bad{{color:#b2182b;font-weight:bold}}</style></head><body>
<h1>{e(title)}</h1><p>Registry <code>{e(t["root"])}</code>: {len(t["events"])} of {t["total_events"]} event(s).
Each event carries the sha256 of the one before; re-check with <code>sdgov registry verify</code>.</p>{status}
<table><colgroup><col style="width:3%"><col style="width:11%"><col style="width:11%"><col style="width:15%">
<col style="width:8%"><col style="width:6%"><col style="width:16%"><col style="width:18%">
<col style="width:12%"></colgroup>
<tr><th>#</th><th>When (UTC)</th><th>Who (role)</th><th>What</th><th>Dataset</th><th>Decision</th>
<th>Comment</th><th>Artifacts (sha256)</th><th>Event hash</th></tr>{rows}</table></body></html>
"""


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in s.strip()) or "unknown"


def to_prov(t: dict[str, Any]) -> dict[str, Any]:
    """The trail as W3C PROV-JSON (https://www.w3.org/submissions/prov-json/): agents, activities, entities."""
    doc: dict[str, Any] = {
        "prefix": {
            "sdgov": "https://sdgov.example/ns#",
            "agent": "https://sdgov.example/agent/",
            "event": "https://sdgov.example/event/",
            "sha256": "urn:sha256:",
            "agreement": "urn:sdgov:agreement:",
            "release": "urn:sdgov:release:",
        },
        "agent": {},
        "activity": {},
        "entity": {},
        "wasAssociatedWith": {},
        "used": {},
        "wasGeneratedBy": {},
        "wasDerivedFrom": {},
        "actedOnBehalfOf": {},
        "wasInformedBy": {},
    }

    def rel(kind: str, key: str, body: dict[str, Any]) -> None:
        doc[kind][f"_:{kind}{len(doc[kind])}_{key}"] = body

    def agent(who: str, system: bool) -> str:
        ag = f"agent:{_slug(who)}"
        kind = "prov:SoftwareAgent" if system else "prov:Person"
        doc["agent"].setdefault(ag, {"prov:label": who, "prov:type": {"$": kind, "type": "prov:QUALIFIED_NAME"}})
        return ag

    for r in t["events"]:
        act = f"event:{r['seq']}"
        doc["activity"][act] = {
            "prov:startTime": r["time"],
            "prov:endTime": r["time"],
            "prov:label": readable(r)[1],
            "prov:type": {"$": f"sdgov:{r['event']}", "type": "prov:QUALIFIED_NAME"},
            "sdgov:decision": decision_of(r),
            "sdgov:comment": r["comment"],
            "sdgov:eventHash": r["hash"],
            "sdgov:prevHash": r["prev"],
            "sdgov:verified": t["verified"],
            "sdgov:dataset": r["dataset"],
        }
        signed = standing_signed(r)
        if r["event"] in PERFORMED_BY_SDGOV or signed is not None:  # sdgov acts, on the person's decision
            sdgov, person = agent("sdgov", True), agent(r["who"], False)
            rel("wasAssociatedWith", str(r["seq"]), {"prov:activity": act, "prov:agent": sdgov, "prov:role": "system"})
            rel(
                "actedOnBehalfOf",
                str(r["seq"]),
                {"prov:delegate": sdgov, "prov:responsible": person, "prov:activity": act},
            )
            if signed:  # the person's own act: signing the standing approval, at its time
                sig = f"{act}_signed"
                doc["activity"][sig] = {
                    "prov:startTime": signed,
                    "prov:endTime": signed,
                    "prov:label": f"signed the standing approval of {STANDING_SUBJECT[r['event']]}",
                }
                rel(
                    "wasAssociatedWith",
                    f"{r['seq']}_signed",
                    {"prov:activity": sig, "prov:agent": person, "prov:role": r["role"]},
                )
                rel("wasInformedBy", str(r["seq"]), {"prov:informed": act, "prov:informant": sig})
        else:
            ag = agent(r["who"], r["role"] == "system")
            rel("wasAssociatedWith", str(r["seq"]), {"prov:activity": act, "prov:agent": ag, "prov:role": r["role"]})
        if r["agreement_sha256"]:
            ent = f"agreement:{r['agreement_sha256']}"
            doc["entity"].setdefault(
                ent, {"prov:label": "Φ agreement", "sdgov:sha256": r["agreement_sha256"], "sdgov:dataset": r["dataset"]}
            )
            if r["event"] == "agreement_proposed":
                rel("wasGeneratedBy", str(r["seq"]), {"prov:entity": ent, "prov:activity": act, "prov:time": r["time"]})
            else:
                rel("used", str(r["seq"]), {"prov:activity": act, "prov:entity": ent, "prov:time": r["time"]})
        generated = r["event"] in ("measured", "released")
        for name, sha in r["artifacts"].items():
            if not (isinstance(sha, str) and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)):
                continue  # e.g. a signature, not a content hash
            if sha == r["agreement_sha256"]:
                continue  # the agreement hash: the agreement entity above, not a file
            ent = f"sha256:{sha}"
            doc["entity"].setdefault(ent, {"prov:label": artifact_label(r, name, sha), "sdgov:sha256": sha})
            kind = "wasGeneratedBy" if generated else "used"
            rel(
                kind,
                f"{r['seq']}_{_slug(name)}",
                {
                    "prov:entity" if generated else "prov:activity": ent if generated else act,
                    "prov:activity" if generated else "prov:entity": act if generated else ent,
                    "prov:time": r["time"],
                },
            )
        if r["release_id"]:
            ent = f"release:{r['release_id']}"
            doc["entity"][ent] = {"prov:label": f"release {r['release_id']}", "prov:type": "sdgov:Release"}
            rel(
                "wasGeneratedBy",
                f"{r['seq']}_release",
                {"prov:entity": ent, "prov:activity": act, "prov:time": r["time"]},
            )
            if r["agreement_sha256"]:
                rel(
                    "wasDerivedFrom",
                    r["release_id"],
                    {"prov:generatedEntity": ent, "prov:usedEntity": f"agreement:{r['agreement_sha256']}"},
                )
    return {k: v for k, v in doc.items() if v}


def write(path: str | Path, text: str) -> Path:
    from sdgov.base.atomic import atomic_write_text

    p = Path(path)
    atomic_write_text(p, text)
    return p
