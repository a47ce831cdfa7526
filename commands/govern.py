"""Governance commands: the Prefect server, governed releases, decisions from the command line, keys and the
controller's files.

    sdgov server start [--port 4200] [--auth USER:PASS] [--home DIR] [--print-env]
    sdgov propose --spec FILE --as ANALYST [--root DIR] [--timeout S]     (runs and pauses)
    sdgov propose --select mst --spec DRAFT --as ANALYST [--review]   private selection of Φ (--review: pauses for
                                                               the stakeholders' review, then the agreement)
    sdgov runs [--json]                                        paused runs and whom they await; finished ones
    sdgov sign RUN_ID --as NAME --key KEY [--reject]           the signed statement to paste into the UI form
    sdgov approve RUN_ID --as NAME --key KEY [--reject] [--comment TEXT] [--wait S] [--yes --hash PREFIX]
                                                               show Φ, ε/δ, verdict, hash, draft card; sign, resume
    sdgov keygen --out KEY.pem                                 Ed25519 key; prints the public_key line
    sdgov approvers commit --as CONTROLLER --key KEY [--root DIR]   sign the controller files' new hashes into the log
    sdgov approvals sign FILE --as NAME --key KEY [--root DIR]      sign a standing approval (demo, scheduled runs)
    sdgov approvals pin FILE --spec SPEC --valid-until DATE [--data FILE]   pin it to the agreement and the data

Client commands reach the server named by ``PREFECT_API_URL`` (and ``PREFECT_API_AUTH_STRING`` when the server
has basic auth); ``sdgov server start --print-env`` prints both. ``sdgov review`` (a Φ review) is in
:mod:`.review`; the ledger and the trail (``sdgov budget``, ``sdgov trail``) in :mod:`.registry`.
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from sdgov.base.errors import InternalError, SdgovError
from sdgov.base.settings import load_settings
from sdgov.commands._common import (
    Parents,
    command,
    emit,
    paused_decision,
    pending,
    pinned_root,
    require_server,
    resume,
    site_of,
    verified_pending,
)

if TYPE_CHECKING:
    from sdgov.flows.plumbing.prefect_api import FlowRun
    from sdgov.registry.log import Registry

# ------------------------------------------------------------------------------------------------ server


def server_env(home: Path, port: int, auth: str | None, database: str | None = None) -> dict[str, str]:
    """The environment of a local Prefect server on 127.0.0.1:``port`` with its SQLite database in ``home`` (or the
    PostgreSQL ``database``, a URL checked by :func:`sdgov.flows.plumbing.server_database.parse`) and the client
    settings; ``auth`` (``USER:PASSWORD``, else an ``SdgovError``) turns on basic auth for both."""
    from sdgov.flows.plumbing.server_database import parse

    env = {
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": parse(database).url
        if database
        else f"sqlite+aiosqlite:///{home / 'prefect.db'}",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_API_HOST": "127.0.0.1",
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_UI_API_URL": f"http://127.0.0.1:{port}/api",
    }
    if auth:
        if ":" not in auth:
            raise SdgovError("--auth must be USER:PASSWORD", "--auth", "e.g. --auth ops:$(openssl rand -hex 12)")
        env["PREFECT_SERVER_API_AUTH_STRING"] = auth  # the server demands HTTP basic auth (UI shows a login)
        env["PREFECT_API_AUTH_STRING"] = auth  # what clients (flows, sdgov approve/runs) send
    return env


def cmd_server(args: argparse.Namespace) -> int:
    """Run a local Prefect server until it stops and return its exit status; it dies with this process, even on
    ``kill -9``. ``--print-env`` only prints the client settings (``export`` lines), exit 0."""
    home = Path(args.home or os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").resolve()
    home.mkdir(parents=True, exist_ok=True)
    auth = args.auth or os.environ.get("PREFECT_SERVER_API_AUTH_STRING")
    database = args.database or load_settings().server_database()
    env = server_env(home, args.port, auth, database)
    client_env = {k: env[k] for k in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING") if k in env}
    if args.print_env:
        emit(args, client_env, "\n".join(f"export {k}={v}" for k, v in client_env.items()))
        return 0
    store = f"SQLite {home / 'prefect.db'}"
    if database:
        from sdgov.flows.plumbing.server_database import check_reachable, parse

        db = parse(database)
        check_reachable(db)  # one line, exit 2, before the server (Prefect's would be a traceback at startup)
        store = f"PostgreSQL {db.shown}"  # never the password
    read, write = os.pipe()  # the server's lifeline (sdgov.base.lifeline): it stops when this process dies, kill -9 too
    cmd = [
        sys.executable,
        "-m",
        "sdgov.base.lifeline",
        str(read),
        "prefect",
        "server",
        "start",
        "--host",
        "127.0.0.1",
        "--port",
        str(args.port),
    ]
    print(
        f"sdgov: Prefect server ({store}, analytics off{', basic auth on' if auth else ''}) "
        f"→ UI http://127.0.0.1:{args.port}\n  clients: "
        + " ".join(f"{k}={'***' if 'AUTH' in k else v}" for k, v in client_env.items()),
        file=sys.stderr,
    )
    if auth:
        print(
            f"  the UI asks for the password at http://127.0.0.1:{args.port}/login (once per browser); a link "
            "into the UI opened before that answers 'Authentication failed' — log in, then open it again",
            file=sys.stderr,
        )
    try:
        proc = subprocess.Popen(cmd, env={**os.environ, **env}, pass_fds=(read,))
    finally:
        os.close(read)
    return _wait_forwarding_signals(proc)


def _wait_forwarding_signals(proc: subprocess.Popen) -> int:
    """Wait for the server; SIGTERM or SIGHUP to ``sdgov server start`` stops it too (its child is not left behind)."""
    import signal

    def stop(signum: int, frame: Any) -> None:
        proc.send_signal(signal.SIGTERM)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # Ctrl-C: the terminal sent SIGINT to the server too; let it finish stopping
            proc.send_signal(signal.SIGTERM)


# ------------------------------------------------------------------------------------------------ propose

DEFAULT_TIMEOUT_S = 3600  # a release run in this process waits this long for its decisions, in total
DEFAULT_POLL_S = 5


def cmd_propose(args: argparse.Namespace) -> int:
    """Run a governed release that pauses for the controller's decisions (``--select``: write a Φ proposal instead;
    with ``--review``: the Φ review first): exit 0 released or proposed, 1 no release. A run needs ``PREFECT_API_URL``;
    a refusal, or a run that failed (a decision that never came), is one line, exit 2."""
    from sdgov.intake.inputs import check_governed_proposal

    if args.review and not args.select:
        raise SdgovError("--review reviews a private selection", "--review", "add --select mst")
    if args.select and args.review:
        return _propose_reviewed(args)
    if args.select:
        return _propose_selection(args)
    if args.submit:
        return _submit_proposal(args)
    require_server()  # an ephemeral server would die with this process: nobody could resume the run
    site = site_of(args)
    root = site.root.resolve()
    token = _sign_local_proposal(args, site.registry)
    checked = check_governed_proposal(site, args.spec, args.who, args.data, token)  # fail fast, before the flow
    from prefect.exceptions import FailedRun

    from sdgov.flows.governed import governed_release_flow
    from sdgov.flows.handover import hand_over
    from sdgov.flows.plumbing.refusals import quiet_refusals

    quiet_refusals()
    try:
        out = governed_release_flow(
            spec_path=str(Path(args.spec).resolve()),
            registry_root=str(root),
            proposer=args.who,
            data_path=str(Path(args.data).resolve()) if args.data else None,
            timeout_s=DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout,
            poll_interval=DEFAULT_POLL_S if args.poll is None else args.poll,
            proposal=token,
            checked=hand_over(checked),
        )
    except FailedRun as exc:  # e.g. a decision that never came: Prefect fails a timed-out pause
        raise SdgovError(
            f"the governed release ended without a release: {exc}",
            str(root),
            "see 'sdgov trail --root ROOT' for the decisions recorded",
        ) from None
    return _emit_outcome(args, out)


def _sign_local_proposal(args: argparse.Namespace, registry: Registry) -> str | None:
    """The analyst's signed proposal for this registry (``--key``), or None: unsigned, which only a sandbox registry
    accepts (the proposal check says so in one line)."""
    if not args.key:
        return None
    from sdgov.agreement.load import load_spec
    from sdgov.governance.proposals import sign_proposal

    registry.require_existing()
    return sign_proposal(registry.registry_id(), load_spec(args.spec).agreement.sha256(), args.who, args.key)


def _submit_proposal(args: argparse.Namespace) -> int:
    """``propose --submit``: sign the proposal for the registry the controller's worker serves and start a run of its
    proposals deployment with the spec's text; this process reads the spec and its public schema only — never the
    data, never the registry key. Exit 0 once the run is created (follow it with ``sdgov runs``)."""
    from prefect import get_client
    from prefect.client.schemas.objects import FlowRun as PrefectRun
    from prefect.deployments import run_deployment
    from prefect.exceptions import ObjectNotFound

    from sdgov.agreement.load import load_spec
    from sdgov.flows.worker import PROPOSALS_FLOW, REGISTRY_TAG
    from sdgov.governance.proposals import sign_proposal
    from sdgov.identity.keys import load_private_key

    if not args.key:
        raise SdgovError("a proposal to the controller's worker must be signed", "--key", "pass --key YOUR_KEY.pem")
    if args.timeout is not None or args.poll is not None:
        raise SdgovError(
            "the controller's worker decides how long a proposal waits for decisions (worker.yaml)",
            "--timeout/--poll",
            "leave them out with --submit; the deadline is shown on the pause's form and by 'sdgov runs'",
        )
    load_private_key(args.key)
    loaded = load_spec(args.spec)
    sha = loaded.agreement.sha256()
    require_server()
    name = f"{PROPOSALS_FLOW}/{args.submit}"
    with get_client(sync_client=True) as c:
        try:
            dep = c.read_deployment_by_name(name)
        except ObjectNotFound:
            raise SdgovError(
                f"no deployment {name} on the Prefect server",
                "--submit",
                "the controller starts it on their machine: sdgov worker start --config worker.yaml",
            ) from None
    rid = next((t.removeprefix(REGISTRY_TAG) for t in dep.tags or [] if t.startswith(REGISTRY_TAG)), "")
    token = sign_proposal(rid, sha, args.who, args.key)
    fr: PrefectRun = run_deployment(  # type: ignore[assignment]  # from sync code: a FlowRun, not a coroutine
        name,
        parameters={
            "proposal": token,
            "spec_yaml": Path(args.spec).read_text(encoding="utf-8"),
        },
        timeout=0,
    )
    payload = {"flow_run_id": str(fr.id), "agreement_sha256": sha, "registry_id": rid, "deployment": name}
    emit(
        args,
        payload,
        f"submitted run {fr.id} of {name}: agreement {sha}, signed by {args.who} for registry {rid}\n"
        "  follow it with 'sdgov runs'; the controller decides in the Prefect UI or with 'sdgov approve'",
    )
    return 0


def _propose_selection(args: argparse.Namespace) -> int:
    """``propose --select mst|aim``: spend the draft's selection share, write the Φ proposal and the proposed spec, and
    print the proposed spec's agreement hash (``--json``: ``agreement_sha256``)."""
    from sdgov.agreement.load import load_spec
    from sdgov.measurement.selection.review import selection_records
    from sdgov.tasks.select_phi import propose_selection, write_proposed_spec, write_record

    site = site_of(args)
    root = site.root.resolve()
    draft = Path(args.spec).resolve()
    out = Path(args.out) if args.out else draft.with_name(draft.stem + ".proposed.yaml")
    run_id = "select-" + uuid.uuid4().hex  # no flow run here: what new_run_id gives outside one, without the flow
    token = _sign_local_proposal(args, site.registry)
    proposals, summary = propose_selection(str(draft), site, run_id, args.who, args.data, args.select, token)
    pairs = {part: p.pairs for part, p in proposals.items()}
    record = selection_records(summary["draft_agreement_sha256"], proposals, pairs)
    write_proposed_spec(draft, pairs, out, write_record(root / "runs" / run_id, record))
    sha = load_spec(out).agreement.sha256()  # what the analyst and controller sign: no dry run needed to learn it
    lines = []
    for part, proposal in proposals.items():
        of = "" if part is None else f" of split part {part!r}"
        lines += [f"Φ proposal{of} ({proposal.method}, ρ {proposal.budget.rho:.6g} for selection, {summary['how']}):"]
        lines += [f"  {e.how:8} {' × '.join(e.pair)}  score≈{_score(e.noisy_score)}" for e in proposal.selected]
        lines += [f"  near     {' × '.join(c.pair)}  score≈{_score(c.noisy_score)}" for c in proposal.near_threshold]
    lines += [f"  proposal: {root / 'runs' / run_id / 'phi_proposal.json'}", f"  proposed spec: {out}"]
    lines += [f"  proposed agreement: {sha}"]
    emit(args, {**summary, "proposed_spec": str(out), "agreement_sha256": sha, "run_id": run_id}, "\n".join(lines))
    return 0


