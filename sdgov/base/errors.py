"""One error type for everything a user can get wrong.

Every refusal says *what* is wrong, *where* (file, column, marginal...) and *how to fix it*, so that the CLI
can print exactly one line and exit non-zero. Nothing is written before inputs are validated.
"""

from __future__ import annotations

MAX_LINE = 300
"""The longest error line the CLI prints, ``sdgov: error: `` included: a value pasted from a 200k-column header
or a 100 MB YAML scalar must not become a 'one-line' error of 189,114 characters."""
PREFIX = "sdgov: error: "


def shorten(text: str, limit: int, head: float = 0.75) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis inside: ``head`` is the share kept from
    the start (a message's start says the most; a path's end, its file name, does: pass a small ``head``)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    if limit < 8:
        return text[: max(limit - 1, 0)] + "…"
    keep = int((limit - 1) * head)
    return text[:keep] + "…" + text[len(text) - (limit - 1 - keep) :]


class SdgovError(Exception):
    """A user-facing error: one line of what/where/fix."""

    logged: bool = False
    """True where the registry's log already records this ending (a refused budget, a blocked release), so that a
    flow does not log it a second time as ``run_failed``."""

    def __init__(self, what: str, where: str = "", fix: str = "") -> None:
        self.what, self.where, self.fix = what, where, fix
        # str(exc) is the whole line (logs, tests); the CLI prints one_line(), bounded to MAX_LINE
        super().__init__(_join(*(" ".join(x.split()) for x in (where, what, fix))))

    def one_line(self) -> str:
        """what/where/fix on one line that fits :data:`MAX_LINE` with the CLI's prefix. When it is too long, the
        *where* (usually a path) keeps up to 80 characters (its end: the file name), then whichever of the *fix*
        and the *what* fits whole beside at least 60 characters of the other stays whole (the fix first: it is
        what the user acts on), else they share; each is cut inside, keeping both ends."""
        where, what, fix = (" ".join(x.split()) for x in (self.where, self.what, self.fix))
        line = _join(where, what, fix)
        room = MAX_LINE - len(PREFIX)
        if len(line) <= room:
            return line
        avail = room - len(_join(where and "w", "", fix and "f")) + int(bool(where)) + int(bool(fix))
        where_len = min(len(where), 80)  # a path: its end (the file name) is kept
        rest = avail - where_len
        if len(fix) <= rest - 60:  # the fix whole, the what the rest (at least 60)
            fix_len = len(fix)
        elif len(what) <= rest - 60:  # the what whole, the fix the rest
            fix_len = rest - len(what)
        else:
            fix_len = rest // 2
        what_len = min(len(what), rest - fix_len)
        where_len = min(len(where), avail - fix_len - what_len)  # room a short *what* left over
        return _join(shorten(where, where_len, head=0.3), shorten(what, what_len), shorten(fix, fix_len))


def _join(where: str, what: str, fix: str) -> str:
    line = f"{where}: {what}" if where else what
    return f"{line} — fix: {fix}" if fix else line


class PreflightError(SdgovError):
    """Several problems found before the first draw; the CLI prints one line for each."""

    def __init__(self, problems: list[SdgovError]) -> None:
        self.problems = problems
        first = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        super().__init__(first.what + more, first.where, first.fix)


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
        """What the CLI prints: the error shortened to 160 characters, presented as a bug to report."""
        text = shorten(str(self), 160)
        return f"internal error (a bug in sdgov, please report it with the command you ran): {text}"


class PolicyError(SdgovError):
    """A release the data controller's policy (``policy.yaml``) does not allow, or a registry without one."""


class DiskFull(SdgovError):
    """The disk holding a file sdgov writes is full (or the user's quota is spent): one line naming the path."""


_FULL_ERRNOS = {28, 122}  # ENOSPC, EDQUOT (Linux)
_FULL_WORDS = ("No space left on device", "Disk quota exceeded")


def disk_full(exc: BaseException, where: str = "") -> DiskFull | None:
    """``exc`` (or an exception it was raised from) as a :class:`DiskFull` naming the file it failed on — the
    error's own file name, else ``where`` — or None when it is not about a full disk. Parquet writers and engines
    say it in their own exception types, so their message counts too."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        errno = getattr(e, "errno", None)
        if errno in _FULL_ERRNOS or any(w in str(e) for w in _FULL_WORDS):
            return full_disk_at(getattr(e, "filename", None) or where)
        e = e.__cause__ or e.__context__
    return None


def full_disk_at(path: object) -> DiskFull:
    """The one line for a full disk (or spent quota) at ``path``."""
    return DiskFull(
        "no space left on the device (the disk is full)",
        str(path or "the registry's disk"),
        "free space there, then run it again: what was drawn is kept and never drawn twice",
    )
