"""Named utility tasks declared in the release spec (``tasks:``): what the analyst will do with the data.

Four kinds, each checked against the schema and the released attributes when the spec is loaded:

``table``       a k-way contingency table (``attributes``), optionally restricted (``where``): RMSE of counts.
``gap``         a derived quantity: for every cell of ``by``, ``P(by | group = a, where) − P(by | group = b, where)``
                (e.g. the share of men in each occupation minus the share of women, among the economically
                active), in percentage points.
``regression``  multinomial logistic regression of ``target`` on ``features`` (categorical, one-hot).
``classifier``  random-forest classifier of ``target`` from ``features``.

Tasks are *evaluation* declarations, not part of Φ: see :class:`sdgov.agreement.spec.ReleaseSpec` for why they are kept
out of the agreement hash.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveInt

from sdgov.base.errors import SpecError
from sdgov.base.model import Frozen

Code = int | str


class _Task(Frozen):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._-]*$")
    description: str = ""


class TableTask(_Task):
    kind: Literal["table"]
    attributes: list[str] = Field(min_length=1)
    where: dict[str, list[Code]] = Field(default_factory=dict, description="attribute → codes kept")

    def used(self) -> list[str]:
        """The attributes the task reads (its table and its ``where`` filter), as checked against the schema."""
        return list(self.attributes) + list(self.where)


class GapTask(_Task):
    kind: Literal["gap"]
    group: str = Field(description="the attribute whose two groups are compared (e.g. Sex)")
    groups: list[Code] | None = Field(
        default=None,
        min_length=2,
        max_length=2,
        description="codes of the two groups (a, b); default the first two categories",
    )
    by: list[str] = Field(min_length=1, description="the gap is computed in every cell of these attributes")
    where: dict[str, list[Code]] = Field(default_factory=dict)

    def used(self) -> list[str]:
        """The attributes the task reads: the group, the ``by`` cells and the ``where`` filter."""
        return [self.group] + list(self.by) + list(self.where)


class RegressionTask(_Task):
    kind: Literal["regression"]
    target: str
    features: list[str] = Field(min_length=1)

    def used(self) -> list[str]:
        """The attributes the task reads: the target, then the features."""
        return [self.target] + list(self.features)


class ClassifierTask(_Task):
    kind: Literal["classifier"]
    target: str
    features: list[str] = Field(min_length=1)
    trees: PositiveInt = 60

    def used(self) -> list[str]:
        """The attributes the task reads: the target, then the features."""
        return [self.target] + list(self.features)


TaskSpec = Annotated[TableTask | GapTask | RegressionTask | ClassifierTask, Field(discriminator="kind")]


def check_tasks(tasks: list, schema, attributes: list[str], where: str = "spec") -> None:
    """Refuse tasks that name unknown or unreleased attributes, unknown codes, or repeat a name."""
    names = [t.name for t in tasks]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SpecError(f"tasks: name(s) {dup} used more than once", where, "give every task its own name")
    for i, t in enumerate(tasks):
        ctx = f"tasks[{i}] ({t.name})"
        used = t.used()
        unknown = [a for a in used if a not in schema.by_name]
        if unknown:
            raise SpecError(
                f"{ctx} names unknown attribute(s) {unknown}", where, f"use column names from schema {schema.name!r}"
            )
        outside = [a for a in used if a not in attributes]
        if outside:
            raise SpecError(
                f"{ctx} uses attribute(s) {outside} that are not in the synthetic data",
                where,
                "add them to 'attributes' (or Φ), or drop them from the task",
            )
        roles = used[: len(used) - len(getattr(t, "where", {}))]
        if len(set(roles)) != len(roles):
            raise SpecError(f"{ctx} repeats an attribute", where, "name each attribute once per role")
        filters = dict(getattr(t, "where", {}))
        if isinstance(t, GapTask) and t.groups is not None:
            filters[t.group] = list(t.groups)
        for a, codes in filters.items():
            known = {str(c) for c in schema.by_name[a].codes()}
            bad = [c for c in codes if str(c) not in known]
            if bad:
                raise SpecError(
                    f"{ctx}: code(s) {bad} are not categories of {a!r}",
                    where,
                    f"use codes declared in the schema: {sorted(known)}",
                )
        if isinstance(t, (RegressionTask, ClassifierTask)) and t.target in t.features:
            raise SpecError(f"{ctx}: the target {t.target!r} is also a feature", where, "remove it from 'features'")
