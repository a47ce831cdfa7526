"""``sdgov registry list|show|verify|checkpoint|recover|prove``, ``trail`` and ``budget [lifetime]``: what a registry
holds, its signed event log, the audit trail, the privacy-budget ledger and the controller's setting of a dataset's
lifetime ρ."""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING

from sdgov.commands._common import Parents, command, emit, site_of

if TYPE_CHECKING:
    from sdgov.registry.log import Registry


def cmd_registry(args: argparse.Namespace) -> int:
    """``list``, ``show``, ``recover`` and ``checkpoint`` (to ``--out`` or stdout) exit 0 and refuse a directory that
    is not a registry; ``verify`` and ``prove`` exit 0 intact / proved, 1 not, 2 bad input."""
    from sdgov.registry import checkpoint

    reg = site_of(args).registry
    if args.action == "verify":
        return _verify(args, reg)
    reg.require_existing()
    if args.action == "prove":
        return _prove(args, reg)
    if args.action == "rotate-secret":
        return _rotate_secret(args, reg)
    if args.action == "list":
        from sdgov.registry.trail import dataset_index

        datasets = dataset_index(reg)  # agreement hash → the dataset's declared name
        rels = [{**r, "dataset": datasets.get(r["agreement_sha256"], "")} for r in reg.releases()]
        emit(
            args,
            {"releases": rels},
            "\n".join(
                f"{r['release_id']}  {r['time']}  dataset {r['dataset'] or '?'}  agreement {r['agreement_sha256'][:12]}"
                for r in rels
            )
            or "no releases",
        )
        return 0
    if args.action == "show":
        if not args.release_id:
            raise SystemExit("sdgov registry show: give a RELEASE_ID (see 'sdgov registry list')")
        m = reg.manifest(args.release_id)
        emit(args, m, json.dumps(m, indent=2))
        return 0
    if args.action == "recover":
        removed = reg.recover()
        emit(
            args,
            {"removed": removed, "root": str(reg.root)},
            "\n".join(
                f"removed {r} (staging directory of a crashed publication; nothing was released from it)"
                for r in removed
            )
            or "nothing to recover",
        )
        return 0
    cp = checkpoint.make(reg, args.who, args.key)  # "checkpoint": the signed head, kept outside the registry
    text = checkpoint.dumps(cp)
    if not args.out:
        print(text, end="")
        return 0
    from sdgov.base.atomic import atomic_write_text

    atomic_write_text(Path(args.out), text)
    emit(args, cp.model_dump(), f"checkpoint of log event {cp.sequence} (head {cp.head}) → {args.out}")
    return 0


def _verify(args: argparse.Namespace, reg: Registry) -> int:
    """Exit 0 intact, 1 tampering found, 2 not a registry / unreadable checkpoint (one line, never 'ok';
    :func:`sdgov.governance.verification.verify_registry`)."""
    from sdgov.governance.verification import verify_registry

    v = verify_registry(reg, args.checkpoint)
    cp = v.anchored_to
    human = (
        f"ok: {v.releases} release(s), {v.events} log event(s), every hash and signature matches"
        + (f"; the log extends checkpoint event {cp.sequence} ({cp.head[:12]}…)" if cp is not None else "")
        + (
            f"; {v.unchecked} persisted measurement(s) are the controller's, not readable here (its verify checks them)"
            if v.unchecked
            else ""
        )
        if not v.problems
        else "FAILED:\n" + "\n".join(f"  {p}" for p in v.problems)
    )
    human += "".join(
        f"\nstale: {s} (a crashed publication; nothing was released from it) — 'sdgov registry recover' removes it"
        for s in v.stale
    )
    emit(args, {"ok": not v.problems, "problems": v.problems, "stale": v.stale, "root": str(reg.root)}, human)
    return 0 if not v.problems else 1


