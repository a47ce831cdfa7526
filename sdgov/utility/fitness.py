"""What the data is and is not fit for: a plain statement derived from the task results and the baselines.

Rules (stated in the report so a reader can check them):

* table / gap tasks: the synthetic error is placed between the two baselines,
  ``position = (independent − synthetic) / (independent − bootstrap)`` (1 = as good as a real resample,
  0 = no better than independent columns). *Fit* only if the error is at most 1.25 × the real bootstrap's (a
  real resample's error is what "as good as real" means, so "fit" claims no more than that); *partly* if
  position ≥ 0.5; otherwise *not fit*. A gap is fit only if, besides, its sign is right in at least 95% of the
  cells (or in as many as the bootstrap's, if fewer). Without baselines: TVD ≤ 0.05 fit, ≤ 0.15 partly (tables),
  and the gap error relative to the size of the real gaps (≤ 0.2 fit, ≤ 0.5 partly).
* regression: prediction is fit if train-on-synthetic accuracy is within 0.01 of train-on-real; coefficient
  inference is fit if the mean confidence-interval overlap is ≥ 0.5 (partly ≥ 0.3).
* classifier: prediction is fit if the synthetic-trained model is within 0.02 of the real-trained one on real
  holdout records; explaining (which features matter) is fit if the importance orderings have Jaro ≥ 0.9.
* generic: pairs of attributes outside Φ whose association is off by more than 0.1 (B < 0.95) are named as not
  fit; a median SPECKS above 0.3 means records are easy to tell from real ones.
"""

from __future__ import annotations

import numpy as np

FIT_RATIO = 1.25
"""Fit only within this multiple of a real resample's (the bootstrap's) error."""
SIGN_AGREEMENT = 0.95
"""A gap is fit only if its sign is right in this share of cells (or the bootstrap's share, if lower)."""
B_RULE = 0.95
"""Pairs outside Φ with association preserved below this (B = 1 − |R − S| / 2) are named as not fit."""


def _position(syn: float, ind: float | None, boot: float | None) -> float | None:
    if ind is None or boot is None or ind <= boot:
        return None
    return float((ind - syn) / (ind - boot))


def _grade(
    syn: float, ind: float | None, boot: float | None, fallback: tuple[float, float], fallback_value: float
) -> tuple[str, float | None]:
    pos = _position(syn, ind, boot)
    if pos is not None:
        if syn <= FIT_RATIO * boot:  # type: ignore[operator]
            return "fit", pos
        return ("partly fit" if pos >= 0.5 else "not fit"), pos
    fit, partly = fallback
    return ("fit" if fallback_value <= fit else "partly fit" if fallback_value <= partly else "not fit"), None


def _of(task: dict | None, key: str) -> float | None:
    """A baseline's figure for the task, or None when that baseline did not run it."""
    return None if task is None else task[key]


def _versus(syn: float, boot: float, ind: float, unit: str) -> str:
    """The error beside the baselines, with the ratio the rule reads, to enough digits to check it."""
    ratio = f"{syn / boot:.2f} ×" if boot > 0 else "∞ ×"
    return (
        f" = {ratio} a real resample's {boot:.2f}{unit} (fit needs ≤ {FIT_RATIO:g} ×); "
        f"independent columns {ind:.2f}{unit}"
    )