def _propose_reviewed(args: argparse.Namespace) -> int:
    """``propose --select mst --review``: the Φ review flow (select, pause for reviews, then the governed release
    of the reviewed Φ), checked before the orchestrator starts."""
    from prefect.exceptions import FailedRun

    from sdgov.flows.handover import hand_over
    from sdgov.flows.phi_review import phi_review_flow
    from sdgov.flows.plumbing.refusals import quiet_refusals
    from sdgov.governance.policy import check_plan_allowed
    from sdgov.intake.inputs import check_proposal
    from sdgov.measurement.selection.store import check_draft

    require_server()
    site = site_of(args)
    root = site.root.resolve()
    token = _sign_local_proposal(args, site.registry)
    checked = check_proposal(args.spec, site.registry, args.who, args.data, token)
    ag = checked.loaded.agreement
    check_draft(ag, args.spec)
    check_plan_allowed(site, ag, checked.data.fingerprint, ag.dataset_name, checked.data.rows)
    quiet_refusals()
    try:
        out = phi_review_flow(
            draft_path=str(Path(args.spec).resolve()),
            registry_root=str(root),
            proposer=args.who,
            out_path=str(Path(args.out).resolve()) if args.out else None,
            data_path=str(Path(args.data).resolve()) if args.data else None,
            timeout_s=DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout,
            poll_interval=DEFAULT_POLL_S if args.poll is None else args.poll,
            proposal=token,
            checked=hand_over(checked),
        )
    except FailedRun as exc:
        raise SdgovError(
            f"the reviewed release ended without a release: {exc}",
            str(root),
            "see 'sdgov trail --root ROOT' for the reviews and decisions recorded",
        ) from None
    return _emit_outcome(args, out)