def _prove(args: argparse.Namespace, reg: Registry) -> int:
    """Show an auditor which data a release came from (:func:`sdgov.intake.prove.prove_release`). Exit 0 every
    commitment opens to this file, 1 one does not (or the secret in force was replaced since), 2 bad input (one
    line)."""
    from sdgov.intake.prove import prove_release

    proof = prove_release(reg, args.release_id, args.data, args.schema)
    if proof.secret_replaced is not None:
        exc = proof.secret_replaced
        emit(args, {"release_id": args.release_id, "proved": False, "secret_replaced": True, "why": exc.what},
             f"NOT proved: {exc.what} ({exc.fix})")  # fmt: skip
        return 1
    proved, opened = proof.proved, proof.matches
    human = (
        f"{'proved' if proved else 'NOT proved'}: release {args.release_id} "
        + ("commits to this data (" if proved else "does not commit to this data (")
        + ", ".join(f"{k} {'matches' if ok else 'differs'}" for k, ok in opened.items())
        + ")"
    )
    emit(args, {"release_id": args.release_id, "proved": proved, "matches": opened}, human)
    return 0 if proved else 1


def _rotate_secret(args: argparse.Namespace, reg: Registry) -> int:
    """``rotate-secret [--as CONTROLLER --key KEY]``: log the secret now on the machine (made if none) as the one in
    force; exit 0, a refusal one line, exit 2."""
    from sdgov.governance.secret import rotate

    e = rotate(reg, args.who, args.key)
    emit(args, e.model_dump(), f"{e.comment} (log line {e.seq + 1}, signed by {e.actor})")
    return 0


def cmd_budget(args: argparse.Namespace) -> int:
    """Print the privacy budget per dataset under the controller's policy
    (:func:`sdgov.measurement.accounts.budget_overview`): its ε over every release by the zCDP bound and by
    PLD (∞ once it was measured exactly) at the policy's δ, spent and remaining ρ, the account's lifetime in the
    controller's budget authority with where it was set, and this registry's releases of it with each one's ε (its
    privacy statement's); exit 0. ``lifetime``: the controller sets a dataset's lifetime
    (:func:`~sdgov.governance.ledger.set_lifetime`). A registry without a policy, or a setting refused, is one line,
    exit 2."""
    if args.action == "lifetime":
        return _set_lifetime(args)
    from sdgov.measurement.accounts import budget_overview

    overview = budget_overview(site_of(args))
    readable, policy = overview.from_authority, overview.policy
    lines = []
    for a in overview.datasets:
        lines.append(
            f"{a['dataset']} (fingerprint {a['fingerprint']}): spent ρ={a['spent_rho']:.6g}"
            + (
                f" of {a['lifetime_rho']:.6g}, remaining {a['remaining_rho']:.6g}; "
                + (_lifetime_words(a) if readable else f"as logged at line {a['as_of_line']}")
                if "error" not in a
                else f" — {a['error']}"
            )
            + f"; {len(a.get('spends', []))} spend(s)"
        )
        if readable and "error" not in a:  # its ε figures (the controller's authority was readable)
            lines += _privacy_lines(a["privacy"])
    human = "\n".join(lines) or f"no privacy budget spent yet (lifetime ρ {policy.defaults.lifetime_rho:g} by default)"
    payload = {
        "policy": policy.model_dump(),
        "policy_sha256": overview.policy_sha256,
        "source": overview.source,
        "from_authority": readable,
    }
    emit(args, {**payload, "datasets": overview.datasets}, f"{overview.source}\n{human}")
    return 0


def _privacy_lines(p: dict) -> list[str]:
    """The dataset's ε and each release's, in the statement's words."""
    from sdgov.budget.statement import Epsilon, PrivacyStatement, key_facts

    eps = Epsilon.model_validate(p["epsilon"])
    lines = [f"  over every release: {eps.words()}" + ("" if eps.unbounded else f" at δ = {p['delta']:.3g}")]
    for r in p["releases"]:
        lines.append(
            f"  release {r['release_id']} ({r['time']}): {key_facts(PrivacyStatement.model_validate(r['statement']))}"
        )
    return lines


def _lifetime_words(a: dict) -> str:
    """The account's lifetime, where it was set, and this registry's policy bound (a budget view's line)."""
    held = a.get("authority_lifetime")
    policy = f"this registry's policy states {a['policy_lifetime_rho']:.6g} ({a['policy_entry']})"
    if held is None:
        return f"no lifetime in the budget authority yet (its next charge sets it); {policy}"
    where = f"set {held['time']} through registry {held['registry_id']} ({held['source']})"
    return f"the account's lifetime ρ={held['lifetime_rho']:.6g} in the budget authority, {where}; {policy}"


