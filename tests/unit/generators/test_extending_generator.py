"""docs/extending.md's worked generator, run from the doc itself: registered, named by a spec, fitted on noisy
marginals, sampled, labelled on the card and audited — the example cannot drift from the code."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdgov.agreement.load import load_spec
from sdgov.agreement.resolve import resolve
from sdgov.audits.generator_protocol import load_generator
from sdgov.base.errors import SpecError
from sdgov.budget.accounting import plan_privacy
from sdgov.engines import load_encoded
from sdgov.generators import registry
from sdgov.generators.plugin import GeneratorPlugin
from sdgov.generators.sampler import iter_chunks
from sdgov.generators.settings import GeneratorSpec
from sdgov.measurement.marginals import measure_agreement
from tests.conftest import make_demo_inputs

DOC = Path(__file__).resolve().parents[3] / "docs" / "extending.md"


def section_code(heading: str) -> list[str]:
    """The ```python blocks of one '## ' section of the doc."""
    text = DOC.read_text(encoding="utf-8")
    body = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, flags=re.S)


@pytest.fixture
def plugin(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeneratorPlugin]:
    """The doc's module, registered by the doc's registration line; unregistered afterwards."""
    module_code, registration = section_code("Adding a generator")
    module = types.ModuleType("sdgov.generators.independent")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(module_code, str(DOC), "exec"), module.__dict__)
    exec(compile(registration, str(DOC), "exec"), dict(vars(registry)))
    try:
        yield registry.GENERATORS["independent"]
    finally:
        del registry.GENERATORS["independent"]


def test_unknown_generator_lists_the_registered_ones(plugin):
    with pytest.raises(ValueError, match="unknown generator 'gan': use 'pgm', 'ipf' or 'independent'"):
        GeneratorSpec(name="gan")
    with pytest.raises(SpecError, match="'pgm', 'ipf' or 'independent'"):
        registry.generator("gan")


def test_the_documented_generator_fits_samples_and_labels_the_card(plugin, tmp_path):
    loaded = load_spec(make_demo_inputs(tmp_path, rows=1500, privacy={"noise": "none"}))  # exact margins
    spec = loaded.spec.model_copy(update={"generator": GeneratorSpec(name="independent")})
    agreement = resolve(spec, loaded.schema_)
    assert agreement.generator.name == "independent"

    codes = load_encoded(loaded.data_path, loaded.schema_)
    plan = plan_privacy(agreement.privacy, agreement.cliques)
    mset = measure_agreement(codes, loaded.schema_, agreement, plan, dataset_fingerprint="test")
    model = registry.generator("independent").fit(mset, agreement.generator)
    rows = list(iter_chunks(model, 4000, seed=7))
    synth = {a: np.concatenate([ch[a] for ch in rows]) for a in agreement.attributes}
    for a in agreement.attributes:
        real_share = np.bincount(codes[a], minlength=mset.domain[a]) / len(codes)
        synth_share = np.bincount(synth[a], minlength=mset.domain[a]) / 4000
        assert np.abs(real_share - synth_share).max() < 0.04, f"{a}: one-way margin not kept"
    assert plugin.implementation() == "sdgov example 1.0 (independent one-way margins)"


def test_the_documented_generator_gets_its_audit_variants(plugin, tmp_path):
    domain = {"A": 3, "B": 2, "C": 2}
    rng = np.random.default_rng(0)
    records = pd.DataFrame({a: rng.integers(0, k, 300) for a, k in domain.items()})
    phi = [("A", "B"), ("B", "C")]
    honest = load_generator("honest_independent")(phi, domain)
    dishonest = load_generator("dishonest_independent")(phi, domain)
    assert honest.fitted == phi and dishonest.fitted == [*phi, ("A", "B", "C")]
    for gen in (honest, dishonest):
        gen.fit(records, seed=1)
        out = gen.sample(50, seed=2)
        assert list(out.columns) == list(domain) and len(out) == 50


def _loaded(tmp_path: Path, name: str, **generator: object):
    return load_spec(
        make_demo_inputs(
            tmp_path / name, rows=1500, privacy={"noise": "none"}, generator={"name": "independent", **generator}
        )
    )


@pytest.mark.parametrize(
    ("given", "where"), [({"smoothing": -1}, "generator.smoothing"), ({"smooth": 1}, "generator.smooth")]
)
def test_the_documented_parameter_is_validated_by_the_plugins_own_model(plugin, tmp_path, given, where):
    with pytest.raises(SpecError, match=re.escape(where)):
        _loaded(tmp_path, "bad", **given)
    with pytest.raises(ValueError, match="smoothing"):
        GeneratorSpec(name="pgm", smoothing=1)  # another generator's parameter: pgm's own is 'inference'


def test_the_documented_parameter_is_hashed_when_given_and_reaches_the_fit(plugin, tmp_path):
    plain, smooth = _loaded(tmp_path, "plain"), _loaded(tmp_path, "smooth", smoothing=1e9)
    stated = {"name": "independent", "iterations": 2000, "sampling": "round"}  # the sampler's default (issue 40)
    assert plain.agreement.model_dump()["generator"] == {**stated, "smoothing": 0.0}
    assert smooth.agreement.model_dump()["generator"] == {**stated, "smoothing": 1e9}
    assert smooth.agreement.sha256() != plain.agreement.sha256()

    codes = load_encoded(plain.data_path, plain.schema_)
    margins = {}
    for loaded in (plain, smooth):
        agreement = loaded.agreement
        plan = plan_privacy(agreement.privacy, agreement.cliques)
        mset = measure_agreement(codes, loaded.schema_, agreement, plan, dataset_fingerprint="test")
        margins[loaded is smooth] = registry.generator("independent").fit(mset, agreement.generator).marginals
    # a pseudo-count of 10^9 per cell flattens every margin to uniform; without it they are the data's own
    assert all(np.allclose(m, 1 / len(m), atol=1e-5) for m in margins[True])
    assert not all(np.allclose(m, 1 / len(m), atol=1e-2) for m in margins[False])
