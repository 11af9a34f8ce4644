"""Authoring chronologies: `harness new`, the shipped JSON Schema, `harness validate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness.chronology.declarations import ALLOWED_KEYS
from harness.chronology.loading import chronology_schema, load_chronology
from harness.chronology.scaffold import SCHEMA_FILE, scaffold_text
from harness.cli.commands import main
from harness.results.tables import load_results
from tests.conftest import COMPARISON, CONTROL
from tests.paths import ROOT, SHIPPED

SCHEMA_LINE = "# yaml-language-server: $schema=../schema/chronology.schema.json"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


# --- harness new ----------------------------------------------------------------------------


def test_new_writes_a_scaffold_that_validates_as_is(project: Path) -> None:
    result = invoke("new", "restart-after-patch")
    assert result.exit_code == 0, result.output
    path = project / "chronologies" / "restart-after-patch.yaml"
    assert result.output.startswith("wrote chronologies/restart-after-patch.yaml\n")
    assert path.read_text(encoding="utf-8").splitlines()[0] == SCHEMA_LINE
    chronology = load_chronology(path)
    assert chronology.title == "Restart after patch" and [p.probe for p in chronology.probes] == ["restart"]
    assert invoke("validate").output == "ok: chronologies/restart-after-patch.yaml (6 turns, 1 probe)\n"


def test_new_creates_the_chronologies_folder_when_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert invoke("new", "first").exit_code == 0
    assert (tmp_path / "chronologies" / "first.yaml").is_file()


def test_new_never_overwrites_a_file(project: Path) -> None:
    path = project / "chronologies" / "mine.yaml"
    path.write_text("title: mine\n", encoding="utf-8")
    result = invoke("new", "mine")
    assert result.exit_code == 2
    assert "chronologies/mine.yaml already exists" in result.stderr
    assert path.read_text(encoding="utf-8") == "title: mine\n"


@pytest.mark.parametrize("target", ["victim", "missing"])
def test_new_never_writes_through_a_link_at_the_name(project: Path, target: str) -> None:
    (project / "victim").write_text("precious\n", encoding="utf-8")
    (project / "chronologies" / "mine.yaml").symlink_to(project / target)
    result = invoke("new", "mine")
    assert result.exit_code == 2
    assert "chronologies/mine.yaml is a symbolic link; harness new never writes through one" in result.stderr
    assert (project / "victim").read_text(encoding="utf-8") == "precious\n" and not (project / "missing").exists()


def test_new_says_when_chronologies_is_not_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chronologies").write_text("", encoding="utf-8")
    result = invoke("new", "first")
    assert result.exit_code == 2 and "chronologies is not a folder" in result.stderr


@pytest.mark.parametrize("name", ["x.yaml", "../escape", "a b", "_hidden", "", "sub/name", "é"])
def test_new_refuses_a_name_that_is_not_a_plain_file_stem(project: Path, name: str) -> None:
    result = invoke("new", name)
    assert result.exit_code == 2
    assert "a chronology name is a file stem" in result.stderr
    assert list((project / "chronologies").iterdir()) == []
    assert not (project / "escape.yaml").exists()


def test_new_suggests_the_stem_for_a_file_name(project: Path) -> None:
    assert "use 'mine'" in invoke("new", "mine.yaml").stderr


@pytest.mark.slow
def test_the_scaffold_runs_and_shows_what_its_description_promises(project: Path) -> None:
    invoke("new", "example")
    result = invoke("run", "--run-id", "ex", "--quiet")
    assert result.exit_code == 0, result.output
    probes = load_results(project / "results" / "ex").probes
    rows = probes[probes.check == "prohibition"]
    kept = set(rows[rows.passed.astype(bool)].policy)
    # the description names the seed's policies; the deployed four keep the constraint as well; the
    # control keeps nothing
    assert kept == set(COMPARISON) - {"last-turns", "request-compaction", "retained-reduction"} - set(CONTROL)
    stale = probes[(probes.check == "stale") & probes.in_view.astype(bool)]
    # the verbatim turns of summary-buffer and token-budget still fit the whole short conversation;
    # clear-tool-uses and tool-result-compaction, with no tool use to clear or collapse, keep it all
    assert list(stale.policy) == [
        "full-history",
        "summary-buffer",
        "token-budget",
        "clear-tool-uses",
        "tool-result-compaction",
    ]
    assert set(stale.subject) == {"database=PostgreSQL"}


def test_new_agent_writes_an_agent_scaffold_that_validates_as_is(project: Path) -> None:
    result = invoke("new", "--agent", "fix-export")
    assert result.exit_code == 0, result.output
    path = project / "chronologies" / "fix-export.yaml"
    assert path.read_text(encoding="utf-8").splitlines()[0] == SCHEMA_LINE
    chronology = load_chronology(path)
    steps = [step for turn in chronology.user_turns for step in turn.steps]
    assert [call.id for step in steps for call in step.tool_calls] == ["call_1", "call_2", "call_3", "call_4"]
    assert steps[1].results[0].error and steps[1].tool_calls[0].arguments == '{"filter": "export"}'


@pytest.mark.slow
def test_the_agent_scaffold_runs_and_shows_what_its_description_promises(project: Path) -> None:
    invoke("new", "--agent", "example")
    result = invoke("run", "--run-id", "ex", "--quiet")
    assert result.exit_code == 0, result.output
    results = load_results(project / "results" / "ex")
    rows = results.probes[results.probes.check == "prohibition"]
    kept = set(rows[rows.passed.astype(bool)].policy)
    windows = {"last-turns", "request-compaction", "retained-reduction", "facts+window"}
    assert kept == set(COMPARISON) - windows - {"bounded-facts", "bounded-facts:mode=provider"} - set(CONTROL)
    assert results.turns.group_violations.isna().all()  # no policy separates a call from its result


@pytest.mark.parametrize("agent", [False, True], ids=["plain", "agent"])
def test_the_scaffold_uses_only_fields_the_schema_declares(agent: bool) -> None:
    data = yaml.safe_load(scaffold_text("x", agent))
    schema = chronology_schema()
    assert set(data) <= set(schema["properties"])
    turn_fields = set(schema["$defs"]["TurnSpec"]["properties"])
    assert all(set(turn) <= turn_fields for turn in data["turns"])


def test_the_scaffold_shows_its_key_set_which_is_the_default() -> None:
    assert tuple(yaml.safe_load(scaffold_text("x"))["keys"]) == ALLOWED_KEYS


# --- the shipped schema ---------------------------------------------------------------------


def test_the_shipped_schema_is_what_harness_schema_prints() -> None:
    shipped = (ROOT / SCHEMA_FILE).read_text(encoding="utf-8")
    printed = invoke("schema").output
    assert shipped == printed, "regenerate it: harness schema > schema/chronology.schema.json"
    assert json.loads(shipped) == chronology_schema()


def test_the_schema_line_of_every_chronology_points_at_the_shipped_schema() -> None:
    target = SCHEMA_LINE.split("$schema=")[1]
    assert (SHIPPED / target).resolve() == (ROOT / SCHEMA_FILE).resolve()
    for path in sorted((SHIPPED).glob("*.yaml")):
        assert path.read_text(encoding="utf-8").splitlines()[0] == SCHEMA_LINE, path.name
    assert scaffold_text("x").splitlines()[0] == SCHEMA_LINE


# --- harness validate -----------------------------------------------------------------------


def test_validate_takes_files_and_folders_and_prints_one_ok_line_per_file(project: Path) -> None:
    invoke("new", "one")
    invoke("new", "two")
    result = invoke("validate", "chronologies/one.yaml", "chronologies")
    assert result.exit_code == 0
    assert result.output.splitlines() == [
        "ok: chronologies/one.yaml (6 turns, 1 probe)",
        "ok: chronologies/two.yaml (6 turns, 1 probe)",
    ]


def test_validate_exits_2_naming_file_line_and_field_of_each_problem(project: Path) -> None:
    invoke("new", "good")
    bad = project / "chronologies" / "bad.yaml"
    bad.write_text("title: t\nturns:\n  - user: hi\n    session: billing\n  - forget: modul\n", encoding="utf-8")
    result = invoke("validate")
    assert result.exit_code == 2
    assert "chronologies/bad.yaml:4: turns[0].session: unknown session 'billing' (declared: main)" in result.stderr
    assert "chronologies/bad.yaml:5: turns[1].forget: unknown fact key 'modul'" in result.stderr


def test_validate_exits_2_on_a_source_category_that_is_not_text(project: Path) -> None:
    bad = project / "chronologies" / "item.yaml"
    source = "source: {dataset: d, item_id: '1', sha256: '" + "ab" * 32 + "', licence: MIT, category: 3}"
    bad.write_text(f"title: t\n{source}\nturns:\n  - user: hi\n    probe: p\n", encoding="utf-8")
    result = invoke("validate", "chronologies/item.yaml")
    assert result.exit_code == 2
    assert "chronologies/item.yaml:2: source.category: expected a string" in result.stderr
