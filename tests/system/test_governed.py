"""Governed releases against the real (session) Prefect server: pauses, refusals, separation of duties, sign-off.

The flow runs in a thread of the test process (with the test's Prefect settings context) and pauses; the test
plays the approvers through ``sdgov approve`` / ``sdgov runs`` and through the raw resume API (what the UI form
posts).
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import json
import threading
import time
from pathlib import Path
from uuid import UUID

import pytest
import yaml

import sdgov.flows.governed
import sdgov.flows.schedule  # noqa: F401
from sdgov.flows.cli import main
from sdgov.registry import Registry
from tests.conftest import make_demo_inputs

APPROVERS = {
    "approvers": [
        {"name": "Ada Analyst", "role": "analyst"},
        {"name": "Carl Controller", "role": "controller"},
        {"name": "Cora Compliance", "role": "compliance"},
    ]
}


def setup_registry(tmp: Path, rows: int = 1500) -> tuple[Path, Path]:
    spec = make_demo_inputs(tmp / "in", rows=rows)
    root = tmp / "registry"
    root.mkdir()
    (root / "approvers.yaml").write_text(yaml.safe_dump(APPROVERS, sort_keys=False))
    return spec, root


class FlowThread(threading.Thread):
    """The governed flow, run in a thread that sees the test's Prefect settings (contextvars copied)."""

    def __init__(self, **kw) -> None:
        super().__init__(daemon=True)
        self.kw, self.ctx, self.result, self.error = kw, contextvars.copy_context(), None, None

    def run(self) -> None:
        from sdgov.flows.governed import governed_release_flow

        try:
            self.result = self.ctx.run(governed_release_flow, **self.kw)
        except BaseException as exc:
            self.error = exc


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def wait_paused(
    root: Path, subject: str, attempt: int = 1, timeout: float = 240, thread: FlowThread | None = None
) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code, out, _ = cli("runs", "--json")
        assert code == 0
        mine = [r for r in json.loads(out)["paused"] if r["registry"] == str(root)]
        if mine and mine[0]["subject"] == subject and mine[0]["attempt"] == attempt:
            return mine[0]
        if thread is not None and not thread.is_alive():
            raise AssertionError(f"flow ended before pausing: {thread.error or thread.result}")
        time.sleep(0.5)
    raise AssertionError(f"no run paused for {subject} (attempt {attempt})")


def pause_state(run_id: str):
    from prefect import get_client

    with get_client(sync_client=True) as c:
        return c.read_flow_run(UUID(run_id)).state


def test_pause_refuse_approve_release(tmp_path, prefect_server):
    from prefect import get_client

    spec, root = setup_registry(tmp_path)
    t = FlowThread(spec_path=str(spec), registry_root=str(root), proposer="Ada Analyst", timeout_s=300, poll_interval=1)
    t.start()
    run = wait_paused(root, "agreement", thread=t)
    rid = run["run_id"]
    assert run["eligible"] == ["Carl Controller"] and run["proposer"] == "Ada Analyst"
    key = pause_state(rid).state_details.pause_key

    # not in the registry / the proposer / wrong role: clear one-line refusals, never resumed
    for who, why in [
        ("Mallory", "'Mallory' is not in the approvers registry"),
        ("ada  analyst", "proposed this agreement and cannot approve or reject it (separation of duties)"),
        ("Cora Compliance", "has role 'compliance'; deciding on the agreement needs role 'controller'"),
    ]:
        code, _, err = cli("approve", rid, "--as", who)
        assert code == 2 and why in err, (who, err)
        st = pause_state(rid)
        assert st.is_paused() and st.state_details.pause_key == key

    with get_client(sync_client=True) as c:
        # the form cannot be sent without a decision (the field has no default): the server refuses it
        res = c.resume_flow_run(UUID(rid), run_input={"approver": "Carl Controller"})
        assert str(res.status.value).upper() == "REJECT" and "decision" in res.details.reason
        assert pause_state(rid).is_paused()
        # the UI path (raw resume) with the proposer's name: the flow refuses, logs it and pauses again
        res = c.resume_flow_run(UUID(rid), run_input={"approver": "Ada Analyst", "decision": "approve"})
        assert str(res.status.value).upper() == "ACCEPT"
    again = wait_paused(root, "agreement", attempt=2, thread=t)
    assert "separation of duties" in again["note"] and "paused again" in again["note"]

    code, out, err = cli("approve", rid, "--as", "Carl Controller", "--comment", "Φ is fine", "--json", "--wait", "120")
    assert code == 0, err
    assert json.loads(out)["decision"] == "approve"
    assert json.loads(out)["state"] == "accepted; now paused for the release decision", out

    rel = wait_paused(root, "release", thread=t)
    with get_client(sync_client=True) as c:
        desc = json.loads(
            c.read_flow_run_input(UUID(rid), f"paused-{pause_state(rid).state_details.pause_key}-description")
        )
    for needle in (
        "Audit verdict: **PASS**",
        "Privacy budget of this release",
        "max TVD over Φ",
        rel["sha256"],
        "card.html",
    ):
        assert needle in desc, needle
    code, _, err = cli("approve", rid, "--as", "Cora Compliance")
    assert code == 2 and "needs role 'controller'" in err
    code, out, err = cli("approve", rid, "--as", "Carl Controller", "--comment", "ship it", "--json")
    assert code == 0, err

    t.join(240)
    assert not t.is_alive() and t.error is None, t.error
    out = t.result
    assert out.status == "released", out
    card = json.loads(Path(out.release.card_json).read_text())
    signs = [(s["name"], s["subject"], s["decision"]) for s in card["signoffs"]]
    assert signs == [
        ("Ada Analyst", "agreement", "approve"),
        ("Carl Controller", "agreement", "approve"),
        ("Carl Controller", "release", "approve"),
    ]
    assert card["signoffs"][2]["subject_sha256"] == rel["sha256"] and card["signoffs"][2]["comment"] == "ship it"
    assert "Prefect resume form" in card["signoffs"][1]["via"]
    html = Path(out.release.card_html).read_text()
    assert "Carl Controller" in html and "ship it" in html and rel["sha256"] in html
    assert "ship it" in Path(out.release.card_md).read_text()
    reg = Registry(root)
    events = [(e.event, e.actor) for e in reg.events()]
    assert events == [
        ("registry_created", "sdgov"),
        ("agreement_proposed", "Ada Analyst"),
        ("approval_refused", "Ada Analyst"),
        ("agreement_approved", "Carl Controller"),
        ("budget_spent", "sdgov"),
        ("measured", "sdgov"),
        ("release_approved", "Carl Controller"),
        ("released", "Carl Controller"),
    ], events
    assert reg.verify() == []
    assert pause_state(rid).is_completed()


