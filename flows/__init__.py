"""Composition of the stages into Prefect flows, the approval steps, and the ``sdgov`` command line."""
