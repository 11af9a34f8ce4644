"""A batch file naming a file that is not a chronology, or being none itself, or a special file
in either place: one message per file, exit status 2, and never a word of what such a file holds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli.commands import main
from tests.paths import SHIPPED

SHADOW = "".join(f"user{i}:$6$SECRET-HASH-{i}:19000:0:99999:7:::\n" for i in range(40))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "chronologies").mkdir()
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path / "chronologies")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "shadow").write_text(SHADOW)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_batch(text: str) -> Result:
    Path("b.yaml").write_text(text)
    return CliRunner().invoke(main, ["run", "--batch", "b.yaml", "--quiet"])


def test_a_system_file_named_as_a_chronology_is_not_shown(project: Path) -> None:
    result = run_batch(f"chronologies: [{project}/etc/shadow, chronologies/memory-drift.yaml]\n")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {project}/etc/shadow:1: not a chronology: none of its top-level keys is a chronology field "
        "(title, turns, ...); give a chronology file (`harness new NAME` writes one)\n"
    )
    assert not (project / "results").exists()


def test_a_system_file_given_as_the_batch_file_is_not_shown(project: Path) -> None:
    result = CliRunner().invoke(main, ["run", "--batch", "etc/shadow", "--quiet"])
    assert result.exit_code == 2
    assert result.stderr == (
        "error: etc/shadow:1: not a batch file: none of its top-level keys is a batch field "
        "(chronologies, policies, models, ...); give a batch file (see batches/default.yaml)\n"
    )


def test_a_batch_files_own_unknown_field_is_quoted_short_and_printable(project: Path) -> None:
    result = run_batch('chronologies: [chronologies/memory-drift.yaml]\n"\\e[2J' + "x" * 200 + '": 1\n')
    assert result.exit_code == 2 and "\x1b" not in result.stderr and "x" * 30 not in result.stderr
    assert "unknown field '\\x1b[2Jxxxxxxxxxxxxxxxx'... (204 characters); allowed: chronologies," in result.stderr


def test_a_pattern_matching_nothing_is_quoted_short(project: Path) -> None:
    result = run_batch('chronologies: ["\\e]0;x\\a' + "y" * 200 + '.yaml"]\n')
    assert result.exit_code == 2 and "\x1b" not in result.stderr and "y" * 30 not in result.stderr
    assert "matches no file or folder next to the batch file" in result.stderr


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "/dev/null"])
@pytest.mark.parametrize("as_what", ["chronology", "batch file"])
def test_a_special_file_as_a_chronology_or_as_the_batch_file_is_refused_with_one_line(
    project: Path, special: str, as_what: str
) -> None:
    path = special
    if special == "fifo":
        os.mkfifo(project / "pipe.yaml")
        path = "pipe.yaml"
    if as_what == "batch file":
        result = CliRunner().invoke(main, ["run", "--batch", path, "--quiet"])
    else:
        result = run_batch(f"chronologies: [{path}]\n")
    kind = "a named pipe (FIFO)" if special == "fifo" else "a character device"
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and f"{kind}, not a regular file" in result.stderr
