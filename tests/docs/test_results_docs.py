"""results/README.md describes every column and field the harness writes, and nothing else."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.policy.tokens import TOKENS_PER_MESSAGE, TOKENS_PER_REQUEST
from harness.results.rows import NOT_ASKED, PROBE_COLUMNS, REFUSED_NOT_IN_VIEW, TURN_COLUMNS
from tests.conftest import run_through_cli
from tests.paths import ROOT, SHIPPED

DOC = (ROOT / "results" / "README.md").read_text(encoding="utf-8")


def documented(file: str) -> set[str]:
    """The backticked names in the first column of the table under `## `file``."""
    section = DOC.split(f"## `{file}`", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([a-z][a-z0-9_]*)`", line.split("|")[1]))
    return names


def keys(path: Path) -> set[str]:
    return {key for line in path.read_text(encoding="utf-8").splitlines() for key in json.loads(line)}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = [SHIPPED / "correct-then-forget.yaml", SHIPPED / "summary-overflow.yaml"]
    return run_through_cli(tmp_path_factory.mktemp("docs"), files, "docs")


def test_every_csv_column_is_documented() -> None:
    assert documented("turns.csv") == set(TURN_COLUMNS)
    assert documented("probes.csv") == set(PROBE_COLUMNS)


@pytest.mark.parametrize("file", ["calls.jsonl", "facts.jsonl", "views.jsonl", "conversations.jsonl"])
@pytest.mark.slow  # the plain comparison over two chronologies: every policy's fields
def test_every_jsonl_field_is_documented(run: Path, file: str) -> None:
    assert documented(file) == keys(run / file)


@pytest.mark.slow  # reads the same run
def test_every_manifest_field_is_documented(run: Path) -> None:
    assert documented("manifest.json") == set(json.loads((run / "manifest.json").read_text()))


def test_the_tiktoken_columns_say_which_framing_they_count() -> None:
    """Issue 24, item 8: `tiktoken_*` is more than the contents' tokens; the page says by how much."""
    intro = DOC.split("## ", 1)[0]
    assert f"plus {TOKENS_PER_MESSAGE} tokens per message" in intro
    assert f"and {TOKENS_PER_REQUEST} per request" in intro


def test_every_note_the_checks_write_is_documented() -> None:
    note = next(line for line in DOC.splitlines() if line.startswith("| `note` |"))
    assert f"`{NOT_ASKED}`" in note and f"`{REFUSED_NOT_IN_VIEW}`" in note
