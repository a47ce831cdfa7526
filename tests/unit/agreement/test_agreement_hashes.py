"""A regression pin: the agreement hash of every example spec, of the demo and of variants exercising each part
of the agreement (the pre-registered sections, a generator's own parameter, another generator, a split) is what
it was before the sections and the generators' parameters became plug-ins (issue 23 item 2). An agreement hash
is what every approver signed and every ledger entry names: a change here re-opens every agreement.

The values are the hashes computed on main at d008fec, before the change (the demo spec with its former
``rows: 20000``).

Issue 40 made the rounded sampler the default, and an agreement states a default other than i.i.d.
(``generator.sampling: round``), so every spec that does not say how to sample hashes anew (:data:`SPECS`). The pins
from before stay, computed with the sampler's default set back to i.i.d. (the ``iid_default`` fixture): under the
new default each of those agreements differs from its pinned one by its generator's ``sampling: round`` and by
nothing else (``test_rounding_the_default_changes_each_agreement_by_its_stated_sampling_only``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import sdgov.generators.sampling_default as defaults
from sdgov.agreement.load import load_spec
from sdgov.agreement.resolve import resolve
from sdgov.agreement.spec import Agreement, ReleaseSpec
from sdgov.data.schema import load_schema
from sdgov.demo import inputs
from tests.conftest import REPO

SPECS = {  # issue 40: each states the rounded sampler, the default (as it hashed while i.i.d. was: SPECS_IID)
    "examples/census2011/all_pairs.yaml": "b552cee61557174bd21dfa20069e6a16b01cdd082829cda457e394bd7ba5b533",
    "examples/census2011/app1.yaml": "dd99275642274e9cf1422f66b946e2a827065fba7622891461927281de50b854",
    "examples/census2011/app2.yaml": "03c56255b512ca3b6830b00ce2fc6e8a64f3450ed0f4cd30a421baff9a3a6562",
    "examples/census2011/app3.yaml": "a7938a7f53d9d6ff5fe4563ede999cec0d21d5cf5b0f4505733cbb3760e2ea42",
    "examples/uci_adult/spec.yaml": "d2ff81780030cc19d7fce6005fa13e96232569f854ad0dd6b8c3b615959cdd3e",
    "sdgov/demo/spec.yaml": "36f16045356768380cac03ff59ad8269a79da9713bfc0b250ffb39ca49c2c553",
}

SPECS_IID = {  # the same specs with the sampler's default i.i.d. (before issue 40): no sampling stated
    # issue 39: the census examples no longer ask for rows = N (50,000); with rows: 50000 they hash as pinned
    # before (CENSUS_AS_PINNED)
    "examples/census2011/all_pairs.yaml": "b3952fe11d3c87f2a8dfec9eb2366edc4bbe513e98c7b8b5951612f50aba67f9",
    "examples/census2011/app1.yaml": "9df3b6c1ae56a4633fd846f24dfb27c025414dea0753fecf5dcc9cdb759ab889",
    "examples/census2011/app2.yaml": "00fdc9559d2a671d2bf9bf46c9bd9c30fdeee7e340e2a40a254000cd205baec4",
    "examples/census2011/app3.yaml": "0ef12e5b9d24fc6d6a59aad7ae99e900504116744709b35a5e5da155c2c4817e",
    "examples/uci_adult/spec.yaml": "219b246d786277be88816e68c876ee08a9106c839d28ac5963d2c833e48d7be5",
    # issue 25: the demo no longer asks for rows = N (20,000); with rows: 20000 it hashes ba82d6bf… as before.
    # Issue 26: its decomposability test pre-registers K = 10 (was 4, which the pre-flight now refuses: d5419ce7…)
    # Issue 38: it names its positive control by its registered name, dishonest_pgm (with the old spelling, an exact
    # alias of that name, it hashed 40e1fd70… as before: as_pinned below; then 2b0553a7…).
    # Issue 37 (shared fits): memorisation_pairs became memorisation_worlds, a different computation, so every
    # privacy_risk section's settings read memorisation_worlds (default 31) and hash anew (the old field is refused
    # in one line naming its successor: tests/unit/audits/test_privacy_risk.py)
    "sdgov/demo/spec.yaml": "6174c06396626a9700a5a983f6048b4f61b23c83ce0175b00dc8a7649c833c6f",
}

SPLIT = {
    "attribute": "Sex",
    "parts": [
        {"name": "men", "codes": [1], "phi": {"marginals": [["Age", "Education"], ["Education", "Occupation"]]}},
        {"name": "women", "codes": [2], "phi": {"marginals": [["Age", "Education", "Occupation"]]}, "share": 2},
    ],
}
NO_AUDITS = ("audit", "privacy_risk")
VARIANTS = {  # name: (keys dropped from the demo spec, keys set) → the hash
    "no audits": (NO_AUDITS, {}, "eaf92e99f890fa4fa846b4d61f333790523747579c6eeea8b4b9c687ed8c9e4b"),
    "privacy_risk only, switched off": (  # d298e2ac… before issue 37's memorisation_worlds (SPECS above)
        NO_AUDITS,
        {"privacy_risk": {"enabled": False, "settings": {"sensitive": "Health"}}},
        "e37e68ec1c079c50c2764e4fe529d9b7a5dd6a6a4a6a3dd3cbdab704858243d6",
    ),
    "audit only, defaults": (
        NO_AUDITS,
        {"audit": {}},
        "56030ae4ae1b96dc5abc2c77da461eb6aa3869e363e230eab88e0761073f1b21",
    ),
    "pgm, exact inference": (
        NO_AUDITS,
        {"generator": {"name": "pgm", "inference": "exact", "iterations": 5}},
        "65f739822c70ab3cc2b58e9a80fc5981e1d301981ca18ede00d75c64c9644faf",
    ),
    "ipf": (
        NO_AUDITS,
        {"generator": {"name": "ipf"}},
        "edfbb487a12097114a7ec6f0be1b122d583c406598be4b5093e69852d9f87121",
    ),
    "split": (
        (*NO_AUDITS, "phi"),
        {"split": SPLIT, "privacy": {"rho": 0.5}},
        "5e05adc2ed617317fa8e1e866f3857e70d1cd6302d1edcdf69344e03a66801cb",
    ),
}


@pytest.fixture
def iid_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sampler's default as it was when the pins below were computed (before issue 40)."""
    monkeypatch.setattr(defaults, "SAMPLING", "iid")


