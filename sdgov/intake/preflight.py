"""Pre-flight: everything that can fail after the noise is drawn, checked before it is — all problems at once.

A release that spends budget and then fails (a 240-character name that the file system refuses at publish, an
audit generator that does not import, a numeric column that the utility stage cannot read back) has paid for
nothing and cannot be re-run for free. So before the first draw, every way into a release
(:func:`sdgov.intake.inputs.check_spec_and_data`: once per release, by the command or, when nobody checked before
it, by the first stage) runs
:func:`run_preflight`, which checks:

- the model card: a release must state its contact, data controller, licence, intended users, out-of-scope
  uses and review date (the spec's ``model_card:``);
- names and paths: lengths and characters of the spec and dataset names, and of every path the release will
  write under the registry root (a file name over 255 bytes or a path over 4096 fails only at publish);
- the privacy settings: finite, sane numbers (σ such that ρ is finite and ε at most :data:`MAX_EPSILON`), a
  spec's δ below 1/N, a planned ε within the ε asked for, at most :data:`MAX_ROWS` synthetic rows;
- the generator: a **dry run** of the registered generator on a tiny made-up measurement set in the declared
  domain, sampled and read back through the schema exactly as the utility stage will read it (so a numeric
  column's released type is checked too);
- every pre-registered audit generator: imported, built with its parameters, fitted on a tiny made-up table in
  the declared domain and sampled;
- the pre-registered decomposability settings: heavy enough for its screen to reach its level
  (:mod:`sdgov.audits.decomposability.calibration`);
- free disk space for the planned output under the registry root.

Every problem is collected and raised together as one :class:`PreflightError` (the CLI prints one line each).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import math
import shutil
import tempfile
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sdgov.agreement.load import LoadedSpec
from sdgov.agreement.spec import MAX_ROWS, AgreedSplit, Agreement
from sdgov.base.atomic import atomic_write_bytes
from sdgov.base.cachedir import dry_run_receipts
from sdgov.base.errors import PreflightError, SdgovError, SpecError, shorten
from sdgov.base.hashing import sha256_file, sha256_json
from sdgov.data.encoding import encode
from sdgov.data.schema import Clique, Schema

if TYPE_CHECKING:
    from sdgov.budget.accounting import PrivacyPlan

MAX_NAME = 100  # spec and dataset names: the release id is '<name>-<stamp>-<run>' and must fit a file name
MAX_FILE_NAME_BYTES = 255  # ext4, APFS, NTFS
MAX_PATH_BYTES = 4096  # Linux PATH_MAX
LONGEST_RELEASE_FILE = "releases/{id}/artifacts/decomposability.json"  # the deepest path a release writes
RELEASE_ID_SUFFIX = len("-20261123T102859Z-abcdef12")
MAX_EPSILON = 100.0  # beyond this a "privacy guarantee" promises nothing (US Census 2020 spent ~20 in total)

MIN_EPSILON = 1e-3  # and the smallest ε / ρ a spec may ask for: below, the accounting underflows
MIN_RHO = 1e-12
MAX_SIGMA = 1e9  # noise of a billion on counts: every table is noise (and ρ underflows soon after)
DRY_RUN_ROWS = 8
DISK_MARGIN_BYTES = 64 * 2**20


def run_preflight(
    loaded: LoadedSpec, n_records: int, root: str | Path | None = None, part_rows: dict[str, int] | None = None
) -> PrivacyPlan:
    """Run every check; raise :class:`PreflightError` listing every problem, else return the privacy plan.
    ``part_rows``: a split synthesis's records per part (:func:`part_records`), for the audits run per part."""
    problems: list[SdgovError] = []
    where = str(loaded.spec_path)

    def located(exc: SdgovError) -> SdgovError:
        """A problem at a spec field (``privacy.delta``) is named with the spec file; one at a file keeps it."""
        if exc.where.startswith("/"):
            return exc
        return type(exc)(exc.what, f"{where}: {exc.where}" if exc.where else where, exc.fix)

    def run(check: Callable[..., object], *args: object) -> object:
        try:
            return check(*args)
        except PreflightError as exc:
            problems.extend(located(p) for p in exc.problems)
        except SdgovError as exc:
            problems.append(located(exc))
        return None

    run(check_names, loaded)
    run(check_model_card, loaded)
    run(check_selection_review, loaded)
    if root is not None:
        run(check_root, Path(root), loaded)
    plan = run(check_privacy, loaded, n_records)
    run(dry_run_generator, loaded)
    run(dry_run_audit_generators, loaded)
    run(check_audit_records, loaded, part_rows or {"": n_records})
    if plan is not None:
        run(check_selection_records, loaded, plan, part_rows or {"": n_records})
    run(check_audit_settings, loaded)
    if root is not None:
        run(check_disk_space, Path(root), loaded, n_records)
    if problems:
        raise PreflightError(problems)
    return plan  # type: ignore[return-value]  # check_privacy returned it: no problem was found