def _score(s: float | None) -> str:
    return "–" if s is None else f"{s:,.0f}"


# ------------------------------------------------------------------------------------------------ runs / approve


def paused_runs(root: str | None = None) -> list[dict[str, Any]]:
    """Every paused run on the configured server (one line without ``PREFECT_API_URL``) with its pending decision as
    the registry recorded it (:func:`~sdgov.commands._common.verified_pending`): the subject and its hash, the role
    awaited and who is eligible, the proposer, the deadline and the UI link. A run whose copy on the server was
    rewritten says which fields; one the registry has no record of is shown as unverified, without its summary."""
    from sdgov.flows.plumbing.prefect_api import PrefectApi, ui_link

    settings = require_server()
    out = []
    with PrefectApi(settings) as api:
        for fr in api.paused_runs():
            posted = pending(api, fr) or {}
            rewritten: list[str] = []
            try:
                p, rewritten, _ = verified_pending(fr, posted, root)
                unverified = ""
            except SdgovError as exc:
                p, unverified = {"registry": posted.get("registry", "")}, exc.what
            out.append(
                {
                    "run_id": str(fr.id),
                    "name": fr.name,
                    "paused_since": str(fr.state.timestamp) if fr.state else "",
                    "subject": p.get("subject", "?"),
                    "sha256": p.get("sha256", ""),
                    "awaiting_role": p.get("required_role", "?"),
                    "eligible": p.get("eligible", []),
                    "proposer": p.get("proposer", ""),
                    "attempt": p.get("attempt"),
                    "note": p.get("note", ""),
                    "deadline": p.get("deadline", ""),
                    "registry": p.get("registry", ""),
                    "summary": p.get("summary") or {},
                    "ui": ui_link(fr.id, settings),
                    "verified": not unverified,
                    "unverified": unverified,
                    "rewritten": rewritten,
                }
            )
    return out


