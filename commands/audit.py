"""``sdgov audit decomposability`` and ``sdgov audit privacy``: the two audits of a generator against a spec.

``audit decomposability`` is the black-box decomposability test (does the generator use only Φ? Houssiau et al.
2022; the work is in :mod:`sdgov.audits.decomposability.procedure`). ``audit privacy`` is the privacy-risk
evidence of issue 4 (the work is in :mod:`sdgov.audits.privacy`). Progress goes to stderr; ``--json`` prints the
result contract on stdout, for privacy::

    {"verdict": "pass|warn|fail", "epsilon_lower": …, "min_privacy_gain": …, "exact_matches": …, "seconds": …, …}

A split spec (``split:``) is audited once per part, each part on its own Φ, records and share of ρ, as the release's
audit stage does (:mod:`sdgov.audits.parts`): one verdict per part and the overall one (the worst part's), and with
``--json`` ``{"ok": true, "test": …, "verdict": overall, "parts": {name: the one-model contract}}``.

A part the data and Φ leave nothing to test in (e.g. its Φ fixes its whole table) is "not testable", with its reason,
and the overall verdict is the worst of the other parts'.

Generators and controls are named by their registered names (``honest_pgm``, ``dishonest_pgm``, a plug-in's entry
point: :mod:`sdgov.agreement.code_names`), never by import path.

Exit status: decomposability 0 pass, 1 fail; privacy 0 pass or warn, 1 fail; both 2 on bad input (one line: a
malformed or nested ``--params``, a name that is not registered, a one-model spec with nothing to test) or a
generator that crashed (its factory, ``fit`` or ``sample`` raised: one line naming the generator and the call,
``{"ok": false, "error": …}`` with ``--json``, and with ``--out`` a file holding the error and whatever the audit
had finished). 1 is only ever a verdict.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdgov.agreement.sections.decomposability import DecomposabilitySettings
from sdgov.agreement.sections.privacy_risk import DEFAULT_PARTS, PARTS, RiskSettings
from sdgov.commands._common import Parents, command, emit, json_object_arg

if TYPE_CHECKING:
    from pydantic import BaseModel

    from sdgov.audits.generator_protocol import GeneratorCrash


def crash_written(args: argparse.Namespace, exc: GeneratorCrash, test: str) -> None:
    """``--out`` after a generator crash: the error and the partial results the audit attached (a crash is a
    verdict of its own, so the file says so instead of being left unwritten)."""
    if args.out:
        payload = {"ok": False, "test": test, "error": exc.one_line(), "partial": exc.partial}
        Path(args.out).write_text(json.dumps(payload, indent=2, default=str))


# ------------------------------------------------------------------------------------------------ decomposability


def cmd_decomposability(args: argparse.Namespace) -> int:
    """Run the decomposability test of ``--generator`` against the spec: exit 0 pass, 1 fail.

    A bad option is an ``AuditError`` and a generator crash is re-raised after ``--out`` records it (both exit 2)."""
    from sdgov.agreement.code_names import check_code_name
    from sdgov.agreement.sections.decomposability import MAX_K, MAX_ROWS
    from sdgov.audits.decomposability.procedure import audit_spec_parts
    from sdgov.audits.generator_protocol import AuditError, GeneratorCrash

    if args.generator:
        check_code_name(args.generator, "--generator")  # exact lookup, before anything is imported
    if args.control and args.control.lower() != "none":
        check_code_name(args.control, "--control")
    overrides: dict = {}
    if args.params:
        overrides["generator_params"] = params_arg(args.params)
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
        results = audit_spec_parts(
            args.spec,
            args.generator,
            K=args.K,
            seed=args.seed,
            data_path=args.data,
            overrides=overrides,
            executor=executor,
        )
    except GeneratorCrash as exc:  # no verdict: exit 2 with one line (sdgov.commands.main), what is done in --out
        crash_written(args, exc, "decomposability")
        raise
    verdict = _by_part(args, "decomposability", results, _decomposability_payload, _decomposability_line)
    return 0 if verdict == "pass" else 1


def params_arg(text: str) -> dict[str, Any]:
    """``--params``: a JSON object of the generator's settings, each a number, string, boolean or list of strings
    (what a spec's ``generator_params`` holds); anything else — a nested object — is one line, exit 2."""
    from pydantic import TypeAdapter, ValidationError

    from sdgov.agreement.sections.decomposability import Params
    from sdgov.audits.generator_protocol import AuditError

    value = json_object_arg(text, "--params", '{"iterations": 300}')
    try:
        return TypeAdapter(Params).validate_python(value)
    except ValidationError as exc:
        bad = next(iter(exc.errors()))["loc"][0]
        raise AuditError(
            f"the value of {bad!r} is {type(value.get(bad)).__name__}: a generator param is a number, a string, a "
            "boolean or a list of strings",
            "--params",
            'give flat settings, e.g. \'{"iterations": 300, "leak": ["A", "B"]}\'',
        ) from None


def _decomposability_payload(result: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """One model's JSON payload and ``--out`` document of a decomposability result."""
    from sdgov.audits.decomposability.report import decomposability_section

    payload = {
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
    return payload, {"result": result.model_dump(mode="json"), "section": decomposability_section(result)}


def _decomposability_line(result: Any) -> str:
    ctrl = (
        f"; positive control {result.control.generator}: {'caught' if result.control.caught else 'NOT caught'}"
        f" (p={result.control.p_value:.3g})"
        if result.control
        else ""
    )
    return (
        f"{result.verdict.upper()}: p = {result.p_value:.3g} at α = {result.alpha} (K = {result.K}, "
        f"{result.seconds:.1f} s){ctrl}"
    )


def _by_part(
    args: argparse.Namespace,
    test: str,
    results: dict[str | None, Any],
    payload_of: Callable[[Any], tuple[dict[str, Any], dict[str, Any]]],
    line_of: Callable[[Any], str],
) -> str:
    """Print (``--json``: emit) the audit's results and write ``--out``: one model's result as before, or a split
    synthesis's one verdict per part and the overall verdict (the worst part's: the split passes only if every part
    does); returns the overall verdict."""
    from sdgov.audits.generator_protocol import NotTestableResult
    from sdgov.audits.parts import worst_of_parts

    if list(results) == [None]:
        result = results[None]
        payload, document = payload_of(result)
        payload = {"ok": True, "test": test, **payload}
        if args.out:
            Path(args.out).write_text(json.dumps(document, indent=2))
            payload["out"] = str(args.out)
        emit(args, payload, line_of(result))
        return str(result.verdict)
    untestable = {part: r for part, r in results.items() if isinstance(r, NotTestableResult)}
    docs = {
        part: ((r.model_dump(), r.model_dump()) if part in untestable else payload_of(r)) for part, r in results.items()
    }
    verdict = worst_of_parts(str(r.verdict) for part, r in results.items() if part not in untestable)
    payload = {"ok": True, "test": test, "verdict": verdict, "parts": {p: d[0] for p, d in docs.items()}}
    if args.out:
        Path(args.out).write_text(
            json.dumps({"verdict": verdict, "parts": {p: d[1] for p, d in docs.items()}}, indent=2)
        )
        payload["out"] = str(args.out)
    lines = [
        f"part {part!r}: " + (f"NOT TESTABLE: {r.reason}" if part in untestable else line_of(r))
        for part, r in results.items()
    ]
    tested = len(results) - len(untestable)
    lines.append(
        f"overall: {verdict.upper()} ({tested} of {len(results)} parts tested; the split passes only if every tested "
        "part does)"
        if untestable
        else f"overall: {verdict.upper()} ({len(results)} parts; the split passes only if every part does)"
    )
    emit(args, payload, "\n".join(lines))
    return verdict


# ------------------------------------------------------------------------------------------------ privacy


def _settings(args: argparse.Namespace) -> RiskSettings:
    from pydantic import ValidationError

    from sdgov.audits.generator_protocol import AuditError
    from sdgov.base.loading import validation_message

    values: dict[str, Any] = {}
    if args.settings:
        values = json_object_arg(args.settings, "--settings", '{"rf_trees": 50}')
    for key, v in (
        ("n_outliers", args.outliers),
        ("n_random", args.random_targets),
        ("n_shadow", args.shadows),
        ("n_synth", args.synth_sets),
        ("train_rows", args.train_rows),
        ("canaries", args.canaries),
        ("sensitive", args.sensitive),
        ("n_jobs", args.jobs),
        ("seed", args.seed),
        ("synth_rows", args.rows),
    ):
        if v is not None:
            values[key] = v
    try:
        return RiskSettings(**values)
    except ValidationError as exc:
        raise AuditError(validation_message(exc), "privacy settings", "check the option values") from None


def cmd_privacy(args: argparse.Namespace) -> int:
    """Run the privacy-risk audit (the ``--parts`` asked for) under the risk policy: exit 0 pass or warn, 1 fail.

    A generator crash is re-raised (exit 2) after ``--out`` records it with the request (generator, params, ...)."""
    from sdgov.agreement.code_names import check_code_name
    from sdgov.audits.generator_protocol import GeneratorCrash
    from sdgov.audits.privacy.policy import load_risk_policy
    from sdgov.audits.privacy.run import audit_spec_privacy_parts, check_privacy_parts

    if args.generator is not None:
        check_code_name(args.generator, "--generator")  # exact lookup, before anything is imported
    params = params_arg(args.params) if args.params else None
    parts = tuple(p.strip() for p in (args.parts or ",".join(DEFAULT_PARTS)).split(",") if p.strip())
    check_privacy_parts(parts)  # before the spec and the data are read
    settings = _settings(args)
    policy = load_risk_policy(args.policy)

    def progress(done: int, total: int, what: str) -> None:
        if done == total or done % max(1, total // 10) == 0:
            print(f"[privacy audit] {what}: {done}/{total}", file=sys.stderr, flush=True)

    try:
        results = audit_spec_privacy_parts(
            args.spec,
            args.generator,
            settings,
            policy,
            args.data,
            params,
            parts,
            args.canary_metric or "unit",
            progress,
        )
    except GeneratorCrash as exc:  # no verdict: exit 2 with one line (sdgov.commands.main), the request in --out
        exc.partial = {
            "generator": args.generator,
            "params": params,
            "parts": list(parts),
            "settings": settings.model_dump(mode="json"),
            **exc.partial,
        }
        crash_written(args, exc, "privacy")
        raise
    verdict = _by_part(args, "privacy", results, _privacy_payload, _privacy_lines)
    return 1 if verdict == "fail" else 0


def _privacy_payload(result: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """One model's JSON payload (the summary contract) and ``--out`` document of a privacy-risk result."""
    from sdgov.audits.privacy.report import privacy_section
    from sdgov.audits.privacy.run import summary

    payload = {k: v for k, v in summary(result).items() if k not in ("ok", "test")}
    return payload, {"result": result.model_dump(mode="json"), "section": privacy_section(result)}


def _privacy_lines(result: Any) -> str:
    fmt = lambda x: "—" if x is None else f"{x:.3g}"
    lines = [
        f"{result.verdict.upper()}: ε_lower = {fmt(result.epsilon_lower)} "
        f"(claimed {fmt(result.claimed_epsilon)}), "
        f"min PG = {fmt(result.min_privacy_gain)}, exact matches = {result.exact_matches} "
        f"({result.seconds:.1f} s)"
    ]
    lines += [f"  [{c.level}] {c.name}: {c.detail}" for c in result.checks]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ parser


def _default(model: type[BaseModel], field: str) -> Any:
    """A settings model's default for ``field``: the help states what runs (:func:`_help`)."""
    return model.model_fields[field].default


def _help(text: str, model: type[BaseModel], field: str, unit: str = "") -> str:
    """``text`` with the default the command really uses, read from the settings model."""
    return f"{text} (default {_default(model, field)}{unit})"


def _shared() -> argparse.ArgumentParser:
    """The options both audits take (``--spec`` and ``--data`` come from the CLI's shared parents)."""
    a = argparse.ArgumentParser(add_help=False)
    a.add_argument("--params", help="generator params as a flat JSON object, e.g. '{\"iterations\": 300}'")
    a.add_argument("--out", help="also write the full result JSON (with the card section and its SVG) to this file")
    return a


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``audit decomposability`` and ``audit privacy``, which share the spec, data and params options; the
    help of every option states the default the command really uses, read from the settings models."""
    help_ = (
        "audit a generator against a spec: 'decomposability' (does it use only Φ? Houssiau et al. 2022) or "
        "'privacy' (membership/attribute inference, DP lower bound, record checks)"
    )
    audit = subparsers.add_parser("audit", help=help_, description=help_)
    tests = audit.add_subparsers(dest="test", required=True)
    takes = [parents.spec, parents.data, _shared()]
    D = DecomposabilitySettings

    d = command(
        tests,
        parents,
        "decomposability",
        cmd_decomposability,
        "does the generator use only Φ? (the black-box test of Houssiau et al. 2022)",
        takes,
    )
    d.add_argument(
        "--generator",
        help="registered name of the generator (default: the spec's audit.generator, else the honest audit variant "
        "of the spec's generator, e.g. honest_pgm; a plug-in's: its entry-point name)",
    )
    d.add_argument(
        "--K", type=int, help=f"fits per extremal dataset (default: the spec's audit.K, else {_default(D, 'K')})"
    )
    d.add_argument("--seed", type=int, help=f"audit seed (default: the spec's audit.seed, else {_default(D, 'seed')})")
    d.add_argument(
        "--rows", type=int, help="synthetic rows per fit (default: the spec's audit.rows, else 10 × the records)"
    )
    d.add_argument(
        "--control",
        help="registered name of the positive control, or 'none' (default: the spec's audit.positive_control)",
    )
    d.add_argument(
        "--jobs", type=int, help="worker processes for the fits (default: 1, in this process; 0: every core)"
    )

    p = command(
        tests,
        parents,
        "privacy",
        cmd_privacy,
        "privacy-risk evidence: membership/attribute inference, DP lower bound, record checks",
        takes,
    )
    R = RiskSettings
    p.add_argument(
        "--generator",
        help="registered name of the generator (default: the honest audit variant of the spec's generator, e.g. "
        "honest_pgm)",
    )
    p.add_argument(
        "--policy", help="pass/warn/fail thresholds (YAML/JSON; default: built-in, see examples/privacy_policy.yaml)"
    )
    p.add_argument("--outliers", type=int, help=_help("outlier targets (rare combinations)", R, "n_outliers"))
    p.add_argument("--random-targets", type=int, help=_help("random targets", R, "n_random"))
    p.add_argument("--shadows", type=int, help=_help("shadow worlds per target", R, "n_shadow"))
    p.add_argument("--synth-sets", type=int, help=_help("synthetic sets per shadow fit", R, "n_synth"))
    p.add_argument("--train-rows", type=int, help=_help("records per shadow training set", R, "train_rows"))
    p.add_argument(
        "--rows",
        type=int,
        help=f"records per synthetic set of a shadow fit (default: --train-rows, i.e. {_default(R, 'train_rows')})",
    )
    p.add_argument("--canaries", type=int, help="canaries of the 'canary' part (default: train-rows / 2)")
    p.add_argument("--seed", type=int, help=_help("audit seed", R, "seed"))
    p.add_argument("--jobs", type=int, help=_help("worker processes for the attack trials", R, "n_jobs"))
    p.add_argument(
        "--canary-metric",
        choices=["unit", "cells"],
        default="unit",
        help="distance of the canary audit: unit hypercube (default) or cell-scaled",
    )
    p.add_argument("--sensitive", help="attribute-inference target (default: the last audited attribute)")
    p.add_argument(
        "--parts",
        default=",".join(DEFAULT_PARTS),
        help=f"comma list of {', '.join(PARTS)} (default {','.join(DEFAULT_PARTS)}; canary: the nearest-neighbour "
        "bound)",
    )
    p.add_argument("--settings", help="further RiskSettings as JSON, e.g. '{\"rf_trees\": 50}'")