# ------------------------------------------------------------------------------------------- names and paths


def _name_problem(name: str, what: str) -> str | None:
    if len(name) > MAX_NAME:
        return f"{what} is {len(name)} characters long, over the limit of {MAX_NAME}"
    bad = [c for c in name if unicodedata.category(c)[0] == "C" or c in "/\\"]
    if bad:
        return f"{what} holds a control character or slash ({bad[0]!r})"
    return None


def check_names(loaded: LoadedSpec) -> None:
    """The spec, dataset and schema names are at most ``MAX_NAME`` characters, none a control character or slash.

    Every name at fault is reported, together, in one ``PreflightError``."""
    problems: list[SdgovError] = []
    for name, what, field in (
        (loaded.spec.name, "the spec name", "name"),
        (loaded.spec.dataset.name, "the dataset name", "dataset.name"),
        (loaded.schema_.name, "the schema name", "name"),
    ):
        problem = _name_problem(name, what)
        if problem:
            at = f"{loaded.schema_file}: name" if "schema" in what else field
            problems.append(SpecError(problem, at, f"shorten it to at most {MAX_NAME} plain characters"))
    if problems:
        raise PreflightError(problems)


def check_model_card(loaded: LoadedSpec) -> None:
    """A release states who answers for it and what it is for (the card's model-card fields): refuse one without."""
    if loaded.spec.model_card is None:
        raise SpecError(
            "the spec has no model_card section, which a release must state",
            "model_card",
            "add model_card: contact, data_controller, licence, intended_users, out_of_scope, review_by",
        )


def check_selection_review(loaded: LoadedSpec) -> None:
    """The reviewed selection the spec names (drawn on the card) is readable and its cliques are Φ's — each
    split part's its own part's: a Φ edited by hand after the review would make the card's selection graph untrue."""
    path = loaded.selection_review_path
    if path is None:
        return
    from sdgov.measurement.selection.review import load_selection_records

    records = load_selection_records(path)
    split = loaded.agreement.split
    models: dict[str | None, list[Clique]] = (
        {None: loaded.agreement.cliques} if split is None else {p.name: p.cliques for p in split.parts}
    )
    if {r.part for r in records} != set(models):
        raise SpecError(
            "the reviewed selection it names is not of this spec's "
            + ("one model" if split is None else f"split parts {[p.name for p in split.parts]}"),
            "selection_review",
            "propose and review again (sdgov propose --select), or remove selection_review from the spec",
        )
    for record in records:
        reviewed = {frozenset(p) for p in record.pairs}
        phi = {frozenset(c) for c in models[record.part] if len(c) > 1}  # the selected pairs and triples
        if reviewed != phi:
            diff = sorted(" × ".join(sorted(p)) for p in reviewed ^ phi)
            of = "" if record.part is None else f" (split part {record.part!r})"
            raise SpecError(
                f"Φ's pairs{of} differ from the reviewed selection it names ({'; '.join(diff)})",
                f"selection_review{of}",
                "propose and review again (sdgov propose --select), or remove selection_review from the spec",
            )


def check_root(root: Path, loaded: LoadedSpec) -> None:
    """The registry root is a directory (or can become one), and the release's deepest path fits the system."""
    check_root_is_usable(root)
    check_log_readable(root)
    if len(loaded.spec.name) > MAX_NAME:
        return  # reported by check_names
    release_id = loaded.spec.name + "x" * RELEASE_ID_SUFFIX
    deepest = root.resolve() / LONGEST_RELEASE_FILE.format(id=release_id)
    if any(len(part.encode()) > MAX_FILE_NAME_BYTES for part in deepest.parts):
        raise SpecError(
            f"the release directory name would be over {MAX_FILE_NAME_BYTES} bytes", "name", "shorten the spec name"
        )
    if len(str(deepest).encode()) > MAX_PATH_BYTES:
        raise SpecError(
            f"the release's files would have paths over {MAX_PATH_BYTES} bytes", str(root), "use a shorter --root"
        )


