"""Composition of the stages into Prefect flows, the approval steps, and the use cases that start or answer a run
(:mod:`.release_run`, :mod:`.proposals`, :mod:`.pauses`, :mod:`.dvc_stages`); the Prefect plumbing they share with
the commands is :mod:`.plumbing`. The ``sdgov`` command line is :mod:`sdgov.commands`."""
