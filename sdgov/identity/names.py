"""People's names as identities: refuse invisible characters, compare by visual skeleton.

Separation of duties compares names ("the proposer cannot approve"), so two strings that *look* the same must
compare equal: ``Аda Analyst`` (Cyrillic А), ``Ａda Analyst`` (fullwidth) and ``Ada Analyst`` are one person.

:func:`skeleton` follows Unicode TR39 §4 (NFKC, then NFD, map every character to the prototype of its
confusable class, NFD again), then case-folds and collapses white space. The confusable classes come from the
Unicode ``confusables.txt`` data shipped by the maintained ``confusable-homoglyphs`` package; that data lists
every confusable pair in both directions without saying which side is the prototype, so each class's
prototype here is its ASCII member if it has one, else its lowest code point. Classes are the transitive closure
of the pairs, which is at least as strict as TR39 (it may merge two classes TR39 keeps apart, never split one).
Multi-character confusables (``rn`` for ``m``) are not folded.

:func:`check_name` refuses control, format (zero-width, bidi) and unassigned characters outright: a name with an
invisible character in it is a name crafted to fool a comparison or a reader.
"""

from __future__ import annotations

import unicodedata
from functools import cache

from sdgov.base.errors import SpecError

# Unicode general categories no person's name contains: controls, format characters (U+200B zero width space,
# U+200D joiner, U+202E right-to-left override, U+FEFF …), surrogates, private use, unassigned, line/paragraph
# separators.
_REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
_LRM = "\u200e"  # the confusables data wraps right-to-left entries in LEFT-TO-RIGHT MARKs for display


def refused_characters(name: str) -> list[str]:
    """The characters of ``name`` that no name may contain, as ``U+XXXX NAME`` strings."""
    return [
        f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}"
        for c in dict.fromkeys(name)
        if unicodedata.category(c) in _REFUSED_CATEGORIES
    ]


def check_name(name: str, where: str) -> str:
    """``name`` NFKC-normalised with white space collapsed, or :class:`SpecError` if it hides characters."""
    bad = refused_characters(name)
    if bad:
        raise SpecError(
            f"the name {name!r} contains invisible or control characters ({', '.join(bad)})",
            where,
            "type the name with visible characters only",
        )
    return " ".join(unicodedata.normalize("NFKC", name).split())


@cache
def _prototypes() -> dict[str, str]:
    """Every character of a confusable class → the class's prototype (union–find over the Unicode pairs)."""
    from confusable_homoglyphs.confusables import confusables_data

    parent: dict[str, str] = {}

    def find(c: str) -> str:
        while parent.get(c, c) != c:
            c = parent[c]
        return c

    def rank(c: str) -> tuple[bool, int]:  # ASCII first, then the lowest code point
        return (not c.isascii(), ord(c))

    for key, homoglyphs in confusables_data.items():
        a = key.replace(_LRM, "")
        for h in homoglyphs:
            b = h["c"].replace(_LRM, "")
            if len(a) == 1 and len(b) == 1:
                ra, rb = find(a), find(b)
                if ra != rb:
                    first, second = sorted((ra, rb), key=rank)
                    parent[second] = first
    return {c: find(c) for c in parent}


def _map(s: str) -> str:
    table = _prototypes()
    return unicodedata.normalize("NFD", "".join(table.get(c, c) for c in unicodedata.normalize("NFD", s)))


def skeleton(name: str) -> str:
    """What a name looks like: equal skeletons ⇔ a reader could take one name for the other."""
    s = _map(unicodedata.normalize("NFKC", "".join(c for c in name if unicodedata.category(c) != "Cf")))
    return " ".join(_map(s.casefold()).split())


def same_person(a: str, b: str) -> bool:
    """Two names that look alike are the same person (so a look-alike cannot approve their own proposal)."""
    return skeleton(a) == skeleton(b)
