"""The controller's signed files and standing approvals.

    sdgov approvers commit --as CONTROLLER --key KEY [--root DIR]   sign the controller files' new hashes into the log
    sdgov approvals sign FILE --as NAME --key KEY [--root DIR]      sign a standing approval (demo, scheduled runs)
    sdgov approvals pin FILE --spec SPEC --valid-until DATE [--data FILE]   pin it to the agreement and the data

Each is one use case of the core's governance room: :func:`~sdgov.governance.controller.commit`,
:func:`~sdgov.governance.standing.sign_standing`, :func:`~sdgov.governance.standing.pin_standing`.
"""

from __future__ import annotations

import argparse
import functools

from sdgov.base.errors import SdgovError
from sdgov.commands._common import Parents, command, emit, site_of


def cmd_approvers(args: argparse.Namespace) -> int:
    """``commit``: a controller signs the controller files' new hashes into the log (approvers, budgets, policy)."""
    from sdgov.governance.controller import commit

    events = commit(site_of(args).registry, args.who, args.key)
    lines = [
        f"{e.event}: {e.artifacts['file']} {e.artifacts['sha256'][:12] or 'removed'} signed by {e.actor}"
        for e in events
    ]
    emit(
        args,
        {"committed": [e.model_dump() for e in events]},
        "\n".join(lines) or "nothing to commit: every controller file is as last signed",
    )
    return 0


def cmd_approvals(args: argparse.Namespace) -> int:
    """``sign``: a person named in a standing approval signs it for this registry (appended to the file). ``pin``:
    the controller pins it to the spec's agreement, the data (by its keyed commitment) and a lapse date."""
    from sdgov.governance.standing import pin_standing, sign_standing

    reg = site_of(args).registry
    reg.require_existing()
    if args.action == "pin":
        pinned = pin_standing(reg, args.file, args.spec, args.data, args.valid_until)
        emit(
            args,
            pinned.shown(),
            f"pinned {args.file}: agreement {pinned.agreement_sha256}, data {pinned.data_sha256_hmac} "
            f"({pinned.data_file.name}), valid until {pinned.valid_until}; every person it names signs it again "
            "(sdgov approvals sign)",
        )
        return 0
    if not (args.who and args.key):
        raise SdgovError("signing needs who signs and their key", "--as/--key", "pass --as NAME --key KEY")
    token = sign_standing(args.file, reg, args.who, args.key)
    emit(args, {"file": str(args.file), "signer": args.who, "token": token}, f"signed {args.file} as {args.who}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``approvers`` and ``approvals``."""
    add = functools.partial(command, subparsers, parents)
    c = add("approvers", cmd_approvers, "the controller's files: sign their new hashes into the log", [parents.root])
    c.add_argument("action", choices=["commit"])
    c.add_argument("--as", dest="who", required=True, help="a data controller (of the approvers registry in force)")
    c.add_argument("--key", required=True, help="that controller's private key")

    sa = add(
        "approvals",
        cmd_approvals,
        "standing approvals: sign one for this registry (appended to the file)",
        [parents.root],
    )
    sa.add_argument("action", choices=["sign", "pin"])
    sa.add_argument("file", help="the standing approval (approvals.yaml)")
    sa.add_argument("--as", dest="who", help="sign: a person it names, as in the approvers registry")
    sa.add_argument("--key", help="sign: that person's private key")
    sa.add_argument("--spec", help="pin: the spec whose agreement it covers (its data unless --data)")
    sa.add_argument("--data", help="pin: the data file it covers (default: the spec's)")
    sa.add_argument("--valid-until", help="pin: the last day a release may use it (YYYY-MM-DD)")