@pytest.mark.parametrize("path", SPECS)
def test_the_example_specs_agreement_hashes_are_unchanged(path):
    assert load_spec(REPO / path).agreement.sha256() == SPECS[path]


@pytest.mark.parametrize("path", SPECS_IID)
def test_the_example_specs_hash_as_before_with_the_iid_default(path, iid_default):
    assert load_spec(REPO / path).agreement.sha256() == SPECS_IID[path]


CENSUS_AS_PINNED = {
    "examples/census2011/all_pairs.yaml": "2fc7fca3f4c26bca008bee81745ed5d3d789ff16984b84e16b4f2fc1c56d2869",
    "examples/census2011/app1.yaml": "0f36318fd3d6415b503ac347a5e6b5eebb594d26e8913015b8c7cec3c74164ea",
    "examples/census2011/app2.yaml": "8792653edc881b67c76d9e0064ab4a45b91173ab3b14dda1256f72cae71eb72f",
    "examples/census2011/app3.yaml": "03a348a9f6c6b72cae867cbe298ba4e1a93fa6505d37ca041e56b6eef6bd64a5",
}


@pytest.mark.parametrize("path", sorted(CENSUS_AS_PINNED))
def test_the_census_examples_as_pinned_hash_as_before(path, iid_default):
    """With the ``rows: 50000`` they asked for before issue 39, the census examples hash as pinned: the hash itself
    is unchanged by the statement's refactoring (ψ, the generator settings and the accounting moved rooms)."""
    raw = yaml.safe_load((REPO / path).read_text()) | {"rows": 50000}
    schema = load_schema(REPO / path.rsplit("/", 1)[0] / raw["schema"])
    assert resolve(ReleaseSpec.model_validate(raw), schema).sha256() == CENSUS_AS_PINNED[path]