def tampered_runs(root: str | None) -> list[dict[str, str]]:
    """What the pinned registry (``--root`` or ``$SDGOV_REGISTRY``) logged as changed by someone else on the Prefect
    server (``run_tampered``: a rewritten pause input, patched parameters, a forced state), newest last; none when
    no registry is pinned or it is not there."""
    from sdgov.governance.site import Site

    pinned = pinned_root(root)
    if not pinned or not (Path(pinned) / "log.jsonl").is_file():
        return []
    return [
        {"flow_run_id": e.artifacts.get("flow_run_id", ""), "time": e.time, "what": e.comment}
        for e in Site.resolve(pinned).registry.verified_events()
        if e.event == "run_tampered"
    ]


def finished(root: str | None) -> list[dict[str, str]]:
    """The runs the pinned registry (``--root`` or ``$SDGOV_REGISTRY``) logged as ended, with their outcome (from
    its verified log: Prefect's states are transport, the registry's record is the evidence); none when no registry
    is pinned or it is not there."""
    from sdgov.registry.log import Registry
    from sdgov.registry.trail import finished_runs

    pinned = pinned_root(root)
    if not pinned or not (Path(pinned) / "log.jsonl").is_file():
        return []
    return finished_runs(Registry(pinned).verified_events())


def cmd_runs(args: argparse.Namespace) -> int:
    """Print the paused runs and whom each awaits (``no paused runs`` when there is none), the runs the pinned
    registry logged as finished and their outcome, then what it logged as tampered with on the server; exit 0."""
    runs = paused_runs(args.root)
    ended = finished(args.root)
    tampered = tampered_runs(args.root)
    lines = [
        f"{r['run_id']}  {r['name']}: {r['subject']} awaits a {r['awaiting_role']} "
        f"({', '.join(r['eligible']) or 'nobody eligible!'}"
        + ("" if r["subject"] == "phi_review" else f"; not {r['proposer']}")  # the analyst may review their Φ
        + f") until {r['deadline']}"
        f"\n    {r['subject']} hash: {r['sha256']}"
        + (f"\n    overall verdict: {r['summary']['verdict']}" if r["summary"].get("verdict") else "")
        + (f"\n    draft card: {r['summary']['draft_card']}" if r["summary"].get("draft_card") else "")
        + (f"\n    {r['note']}" if r["note"] else "")
        + (f"\n    NOT VERIFIED (do not sign): {r['unverified']}" if r["unverified"] else "")
        + (
            f"\n    WARNING: its input on the Prefect server was rewritten ({', '.join(r['rewritten'])}); shown: the "
            "registry's record"
            if r["rewritten"]
            else ""
        )
        + (f"\n    {r['ui']}" if r["ui"] else "")
        for r in runs
    ]
    lines = lines or ["no paused runs"]
    lines += [
        f"finished {f['time']}  run {f['run_id']}: {f['outcome']}"
        + (f" {f['release_id']}" if f["release_id"] else "")
        + (f" by {f['who']}" if f["who"] and f["event"] != "run_failed" else "")
        + (f" — {f['comment']}" if f["event"] in ("run_failed", "run_refused", "release_blocked") else "")
        for f in ended
    ]
    lines += [f"TAMPERED run {t['flow_run_id']} ({t['time']}): {t['what']}" for t in tampered]
    emit(args, {"paused": runs, "finished": ended, "tampered": tampered}, "\n".join(lines))
    return 0


