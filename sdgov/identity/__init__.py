"""Who signs: Ed25519 keys, the skeletons that stop look-alike names, and the signed statements every
party (proposer, reviewer, approver, controller) makes.

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "CommitStatement": "statements",
    "LifetimeStatement": "statements",
    "ProposalStatement": "statements",
    "SignOffStatement": "statements",
    "StandingStatement": "statements",
    "check_name": "names",
    "decode_public_key": "keys",
    "decode_statement": "statements",
    "encode_statement": "statements",
    "key_fingerprint": "keys",
    "keygen": "keys",
    "load_private_key": "keys",
    "parse_public_key": "keys",
    "public_line": "keys",
    "published_fingerprint": "keys",
    "same_person": "names",
    "signed_bytes": "statements",
    "skeleton": "names",
    "verifies": "keys",
}
__all__ = [
    "CommitStatement",
    "LifetimeStatement",
    "ProposalStatement",
    "SignOffStatement",
    "StandingStatement",
    "check_name",
    "decode_public_key",
    "decode_statement",
    "encode_statement",
    "key_fingerprint",
    "keygen",
    "load_private_key",
    "parse_public_key",
    "public_line",
    "published_fingerprint",
    "same_person",
    "signed_bytes",
    "skeleton",
    "verifies",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
