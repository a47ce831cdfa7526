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
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from sdgov.registry.log import Registry

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")


def _emit(args: argparse.Namespace, payload: dict[str, Any], human: str) -> None:
    print(json.dumps(payload, indent=2) if args.json else human)


# ----------------------------------------------------------------------------------------- commands


def cmd_release(args: argparse.Namespace, api_starting: threading.Thread | None = None) -> int:
    from sdgov.governance.controller import check_controller_files
    from sdgov.governance.policy import preflight
    from sdgov.governance.standing import agreement_signoffs
    from sdgov.intake.inputs import check_inputs
    from sdgov.registry.log import Registry

    root = Registry(args.root).root.resolve()
    check_controller_files(Registry(root))  # the controller's files as last signed, or no release
    checked = check_inputs(args.spec, args.approvals, args.data, root=root)  # fail fast, before the orchestrator
    ag, data = checked.loaded.agreement, checked.data
    agreement_signoffs(checked.approvals, ag.sha256(), str(checked.approvals_path), Registry(root))
    preflight(root, ag, data.fingerprint, ag.dataset_name, data.rows)  # the controller's policy allows it
    if api_starting is not None:
        api_starting.join()  # the flow must find the server up, not half-started
    else:
        from sdgov.flows.temporary_server import install

        install()  # a temporary server the flow starts dies with this process, even on kill -9
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
    from sdgov.agreement.load import load_spec
    from sdgov.data.schema import load_schema
    from sdgov.demo import inputs
    from sdgov.demo.data import write_demo_data
    from sdgov.demo.people import signed_demo_approval
    from sdgov.governance.controller import init
    from sdgov.registry.log import Registry

    api_starting = _start_temporary_api()
    init(Registry(args.root), controller="Carl Controller")  # the demo's registry: the default policy, adopted
    # the made-up confidential file lives beside the registry (never inside the installed package or a clone)
    data = Registry(args.root).root.resolve().parent / "build" / "demo" / "data.csv"
    if not data.exists():
        write_demo_data(load_schema(inputs() / "schema.yaml"), data)
    spec = inputs() / "spec.yaml"
    # the demo people sign a standing approval with their (demo) keys, as a real registry's people do
    approvals = signed_demo_approval(
        Registry(args.root), inputs() / "approvals.yaml", load_spec(spec).agreement.sha256(), data.parent
    )
    args.spec, args.approvals, args.data = str(spec), str(approvals), str(data)
    return cmd_release(args, api_starting=api_starting)


def _start_temporary_api() -> threading.Thread | None:
    """With no Prefect API configured, a flow starts Prefect's temporary server when it begins (~12 s on a fresh
    PREFECT_HOME, mostly database migrations). The demo starts it in the background instead, so that it comes up
    while the demo data is written and the pre-flight checks run (the demo's inputs ship with the package and pass
    them). ``cmd_release`` joins the thread before the flow starts, so the flow finds the server running."""
    from sdgov.flows.temporary_server import install

    server = install()  # stopped when this process dies, however it dies (flows/temporary_server.py)
    if server is None:
        return None
    thread = threading.Thread(target=server.start, name="prefect-temporary-api", daemon=True)
    thread.start()
    return thread


def cmd_init(args: argparse.Namespace) -> int:
    """Write the controller's default policy into a registry (kept as it is when there is one already)."""
    from sdgov.governance.controller import init
    from sdgov.registry.log import Registry

    reg = Registry(args.root)
    path, written, adopted = init(reg, controller=args.controller)
    human = (
        f"wrote the default controller policy: {path}\n  review it (lifetime ρ, max ε per release, σ floor, "
        "generators, rows) before the first release"
        if written
        else f"kept the existing controller policy: {path}"
    ) + (
        "\n  adopted in the log (first policy of this registry); later changes need a controller's signed "
        "'sdgov approvers commit'"
        if adopted
        else ""
    )
    _emit(args, {"policy": str(path), "written": written, "adopted": adopted, "registry": str(reg.root)}, human)
    return 0