def task_verdicts(tasks: dict[str, list[dict]]) -> list[dict]:
    """The verdict (fit, partly fit, not fit) on each use of each declared task by the module's rules, with the baseline
    position where both baselines ran and the figures it rests on."""
    syn = tasks["synthetic"]
    ind = {t["name"]: t for t in tasks.get("independent", [])}
    boot = {t["name"]: t for t in tasks.get("bootstrap", [])}
    out = []
    for t in syn:
        n, i, b = t["name"], ind.get(t["name"]), boot.get(t["name"])
        if t["kind"] == "table":
            what = f"the table {' × '.join(t['attributes'])}" + (" (restricted)" if t["where"] else "")
            grade, pos = _grade(t["rmse"], _of(i, "rmse"), _of(b, "rmse"), (0.05, 0.15), t["tvd"])
            detail = f"RMSE {t['rmse']:.2f} counts" + (_versus(t["rmse"], b["rmse"], i["rmse"], "") if i and b else "")
            out.append({"task": n, "use": what, "verdict": grade, "position": pos, "detail": detail})
        elif t["kind"] == "gap":
            what = f"the gap between {t['groups'][0]} and {t['groups'][1]} by {', '.join(t['by'])}"
            size = float(np.sqrt(np.mean([c["real"] ** 2 for c in t["cells"]]))) if t["cells"] else 1.0
            grade, pos = _grade(
                t["rmse_pp"], _of(i, "rmse_pp"), _of(b, "rmse_pp"), (0.2, 0.5), t["rmse_pp"] / max(size, 1e-9)
            )
            sign_needed = min(SIGN_AGREEMENT, b["sign_agreement"]) if b else SIGN_AGREEMENT
            if grade == "fit" and t["sign_agreement"] < sign_needed:
                grade = "partly fit"
            detail = (
                f"RMSE {t['rmse_pp']:.2f} percentage points"
                + (_versus(t["rmse_pp"], b["rmse_pp"], i["rmse_pp"], " pp") if i and b else "")
                + f"; sign right in {100 * t['sign_agreement']:.1f}% of cells (fit needs ≥ {100 * sign_needed:.1f}%)"
            )
            out.append({"task": n, "use": what, "verdict": grade, "position": pos, "detail": detail})
        elif t["kind"] == "regression":
            gap = t["accuracy_gap"]
            out.append(
                {
                    "task": n,
                    "use": f"predicting {t['target']} from {', '.join(t['features'])} (multinomial regression)",
                    "verdict": "fit" if gap <= 0.01 else "partly fit" if gap <= 0.03 else "not fit",
                    "position": None,
                    "detail": f"accuracy trained on synthetic {t['accuracy_train_on_synthetic']:.3f} vs trained on "
                    f"real {t['accuracy_train_on_real']:.3f}, both tested on real records",
                }
            )
            ov = t["ci_overlap_mean"]
            if ov is not None:
                out.append(
                    {
                        "task": n,
                        "use": f"estimating the regression coefficients of {t['target']} "
                        "(effect sizes and their confidence intervals)",
                        "verdict": "fit" if ov >= 0.5 else "partly fit" if ov >= 0.3 else "not fit",
                        "position": None,
                        "detail": f"mean CI overlap {ov:.2f}, median coefficient bias "
                        f"{t['coef_bias_pct_median']:.0f}%, median variance ratio {t['variance_ratio_median']:.2f}",
                    }
                )
        else:
            gap = t["accuracy_gap"]
            out.append(
                {
                    "task": n,
                    "use": f"predicting {t['target']} from {', '.join(t['features'])} (random forest)",
                    "verdict": "fit" if gap <= 0.02 else "partly fit" if gap <= 0.05 else "not fit",
                    "position": None,
                    "detail": f"real-holdout accuracy {t['accuracy_synthetic_model_real_holdout']:.3f} trained on "
                    f"synthetic vs {t['accuracy_real_model_real_holdout']:.3f} trained on real"
                    + (
                        f"; on synthetic holdout it looks {t['overconfidence']:+.3f} better than it is"
                        if t["overconfidence"] > 0.02
                        else ""
                    ),
                }
            )
            out.append(
                {
                    "task": n,
                    "use": f"ranking which features matter for {t['target']}",
                    "verdict": "fit" if t["jaro"] >= 0.9 else "partly fit" if t["jaro"] >= 0.75 else "not fit",
                    "position": None,
                    "detail": f"Jaro similarity of importance orderings {t['jaro']:.3f}",
                }
            )
    return out


def statement(verdicts: list[dict], generic: dict, attributes: list[str]) -> dict:
    """The fitness statement: the uses fit, partly fit and not fit (plus the pairs outside Φ with B below
    :data:`B_RULE`), the caveats, and all of it as one paragraph."""
    fit = [f"{v['use']} ({v['detail']})" for v in verdicts if v["verdict"] == "fit"]
    partly = [f"{v['use']} ({v['detail']})" for v in verdicts if v["verdict"] == "partly fit"]
    not_fit = [f"{v['use']} ({v['detail']})" for v in verdicts if v["verdict"] == "not fit"]
    b = np.asarray(generic["bivariate"]["B"])
    in_phi = np.asarray(generic["in_phi"])
    bad = [
        (float(b[i, j]), attributes[i], attributes[j])
        for i in range(len(attributes))
        for j in range(i + 1, len(attributes))
        if not in_phi[i, j] and b[i, j] < B_RULE
    ]
    bad.sort()
    if bad:
        not_fit.append(
            "analysing the association between "
            + "; ".join(f"{x} × {y} (B = {v:.4f} < {B_RULE})" for v, x, y in bad[:6])
            + (f" and {len(bad) - 6} more pair(s)" if len(bad) > 6 else "")
            + ": these pairs were not in Φ and their association is not preserved"
        )
    caveats = ["Not fit for anything about individual people: records are not real and cannot be linked to anyone."]
    ks = generic["specks"]["median_ks"]
    if ks > 0.3:
        caveats.append(
            f"Records are easy to tell from real ones (median SPECKS {ks:.2f}): not fit for uses that need "
            "realistic individual records (e.g. testing record-level software or linkage)."
        )
    parts = []
    if fit:
        parts.append("Fit for: " + "; ".join(fit) + ".")
    if partly:
        parts.append("Only partly fit for: " + "; ".join(partly) + ".")
    if not_fit:
        parts.append("Not fit for: " + "; ".join(not_fit) + ".")
    if not verdicts:
        parts.append(
            "No analysis tasks were declared in the spec, so fitness for a particular use was not assessed; "
            "judge from the generic measures."
        )
    return {
        "fit_for": fit,
        "partly_fit_for": partly,
        "not_fit_for": not_fit,
        "not_fit_pairs": [[x, y] for _, x, y in bad],
        "caveats": caveats,
        "statement": " ".join(parts + caveats),
    }
