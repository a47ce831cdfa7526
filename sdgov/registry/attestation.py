"""A release's provenance as an in-toto attestation: a Statement (v1) with a SLSA Provenance (v1) predicate.

Written into every release directory as ``provenance.intoto.json``, so that supply-chain tooling that reads in-toto
statements (e.g. SLSA verifiers, Sigstore's ``cosign verify-attestation`` once wrapped in a DSSE envelope) can see
*what* was released (every file, by sha256), *from what* (the signed agreement, the approved candidate) and *where
it sits in the registry log*. It is not signed on its own: it is listed, by sha256, in the release's manifest,
whose hash is in the ``released`` event, which the registry key signs (:mod:`sdgov.registry.log`).
See https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md and https://slsa.dev/provenance/v1.
"""

from __future__ import annotations

from typing import Any

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "urn:sdgov:governed-release:v1"
FILE = "provenance.intoto.json"


def release_statement(
    release_id: str,
    files: dict[str, str],
    manifest_extra: dict[str, Any],
    log_head: dict[str, Any],
    run_id: str,
    approver: str,
) -> dict[str, Any]:
    """``files``: released name → sha256. ``manifest_extra``: what the publisher put in the manifest."""
    agreement = manifest_extra.get("agreement_sha256", "")
    candidate = manifest_extra.get("candidate_sha256", "")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": sha}} for name, sha in sorted(files.items())],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {"release_id": release_id, "agreement_sha256": agreement},
                "internalParameters": {"registry_log_head": log_head},
                "resolvedDependencies": [
                    *([{"name": "agreement (Φ)", "digest": {"sha256": agreement}}] if agreement else []),
                    *([{"name": "approved candidate", "digest": {"sha256": candidate}}] if candidate else []),
                ],
            },
            "runDetails": {
                "builder": {"id": f"urn:sdgov:release-flow:{manifest_extra.get('task_version', '')}"},
                "metadata": {"invocationId": run_id, "finishedOn": manifest_extra.get("created", "")},
                "byproducts": [{"name": "approved by", "annotations": {"approver": approver}}],
            },
        },
    }
