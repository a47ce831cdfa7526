"""The part of OpenDP sdgov calls — measurements, combinators, domains, metrics, measures, the parameter searches —
with its contrib features on, for ``import sdgov.base.opendp_lite as dp`` where ``import opendp.prelude as dp`` was.

``opendp.prelude`` also imports every extra OpenDP ships (its scikit-learn, polars, ibis and mbi adapters), which
loads scikit-learn: 2 CPU s of imports in each process that draws noise or maps a privacy budget (``sdgov propose``,
``validate``, ``release``), for functions sdgov never calls. The names here are OpenDP's own objects, not copies.
"""

import opendp.combinators as c
import opendp.measurements as m
from opendp.domains import atom_domain, vector_domain
from opendp.measures import zero_concentrated_divergence
from opendp.metrics import l2_distance, linf_distance
from opendp.mod import Measurement, binary_search, binary_search_param, enable_features

enable_features("contrib")

__all__ = [
    "Measurement",
    "atom_domain",
    "binary_search",
    "binary_search_param",
    "c",
    "enable_features",
    "l2_distance",
    "linf_distance",
    "m",
    "vector_domain",
    "zero_concentrated_divergence",
]
