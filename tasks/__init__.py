"""One module per pipeline stage. Each is a Prefect task with an explicit ``version=``: artifacts in, artifacts
out, and a :class:`~sdgov.contracts.StageRecord` of both (sha256) for the provenance trail.

The undecorated function is ``task.fn``; the DVC stages (``sdgov stage ...``) call exactly that, so the flow
and ``dvc repro`` run the same code.
"""
