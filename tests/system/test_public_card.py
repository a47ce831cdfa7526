"""Issue 14: the public card publishes only what is public or differentially private.

One real release of the demo with both pre-registered audits (so the evidence holds every kind of confidential
figure: real record count, distances to the real tables, fitness figures, audit details, privacy evidence). Every
figure of the controller's evidence report is rendered the ways a template could print it, and none may appear in
the published card (HTML, Markdown, JSON) — unless it is also a public figure: a number of the published
agreement, privacy plan, ledger or model, or a card figure this test recomputes from the published ψ and synthetic
data. The same search must find those figures in the evidence report, so the test can fail.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from sdgov.registry.log import Registry
from tests.fixtures.figures import NUMBER, PREFIX, hex_windows, printed

REPO_ROOT = Path(__file__).resolve().parents[2]

NOT_FIGURES = {"seconds", "seed", "seeds", "settings", "generator", "policy", "K", "rows", "alpha", "canaries"} | {
    "name",
    "title",
    "created",
    "confidential",
}
"""Keys of the evidence that hold timings, pre-registered settings (public in the agreement) or labels (a check's
name, a section's title, the date, the names of the rows computed on the confidential data), not figures."""


def significant(token: str) -> int:
    """How many significant digits a printed number has (short numbers are too common to mean anything)."""
    mantissa = token.lower().split("e")[0].replace(",", "").lstrip("+-").replace(".", "").lstrip("0")
    return len(mantissa)


def renderings(x: float) -> set[str]:
    """The ways a template or an f-string prints ``x``."""
    if isinstance(x, bool) or not math.isfinite(x):
        return set()
    out = {repr(x), f"{x:.3g}", f"{x:.4g}", f"{x:.6g}", f"{x:.2f}", f"{x:.3f}", f"{x:.4f}"}
    if float(x).is_integer():
        out |= {str(int(x)), f"{int(x):,}"}
    return {s for s in out if significant(s) >= 3}


def figures(obj: Any, key: str = "", skip: frozenset[str] = frozenset()) -> set[str]:
    """Every number in a JSON value, as its renderings; numbers inside strings as they were printed. Values under
    the keys in ``skip`` are left out, and always hashes and SVG figures."""
    if key in skip or key.endswith("_svg") or key.endswith("sha256"):
        return set()
    if isinstance(obj, dict):
        return set().union(*(figures(v, k, skip) for k, v in obj.items())) if obj else set()
    if isinstance(obj, list):
        return set().union(*(figures(v, key, skip) for v in obj)) if obj else set()
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return renderings(obj)
    if isinstance(obj, str):
        return {t for t in NUMBER.findall(obj) if significant(t) >= 3}
    return set()


CHANCE_DIGITS = 4
"""The leak check reads figures of at least this many significant digits. Shorter ones recur by chance: a public,
noise-dependent figure of the card and a figure of the evidence were both 0.333 in one run and both 0.999 in
another, so a check on 3 digits fails a few runs in a hundred on a card that leaks nothing."""


def test_the_public_card_holds_no_figure_computed_on_the_confidential_data(released_with_audits):
    # the shared release: 3,000 real records, 2,500 synthetic rows, so the real count must stay unpublished
    result, root, spec = (released_with_audits[k] for k in ("result", "root", "spec"))
    assert yaml.safe_load(spec.read_text())["rows"] == 2500
    [run_dir] = (root / "runs").iterdir()
    evidence = json.loads((run_dir / "evidence" / "evidence.json").read_text())
    assert evidence["real_rows"] == 3000
    assert_card_is_public(Path(result.path), run_dir, spec.parent / "schema.yaml")
    assert Registry(root).verify() == []


def assert_card_is_public(released: Path, run_dir: Path, schema_file: Path) -> None:
    """No figure of the evidence report in the published card, except public ones; the evidence is not published."""
    from sdgov.budget.accounting import PrivacyPlan, epsilon_pld
    from sdgov.data.encoding import encode
    from sdgov.data.psi import MeasurementSet
    from sdgov.data.schema import load_schema
    from sdgov.engines.recordset import FrameRecords
    from sdgov.reporting.card import noisy_tvd

    evidence = json.loads((run_dir / "evidence" / "evidence.json").read_text())
    # what is public: the published artifacts, the schema's table sizes, and the card's own figures recomputed
    # from ψ and the synthetic data
    public: set[str] = set()
    for name in ("agreement", "privacy_plan", "privacy_statement", "model_info"):
        public |= figures(json.loads((released / "artifacts" / f"{name}.json").read_text()))
    card = json.loads((released / "card.json").read_text())
    mset = MeasurementSet.model_validate_json((released / "artifacts" / "measurements.json").read_text())
    plan = PrivacyPlan.model_validate_json((released / "artifacts" / "privacy_plan.json").read_text())
    schema = load_schema(schema_file)
    attrs = mset.attributes
    tables = [m.clique for m in mset.measurements] + [(a,) for a in attrs]
    tables += [(a, b) for i, a in enumerate(attrs) for b in attrs[i + 1 :]]
    for t in tables:
        public |= renderings(schema.cells(t))
    synthetic = encode(pd.read_parquet(released / "synthetic.parquet"), schema, columns=attrs)
    tvd = noisy_tvd(mset, FrameRecords(synthetic, schema))
    assert {(p.get("part"), tuple(p["attributes"])): p["tvd"] for p in card["phi"]} == tvd
    assert card["dataset"]["noisy_rows"] == round(mset.noisy_total())
    assert card["statement"]["release"]["pld"] == epsilon_pld(plan)
    for x in [*tvd.values(), card["dataset"]["noisy_rows"], card["synthetic"]["rows"]]:
        public |= renderings(x)

    confidential = figures(evidence, skip=frozenset(NOT_FIGURES)) - public
    real = evidence["real_rows"]
    # the real record count is confidential, and the search must find it, unless the card's noisy count happens to
    # round to it (a few runs in a hundred: the noise on the total is a few records), which makes it public
    real_is_public = str(real) in public
    assert real_is_public or (str(real) in confidential and f"{real:,}" in confidential)
    assert len(confidential) > 100, len(confidential)
    found_in_evidence = confidential & printed((run_dir / "evidence" / "evidence.html").read_text())
    assert len(found_in_evidence) > 50, "the search finds the figures where they are printed"
    telling = {t for t in confidential if significant(t) >= CHANCE_DIGITS}
    assert (real_is_public or str(real) in telling) and len(telling) > 50, len(telling)
    for name in ("card.html", "card.md", "card.json"):
        leaked = telling & printed((released / name).read_text())
        assert not leaked, f"{name} publishes figures computed on the confidential data: {sorted(leaked)[:20]}"

    # the evidence is the controller's: beside the run, never in the release
    files = json.loads((released / "manifest.json").read_text())["files"]
    assert not any("evidence" in f or "utility" in f or "audit" in f or "privacy_risk" in f for f in files)


# ------------------------------------------------------------------ issue 25: hashes, the count and paths

UNKNOWN = ("Economic Activity", "Occupation", "Health")
"""The target's attributes the adversary does not know (5 × 6 × 5 = 150 candidate completions); they know every
other record, the target's other attributes and how the file is laid out."""


def published(release: Path) -> dict[str, bytes]:
    """Every file of the release, by its name in the release: what anyone may read."""
    return {p.relative_to(release).as_posix(): p.read_bytes() for p in sorted(release.rglob("*")) if p.is_file()}


def ledger_fingerprint(root: Path) -> str:
    """The data's content fingerprint as the controller's ledger holds it (the log's spend event)."""
    [fp] = {json.loads(e.comment)["fingerprint"] for e in Registry(root).verified_events() if e.event == "budget_spent"}
    return fp


def test_no_published_file_holds_a_hash_of_the_data_its_record_count_or_a_machine_path(released_with_audits):
    import tempfile

    from sdgov.base.hashing import md5_file, sha256_file
    from sdgov.data.encoding import encode, read_csv_strict
    from sdgov.data.fingerprint import fingerprint
    from sdgov.data.schema import load_schema

    result, root, spec = (released_with_audits[k] for k in ("result", "root", "spec"))
    release, data = Path(result.path), spec.parent / "data.csv"
    [run_dir] = (root / "runs").iterdir()
    fp = fingerprint(
        encode(read_csv_strict(data), load_schema(spec.parent / "schema.yaml")),
        load_schema(spec.parent / "schema.yaml"),
    )
    assert fp == ledger_fingerprint(root)  # the test hashes the data as sdgov does
    # everything a function of the confidential records alone, unkeyed: the file's hashes, the content fingerprint,
    # the draw-once store's statistic keys (fingerprint × marginal × σ) and every controller-side file computed on
    # the data (its codes, the audits', the utility report, the evidence report)
    controller_files = [run_dir / "codes.parquet", *(run_dir / "evidence").iterdir()]
    controller_files += list(run_dir.glob("utility*")) + [
        run_dir / f"{n}.json" for n in ("audit", "decomposability", "privacy_risk")
    ]
    secret = {"data sha256": sha256_file(data), "data DVC md5": md5_file(data), "content fingerprint": fp}
    secret |= {f"statistic {p.stem[:8]}": p.stem for p in (root / "measurements").glob("*.json")}
    secret |= {f"sha256 of {p.relative_to(run_dir)}": sha256_file(p) for p in controller_files}
    assert len(secret) > 3 + 11 + 6
    files = published(release)
    wanted = {"card.json", "card.html", "card.md", "artifacts/privacy_statement.json", "artifacts/provenance.json"}
    assert wanted <= set(files)
    for name, blob in files.items():
        windows = hex_windows(blob)
        leaked = [what for what, h in secret.items() if h[:PREFIX] in windows]
        assert not leaked, f"{name} publishes {leaked}"

    # the true record count: in no published text, unless the card's noisy count happens to round to it
    real = json.loads((run_dir / "evidence" / "evidence.json").read_text())["real_rows"]
    assert real == len(read_csv_strict(data)) == 3000
    if json.loads(files["card.json"])["dataset"]["noisy_rows"] != real:
        for name, blob in files.items():
            if not name.endswith(".parquet"):
                assert not {str(real), f"{real:,}"} & printed(blob.decode()), f"{name} prints the record count"

    # no machine path: not the registry, the run, the inputs, the data, the code, a temporary folder or home
    paths = {root, root.resolve(), run_dir, spec.parent, data, REPO_ROOT, Path(tempfile.gettempdir()), Path.home()}
    for name, blob in files.items():
        text = blob.decode("utf-8", errors="replace")
        found = sorted(str(p) for p in paths if f"{p}{os.sep}" in text or f'{p}"' in text)
        assert not found, f"{name} publishes machine paths {found}"

    # nor the machine itself (issue 38 item 8): its kernel, libc and Python build, its host name
    import platform
    import socket

    machine = {platform.platform(), platform.release(), platform.version(), platform.python_build()[1]}
    machine |= {socket.gethostname(), "-".join(platform.libc_ver())}
    for name, blob in files.items():
        text = blob.decode("utf-8", errors="replace")
        shown = sorted(m for m in machine - {"", "-"} if len(m) > 3 and m in text)
        assert not shown, f"{name} publishes the machine: {shown}"


def test_the_known_all_but_one_attack_confirms_no_candidate(released_with_audits):
    """An adversary who knows every record but the target's three attributes recomputes, for each of the 150
    completions, the unkeyed content fingerprint, the file's sha256 and DVC md5 and the statistic keys, and looks
    for each in every published file: one found names the target's attributes. None may be."""
    import hashlib
    import itertools

    from sdgov.data.encoding import encode, read_csv_strict
    from sdgov.data.fingerprint import fingerprint
    from sdgov.data.psi import MeasurementSet
    from sdgov.data.schema import load_schema
    from sdgov.measurement.store import statistic_key

    result, root, spec = (released_with_audits[k] for k in ("result", "root", "spec"))
    release, data = Path(result.path), spec.parent / "data.csv"
    schema = load_schema(spec.parent / "schema.yaml")
    files = published(release)
    psi = MeasurementSet.model_validate_json(files["artifacts/measurements.json"])  # public: cliques and σ
    raw = data.read_bytes()
    head, target = raw[: raw.rstrip(b"\n").rindex(b"\n") + 1], raw[raw.rstrip(b"\n").rindex(b"\n") + 1 :]
    header = raw.split(b"\n", 1)[0].decode().split(",")
    known = encode(read_csv_strict(data), schema)  # every record; the target's last row is overwritten below
    candidates: dict[tuple[str, ...], set[str]] = {}
    for completion in itertools.product(*(schema.by_name[a].codes() for a in UNKNOWN)):
        fields = target.rstrip(b"\n").decode().split(",")
        for attr, code in zip(UNKNOWN, completion, strict=True):
            fields[header.index(attr)] = str(code)
        file = head + (",".join(fields) + "\n").encode()
        codes = known.copy()
        for attr, code in zip(UNKNOWN, completion, strict=True):
            codes.loc[codes.index[-1], attr] = schema.by_name[attr].codes().index(code)
        fp = fingerprint(codes, schema)
        values = {fp, hashlib.sha256(file).hexdigest(), hashlib.md5(file).hexdigest()}
        values |= {statistic_key(fp, m.clique, m.sigma) for m in psi.measurements}
        candidates[tuple(map(str, completion))] = values
    truth = tuple(target.rstrip(b"\n").decode().split(",")[header.index(a)] for a in UNKNOWN)
    assert len(candidates) == 150 and ledger_fingerprint(root) in candidates[truth]  # the attack is sound
    assert hashlib.sha256(raw).hexdigest() in candidates[truth]

    windows = set().union(*(hex_windows(blob) for blob in files.values()))
    confirmed = sorted(c for c, values in candidates.items() if any(v[:PREFIX] in windows for v in values))
    assert confirmed == [], f"the published files confirm the target's {UNKNOWN} = {confirmed}"


def test_the_controller_proves_which_data_a_release_came_from(released_with_audits, tmp_path, monkeypatch, capsys):
    """``sdgov registry prove``: the data file and the controller's secret open the card's commitments; a file that
    differs in one record does not; without the secret, one line and exit 2."""
    from sdgov.commands import main

    result, root, spec = (released_with_audits[k] for k in ("result", "root", "spec"))
    data, schema = spec.parent / "data.csv", spec.parent / "schema.yaml"
    argv = ["registry", "prove", result.release_id, "--root", str(root), "--json"]

    assert main([*argv, "--data", str(data), "--schema", str(schema)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["proved"] and out["matches"] == {"sha256": True, "dvc_md5": True, "fingerprint": True}

    crlf = tmp_path / "crlf.csv"  # the same records in another layout: only the content fingerprint still opens
    crlf.write_bytes(data.read_bytes().replace(b"\n", b"\r\n"))
    assert main([*argv, "--data", str(crlf), "--schema", str(schema)]) == 1
    assert json.loads(capsys.readouterr().out)["matches"] == {"sha256": False, "dvc_md5": False, "fingerprint": True}

    lines = data.read_bytes().splitlines(keepends=True)
    fields = lines[-1].decode().split(",")
    fields[-1] = "1\n" if fields[-1].strip() != "1" else "2\n"  # the last record's Health, changed
    other = tmp_path / "other.csv"
    other.write_bytes(b"".join(lines[:-1]) + ",".join(fields).encode())
    assert main([*argv, "--data", str(other), "--schema", str(schema)]) == 1
    assert json.loads(capsys.readouterr().out)["matches"] == {"sha256": False, "dvc_md5": False, "fingerprint": False}

    monkeypatch.setenv("SDGOV_COMMITMENT_SECRET", str(tmp_path / "elsewhere"))  # not this machine's secret
    assert main([*argv, "--data", str(data)]) == 2
    err = capsys.readouterr().err.strip()
    assert "commitment secret" in err and "Traceback" not in err and len(err.splitlines()) == 1, err