def cmd_demo_data(args: argparse.Namespace) -> int:
    from sdgov.data.schema import load_schema
    from sdgov.demo import inputs
    from sdgov.demo.data import write_demo_data

    path = write_demo_data(load_schema(inputs() / "schema.yaml"), Path(args.out), rows=args.rows)
    _emit(args, {"path": str(path), "rows": args.rows}, f"wrote {args.rows} demo records to {path}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from sdgov.agreement.load import load_spec
    from sdgov.intake.inputs import validated_data
    from sdgov.intake.preflight import preflight

    loaded = load_spec(args.spec)
    rows = validated_data(
        Path(args.data).resolve() if args.data else loaded.data_path, loaded.schema_, loaded.spec.engine
    ).rows
    plan = preflight(loaded, rows)  # what a release would refuse before its first draw, validate refuses too
    payload = {
        "ok": True,
        "agreement_sha256": loaded.agreement.sha256(),
        "rows": rows,
        "marginals": [list(c) for c in loaded.agreement.cliques],
        "rho": plan.rho,
        "epsilon": plan.epsilon,
        "delta": plan.delta,
        "sigma": [m.sigma for m in plan.marginals],
    }
    _emit(
        args,
        payload,
        f"ok: agreement {payload['agreement_sha256']}, {rows} rows, "
        f"{len(plan.marginals)} marginals, ρ={plan.rho}, ε={plan.epsilon}, δ={plan.delta}",
    )
    return 0


def cmd_registry(args: argparse.Namespace) -> int:
    from sdgov.registry import checkpoint
    from sdgov.registry.log import Registry

    reg = Registry(args.root)
    if args.action == "verify":
        return _verify(args, reg)
    reg.require_existing()
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
    if args.action == "recover":
        removed = reg.recover()
        _emit(
            args,
            {"removed": removed, "root": str(reg.root)},
            "\n".join(
                f"removed {r} (staging directory of a crashed publication; nothing was released from it)"
                for r in removed
            )
            or "nothing to recover",
        )
        return 0
    cp = checkpoint.make(reg)  # action "checkpoint": the signed head, to publish outside the registry
    text = checkpoint.dumps(cp)
    if not args.out:
        print(text, end="")
        return 0
    from sdgov.base.atomic import atomic_write_text

    atomic_write_text(Path(args.out), text)
    _emit(args, cp.model_dump(), f"checkpoint of log event {cp.sequence} (head {cp.head}) → {args.out}")
    return 0


def _verify(args: argparse.Namespace, reg: Registry) -> int:
    """Exit 0 intact, 1 tampering found, 2 not a registry / unreadable checkpoint (one line, never 'ok')."""
    from sdgov.registry import checkpoint

    cp = checkpoint.load(args.checkpoint) if args.checkpoint else None
    anchored = checkpoint.problems(reg, cp) if cp is not None else []
    if cp is not None and not reg.is_registry():
        problems = anchored  # wiped: the checkpoint says what was there
    else:
        problems = anchored + reg.verify()
    stale = reg.stale_staging() if reg.is_registry() else []
    n_events = len(reg.events()) if not problems else None
    human = (
        f"ok: {len(reg.releases())} release(s), {n_events} log event(s), every hash and signature matches"
        + (f"; the log extends checkpoint event {cp.sequence} ({cp.head[:12]}…)" if cp is not None else "")
        if not problems
        else "FAILED:\n" + "\n".join(f"  {p}" for p in problems)
    )
    human += "".join(
        f"\nstale: {s} (a crashed publication; nothing was released from it) — 'sdgov registry recover' removes it"
        for s in stale
    )
    _emit(args, {"ok": not problems, "problems": problems, "stale": stale, "root": str(reg.root)}, human)
    return 0 if not problems else 1


def cmd_stage(args: argparse.Namespace) -> int:
    """The stages as plain commands, for ``dvc repro``: they call the very task functions the flow runs."""
    from sdgov.agreement.load import load_spec
    from sdgov.contracts import ArtifactRef, GenerateInput

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
                split=loaded.agreement.split,
                engine=loaded.spec.engine,
            )
        )
        _emit(
            args,
            {"synthetic": out.synthetic.path, "sha256": out.synthetic.sha256},
            f"wrote {out.rows} rows to {out.synthetic.path}",
        )
        return 0
    from sdgov.artifacts import synthetic_records
    from sdgov.base.hashing import write_json
    from sdgov.engines.recordset import ParquetRecords
    from sdgov.intake.inputs import validated_data
    from sdgov.utility.summary import utility_summary

    agreement, schema = loaded.agreement, loaded.schema_
    real = validated_data(loaded.data_path, schema, loaded.spec.engine)
    attrs = agreement.attributes
    with synthetic_records(ArtifactRef.of("synthetic", args.synthetic), schema, attrs) as synthetic:
        summary = utility_summary(
            ParquetRecords(real.codes_path, schema, attrs), synthetic, attrs, [tuple(c) for c in agreement.cliques]
        )
    write_json(args.out, summary.model_dump(mode="json"))
    ref = ArtifactRef.of("utility", args.out)
    _emit(args, {"utility": ref.path, "sha256": ref.sha256}, f"wrote {ref.path}")
    return 0


