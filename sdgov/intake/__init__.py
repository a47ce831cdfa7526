"""The checks before the first draw: the inputs read once, and the pre-flight that refuses a run which
could not finish.

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "CheckedProposal": "inputs",
    "check_governed_proposal": "inputs",
    "check_inputs": "inputs",
    "check_proposal": "inputs",
    "check_release_inputs": "inputs",
    "check_spec_and_data": "inputs",
    "ReleaseProof": "prove",
    "SpecValidated": "inputs",
    "prove_release": "prove",
    "run_preflight": "preflight",
    "validate_spec": "inputs",
    "validated_data": "inputs",
}
__all__ = [
    "CheckedProposal",
    "ReleaseProof",
    "SpecValidated",
    "check_governed_proposal",
    "check_inputs",
    "check_proposal",
    "check_release_inputs",
    "check_spec_and_data",
    "prove_release",
    "run_preflight",
    "validate_spec",
    "validated_data",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
