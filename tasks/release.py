"""Stage 6 — release: build the generator card from the artifacts and publish one immutable release.

Runs only after a passing audit and a release sign-off bound to the candidate's hash
(:attr:`sdgov.reporting.publish.ReleaseCandidate.sha256`): :func:`sdgov.reporting.publish.check_releasable` refuses
anything
else. Where ``controller.yaml`` names a release channel, the new release is then published there
(:mod:`sdgov.channel.publish`).
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.channel.publish import publish_after_release
from sdgov.contracts import Agreed, ReleaseResult
from sdgov.governance.signoff import SignOff
from sdgov.governance.site import Site
from sdgov.reporting.publish import ReleaseCandidate, check_releasable, publish_release
from sdgov.tasks.common import logger, stage

VERSION = "1.1.0"


@task(name="release", version=VERSION, cache_policy=NO_CACHE)
def release(agreed: Agreed, candidate: ReleaseCandidate, signoffs: list[SignOff], site: Site) -> ReleaseResult:
    """Publish one immutable release of the candidate → ``ReleaseResult``.

    ``check_releasable`` refuses it unless the audit passed and the sign-offs are bound to the candidate's hash."""
    registry = site.registry
    check_releasable(registry, agreed, candidate, signoffs)
    with stage("release", VERSION, f"{site.root}/releases"):
        result = publish_release(registry, agreed, candidate, signoffs, task_version=VERSION)
    # the release channel, where the controller configured one: a failure there is one warning, the release stands
    # (the schema by its path: the channel checks it against the agreement's schema hash, and a schema file
    # changed since would be that one warning, not a failed release)
    publish_after_release(registry, result.release_id, Path(agreed.schema_file.path), logger().warning, logger().info)
    return result