def check_log_readable(root: Path) -> None:
    """Every line of the registry's log parses: a corrupt line found at the spend would stop the run after its
    sign-offs were logged. (Whether the chain is intact is ``registry verify``'s business.)"""
    from sdgov.registry.log import Registry

    Registry(root).events()


def check_root_is_usable(root: Path) -> None:
    """``--root`` names a registry directory or a place where one can be made — not a file, not a loop."""
    try:
        if root.exists() and not root.is_dir():
            raise SpecError("the registry root is not a directory", str(root), "point --root at a registry directory")
        parent = next((p for p in [root, *root.parents] if p.exists()), None)
    except OSError as exc:  # a symlink loop, a name too long...
        raise SpecError(
            f"the registry root cannot be used ({exc.strerror})", str(root), "point --root at a registry directory"
        ) from None
    if parent is not None and not parent.is_dir():
        raise SpecError(f"{parent} is not a directory", str(root), "point --root at a registry directory")


def check_disk_space(root: Path, loaded: LoadedSpec, n_records: int) -> None:
    """Room for the synthetic file (kept twice: the run's and the release's copy) and the reports."""
    existing = next((p for p in [root, *root.resolve().parents] if p.is_dir()), None)
    if existing is None:
        return
    rows = loaded.agreement.rows or n_records
    need = 2 * rows * len(loaded.agreement.attributes) * 8 + DISK_MARGIN_BYTES
    free = shutil.disk_usage(existing).free
    if free < need:
        raise SpecError(
            f"only {free / 2**20:,.0f} MiB free under the registry, the release needs about {need / 2**20:,.0f} MiB",
            str(existing),
            "free some space or use another --root",
        )


# ------------------------------------------------------------------------------------------- privacy


def check_privacy(loaded: LoadedSpec, n_records: int) -> PrivacyPlan:
    """The plan as the measure stage will compute it, and sane: what the issue's σ = 0.1, σ = 1e-300, δ = 0.999999
    and ε = 1e-300 specs got past ``validate`` with."""
    from sdgov.budget.accounting import plan_agreement  # OpenDP: imported when a release gets this far

    ag = loaded.agreement
    p = ag.privacy
    rows = ag.rows
    if rows is not None and rows > MAX_ROWS:
        raise SpecError(f"rows = {rows:,} is over the limit of {MAX_ROWS:,}", "rows", "ask for fewer synthetic rows")
    if p.noise == "none":
        return plan_agreement(ag)
    if p.delta is not None and p.delta >= 1 / n_records:  # said without N: the analyst may not learn it here
        raise SpecError(
            f"δ = {p.delta:g} is not below 1/N for this dataset (a δ that large allows releasing a record outright)",
            "privacy.delta",
            "leave 'privacy.delta' out (the data controller's policy sets δ, 1e-9 by default) or lower it",
        )
    try:
        plan = plan_agreement(ag)  # at the fixed default δ: the controller's policy δ is checked next
    except (ValueError, OverflowError, ZeroDivisionError, ArithmeticError) as exc:
        raise SpecError(
            f"the privacy settings cannot be accounted ({shorten(str(exc), 80)})",
            "privacy",
            "choose a meaningful budget (σ between about 1 and 10^4, or ε between about 0.01 and 100)",
        ) from None
    return check_plan(plan, ag)


