"""Dense Φ without the full joint: a junction tree over the domain limit resolves to approximate inference."""

from __future__ import annotations

import numpy as np
import yaml

from sdgov.agreement.load import load_spec
from sdgov.budget.accounting import plan_privacy
from sdgov.engines import load_encoded
from sdgov.generators import pgm_mbi
from sdgov.generators.registry import generator
from sdgov.generators.sampler import iter_chunks
from sdgov.measurement.marginals import measure_agreement
from tests.conftest import make_demo_inputs

ALL = ["Region", "Sex", "Age", "Education", "Economic Activity", "Occupation", "Health"]


def _spec(tmp_path, limit: int | None, inference: str | None = None):
    spec = make_demo_inputs(tmp_path / "in", rows=2000)
    raw = yaml.safe_load(spec.read_text())
    raw["phi"] = {"all_kway": [{"k": 2, "attributes": ALL}]}
    raw["generator"] = {"name": "pgm", "iterations": 10, **({"inference": inference} if inference else {})}
    if limit is not None:
        raw["limits"] = {"max_model_cells": limit}
    spec.write_text(yaml.safe_dump(raw, sort_keys=False))
    return load_spec(spec)


def test_within_the_limit_inference_stays_exact_and_the_agreement_hash_is_unchanged(tmp_path):
    loaded = _spec(tmp_path, None)
    assert loaded.agreement.generator.params.inference == "auto"
    assert "inference" not in loaded.agreement.model_dump(mode="json")["generator"]


def test_over_the_domain_limit_pgm_fits_with_approximate_inference_instead_of_refusing(tmp_path):
    loaded = _spec(tmp_path, 500)  # the all-pairs junction tree is far larger; the largest pair is 5 × 10 cells
    ag = loaded.agreement
    assert ag.generator.params.inference == "approximate"
    assert pgm_mbi.largest_clique_cells(ag.attributes, ag.cliques, loaded.schema_.domain(ag.attributes)) > 500
    real = load_encoded(loaded.data_path, loaded.schema_)
    mset = measure_agreement(real, loaded.schema_, ag, plan_privacy(ag.privacy, ag.cliques), "fp")
    model = generator("pgm").fit(mset, ag.generator)
    assert model.fit_info["inference"].startswith("approximate (mbi ApproxMirrorDescent")
    kept = [tuple(c) for c in model.fit_info["sampled_marginals"]]
    assert kept and len(kept) + len(model.fit_info["not_in_sampled_model"]) == len(ag.cliques)
    sizes = loaded.schema_.domain(ag.attributes)
    assert pgm_mbi.largest_clique_cells(ag.attributes, kept, sizes) <= pgm_mbi.SAMPLING_CELLS
    rows = next(iter_chunks(model, 1000, 0))
    assert set(rows) == set(ag.attributes) and all(len(v) == 1000 for v in rows.values())
    assert all(int(np.max(rows[a])) < sizes[a] for a in ag.attributes)


def test_inference_exact_still_refuses_over_the_limit(tmp_path):
    import pytest

    from sdgov.base.errors import SpecError

    with pytest.raises(SpecError, match="over the model domain limit"):
        _spec(tmp_path, 500, inference="exact")


def test_the_exact_inference_limit_sends_auto_to_approximate_within_the_domain_limit(tmp_path):
    """``limits.max_exact_cells``: the fit's time budget as a model size (the same choice on every machine). Over
    it, 'auto' resolves to approximate and the agreement records it; an explicit 'exact' is kept; absent, or above
    the model's size, nothing changes (the same agreement hash)."""

    def resolved(limits: dict, inference: str | None = None):
        spec = make_demo_inputs(tmp_path / f"in-{len(list(tmp_path.iterdir()))}", rows=200)
        raw = yaml.safe_load(spec.read_text())
        raw["phi"] = {"all_kway": [{"k": 2, "attributes": ALL}]}
        raw["generator"] = {"name": "pgm", "iterations": 10, **({"inference": inference} if inference else {})}
        raw["limits"] = limits
        spec.write_text(yaml.safe_dump(raw, sort_keys=False))
        return load_spec(spec)

    plain = resolved({})
    ag = plain.agreement
    cells = generator("pgm").model_cells(ag.attributes, ag.cliques, plain.schema_.domain(ag.attributes))
    assert ag.generator.params.inference == "auto" and 500 < cells < 10**9
    timed = resolved({"max_exact_cells": 500}).agreement
    assert timed.generator.params.inference == "approximate" and timed.sha256() != ag.sha256()
    assert resolved({"max_exact_cells": 500}, inference="exact").agreement.generator.params.inference == "exact"
    roomy = resolved({"max_exact_cells": 10**9}).agreement
    assert roomy.generator.params.inference == "auto" and roomy.sha256() != ag.sha256()  # the limit itself is agreed
