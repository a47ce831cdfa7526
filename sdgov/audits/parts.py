"""A pre-registered audit of a split synthesis: run once per part, each part an ordinary release of its own.

A split release (:mod:`sdgov.synthesis.split`) fits one model per part of the records, each to its own Φ at its own
share of ρ. A check that refits the generator to Φ (the decomposability test, the privacy-risk audit) therefore
tests each part's model on that part's records: the part's agreement (:meth:`~sdgov.agreement.spec.Agreement.of_part`),
its own plan (:func:`~sdgov.budget.accounting.part_plan`: the σ its shadow fits simulate and the ε it claims —
the part's ρ as the ledger composed it), its ψ, its synthetic records and its confidential records only. Every part
runs with the section's pre-registered settings, which are in the agreement hash like the parts themselves.

:func:`combine_parts` makes one outcome of the parts': each report row names its part (``part`` and the name's
suffix), the evidence keeps every part's result and section, and the section's own verdict is the worst of the
parts' — a release fails if any part fails (:func:`sdgov.reporting.verdict.part_verdicts` gives each part's).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sdgov.audits.protocol import AuditContext, AuditOutcome
from sdgov.base.errors import SdgovError
from sdgov.budget.accounting import part_plan

if TYPE_CHECKING:
    from sdgov.agreement.spec import AgreedPart, Agreement

LEVELS = ("pass", "warn", "fail")  # a section's verdicts, mildest first


def part_label(part: str) -> str:
    """How a part is named after a report row's name: ``(part 'students')``."""
    return f"(part {part!r})"


def worst_of_parts(verdicts: Iterable[str]) -> str:
    """The worst of the parts' verdicts (an unknown verdict counts worse than a fail): a split synthesis passes only if
    every part does."""
    return max(verdicts, key=lambda v: LEVELS.index(v) if v in LEVELS else len(LEVELS))


@contextmanager
def in_part(part: str | None) -> Iterator[None]:
    """Run one part of a split synthesis: a problem it raises (one line) names the part first, so the controller
    knows which part's records or Φ to look at (one model's: unchanged)."""
    try:
        yield
    except SdgovError as exc:
        if part is None:
            raise
        named = type(exc)(f"split part {part!r}: {exc.what}", exc.where, exc.fix)
        named.__dict__.update({k: v for k, v in vars(exc).items() if k != "what"})  # a crash's partial results
        raise named from None


def audited_units(agreement: Agreement) -> list[tuple[str | None, Agreement]]:
    """What a pre-registered check tests: the agreement itself, or each part's own agreement (named) of a split."""
    if agreement.split is None:
        return [(None, agreement)]
    return [(p.name, agreement.of_part(p)) for p in agreement.split.parts]


@contextmanager
def part_contexts(context: AuditContext) -> Iterator[Callable[[], dict[str, AuditContext]]]:
    """Each part's context (:func:`part_context`), made on first request — its synthetic records written once into
    a scratch folder beside the synthetic file, removed on exit — and shared by every check that runs per part."""
    made: dict[str, AuditContext] = {}
    with ExitStack() as stack:

        def contexts() -> dict[str, AuditContext]:
            split = context.agreement.split
            if split is not None and not made:
                folder = context.synthetic_file.parent
                scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=".parts-", dir=folder)))
                for p in split.parts:
                    synthetic = part_synthetic(context.synthetic_file, split.attribute, p.codes, scratch / p.name)
                    made[p.name] = part_context(context, p, synthetic)
            return made

        yield contexts


def part_synthetic(path: Path, attribute: str, codes: list[str], out: Path) -> Path:
    """The synthetic records of one part (``attribute`` written as one of ``codes``), streamed from ``path`` into
    ``out`` batch by batch: memory bounded whatever the release's size."""
    source = pq.ParquetFile(path)
    wanted = pa.array(codes, type=pa.string())
    with pq.ParquetWriter(out, source.schema_arrow) as writer:
        for batch in source.iter_batches():
            table = pa.Table.from_batches([batch], schema=source.schema_arrow)
            writer.write_table(table.filter(pc.is_in(pc.cast(table[attribute], pa.string()), value_set=wanted)))
    return out


def part_context(context: AuditContext, part: AgreedPart, synthetic: Path) -> AuditContext:
    """The release's context narrowed to one part: its agreement, plan, ψ, model, synthetic records (``synthetic``)
    and confidential records only."""
    split = context.agreement.split
    assert split is not None  # only a split agreement has parts
    info = context.model_info.get("split", {}).get("parts", {}).get(part.name, {})
    return AuditContext(
        agreement=context.agreement.of_part(part),
        agreement_sha256=context.agreement_sha256,
        schema=context.schema,
        measurements=context.measurements.of_part(part.name, part.attributes),
        measurements_ref=context.measurements_ref,
        plan=part_plan(context.plan, part.name),
        generate_record=context.generate_record,
        model_info=info,
        synthetic_file=synthetic,
        requested_rows=int(info.get("rows", context.requested_rows)),
        read_confidential=lambda: context.confidential_where(split.attribute, part.cells),
        executor_for=context.executor_for,
        log=lambda line: context.log(f"part {part.name!r}: {line}"),
    )


def combine_parts(attribute: str, outcomes: dict[str, AuditOutcome]) -> AuditOutcome:
    """One check's per-part outcomes as one: every row named by its part, the result and section of each part kept
    under ``parts``, the section's verdict the worst part's (so one failing part fails the section)."""
    checks = [
        c.model_copy(update={"name": f"{c.name} {part_label(name)}", "part": name})
        for name, outcome in outcomes.items()
        for c in outcome.checks
    ]
    sections = {name: o.section for name, o in outcomes.items() if o.section is not None}
    if not sections:
        return AuditOutcome(checks=checks)
    first = next(iter(sections.values()))
    section: dict[str, Any] = {
        "verdict": worst_of_parts(str(s.get("verdict", "pass")) for s in sections.values()),
        "split": attribute,
        "parts": {name: {**s, "part": name} for name, s in sections.items()},
    }
    if "title" in first:
        section["title"] = first["title"]
    result = {"split": attribute, "parts": {name: o.result for name, o in outcomes.items()}}
    return AuditOutcome(checks=checks, result=result, section=section)
