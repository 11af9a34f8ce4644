"""compactbench: a generated case's transcript replayed, its evaluation items probes with upstream's
checks as expectations, its ground truth as prohibitions and declarations."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from harness.chronology.ledger import Ledger
from harness.chronology.loading import load_chronology
from harness.importing import compactbench
from harness.importing.source import ImportRefused, read_source
from tests.importing.goldens import FIXTURES, GOLDEN
from tests.importing.helpers import assert_matches_golden, jsonl

CASE = json.loads((FIXTURES / "compactbench_case.json").read_text())


def convert(path: Path) -> list[dict]:
    return [item.document for item in compactbench.convert(read_source(path), "Apache-2.0")]


@pytest.mark.parametrize("folder", ["compactbench", "compactbench-jsonl"])
def test_the_fixture_converts_to_the_golden_chronologies(folder: str) -> None:
    assert_matches_golden(folder)


@pytest.mark.parametrize("folder", ["compactbench", "compactbench-jsonl"])
def test_every_golden_chronology_loads(folder: str) -> None:
    for path in sorted((GOLDEN / folder).glob("*.yaml")):
        load_chronology(path)


def test_each_evaluation_item_is_a_probe_after_the_transcript_with_upstream_s_check() -> None:
    (case,) = convert(FIXTURES / "compactbench_case.json")
    probes = {t["probe"]: t for t in case["turns"] if "probe" in t}
    assert list(probes) == ["recall_plan", "reject_first", "lead_exact"]
    assert probes["recall_plan"]["expect"] == [{"pattern": r"(?i)pin\s+the\s+old\s+driver"}]  # case and spaces folded
    assert probes["reject_first"]["expect"] == [{"not": r"(?i)freeze\s+the\s+schema"}]
    assert probes["lead_exact"]["expect"] == [{"pattern": r"^\s*Ada\s*$"}]  # exact: case kept
    assert case["turns"][len(case["turns"]) - 4] == {"user": "Confirm the plan."}  # the transcript's last, unanswered


def test_forbidden_behaviours_are_prohibitions_asked_where_the_check_forbids_them() -> None:
    (case,) = convert(FIXTURES / "compactbench_case.json")
    assert case["prohibitions"]["forbidden-1"]["violated_by"] == r"(?i)freeze\s+the\s+schema"
    asks = {t["probe"]: t["asks"] for t in case["turns"] if "probe" in t}
    assert asks == {"recall_plan": [], "reject_first": ["forbidden-1"], "lead_exact": []}


def test_a_decision_override_makes_the_plans_it_replaced_stale() -> None:
    written = GOLDEN / "compactbench" / "compactbench-decision_override_demo-s1-dmedium-2e50b040.yaml"
    chronology = load_chronology(written)
    state = Ledger(chronology).after(chronology.turns[-1].number)
    assert state.current["decision"].value == "pin the old driver"
    assert {value for key, value in state.stale if key == "decision"} == {
        "freeze the schema",
        "rewrite the importer",
    }


def test_ground_truth_no_user_message_states_is_left_out() -> None:
    (case,) = convert(FIXTURES / "compactbench_case.json")
    declared = {key: value for turn in case["turns"] for key, value in turn.get("sets", {}).items()}
    assert "deadline" not in declared  # "end of the quarter" is in no message
    assert declared["lead"] == declared["primary_subject"] == "Ada"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c["evaluation_items"][0]["expected"].update(check="fuzzy"), r"check: 'fuzzy' is not one of"),
        (lambda c: c["transcript"].update(turns=[]), "transcript.turns: missing or empty"),
        (lambda c: c.update(evaluation_items=[]), "evaluation_items: missing or empty"),
        (lambda c: c["transcript"]["turns"][3].update(role="tool"), r"transcript.turns\[3\].role: 'tool' is not"),
    ],
)
def test_a_case_it_cannot_hold_is_refused_naming_the_field(tmp_path: Path, change, message: str) -> None:
    case = copy.deepcopy(CASE)
    change(case)
    with pytest.raises(ImportRefused, match=message):
        list(compactbench.convert(jsonl(tmp_path / "c.jsonl", case), "Apache-2.0"))


def test_an_empty_expected_value_checks_nothing_and_is_left_out(tmp_path: Path) -> None:
    case = copy.deepcopy(CASE)
    case["evaluation_items"][0]["expected"]["value"] = " "
    (item,) = compactbench.convert(jsonl(tmp_path / "c.jsonl", case), "Apache-2.0")
    assert "expect" not in next(t for t in item.document["turns"] if t.get("probe") == "recall_plan")