def check_plan(plan: PrivacyPlan, ag: Agreement) -> PrivacyPlan:
    """``plan`` back if it is a guarantee worth accounting, else one ``SpecError``: finite ρ > 0 and ε, every σ in
    (0, ``MAX_SIGMA``], ε at most ``MAX_EPSILON`` and not over the ε asked for, ε or ρ asked not below the minimum."""
    p = ag.privacy
    rho, eps = plan.rho, plan.epsilon
    fix = "choose a meaningful budget (σ between about 1 and 10^4, or ε between about 0.01 and 100)"
    if rho is None or eps is None or not (math.isfinite(rho) and math.isfinite(eps)) or rho <= 0:
        raise SpecError(f"the plan is not a privacy guarantee (ρ = {rho}, ε = {eps})", "privacy", fix)
    if any(not math.isfinite(m.sigma) or not 0 < m.sigma <= MAX_SIGMA for m in plan.marginals):
        raise SpecError(f"a marginal's noise scale σ is not a number in (0, {MAX_SIGMA:g}]", "privacy", fix)
    if eps > MAX_EPSILON:
        raise SpecError(
            f"the plan spends ε = {eps:.4g} (ρ = {rho:.4g}), over the sanity limit of {MAX_EPSILON:g}",
            "privacy.sigma" if p.sigma is not None else "privacy",
            "raise σ or lower the budget: an ε this large promises nothing",
        )
    if p.epsilon is not None and p.epsilon < MIN_EPSILON:
        raise SpecError(
            f"ε = {p.epsilon:g} is too small to account (below {MIN_EPSILON:g}: every table would be pure noise)",
            "privacy.epsilon",
            fix,
        )
    if p.rho is not None and p.rho < MIN_RHO:
        raise SpecError(f"ρ = {p.rho:g} is too small to account (below {MIN_RHO:g})", "privacy.rho", fix)
    if p.epsilon is not None and eps > p.epsilon * (1 + 1e-6):
        raise SpecError(
            f"the plan spends ε = {eps:.4g}, more than the ε = {p.epsilon:.4g} asked for (too small to account)",
            "privacy.epsilon",
            fix,
        )
    return plan


# ------------------------------------------------------------------------------------------- dry runs


def _tiny_records(domain: dict[str, int], rows: int = DRY_RUN_ROWS) -> pd.DataFrame:
    """A made-up table in the declared domain (cell indices), touching the first and last cell of each column."""
    rng = np.random.default_rng(0)
    cols = {}
    for a, k in domain.items():
        v = rng.integers(0, k, size=rows)
        v[0], v[-1] = 0, k - 1
        cols[a] = v.astype(np.int64)
    return pd.DataFrame(cols)


def dry_run_generator(loaded: LoadedSpec) -> None:
    """Fit the spec's generator (a few iterations) on made-up noisy marginals, sample a few rows to Parquet and read
    them back through the schema as the utility and audit stages do — once per generator setting, Φ and schema on
    this installation: a dry run that passed leaves a receipt (:func:`dry_run_key`), and ``sdgov release`` after
    ``sdgov validate`` (or a scheduled run after the first) finds it instead of fitting again (issue 27)."""
    receipts = dry_run_receipts()
    receipt = receipts / dry_run_key(loaded) if receipts is not None else None
    if receipt is not None and receipt.is_file():
        return
    _dry_run_generator(loaded)
    if receipt is not None:
        with contextlib.suppress(OSError):  # a read-only cache: the next pre-flight fits again, nothing worse
            atomic_write_bytes(receipt, b"passed\n")


def dry_run_key(loaded: LoadedSpec) -> str:
    """What a generator dry run depends on, hashed: the generator and its settings, the attributes, Φ, the schema
    (domain, structural zeros, encodings), the seed, the registered plugin (its version and fit functions), sdgov's
    generator and pre-flight code, and the numerical libraries' versions. Public settings only: no data, no noise
    (the dry run sees made-up records)."""
    from sdgov.generators.registry import generator

    ag = loaded.agreement
    plugin = generator(ag.generator.name)
    code = [Path(__file__), *sorted((Path(__file__).parents[1] / "generators").glob("*.py"))]
    functions = [f for f in (plugin.fit, plugin.fit_with_zeros) if f is not None]
    return sha256_json(
        {
            "generator": ag.generator.model_dump(mode="json"),
            "plugin": [plugin.version(), *(f"{f.__module__}.{f.__qualname__}" for f in functions)],
            "attributes": list(ag.attributes),
            "cliques": [list(c) for c in ag.cliques],
            "schema_sha256": ag.schema_sha256,
            "seed": ag.seed,
            "code": {p.name: sha256_file(p) for p in code},
            "libraries": {name: _version(name) for name in ("jax", "mbi", "numpy", "pandas", "pyarrow", "sdgov")},
        }
    )


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _dry_run_generator(loaded: LoadedSpec) -> None:
    """The dry run itself (:func:`dry_run_generator`)."""
    from sdgov.data.psi import Measurement, MeasurementSet
    from sdgov.data.structures import zeros_within
    from sdgov.generators.registry import generator
    from sdgov.generators.sampler import sample_to_parquet
    from sdgov.measurement.marginals import marginal_counts

    ag, schema = loaded.agreement, loaded.schema_
    domain = schema.domain(ag.attributes)
    records = _tiny_records(domain)
    mset = MeasurementSet(
        agreement_sha256="dry-run",
        dataset_fingerprint="dry-run",
        schema_sha256=ag.schema_sha256,
        attributes=ag.attributes,
        domain=domain,
        noise="gaussian",
        measurements=[
            Measurement(
                clique=c,
                shape=schema.shape(c),
                sigma=1.0,
                noisy_counts=marginal_counts(records, schema, c).ravel().tolist(),
            )
            for c in ag.cliques
        ],
    )
    spec = ag.generator.model_copy(update={"iterations": min(ag.generator.iterations, 3)})
    try:
        model = generator(spec.name).fit_model(mset, spec, zeros_within(schema.zero_cells(), ag.attributes))
        with tempfile.TemporaryDirectory(prefix="sdgov-preflight-") as tmp:
            path = Path(tmp) / "synthetic.parquet"
            sample_to_parquet(model, schema, DRY_RUN_ROWS, ag.seed, path, sampling=spec.drawn)
            _read_back(pd.read_parquet(path), schema, ag.attributes)
    except SdgovError as exc:
        raise SpecError(f"the generator's dry run failed: {exc.what}", "generator", exc.fix or "") from None
    except Exception as exc:  # a plug-in's own bug: found here, before the spend, not after
        raise SpecError(
            f"the generator {ag.generator.name!r} failed a dry run on made-up data: "
            f"{type(exc).__name__}: {shorten(str(exc), 100)}",
            "generator",
            "fix the generator or its settings",
        ) from None


