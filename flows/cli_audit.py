"""``sdgov audit decomposability``: the black-box decomposability test from the command line.

Kept out of :mod:`sdgov.flows.cli` so the main CLI only gains a subparser; the work is in
:mod:`sdgov.audits.decomposability.procedure`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sdgov.agreement.sections.decomposability import MAX_K, MAX_ROWS
from sdgov.audits.generator_protocol import AuditError, GeneratorCrash
from sdgov.flows.cli_args import json_object_arg
from sdgov.flows.cli_risk import add_privacy_args, cmd_privacy, crash_written


def add_audit_parser(sub: argparse._SubParsersAction) -> None:
    help_ = (
        "audit a generator against a spec: 'decomposability' (does it use only Φ? Houssiau et al. 2022) or "
        "'privacy' (membership/attribute inference, DP lower bound, record checks: flows/cli_risk.py)"
    )
    a = sub.add_parser("audit", help=help_, description=help_)
    a.set_defaults(fn=cmd_audit)
    a.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    a.add_argument("test", choices=["decomposability", "privacy"])
    a.add_argument("--spec", required=True)
    a.add_argument(
        "--generator",
        help="import path 'module:callable' of the generator factory (required for "
        "decomposability; privacy defaults to the honest audit variant of the spec's generator)",
    )
    a.add_argument("--K", type=int, help="fits per extremal dataset (default: the spec's audit.K, else 10)")
    a.add_argument("--seed", type=int, help="audit seed (default: the spec's audit.seed, else 0)")
    a.add_argument("--rows", type=int, help="synthetic rows per fit (default: the spec's, else 10 × records)")
    a.add_argument("--params", help="generator params as JSON, e.g. '{\"iterations\": 300}'")
    a.add_argument("--control", help="positive-control generator import path ('none' to skip)")
    a.add_argument("--data", help="override the spec's dataset path")
    a.add_argument("--out", help="also write the full result JSON (with the Figure-1 SVG) to this file")
    add_privacy_args(a)  # sdgov audit privacy --spec FILE [--generator module:callable] --json


def cmd_audit(args: argparse.Namespace) -> int:
    if args.test == "privacy":
        return cmd_privacy(args)
    if not args.generator:
        raise AuditError(
            "audit decomposability needs --generator",
            "--generator",
            "give the generator as 'package.module:callable', e.g. 'sdgov.audits.generators:honest_pgm'",
        )
    from sdgov.audits.decomposability.procedure import audit_spec
    from sdgov.audits.decomposability.report import decomposability_section

    overrides: dict = {}
    if args.params:
        overrides["generator_params"] = json_object_arg(args.params, "--params", '{"iterations": 300}')
    if args.rows is not None:
        if not 1 <= args.rows <= MAX_ROWS:
            raise AuditError(f"--rows must be between 1 and {MAX_ROWS:,}", "--rows")
        overrides["rows"] = args.rows
    if args.K is not None and not 2 <= args.K <= MAX_K:
        raise AuditError(
            f"--K must be between 2 (a t-test needs two fits per group) and {MAX_K:,} (4·K fits are run)", "--K"
        )
    if args.seed is not None and not 0 <= args.seed < 2**63:
        raise AuditError("--seed must be between 0 and 2^63 - 1", "--seed")
    if args.control:
        overrides["positive_control"] = None if args.control.lower() == "none" else args.control
    from sdgov.base.executor import executor_for

    if args.jobs is not None and args.jobs < 0:
        raise AuditError("--jobs must be 0 (every core) or more", "--jobs")
    executor = executor_for(args.jobs) if args.jobs is not None else None  # joblib workers, as for privacy
    try:
        result = audit_spec(
            args.spec,
            args.generator,
            K=args.K,
            seed=args.seed,
            data_path=args.data,
            overrides=overrides,
            executor=executor,
        )
    except GeneratorCrash as exc:  # no verdict: exit 2 with one line (sdgov.flows.cli.main), what is done in --out
        crash_written(args, exc, "decomposability")
        raise
    payload = {
        "ok": True,
        "test": "decomposability",
        "generator": result.generator,
        "p_value": result.p_value,
        "verdict": result.verdict,
        "alpha": result.alpha,
        "K": result.K,
        "rows": result.rows,
        "effect_size": result.effect_size,
        "seconds": result.seconds,
        "timing": result.timing,
        "control": result.control.model_dump() if result.control else None,
        "top_interactions": result.top_interactions,
        "beta_star_sets": result.extremal.get("beta_star_sets"),
        "environment": result.environment,
    }
    if args.out:
        section = decomposability_section(result)
        Path(args.out).write_text(json.dumps({"result": result.model_dump(mode="json"), "section": section}, indent=2))
        payload["out"] = str(args.out)
    ctrl = (
        f"; positive control {result.control.generator}: {'caught' if result.control.caught else 'NOT caught'}"
        f" (p={result.control.p_value:.3g})"
        if result.control
        else ""
    )
    human = (
        f"{result.verdict.upper()}: p = {result.p_value:.3g} at α = {result.alpha} (K = {result.K}, "
        f"{result.seconds:.1f} s){ctrl}"
    )
    print(json.dumps(payload, indent=2) if args.json else human)
    return 0 if result.verdict == "pass" else 1
