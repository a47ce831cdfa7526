"""Release audits: the checks that decide whether a synthetic release may be published.

``protocol``          what an audit check is (:class:`AuditCheck`), what it is given and what it returns
``registry``          :data:`AUDITS`, the ordered checks the audit stage runs; ``run`` runs them
``context``           the checks' :class:`AuditContext`, read from the earlier stages' contracts
``executor``          where independent trials run (serial, processes; the stage passes a Prefect one)
``checks``            the structural and provenance checks (what the generator was handed, fitted and wrote)
``decomposability``   the black-box test that the generator reads only Φ (Houssiau et al. 2022)
``privacy``           privacy-risk evidence: membership/attribute inference, a DP lower bound, record checks
``generators``        the honest and dishonest generators the audits fit (controls included), speaking
                      ``generator_protocol``
"""
