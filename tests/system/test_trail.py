"""`sdgov trail`: every event with who/role/what/when/hashes, the chain's verification status, PROV-JSON export."""

from __future__ import annotations

import contextlib
import io
import json
import shutil

from sdgov.commands import main


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(argv))
    return code, out.getvalue()


def test_trail_lists_every_event_and_exports(released, tmp_path):
    root = released["root"]
    code, out = _cli(
        "trail",
        "--root",
        str(root),
        "--json",
        "--html",
        str(tmp_path / "t.html"),
        "--prov",
        str(tmp_path / "prov.json"),
    )
    assert code == 0
    t = json.loads(out)
    assert t["verified"] is True and t["problems"] == []
    assert [e["event"] for e in t["events"]][-1] == "released"
    assert t["events"][0]["event"] == "registry_created"  # the genesis: registry id and public key
    assert t["events"][1]["event"] == "policy_changed"  # the controller's policy, adopted by `sdgov init`
    first = t["events"][2]
    assert first["who"] == "Ada Analyst" and first["role"] == "analyst" and first["dataset"] == "toyland_census"
    assert {"who", "role", "what", "time", "artifacts", "decision", "comment", "hash"} <= set(first)
    rel = t["events"][-1]
    assert rel["release_id"] == released["result"].release_id and "manifest.json" in rel["artifacts"]

    html = (tmp_path / "t.html").read_text()
    assert "hash chain and every released artifact verify" in html and "Carl Controller" in html
    prov = json.loads((tmp_path / "prov.json").read_text())
    assert {"prefix", "agent", "activity", "entity", "wasAssociatedWith", "wasGeneratedBy", "used"} <= set(prov)
    assert any(a["prov:label"] == "Carl Controller" for a in prov["agent"].values())
    assert f"release:{released['result'].release_id}" in prov["entity"]
    assert all(
        r["prov:activity"] in prov["activity"] and r["prov:agent"] in prov["agent"]
        for r in prov["wasAssociatedWith"].values()
    )

    code, out = _cli("trail", "--root", str(root), "--dataset", "no_such_dataset", "--json")
    assert code == 0 and json.loads(out)["events"] == []


def test_trail_reports_a_broken_chain(released, tmp_path):
    root = tmp_path / "r"
    shutil.copytree(released["root"], root)
    log = root / "log.jsonl"
    log.write_text(log.read_text().replace("Carl Controller", "Carl Kontroller", 1))
    code, out = _cli("trail", "--root", str(root))
    assert code == 1 and "VERIFICATION FAILED" in out and "log.jsonl line" in out
