"""``sdgov registry prove``: which data a release came from, shown to an auditor — the file hashed as sdgov hashed
it (and, given the schema, its content fingerprint), and the card's keyed commitments opened with the controller's
secret. Here, in the room that reads the confidential file, because the fingerprint is the records as validated."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sdgov.base.errors import SdgovError
from sdgov.base.hashing import md5_file, sha256_file
from sdgov.registry import commitment
from sdgov.registry.log import Registry


@dataclass(frozen=True)
class ReleaseProof:
    """Each commitment of the release's card and whether it opens to the file (``matches``), or, when the
    commitment secret in force was replaced since the release, why nothing can be said (``secret_replaced``)."""

    matches: dict[str, bool]
    secret_replaced: commitment.SecretReplaced | None = None

    @property
    def proved(self) -> bool:
        """Every commitment opens to this file."""
        return self.secret_replaced is None and all(self.matches.values())


def prove_release(reg: Registry, release_id: str | None, data: str | None, schema: str | None = None) -> ReleaseProof:
    """Open release ``release_id``'s keyed commitments against the file ``data`` (its sha256 and DVC md5; with
    ``schema``, its content fingerprint too: the same records in any file layout). No such release, no file, or a
    card that is not one is one line."""
    if not release_id or not data:
        raise SdgovError(
            "prove needs a release and the data", "sdgov registry prove", "give a RELEASE_ID and --data FILE"
        )
    card_path = reg.release_dir(release_id) / "card.json"
    if release_id not in {r["release_id"] for r in reg.releases()} or not card_path.is_file():
        raise SdgovError("no such release", release_id, "see 'sdgov registry list'")
    path = Path(data)
    if not path.is_file():
        raise SdgovError("the data file is not there", str(path), "give the confidential file with --data")
    values = {"sha256": sha256_file(path), "dvc_md5": md5_file(path)}
    if schema:  # the content fingerprint: the same records in any file layout (CRLF, column order, BOM)
        from sdgov.data.schema import load_schema
        from sdgov.intake.inputs import validated_data

        values["fingerprint"] = validated_data(path, load_schema(schema)).fingerprint
    try:
        dataset = json.loads(card_path.read_text())["dataset"]
    except (ValueError, KeyError, TypeError):
        raise SdgovError("the release's card.json is not a card", str(card_path), "sdgov registry verify") from None
    released_at = next(e.seq for e in reg.events() if e.event == "released" and e.release_id == release_id)
    try:
        return ReleaseProof(commitment.prove(reg, dataset, values, released_at))
    except commitment.SecretReplaced as exc:  # says nothing about the data: not 'does not commit to this data'
        return ReleaseProof({}, exc)
