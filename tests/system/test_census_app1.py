"""Application 1 on the real census extract at σ = 10 (needs ../shared/data; skipped without it)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from sdgov.budget.accounting import epsilon_of_rho
from tests.conftest import CENSUS, REPO, init_registry

pytestmark = pytest.mark.skipif(not CENSUS.exists(), reason="census extract not beside the repo (../shared/data)")


def test_app1_release_meets_tvd_and_states_privacy_consistently(tmp_path, prefect_server):
    from sdgov.commands import main

    init_registry(tmp_path)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["release", "--spec", str(REPO / "examples/census2011/app1.yaml"), "--root", str(tmp_path), "--json"])
    assert rc == 0
    out = json.loads(buf.getvalue())
    assert {"release_id", "path", "card_html"} <= set(out)
    card = json.loads(Path(out["path"], "card.json").read_text())
    assert len(card["phi"]) == 3 and all(p["sigma"] == 10 for p in card["phi"])
    assert max(p["tvd"] for p in card["phi"]) <= 0.02, card["phi"]
    priv = card["privacy"]
    assert priv["rho"] == pytest.approx(3 / (2 * 10**2)) and priv["delta"] == 1e-9  # policy's, not from N
    assert priv["epsilon"] == pytest.approx(epsilon_of_rho(priv["rho"], priv["delta"]))
    html = Path(out["card_html"]).read_text()
    assert "Office for National Statistics" in html and "Open Government Licence" in html
    assert f"{priv['epsilon']:.4g}" in html and "σ" in html
