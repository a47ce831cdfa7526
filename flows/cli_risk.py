"""``sdgov audit privacy``: the privacy-risk evidence of issue 4 from the command line.

It shares the ``audit`` subcommand with the decomposability test (:mod:`sdgov.flows.cli_audit`): that module keeps the
parser and dispatches ``audit privacy`` here; this module adds the privacy-only options. The work is in
:mod:`sdgov.audits.privacy`. Progress goes to stderr; ``--json`` prints the result contract on stdout::

    {"verdict": "pass|warn|fail", "epsilon_lower": …, "min_privacy_gain": …, "exact_matches": …, "seconds": …, …}

Exit status: 0 pass or warn, 1 fail, 2 bad input or a generator that crashed (its factory, ``fit`` or ``sample``
raised: one line naming the generator and the call, ``{"ok": false, "error": …}`` with ``--json``, and with
``--out`` a file holding the error and whatever the audit had finished).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sdgov.audits.generator_protocol import AuditError, GeneratorCrash
from sdgov.flows.cli_args import json_object_arg


def crash_written(args: argparse.Namespace, exc: GeneratorCrash, test: str) -> None:
    """``--out`` after a generator crash: the error and the partial results the audit attached (a crash is a
    verdict of its own, so the file says so instead of being left unwritten)."""
    if getattr(args, "out", None):
        payload = {"ok": False, "test": test, "error": exc.one_line(), "partial": exc.partial}
        Path(args.out).write_text(json.dumps(payload, indent=2, default=str))


def add_privacy_args(a: argparse.ArgumentParser) -> None:
    """Options of ``audit privacy`` (``--spec``, ``--generator``, ``--seed``, ``--rows``, ``--params``, ``--data``
    and ``--out`` are shared with ``audit decomposability``)."""
    g = a.add_argument_group("privacy (sdgov audit privacy)")
    g.add_argument(
        "--policy", help="pass/warn/fail thresholds (YAML/JSON; default: built-in, see examples/privacy_policy.yaml)"
    )
    g.add_argument("--outliers", type=int, help="outlier targets (rare combinations; default 5)")
    g.add_argument("--random-targets", type=int, help="random targets (default 5)")
    g.add_argument("--shadows", type=int, help="shadow worlds per target (default 30)")
    g.add_argument("--synth-sets", type=int, help="synthetic sets per shadow fit (default 10)")
    g.add_argument("--train-rows", type=int, help="records per shadow training set (default 1000)")
    g.add_argument("--canaries", type=int, help="canaries in the DP lower-bound audit (default train-rows / 2)")
    g.add_argument(
        "--canary-metric",
        choices=["unit", "cells"],
        default="unit",
        help="distance of the canary audit: unit hypercube (default) or cell-scaled",
    )
    g.add_argument("--sensitive", help="attribute-inference target (default: the last audited attribute)")
    g.add_argument(
        "--parts",
        default="mia,one_run,memorisation,disclosure",
        help="comma list of mia, one_run, memorisation, disclosure, canary (the nearest-neighbour bound)",
    )
    g.add_argument(
        "--jobs",
        type=int,
        help="parallel workers (joblib) for the trials: privacy attack trials (default 2), decomposability fits "
        "(default 1: in this process; 0: every core)",
    )
    g.add_argument("--settings", help="further RiskSettings as JSON, e.g. '{\"rf_trees\": 50}'")


def _settings(args: argparse.Namespace):
    from sdgov.agreement.sections.privacy_risk import RiskSettings

    values: dict = {}
    if getattr(args, "settings", None):
        values = json_object_arg(args.settings, "--settings", '{"rf_trees": 50}')
    for flag, key in (
        ("outliers", "n_outliers"),
        ("random_targets", "n_random"),
        ("shadows", "n_shadow"),
        ("synth_sets", "n_synth"),
        ("train_rows", "train_rows"),
        ("canaries", "canaries"),
        ("sensitive", "sensitive"),
        ("jobs", "n_jobs"),
        ("seed", "seed"),
        ("rows", "synth_rows"),
    ):
        v = getattr(args, flag, None)
        if v is not None:
            values[key] = v
    from pydantic import ValidationError

    from sdgov.base.loading import validation_message

    try:
        return RiskSettings(**values)
    except ValidationError as exc:
        raise AuditError(validation_message(exc), "privacy settings", "check the option values") from None


def cmd_privacy(args: argparse.Namespace) -> int:
    from sdgov.audits.privacy.policy import load_risk_policy
    from sdgov.audits.privacy.report import privacy_section
    from sdgov.audits.privacy.run import audit_spec_privacy, summary

    params = json_object_arg(args.params, "--params", '{"sigma": 5}') if getattr(args, "params", None) else None
    parts = tuple(
        p.strip()
        for p in (getattr(args, "parts", None) or "mia,one_run,memorisation,disclosure").split(",")
        if p.strip()
    )
    settings = _settings(args)
    policy = load_risk_policy(getattr(args, "policy", None))

    def progress(done: int, total: int, what: str) -> None:
        if done == total or done % max(1, total // 10) == 0:
            print(f"[privacy audit] {what}: {done}/{total}", file=sys.stderr, flush=True)

    try:
        result = audit_spec_privacy(
            args.spec,
            args.generator,
            settings,
            policy,
            getattr(args, "data", None),
            params,
            parts,
            getattr(args, "canary_metric", "unit") or "unit",
            progress,
        )
    except GeneratorCrash as exc:  # no verdict: exit 2 with one line (sdgov.flows.cli.main), the request in --out
        exc.partial = {
            "generator": args.generator,
            "params": params,
            "parts": list(parts),
            "settings": settings.model_dump(mode="json"),
            **exc.partial,
        }
        crash_written(args, exc, "privacy")
        raise
    payload = summary(result)
    if getattr(args, "out", None):
        Path(args.out).write_text(
            json.dumps({"result": result.model_dump(mode="json"), "section": privacy_section(result)}, indent=2)
        )
        payload["out"] = str(args.out)
    if args.json:
        print(json.dumps(payload, indent=2))
    else:
        fmt = lambda x: "—" if x is None else f"{x:.3g}"
        print(
            f"{result.verdict.upper()}: ε_lower = {fmt(result.epsilon_lower)} "
            f"(claimed {fmt(result.claimed_epsilon)}), "
            f"min PG = {fmt(result.min_privacy_gain)}, exact matches = {result.exact_matches} "
            f"({result.seconds:.1f} s)"
        )
        for c in result.checks:
            print(f"  [{c.level}] {c.name}: {c.detail}")
    return 1 if result.verdict == "fail" else 0
