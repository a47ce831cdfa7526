"""The controller's site: everything a process does its work against, resolved once where it starts.

The controller's state is one thing: a registry (its directory, signed log and releases), the keys and the
commitment secret kept outside it (:class:`~sdgov.registry.key.KeyStore`), the budget authority that every one of
the controller's registries charges, the release policy in the registry, and the readers' group that may read the
registry's public parts. A process builds one :class:`Site` from its settings (:mod:`sdgov.base.settings`: the
``SDGOV_*`` environment and ``--root``) at its entry point — the CLI's command, the worker, a flow run — and passes
it down typed: stages take a site, not a path, and nothing below reads the environment for where the state is.

A run's parameters never redirect the site (Prefect carries them and anyone with its login can write them): a flow
that is given a registry root resolves it against the process's own settings, and the worker's flows take the
registry from the worker's configuration.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from sdgov.base.settings import Settings, load_settings
from sdgov.registry.access import private_umask
from sdgov.registry.key import KeyStore
from sdgov.registry.log import Registry

if TYPE_CHECKING:
    from sdgov.governance.authority_model import Authority
    from sdgov.governance.policy import Policy
    from sdgov.registry.commitment import Committer


class Site:
    """One controller's state, as one process sees it: :attr:`registry`, :attr:`keys`, :attr:`authority`,
    :meth:`policy`, :meth:`committer` and the settings it was resolved from."""

    def __init__(self, registry: Registry, authority_location: str, settings: Settings) -> None:
        self.registry = registry
        self.authority_location = authority_location
        self.settings = settings

    @classmethod
    def resolve(cls, root: str | Path | None = None, settings: Settings | None = None) -> Site:
        """The site of registry ``root`` (``--root``; else ``$SDGOV_REGISTRY``, else ``./registry``) under
        ``settings`` (the process's, read now, when none are given). The process creates files owner-only from
        here on (umask 077, :func:`sdgov.registry.access.private_umask`): a process that resolves a site is the
        controller's or works on the controller's behalf."""
        settings = settings or load_settings()
        private_umask()  # the controller's state is owner-only whatever umask the process started with
        registry = Registry(settings.registry_root(root), KeyStore.from_settings(settings))
        return cls(registry, settings.authority(), settings)

    def at(self, root: str | Path) -> Site:
        """The same controller's site for another of its registries (the same keys' location and authority)."""
        return Site(Registry(root, self.keys), self.authority_location, self.settings)

    def __repr__(self) -> str:
        return f"Site(registry={str(self.root)!r}, authority={self.authority_location!r})"

    @property
    def root(self) -> Path:
        """The registry's directory."""
        return self.registry.root

    @property
    def keys(self) -> KeyStore:
        """Where the registry's signing key and commitment secret are kept."""
        return self.registry.keys

    @functools.cached_property
    def authority(self) -> Authority:
        """The controller's budget authority, opened once (nothing is read or created until it is used)."""
        from sdgov.governance.authority import open_authority

        return open_authority(self.authority_location)

    def policy(self) -> tuple[Policy, str]:
        """The controller's release policy in the registry and its sha256 (one line when there is none)."""
        from sdgov.governance.policy import load_policy

        return load_policy(self.root)

    def committer(self, create: bool = True) -> Committer:
        """Keyed commitments under the registry's commitment secret (:func:`sdgov.registry.commitment.
        registry_committer`)."""
        from sdgov.registry.commitment import registry_committer

        return registry_committer(self.registry, create=create)
