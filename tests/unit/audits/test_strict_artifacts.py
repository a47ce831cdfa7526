"""The models read back from artifacts refuse unknown keys: a mis-keyed artifact is an error, not silently read."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from sdgov.audits.privacy.attribute import AttributeResult
from sdgov.audits.privacy.base import Target
from sdgov.audits.privacy.canary import CanaryResult, CanaryRun
from sdgov.audits.privacy.disclosure import DCR, DisclosureResult, SmallCells, UniqueMatches
from sdgov.audits.privacy.memorisation import MemorisationResult
from sdgov.audits.privacy.mia import FeatureScore, TargetRisk
from sdgov.audits.privacy.one_run import Guess, OneRunResult
from sdgov.audits.privacy.policy import PolicyCheck
from sdgov.audits.privacy.run import PrivacyAuditResult
from sdgov.audits.protocol import AuditReport, Check
from sdgov.budget.accounting import MarginalBudget, PrivacyPlan
from sdgov.data.psi import Measurement, MeasurementSet
from sdgov.utility.summary import MarginalError, UtilitySummary

ARTIFACT_MODELS: list[type[BaseModel]] = [
    MarginalBudget,
    PrivacyPlan,
    Check,
    AuditReport,
    Measurement,
    MeasurementSet,
    MarginalError,
    UtilitySummary,
    AttributeResult,
    Target,
    CanaryRun,
    CanaryResult,
    UniqueMatches,
    DCR,
    SmallCells,
    DisclosureResult,
    MemorisationResult,
    FeatureScore,
    TargetRisk,
    Guess,
    OneRunResult,
    PolicyCheck,
    PrivacyAuditResult,
]


@pytest.mark.parametrize("model", ARTIFACT_MODELS, ids=lambda m: m.__name__)
def test_reading_back_an_artifact_with_an_unknown_key_is_refused(model: type[BaseModel]) -> None:
    """Whatever else is missing, the unknown key is named as refused (``extra_forbidden``), from JSON as from a dict."""
    for read in (
        lambda: model.model_validate({"not_a_field": 1}),
        lambda: model.model_validate_json('{"not_a_field": 1}'),
    ):
        with pytest.raises(ValidationError) as refused:
            read()
        assert ("extra_forbidden", ("not_a_field",)) in [(e["type"], e["loc"]) for e in refused.value.errors()]
    assert model.model_config.get("frozen") is True


@pytest.mark.parametrize(
    "model, valid",
    [
        (Check, {"name": "n", "passed": True, "detail": "d"}),
        (AuditReport, {"verdict": "pass", "checks": [{"name": "n", "passed": True, "detail": "d"}], "not_run": []}),
        (Measurement, {"clique": ["a"], "shape": [2], "sigma": 1.0, "noisy_counts": [3, 4]}),
        (MarginalBudget, {"clique": ["a"], "weight": 1.0, "sigma": 1.0, "rho": 0.5}),
        (MarginalError, {"clique": ["a"], "in_phi": True, "tvd": 0.1, "rmse": 0.2, "cells": 2}),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)
def test_a_valid_artifact_reads_back_and_the_same_with_one_key_more_does_not(model, valid) -> None:
    json = model.model_validate(valid).model_dump_json()
    assert model.model_validate_json(json).model_dump_json() == json
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        model.model_validate_json(json[:-1] + ', "unknown": 0}')
