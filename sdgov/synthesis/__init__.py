"""From noisy marginals to synthetic records: the generate step and split synthesis (one model per part).

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "generate_synthetic": "generate",
    "privacy_summary": "split",
    "split_graphs": "split",
}
__all__ = [
    "generate_synthetic",
    "privacy_summary",
    "split_graphs",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
