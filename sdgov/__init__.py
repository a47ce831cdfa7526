"""sdgov: governed, auditable synthetic-data releases.

The core library is pure: no Prefect import. Stages in ``tasks/`` wrap it, ``flows/`` composes them.
"""

__version__ = "0.1.0"
