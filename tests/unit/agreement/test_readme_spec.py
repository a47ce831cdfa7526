"""The README's spec example is a spec a release accepts (issue 27): it loads with the spec loader and passes the
pre-flight's checks that need no fit — its model card above all, which every release requires."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml

from sdgov.agreement.load import load_spec
from sdgov.intake.preflight import check_model_card, check_names, check_privacy

README = Path(__file__).resolve().parents[3] / "README.md"


def readme_spec() -> dict:
    """The README's one YAML block that is a release spec (the one with ``phi:``)."""
    blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    [spec] = [yaml.safe_load(b) for b in blocks if re.search(r"^phi:", b, flags=re.M)]
    return spec


def test_the_readme_spec_example_loads_and_states_its_model_card(tmp_path: Path) -> None:
    from sdgov.data.schema import load_schema
    from sdgov.demo import inputs
    from sdgov.demo.data import write_demo_data

    spec = readme_spec()
    assert "model_card" in spec, "every release requires a model_card: the README's example must show it"
    for name in ("schema.yaml", "approvals.yaml"):
        shutil.copy(inputs() / name, tmp_path / name)
    write_demo_data(load_schema(tmp_path / "schema.yaml"), tmp_path / "data.csv", rows=200)
    spec["dataset"]["path"] = "data.csv"  # the demo's made-up data: its schema has the example's attributes
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    loaded = load_spec(tmp_path / "spec.yaml")
    check_names(loaded)
    check_model_card(loaded)
    plan = check_privacy(loaded, 200)
    assert loaded.spec.model_card is not None and loaded.spec.model_card.out_of_scope
    assert [list(c) for c in loaded.agreement.cliques] and plan.rho > 0
