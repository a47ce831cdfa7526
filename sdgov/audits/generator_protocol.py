"""The generator protocol for audits: how the decomposability test talks to *any* generator, ours or not.

A generator is named by its **registered name** (:mod:`sdgov.agreement.code_names`: the shipped generators and
controls, the pipeline generators' ``honest_<name>``/``dishonest_<name>``, and what a plug-in installed on the
controller's machine registers as an entry point in the group ``sdgov.audit_generators``), never by an import path.
The name resolves to a **factory**::

    factory(cliques: list[tuple[str, ...]], domain: dict[str, int], **params) -> AuditGenerator

``cliques`` is the agreed Φ (attribute tuples), ``domain`` maps every audited attribute to its number of cells
(category indices ``0..k-1``), in the column order of the data. ``params`` are the generator's own settings.

The returned object has two methods::

    fit(records: pd.DataFrame, weights: np.ndarray | None = None, *, seed: int | None = None) -> None
    sample(n: int, seed: int) -> pd.DataFrame

``fit`` receives **weighted unique records**: one row per distinct record (int cell indices, one column per
attribute of ``domain``) and a non-negative integer weight per row (its count; ``None`` means 1 each). This is
the count vector Θ(D) restricted to its non-empty cells, so the audit never materialises the 50k–N rows of
each extremal dataset; a generator that needs rows can expand them with :func:`expand_rows`. ``seed`` (optional
keyword; omitted when the signature does not take it) seeds any randomness of the fit itself (e.g. noise).
``sample`` returns ``n`` synthetic records as a DataFrame of cell indices with (at least) the ``domain``
columns, drawn with ``seed`` — the same (fit, n, seed) must give the same rows.

The audit calls the factory once per fit, so fits never share state. Nothing here imports the orchestrator.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import pandas as pd
from pydantic import BaseModel

from sdgov.base.errors import SdgovError
from sdgov.data.schema import Clique
from sdgov.data.tables import contingency_table


class AuditError(SdgovError):
    """An audit cannot run as asked (bad generator path, unusable generator, data, settings)."""

    def __reduce__(self):  # survives the trip back from a worker process with what/where/fix intact
        return (type(self), (self.what, self.where, self.fix))


class NotTestable(AuditError):
    """The data and Φ leave the audit nothing to test (e.g. Φ fixes the whole table, so no dataset with the same Φ
    marginals differs): neither pass nor fail. One model's audit exits 2 with the line; a split synthesis reports
    that part "not testable" and gives the other parts their verdicts."""


class NotTestableResult(BaseModel):
    """A part of a split synthesis the audit had nothing to test in (:class:`NotTestable`): its reason, no verdict."""

    verdict: Literal["not testable"] = "not testable"
    reason: str


class GeneratorCrash(AuditError):
    """The audited (third-party) generator raised in its factory, ``fit`` or ``sample``: a verdict of its own,
    neither pass nor fail (the command line exits 2 with one line naming the generator and the call).
    ``partial`` holds what the audit had finished when it crashed, for ``--out``."""

    partial: dict[str, Any]

    def __init__(self, what: str, where: str = "", fix: str = "") -> None:
        super().__init__(what, where, fix)
        self.partial = {}

    @classmethod
    def of(cls, exc: BaseException, generator: str, call: str) -> GeneratorCrash:
        """The crash of ``generator`` in ``call`` in one line: the exception's type and first line (at most 300
        characters)."""
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        return cls(
            f"generator {generator} crashed in {call}: {type(exc).__name__}: {first}",
            generator,
            "fix the generator; the audit reached no verdict (neither pass nor fail)",
        )


@runtime_checkable
class AuditGenerator(Protocol):
    def fit(self, records: pd.DataFrame, weights: np.ndarray | None = None) -> None:
        """Fit on weighted unique records (cell indices; ``weights`` their counts, None: 1 each)."""
        ...

    def sample(self, n: int, seed: int) -> pd.DataFrame:
        """``n`` records of cell indices drawn with ``seed``: the same fit, ``n`` and seed give the same rows."""
        ...


Factory = Callable[..., AuditGenerator]


def load_generator(name: str, where: str = "--generator") -> Factory:
    """The factory registered as ``name`` (exact lookup: :func:`sdgov.agreement.code_names.check_code_name` refuses
    any other string before anything is imported); every failure is one :class:`AuditError` line naming ``where``."""
    from sdgov.agreement import code_names
    from sdgov.base.errors import SpecError

    try:
        name = code_names.check_code_name(name, where)  # the registered name (a legacy alias's)
    except SpecError as exc:
        raise AuditError(exc.what, exc.where, exc.fix) from None
    obj: Any = code_names.in_code(name)
    if obj is None:  # sdgov's own or an installed plug-in's: its entry point, loaded now that the name is known
        ep = code_names.entry_point(name)
        try:
            obj = ep.load() if ep is not None else None
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            raise AuditError(
                f"the code registered as {name!r} ({ep.value if ep else '?'}) failed to load: "
                f"{type(exc).__name__}: {first}",
                where,
                "fix or reinstall the plug-in",
            ) from None
    if not callable(obj):
        raise AuditError(
            f"{name!r} is registered but is not a factory",
            where,
            "register a factory: factory(cliques, domain, **params) -> object with fit() and sample()",
        )
    return obj


def make_generator(
    factory: Factory,
    cliques: list[Clique],
    domain: dict[str, int],
    params: dict[str, Any] | None,
    where: str = "generator",
) -> AuditGenerator:
    """The factory's generator for Φ and ``domain``; a factory that refuses its arguments or returns no fit()/sample()
    is an AuditError, one that raises a :class:`GeneratorCrash`."""
    try:
        gen = factory([tuple(c) for c in cliques], dict(domain), **(params or {}))
    except SdgovError:
        raise
    except TypeError as exc:
        raise AuditError(
            f"the factory refused its arguments ({exc})",
            where,
            "a factory takes (cliques, domain, **params); check the generator params",
        ) from None
    except Exception as exc:
        raise GeneratorCrash.of(exc, where, "the factory") from None
    if not (callable(getattr(gen, "fit", None)) and callable(getattr(gen, "sample", None))):
        raise AuditError(
            f"the factory returned {type(gen).__name__}, which has no fit()/sample()",
            where,
            "return an object with fit(records, weights=None) and sample(n, seed)",
        )
    return gen


def fit_generator(
    gen: AuditGenerator, records: pd.DataFrame, weights: np.ndarray, seed: int, where: str = "generator"
) -> None:
    """Call ``gen.fit`` with the seed when its signature accepts one; anything it raises is a
    :class:`GeneratorCrash` naming ``where`` (the generator) and the call."""
    try:
        takes_seed = "seed" in inspect.signature(gen.fit).parameters
    except (TypeError, ValueError):
        takes_seed = False
    try:
        if takes_seed:
            gen.fit(records, weights, seed=seed)  # type: ignore[call-arg]  # the optional seed, checked above
        else:
            gen.fit(records, weights)
    except SdgovError:
        raise
    except Exception as exc:
        raise GeneratorCrash.of(exc, where, "fit()") from None


def sample_generator(gen: AuditGenerator, n: int, seed: int, domain: dict[str, int], where: str = "generator"):
    """``gen.sample(n, seed)``, checked (:func:`check_sample`); anything it raises is a :class:`GeneratorCrash`."""
    try:
        df = gen.sample(int(n), int(seed))
    except SdgovError:
        raise
    except Exception as exc:
        raise GeneratorCrash.of(exc, where, "sample()") from None
    return check_sample(df, int(n), domain, where)


def check_sample(df: Any, n: int, domain: dict[str, int], where: str = "generator") -> pd.DataFrame:
    """Validate what ``sample`` returned: ``n`` rows, every domain column, indices inside the domain."""
    if not isinstance(df, pd.DataFrame):
        raise AuditError(
            f"sample() returned {type(df).__name__}, not a DataFrame",
            where,
            "return a pandas DataFrame of cell indices",
        )
    missing = [a for a in domain if a not in df.columns]
    if missing:
        raise AuditError(f"sample() lacks column(s) {missing}", where, "return one column per audited attribute")
    if len(df) != n:
        raise AuditError(f"sample() returned {len(df)} rows, {n} were asked", where, "return exactly n rows")
    for a, k in domain.items():
        col = df[a].to_numpy()
        if len(col) and (col.min() < 0 or col.max() >= k):
            raise AuditError(
                f"sample() column {a!r} has indices outside 0..{k - 1}",
                where,
                "return cell indices of the declared domain",
            )
    return df


def expand_rows(records: pd.DataFrame, weights: np.ndarray | None) -> pd.DataFrame:
    """Weighted unique records → one row per record (for generators that insist on rows)."""
    if weights is None:
        return records.reset_index(drop=True)
    w = np.asarray(weights)
    if np.any(w < 0) or np.any(w != np.round(w)):
        raise AuditError("weights must be non-negative integers to expand into rows", "fit")
    return records.loc[records.index.repeat(w.astype(np.int64))].reset_index(drop=True)


def weighted_marginal(
    records: pd.DataFrame, weights: np.ndarray | None, clique: Clique, domain: dict[str, int]
) -> np.ndarray:
    """Contingency table of ``clique`` (axes in clique order) from weighted records."""
    return contingency_table(records, clique, [domain[a] for a in clique], weights)
