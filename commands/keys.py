"""``sdgov keygen``: an Ed25519 key pair for a person who signs (:func:`sdgov.identity.keys.keygen`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sdgov.commands._common import Parents, command, emit


def cmd_keygen(args: argparse.Namespace) -> int:
    """Write a new Ed25519 private key (mode 600; an existing file is refused, exit 2) and print its ``public_key``
    line; exit 0."""
    from sdgov.identity.keys import keygen

    pub = keygen(args.out)
    emit(
        args,
        {"private_key": str(Path(args.out).resolve()), "public_key": pub},
        f'private key: {args.out} (keep it; mode 600)\nadd to approvers.yaml:  public_key: "{pub}"',
    )
    return 0


HELP = "make an Ed25519 key pair: writes the private key, prints the public_key line"


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``keygen``."""
    k = command(subparsers, parents, "keygen", cmd_keygen, HELP)
    k.add_argument("--out", required=True, help="where to write the private key (PEM, mode 600)")
