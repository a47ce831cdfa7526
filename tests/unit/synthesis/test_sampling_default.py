"""Rounding became the sampler's default (issue 40) by one line (``sdgov/generators/sampling_default.py``). These
tests hold what must follow: a new agreement states it; an agreement that states nothing (made while i.i.d. was the
default) still draws i.i.d. — a release made before the change regenerates bit for bit — in one model, in a split's
parts and in the pre-flight's dry run; every draw that does not say how (the audits' generators) follows it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sdgov.generators.sampler as sampler
import sdgov.generators.sampling_default as defaults
from sdgov.agreement.load import load_spec
from sdgov.budget.accounting import plan_privacy
from sdgov.contracts import ArtifactRef, GenerateInput
from sdgov.engines import load_encoded
from sdgov.generators.settings import GeneratorSpec
from sdgov.measurement.marginals import measure_agreement
from sdgov.synthesis.generate import generate_synthetic
from tests.conftest import make_demo_inputs
from tests.fixtures.sampling import chain_model, collect, collect_as

FAST = {"name": "ipf", "iterations": 5}  # the demo's Φ, fitted in milliseconds


@pytest.fixture
def rounding_default() -> None:
    """The default these tests hold the consequences of (the module's one line)."""
    assert defaults.SAMPLING == "round"


def _spec(dest: Path, **generator: object) -> Path:
    return make_demo_inputs(dest, rows=300, generator={**FAST, **generator})


def test_while_iid_was_the_default_an_agreement_stated_no_sampling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(defaults, "SAMPLING", "iid")
    agreement = load_spec(_spec(tmp_path)).agreement
    assert agreement.generator.sampling is None and agreement.generator.drawn == "iid"
    assert "sampling" not in agreement.model_dump()["generator"]  # the hash of an agreement as before the option


def test_with_rounding_the_default_a_new_agreement_states_it_and_a_stated_iid_stays(
    tmp_path: Path, rounding_default: None
) -> None:
    new = load_spec(_spec(tmp_path / "a")).agreement
    assert new.generator.sampling == "round" and new.generator.drawn == "round"
    stated = load_spec(_spec(tmp_path / "b", sampling="iid")).agreement
    assert stated.generator.sampling == "iid"


def test_an_agreement_stating_no_sampling_regenerates_bit_for_bit_whatever_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generate stage's output (what ``verify-release`` regenerates) for an agreement made while i.i.d. was the
    default: the same bytes after rounding became the default; an agreement stating ``round`` draws otherwise."""
    monkeypatch.setattr(defaults, "SAMPLING", "iid")  # the agreement is made, and released, before the change
    loaded = load_spec(_spec(tmp_path / "in"))
    agreement = loaded.agreement
    assert agreement.generator.sampling is None
    psi = tmp_path / "psi.json"
    psi.write_text(_measured(loaded).model_dump_json())

    def generated(out: str, generator: GeneratorSpec) -> str:
        inp = GenerateInput(
            measurements=ArtifactRef.of("measurements", psi),
            schema_file=ArtifactRef.of("schema", loaded.schema_file),
            generator=generator,
            rows=2000,
            seed=agreement.seed,
            out_dir=str(tmp_path / out),
        )
        synthetic, _info, _rows = generate_synthetic(inp, lambda _line: None)
        return hashlib.sha256(Path(synthetic.path).read_bytes()).hexdigest()

    released = generated("released", agreement.generator)
    monkeypatch.setattr(defaults, "SAMPLING", "round")
    assert generated("regenerated", agreement.generator) == released
    assert generated("rounded", agreement.generator.model_copy(update={"sampling": "round"})) != released


def test_a_split_and_the_pre_flight_draw_as_the_agreement_states(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rounding_default: None
) -> None:
    """Every caller of the sampler that holds an agreement passes the rule it states (absent: i.i.d.), never the
    default: a split's parts and the pre-flight's dry run, as the generate stage (above)."""
    from sdgov.agreement.spec import AgreedPart, AgreedSplit
    from sdgov.intake import preflight
    from sdgov.synthesis import split

    seen: list[object] = []
    real = sampler.sample_to_parquet

    def recording(*args: Any, sampling: Any = None, **kwargs: Any) -> int:
        seen.append(sampling)
        return real(*args, sampling=sampling, **kwargs)

    monkeypatch.setattr(split, "sample_to_parquet", recording)
    monkeypatch.setattr(sampler, "sample_to_parquet", recording)  # the pre-flight imports it when it runs
    loaded = load_spec(_spec(tmp_path))
    agreement = loaded.agreement
    mset = _measured(loaded)
    for stated, expected in ((None, "iid"), ("round", "round")):
        generator = agreement.generator.model_copy(update={"sampling": stated})  # None: made before the change
        preflight._dry_run_generator(
            loaded.model_copy(update={"agreement": agreement.model_copy(update={"generator": generator})})
        )
        part = AgreedPart(
            name="all",
            codes=["1"],
            cells=[0],
            attributes=agreement.attributes,
            cliques=agreement.cliques,
            privacy=agreement.privacy,
            generator=generator,
        )
        split.sample_split(
            AgreedSplit(attribute="Sex", parts=[part]), {"all": mset}, loaded.schema_, 100, 1, tmp_path / "s.parquet"
        )
        assert seen == [expected, expected]
        seen.clear()


def test_a_draw_that_does_not_say_how_follows_the_default(rounding_default: None) -> None:
    model, *_ = chain_model()
    default, rounded = collect(model, 5000, 9, 1000), collect_as(model, 5000, 9, "round", 1000)
    assert all(np.array_equal(default[k], rounded[k]) for k in default)


def _measured(loaded):  # type: ignore[no-untyped-def]
    """Φ's exact marginals on the demo records (the privacy plan's σ, no noise needed to test a sampler's caller)."""
    ag = loaded.agreement
    real = load_encoded(loaded.data_path, loaded.schema_)
    return measure_agreement(real, loaded.schema_, ag, plan_privacy(ag.privacy, ag.cliques), "fp")