def test_rejection_ends_the_run_with_nothing_released_and_no_noise(tmp_path, prefect_server):
    spec, root = setup_registry(tmp_path, rows=800)
    t = FlowThread(spec_path=str(spec), registry_root=str(root), proposer="Ada Analyst", timeout_s=300, poll_interval=1)
    t.start()
    rid = wait_paused(root, "agreement", thread=t)["run_id"]
    code, _, err = cli("approve", rid, "--as", "Carl Controller", "--reject", "--comment", "too many marginals")
    assert code == 0, err
    t.join(120)
    assert t.result.status == "rejected" and "nothing was released" in t.result.message
    st = pause_state(rid)
    assert st.name == "Rejected" and st.is_completed()
    assert not (root / "releases").exists() and not (root / "measurements").exists()
    assert [e.event for e in Registry(root).events()] == [
        "registry_created",
        "agreement_proposed",
        "agreement_rejected",
    ]


def test_timeout_ends_the_run_cleanly_and_says_so(tmp_path, prefect_server):
    spec, root = setup_registry(tmp_path, rows=800)
    t = FlowThread(spec_path=str(spec), registry_root=str(root), proposer="Ada Analyst", timeout_s=4, poll_interval=1)
    t.start()
    t.join(120)
    # Prefect's server turns a pause that timed out into Failed, with a message that says so
    assert "timed out and never resumed" in str(t.error), t.error
    events = Registry(root).events()
    assert [e.event for e in events] == ["registry_created", "agreement_proposed", "approval_timeout"]
    assert "within the timeout" in events[-1].comment
    st = pause_state(str(UUID(events[1].run_id)))
    assert st.is_failed() and st.message == "The flow was timed out and never resumed."
    assert not (root / "releases").exists()


def test_signed_decisions(tmp_path):
    from sdgov.approvers import ApprovalRefused, check_decision, keygen, load_approvers, sign, signing_message

    pub = keygen(tmp_path / "carl.pem")
    (tmp_path / "approvers.yaml").write_text(
        yaml.safe_dump(
            {
                "approvers": [
                    {"name": "Ada Analyst", "role": "analyst"},
                    {"name": "Carl Controller", "role": "controller", "public_key": pub},
                ]
            }
        )
    )
    reg = load_approvers(tmp_path / "approvers.yaml")
    sha = "ab" * 32
    good = sign(tmp_path / "carl.pem", signing_message("Carl Controller", "release", "approve", sha))
    assert (
        check_decision(
            reg,
            name="Carl Controller",
            subject="release",
            decision="approve",
            sha256=sha,
            proposer="Ada Analyst",
            signature=good,
        ).name
        == "Carl Controller"
    )
    for sig, decision, h in [("", "approve", sha), (good, "reject", sha), (good, "approve", "cd" * 32)]:
        with pytest.raises(ApprovalRefused, match="must sign decisions"):
            check_decision(
                reg,
                name="Carl Controller",
                subject="release",
                decision=decision,
                sha256=h,
                proposer="Ada Analyst",
                signature=sig,
            )
