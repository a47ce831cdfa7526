"""Schema structures (lookups, structural zeros), split parts, the default domain limits and the synthesis graph,
on small made-up schemas: every refusal is one line naming what to fix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sdgov.agreement.resolve import resolve
from sdgov.agreement.spec import ReleaseSpec
from sdgov.base.errors import SchemaError, SpecError
from sdgov.data.schema import Schema, load_schema
from sdgov.data.structures import discard_zero_noise, impossible
from sdgov.generators.graph import synthesis_graph
from sdgov.generators.model import CliqueModel
from sdgov.generators.sampler import iter_chunks
from sdgov.synthesis.split import _rows, resolve_parts


def schema_dict(**extra: object) -> dict:
    cat = lambda name, codes: {"name": name, "categories": [{"code": c, "label": str(c)} for c in codes]}
    return {
        "name": "toy",
        "columns": [
            cat("Area", ["a1", "a2", "a3"]),
            cat("Zone", ["north", "south"]),
            cat("Age", [1, 2, 3]),
            cat("Work", [-9, 1, 2]),
            cat("Kind", [1, 2]),
        ],
        "lookups": [{"column": "Zone", "source": "Area", "table": {"a1": "north", "a2": "north", "a3": "south"}}],
        "structural_zeros": [{"description": "children do not work", "cells": {"Age": [1], "Work": [1, 2]}}],
    } | extra


def spec(**over: object) -> ReleaseSpec:
    base = {
        "name": "toy",
        "dataset": {"name": "toy", "path": "x.csv"},
        "schema": "s.yaml",
        "phi": {"marginals": [["Area", "Age"], ["Age", "Work"]]},
        "privacy": {"sigma": 10},
        "seed": 1,
    }
    return ReleaseSpec.model_validate(base | over)


def refusal(tmp_path: Path, raw: dict) -> str:
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(SchemaError) as exc:
        load_schema(tmp_path / "s.yaml")
    line = exc.value.one_line()
    assert "\n" not in line
    return line


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"table": {"a1": "north", "a2": "north"}}, "source code(s) ['a3'] not in the table"),
        ({"table": {"a1": "north", "a2": "north", "a3": "east"}}, "maps to undeclared code(s) ['east'] of 'Zone'"),
        ({"source": "Nowhere"}, "'Nowhere' is not a declared column"),
    ],
)
def test_a_broken_lookup_is_refused_in_one_line(tmp_path, change, expected):
    raw = schema_dict()
    raw["lookups"][0].update(change)
    assert expected in refusal(tmp_path, raw)


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        ({"Age": [1], "Job": [1]}, "names 'Job', which is not a declared categorical column"),
        ({"Age": [1], "Work": [7]}, "code(s) [7] are not declared for 'Work'"),
        ({"Zone": ["north"], "Age": [1]}, "names lookup column 'Zone'; state the zero on its source 'Area'"),
        ({"Kind": [1, 2], "Age": [1, 2, 3]}, "rules out every combination of ['Age', 'Kind']"),
    ],
)
def test_a_broken_structural_zero_is_refused_in_one_line(tmp_path, cells, expected):
    raw = schema_dict(structural_zeros=[{"cells": cells}])
    assert expected in refusal(tmp_path, raw)


def test_lookup_columns_are_not_part_of_the_schema_hash_unless_declared():
    plain = schema_dict()
    del plain["lookups"], plain["structural_zeros"]
    assert "lookups" not in Schema.model_validate(plain).model_dump(mode="json")  # old schemas keep their hash


def test_phi_naming_a_lookup_column_is_refused():
    schema = Schema.model_validate(schema_dict())
    with pytest.raises(SpecError, match=r"lookup column\(s\) \['Zone'\].*use their source column\(s\) \['Area'\]"):
        resolve(spec(phi={"marginals": [["Zone", "Age"]]}), schema)


def big_schema(categories: int, columns: int) -> Schema:
    codes = [{"code": i, "label": str(i)} for i in range(categories)]
    return Schema.model_validate(
        {"name": "big", "columns": [{"name": f"C{i}", "categories": codes} for i in range(columns)]}
    )


def test_default_limits_are_ons_one_million_cells_per_marginal_and_two_billion_per_model():
    wide = big_schema(1001, 2)  # 1,002,001 cells in the one 2-way marginal
    with pytest.raises(SpecError, match="has 1,002,001 cells, over the limit of 1,000,000"):
        resolve(spec(phi={"marginals": [["C0", "C1"]]}), wide)
    ring = big_schema(1000, 4)  # a 4-cycle of 10^6-cell marginals: the junction tree holds 10^9-cell cliques
    cycle = [["C0", "C1"], ["C1", "C2"], ["C2", "C3"], ["C3", "C0"]]
    at_limit = spec(phi={"marginals": [*cycle, ["C0", "C2"]]})  # two 10^9-cell cliques: 2·10^9, allowed
    assert resolve(at_limit, ring).limits.max_model_cells == 2_000_000_000
    exact = {"name": "pgm", "inference": "exact"}  # 'auto' would fit approximately instead (issue 16)
    with pytest.raises(SpecError, match="pgm model needs 2,000,000,000 cells, over the model domain limit of 1,9"):
        resolve(spec(phi=at_limit.phi, limits={"max_model_cells": 1_999_999_999}, generator=exact), ring)
    dense = {"all_kway": [{"k": 2, "attributes": ["C0", "C1", "C2", "C3"]}]}
    with pytest.raises(SpecError, match="pgm model needs [0-9,]+ cells, over the model domain limit of 2,000,000,000"):
        resolve(spec(phi=dense, generator=exact), ring)
    assert resolve(spec(phi=dense), ring).generator.params.inference == "approximate"


def test_noise_on_structurally_zero_cells_is_discarded_and_only_there():
    schema = Schema.model_validate(schema_dict())
    (zero,) = schema.zero_cells()
    noisy = np.array([[5, 3, -2], [10, 20, 30], [7, 8, 9]])  # Age × Work
    assert impossible([zero], ("Age", "Work"), noisy.shape).tolist() == [[False, True, True]] + [[False] * 3] * 2
    assert discard_zero_noise(noisy, ("Age", "Work"), [zero]).tolist() == [[5, 0, 0], [10, 20, 30], [7, 8, 9]]
    transposed = discard_zero_noise(noisy.T, ("Work", "Age"), [zero])
    assert transposed.T.tolist() == [[5, 0, 0], [10, 20, 30], [7, 8, 9]]
    assert discard_zero_noise(noisy, ("Age", "Kind"), [zero]).tolist() == noisy.tolist()  # no zero within it


def test_the_sampler_never_draws_an_impossible_record_even_from_a_model_that_allows_one():
    schema = Schema.model_validate(schema_dict())
    uniform = CliqueModel(
        attributes=("Age", "Work"),
        domain={"Age": 3, "Work": 3},
        cliques=[("Age",), ("Work",)],  # independent: 2/9 of its mass on children who work
        marginals=[np.full(3, 1 / 3), np.full(3, 1 / 3)],
        order=["Age", "Work"],
        total=1.0,
    )
    chunks = list(iter_chunks(uniform, 20_000, seed=3, chunk_rows=4096, zeros=schema.zero_cells()))
    age = np.concatenate([c["Age"] for c in chunks])
    work = np.concatenate([c["Work"] for c in chunks])
    assert not ((age == 0) & (work > 0)).any()
    assert ((age == 0) & (work == 0)).sum() > 1000  # children are still drawn, with the one possible code
    again = list(iter_chunks(uniform, 20_000, seed=3, chunk_rows=4096, zeros=schema.zero_cells()))
    assert all((a["Work"] == b["Work"]).all() for a, b in zip(chunks, again))  # redraws are seeded too


def test_the_graph_draws_phi_edges_solid_model_edges_dashed_in_sampling_order():
    info = {
        "fitted_marginals": [["A", "B"], ["B", "C"], ["C", "D"], ["D", "A"]],  # a 4-cycle: triangulated
        "model_cliques": [["A", "B", "D"], ["B", "C", "D"]],
        "sampling_order": ["D", "B", "A", "C"],
    }
    g = synthesis_graph(info)
    assert g is not None
    edges = {(e.source, e.target): e.kind for e in g.edges}
    assert edges == {
        ("D", "B"): "model",  # the chord the junction tree added
        ("D", "A"): "phi",
        ("B", "A"): "phi",
        ("D", "C"): "phi",
        ("B", "C"): "phi",
    }
    assert synthesis_graph({"fitted_marginals": [["A", "B"]]}) is None  # no order recorded: no graph


def split_spec(parts: list[dict], **over: object) -> ReleaseSpec:
    return spec(phi=None, split={"attribute": "Kind", "parts": parts}, **over)


def part(name: str, codes: list, phi: list) -> dict:
    return {"name": name, "codes": codes, "phi": {"marginals": phi}}


def test_split_parts_resolve_to_their_own_agreements_and_budget_shares():
    schema = Schema.model_validate(schema_dict())
    parts = resolve_parts(
        split_spec(
            [
                part("one", [1], [["Area", "Age"], ["Age", "Work"]]) | {"share": 3},
                part("two", [2], [["Area", "Age", "Work"]]),
            ],
            privacy={"rho": 0.4},
        ),
        schema,
    )
    assert [p.name for p in parts] == ["one", "two"] and [p.cells for p in parts] == [[0], [1]]
    assert [p.privacy.rho for p in parts] == pytest.approx([0.3, 0.1])
    assert parts[0].cliques != parts[1].cliques


def test_a_parts_statistic_is_keyed_by_its_records_and_unsplit_keys_and_agreements_are_unchanged():
    from sdgov.agreement.resolve import resolve
    from sdgov.base.hashing import sha256_json
    from sdgov.measurement.store import statistic_key

    schema = Schema.model_validate(schema_dict())
    unsplit = statistic_key("fp", ("Age", "Work"), 2.0)
    # the key every registry logged before split synthesis existed
    assert unsplit == sha256_json({"dataset": "fp", "attributes": ["Age", "Work"], "sigma": 2.0})
    split = resolve(
        split_spec([part("one", [1], [["Age", "Work"]]), part("two", [2], [["Age", "Work"]])], privacy={"rho": 1}),
        schema,
    ).split
    assert split is not None
    keys = {statistic_key("fp", ("Age", "Work"), 2.0, split.records(p)) for p in split.parts}
    assert len(keys | {unsplit}) == 3  # each part's marginal is its own statistic, not the unsplit one
    assert "split" not in resolve(spec(), schema).model_dump(mode="json")  # an unsplit agreement hashes as before


@pytest.mark.parametrize(
    ("parts", "over", "expected"),
    [
        ([part("one", [1], [["Age", "Work"]])] * 2, {}, r"\['1'\] in several parts"),
        ([part("one", [1], [["Age", "Work"]]), part("two", [3], [["Age", "Work"]])], {}, r"code\(s\) \[3\]"),
        ([part("one", [1], [["Age", "Work"]]), part("two", [2], [["Age", "Area"]])], {}, "same attributes"),
        (
            [part("one", [1], [["Age", "Work"]]), part("two", [2], [["Age", "Work"]])],
            {"privacy": {"epsilon": 1}},
            "'rho'",
        ),
    ],
)
def test_a_bad_split_is_refused_in_one_line(parts, over, expected):
    with pytest.raises(SpecError, match=expected):
        resolve_parts(split_spec(parts, **over), Schema.model_validate(schema_dict()))


def test_synthesise_split_runs_a_split_spec_outside_the_release(tmp_path):
    """The simulation path (fresh noise, no ledger): both parts sampled, in proportion to their noisy totals."""
    from sdgov.synthesis.split import synthesise_split

    rng = np.random.default_rng(0)
    n = 400
    data = pd.DataFrame(
        {
            "Area": rng.choice(["a1", "a2", "a3"], n),
            "Age": rng.choice([1, 2, 3], n),
            "Work": -9,
            "Kind": np.where(np.arange(n) < 100, 1, 2),  # a quarter in part 'one'
        }
    )
    data["Zone"] = data["Area"].map({"a1": "north", "a2": "north", "a3": "south"})
    data.to_csv(tmp_path / "x.csv", index=False)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(schema_dict()))
    parts = [part(name, [k], [["Area", "Age"]]) for name, k in (("one", 1), ("two", 2))]
    raw = spec(
        phi=None,
        split={"attribute": "Kind", "parts": parts},
        privacy={"rho": 10},
        generator={"name": "pgm", "iterations": 50},
        rows=200,
    ).model_dump(mode="json", by_alias=True, exclude_none=True)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(raw))
    result = synthesise_split(tmp_path / "spec.yaml", tmp_path / "out")
    syn = pd.read_parquet(result.synthetic)
    assert len(syn) == 200 and sum(result.rows.values()) == 200
    assert (syn["Kind"] == 1).sum() == result.rows["one"] and 35 <= result.rows["one"] <= 65  # ≈ 50 up to noise
    assert result.privacy["parts"]["one"]["rho"] == pytest.approx(5) and result.privacy["rho"] == pytest.approx(10)
    assert [g.title.split("'")[1] for g in result.graphs] == ["one", "two"]


def test_rows_follow_the_noisy_part_totals_and_add_up():
    assert _rows(1000, {"a": 250.4, "b": 749.6}) == {"a": 250, "b": 750}
    assert sum(_rows(7, {"a": 1.0, "b": 1.0, "c": 1.0}).values()) == 7
    assert _rows(None, {"a": 12.6, "b": -3.0}) == {"a": 13, "b": 0}


def test_decoding_derives_a_lookup_column_from_its_source():
    from sdgov.data.encoding import decode

    schema = Schema.model_validate(schema_dict())
    cells = {
        "Area": np.array([0, 2, 1]),
        "Age": np.array([0, 1, 2]),
        "Work": np.array([0, 1, 2]),
        "Kind": np.zeros(3, int),
    }
    assert decode(cells, schema)["Zone"].tolist() == ["north", "south", "north"]
