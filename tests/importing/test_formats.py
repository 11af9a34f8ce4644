"""One entry point per import: the format named, its options checked, every item placed or none."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.chronology import load_chronology
from harness.importing.formats import FORMATS, ImportOptions, import_file
from harness.importing.source import ImportRefused, Skips
from tests.importing.goldens import FIXTURES, GOLDEN

OURS = ImportOptions(accept_licence="ours", probe_last=True)


def test_each_format_writes_its_golden_files(tmp_path: Path) -> None:
    runs = {
        "openai-chat": (
            "chat.jsonl",
            ImportOptions(accept_licence="own-logs", probe_last=True, expect=FIXTURES / "chat-expect.yaml"),
        ),
        "multichallenge": ("benchmark_questions.jsonl", ImportOptions(accept_licence="named-by-the-user")),
        "longmemeval": ("longmemeval_oracle.json", ImportOptions(sessions="separate")),
        "factconsolidation": ("conflict_resolution.jsonl", ImportOptions(facts_per_turn=2)),
        "sharegpt": ("sharegpt.json", ImportOptions(probe_last=True)),
        "compactbench": ("compactbench_case.json", ImportOptions()),
        "locomo": ("locomo_sample.json", ImportOptions(accept_licence="CC BY-NC 4.0")),
        "mrcr": ("needles.jsonl", ImportOptions()),
    }
    assert set(runs) == set(FORMATS)
    for name, (fixture, options) in runs.items():
        written = import_file(name, FIXTURES / fixture, tmp_path / name, options)
        assert {p.name: p.read_bytes() for p in written} == {
            p.name: p.read_bytes() for p in (GOLDEN / name).glob("*.yaml")
        }


def test_an_unknown_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ImportRefused, match="'vicuna' is not a format harness import reads: openai-chat, "):
        import_file("vicuna", FIXTURES / "chat.jsonl", tmp_path, OURS)


@pytest.mark.parametrize(
    ("format_name", "options", "message"),
    [
        (
            "longmemeval",
            ImportOptions(probe_last=True),
            "--probe-last applies to openai-chat and sharegpt imports, not longmemeval",
        ),
        ("openai-chat", ImportOptions(sessions="separate"), "--sessions applies to longmemeval imports"),
        ("longmemeval", ImportOptions(facts_per_turn=3), "--facts-per-turn applies to factconsolidation imports"),
        ("longmemeval", ImportOptions(sessions="merged"), "--sessions merged: give separate or joined"),
        ("multichallenge", ImportOptions(category="support"), "--category applies to openai-chat and sharegpt imports"),
        ("openai-chat", ImportOptions(accept_licence="ours", category=" "), "--category: give a category's name"),
    ],
)
def test_an_option_that_does_not_apply_is_refused(
    tmp_path: Path, format_name: str, options: ImportOptions, message: str
) -> None:
    with pytest.raises(ImportRefused, match=message):
        import_file(format_name, FIXTURES / "chat.jsonl", tmp_path, options)


def test_a_category_given_to_an_openai_chat_import_is_every_items_source_category(tmp_path: Path) -> None:
    written = import_file("openai-chat", FIXTURES / "chat.jsonl", tmp_path, ImportOptions("ours", category="support"))
    assert written and all(load_chronology(p).source.category == "support" for p in written)  # type: ignore[union-attr]
    plain = import_file("openai-chat", FIXTURES / "chat.jsonl", tmp_path / "plain", ImportOptions("ours"))
    assert all(load_chronology(p).source.category is None for p in plain)  # type: ignore[union-attr]


def test_an_expectation_the_loader_refuses_writes_nothing_and_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "expect.yaml").write_text("line-1: {valeu: Lisbon}\n")
    options = ImportOptions(accept_licence="ours", probe_last=True, expect=tmp_path / "expect.yaml")
    with pytest.raises(ImportRefused) as refused:
        import_file("openai-chat", FIXTURES / "chat.jsonl", tmp_path / "out", options)
    message = str(refused.value)
    assert message.startswith(
        "nothing written: the chronology loader refuses what the import made of this item (an --expect entry"
    )
    assert "chat-line-1.yaml:" in message and "expect" in message and "valeu" in message
    assert not (tmp_path / "out").exists()


def test_a_bad_expect_file_is_refused_by_line(tmp_path: Path) -> None:
    (tmp_path / "expect.jsonl").write_text(
        '{"id": "line-1", "expect": {"value": "x"}}\n{"id": "line-1", "expect": {}}\n'
    )
    options = ImportOptions(accept_licence="ours", probe_last=True, expect=tmp_path / "expect.jsonl")
    with pytest.raises(ImportRefused, match=r"expect\.jsonl:2: id: 'line-1' is given twice"):
        import_file("openai-chat", FIXTURES / "chat.jsonl", tmp_path / "out", options)
    assert sorted(os.listdir(tmp_path)) == ["expect.jsonl"]


def test_skip_invalid_passes_over_an_item_the_loader_refuses_and_writes_the_others(tmp_path: Path) -> None:
    (tmp_path / "expect.yaml").write_text("line-1: {valeu: Lisbon}\n")
    options = ImportOptions(accept_licence="ours", probe_last=True, expect=tmp_path / "expect.yaml")
    skips = Skips(enabled=True)
    written = import_file("openai-chat", FIXTURES / "chat.jsonl", tmp_path / "out", options, skips)
    assert [p.name for p in written] == ["chat-greeting.yaml"]
    (reason,) = skips.reasons
    assert reason.startswith(f"{FIXTURES / 'chat.jsonl'}:1: item 'line-1': the chronology loader refuses")
    assert "valeu" in reason


def test_when_every_item_is_skipped_nothing_is_written_and_each_is_named(tmp_path: Path) -> None:
    (tmp_path / "log.jsonl").write_text('{"messages": 1}\n\n{"messages": []}\n')
    with pytest.raises(ImportRefused) as refused:
        import_file("openai-chat", tmp_path / "log.jsonl", tmp_path / "out", ImportOptions(), Skips(enabled=True))
    lines = str(refused.value).splitlines()
    assert lines[0] == "every item was skipped (2); nothing written: fix the items, or import another file"
    assert [line.split("log.jsonl")[1][:3] for line in lines[1:]] == [":1:", ":3:"]
    assert not (tmp_path / "out").exists()


def test_a_skipped_row_renames_none_of_the_rows_after_it(tmp_path: Path) -> None:
    row = json.loads((FIXTURES / "conflict_resolution.jsonl").read_text().splitlines()[0])
    row["metadata"].pop("id")  # named by its place among the rows
    (tmp_path / "rows.jsonl").write_text(f'{{"context": 3}}\n{json.dumps(row)}\n')
    written = import_file("factconsolidation", tmp_path / "rows.jsonl", tmp_path / "out", ImportOptions(), Skips(True))
    assert [p.name for p in written] == ["factconsolidation_sh_6k-2.yaml"]


LONG = "\x1b[2J" + "x" * 1_000_000  # a megabyte of one field, and an escape sequence at its start


def _json(name: str, change) -> object:
    value = json.loads((FIXTURES / name).read_text())
    change(value)
    return value


def _set(path: list, value: object):
    def change(document) -> None:
        for key in path[:-1]:
            document = document[key]
        document[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("format_name", "name", "path"),
    [
        ("sharegpt", "sharegpt.json", [0, "conversations", 0, "from"]),
        ("longmemeval", "longmemeval_oracle.json", [0, "question_type"]),
        ("longmemeval", "longmemeval_oracle.json", [0, "haystack_dates", 0]),
        ("locomo", "locomo_sample.json", [0, "qa", 0, "category"]),
        ("locomo", "locomo_sample.json", [0, "conversation", "session_1", 0, "speaker"]),
        ("locomo", "locomo_sample.json", [0, "conversation", "speaker_a"]),
        ("compactbench", "compactbench_case.json", ["transcript", "turns", 0, "role"]),
    ],
)
def test_a_message_quotes_at_most_40_characters_of_a_field(
    tmp_path: Path, format_name: str, name: str, path: list
) -> None:
    (tmp_path / name).write_text(json.dumps(_json(name, _set(path, LONG))))
    licence = {"locomo": "CC BY-NC 4.0", "sharegpt": "ours"}.get(format_name)
    with pytest.raises(ImportRefused) as refused:
        import_file(format_name, tmp_path / name, tmp_path / "out", ImportOptions(accept_licence=licence))
    message = str(refused.value)
    assert "'\\x1b[2Jxxxxxxxxxxxxxxxx'... (1,000,004 characters)" in message and len(message) < 1_000