def _signed_statement(args: argparse.Namespace, p: dict[str, Any], decision: str) -> str:
    """Sign (registry id, run, nonce, subject, hash, decision, name, time), after the checks the flow will make."""
    from sdgov.base.clock import utcnow
    from sdgov.governance.approvers import REQUIRED_ROLE, ApprovalRefused, Challenge, check_decision
    from sdgov.governance.controller import controller_approvers
    from sdgov.governance.decisions import record_cli_refused
    from sdgov.identity.statements import SignOffStatement, encode_statement

    if p["subject"] not in REQUIRED_ROLE:
        raise SdgovError(
            f"run {p['run_id']} awaits a {p['subject']}, not a decision",
            args.run_id,
            "review a Φ proposal with 'sdgov review RUN_ID --drop A,B --force C,D --why TEXT --as NAME --key KEY'",
        )
    challenge = Challenge(**{k: p[k] for k in ("registry_id", "run_id", "nonce", "subject", "sha256")})
    stmt = SignOffStatement(**challenge.model_dump(), decision=decision, approver=args.who, time=utcnow())
    token = encode_statement(stmt, args.key)
    # the same check the flow makes after resuming: refused here (and logged), the run is never resumed
    registry = site_of(args).at(pinned_root(args.root) or p["registry"]).registry  # whose record was signed
    try:
        check_decision(
            controller_approvers(registry),
            name=args.who,
            decision=decision,
            proposer=p["proposer"],
            challenge=challenge,
            signature=token,
        )
    except ApprovalRefused as exc:
        record_cli_refused(registry, challenge, args.who, decision, exc, token)
        raise
    return token


def _sign_paused(args: argparse.Namespace) -> tuple[UUID, FlowRun, dict[str, Any], str, str]:
    """The paused run, its pending decision, the decision and the statement signed for it (``sign`` and
    ``approve``); a missing or unreadable key is one line before the server is contacted."""
    from sdgov.flows.plumbing.prefect_api import PrefectApi
    from sdgov.identity.keys import load_private_key

    load_private_key(args.key)
    settings = require_server()
    decision = "reject" if args.reject else "approve"
    with PrefectApi(settings) as api:
        run_id, fr, p = paused_decision(api, args.run_id, args.root)
        return run_id, fr, p, decision, _signed_statement(args, p, decision)


def cmd_sign(args: argparse.Namespace) -> int:
    """Print the signed decision for the run's pause, to paste into its Prefect UI form; exit 0. A decision the flow
    would refuse (unknown name, wrong role, own proposal, wrong key) is logged and refused here, exit 2."""
    run_id, _, p, decision, token = _sign_paused(args)
    payload = {"run_id": str(run_id), "subject": p["subject"], "decision": decision, "signature": token}
    emit(args, payload, token)
    for w in p.get("warnings", []):
        print(f"sdgov: {w}", file=sys.stderr)
    print(
        f"sdgov: paste the line above into the 'Signature' field of run {run_id}'s resume form, with your name "
        f"{args.who!r} and decision {decision!r}; it is valid for this pause only",
        file=sys.stderr,
    )
    return 0


def approval_summary(p: dict[str, Any]) -> str:
    """What ``sdgov approve`` shows before asking for the hash: Φ, ε/δ, the verdict, the full hash, the draft card."""
    s = p.get("summary") or {}
    lines = [f"sdgov: {w}" for w in p.get("warnings", [])]
    lines.append(
        f"sdgov: run {p['run_id']} awaits a decision on the {p['subject']} proposed by {p.get('proposer', '?')}"
    )
    if s.get("phi"):
        lines.append("  Φ: " + "; ".join(s["phi"]))
    if s.get("privacy"):  # the privacy statement's words (the agreement's: its plan's, before any draw)
        lines.append(f"  privacy: {s['privacy']}")
    if s.get("rows"):
        lines.append(f"  rows to release: {int(s['rows']):,} synthetic records")
    if s.get("verdict"):
        lines.append(f"  overall verdict: {s['verdict']}")
    lines.append(f"  {p['subject']} hash: {p['sha256']}")
    if s.get("draft_card"):
        lines.append(f"  draft card (published as is, plus the sign-offs): {s['draft_card']}")
        lines.append(f"    Markdown: {s.get('draft_card_md', '')}")
    if s.get("evidence_report"):
        lines.append(f"  evidence report (controller only): {s['evidence_report']}")
    return "\n".join(lines)