def _read_back(df: pd.DataFrame, schema: Schema, attributes: list[str]) -> None:
    text = df.astype("string").astype(object).where(df.notna(), None)
    encode(text, schema, where="the dry run's synthetic data", columns=attributes)


def part_records(codes: Path, split: AgreedSplit) -> dict[str, int]:
    """Records per part of a split synthesis, counted from the encoded data (the split column only)."""
    import pyarrow.parquet as pq

    column = pq.read_table(codes, columns=[split.attribute]).column(0).to_numpy()
    counts = np.bincount(column.astype(np.int64), minlength=max(c for p in split.parts for c in p.cells) + 1)
    return {p.name: int(counts[p.cells].sum()) for p in split.parts}


def check_audit_records(loaded: LoadedSpec, rows: dict[str, int]) -> None:
    """The data — every part of a split synthesis, which it audits on that part's records alone — has the records the
    pre-registered privacy-risk audit draws on: its targets, then disjoint from them a shadow training set
    (``train_rows``) and the record checks' three disjoint sets (``3 × disclosure_rows``) — the audit's own
    conditions (:mod:`sdgov.audits.privacy`), found here before the draw instead of after it. Said without the
    count: the analyst may not learn it here."""
    from sdgov.agreement.sections.privacy_risk import PrivacyRiskSettings

    section = loaded.agreement.sections.get("privacy_risk")
    if not isinstance(section, PrivacyRiskSettings) or not section.enabled:
        return
    from sdgov.audits import records_needed

    st = section.settings
    needed = records_needed(st)
    short = [name for name, n in rows.items() if min(n, st.population_rows) < needed]
    if short:
        where = "the data" if short == [""] else "split part(s) " + ", ".join(repr(n) for n in short)
        raise SpecError(
            f"{where} hold(s) fewer records than the pre-registered privacy-risk audit draws on ({needed:,}: "
            "n_outliers + n_random targets, then max(train_rows, 3 × disclosure_rows) others)",
            "privacy_risk.settings",
            "lower train_rows or disclosure_rows (or merge the parts)",
        )


