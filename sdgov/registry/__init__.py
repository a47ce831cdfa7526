"""The artifact store's code: the hash-chained, signed event log, the registry key, signed checkpoints,
the in-toto attestation and the audit trail rendered from the log. (The repository's ``registry/`` folder is
the data it writes.)

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "Event": "log",
    "LogBroken": "log",
    "POLICY_FILE": "log",
    "Registry": "log",
    "SIGNED_AT": "trail",
    "build_trail": "trail",
    "dataset_index": "trail",
    "finished_runs": "trail",
    "log_head": "log",
    "policy_problems": "log",
    "registry_fingerprint": "key",
    "render_text": "trail",
    "render_trail_html": "trail",
    "to_prov": "trail",
    "write": "trail",
}
__all__ = [
    "Event",
    "LogBroken",
    "POLICY_FILE",
    "Registry",
    "SIGNED_AT",
    "build_trail",
    "dataset_index",
    "finished_runs",
    "log_head",
    "policy_problems",
    "registry_fingerprint",
    "render_text",
    "render_trail_html",
    "to_prov",
    "write",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
