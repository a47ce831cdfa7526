"""The artifact store's code: the hash-chained, signed event log, the registry key, signed checkpoints,
the in-toto attestation and the audit trail rendered from the log. (The repository's ``registry/`` folder is
the data it writes.)

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "Committer": "commitment",
    "Event": "log",
    "KeyStore": "key",
    "LogBroken": "log",
    "POLICY_FILE": "log",
    "ROTATE": "commitment",
    "Registry": "log",
    "SECRET_EVENT": "commitment",
    "SIGNED_AT": "trail",
    "Signer": "key",
    "build_trail": "trail",
    "load_or_create_secret": "commitment",
    "load_secret": "commitment",
    "log_head": "log",
    "logged_secret": "commitment",
    "parse_registry_public_key": "key",
    "policy_problems": "log",
    "private_umask": "access",
    "registry_committer": "commitment",
    "render_text": "trail",
    "render_trail_html": "trail",
    "secret_id": "commitment",
    "secret_path": "commitment",
    "secret_problem": "commitment",
    "share": "access",
    "signature_ok": "key",
    "to_prov": "trail",
    "write": "trail",
}
__all__ = [
    "Committer",
    "Event",
    "KeyStore",
    "LogBroken",
    "POLICY_FILE",
    "ROTATE",
    "Registry",
    "SECRET_EVENT",
    "SIGNED_AT",
    "Signer",
    "build_trail",
    "load_or_create_secret",
    "load_secret",
    "log_head",
    "logged_secret",
    "parse_registry_public_key",
    "policy_problems",
    "private_umask",
    "registry_committer",
    "render_text",
    "render_trail_html",
    "secret_id",
    "secret_path",
    "secret_problem",
    "share",
    "signature_ok",
    "to_prov",
    "write",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
