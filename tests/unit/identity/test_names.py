"""Names as identities (sdgov.identity.names): look-alikes compare equal, hidden characters are refused."""

from __future__ import annotations

import pytest

from sdgov.base.errors import SpecError
from sdgov.governance.standing import load_approvals
from sdgov.identity.names import check_name, same_person, skeleton

ADA = "Ada Analyst"


@pytest.mark.parametrize(
    "look_alike",
    [
        "\u0410da Analyst",  # Cyrillic capital A
        "Ada\u200b Analyst",  # zero width space
        "\uff21da Analyst",  # fullwidth A
        "Ad\u0430 Analyst",  # Cyrillic small a
        "\u0391da Analyst",  # Greek capital alpha
        "Ada\u00a0Analyst",  # no-break space
        "  ada  ANALYST ",
        "\U0001d400da Analyst",  # mathematical bold A
    ],
)
def test_look_alikes_of_a_name_are_the_same_person(look_alike: str) -> None:
    assert same_person(look_alike, ADA)


@pytest.mark.parametrize("other", ["Ida Analyst", "Ada Analysts", "Adam Analyst", "Carl Controller", "Åda Analyst"])
def test_different_names_stay_different(other: str) -> None:
    assert not same_person(other, ADA)
    assert skeleton(other) != skeleton(ADA)


@pytest.mark.parametrize("hidden", ["Ada\u200b Analyst", "Ada\u200dAnalyst", "Ada\u202e Analyst", "Ada\tAnalyst\x00"])
def test_names_with_invisible_or_control_characters_are_refused_in_one_line(hidden: str) -> None:
    with pytest.raises(SpecError, match="invisible or control characters") as e:
        check_name(hidden, "approvers.yaml")
    assert "\n" not in e.value.one_line() and "U+" in e.value.one_line()


def test_check_name_normalises_what_it_accepts() -> None:
    assert check_name("\uff21da  Analyst", "x") == "Ada Analyst"


@pytest.mark.parametrize("approver", ["\u0410da Analyst", "\uff21da Analyst", "Ada\u200b Analyst"])
def test_a_standing_approval_by_a_look_alike_of_the_proposer_is_refused(tmp_path, approver: str) -> None:
    path = tmp_path / "approvals.yaml"
    path.write_text(
        "proposer: {name: Ada Analyst, role: analyst}\n"
        f'agreement_approver: {{name: "{approver}", role: controller}}\n'
        'release_approver: {name: "Carl Controller", role: controller}\n',
        encoding="utf-8",
    )
    with pytest.raises(SpecError, match="looks like|invisible"):
        load_approvals(path)
