"""docs/writing-a-policy.md, "A complete plug-in": its example, installed from a temporary folder, runs end to end."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.results.tables import load_results
from tests.paths import ROOT
from tests.plugins import install_plugin

GUIDE = ROOT / "docs" / "writing-a-policy.md"
CHRONOLOGY = """\
title: Notes instead of history
prohibitions:
  no-restart:
    present: '(?i)\\bnever\\b[^.;\\n]*\\brestart'
    violated_by: '(?i)^\\s*yes\\b'
turns:
  - user: constraint=never restart production; module=Billing
    assistant: Understood.
  - user: database=PostgreSQL
    assistant: Noted.
  - user: Can I restart production now?
    probe: restart
"""


def section(title: str) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def block(text: str, language: str) -> str:
    """The one fenced code block of `language` in `text`."""
    found = re.findall(rf"^```{language}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert len(found) == 1, f"expected one {language} block in the guide's 'A complete plug-in', found {len(found)}"
    return found[0]


@pytest.fixture
def example(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The guide's example installed as a distribution from a temporary folder; its entry points."""
    guide = section("A complete plug-in")
    entries = tomllib.loads(block(guide, "toml"))["project"]["entry-points"]["harness.policies"]
    (module,) = {value.partition(":")[0] for value in entries.values()}
    lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
    install_plugin(tmp_path / "site", monkeypatch, module, block(guide, "python"), f"[harness.policies]\n{lines}")
    (project / "chronologies" / "notes.yaml").write_text(CHRONOLOGY, encoding="utf-8")
    return entries


def test_the_example_is_listed_with_its_parameters(example: dict[str, str]) -> None:
    listed = CliRunner().invoke(main, ["policies"]).output
    assert "notes  (keep=5)" in listed and "broken" not in listed


@pytest.mark.slow
def test_the_example_makes_its_extra_call_through_the_seam_with_the_reference_model(
    example: dict[str, str], project: Path
) -> None:
    args = [
        "run",
        "--policy",
        "notes:keep=1",
        "--policy",
        "full-history",
        "--model-role",
        "note-taker=reference",
        "--run-id",
        "t",
        "--quiet",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    results = load_results(project / "results" / "t")
    notes = results.calls[results.calls.policy == "notes:keep=1"]
    assert list(notes.kind) == ["note-taker", "note-taker", "answer", "note-taker"]
    assert set(notes[notes.kind == "note-taker"].call_model) == {"reference"}
    assert notes.response.iloc[0] == '{"note": "constraint=never restart production; module=Billing"}'
    turns = results.turns[results.turns.policy == "notes:keep=1"]
    assert list(turns.aux_calls) == [1, 1, 1] and set(turns.status) == {"scripted", "answered"}
    probes = results.probes[(results.probes.policy == "notes:keep=1") & (results.probes.check == "prohibition")]
    # keep=1: the note of turn 1, which held the prohibition, was dropped at turn 2
    assert probes.in_view.tolist() == [False] and "note of turn 1 dropped at turn 2" in probes.lost_at.iloc[0]
    assert (project / "reports" / "t.md").is_file()