def _confirmation(args: argparse.Namespace, p: dict[str, Any]) -> str:
    """Show the summary, then take the first 8 characters of the hash, typed by the approver (``--yes --hash
    PREFIX`` in scripts); a missing or wrong prefix is one line and nothing is sent."""
    from sdgov.governance.decisions import CONFIRM_CHARS

    if args.yes and not args.hash:
        raise SdgovError(
            "--yes needs --hash PREFIX", "--hash", f"pass the first {CONFIRM_CHARS} characters of the hash"
        )
    if not args.hash and not sys.stdin.isatty():
        raise SdgovError(
            f"approving needs the first {CONFIRM_CHARS} characters of the {p['subject']} hash {p['sha256']}",
            args.run_id,
            "run it at a terminal and type them when asked, or pass --yes --hash PREFIX",
        )
    print(approval_summary(p), file=sys.stderr)
    if args.hash:
        typed = args.hash
    else:
        print(
            f"Type the first {CONFIRM_CHARS} characters of the {p['subject']} hash to approve: ",
            end="",
            file=sys.stderr,
        )
        sys.stderr.flush()
        typed = sys.stdin.readline()
    typed = typed.strip().lower()
    if typed != p["sha256"][:CONFIRM_CHARS]:
        raise SdgovError(
            f"{typed[:16]!r} is not the first {CONFIRM_CHARS} characters of the {p['subject']} hash",
            args.run_id,
            "read the hash above and type its first 8 characters; nothing was sent",
        )
    return typed


TAKEN_WAIT_S = 60.0
"""How long ``sdgov approve`` waits for the run's process to log the decision it sent (the flow looks for one every
``poll_interval_s``): the server accepting a resume says nothing about whether anyone will act on it."""


def _not_ended(registry: Any, flow_run_id: str) -> None:
    """Refuse (one line) to decide on a run the registry logged as ended (``run_ended``): nobody executes it."""
    from sdgov.governance.decisions import run_ended

    ended = run_ended(registry.events(), flow_run_id)
    if ended is not None:
        raise SdgovError(
            f"the registry logged this run as ended (event {ended.seq}: {ended.comment}): nobody executes it",
            flow_run_id,
            "nothing to decide; the analyst proposes again",
        )


def _taken(registry: Any, flow_run_id: str, nonce: str, wait_s: float) -> Any:
    """The registry's record of the decision sent to the pause with ``nonce``, once the run's process logged it (the
    flow logs every decision it takes, accepted or refused, with the pause's nonce); a refusal, or nothing logged
    within ``wait_s`` (no process is executing the run), is one line."""
    deadline = time.monotonic() + wait_s
    while True:
        event = next((e for e in registry.events() if e.artifacts.get("nonce") == nonce), None)
        if event is not None and event.event == "approval_refused":
            raise SdgovError(f"the run refused the decision: {event.comment}", flow_run_id, "see 'sdgov runs'")
        if event is not None:
            return event
        _not_ended(registry, flow_run_id)
        if time.monotonic() > deadline:
            raise SdgovError(
                f"the server resumed the run, but no process took the decision within {wait_s:.0f} s: nobody may be "
                "executing this run (was the controller's worker stopped?)",
                flow_run_id,
                "ask the controller; once a worker restarts it ends the run and logs it ('sdgov trail')",
            )
        time.sleep(0.5)


def cmd_approve(args: argparse.Namespace) -> int:
    """Sign the decision, resume the run with it and exit 0 once the run's process logged it in the registry; an
    approval first asks for the hash's first 8 characters (``--yes --hash PREFIX``). A refused decision, a wrong
    prefix, a run the registry logged as ended, a decision no process logged within ``--wait`` seconds (default
    :data:`TAKEN_WAIT_S`), or (``--wait``) the flow asking again is one line, exit 2; (``--wait``) a run that then
    ends Failed, exit 1."""
    from sdgov.flows.plumbing.prefect_api import PrefectApi
    from sdgov.registry.log import Registry

    run_id, fr, p, decision, sig = _sign_paused(args)
    registry = Registry(pinned_root(args.root) or p["registry"])  # the registry whose record of the pause was shown
    _not_ended(registry, str(run_id))
    confirm = _confirmation(args, p) if decision == "approve" else ""
    run_input = {"approver": args.who, "decision": decision, "comment": args.comment or "", "signature": sig}
    if p["subject"] == "release":
        run_input["confirm_hash"] = confirm  # the release form's field (required, checked by the flow)
    with PrefectApi() as api:
        resume(api, run_id, run_input)
        taken = _taken(registry, str(run_id), p["nonce"], args.wait or TAKEN_WAIT_S)
        outcome = f"taken by the run: {taken.event}, event {taken.seq} of the registry's log"
        asked_key = fr.state.pause_key if fr.state else None
        deadline = time.monotonic() + args.wait
        while time.monotonic() < deadline:  # optionally watch what the flow made of the decision
            time.sleep(0.5)
            now = api.flow_run(run_id)
            st = now.state
            if st is None:
                continue
            if st.is_paused() and st.pause_key != asked_key:
                nxt = pending(api, now) or {}
                if nxt.get("subject") == p["subject"]:  # the same decision asked again: the flow refused it
                    raise SdgovError(
                        f"the flow refused the decision: {nxt.get('note', '')}", str(run_id), "see 'sdgov runs'"
                    )
                outcome = f"accepted; now paused for the {nxt.get('subject', '?')} decision"
                break
            if st.is_final():
                name = "Failed" if st.type in ("FAILED", "CRASHED") else st.name
                outcome = f"accepted; run ended {name}" + (f": {st.message}" if st.message else "")
                break
            if st.is_running():
                outcome = "accepted; the run goes on"
    failed = outcome.startswith(FAILED_RUN)  # the run ended Failed after the decision: not a success to report
    payload = {
        "ok": not failed,
        "run_id": str(run_id),
        "subject": p["subject"],
        "sha256": p["sha256"],
        "approver": args.who,
        "decision": decision,
        "signed": True,
        "state": outcome,
    }
    done = "approved" if decision == "approve" else "rejected"
    emit(args, payload, f"{args.who} {done} the {p['subject']} {p['sha256']} of run {run_id} ({outcome})")
    return 1 if failed else 0


