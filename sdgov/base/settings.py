"""The one place sdgov reads its ``SDGOV_*`` environment: where the controller's state lives and how a process runs.

A process reads its settings once, where it starts (the CLI's ``main``, the worker, a flow run the worker
starts), and builds the controller's site from them (:class:`sdgov.governance.site.Site`: the registry, the budget
authority, the keys, the commitment secret, the policy and the readers' group), which it passes down typed. No
other module reads an ``SDGOV_*`` variable (``tests/unit/base/test_settings.py`` checks the source).

The locations are read from the environment (or the person's flags), never from the registry's own files: a
registry that could name its own key, secret or budget authority could name an attacker's.

============================  =====================================================================================
variable                      what it names (default)
============================  =====================================================================================
``SDGOV_REGISTRY``            the registry root (``./registry``); ``--root`` wins
``SDGOV_KEY_DIR``             the directory of registry signing keys (``$XDG_CONFIG_HOME/sdgov/keys``)
``SDGOV_REGISTRY_KEY``        one registry's signing key file (else ``<key dir>/<registry id>.pem``)
``SDGOV_COMMITMENT_SECRET``   the commitment secret's file (else beside the signing key, ``….commitment``)
``SDGOV_AUTHORITY``           the budget authority: a SQLite file or a ``postgresql://`` URL
                              (``$XDG_DATA_HOME/sdgov/authority.sqlite``)
``SDGOV_JAX_CACHE_DIR``       compiled programs' cache (``$XDG_CACHE_HOME/sdgov/jax``; empty: none kept)
``SDGOV_DASK_SCHEDULER``      a Dask scheduler's address (none: a local cluster)
``SDGOV_SERVER_DATABASE``     ``sdgov server start``'s database URL (none: Prefect's SQLite)
``SDGOV_WORKER_CONFIG``       set by ``sdgov worker start`` for the runs it executes: its ``worker.yaml``
``SDGOV_WORKER_PID``          set beside it: the worker's process, which the runs it executes die with
``SDGOV_RUNS_URL``            the Prefect UI's runs page, linked from the draft card's summary
============================  =====================================================================================
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "SDGOV_"
WORKER_CONFIG = f"{PREFIX}WORKER_CONFIG"  # what `sdgov worker start` exports to the runs it executes
WORKER_PID = f"{PREFIX}WORKER_PID"  # and its own process id beside it
AUTHORITY = f"{PREFIX}AUTHORITY"  # the names the one-line fixes quote
KEY_DIR = f"{PREFIX}KEY_DIR"
REGISTRY_KEY = f"{PREFIX}REGISTRY_KEY"
COMMITMENT_SECRET = f"{PREFIX}COMMITMENT_SECRET"
REGISTRY = f"{PREFIX}REGISTRY"
DASK_SCHEDULER = f"{PREFIX}DASK_SCHEDULER"
SERVER_DATABASE = f"{PREFIX}SERVER_DATABASE"


class Settings(BaseSettings):
    """The ``SDGOV_*`` variables, as strings (an empty one counts as unset, except the JAX cache's, where empty
    means "keep nothing"); the methods give each location with its default."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, case_sensitive=True, frozen=True, extra="ignore")

    REGISTRY: str | None = None
    KEY_DIR: str | None = None
    REGISTRY_KEY: str | None = None
    COMMITMENT_SECRET: str | None = None
    AUTHORITY: str | None = None
    JAX_CACHE_DIR: str | None = None
    DASK_SCHEDULER: str = ""
    SERVER_DATABASE: str | None = None
    WORKER_CONFIG: str | None = None
    WORKER_PID: str = ""
    RUNS_URL: str = ""

    # ------------------------------------------------------------------ locations with their defaults
    def registry_root(self, flag: str | Path | None = None) -> Path:
        """``--root`` when given, else ``$SDGOV_REGISTRY``, else ``./registry``."""
        return Path(flag) if flag not in (None, "") else Path(self.REGISTRY or "registry")

    def pinned_registry(self, flag: str | None = None) -> str | None:
        """The registry a person named (``--root`` or ``$SDGOV_REGISTRY``); None when neither does."""
        return flag or self.REGISTRY or None

    def key_dir(self) -> Path:
        """The directory of registry signing keys (and, beside each, its commitment secret)."""
        return Path(self.KEY_DIR) if self.KEY_DIR else _xdg("XDG_CONFIG_HOME", ".config") / "sdgov" / "keys"

    def registry_key(self) -> Path | None:
        """One registry's signing key file, when named."""
        return Path(self.REGISTRY_KEY) if self.REGISTRY_KEY else None

    def commitment_secret(self) -> Path | None:
        """One registry's commitment secret file, when named."""
        return Path(self.COMMITMENT_SECRET) if self.COMMITMENT_SECRET else None

    def authority(self) -> str:
        """The budget authority's location: a file path (SQLite) or a ``postgresql://`` URL."""
        return self.AUTHORITY or str(_xdg("XDG_DATA_HOME", ".local/share") / "sdgov" / "authority.sqlite")

    def authority_named(self) -> bool:
        """Whether the authority was named (``$SDGOV_AUTHORITY``) rather than this user's default."""
        return bool(self.AUTHORITY)

    def jax_cache_dir(self) -> str | None:
        """Where compiled programs are kept: ``$SDGOV_JAX_CACHE_DIR`` (empty: nowhere), else the user's cache."""
        if self.JAX_CACHE_DIR is not None:
            return self.JAX_CACHE_DIR.strip() or None
        return str(_xdg("XDG_CACHE_HOME", ".cache") / "sdgov" / "jax")

    def dask_scheduler(self) -> str:
        """A Dask scheduler's address ('': a local cluster)."""
        return self.DASK_SCHEDULER.strip()

    def server_database(self) -> str | None:
        """The Prefect server's database URL (None: its SQLite file)."""
        return self.SERVER_DATABASE or None

    def worker_config(self) -> str | None:
        """The configuration of the worker this process runs under (None outside one)."""
        return self.WORKER_CONFIG or None

    def worker_pid(self) -> int | None:
        """The process id of the worker this process runs under (None outside a controller's worker)."""
        return int(self.WORKER_PID) if self.WORKER_PID.strip().isdigit() else None

    def runs_url(self) -> str:
        """The Prefect UI's runs page ('': none linked)."""
        return self.RUNS_URL.rstrip("/")


def _xdg(variable: str, fallback: str) -> Path:
    return Path(os.environ.get(variable) or Path.home() / fallback)


def load_settings() -> Settings:
    """The settings as the environment states them now: called once where a process starts."""
    return Settings()


def export_worker_config(path: Path) -> None:
    """``sdgov worker start``: the runs this process executes (Prefect starts them as child processes) inherit the
    worker's configuration and process id through the environment, and read them back with their own settings."""
    os.environ[WORKER_CONFIG] = str(path)
    os.environ[WORKER_PID] = str(os.getpid())
