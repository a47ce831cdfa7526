"""``sdgov release``, ``demo``, ``demo-data``, ``validate`` and ``init``: a release from a spec, the built-in demo,
the checks a release makes before it starts, and a registry's first policy."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import TYPE_CHECKING

from sdgov.commands._common import Parents, command, emit, site_of

if TYPE_CHECKING:
    from sdgov.contracts import ReleaseResult


def cmd_release(args: argparse.Namespace) -> int:
    """Run the release flow for ``--spec`` (:func:`sdgov.flows.release_run.release_now`) and print where the card is;
    exit 0. Everything the release can get wrong is checked once, before the flow starts (a refusal is one line,
    exit 2); the flow's first stage re-verifies what was checked by hash."""
    from sdgov.flows.release_run import release_now

    site = site_of(args)
    return _released(args, release_now(site, args.spec, args.approvals, args.data), site.root.resolve())


def cmd_demo(args: argparse.Namespace) -> int:
    """Run a whole release on the built-in demo (:func:`sdgov.flows.release_run.release_demo`: default policy adopted,
    made-up data written beside the registry, a standing approval signed by the demo people); exit codes as
    ``release``."""
    from sdgov.flows.release_run import release_demo

    site = site_of(args)
    return _released(args, release_demo(site), site.root.resolve())


def _released(args: argparse.Namespace, result: ReleaseResult, root: Path) -> int:
    """Where the release's card is (``--json``: the release's paths and hashes); exit 0."""
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
    emit(
        args,
        payload,
        f"released {result.release_id}\n  card: {result.card_html}\n  path: {result.path}\n"
        f"  verify: sdgov registry verify --root {root}",
    )
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    """Write the controller's default policy into a registry (kept as it is when there is one already) and name its
    readers' group (:func:`sdgov.governance.controller.init`); exit 0."""
    from sdgov.governance.controller import init

    reg = site_of(args).registry
    path, written, adopted = init(reg, controller=args.controller, readers=args.readers)
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
    if reg.readers_group():
        human += f"\n  readers' group: {reg.readers_group()} (the log, releases, policy; not the controller's state)"
    payload = {"policy": str(path), "written": written, "adopted": adopted, "registry": str(reg.root)}
    payload["readers_group"] = reg.readers_group()
    if reg.is_registry():  # the key that signs every release: its fingerprint is what strangers pin
        from sdgov.registry.key import registry_fingerprint

        fingerprint = registry_fingerprint(reg.config()["public_key"], str(reg.root))
        payload |= {"registry_id": reg.registry_id(), "key_fingerprint": fingerprint}
        human += (
            f"\n  registry {payload['registry_id']} signs its releases with the key {payload['key_fingerprint']}:"
            "\n  publish this fingerprint out of band (your website, your release notes) — every card states it, and "
            "a stranger verifies a release with 'sdgov verify-release releases/<id> --public-key <it>'"
        )
    emit(args, payload, human)
    return 0


def cmd_demo_data(args: argparse.Namespace) -> int:
    """Write ``--rows`` made-up demo records to ``--out``; exit 0."""
    from sdgov.data.schema import load_schema
    from sdgov.demo import inputs
    from sdgov.demo.data import write_demo_data

    path = write_demo_data(load_schema(inputs() / "schema.yaml"), Path(args.out), rows=args.rows)
    emit(args, {"path": str(path), "rows": args.rows}, f"wrote {args.rows} demo records to {path}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Check a spec, its schema, its data and every pre-flight check a release makes — and, with a registry (``--root``,
    or the default one when it exists), the controller's files as last signed and its policy, as ``sdgov release``
    does (:func:`sdgov.intake.inputs.validate_spec`); print the agreement hash, rows and budget, exit 0. A problem is
    one line each, exit 2."""
    from sdgov.intake.inputs import validate_spec

    checked = validate_spec(site_of(args), args.spec, args.data, args.root is not None)
    loaded, data, plan, root = checked.loaded, checked.data, checked.plan, checked.root
    payload = {
        "ok": True,
        "agreement_sha256": loaded.agreement.sha256(),
        "rows": data.rows,
        "marginals": [list(c) for c in loaded.agreement.cliques],
        "rho": plan.rho,
        "epsilon": plan.epsilon,
        "delta": plan.delta,
        "sigma": [m.sigma for m in plan.marginals],
        "registry": str(root) if root is not None else None,  # None: no controller's policy was applied
    }
    from sdgov.budget.statement import num, release_epsilon

    eps = release_epsilon(plan)  # as the statement will state it (a spent dataset's ε is ∞ once measured)
    payload["privacy"] = eps.words() + ("" if eps.unbounded else f", δ = {num(plan.delta, 3)}")
    policy = f"allowed by the policy of {root}" if root is not None else "no registry: policy not checked (--root)"
    emit(
        args,
        payload,
        f"ok: agreement {payload['agreement_sha256']}, {data.rows} rows, "
        f"{len(plan.marginals)} marginals, ρ={plan.rho}; {payload['privacy']}; {policy}",
    )
    return 0


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``demo``, ``init``, ``release``, ``validate`` and ``demo-data``."""
    add = functools.partial(command, subparsers, parents)
    add("demo", cmd_demo, "run a whole release on the built-in demo data and print where the card is", [parents.root])

    i = add(
        "init", cmd_init, "write the data controller's default policy (policy.yaml) into a registry", [parents.root]
    )
    i.add_argument("--controller", default="Data Controller", help="the controller who owns the policy")
    i.add_argument(
        "--readers",
        help="the group whose members may read the registry's public parts (log, releases, policy: approvers, "
        "compliance); the controller's state stays owner-only",
    )

    r = add("release", cmd_release, "run the release flow for a spec", [parents.spec, parents.data, parents.root])
    r.add_argument("--approvals", help="standing-approval file (default: the spec's 'approvals')")

    add(
        "validate",
        cmd_validate,
        "check a spec, its schema and its data (and a registry's policy); print the agreement hash and budget",
        [parents.spec, parents.data, parents.root],
    )

    dd = add("demo-data", cmd_demo_data, "write the demo's made-up confidential data")
    dd.add_argument("--out", required=True)
    dd.add_argument("--rows", type=int, default=20000)
