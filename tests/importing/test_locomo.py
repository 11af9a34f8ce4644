"""locomo: one chronology per conversation, speaker_a the user and speaker_b the recorded replies,
each session dated, every question a probe at the end with its category, reference answer and
evidence; the data behind its non-commercial licence."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from harness.chronology.loading import load_chronology
from harness.chronology.types import Reference
from harness.importing import locomo
from harness.importing.formats import ImportOptions, import_file
from harness.importing.source import ImportRefused, read_source
from tests.importing.goldens import FIXTURES, GOLDEN
from tests.importing.helpers import assert_matches_golden

FIXTURE = FIXTURES / "locomo_sample.json"


def sample() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))[0]


def convert(tmp_path: Path, *items: dict[str, Any]) -> list[dict[str, Any]]:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(list(items)), encoding="utf-8")
    return [item.document for item in locomo.convert(read_source(path), "CC BY-NC 4.0")]


def probes(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in document["turns"] if "probe" in t]


def test_the_fixture_converts_to_the_golden_chronology_which_loads() -> None:
    assert_matches_golden("locomo")
    for path in sorted((GOLDEN / "locomo").glob("*.yaml")):
        load_chronology(path)


def test_the_first_speaker_is_the_user_and_the_second_the_recorded_replies_each_line_named(tmp_path: Path) -> None:
    [document] = convert(tmp_path, sample())
    first = document["turns"][0]
    assert first["user"] == "DATE: 10:05 am on 4 March, 2023\n\nAna: Hi Ben! Long time no see."
    assert first["assistant"] == "Ben: Ana! How have you been?"
    assert "user's messages are Ana's" in document["system"] and "replies are Ben's" in document["system"]


def test_a_shared_image_is_its_caption(tmp_path: Path) -> None:
    [document] = convert(tmp_path, sample())
    assert document["turns"][1]["user"].endswith("[shares a photo of a small brown dog on a sofa]")


def test_a_session_the_second_speaker_opens_is_dated_in_a_user_message_before_its_line(tmp_path: Path) -> None:
    item = sample()
    item["conversation"]["session_1"].pop()  # session 1 now ends on Ben's line
    [document] = convert(tmp_path, item)
    assert document["turns"][2] == {
        "user": "DATE: 6:40 pm on 20 March, 2023",
        "assistant": "Ben: Ana, I finally got a pet too.",
        "evidence": ["q3"],
    }


def test_every_question_is_a_probe_after_the_conversation_in_order_in_one_history(tmp_path: Path) -> None:
    [document] = convert(tmp_path, sample())
    turns = document["turns"]
    assert [t.get("probe") for t in turns[-3:]] == ["q1", "q2", "q3"]
    assert all("probe" not in t for t in turns[:-3]) and "sessions" not in document
    assert "category" not in document["source"]  # each probe has its own


def test_each_probe_carries_its_category_and_reference_answer(tmp_path: Path) -> None:
    [document] = convert(tmp_path, sample())
    found = [(p["category"], p["reference"]) for p in probes(document)]
    assert found == [
        ("2", {"answer": "3 March 2023"}),
        ("1", {"answer": "Nurse, Porto"}),
        ("5", {"answer": locomo.NOT_MENTIONED}),
    ]
    loaded = load_chronology(GOLDEN / "locomo" / "locomo-conv-1.yaml")
    assert [(p.category, p.reference) for p in loaded.probes][0] == ("2", Reference("3 March 2023"))


def test_a_short_answer_is_a_value_a_list_only_a_rubric_and_an_adversarial_question_an_abstention(
    tmp_path: Path,
) -> None:
    temporal, multi, adversarial = probes(convert(tmp_path, sample())[0])
    assert temporal["expect"][0] == {"value": "3 March 2023"} and "rubric" in temporal["expect"][1]
    assert temporal["user"].endswith("Use the DATE of the sessions to answer with an approximate date.")
    assert [list(e) for e in multi["expect"]] == [["rubric"]]
    assert adversarial["expect"] == [{"abstain": True}]
    assert adversarial["user"].endswith("(a) Not mentioned in the conversation (b) a Siamese.")


def test_a_number_answer_is_text(tmp_path: Path) -> None:
    item = sample()
    item["qa"][0]["answer"] = 2022
    assert probes(convert(tmp_path, item)[0])[0]["expect"][0] == {"value": "2022"}


def test_evidence_marks_the_turns_holding_each_dialogue_id_and_leaves_out_unreadable_ones(tmp_path: Path) -> None:
    [document] = convert(tmp_path, sample())
    marked = {n: t["evidence"] for n, t in enumerate(document["turns"]) if "evidence" in t}
    # q2's `D1:4; D2:2` is two ids; q3's `D` names no line and is left out
    assert marked == {1: ["q1", "q2"], 2: ["q3"], 3: ["q2"]}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda i: i["conversation"]["session_1"][0].update(speaker="Cy"), r"session_1\[0\].speaker: 'Cy' is neither"),
        (lambda i: i["qa"][0].update(category=6), r"qa\[0\].category: 6 is not one of LoCoMo's categories"),
        (lambda i: i["qa"][2].pop("adversarial_answer"), r"qa\[2\].adversarial_answer: missing"),
        (lambda i: i["conversation"].pop("session_2_date_time"), "session_2_date_time: missing"),
        (lambda i: i["conversation"]["session_2"][0].update(dia_id="D1:1"), "dialogue id D1:1 is used twice"),
    ],
)
def test_a_bad_item_is_refused_naming_its_field(tmp_path: Path, change: Any, message: str) -> None:
    item = copy.deepcopy(sample())
    change(item)
    with pytest.raises(ImportRefused, match=message):
        convert(tmp_path, item)


def test_the_data_is_imported_only_once_its_non_commercial_licence_is_accepted(tmp_path: Path) -> None:
    with pytest.raises(ImportRefused, match="CC BY-NC 4.0, a non-commercial licence"):
        import_file("locomo", FIXTURE, tmp_path / "out", ImportOptions())
    assert not (tmp_path / "out").exists()
    [written] = import_file("locomo", FIXTURE, tmp_path / "out", ImportOptions(accept_licence="CC BY-NC 4.0"))
    assert load_chronology(written).source.licence == "CC BY-NC 4.0"


@pytest.mark.slow
def test_a_conversation_replays_once_for_all_its_questions_each_probe_reading_its_evidence(project: Path) -> None:
    from click.testing import CliRunner

    from harness.cli.commands import main

    def invoke(*args: str) -> Any:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    assert (
        invoke("import", "locomo", str(FIXTURE), "--out", "chronologies", "--accept-licence", "CC BY-NC 4.0").exit_code
        == 0
    )
    run = invoke(
        "run", "--run-id", "t", "--quiet", "--no-charts", "--policy", "full-history", "--policy", "last-turns:turns=1"
    )
    assert run.exit_code == 0, run.output
    results = project / "results" / "t"
    assert len((results / "conversations.jsonl").read_text().splitlines()) == 2  # one per policy, not per question
    calls = [json.loads(line) for line in (results / "calls.jsonl").read_text().splitlines()]
    assert sorted((c["policy"], c["turn"]) for c in calls if c["kind"] == "answer") == [
        ("full-history", 5), ("full-history", 6), ("full-history", 7),
        ("last-turns:turns=1", 5), ("last-turns:turns=1", 6), ("last-turns:turns=1", 7),
    ]  # fmt: skip
    with (results / "probes.csv").open(encoding="utf-8") as rows:
        q1 = {
            (r["policy"], r["subject"].split(":")[0]): r["in_view"] for r in csv.DictReader(rows) if r["probe"] == "q1"
        }
    assert q1[("full-history", "value")] == "true" and q1[("last-turns:turns=1", "value")] == "false"
