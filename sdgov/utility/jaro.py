"""Compare two orderings of the same names (e.g. features by importance) with the Jaro similarity.

Each name becomes one symbol, so an ordering is a string; ``jellyfish.jaro_similarity`` then scores matching
symbols and transpositions: 1 for the same order, lower as items move. (Houssiau et al. 2022, App. 3.)
"""

from __future__ import annotations

import jellyfish


def ordering_similarity(a: list[str], b: list[str]) -> float:
    """Jaro similarity of two orderings of names, one symbol per name: 1 for the same order (or two empty ones), lower
    as names move or are missing."""
    alphabet = {name: chr(0x4E00 + i) for i, name in enumerate(dict.fromkeys(list(a) + list(b)))}
    sa, sb = "".join(alphabet[x] for x in a), "".join(alphabet[x] for x in b)
    if not sa and not sb:
        return 1.0
    return float(jellyfish.jaro_similarity(sa, sb))