def _stage_measure(args: argparse.Namespace, loaded: Any) -> int:
    """Export ψ — the noisy marginals the governed flow drew for this agreement and data — from the registry.

    It never draws noise: drawing happens only in the release flow's measure stage, under the signed agreement,
    the controller's policy and the budget ledger. A second copy of ψ under DVC is the same bytes, so it leaks
    nothing more.
    """
    from sdgov.base.atomic import atomic_write_bytes
    from sdgov.base.errors import RegistryError
    from sdgov.intake.inputs import validated_data
    from sdgov.measurement.store import assemble_logged
    from sdgov.registry.log import Registry

    registry = Registry(args.root)
    data = validated_data(loaded.data_path, loaded.schema_, loaded.spec.engine)
    ag = loaded.agreement
    mset = assemble_logged(
        registry, data.fingerprint, ag.dataset_name, data.rows, ag, loaded.schema_, str(loaded.spec_path)
    )
    payload = (mset.model_dump_json(indent=None) + "\n").encode()
    out = Path(args.out)
    if out.exists() and out.read_bytes() != payload:
        raise RegistryError(
            "a different measurement is already there",
            str(out),
            "move it away deliberately; noise for one statistic is drawn once",
        )
    atomic_write_bytes(out, payload)
    _emit(
        args,
        {"measurements": str(out), "statistics": [m.statistic for m in mset.measurements]},
        f"exported the noisy marginals drawn for agreement {ag.sha256()[:12]}… → {out}",
    )
    return 0


# ----------------------------------------------------------------------------------------- parser


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad flag is one ``sdgov: error:`` line and exit 2 like every other refusal (argparse's own
    usage block plus its error would be several lines, and a non-integer ``--K 2^40`` would read like a crash).
    Sub-commands inherit the class (argparse builds sub-parsers with the parent's class)."""

    def error(self, message: str) -> NoReturn:
        from sdgov.base.errors import SdgovError

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

    i = add("init", cmd_init, "write the data controller's default policy (policy.yaml) into a registry")
    i.add_argument("--root", help="registry root (default: $SDGOV_REGISTRY or ./registry)")
    i.add_argument("--controller", default="Data Controller", help="the controller who owns the policy")

    r = add("release", cmd_release, "run the release flow for a spec")
    r.add_argument("--spec", required=True)
    r.add_argument("--approvals", help="standing-approval file (default: the spec's 'approvals')")
    r.add_argument("--data", help="override the spec's dataset path")
    r.add_argument("--root", help="registry root (default: $SDGOV_REGISTRY or ./registry)")

    v = add("validate", cmd_validate, "check a spec, its schema and its data; print the agreement hash and budget")
    v.add_argument("--spec", required=True)
    v.add_argument("--data", help="override the spec's dataset path")

    g = add(
        "registry",
        cmd_registry,
        "list, show or verify releases and the signed event log; 'checkpoint' prints a signed head to keep "
        "elsewhere; 'recover' removes what a crashed publication left",
    )
    g.add_argument("action", choices=["list", "show", "verify", "checkpoint", "recover"])
    g.add_argument("release_id", nargs="?")
    g.add_argument("--root", help="registry root (default: $SDGOV_REGISTRY or ./registry)")
    g.add_argument("--checkpoint", help="verify: also prove the log extends this checkpoint (no rollback/rewrite)")
    g.add_argument("--out", help="checkpoint: write it to this file (kept outside the registry)")

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

    from sdgov.flows.cli_schema import add_parser as add_schema

    add_schema(add)  # sdgov schema check --schema FILE --data FILE

    from sdgov.flows.cli_ops import add_parser as add_ops

    add_ops(add)  # server start | propose | runs | sign | approve | keygen | approvers commit | budget | trail | …

    from sdgov.flows.cli_review import add_parser as add_review

    add_review(add)  # sdgov review RUN_ID --as NAME --key KEY --why TEXT [--drop A,B] [--force C,D] [--close]

    dd = add("demo-data", cmd_demo_data, "write the demo's made-up confidential data")
    dd.add_argument("--out", required=True)
    dd.add_argument("--rows", type=int, default=20000)

    from sdgov.flows.cli_audit import add_audit_parser

    add_audit_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from sdgov.base.errors import InternalError, PreflightError, SdgovError

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