FAILED_RUN = "accepted; run ended Failed"
"""How ``sdgov approve --wait`` words a run that ended in Prefect's Failed state after the decision (a crash, or a
pause that timed out): the command exits 1."""


# ------------------------------------------------------------------------------------------- keys, controller files


def cmd_keygen(args: argparse.Namespace) -> int:
    """Write a new Ed25519 private key (mode 600; an existing file is refused, exit 2) and print its ``public_key``
    line; exit 0."""
    from sdgov.identity.keys import keygen

    pub = keygen(args.out)
    emit(
        args,
        {"private_key": str(Path(args.out).resolve()), "public_key": pub},
        f'private key: {args.out} (keep it; mode 600)\nadd to approvers.yaml:  public_key: "{pub}"',
    )
    return 0


def cmd_approvers(args: argparse.Namespace) -> int:
    """``commit``: a controller signs the controller files' new hashes into the log (approvers, budgets, policy)."""
    from sdgov.governance.controller import commit

    events = commit(site_of(args).registry, args.who, args.key)
    lines = [
        f"{e.event}: {e.artifacts['file']} {e.artifacts['sha256'][:12] or 'removed'} signed by {e.actor}"
        for e in events
    ]
    emit(
        args,
        {"committed": [e.model_dump() for e in events]},
        "\n".join(lines) or "nothing to commit: every controller file is as last signed",
    )
    return 0


def cmd_approvals(args: argparse.Namespace) -> int:
    """``sign``: a person named in a standing approval signs it for this registry (appended to the file). ``pin``:
    the controller pins it to the spec's agreement, the data (by its keyed commitment) and a lapse date."""
    from sdgov.governance.standing import sign_standing

    reg = site_of(args).registry
    reg.require_existing()
    if args.action == "pin":
        return _pin_approval(args, reg)
    if not (args.who and args.key):
        raise SdgovError("signing needs who signs and their key", "--as/--key", "pass --as NAME --key KEY")
    token = sign_standing(args.file, reg, args.who, args.key)
    emit(args, {"file": str(args.file), "signer": args.who, "token": token}, f"signed {args.file} as {args.who}")
    return 0


def _pin_approval(args: argparse.Namespace, reg: Any) -> int:
    """``approvals pin``: write the agreement hash, the data's keyed commitment (the file is hashed, not parsed)
    and the lapse date into the standing approval, its signatures cleared; each person then signs it again."""
    import datetime as dt

    from sdgov.agreement.load import load_spec
    from sdgov.governance.standing import data_commitment, write_pinned

    if not (args.spec and args.valid_until):
        raise SdgovError(
            "pinning needs the spec and a lapse date", "--spec/--valid-until", "e.g. --valid-until 2027-05-31"
        )
    try:
        lapse = dt.date.fromisoformat(args.valid_until)
    except ValueError:
        raise SdgovError(f"{args.valid_until!r} is not a date", "--valid-until", "write it as YYYY-MM-DD") from None
    loaded = load_spec(args.spec)
    data = Path(args.data).resolve() if args.data else loaded.data_path
    pin = data_commitment(reg, data, create=True)
    sha = loaded.agreement.sha256()
    write_pinned(args.file, args.file, sha, lapse, pin)
    emit(
        args,
        {"file": str(args.file), "agreement_sha256": sha, "data_sha256_hmac": pin, "valid_until": str(lapse)},
        f"pinned {args.file}: agreement {sha}, data {pin} ({data.name}), valid until {lapse}; every person it names "
        "signs it again (sdgov approvals sign)",
    )
    return 0


