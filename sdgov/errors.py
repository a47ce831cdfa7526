"""One error type for everything a user can get wrong.

Every refusal says *what* is wrong, *where* (file, column, marginal...) and *how to fix it*, so that the CLI
can print exactly one line and exit non-zero. Nothing is written before inputs are validated.
"""

from __future__ import annotations


class SdgovError(Exception):
    """A user-facing error: one line of what/where/fix."""

    def __init__(self, what: str, where: str = "", fix: str = "") -> None:
        self.what, self.where, self.fix = what, where, fix
        super().__init__(self.one_line())

    def one_line(self) -> str:
        parts = [f"{self.where}: {self.what}" if self.where else self.what]
        if self.fix:
            parts.append(f"fix: {self.fix}")
        return " — ".join(parts).replace("\n", " ")


class SchemaError(SdgovError):
    """The schema file itself is malformed."""


class DataError(SdgovError):
    """The data does not fit the declared schema."""


class SpecError(SdgovError):
    """The release spec (the Φ agreement) is invalid."""


class RegistryError(SdgovError):
    """The registry refuses an operation (immutability, missing release...)."""


class BudgetError(SdgovError):
    """The privacy budget does not allow the request."""


class InternalError(Exception):
    """A state sdgov's own code should never reach: a bug, not bad input.

    Deliberately not an :class:`SdgovError`: the CLI does not present it as something the user can fix, but says
    it is a bug to report, and exits 1 (a user error exits 2).
    """

    def one_line(self) -> str:
        text = " ".join(str(self).split())
        return f"internal error (a bug in sdgov, please report it with the command you ran): {text}"


class PolicyError(SdgovError):
    """A release the data controller's policy (``policy.yaml``) does not allow, or a registry without one."""
