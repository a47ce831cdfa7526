"""Prefect plumbing, not flows: what the flows and the commands need to reach the orchestrator.

The Prefect server's REST calls made without importing Prefect (:mod:`.prefect_api`), the temporary server tied to
the life of the ``sdgov`` process (:mod:`.temporary_server`), a team server's PostgreSQL database
(:mod:`.server_database`), the run-input key a paused run's pending decision is posted under (:mod:`.pending`),
the log filter that keeps a refused run to one line (:mod:`.refusals`), and the runs the controller's worker holds
(:mod:`.worker_runs`). It imports only the core: the flows (``sdgov.flows``) and the commands (``sdgov.commands``)
import it, never the other way round.
"""
