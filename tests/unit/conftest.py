"""Unit tests are pure and fast: no Prefect server, DVC, browser or census file.

Prefect would silently start an ephemeral server (~20 s) for a flow or task run with no API configured; here that
is switched off, so a unit test that reaches for one fails at once instead of becoming slow.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from sdgov.registry.log import Registry


@pytest.fixture(scope="package", autouse=True)
def no_prefect_server():
    """Also configures Prefect's logging now, before any test's capsys, so its handlers never hold a closed stream."""
    import prefect.main  # noqa: F401  (sets up Prefect's logging on import)
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED, temporary_settings

    with temporary_settings(updates={PREFECT_SERVER_EPHEMERAL_ENABLED: False}, restore_defaults={PREFECT_API_URL}):
        yield


@pytest.fixture
def governed(tmp_path: Path) -> tuple[Registry, dict[str, Path]]:
    """A registry whose approvers (and a second controller, Vic) Carl adopted, and their keys (test_decisions,
    test_worker_survival)."""
    from sdgov.registry.log import Registry
    from tests.governance import PEOPLE, controller_registry

    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys", people=[*PEOPLE, ("Vic Controller", "controller")])
    return Registry(root), keys
