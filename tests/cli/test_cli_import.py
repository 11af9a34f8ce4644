"""`harness import` end to end: what a user types, what lands in --out, and that it runs."""

from __future__ import annotations

import csv
import errno
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.importing import factconsolidation, formats, source
from tests.importing.goldens import FIXTURES, GOLDEN


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_the_command_names_exactly_the_importers_defaults() -> None:
    options = {p.name: p for p in main.commands["import"].params}
    assert options["facts_per_turn"].default == factconsolidation.FACTS_PER_TURN
    assert options["max_input_bytes"].default == source.MAX_INPUT_BYTES


def test_import_writes_the_golden_chronologies(project: Path) -> None:
    result = invoke("import", "longmemeval", str(FIXTURES / "longmemeval_oracle.json"), "--out", "chronologies")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("wrote 3 chronologies into chronologies\n")
    for golden in (GOLDEN / "longmemeval-joined").glob("*.yaml"):
        assert (project / "chronologies" / golden.name).read_bytes() == golden.read_bytes()
    assert invoke("validate", "chronologies").exit_code == 0


def test_an_unknown_licence_is_refused_with_exit_2_and_nothing_written(project: Path) -> None:
    result = invoke("import", "multichallenge", str(FIXTURES / "benchmark_questions.jsonl"), "--out", "out")
    assert result.exit_code == 2
    assert result.output == (
        "error: multichallenge: no licence is known for this source; if you may use it, name the licence it is "
        "yours under with --accept-licence NAME (recorded in every chronology's source:)\n"
    )
    assert not (project / "out").exists()


def test_a_second_import_into_the_same_folder_is_refused_unless_forced(project: Path) -> None:
    args = ["import", "openai-chat", str(FIXTURES / "chat.jsonl"), "--out", "out", "--accept-licence", "ours"]
    assert invoke(*args).exit_code == 0
    again = invoke(*args)
    assert (
        again.exit_code == 2 and "out/chat-line-1.yaml already exists; import into another --out folder" in again.output
    )
    assert invoke(*args, "--force").exit_code == 0


def test_an_import_into_a_results_folder_is_refused_and_writes_nothing(project: Path) -> None:
    """A folder holding a run's manifest is written by `harness run` only: chronologies imported
    among its records (or below it) were written with exit 0."""
    run = project / "results" / "r"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text("{}")
    for out in ("results/r", "results/r/chats"):
        result = invoke("import", "openai-chat", str(FIXTURES / "chat.jsonl"), "--out", out, "--force")
        assert result.exit_code == 2, result.output
        assert f"--out {out}: it lies in the results folder" in result.output
    assert sorted(p.name for p in run.iterdir()) == ["manifest.json"]


def test_a_full_disk_names_the_out_folder_and_says_nothing_was_written(project: Path, monkeypatch) -> None:
    """A write that fails on a full disk carries no file name: the message was only "No space left
    on device", naming neither the folder nor what became of the import."""

    def full(*_args: object, **_kwargs: object) -> list[Path]:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(formats, "import_file", full)
    result = invoke("import", "openai-chat", str(FIXTURES / "chat.jsonl"), "--out", "out")
    assert result.exit_code == 1
    assert result.output == (
        "error: --out out: No space left on device; nothing of this import was written (an import is all or "
        "none): free space there, or import into another --out folder\n"
    )


def test_an_agent_log_imports_with_its_tool_steps_validates_and_runs(project: Path) -> None:
    fixture = str(FIXTURES / "chat-tools.jsonl")
    imported = invoke(
        "import", "openai-chat", fixture, "--out", "chronologies", "--accept-licence", "ours", "--probe-last"
    )
    assert imported.exit_code == 0, imported.output
    assert invoke("validate", "chronologies").exit_code == 0
    run = invoke(
        "run", "--run-id", "t", "--quiet", "--no-charts", "--policy", "full-history", "--policy", "last-turns:turns=1"
    )
    assert run.exit_code == 0, run.output
    calls = [json.loads(line) for line in (project / "results" / "t" / "calls.jsonl").read_text().splitlines()]
    # the model answers the probes and the one turn whose reply was not recorded (tool steps, then a user message)
    assert sorted({(c["chronology"], c["turn"]) for c in calls if c["kind"] == "answer"}) == [
        ("chat-tools-export-fix", 2),
        ("chat-tools-weather", 1),
        ("chat-tools-weather", 2),
    ]


def test_an_option_of_another_format_is_refused(project: Path) -> None:
    result = invoke("import", "longmemeval", str(FIXTURES / "longmemeval_oracle.json"), "--out", "o", "--probe-last")
    assert (
        result.exit_code == 2
        and "--probe-last applies to openai-chat and sharegpt imports, not longmemeval" in result.output
    )


def test_a_bad_item_in_the_middle_writes_nothing(project: Path) -> None:
    lines = (FIXTURES / "chat.jsonl").read_text().splitlines()
    (project / "log.jsonl").write_text(f'{lines[0]}\n{{"messages": 3}}\n{lines[1]}\n')
    result = invoke("import", "openai-chat", "log.jsonl", "--out", "out", "--accept-licence", "ours")
    assert result.exit_code == 2
    assert result.output == (
        'error: log.jsonl:2: messages: a number, not a list; each conversation is {"messages": [{"role": ..., '
        '"content": ...}, ...]}\n'
    )
    assert not (project / "out").exists()


