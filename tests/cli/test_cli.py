"""The command line, end to end: what a user types and what lands on disk."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.base.text import visible
from harness.cli.commands import main
from harness.results.rows import PROBE_COLUMNS, TURN_COLUMNS
from harness.results.tables import load_results
from tests.conftest import AGENT, COMPARISON, DEPLOYED, PROVIDER
from tests.conftest import SEED as SEED_POLICIES
from tests.hostile_text import CHRONOLOGY, FILE_NAME, obeyed
from tests.paths import SHIPPED

SEED = [SHIPPED / "correct-then-forget.yaml", SHIPPED / "memory-drift.yaml"]  # the seed scenarios


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def shipped(project: Path) -> Path:
    for path in SEED:
        shutil.copy(path, project / "chronologies" / path.name)
    return project


@pytest.mark.slow
def test_run_writes_every_results_file_and_a_report(shipped: Path) -> None:
    result = invoke("run", "--run-id", "t", "--quiet")
    assert result.exit_code == 0, result.output
    directory = shipped / "results" / "t"
    for name in ("manifest.json", "calls.jsonl", "turns.csv", "probes.csv", "facts.jsonl", "views.jsonl"):
        assert (directory / name).is_file(), name
    header = (directory / "turns.csv").read_text().splitlines()[0].split(",")
    assert tuple(header) == TURN_COLUMNS
    assert tuple((directory / "probes.csv").read_text().splitlines()[0].split(",")) == PROBE_COLUMNS
    assert (shipped / "reports" / "t.md").is_file()


@pytest.mark.slow
def test_the_manifest_describes_the_run(shipped: Path) -> None:
    invoke("run", "--run-id", "t", "--quiet", "--repetitions", "2")
    manifest = json.loads((shipped / "results" / "t" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["repetitions"] == 2
    assert manifest["tokenizer"] == {"encoding": "cl100k_base", "available": True}
    assert {c["name"] for c in manifest["chronologies"]} == {"correct-then-forget", "memory-drift"}
    assert all(len(c["sha256"]) == 64 for c in manifest["chronologies"])
    assert [p["label"] for p in manifest["policies"]][4] == "bounded-facts:mode=provider"
    # reference is deterministic: its two requested repetitions run once
    pairs = 2 * len(COMPARISON)  # two chronologies under every built-in policy
    assert manifest["conversations"] == {"total": pairs, "complete": pairs} and manifest["repetitions_run"] == {
        "reference": 1
    }


def test_run_shows_progress_on_stderr(shipped: Path) -> None:
    result = CliRunner().invoke(main, ["run", "--run-id", "t", "--policy", "full-history", "--no-charts"])
    assert "[1/2] correct-then-forget · full-history · reference · rep 1: complete" in result.stderr


def test_policy_parameters_are_recorded(shipped: Path) -> None:
    invoke("run", "--run-id", "t", "--quiet", "--policy", "last-turns:turns=5", "--policy", "summary", "--no-charts")
    manifest = json.loads((shipped / "results" / "t" / "manifest.json").read_text())
    assert manifest["policies"] == [
        {"label": "last-turns:turns=5", "name": "last-turns", "params": {"turns": 5, "pin": "false"}},
        {"label": "summary", "name": "summary", "params": {"max_chars": 700, "pin": "false"}},
    ]


def test_model_roles_and_their_aliases_are_recorded_in_the_manifest(shipped: Path) -> None:
    invoke(
        "run",
        "--run-id",
        "t",
        "--quiet",
        "--policy",
        "summary",
        "--policy",
        "bounded-facts",
        "--model-role",
        "summarizer=reference",
        "--writer-model",
        "reference",
        "--no-charts",
    )
    options = json.loads((shipped / "results" / "t" / "manifest.json").read_text())["model_options"]
    assert options["model_roles"] == {"summarizer": "reference", "writer": "reference"}
    assert (options["summarizer_model"], options["writer_model"]) == ("reference", "reference")


BAD_INPUTS = [
    (["run", "--policy", "no-such-policy"], "unknown policy 'no-such-policy'"),
    (["run", "--policy", "last-turns:turnz=2"], "unknown parameter 'turnz=2'"),
    (["run", "--policy", "last-turns:turns=many"], "--policy last-turns:turns=many: turns:"),
    (["run", "--policy", "bounded-facts:mode=both"], "must be one of message, provider"),
    (["run", "--model", "gpt-9"], "--model gpt-9: unknown model"),
    (["run", "--run-id", "../escape"], "--run-id"),
    (["run", "missing.yaml"], "missing.yaml"),
    (["run", "--model-role", "summarizer"], "--model-role summarizer: expected ROLE=MODEL"),
    (["run", "--model-role", "writer=gpt-9"], "--model-role writer=gpt-9: unknown model"),
    (["run", "--model-role", "answer=reference"], "answer is not a policy's role; use --model"),
    (["run", "--model-role", "summariser=reference"], "the role 'summariser' (did you mean summarizer?)"),
    (
        ["run", "--policy", "full-history", "--writer-model", "reference"],
        "no policy of this run calls the role 'writer'",
    ),
    (["run", "--policy", f"last-turns:turns={10**30}"], "turns: must be at most 100,000"),
    (
        ["run", "--model-role", "summarizer=reference", "--summarizer-model", "local"],
        "--model-role summarizer=reference and --summarizer-model local both map the role summarizer",
    ),
]


@pytest.mark.parametrize("args, message", BAD_INPUTS)
def test_bad_input_exits_2_with_one_message_and_writes_nothing(shipped: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert not (shipped / "results").exists() and not (shipped / "reports").exists()


def test_a_bad_chronology_names_file_line_and_field_and_writes_nothing(project: Path) -> None:
    (project / "chronologies" / "bad.yaml").write_text("title: t\nturns:\n  - user: hi\n    asistant: hello\n")
    for command in (["run"], ["validate"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2
        assert "chronologies/bad.yaml:4: turns[0].asistant: unknown field" in result.stderr
    assert not (project / "results").exists() and not (project / "reports").exists()


def test_an_empty_chronology_folder_is_bad_input(project: Path) -> None:
    result = CliRunner().invoke(main, ["run"])
    assert result.exit_code == 2 and "no chronology (*.yaml) found in chronologies" in result.stderr
    assert not (project / "results").exists()


def test_validate_says_ok_for_each_valid_file_even_when_another_fails(shipped: Path) -> None:
    (shipped / "chronologies" / "zz-bad.yaml").write_text("title: t\nturns: []\n")
    result = CliRunner().invoke(main, ["validate"])
    assert result.exit_code == 2
    assert "ok: chronologies/memory-drift.yaml (9 turns, 3 probes)" in result.stdout
    assert "chronologies/zz-bad.yaml:2: turns" in result.stderr


def test_an_existing_run_directory_is_not_overwritten(shipped: Path) -> None:
    invoke("run", "--run-id", "t", "--quiet", "--policy", "full-history", "--no-charts")
    result = CliRunner().invoke(main, ["run", "--run-id", "t", "--quiet"])
    assert result.exit_code == 2 and "already exists" in result.stderr


def test_validate_prints_one_ok_line_per_file(shipped: Path) -> None:
    result = invoke("validate")
    assert result.exit_code == 0
    assert result.output.splitlines() == [
        "ok: chronologies/correct-then-forget.yaml (10 turns, 5 probes)",
        "ok: chronologies/memory-drift.yaml (9 turns, 3 probes)",
    ]


def test_policies_lists_each_policy_with_its_parameters() -> None:
    output = invoke("policies").output
    for line in (
        "last-turns  (turns=3, pin=false)",
        "summary  (max_chars=700, pin=false)",
        "bounded-facts  (mode=message, provenance=on)",
        "request-compaction  (trigger=3, preserve=3, pin=false)",
        "full-history  (no parameters)",
    ):
        assert line in output


@pytest.mark.slow
def test_report_rebuilds_the_same_report_from_results(shipped: Path) -> None:
    invoke("run", "--run-id", "t", "--quiet")
    written = (shipped / "reports" / "t.md").read_bytes()
    (shipped / "reports" / "t.md").unlink()
    assert invoke("report", "results/t").exit_code == 0
    assert (shipped / "reports" / "t.md").read_bytes() == written


def test_report_of_a_folder_that_is_not_results_exits_2(project: Path) -> None:
    result = CliRunner().invoke(main, ["report", "chronologies"])
    assert result.exit_code == 2 and "not a results directory" in result.stderr


def test_schema_prints_json_schema() -> None:
    assert "turns" in json.loads(invoke("schema").output)["properties"]


def test_results_load_as_dataframes(shipped: Path) -> None:
    invoke("run", "--run-id", "t", "--quiet", "--policy", "full-history", "--no-charts")
    results = load_results(shipped / "results" / "t")
    assert results.probes.passed.dtype == "boolean"
    assert set(results.probes.check) == {"prohibition", "current", "stale", "forgotten"}


def test_ctrl_c_says_how_to_resume_and_exits_130(shipped: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(plan: object, directory: Path, *args: object) -> None:
        (directory / "manifest.json").write_text("{}")  # records exist
        raise KeyboardInterrupt

    monkeypatch.setattr("harness.run.batch.run_batch", interrupted)
    result = CliRunner().invoke(main, ["run", "--run-id", "t", "--quiet"])
    assert result.exit_code == 130
    assert "finish with: harness run --resume results/t" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--policy", "last-turns", "--policy", "last-turns:turns=3"),
            "--policy last-turns and --policy last-turns:turns=3 are the same policy (last-turns)",
        ),
        (("--model", "reference", "--model", "reference"), "--model reference is given twice"),
    ],
    ids=["same-policy-label", "same-model"],
)
def test_two_specs_resolving_to_one_label_exit_2_naming_both(
    shipped: Path, args: tuple[str, ...], message: str
) -> None:
    """Issue 9, case 5: both ran under one label, every probes.csv row twice."""
    result = CliRunner().invoke(main, ["run", *args, "--quiet"])
    assert result.exit_code == 2 and message in result.output
    assert not (shipped / "results").exists()


def test_repetitions_of_a_deterministic_model_run_once_and_say_so(shipped: Path) -> None:
    result = CliRunner().invoke(
        main, ["run", "--repetitions", "3", "--run-id", "r", "--policy", "full-history", "--no-charts"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("reference is deterministic: --repetitions 3 would repeat identical results") == 1
    results = load_results(shipped / "results" / "r")
    assert set(results.probes.repetition) == {1}
    assert results.manifest.repetitions_run == {"reference": 1}
    report = (shipped / "reports" / "r.md").read_text()
    assert "reference ran once: deterministic" in report


@pytest.mark.slow
def test_resume_accepts_options_that_repeat_the_run_s_own_settings(shipped: Path) -> None:
    invoke("run", "--run-id", "t", "--quiet", "--policy", "last-turns:turns=3", "--seed", "0")
    manifest = shipped / "results" / "t" / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "status": "running"}))
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--resume",
            "results/t",
            "--quiet",
            "--policy",
            "last-turns",
            "--seed",
            "0",
            "--run-id",
            "t",
            "--out",
            "results",
            "--cache",
            "chronologies",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(manifest.read_text())["status"] == "complete"


@pytest.mark.slow
def test_quiet_prints_only_the_two_paths(shipped: Path) -> None:
    result = CliRunner().invoke(main, ["run", "--quiet", "--run-id", "q", "--repetitions", "2"])
    assert result.exit_code == 0
    assert result.output.splitlines() == ["results: results/q", "report:  reports/q.md"]


def test_outside_the_project_root_the_error_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run"])
    assert result.exit_code == 2
    assert f"no chronologies/ folder in {tmp_path}" in result.output and "run from the project root" in result.output


def test_policies_are_listed_in_the_default_runs_order_with_its_sets() -> None:
    lines = invoke("policies").output.splitlines()
    assert lines[0].split(": ", 1) == ["A plain `harness run` compares", ", ".join(COMPARISON)]
    provider = ", ".join(PROVIDER)  # outside a plain run (`opt_in`), named by their set
    assert lines[1:6] == [
        "--policy seed selects exactly the seed's comparison: " + ", ".join(SEED_POLICIES),
        "--policy provider selects the seed's comparison, then " + provider,
        "--policy opt_in selects the seed's comparison, then " + provider,
        "--policy agent selects the seed's comparison, then " + ", ".join(AGENT),
        "--policy deployed selects the seed's comparison, then " + ", ".join(DEPLOYED),
    ]
    listed = [line.split("  ")[0] for line in lines[8:] if line and not line.startswith(" ")]
    assert listed == [*dict.fromkeys(label.split(":")[0] for label in COMPARISON), *PROVIDER]
    assert lines[lines.index("full-history  (no parameters)") + 2] == "    sets: seed; runs in a plain run"


@pytest.mark.slow
def test_resume_compares_each_setting_with_the_manifest_accepting_a_repeat_refusing_a_change(shipped: Path) -> None:
    invoke("run", "--run-id", "t", "--quiet", "--policy", "full-history")
    manifest = shipped / "results" / "t" / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "status": "running"}))
    changed = ["--temperature", "0.9", "--model-role", "summarizer=reference", "--local-context", "512"]
    result = CliRunner().invoke(main, ["run", "--resume", "results/t", *changed, "--quiet"])
    assert result.exit_code == 2 and json.loads(manifest.read_text())["status"] == "running"  # nothing was resumed
    assert (
        "--temperature 0.9 (the run has 0.0); --model-role summarizer=reference (the run has none); " in result.output
    )
    assert "--local-context 512 (the run has 4096)" in result.output
    repeated = ["--temperature", "0", "--max-tokens", "answer=512", "--local-context", "4096"]
    result = CliRunner().invoke(main, ["run", "--resume", "results/t", *repeated, "--quiet"])
    assert result.exit_code == 0, result.output
    assert json.loads(manifest.read_text())["status"] == "complete"


def test_validate_shows_hostile_file_names_and_fields_as_escapes_never_obeyed(project: Path) -> None:
    (project / "chronologies" / FILE_NAME).write_text(CHRONOLOGY, encoding="utf-8")
    (project / "chronologies" / "bad\x1b]8;;evil\x07.yaml").write_text(
        'title: t\n"x\\e[2J\\r\\b\\a": 1\nturns:\n  - user: hi\n', encoding="utf-8"
    )
    result = CliRunner().invoke(main, ["validate"], color=True)
    assert result.exit_code == 2 and obeyed(result.output) == []
    assert f"ok: chronologies/{visible(FILE_NAME)} (4 turns, 2 probes)" in result.stdout
    assert "chronologies/bad\\x1b]8;;evil\\x07.yaml:2: 'x\\x1b[2J\\r\\x08\\x07': unknown field" in result.stderr


def test_a_file_name_that_is_not_utf8_is_refused_with_one_message(project: Path) -> None:
    (project / "chronologies" / os.fsdecode(b"caf\xe9.yaml")).write_text(CHRONOLOGY, encoding="utf-8")
    for command in (["validate"], ["run", "--quiet"]):
        result = CliRunner().invoke(main, command, color=True)
        assert result.exit_code == 2, result.output
        assert "chronologies/caf\\udce9.yaml: the path is not UTF-8 (byte 0xe9); rename it" in result.stderr
    assert not (project / "results").exists()


@pytest.mark.parametrize(
    "args", [["run", "--model", "openai:\udcff"], ["show", "results/x", "--chronology", "\udce9", "--turn", "1"]]
)
def test_an_argument_that_is_not_utf8_is_refused_with_one_message(project: Path, args: list[str]) -> None:
    result = CliRunner().invoke(main, args, color=True)
    assert result.exit_code == 2 and result.exception is not None and isinstance(result.exception, SystemExit)
    assert "is not UTF-8 text (byte 0x" in result.stderr and obeyed(result.stderr) == []
    assert not (project / "results").exists()


def test_run_prints_twenty_warnings_then_how_many_more_and_validate_prints_all(project: Path) -> None:
    turns = "".join(f"  - user: colour{i}=blue\n" for i in range(25))
    (project / "chronologies" / "many.yaml").write_text(f"title: many\nturns:\n{turns}")
    ran = CliRunner().invoke(main, ["run", "--run-id", "w", "--policy", "full-history"])
    assert ran.exit_code == 0, ran.output
    assert ran.stderr.count(": warning: ") == 20
    assert "… and 5 more warnings; `harness validate` on these chronologies lists every one" in ran.stderr
    assert invoke("validate").output.count(": warning: ") == 25
