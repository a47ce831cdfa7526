"""Principle 2: after measurement the generate stage cannot read the confidential data — by its contract and
in fact (every file it opens is watched with a Python audit hook)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import pytest
from pydantic import ValidationError

from sdgov.contracts import ArtifactRef, GenerateInput
from sdgov.generators.settings import GeneratorSpec

_opened: list[str] | None = None


def _hook(event: str, args: tuple) -> None:
    if _opened is not None and event == "open" and isinstance(args[0], (str, bytes, Path)):
        _opened.append(str(Path(args[0] if not isinstance(args[0], bytes) else args[0].decode()).resolve()))


sys.addaudithook(_hook)


def _watch(fn, *a, **kw) -> list[str]:
    global _opened
    _opened = []
    try:
        fn(*a, **kw)
        return list(_opened)
    finally:
        _opened = None


def test_generate_input_has_no_way_to_name_the_data():
    fields = set(GenerateInput.model_fields)
    # 'split' is the agreed split (parts' codes, Φ, generator settings): public, part of the agreement;
    # 'engine' is one of two names (where the sample's parts run), never a path
    assert fields == {"measurements", "schema_file", "generator", "rows", "seed", "out_dir", "split", "engine"}
    assert GenerateInput.model_fields["engine"].annotation == Literal["duckdb", "dask"]
    with pytest.raises(ValidationError):
        GenerateInput(
            measurements=ArtifactRef(name="m", path="x", sha256="0", bytes=0),
            schema_file=ArtifactRef(name="s", path="y", sha256="0", bytes=0),
            generator=GeneratorSpec(),
            rows=10,
            seed=1,
            out_dir="o",
            data="/secret.csv",
        )


def test_generate_stage_never_opens_the_raw_data(tmp_path, capsys):
    from sdgov.agreement.load import load_spec
    from sdgov.commands import main
    from sdgov.tasks.generate import generate
    from tests.conftest import draw_measurement, make_demo_inputs

    spec = make_demo_inputs(tmp_path / "in", rows=1000)
    raw = str((tmp_path / "in" / "data.csv").resolve())
    mpath = tmp_path / "m.json"
    draw_measurement(spec, tmp_path / "registry")
    assert (
        main(["stage", "measure", "--spec", str(spec), "--out", str(mpath), "--root", str(tmp_path / "registry")]) == 0
    )
    loaded = load_spec(spec)

    # control: the watch does see a read of the raw file when one happens
    assert raw in _watch(lambda: open(raw).read(10))  # noqa: SIM115 (the open itself is what is watched)

    inp = GenerateInput(
        measurements=ArtifactRef.of("measurements", mpath),
        schema_file=ArtifactRef.of("schema", loaded.schema_file),
        generator=loaded.agreement.generator,
        rows=500,
        seed=1,
        out_dir=str(tmp_path / "gen"),
    )
    opened = _watch(generate.fn, inp)
    assert (tmp_path / "gen" / "synthetic.parquet").is_file()
    assert str(mpath.resolve()) in opened, "the watch saw the measurement being read"
    assert raw not in opened
    assert not [p for p in opened if p.endswith("codes.parquet")], "nor the encoded data the agree stage wrote"
    assert not any(p.endswith(".csv") for p in opened)