def as_pinned() -> dict:
    """The demo spec as it was pinned: ``rows: 20000``, its decomposability test at K = 4, its positive control
    spelled as it was before issue 38 (an exact alias of ``dishonest_pgm``: old agreements load and hash as before)."""
    raw = yaml.safe_load((inputs() / "spec.yaml").read_text())
    old = {"K": 4, "positive_control": "sdgov.audits.generators:dishonest_pgm"}
    return raw | {"rows": 20000, "audit": {**raw["audit"], **old}}


def test_the_demo_spec_as_pinned_hashes_as_before(iid_default):
    raw = as_pinned()
    # ba82d6bf… before issue 37's memorisation_worlds (its privacy_risk settings read memorisation_pairs: SPECS above)
    pinned = "968af401a3d7111758328458cbe85100aefbcaf106fc5c862a4aed8c13bd869a"
    assert resolve(ReleaseSpec.model_validate(raw), load_schema(inputs() / "schema.yaml")).sha256() == pinned


def variant(name: str) -> Agreement:
    dropped, given, _sha256 = VARIANTS[name]
    raw = as_pinned()
    spec = ReleaseSpec.model_validate({k: v for k, v in raw.items() if k not in dropped} | given)
    return resolve(spec, load_schema(inputs() / "schema.yaml"))


@pytest.mark.parametrize("name", VARIANTS)
def test_each_part_of_the_agreement_hashes_as_before(name, iid_default):
    assert variant(name).sha256() == VARIANTS[name][2]


def _census_as_pinned(path: str) -> Agreement:
    raw = yaml.safe_load((REPO / path).read_text()) | {"rows": 50000}
    return resolve(ReleaseSpec.model_validate(raw), load_schema(REPO / path.rsplit("/", 1)[0] / raw["schema"]))


AGREEMENTS = {
    **{path: lambda path=path: load_spec(REPO / path).agreement for path in SPECS},
    **{f"{path} as pinned": lambda path=path: _census_as_pinned(path) for path in CENSUS_AS_PINNED},
    "demo as pinned": lambda: resolve(ReleaseSpec.model_validate(as_pinned()), load_schema(inputs() / "schema.yaml")),
    **{f"variant {name}": lambda name=name: variant(name) for name in VARIANTS},
}


def _without_sampling(dump: object) -> tuple[object, int]:
    """``dump`` with every generator's ``sampling: round`` taken out, and how many were."""
    if isinstance(dump, list):
        items = [_without_sampling(v) for v in dump]
        return [v for v, _ in items], sum(n for _, n in items)
    if not isinstance(dump, dict):
        return dump, 0
    taken = 0
    out = {}
    for key, value in dump.items():
        if key == "generator" and isinstance(value, dict) and value.get("sampling") == "round":
            value, taken = {k: v for k, v in value.items() if k != "sampling"}, taken + 1
        out[key], n = _without_sampling(value)
        taken += n
    return out, taken


@pytest.mark.parametrize("name", AGREEMENTS)
def test_rounding_the_default_changes_each_agreement_by_its_stated_sampling_only(name, monkeypatch):
    """Every pin that changed with issue 40 changed for that reason alone: the agreement under the rounded default,
    with its generators' ``sampling: round`` taken out, is the i.i.d. default's agreement, key for key (a split
    states it on the whole agreement's generator and on each part's)."""
    rounded = AGREEMENTS[name]().model_dump(mode="json")
    monkeypatch.setattr(defaults, "SAMPLING", "iid")
    iid = AGREEMENTS[name]().model_dump(mode="json")
    stripped, taken = _without_sampling(rounded)
    assert taken >= 1 and stripped == iid and rounded != iid


def test_a_section_is_written_where_the_field_stood():
    """Not only the hash (over sorted keys): the agreement's JSON keeps its key order, a section after 'limits'."""
    agreement = load_spec(Path(inputs() / "spec.yaml")).agreement
    keys = list(agreement.model_dump())
    assert keys[keys.index("limits") + 1 : keys.index("limits") + 3] == ["audit", "privacy_risk"]
    # 'inference: auto' left out; the sampler's default stated (issue 40)
    assert list(agreement.model_dump()["generator"]) == ["name", "iterations", "sampling"]