def _set_lifetime(args: argparse.Namespace) -> int:
    """``budget lifetime --dataset NAME --rho X [--as CONTROLLER --key KEY]``: one line per account set, exit 0."""
    from sdgov.base.errors import SdgovError
    from sdgov.governance.ledger import set_lifetime

    if not args.dataset or args.rho is None:
        raise SdgovError(
            "budget lifetime needs a dataset and a ρ", "sdgov budget lifetime", "give --dataset NAME and --rho X"
        )
    if not args.rho > 0 or args.rho == float("inf"):
        raise SdgovError(f"--rho must be a positive number (got {args.rho:g})", "sdgov budget lifetime", "give ρ > 0")
    stored = set_lifetime(site_of(args), args.dataset, args.rho, args.who, args.key)
    emit(
        args,
        {"set": [s.model_dump() for s in stored]},
        "\n".join(
            f"{s.dataset} (fingerprint {s.fingerprint}): lifetime ρ={s.lifetime_rho:.6g} in the budget authority, "
            f"{s.where()}; logged in this registry"
            for s in stored
        ),
    )
    return 0


def cmd_trail(args: argparse.Namespace) -> int:
    """Print the audit trail (``--dataset``: only that dataset's events; ``--html`` / ``--prov``: also write those);
    exit 0 when the chain verifies, 1 when it does not."""
    from sdgov.registry.trail import build_trail, render_text, render_trail_html, to_prov, write

    t = build_trail(site_of(args).registry, args.dataset)
    written = {}
    if args.html:
        written["html"] = str(write(args.html, render_trail_html(t)))
    if args.prov:
        written["prov"] = str(write(args.prov, json.dumps(to_prov(t), indent=2, ensure_ascii=False) + "\n"))
    emit(args, {**t, "written": written}, render_text(t) + "".join(f"\nwrote {k}: {v}" for k, v in written.items()))
    return 0 if t["verified"] else 1


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``registry``, ``trail`` and ``budget``."""
    add = functools.partial(command, subparsers, parents)
    g = add(
        "registry",
        cmd_registry,
        "list, show or verify releases and the signed event log; 'checkpoint' prints a signed head to keep "
        "elsewhere; 'recover' removes what a crashed publication left; 'prove' shows which data a release came "
        "from (the controller's keyed commitments, opened); 'rotate-secret' logs a new commitment secret in force "
        "(a controller's signed act, after the old one was lost)",
        [parents.root],
    )
    g.add_argument("action", choices=["list", "show", "verify", "checkpoint", "recover", "prove", "rotate-secret"])
    g.add_argument("release_id", nargs="?")
    g.add_argument(
        "--data",
        help="prove: the confidential file; its hashes are checked against the release's keyed commitments "
        "(needs the controller's commitment secret)",
    )
    g.add_argument("--schema", help="prove: also check the content fingerprint (any file layout of the same records)")
    g.add_argument("--checkpoint", help="verify: also prove the log extends this checkpoint (no rollback/rewrite)")
    g.add_argument("--out", help="checkpoint: write it to this file (kept outside the registry)")
    g.add_argument(
        "--as", dest="who", help="rotate-secret, checkpoint: who signs (a controller; compliance may checkpoint)"
    )
    g.add_argument("--key", help="rotate-secret, checkpoint: that person's private key file")

    t = add(
        "trail",
        cmd_trail,
        "review the audit trail: every event, who/role/what/when/hashes, chain verified",
        [parents.root],
    )
    t.add_argument("--dataset", help="only events about this declared dataset")
    t.add_argument("--html", help="also write a self-contained HTML report here")
    t.add_argument("--prov", help="also write W3C PROV-JSON here")

    b = add(
        "budget",
        cmd_budget,
        "show the privacy budget per dataset: its ε over every release (zCDP bound and PLD, ∞ once measured exactly) "
        "and each release's, spent and remaining ρ, and the account's lifetime in the controller's budget authority; "
        "'lifetime' sets a dataset's lifetime (the controller's act, logged here)",
        [parents.root],
    )
    b.add_argument("action", nargs="?", choices=["lifetime"], help="lifetime: set a dataset's lifetime ρ")
    b.add_argument("--dataset", help="lifetime: the dataset's name label or fingerprint (as 'sdgov budget' lists)")
    b.add_argument(
        "--rho", type=float, help="lifetime: its new lifetime ρ (at most what this registry's policy states)"
    )
    b.add_argument("--as", dest="who", help="lifetime: the controller who signs it (a registry with approvers)")
    b.add_argument("--key", help="lifetime: that controller's private key file")
