"""``sdgov`` — the command line.

Every command prints one line of error (what, where, fix) and exits 2 on bad input; ``--json`` prints a
machine-readable result on stdout (logs go to stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")


def _emit(args: argparse.Namespace, payload: dict[str, Any], human: str) -> None:
    print(json.dumps(payload, indent=2) if args.json else human)


# ----------------------------------------------------------------------------------------- commands


def cmd_release(args: argparse.Namespace, api_starting: threading.Thread | None = None) -> int:
    from sdgov.approvals import agreement_signoffs
    from sdgov.inputs import check_inputs
    from sdgov.registry import Registry

    root = Registry(args.root).root.resolve()
    checked = check_inputs(args.spec, args.approvals, args.data, root=root)  # fail fast, before the orchestrator
    agreement_signoffs(checked.approvals, checked.loaded.agreement.sha256(), str(checked.approvals_path))
    if api_starting is not None:
        api_starting.join()  # the flow must find the server up, not half-started
    from sdgov.flows.refusals import quiet_refusals
    from sdgov.flows.release import release_flow

    quiet_refusals()

    result = release_flow(
        spec_path=str(Path(args.spec).resolve()),
        registry_root=str(root),
        approvals_path=str(Path(args.approvals).resolve()) if args.approvals else None,
        data_path=str(Path(args.data).resolve()) if args.data else None,
    )
    payload = {
        "release_id": result.release_id,
        "path": result.path,
        "card_html": result.card_html,
        "card_md": result.card_md,
        "card_json": result.card_json,
        "manifest_sha256": result.manifest_sha256,
        "agreement_sha256": result.agreement_sha256,
        "registry": str(root),
    }
    _emit(
        args,
        payload,
        f"released {result.release_id}\n  card: {result.card_html}\n  path: {result.path}\n"
        f"  verify: sdgov registry verify --root {root}",
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from sdgov.demo import inputs
    from sdgov.demo.data import write_demo_data
    from sdgov.registry import Registry
    from sdgov.schema import load_schema

    api_starting = _start_temporary_api()
    # the made-up confidential file lives beside the registry (never inside the installed package or a clone)
    data = Registry(args.root).root.resolve().parent / "build" / "demo" / "data.csv"
    if not data.exists():
        write_demo_data(load_schema(inputs() / "schema.yaml"), data)
    args.spec, args.approvals, args.data = str(inputs() / "spec.yaml"), None, str(data)
    return cmd_release(args, api_starting=api_starting)


def _start_temporary_api() -> threading.Thread | None:
    """With no Prefect API configured, a flow starts Prefect's temporary server when it begins (~12 s on a fresh
    PREFECT_HOME, mostly database migrations). The demo starts it in the background instead, so that it comes up
    while the demo data is written and the pre-flight checks run (the demo's inputs ship with the package and pass
    them). ``cmd_release`` joins the thread before the flow starts, so the flow finds the server running."""
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return None
    from prefect.server.api.server import SubprocessASGIServer

    thread = threading.Thread(target=SubprocessASGIServer().start, name="prefect-temporary-api", daemon=True)
    thread.start()
    return thread


def cmd_demo_data(args: argparse.Namespace) -> int:
    from sdgov.demo import inputs
    from sdgov.demo.data import write_demo_data
    from sdgov.schema import load_schema

    path = write_demo_data(load_schema(inputs() / "schema.yaml"), Path(args.out), rows=args.rows)
    _emit(args, {"path": str(path), "rows": args.rows}, f"wrote {args.rows} demo records to {path}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from sdgov.inputs import validated_data
    from sdgov.preflight import preflight
    from sdgov.spec import load_spec

    loaded = load_spec(args.spec)
    codes = validated_data(Path(args.data).resolve() if args.data else loaded.data_path, loaded.schema_).codes
    plan = preflight(loaded, len(codes))  # what a release would refuse before its first draw, validate refuses too
    payload = {
        "ok": True,
        "agreement_sha256": loaded.agreement.sha256(),
        "rows": len(codes),
        "marginals": [list(c) for c in loaded.agreement.cliques],
        "rho": plan.rho,
        "epsilon": plan.epsilon,
        "delta": plan.delta,
        "sigma": [m.sigma for m in plan.marginals],
    }
    _emit(
        args,
        payload,
        f"ok: agreement {payload['agreement_sha256']}, {len(codes)} rows, "
        f"{len(plan.marginals)} marginals, ρ={plan.rho}, ε={plan.epsilon}, δ={plan.delta}",
    )
    return 0


def cmd_registry(args: argparse.Namespace) -> int:
    from sdgov.registry import Registry

    reg = Registry(args.root)
    if args.action == "list":
        rels = reg.releases()
        _emit(
            args,
            {"releases": rels},
            "\n".join(f"{r['release_id']}  {r['time']}  agreement {r['agreement_sha256'][:12]}" for r in rels)
            or "no releases",
        )
        return 0
    if args.action == "show":
        if not args.release_id:
            raise SystemExit("sdgov registry show: give a RELEASE_ID (see 'sdgov registry list')")
        m = reg.manifest(args.release_id)
        _emit(args, m, json.dumps(m, indent=2))
        return 0
    problems = reg.verify()
    n_events = len(reg.events()) if not problems else None
    human = (
        f"ok: {len(reg.releases())} release(s), {n_events} log event(s), every hash matches"
        if not problems
        else "FAILED:\n" + "\n".join(f"  {p}" for p in problems)
    )
    _emit(args, {"ok": not problems, "problems": problems, "root": str(reg.root)}, human)
    return 0 if not problems else 1


def cmd_stage(args: argparse.Namespace) -> int:
    """The stages as plain commands, for ``dvc repro``: they call the very task functions the flow runs."""
    from sdgov.contracts import ArtifactRef, GenerateInput
    from sdgov.spec import load_spec

    loaded = load_spec(args.spec)
    schema_ref = ArtifactRef.of("schema", loaded.schema_file)
    if args.which == "measure":
        return _stage_measure(args, loaded)
    if args.which == "generate":
        from sdgov.tasks.generate import generate

        out = generate.fn(
            GenerateInput(
                measurements=ArtifactRef.of("measurements", args.measurements),
                schema_file=schema_ref,
                generator=loaded.agreement.generator,
                rows=loaded.agreement.rows,
                seed=loaded.agreement.seed,
                out_dir=str(Path(args.out).resolve()),
            )
        )
        _emit(
            args,
            {"synthetic": out.synthetic.path, "sha256": out.synthetic.sha256},
            f"wrote {out.rows} rows to {out.synthetic.path}",
        )
        return 0
    from sdgov.artifacts import read_synthetic
    from sdgov.hashing import write_json
    from sdgov.inputs import validated_data
    from sdgov.metrics import utility_summary

    agreement, schema = loaded.agreement, loaded.schema_
    summary = utility_summary(
        validated_data(loaded.data_path, schema).codes,
        read_synthetic(ArtifactRef.of("synthetic", args.synthetic), schema, agreement.attributes),
        schema,
        agreement.attributes,
        [tuple(c) for c in agreement.cliques],
    )
    write_json(args.out, summary.model_dump(mode="json"))
    ref = ArtifactRef.of("utility", args.out)
    _emit(args, {"utility": ref.path, "sha256": ref.sha256}, f"wrote {ref.path}")
    return 0


def _stage_measure(args: argparse.Namespace, loaded: Any) -> int:
    """Export ψ — the noisy marginals the governed flow drew for this agreement and data — from the registry.

    It never draws noise: drawing happens only in the release flow's measure stage, under the signed agreement
    and the budget ledger. A second copy of ψ under DVC is the same bytes, so it leaks nothing more.
    """
    from sdgov.atomic import atomic_write_bytes
    from sdgov.errors import RegistryError
    from sdgov.hashing import sha256_file
    from sdgov.measurement_store import logged_measurement, measurement_key
    from sdgov.registry import Registry

    registry = Registry(args.root)
    key = measurement_key(loaded.agreement.sha256(), sha256_file(loaded.data_path))
    if logged_measurement(registry, key) is None:
        raise RegistryError(
            f"no noisy marginals were drawn for this agreement and data in registry {registry.root}",
            str(loaded.spec_path),
            "run the governed release first ('sdgov release --spec ...' or "
            "'sdgov propose'): noise is drawn only there, once, under the budget ledger",
        )
    payload = registry.measurement_path(key).read_bytes()
    out = Path(args.out)
    if out.exists() and out.read_bytes() != payload:
        raise RegistryError(
            "a different measurement is already there",
            str(out),
            "move it away deliberately; noise for one agreement is drawn once",
        )
    atomic_write_bytes(out, payload)
    _emit(
        args,
        {"measurements": str(out), "measurement_key": key},
        f"exported the noisy marginals drawn for agreement {loaded.agreement.sha256()[:12]}… → {out}",
    )
    return 0


# ----------------------------------------------------------------------------------------- parser


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad flag is one ``sdgov: error:`` line and exit 2 like every other refusal (argparse's own
    usage block plus its error would be several lines, and a non-integer ``--K 2^40`` would read like a crash).
    Sub-commands inherit the class (argparse builds sub-parsers with the parent's class)."""

    def error(self, message: str) -> NoReturn:
        from sdgov.errors import SdgovError

        err = SdgovError(message, self.prog, f"see '{self.prog} --help'")
        self.exit(2, f"sdgov: error: {err.one_line()}\n")


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="sdgov", description="Governed, auditable synthetic-data releases.")
    sub = p.add_subparsers(dest="command", required=True)

    def add(name: str, fn: Callable[[argparse.Namespace], int], help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(fn=fn)
        sp.add_argument("--json", action="store_true", help="machine-readable output on stdout")
        return sp

    d = add("demo", cmd_demo, "run a whole release on the built-in demo data and print where the card is")
    d.add_argument("--root", help="registry root (default: $SDGOV_REGISTRY or ./registry)")

    r = add("release", cmd_release, "run the release flow for a spec")
    r.add_argument("--spec", required=True)
    r.add_argument("--approvals", help="standing-approval file (default: the spec's 'approvals')")
    r.add_argument("--data", help="override the spec's dataset path")
    r.add_argument("--root", help="registry root (default: $SDGOV_REGISTRY or ./registry)")

    v = add("validate", cmd_validate, "check a spec, its schema and its data; print the agreement hash and budget")
    v.add_argument("--spec", required=True)
    v.add_argument("--data", help="override the spec's dataset path")

    g = add("registry", cmd_registry, "list, show or verify releases and the event log")
    g.add_argument("action", choices=["list", "show", "verify"])
    g.add_argument("release_id", nargs="?")
    g.add_argument("--root", help="registry root (default: $SDGOV_REGISTRY or ./registry)")

    s = add(
        "stage",
        cmd_stage,
        "run one stage outside the flow (used by dvc.yaml); 'measure' exports the noisy "
        "marginals the release flow drew — it never draws noise",
    )
    s.add_argument("which", choices=["measure", "generate", "utility"])
    s.add_argument("--spec", required=True)
    s.add_argument("--measurements", help="generate: the noisy-marginal file")
    s.add_argument("--synthetic", help="utility: the synthetic Parquet file")
    s.add_argument("--out", required=True, help="measure: file; generate: directory; utility: file")
    s.add_argument(
        "--root", help="measure: the registry holding the flow's draw (default: $SDGOV_REGISTRY or ./registry)"
    )

    from sdgov.flows.cli_report import add_parser as add_report

    add_report(add)  # sdgov report utility --spec FILE --synthetic FILE [--out DIR] --json

    from sdgov.flows.cli_ops import add_parser as add_ops

    add_ops(add)  # sdgov server start | propose | runs | approve | approvers keygen | budget | trail | schedule

    dd = add("demo-data", cmd_demo_data, "write the demo's made-up confidential data")
    dd.add_argument("--out", required=True)
    dd.add_argument("--rows", type=int, default=20000)

    from sdgov.flows.cli_audit import add_audit_parser

    add_audit_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from sdgov.errors import InternalError, PreflightError, SdgovError

    try:
        return args.fn(args)
    except PreflightError as exc:  # every problem found before the first draw, one line each
        for problem in exc.problems:
            print(f"sdgov: error: {problem.one_line()}", file=sys.stderr)
        if getattr(args, "json", False):
            lines = [p.one_line() for p in exc.problems]
            print(json.dumps({"ok": False, "error": lines[0], "errors": lines, "type": "PreflightError"}))
        return 2
    except (SdgovError, InternalError) as exc:
        print(f"sdgov: error: {exc.one_line()}", file=sys.stderr)
        if getattr(args, "json", False):
            print(json.dumps({"ok": False, "error": exc.one_line(), "type": type(exc).__name__}))
        return 2 if isinstance(exc, SdgovError) else 1
    except OSError as exc:  # the file system refused a path the user gave (too long, a loop, a directory...)
        err = SdgovError(exc.strerror or type(exc).__name__, str(exc.filename or ""), "check the path")
        print(f"sdgov: error: {err.one_line()}", file=sys.stderr)
        if getattr(args, "json", False):
            print(json.dumps({"ok": False, "error": err.one_line(), "type": type(exc).__name__}))
        return 2


if __name__ == "__main__":
    sys.exit(main())