def check_selection_records(loaded: LoadedSpec, plan: PrivacyPlan, rows: dict[str, int]) -> None:
    """A draft for private selection — every part of a split synthesis, which selects on its own records at its own
    share of ρ — has the records its selection needs to see a dependent pair through its noise
    (:func:`sdgov.measurement.selection.feasibility.min_selection_records`): a part too small, or a share of ρ too
    small, would spend the selection's ρ on a choice at random. Said without the count: the analyst may not learn it
    here."""
    ag = loaded.agreement
    if ag.privacy.selection is None or any(len(c) != 1 for c in ag.cliques):  # not a draft: selected already
        return
    from sdgov.measurement.selection.feasibility import min_selection_records

    short = []
    for part, unit in [(None, ag)] if ag.split is None else [(p.name, ag.of_part(p)) for p in ag.split.parts]:
        rho = plan.selection_rho if part is None else (plan.part_selection_rho or {}).get(part)
        n = rows.get(part or "", 0) if ag.split is not None else next(iter(rows.values()))
        if rho and n < min_selection_records(unit, loaded.schema_.domain(unit.attributes), rho):
            short.append(part)
    if short:
        parts = "" if short == [None] else " (split part(s) " + ", ".join(repr(n) for n in short) + ")"
        raise SpecError(
            "too few records for private selection at its share of ρ: its noise would hide any pair's dependence "
            "(the choice would be at random)",
            f"privacy.selection{parts}",
            "raise privacy.rho or privacy.selection.share"
            + (", give the part a larger share, or merge the parts" if ag.split is not None else ""),
        )


def check_audit_settings(loaded: LoadedSpec) -> None:
    """A pre-registered audit whose settings could never reach its own level is refused here — found out in the
    audit stage, the budget would be spent on a test that cannot be trusted: a decomposability K too light for its
    screen (:mod:`sdgov.audits.decomposability.calibration`), a beyond-Φ bootstrap too short for its p-value to
    reach the privacy policy's fail level (:mod:`sdgov.audits.privacy.calibration`). Every problem is reported."""
    from sdgov.agreement.sections.decomposability import DecomposabilitySettings
    from sdgov.agreement.sections.privacy_risk import PrivacyRiskSettings
    from sdgov.audits import calibration_problem, privacy_calibration_problem

    Section = type[DecomposabilitySettings] | type[PrivacyRiskSettings]
    rules: list[tuple[str, Section, Callable[[Any], tuple[str, str, str] | None]]] = [
        ("audit", DecomposabilitySettings, calibration_problem),
        ("privacy_risk", PrivacyRiskSettings, privacy_calibration_problem),
    ]
    problems: list[SdgovError] = []
    for key, kind, problem_of in rules:
        section = loaded.agreement.sections.get(key)
        if isinstance(section, kind) and section.enabled:
            problem = problem_of(section)
            if problem is not None:
                problems.append(SpecError(*problem))
    if problems:
        raise PreflightError(problems)


def dry_run_audit_generators(loaded: LoadedSpec) -> None:
    """Every generator a pre-registered audit names (each check of the registry says which: its ``generators``):
    imported, built with its params, fitted on a tiny made-up table in the declared domain and sampled — for a split
    synthesis on each part's Φ, as the audit runs it per part — found out after measuring, it would have spent
    budget on a release that can never pass its audit."""
    from sdgov.audits import registry
    from sdgov.audits.generator_protocol import (
        AuditError,
        check_sample,
        fit_generator,
        load_generator,
        make_generator,
    )
    from sdgov.audits.parts import audited_units, part_label
    from sdgov.audits.protocol import CheckGenerator, settings_of

    named: list[tuple[CheckGenerator, Agreement]] = []
    for part, ag in audited_units(loaded.agreement):  # a split synthesis: each part's Φ, as the audit will fit it
        for check in registry.AUDITS:
            settings = settings_of(check, loaded.agreement)
            if settings is not None:
                named += [
                    (g._replace(where=g.where if part is None else f"{g.where} {part_label(part)}"), ag)
                    for g in check.generators(settings, ag)
                ]
    problems: list[SdgovError] = []
    for (where, path, params), ag in named:
        if path is None:
            continue
        domain = loaded.schema_.domain(ag.attributes)
        try:
            factory = load_generator(path, where)
            params = dict(params)
            if "iterations" in params:
                params["iterations"] = min(int(params["iterations"]), 3)  # the names and types, not the fit
            gen = make_generator(factory, ag.cliques, domain, params, where)
            records = _tiny_records(domain)
            fit_generator(gen, records, np.ones(len(records), dtype=np.int64), seed=0)
            check_sample(gen.sample(DRY_RUN_ROWS, 0), DRY_RUN_ROWS, domain, where)
        except AuditError as exc:
            problems.append(SpecError(exc.what, where, exc.fix))
        except Exception as exc:
            problems.append(
                SpecError(
                    f"{path} failed a dry run on a made-up table: {type(exc).__name__}: {shorten(str(exc), 100)}",
                    where,
                    "fix the generator or its params",
                )
            )
    if problems:
        raise PreflightError(problems)
