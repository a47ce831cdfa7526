"""The generator dry run happens once per setting (issue 27): ``sdgov validate`` fits the spec's generator on made-up
data; ``sdgov release`` (a fresh process) finds the receipt that dry run left instead of fitting again. A changed
setting, Φ, schema or plugin is a new dry run; a failed one leaves no receipt; with the cache off, every pre-flight
fits."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from sdgov.agreement.load import load_spec
from sdgov.base.errors import SpecError
from sdgov.generators.registry import GENERATORS
from sdgov.intake import preflight
from tests.conftest import make_demo_inputs


@pytest.fixture
def fits(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The dry runs that fitted (their spec files), with receipts kept in a fresh cache folder."""
    monkeypatch.setenv("SDGOV_JAX_CACHE_DIR", str(tmp_path / "cache"))
    made: list[str] = []
    real = preflight._dry_run_generator

    def counted(loaded):
        made.append(str(loaded.spec_path))
        return real(loaded)

    monkeypatch.setattr(preflight, "_dry_run_generator", counted)
    return made


def _spec(tmp_path: Path, name: str = "receipts", **generator: object) -> Path:
    spec = make_demo_inputs(tmp_path / name, rows=200)
    raw = yaml.safe_load(spec.read_text())
    raw["generator"] = {"name": "pgm", "iterations": 10, **generator}
    spec.write_text(yaml.safe_dump(raw, sort_keys=False))
    return spec


def test_a_passed_dry_run_is_not_fitted_again_until_a_setting_changes(tmp_path: Path, fits: list[str]) -> None:
    spec = _spec(tmp_path)
    preflight.dry_run_generator(load_spec(spec))
    preflight.dry_run_generator(load_spec(spec))  # release after validate: the receipt, no fit
    assert len(fits) == 1
    assert len(list((tmp_path / "cache" / "dry-runs").iterdir())) == 1
    preflight.dry_run_generator(load_spec(_spec(tmp_path, "more-iterations", iterations=11)))
    assert len(fits) == 2, "another generator setting is another dry run"


def test_a_failed_dry_run_leaves_no_receipt_and_another_plugin_is_dry_run_again(
    tmp_path: Path, fits: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _spec(tmp_path)
    preflight.dry_run_generator(load_spec(spec))

    def broken_fit(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a plug-in bug")

    monkeypatch.setitem(GENERATORS, "pgm", dataclasses.replace(GENERATORS["pgm"], fit=broken_fit))
    with pytest.raises(SpecError, match="ZeroDivisionError: a plug-in bug"):
        preflight.dry_run_generator(load_spec(spec))  # the same spec, another fit: not covered by the receipt
    assert len(fits) == 2 and len(list((tmp_path / "cache" / "dry-runs").iterdir())) == 1


def test_with_the_cache_off_every_pre_flight_fits(
    tmp_path: Path, fits: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SDGOV_JAX_CACHE_DIR", "")
    spec = _spec(tmp_path)
    for _ in range(2):
        preflight.dry_run_generator(load_spec(spec))
    assert len(fits) == 2 and not (tmp_path / "cache").exists()