def test_skip_invalid_imports_the_valid_items_and_lists_each_skipped_one_on_stderr(project: Path) -> None:
    chat = '{"messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}]}'
    (project / "log.jsonl").write_text(f'{chat}\n{{"messages": 3}}\n[1]\n{chat}\n')
    result = CliRunner().invoke(
        main, ["import", "openai-chat", "log.jsonl", "--out", "out", "--skip-invalid"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "skipped log.jsonl:2: messages: a number, not a list; each conversation is "
        '{"messages": [{"role": ..., "content": ...}, ...]}\n'
        "skipped log.jsonl:3: JSONL whose line 3 is a JSON array, not an object; one JSON object a line: fix the line\n"
        "skipped 2 items (--skip-invalid); each is listed above\n"
    )
    assert result.stdout.startswith("wrote 2 chronologies into out\n")
    assert sorted(os.listdir(project / "out")) == ["log-line-1.yaml", "log-line-4.yaml"]  # line 4 keeps its number


@pytest.mark.slow
def test_a_fastchat_sharegpt_array_imports_without_a_licence_flag_and_runs(project: Path) -> None:
    imported = invoke("import", "sharegpt", str(FIXTURES / "sharegpt.json"), "--out", "chronologies", "--probe-last")
    assert imported.exit_code == 0, imported.output
    run = invoke("run", "--run-id", "t", "--quiet", "--no-charts", "--policy", "full-history")
    assert run.exit_code == 0, run.output
    calls = [json.loads(line) for line in (project / "results" / "t" / "calls.jsonl").read_text().splitlines()]
    assert sorted((c["chronology"], c["turn"]) for c in calls if c["kind"] == "answer") == [
        ("sharegpt-item-3", 2),
        ("sharegpt-rules-2", 2),
        ("sharegpt-trip-1", 2),
    ]


@pytest.mark.slow
def test_an_imported_benchmark_runs_offline_calling_the_model_only_at_probes(project: Path) -> None:
    imported = invoke(
        "import",
        "multichallenge",
        str(FIXTURES / "benchmark_questions.jsonl"),
        "--out",
        "chronologies",
        "--accept-licence",
        "named-by-the-user",
    )
    assert imported.exit_code == 0, imported.output
    run = invoke(
        "run", "--run-id", "t", "--quiet", "--no-charts", "--policy", "full-history", "--policy", "last-turns:turns=1"
    )
    assert run.exit_code == 0, run.output
    results = project / "results" / "t"
    answers = [json.loads(line) for line in (results / "calls.jsonl").read_text().splitlines()]
    answers = [c for c in answers if c["kind"] == "answer"]
    # two chronologies x two policies, each answered once: at its probe; recorded replies cost no call
    assert sorted((c["chronology"], c["policy"], c["turn"]) for c in answers) == sorted(
        (name, policy, turn)
        for name, turn in (("multichallenge-6741c4b7a2f0d1a1", 3), ("multichallenge-9b3e2c10ffee0002", 2))
        for policy in ("full-history", "last-turns:turns=1")
    )
    with open(results / "probes.csv", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["check"] == "prohibition"]
    # the first instruction: in view under full history, out of the one-turn window; its answer not asked
    assert {(r["policy"], r["subject"], r["in_view"], r["in_answer"]) for r in rows} == {
        ("full-history", "first-instruction", "true", ""),
        ("last-turns:turns=1", "first-instruction", "false", ""),
    }
    assert os.path.isfile(project / "reports" / "t.md")


@pytest.mark.slow
def test_an_imported_benchmark_s_expectations_are_rows_that_say_where_the_evidence_was(project: Path) -> None:
    fixture = str(FIXTURES / "conflict_resolution.jsonl")
    assert (
        invoke("import", "factconsolidation", fixture, "--out", "chronologies", "--facts-per-turn", "2").exit_code == 0
    )
    run = invoke(
        "run", "--run-id", "t", "--quiet", "--no-charts", "--policy", "full-history", "--policy", "last-turns:turns=1"
    )
    assert run.exit_code == 0, run.output
    with open(project / "results" / "t" / "probes.csv", newline="") as handle:
        rows = {
            (r["policy"], r["probe"], r["subject"].split(":")[0]): r
            for r in csv.DictReader(handle)
            if r["check"] == "expect"
        }
    # the reference model finds no answer in prose facts: the newest value is never given, no stale one either
    assert {key[2] for key, r in rows.items() if r["passed"] == "false"} == {"value", "pattern"}
    assert all(r["passed"] == "true" for key, r in rows.items() if key[2] == "not")
    # q2's evidence (facts 4-5, turn 3) left the one-turn window when q1 was asked; full history kept it
    assert rows[("full-history", "q2", "pattern")]["in_view"] == "true"
    window = rows[("last-turns:turns=1", "q2", "pattern")]
    assert (window["in_view"], window["cause"], window["lost_at"]) == (
        "false",
        "window",
        "left the request window at turn 5",
    )