# ------------------------------------------------------------------------------------------------ parser


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``server``, ``propose``, ``runs``, ``sign``, ``approve``, ``keygen``, ``approvers``, ``approvals``."""
    add = functools.partial(command, subparsers, parents)
    s = add(
        "server",
        cmd_server,
        "run a local Prefect server (127.0.0.1, SQLite or PostgreSQL, no analytics, optional basic auth)",
    )
    s.add_argument("action", choices=["start"])
    s.add_argument("--port", type=int, default=4200)
    s.add_argument("--auth", help="USER:PASSWORD: enable the server's basic auth (PREFECT_SERVER_API_AUTH_STRING)")
    s.add_argument("--home", help="PREFECT_HOME holding the SQLite database (default: $PREFECT_HOME or ~/.prefect)")
    s.add_argument(
        "--database",
        "--postgres",
        metavar="URL",
        help="postgresql://USER[:PASSWORD]@HOST[:PORT]/DB: a team's server on PostgreSQL instead of SQLite (default: "
        "$SDGOV_SERVER_DATABASE; keep the password in PGPASSWORD or ~/.pgpass, never on the command line)",
    )
    s.add_argument("--print-env", action="store_true", help="print the client settings and exit")

    p = add(
        "propose",
        cmd_propose,
        "run a governed release: propose Φ, then pause for the controller's decisions",
        [parents.spec, parents.data, parents.root],
    )
    p.add_argument("--as", dest="who", required=True, help="the proposing analyst (in the approvers registry)")
    p.add_argument("--key", help="your Ed25519 private key: signs the proposal (a governed registry requires it)")
    p.add_argument(
        "--submit",
        metavar="WORKER",
        nargs="?",
        const="controller",
        help="submit the signed proposal to the controller's worker (its deployment name, default 'controller') "
        "instead of running the release in this process",
    )
    p.add_argument(
        "--timeout",
        type=int,
        help=f"seconds to wait for the decisions (default {DEFAULT_TIMEOUT_S}; with --submit the worker decides)",
    )
    p.add_argument("--poll", type=int, help=f"seconds between checks for a decision (default {DEFAULT_POLL_S})")
    p.add_argument(
        "--select",
        choices=["mst", "aim"],
        help="private selection (the draft's privacy.selection.method): spend its share, write a Φ proposal and a "
        "proposed spec",
    )
    p.add_argument("--out", help="with --select: where to write the proposed spec (default DRAFT.proposed.yaml)")
    p.add_argument(
        "--review",
        action="store_true",
        help="with --select: pause for the stakeholders' review (sdgov review), then the governed agreement",
    )

    add(
        "runs",
        cmd_runs,
        "list paused runs and whom they await (as the registry recorded each pause), and the runs the registry logged "
        "as finished, with their outcome",
        [parents.root],
    )

    for name, fn, help_ in (
        ("sign", cmd_sign, "print your signed decision on a paused run, to paste into the Prefect UI form"),
        ("approve", cmd_approve, "sign your decision on a paused run and resume it through the Prefect API"),
    ):
        a = add(name, fn, help_, [parents.root])
        a.add_argument("run_id")
        a.add_argument("--as", dest="who", required=True, help="your name, as in the approvers registry")
        a.add_argument("--key", required=True, help="your Ed25519 private key (PEM or OpenSSH)")
        a.add_argument("--reject", action="store_true", help="reject (default: approve)")
        if fn is cmd_approve:
            a.add_argument("--comment", default="")
            a.add_argument(
                "--wait",
                type=float,
                default=0,
                help=f"seconds to wait for the run to take it (default {TAKEN_WAIT_S:.0f}), then to watch the run",
            )
            a.add_argument("--hash", help="the first 8 characters of the hash you approve (asked for when omitted)")
            a.add_argument("--yes", action="store_true", help="do not ask: for scripts, with --hash PREFIX")

    k = add("keygen", cmd_keygen, "make an Ed25519 key pair: writes the private key, prints the public_key line")
    k.add_argument("--out", required=True, help="where to write the private key (PEM, mode 600)")

    c = add("approvers", cmd_approvers, "the controller's files: sign their new hashes into the log", [parents.root])
    c.add_argument("action", choices=["commit"])
    c.add_argument("--as", dest="who", required=True, help="a data controller (of the approvers registry in force)")
    c.add_argument("--key", required=True, help="that controller's private key")

    sa = add(
        "approvals",
        cmd_approvals,
        "standing approvals: sign one for this registry (appended to the file)",
        [parents.root],
    )
    sa.add_argument("action", choices=["sign", "pin"])
    sa.add_argument("file", help="the standing approval (approvals.yaml)")
    sa.add_argument("--as", dest="who", help="sign: a person it names, as in the approvers registry")
    sa.add_argument("--key", help="sign: that person's private key")
    sa.add_argument("--spec", help="pin: the spec whose agreement it covers (its data unless --data)")
    sa.add_argument("--data", help="pin: the data file it covers (default: the spec's)")
    sa.add_argument("--valid-until", help="pin: the last day a release may use it (YYYY-MM-DD)")


def _emit_outcome(args: argparse.Namespace, out: object) -> int:
    """A governed or reviewed run's outcome: its JSON, or its message and the card; exit 0 only when released."""
    from sdgov.flows.governed import GovernedOutcome

    if not isinstance(out, GovernedOutcome):  # a flow called in-process returns its value (Prefect types a State too)
        raise InternalError("the flow returned no outcome", str(type(out)), "report this as a bug")
    card = f"\n  card: {out.release.card_html}" if out.release else ""
    emit(args, out.model_dump(mode="json"), out.message + card)
    return 0 if out.status == "released" else 1
