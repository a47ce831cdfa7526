"""Hostile inputs (issue 12, "fuzz suite"): ≥ 120 cases across data, schema, spec, approvals, policy and CLI flags.

Each case starts from the valid demo inputs of :mod:`tests.fixtures.inputs` (same fixtures), breaks
one thing in a hostile way — alias bombs, 100k-deep nesting, NaN/inf/1e300 numbers, 10^4-column headers,
control characters, look-alike Unicode, unreadable files, out-of-range flags — and runs the real CLI in-process.
Every case must give: exit 2, exactly one ``sdgov: error:`` line of at most 300 characters, no traceback, and
the files under the test's directory (registry included) byte-identical before and after. Each case runs under
a 10 s alarm (a hang or a blow-up fails the case; it is a limit, not a timing assertion). A handful of cases go
through the installed entry point in a subprocess with the same 10 s limit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sdgov.base.errors import MAX_LINE
from sdgov.commands import main
from tests.fixtures.inputs import Inputs, tree

LIMIT_S = 10
ALIAS_BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join(["*" + chr(97 + i)] * 9) + "]\n" for i in range(9)
)
DEEP_YAML = "x: " + "[" * 100_000 + "]" * 100_000 + "\n"
DEEP_BLOCK = "".join(" " * i + f"k{i}:\n" for i in range(200)) + " " * 200 + "v: 1\n"
DEEP_JSON = "{" + '"a": {' * 50_000 + "}" * 50_001
HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", '"><svg onload=alert(1)>', "{{7*7}}"]


# ----------------------------------------------------------------------------------------- helpers


def spec(fn: Callable[[dict[str, Any]], None]) -> Callable[[Inputs], None]:
    return lambda i: i.edit_yaml("spec.yaml", fn)


def schema(fn: Callable[[dict[str, Any]], None]) -> Callable[[Inputs], None]:
    return lambda i: i.edit_yaml("schema.yaml", fn)


def approvals(fn: Callable[[dict[str, Any]], None]) -> Callable[[Inputs], None]:
    return lambda i: i.edit_yaml("approvals.yaml", fn)


def privacy(**kv: Any) -> Callable[[Inputs], None]:
    def fn(s: dict[str, Any]) -> None:
        for k in ("rho", "epsilon", "sigma"):
            s["privacy"].pop(k, None)
        s["privacy"].update(kv)

    return spec(fn)


def raw(name: str, text: str | bytes) -> Callable[[Inputs], None]:
    return lambda i: i.write(name, text)


def spec_line(text: str) -> Callable[[Inputs], None]:
    """Append raw YAML to the spec (values PyYAML's dumper would quote, such as .nan or .inf)."""
    return lambda i: i.write("spec.yaml", i.spec.read_text(encoding="utf-8") + text)


def set_privacy_raw(body: str) -> Callable[[Inputs], None]:
    def fn(i: Inputs) -> None:
        doc = yaml.safe_load(i.spec.read_text(encoding="utf-8"))
        doc.pop("privacy")
        i.write("spec.yaml", yaml.safe_dump(doc, sort_keys=False, allow_unicode=True) + f"privacy: {body}\n")

    return fn


def column(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in doc["columns"] if c["name"] == name)


def cell(col: str, value: str, row: int = 5) -> Callable[[Inputs], None]:
    def fn(i: Inputs) -> None:
        lines = i.data.read_text(encoding="utf-8").splitlines()
        header = lines[0].split(",")
        cells = lines[row].split(",")
        cells[header.index(col)] = value
        lines[row] = ",".join(cells)
        i.write("data.csv", "\n".join(lines) + "\n")

    return fn


def csv_lines(fn: Callable[[list[str]], list[str]]) -> Callable[[Inputs], None]:
    def mutate(i: Inputs) -> None:
        lines = i.data.read_text(encoding="utf-8").splitlines()
        i.write("data.csv", "\n".join(fn(lines)) + "\n")

    return mutate


def with_income(bins: list[Any], values: str = "5", release_as: str | None = None) -> Callable[[Inputs], None]:
    """Add a numeric column 'Income' (schema bins given raw, data value ``values`` in every row)."""

    def fn(i: Inputs) -> None:
        text = i.schema.read_text(encoding="utf-8")
        rule = f", release_as: {release_as}" if release_as else ""
        i.write(
            "schema.yaml", text + f"  - {{name: Income, kind: numeric, bins: [{', '.join(map(str, bins))}]{rule}}}\n"
        )
        lines = i.data.read_text(encoding="utf-8").splitlines()
        i.write("data.csv", "\n".join([lines[0] + ",Income"] + [ln + f",{values}" for ln in lines[1:]]) + "\n")

    return fn


def both(*fns: Callable[[Inputs], None]) -> Callable[[Inputs], None]:
    def fn(i: Inputs) -> None:
        for f in fns:
            f(i)

    return fn


def sparse(name: str, size: int) -> Callable[[Inputs], None]:
    """A file of ``size`` bytes that takes no disk (a hole): for the size caps."""

    def fn(i: Inputs) -> None:
        with open(i.dir / name, "wb") as f:
            f.truncate(size)

    return fn


def symlink_loop(name: str) -> Callable[[Inputs], None]:
    def fn(i: Inputs) -> None:
        (i.dir / name).unlink(missing_ok=True)
        (i.dir / "loop-b").symlink_to(i.dir / name)
        (i.dir / name).symlink_to(i.dir / "loop-b")

    return fn


Argv = Callable[[Inputs], list[str]]


def release(i: Inputs) -> list[str]:
    return i.release_argv()


def validate(i: Inputs) -> list[str]:
    return ["validate", "--spec", str(i.spec)]


def cli(*args: str) -> Argv:
    """A command line; ``{spec}``, ``{dir}``, ``{root}`` are filled in."""
    fill = {"{spec}": "spec", "{dir}": "dir", "{root}": "root"}

    def argv(i: Inputs) -> list[str]:
        out = []
        for a in args:
            for key, attr in fill.items():
                a = a.replace(key, str(getattr(i, attr)))
            out.append(a)
        return out

    return argv


Case = tuple[str, Callable[[Inputs], None], Argv]
noop: Callable[[Inputs], None] = lambda i: None


# ----------------------------------------------------------------------------------------- the cases

DATA: list[Case] = [
    *[(f"data-hostile-category-{k}", cell("Region", v), release) for k, v in enumerate(HOSTILE)],
    ("data-hostile-integer-code", cell("Sex", "<script>alert(1)</script>"), release),
    ("data-10k-char-value", cell("Region", "x" * 10_000), release),
    ("data-200k-char-value", cell("Region", "y" * 200_000), release),
    ("data-rtl-override", cell("Region", "\u202eN"), release),
    ("data-zero-width-code", cell("Region", "N\u200b"), release),
    ("data-fullwidth-digit", cell("Sex", "１"), release),
    ("data-arabic-digit", cell("Sex", "٣"), release),
    ("data-nan-text", cell("Sex", "NaN"), release),
    ("data-inf-text", cell("Sex", "inf"), release),
    ("data-huge-integer", cell("Sex", "9" * 400), release),
    ("data-hex-integer", cell("Sex", "0x1"), release),
    ("data-float-for-int", cell("Sex", "1e0"), release),
    ("data-emoji", cell("Region", "🙂"), release),
    ("data-whitespace-only", cell("Region", "   "), release),
    ("data-quoted-newline", cell("Region", '"N\nS"'), release),
    (
        "data-header-20k-columns",
        csv_lines(lambda ls: [ls[0] + "," + ",".join(f"c{k}" for k in range(20_000))] + ls[1:]),
        release,
    ),
    ("data-header-5mib", csv_lines(lambda ls: [ls[0] + "," + "h" * (5 * 2**20)] + ls[1:]), release),
    (
        "data-header-hostile-extra",
        csv_lines(lambda ls: [ls[0] + ",<script>x</script>"] + [r + ",1" for r in ls[1:]]),
        release,
    ),
    (
        "data-header-nfc-duplicate",
        csv_lines(lambda ls: [ls[0] + ",Région,Re\u0301gion"] + [r + ",1,2" for r in ls[1:]]),
        release,
    ),
    ("data-header-empty-names", csv_lines(lambda ls: [",,,"] + ls[1:]), release),
    ("data-png-bytes", raw("data.csv", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4), release),
    ("data-utf16", lambda i: i.write("data.csv", i.data.read_text(encoding="utf-8").encode("utf-16")), release),
    ("data-only-bom", raw("data.csv", b"\xef\xbb\xbf"), release),
    ("data-nul-bytes", raw("data.csv", b"\x00" * 1000), release),
    ("data-path-is-directory", spec(lambda s: s["dataset"].update({"path": "."})), release),
    (
        "data-path-symlink-loop",
        both(symlink_loop("loop-a"), spec(lambda s: s["dataset"].update({"path": "loop-a"}))),
        release,
    ),
    ("data-path-nul", spec(lambda s: s["dataset"].update({"path": "data\x00.csv"})), release),
    ("data-path-255-chars", spec(lambda s: s["dataset"].update({"path": "d" * 300 + ".csv"})), release),
    ("data-path-dev-null", spec(lambda s: s["dataset"].update({"path": "/dev/null"})), release),
    ("data-ragged-100k", csv_lines(lambda ls: ls[:5] + [ls[5] + ",1" * 100_000] + ls[6:]), release),
    ("data-numeric-top-edge", with_income([0, 10], "10"), release),
    ("data-numeric-nan", with_income([0, 10], "nan"), release),
    ("data-numeric-inf-open-bin", with_income([0, ".inf"], "inf"), release),
    ("data-numeric-1e300", with_income([0, 10], "1e300"), release),
    ("data-numeric-text", with_income([0, 10], "<script>"), release),
    ("data-numeric-below", with_income([0, 10], "-1"), release),
]

SCHEMA: list[Case] = [
    ("schema-alias-bomb", raw("schema.yaml", ALIAS_BOMB), release),
    ("schema-deep-flow", raw("schema.yaml", DEEP_YAML), release),
    ("schema-deep-block", raw("schema.yaml", DEEP_BLOCK), release),
    ("schema-deep-json", raw("schema.yaml", DEEP_JSON), release),
    ("schema-over-64mib", sparse("schema.yaml", 65 * 2**20), release),
    ("schema-python-tag", raw("schema.yaml", "!!python/object/apply:os.system ['true']\n"), release),
    ("schema-binary-tag", raw("schema.yaml", "name: !!binary aGVsbG8=\ncolumns: []\n"), release),
    ("schema-png", raw("schema.yaml", b"\x89PNG\r\n\x1a\n\x00\x00"), release),
    ("schema-utf16", lambda i: i.write("schema.yaml", i.schema.read_text(encoding="utf-8").encode("utf-16")), release),
    ("schema-scalar", raw("schema.yaml", "42\n"), release),
    ("schema-bins-nan", with_income(["0", ".nan", "10"]), release),
    ("schema-bins-inf-middle", with_income(["0", ".inf", "10"]), release),
    ("schema-bins-minus-inf-bottom", with_income(["-.inf", "0", "10"]), release),
    ("schema-bins-1e300", with_income(["0", "1e300"]), release),
    ("schema-bins-text", with_income(["0", "ten"]), release),
    ("schema-bins-equal", with_income(["0", "0"]), release),
    ("schema-bins-single", with_income(["0"]), release),
    ("schema-release-as-unknown", with_income(["0", "10"], release_as="random"), release),
    (
        "schema-release-as-on-categorical",
        schema(lambda d: column(d, "Region").update({"release_as": "midpoint"})),
        release,
    ),
    (
        "schema-codes-trailing-space",
        schema(lambda d: column(d, "Region")["categories"].append({"code": "N ", "label": "N"})),
        release,
    ),
    (
        "schema-codes-nfd-duplicate",
        schema(
            lambda d: column(d, "Region")["categories"].extend(
                [{"code": "Ré", "label": "a"}, {"code": "Re\u0301", "label": "b"}]
            )
        ),
        release,
    ),
    (
        "schema-code-leading-space",
        schema(lambda d: column(d, "Region")["categories"].append({"code": " Q", "label": "Q"})),
        release,
    ),
    (
        "schema-code-list",
        schema(lambda d: column(d, "Region")["categories"].append({"code": ["N"], "label": "x"})),
        release,
    ),
    (
        "schema-code-null",
        schema(lambda d: column(d, "Region")["categories"].append({"code": None, "label": "x"})),
        release,
    ),
    (
        "schema-code-float-nan",
        lambda i: i.write(
            "schema.yaml",
            i.schema.read_text(encoding="utf-8").replace('{code: "N", label: "North"}', "{code: .nan, label: North}"),
        ),
        release,
    ),
    (
        "schema-10001-columns",
        schema(
            lambda d: d["columns"].extend(
                {"name": f"c{k}", "categories": [{"code": 1, "label": "a"}]} for k in range(10_001)
            )
        ),
        release,
    ),
    (
        "schema-column-name-nfc-duplicate",
        schema(
            lambda d: d["columns"].extend(
                [
                    {"name": "Région", "categories": [{"code": 1, "label": "a"}]},
                    {"name": "Re\u0301gion", "categories": [{"code": 1, "label": "a"}]},
                ]
            )
        ),
        release,
    ),
    (
        "schema-long-column-name",
        schema(lambda d: d["columns"].append({"name": "z" * 5000, "categories": [{"code": 1, "label": "a"}]})),
        release,
    ),
    (
        "schema-hostile-column-missing-in-data",
        schema(lambda d: d["columns"].append({"name": HOSTILE[0], "categories": [{"code": 1, "label": HOSTILE[1]}]})),
        release,
    ),
    ("schema-nullable-text", schema(lambda d: column(d, "Region").update({"nullable": "maybe"})), release),
    ("schema-name-empty", schema(lambda d: d.update({"name": ""})), release),
    ("schema-columns-mapping", schema(lambda d: d.update({"columns": {"a": 1}})), release),
    (
        "schema-bin-labels-duplicate",
        lambda i: (
            with_income([0, 5, 10])(i)
            or i.write(
                "schema.yaml",
                i.schema.read_text(encoding="utf-8").replace(
                    "bins: [0, 5, 10]", "bins: [0, 5, 10], bin_labels: [low, low]"
                ),
            )
        ),
        release,
    ),
    ("schema-symlink-loop", both(symlink_loop("loop-a"), spec(lambda s: s.update({"schema": "loop-a"}))), release),
]

SPEC: list[Case] = [
    ("spec-name-240-chars", spec(lambda s: s.update({"name": "n" * 240})), release),
    ("spec-name-traversal", spec(lambda s: s.update({"name": "../../etc"})), release),
    ("spec-name-hostile", spec(lambda s: s.update({"name": HOSTILE[0]})), release),
    ("spec-sigma-nan", set_privacy_raw("{sigma: .nan}"), release),
    ("spec-sigma-inf", set_privacy_raw("{sigma: .inf}"), release),
    ("spec-sigma-1e300", privacy(sigma=1e300), release),
    ("spec-sigma-1e-300", privacy(sigma=1e-300), release),
    ("spec-sigma-0.1", privacy(sigma=0.1), release),
    ("spec-sigma-1e10", privacy(sigma=1e10), release),
    ("spec-sigma-negative", privacy(sigma=-1), release),
    ("spec-sigma-text", privacy(sigma="ten"), release),
    ("spec-rho-inf", set_privacy_raw("{rho: .inf}"), release),
    ("spec-rho-1e300", privacy(rho=1e300), release),
    ("spec-rho-1e-300", privacy(rho=1e-300), release),
    ("spec-epsilon-nan", set_privacy_raw("{epsilon: .nan}"), release),
    ("spec-epsilon-1e-300", privacy(epsilon=1e-300), release),
    ("spec-epsilon-1e300", privacy(epsilon=1e300), release),
    ("spec-delta-0.999999", privacy(epsilon=1.0, delta=0.999999), release),
    ("spec-delta-above-1-over-n", privacy(epsilon=1.0, delta=0.01), release),
    ("spec-delta-nan", set_privacy_raw("{epsilon: 1.0, delta: .nan}"), release),
    ("spec-delta-one", privacy(epsilon=1.0, delta=1), release),
    ("spec-weights-1e30", spec(lambda s: s["privacy"].update({"weights": {"Region,Health,Age": 1e30}})), release),
    (
        "spec-weights-nan",
        lambda i: i.write(
            "spec.yaml",
            i.spec.read_text(encoding="utf-8").replace(
                "privacy:\n", "privacy:\n  weights: {'Region,Health,Age': .nan}\n", 1
            ),
        ),
        release,
    ),
    ("spec-weights-zero", spec(lambda s: s["privacy"].update({"weights": {"Region,Health,Age": 0}})), release),
    ("spec-sigma-floor-inf", set_privacy_raw("{epsilon: 1.0, sigma_floor: .inf}"), release),
    ("spec-rows-1e12", spec(lambda s: s.update({"rows": 10**12})), release),
    ("spec-rows-negative", spec(lambda s: s.update({"rows": -1})), release),
    ("spec-rows-float", spec(lambda s: s.update({"rows": 1.5})), release),
    ("spec-seed-2-70", spec(lambda s: s.update({"seed": 2**70})), release),
    ("spec-seed-text", spec(lambda s: s.update({"seed": "NO"})), release),
    ("spec-iterations-1e12", spec(lambda s: s["generator"].update({"iterations": 10**12})), release),
    ("spec-generator-hostile", spec(lambda s: s["generator"].update({"name": HOSTILE[1]})), release),
    ("spec-phi-20k-marginals", spec(lambda s: s["phi"].update({"marginals": [["Region"]] * 20_001})), release),
    ("spec-kway-k-zero", spec(lambda s: s["phi"]["all_kway"][0].update({"k": 0})), release),
    ("spec-kway-k-huge", spec(lambda s: s["phi"]["all_kway"][0].update({"k": 2**40})), release),
    ("spec-attribute-hostile", spec(lambda s: s["phi"]["marginals"].append([HOSTILE[2]])), release),
    ("spec-audit-json-dumps", spec(lambda s: s.update({"audit": {"generator": "json:dumps", "K": 7}})), release),
    ("spec-audit-os-getcwd", spec(lambda s: s.update({"audit": {"generator": "os:getcwd", "K": 7}})), release),
    (
        "spec-audit-missing-module",
        spec(lambda s: s.update({"audit": {"generator": "no_such_mod:gen", "K": 7}})),
        release,
    ),
    (
        "spec-audit-bogus-params",
        spec(lambda s: s.update({"audit": {"generator": "honest_pgm", "generator_params": {"bogus": 1}, "K": 7}})),
        release,
    ),
    ("spec-audit-K-2-40", spec(lambda s: s.update({"audit": {"K": 2**40}})), release),
    ("spec-audit-K-one", spec(lambda s: s.update({"audit": {"K": 1}})), release),
    ("spec-audit-alpha-nan", spec_line("audit: {alpha: .nan}\n"), release),
    (
        "spec-audit-control-missing",
        spec(lambda s: s.update({"audit": {"positive_control": "nope:x", "K": 7}})),
        release,
    ),
    (
        "spec-privacy-risk-generator-missing",
        # settings these ROWS can feed, so the missing generator is the one problem
        spec(lambda s: s.update({"privacy_risk": {"generator": "nope.mod:gen", "settings": {"train_rows": 50}}})),
        release,
    ),
    ("spec-dataset-name-240", spec(lambda s: s["dataset"].update({"name": "d" * 240})), release),
    ("spec-dataset-name-control", spec(lambda s: s["dataset"].update({"name": "toy\x07land"})), release),
    ("spec-schema-is-directory", spec(lambda s: s.update({"schema": "."})), release),
    ("spec-schema-is-spec", spec(lambda s: s.update({"schema": "spec.yaml"})), release),
    ("spec-schema-nul", spec(lambda s: s.update({"schema": "schema\x00.yaml"})), release),
    ("spec-alias-bomb", raw("spec.yaml", ALIAS_BOMB), release),
    ("spec-deep", raw("spec.yaml", DEEP_YAML), release),
    ("spec-over-64mib", sparse("spec.yaml", 65 * 2**20), release),
    (
        "spec-yes-as-name",
        lambda i: i.write(
            "spec.yaml", i.spec.read_text(encoding="utf-8").replace("name: demo\n", "name: yes\nname2: on\n", 1)
        ),
        release,
    ),
    ("spec-tasks-bogus", spec(lambda s: s.update({"tasks": [{"bogus": True}]})), release),
    ("spec-validate-sigma-0.1", privacy(sigma=0.1), validate),
    ("spec-validate-delta", privacy(epsilon=1.0, delta=0.5), validate),
    ("spec-validate-epsilon-tiny", privacy(epsilon=1e-300), validate),
]

APPROVALS: list[Case] = [
    ("approvals-alias-bomb", raw("approvals.yaml", ALIAS_BOMB), release),
    ("approvals-deep", raw("approvals.yaml", DEEP_YAML), release),
    ("approvals-binary", raw("approvals.yaml", b"\xff\xfe\x00\x01"), release),
    (
        "approvals-hostile-same-person",
        approvals(lambda a: [a[k].update({"name": HOSTILE[0]}) for k in ("proposer", "agreement_approver")]),
        release,
    ),
    ("approvals-unknown-role", approvals(lambda a: a["release_approver"].update({"role": "<script>"})), release),
    ("approvals-name-empty", approvals(lambda a: a["proposer"].update({"name": ""})), release),
    ("approvals-extra-key", approvals(lambda a: a.update({"<img src=x onerror=alert(1)>": 1})), release),
    ("approvals-list", raw("approvals.yaml", "- a\n- b\n"), release),
    (
        "approvals-symlink-loop",
        both(symlink_loop("loop-a"), spec(lambda s: s.update({"approvals": "loop-a"}))),
        release,
    ),
    ("approvals-missing", spec(lambda s: s.update({"approvals": "nope.yaml"})), release),
    (
        "approvals-override-directory",
        noop,
        cli("release", "--spec", "{spec}", "--root", "{root}", "--approvals", "{dir}"),
    ),
]


def budget_policy(text: str | bytes) -> Callable[[Inputs], None]:
    """A registry root holding only a (hostile) controller policy.yaml, read by ``sdgov budget``."""

    def fn(i: Inputs) -> None:
        i.root.mkdir()
        p = i.root / "policy.yaml"
        p.write_bytes(text) if isinstance(text, bytes) else p.write_text(text, encoding="utf-8")

    return fn


def privacy_policy(text: str) -> Callable[[Inputs], None]:
    return lambda i: i.write("policy.yaml", text)


BUDGET = cli("budget", "--root", "{root}")
RISK = cli("audit", "privacy", "--spec", "{spec}", "--policy", "{dir}/policy.yaml")

POLICY: list[Case] = [
    ("policy-alias-bomb", budget_policy(ALIAS_BOMB), BUDGET),
    ("policy-deep", budget_policy(DEEP_YAML), BUDGET),
    ("policy-rho-nan", budget_policy("defaults: {lifetime_rho: .nan}\n"), BUDGET),
    ("policy-rho-negative", budget_policy("datasets: {toyland_census: {lifetime_rho: -1}}\n"), BUDGET),
    ("policy-default-text", budget_policy("defaults: {lifetime_rho: lots}\n"), BUDGET),
    ("policy-datasets-list", budget_policy("datasets: [a, b]\n"), BUDGET),
    ("policy-scalar", budget_policy("NO\n"), BUDGET),
    ("policy-binary", budget_policy(b"\x89PNG\x00\x00"), BUDGET),
    ("policy-over-64mib", lambda i: (i.root.mkdir(), sparse("../registry/policy.yaml", 65 * 2**20)(i)), BUDGET),
    ("privacy-policy-alias-bomb", privacy_policy(ALIAS_BOMB), RISK),
    ("privacy-policy-deep", privacy_policy(DEEP_YAML), RISK),
    ("privacy-policy-scalar", privacy_policy("yes\n"), RISK),
]


def root_file(i: Inputs) -> None:
    i.root.write_text("not a registry\n", encoding="utf-8")


def root_loop(i: Inputs) -> None:
    (i.dir / "loop-b").symlink_to(i.root)
    i.root.symlink_to(i.dir / "loop-b")


def corrupt_log(i: Inputs) -> None:
    i.root.mkdir()
    (i.root / "log.jsonl").write_text('{"seq": 0, "event": <script>\n', encoding="utf-8")


def junk_key(i: Inputs) -> None:
    i.write("key.pem", "-----BEGIN PRIVATE KEY-----\nnot base64 <script>\n-----END PRIVATE KEY-----\n")


GEN = "honest_ipf"
FLAGS: list[Case] = [
    ("flag-K-2-caret-40", noop, cli("audit", "decomposability", "--spec", "{spec}", "--generator", GEN, "--K", "2^40")),
    ("flag-K-2-40", noop, cli("audit", "decomposability", "--spec", "{spec}", "--generator", GEN, "--K", str(2**40))),
    ("flag-K-one", noop, cli("audit", "decomposability", "--spec", "{spec}", "--generator", GEN, "--K", "1")),
    (
        "flag-seed-negative",
        noop,
        cli("audit", "decomposability", "--spec", "{spec}", "--generator", GEN, "--seed", "-1"),
    ),
    ("flag-rows-zero", noop, cli("audit", "decomposability", "--spec", "{spec}", "--generator", GEN, "--rows", "0")),
    (
        "flag-rows-1e12",
        noop,
        cli("audit", "decomposability", "--spec", "{spec}", "--generator", GEN, "--rows", str(10**12)),
    ),
    (
        "flag-params-not-json",
        noop,
        cli("audit", "decomposability", "--spec", "{spec}", "--generator", GEN, "--params", "{"),
    ),
    (
        "flag-params-list",
        noop,
        cli("audit", "decomposability", "--spec", "{spec}", "--generator", GEN, "--params", "[1]"),
    ),
    ("flag-generator-hostile", noop, cli("audit", "decomposability", "--spec", "{spec}", "--generator", HOSTILE[0])),
    ("flag-release-no-spec", noop, cli("release", "--root", "{root}")),
    ("flag-release-spec-directory", noop, cli("release", "--spec", "{dir}", "--root", "{root}")),
    (
        "flag-release-data-missing",
        noop,
        cli("release", "--spec", "{spec}", "--root", "{root}", "--data", "{dir}/none.csv"),
    ),
    ("flag-root-is-file", root_file, release),
    ("flag-root-symlink-loop", root_loop, release),
    ("flag-list-root-file", root_file, cli("registry", "list", "--root", "{root}")),
    ("flag-budget-root-loop", root_loop, cli("budget", "--root", "{root}")),
    ("flag-list-corrupt-log", corrupt_log, cli("registry", "list", "--root", "{root}")),
    ("flag-budget-corrupt-log", corrupt_log, cli("budget", "--root", "{root}")),
    ("flag-release-corrupt-log", corrupt_log, release),
    ("flag-show-hostile-id", noop, cli("registry", "show", HOSTILE[0], "--root", "{root}")),
    ("flag-registry-bad-action", noop, cli("registry", "destroy")),
    ("flag-unknown-command", noop, cli("frobnicate")),
    ("flag-demo-data-rows-text", noop, cli("demo-data", "--out", "{dir}/x.csv", "--rows", "many")),
    ("flag-approve-key-missing", noop, cli("approve", "x", "--as", "Carl Controller", "--key", "{dir}/none.pem")),
    ("flag-approve-key-junk", junk_key, cli("approve", "x", "--as", "Carl Controller", "--key", "{dir}/key.pem")),
    ("flag-validate-spec-missing", noop, cli("validate", "--spec", "{dir}/none.yaml")),
    ("flag-validate-data-directory", noop, cli("validate", "--spec", "{spec}", "--data", "{dir}")),
    ("flag-stage-bad-which", noop, cli("stage", "sample", "--spec", "{spec}", "--out", "{dir}/o")),
]

CASES = DATA + SCHEMA + SPEC + APPROVALS + POLICY + FLAGS


# ----------------------------------------------------------------------------------------- the checks


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory, demo_csv: str) -> None:
    """Validate the untouched inputs once, outside any alarm: the first generator dry run in a process compiles
    JAX's kernels (seconds, once). It is also the control: the inputs every case breaks are valid."""
    from tests.fixtures.inputs import DEMO, ROWS

    d = tmp_path_factory.mktemp("warm")
    for name in ("schema.yaml", "approvals.yaml"):
        (d / name).write_text((DEMO / name).read_text(encoding="utf-8"), encoding="utf-8")
    doc = yaml.safe_load((DEMO / "spec.yaml").read_text(encoding="utf-8"))
    doc.update({"schema": "schema.yaml", "approvals": "approvals.yaml", "rows": ROWS - 30})  # not N
    doc["dataset"]["path"] = "data.csv"
    doc["generator"]["iterations"] = 50
    doc.pop("privacy_risk", None)  # as the cases' inputs: its audit draws on more records than these ROWS
    (d / "spec.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    (d / "data.csv").write_text(demo_csv, encoding="utf-8")
    assert main(["validate", "--spec", str(d / "spec.yaml")]) == 0


@pytest.fixture
def alarm(warm: None) -> Iterator[None]:
    """Fail a case that runs past :data:`LIMIT_S` (a hang or a blow-up), instead of hanging the suite."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"the case ran past {LIMIT_S} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(LIMIT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def assert_one_line(rc: int, err: str) -> str:
    assert rc == 2, f"exit code {rc}, stderr: {err[:2000]!r}"
    assert "Traceback" not in err, err[:3000]
    lines = err.splitlines()
    assert len(lines) == 1, f"expected exactly one line, got {len(lines)}: {err[:2000]!r}"
    assert lines[0].startswith("sdgov: error: "), lines[0]
    assert len(lines[0]) <= MAX_LINE, f"{len(lines[0])} characters: {lines[0][:400]}"
    return lines[0]


def test_at_least_120_hostile_cases() -> None:
    assert len(CASES) >= 120, len(CASES)
    assert len({c[0] for c in CASES}) == len(CASES), "case ids must be unique"
    for group in (DATA, SCHEMA, SPEC, APPROVALS, POLICY, FLAGS):
        assert len(group) >= 8


@pytest.mark.parametrize("case_id, mutate, argv", [pytest.param(*c, id=c[0]) for c in CASES])
def test_hostile_input_is_one_line(
    case_id: str,
    mutate: Callable[[Inputs], None],
    argv: Argv,
    inputs: Inputs,
    no_flow: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    alarm: None,
) -> None:
    mutate(inputs)
    before = tree(tmp_path)
    capsys.readouterr()
    try:
        rc = main(argv(inputs))
    except SystemExit as exc:  # argparse refusals exit from inside main()
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert_one_line(rc, err)
    assert tree(tmp_path) == before, "files were written or changed for a refused command"


ENTRY_POINT = [
    "data-header-20k-columns",
    "schema-alias-bomb",
    "spec-deep",
    "spec-rows-1e12",
    "flag-K-2-caret-40",
    "flag-list-corrupt-log",
    "flag-root-symlink-loop",
]


@pytest.mark.parametrize("case_id", ENTRY_POINT)
def test_hostile_input_through_the_entry_point(case_id: str, inputs: Inputs, tmp_path: Path) -> None:
    """The same refusals through the installed ``sdgov`` command, each under a 10 s subprocess timeout."""
    _, mutate, argv = next(c for c in CASES if c[0] == case_id)
    mutate(inputs)
    before = tree(tmp_path)
    sdgov = Path(sys.executable).with_name("sdgov")
    env = {k: v for k, v in os.environ.items() if k != "SDGOV_REGISTRY"}
    proc = subprocess.run(
        [str(sdgov), *argv(inputs)], capture_output=True, text=True, timeout=LIMIT_S, cwd=tmp_path, env=env
    )
    assert_one_line(proc.returncode, proc.stderr)
    assert tree(tmp_path) == before
