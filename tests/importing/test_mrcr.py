"""mrcr: one chronology per row, its messages replayed, the final ask the probe, the asked reply
its evidence, the prefix checked offline and what MRCR's grade needs recorded in `reference:`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.chronology.loading import load_chronology
from harness.chronology.types import Reference
from harness.importing import mrcr
from harness.importing.source import ImportRefused, read_source
from harness.run.checks import met
from tests.importing.goldens import FIXTURES, GOLDEN
from tests.importing.helpers import assert_matches_golden

FIXTURE = FIXTURES / "needles.jsonl"


def rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def convert(path: Path, text: str) -> list[dict[str, Any]]:
    path.write_text(text, encoding="utf-8")
    return [item.document for item in mrcr.convert(read_source(path), "MIT")]


def test_the_fixture_converts_to_the_golden_chronologies_which_load() -> None:
    assert_matches_golden("mrcr")
    for path in sorted((GOLDEN / "mrcr").glob("*.yaml")):
        load_chronology(path)


def test_the_final_ask_is_the_probe_and_the_asked_reply_its_evidence() -> None:
    chronology = load_chronology(GOLDEN / "mrcr" / "mrcr-needles-2.yaml")
    [probe] = chronology.probes
    assert probe.probe == "recall" and probe.user.startswith("Prepend Zq7.Xk2 to the 3rd")
    [marked] = [t for t in chronology.user_turns if t.evidence]
    assert marked.assistant == "Tick by tock I count your day." and marked.evidence == ("recall",)


def test_the_reference_holds_what_the_grade_needs_and_the_needle_count_is_the_category() -> None:
    chronology = load_chronology(GOLDEN / "mrcr" / "mrcr-needles-2.yaml")
    assert chronology.probes[0].reference == Reference("Zq7.Xk2Tick by tock I count your day.", "Zq7.Xk2")
    assert chronology.source is not None and chronology.source.category == "4 needles"


@pytest.mark.parametrize(
    ("answer", "passes"),
    [("Zq7.Xk2Tick by tock", True), ("Zq7aXk2Tick", False), ("Sure: Zq7.Xk2Tick", False)],
)
def test_the_offline_check_is_that_the_answer_starts_with_the_prefix(answer: str, passes: bool) -> None:
    [expectation] = load_chronology(GOLDEN / "mrcr" / "mrcr-needles-2.yaml").probes[0].expect
    assert met(expectation, answer) is passes


def test_rows_saved_as_a_json_list_read_the_same(tmp_path: Path) -> None:
    listed = convert(tmp_path / "needles.json", json.dumps(rows()))
    lines = convert(tmp_path / "needles.jsonl", "".join(json.dumps(r) + "\n" for r in rows()))
    for a, b in zip(listed, lines, strict=True):
        a["source"].pop("sha256"), b["source"].pop("sha256")
        assert a == b


def test_an_item_is_its_files_name_and_its_row_number(tmp_path: Path) -> None:
    [first, second] = convert(tmp_path / "2needle.jsonl", FIXTURE.read_text(encoding="utf-8"))
    assert [d["source"]["item_id"] for d in (first, second)] == ["2needle-1", "2needle-2"]
    assert first["source"]["dataset"] == mrcr.DATASET == "mrcr"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"desired_msg_index": 2}, "desired_msg_index: 2 is not a reply of the prompt's 9 messages"),
        ({"n_needles": "4"}, "n_needles: '4', not a whole number"),
        ({"prompt": "[{"}, "prompt: a string that is not a JSON list of messages"),
        ({"random_string_to_prepend": ""}, "random_string_to_prepend: empty"),
    ],
)
def test_a_bad_row_is_refused_naming_its_field(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    row = {**rows()[1], **change}
    with pytest.raises(ImportRefused, match=message):
        convert(tmp_path / "mrcr.jsonl", json.dumps(row) + "\n")


def test_a_prompt_ending_with_a_reply_is_refused(tmp_path: Path) -> None:
    row = rows()[1]
    row["prompt"] = json.dumps(json.loads(row["prompt"])[:-1])
    with pytest.raises(ImportRefused, match="the prompt ends with a reply"):
        convert(tmp_path / "mrcr.jsonl", json.dumps(row) + "\n")
