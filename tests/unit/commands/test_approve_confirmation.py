"""``sdgov approve`` shows what is approved (Φ, ε/δ, verdict, full hash, draft card) and takes the hash's first 8
characters typed back (or ``--yes --hash PREFIX``); anything else is one line and nothing is sent (issue 14)."""

from __future__ import annotations

import argparse
import io
import sys

import pytest

from sdgov.base.errors import SdgovError
from sdgov.commands.decide import _confirmation

SHA = "0123abcd" + "e" * 56
PENDING = {
    "run_id": "4f6c0e0e-0000-4000-8000-000000000000",
    "subject": "release",
    "sha256": SHA,
    "proposer": "Ada Analyst",
    "summary": {
        "phi": ["age × sex", "region"],
        "privacy": "ε = 1 (zCDP bound), δ = 1e-05; the dataset's ε over every release: ε = 1.2 (zCDP bound)",
        "rows": 2700,
        "verdict": "pass with 1 warning",
        "draft_card": "/reg/runs/r/draft/card.html",
        "draft_card_md": "/reg/runs/r/draft/card.md",
        "evidence_report": "/reg/runs/r/draft/evidence_report.html",
    },
}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"hash": None, "yes": False, "run_id": PENDING["run_id"], **kw})


def test_at_a_terminal_it_shows_the_summary_and_asks_for_the_prefix(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", Terminal("0123ABCD\n"))
    assert _confirmation(args(), PENDING) == "0123abcd"
    err = capsys.readouterr().err
    for needle in ("Φ: age × sex; region", "privacy: ε = 1 (zCDP bound), δ = 1e-05", "2,700 synthetic records",
                   "overall verdict: pass with 1 warning", SHA,
                   "/reg/runs/r/draft/card.html", "evidence_report.html", "Type the first 8 characters"):  # fmt: skip
        assert needle in err, needle


def test_a_wrong_prefix_is_refused(monkeypatch):
    monkeypatch.setattr(sys, "stdin", Terminal("0123abce\n"))
    with pytest.raises(SdgovError, match="is not the first 8 characters of the release hash"):
        _confirmation(args(), PENDING)
    with pytest.raises(SdgovError, match="is not the first 8 characters"):
        _confirmation(args(yes=True, hash="0123abc"), PENDING)  # 7 characters are not enough


def test_scripts_pass_yes_and_hash_and_nothing_is_asked(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal, nothing to read
    assert _confirmation(args(yes=True, hash=" 0123abcd "), PENDING) == "0123abcd"
    with pytest.raises(SdgovError, match="--yes needs --hash"):
        _confirmation(args(yes=True), PENDING)
    with pytest.raises(SdgovError, match="needs the first 8 characters of the release hash " + SHA):
        _confirmation(args(), PENDING)


@pytest.mark.parametrize("subject", ["agreement", "release"])
def test_the_form_requires_the_signature_and_puts_a_refusal_on_top(subject):
    """Issue 25: the UI labelled "Signature" Optional (it had a default) though a decision counts only signed, and
    a refusal's reason sat under the whole summary though the docs say it is on top. Only a sandbox registry (the
    controller's allow_unsigned_ui_approvals) leaves the signature optional, and says so."""
    from pydantic import ValidationError

    from sdgov.flows.governed import form_for, with_note

    form = form_for(subject, allow_unsigned=False)
    schema = form.model_json_schema()
    assert "signature" in schema["required"] and schema["properties"]["signature"]["title"] == "Signature"
    fields = {"approver": "Carl Controller", "decision": "approve", "confirm_hash": "0123abcd"}
    for unsigned in ({}, {"signature": ""}):
        with pytest.raises(ValidationError):
            form(**fields, **unsigned)
    sandbox = form_for(subject, allow_unsigned=True).model_json_schema()
    assert "signature" not in sandbox["required"] and "optional" in sandbox["properties"]["signature"]["title"]
    text = with_note("## Approve the release candidate\n\nΦ …", "Attempt 1 by 'Carl Controller' was refused: …")
    assert text.startswith("> **Attempt 1 by 'Carl Controller' was refused") and text.endswith("Φ …")
