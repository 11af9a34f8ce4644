"""CLI misuse, table-driven: each case exits 2 with one message and writes nothing.

"Nothing written" is checked over the whole scratch project: every file's bytes are the same
before and after (results/ and reports/ of earlier runs included), and no file appears.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from tests.paths import SHIPPED

ROOT_IGNORES_MODES = os.geteuid() == 0


def unwritable(project: Path) -> Path:
    """A folder this process cannot create files in: read-only by mode, or (root ignores modes)
    sysfs, which refuses new files to everyone."""
    if not ROOT_IGNORES_MODES:
        folder = project / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        return folder
    if not Path("/sys/kernel").is_dir():
        pytest.skip("running as root without /sys: no folder is unwritable")
    return Path("/sys/kernel")


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def finished_run(project: Path) -> Path:
    """results/done: a complete run of the two chronologies under one policy, and its report
    (without charts: no case reads them, and drawing them was most of the run's cost)."""
    result = CliRunner().invoke(main, ["run", "--run-id", "done", "--quiet", "--policy", "full-history", "--no-charts"])
    assert result.exit_code == 0, result.output
    return project / "results" / "done"


def damage(name: str, data: bytes) -> Callable[[Path], None]:
    def setup(project: Path) -> None:
        (finished_run(project) / name).write_bytes(data)

    return setup


def file_named(name: str) -> Callable[[Path], None]:
    def setup(project: Path) -> None:
        (project / name).write_text("not a folder\n")

    return setup


def nothing(project: Path) -> None:
    pass


def non_utf8_csv(project: Path) -> None:
    path = finished_run(project) / "turns.csv"
    path.write_bytes(path.read_bytes() + "memory-drift,full-history,reference,1,99,main,caf\xe9\n".encode("latin-1"))


def interrupted_non_utf8_csv(project: Path) -> None:
    non_utf8_csv(project)
    path = project / "results" / "done" / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "status": "running"}))


def cache_now_a_file(project: Path) -> None:
    interrupted(project)
    shutil.rmtree(project / ".harness-cache")
    (project / ".harness-cache").write_text("not a folder\n")


def half_manifest(project: Path) -> None:
    path = finished_run(project) / "manifest.json"
    path.write_bytes(path.read_bytes()[:200])


def interrupted(project: Path) -> None:
    """results/done with its manifest saying `running`, as after a kill."""
    path = finished_run(project) / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "status": "running"}))


UNWRITABLE = "<unwritable>"
CASES = [
    # (case id, setup, arguments, message)
    ("out-is-a-file", file_named("afile"), ["run", "--out", "afile"], "--out afile: is a file, not a folder"),
    ("out-under-a-file", file_named("afile"), ["run", "--out", "afile/sub"], "lies under afile, which is a file"),
    ("reports-is-a-file", file_named("afile"), ["run", "--reports", "afile"], "--reports afile: is a file"),
    ("cache-dir-is-a-file", file_named("afile"), ["run", "--cache-dir", "afile"], "--cache-dir afile: is a file"),
    ("out-unwritable", nothing, ["run", "--out", UNWRITABLE], "cannot write in"),
    (
        "concurrency-past-threads",
        nothing,
        ["run", "--concurrency", "1000000"],
        "1000000 is not in the range 1<=x<=1024",
    ),
    ("reports-unwritable", nothing, ["run", "--reports", f"{UNWRITABLE}/r"], "--reports"),
    ("cache-dir-unwritable", nothing, ["run", "--cache-dir", UNWRITABLE], "--cache-dir"),
    (
        "report-reports-is-a-file",
        file_named("afile"),
        ["report", "chronologies", "--reports", "afile"],
        "--reports afile",
    ),
    ("run-id-300-chars", nothing, ["run", "--run-id", "a" * 300], "is 300 characters; use at most 100"),
    ("run-id-trailing-newline", nothing, ["run", "--run-id", "abc\n"], "--run-id 'abc\\n'"),
    ("run-id-separator", nothing, ["run", "--run-id", "a/b"], "--run-id 'a/b'"),
    ("run-id-dot", nothing, ["run", "--run-id", ".."], "--run-id '..'"),
    ("timeout-nan", nothing, ["run", "--timeout", "nan"], "--timeout"),
    ("timeout-inf", nothing, ["run", "--timeout", "inf"], "--timeout"),
    ("timeout-negative", nothing, ["run", "--timeout", "-1"], "--timeout"),
    ("timeout-huge", nothing, ["run", "--timeout", "1e300"], "--timeout"),
    ("resume-not-results", nothing, ["run", "--resume", "chronologies"], "not a results directory"),
    ("resume-missing", nothing, ["run", "--resume", "results/none"], "not a results directory"),
    (
        "resume-manifest-not-json",
        damage("manifest.json", b"{"),
        ["run", "--resume", "results/done"],
        "results/done/manifest.json: the manifest is damaged (not valid JSON",
    ),
    ("resume-manifest-cut", half_manifest, ["run", "--resume", "results/done"], "the manifest is damaged"),
    (
        "resume-manifest-not-utf8",
        damage("manifest.json", b"\xff{}"),
        ["run", "--resume", "results/done"],
        "the manifest is damaged (not UTF-8",
    ),
    (
        "resume-manifest-a-list",
        damage("manifest.json", b"[]"),
        ["run", "--resume", "results/done"],
        "the manifest is damaged (not a JSON object)",
    ),
    (
        "resume-manifest-field-missing",
        damage("manifest.json", b'{"format_version": 1}'),
        ["run", "--resume", "results/done"],
        "field 'run_id' is missing",
    ),
    (
        "report-manifest-not-json",
        damage("manifest.json", b"not json"),
        ["report", "results/done"],
        "the manifest is damaged (not valid JSON",
    ),
    ("report-csv-not-utf8", non_utf8_csv, ["report", "results/done"], "results/done/turns.csv:20: not UTF-8"),
    (
        "resume-csv-not-utf8",
        interrupted_non_utf8_csv,
        ["run", "--resume", "results/done"],
        "results/done/turns.csv:20: not UTF-8",
    ),
    (
        "resume-cache-dir-now-a-file",
        cache_now_a_file,
        ["run", "--resume", "results/done"],
        "the run's --cache-dir .harness-cache: is a file, not a folder",
    ),
    (
        "report-csv-missing",
        damage("probes.csv", b""),
        ["report", "results/done"],
        "probes.csv (conversation memory-drift · full-history · reference · 1): holds 0 of its records",
    ),
    (
        "resume-policy-conflict",
        interrupted,
        ["run", "--resume", "results/done", "--policy", "nosuch"],
        "--policy nosuch (the run has full-history)",
    ),
    (
        "resume-seed-conflict",
        interrupted,
        ["run", "--resume", "results/done", "--seed", "3"],
        "--seed 3 (the run has 0)",
    ),
    ("resume-path-conflict", interrupted, ["run", "--resume", "results/done", "chronologies/other.yaml"], "PATH"),
    (
        "resume-model-conflict",
        interrupted,
        ["run", "--resume", "results/done", "--model", "openai:x"],
        "--model openai:x (the run has reference)",
    ),
    (
        "resume-no-cache-conflict",
        interrupted,
        ["run", "--resume", "results/done", "--no-cache"],
        "--cache/--no-cache off (the run has on)",
    ),
    (
        "resume-independent-samples-conflict",
        interrupted,
        ["run", "--resume", "results/done", "--independent-samples"],
        "--independent-samples on (the run has off)",
    ),
    ("resume-run-id-conflict", interrupted, ["run", "--resume", "results/done", "--run-id", "other"], "--run-id other"),
    # a run, a cache or a merge nested in a run's folder (only `harness run` writes there, its own records)
    (
        "out-in-a-results-folder",
        finished_run,
        ["run", "--out", "results/done", "--quiet", "--policy", "full-history"],
        "--out results/done: it lies in the results folder",
    ),
    (
        "cache-dir-in-a-results-folder",
        finished_run,
        ["run", "--cache-dir", "results/done/cache", "--quiet", "--policy", "full-history"],
        "--cache-dir results/done/cache: it lies in the results folder",
    ),
    (
        "merge-into-a-results-folder",
        finished_run,
        ["merge", "results/done/merged", "results/done"],
        "OUT results/done/merged: it lies in the results folder",
    ),
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "chronologies").mkdir()
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path / "chronologies")
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path / "chronologies" / "other.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("setup, args, message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_misuse_exits_2_with_one_message_and_writes_nothing(
    project: Path, setup: Callable[[Path], None], args: list[str], message: str
) -> None:
    setup(project)
    args = [a.replace(UNWRITABLE, str(unwritable(project))) for a in args]
    before = snapshot(project)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception  # no traceback
    assert snapshot(project) == before


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--model", "\x1b[2J" + "x" * 100_000],
        ["run", "--policy", "summary", "--model-role", "\x1b[2J" + "x" * 100_000 + "=reference"],
        ["run", "--timeout", "\x1b[2J" + "x" * 100_000],
    ],
    ids=["model", "model-role", "timeout"],
)
def test_an_option_s_value_is_quoted_at_most_40_characters(project: Path, args: list[str]) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "'\\x1b[2Jxxxxxxxxxxxxxxxx'... (100,004 characters)" in result.stderr and len(result.stderr) < 1_000


LONG = "/".join(["d" * 200] * 2) + "/" + "x" * 256  # a name over the system's 255 bytes: an OS error


@pytest.mark.parametrize(
    "args",
    [
        ["import", "sharegpt", str(SHIPPED / "library.txt"), "--out", f"out/{LONG}"],
        ["run", str(SHIPPED / "budget-cut-correction.yaml"), "--policy", "full-history", "--out", f"out/{LONG}"],
    ],
    ids=["import-out", "run-out"],
)
def test_an_os_error_names_a_long_path_within_40_characters(project: Path, args: list[str]) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "'out/dddddddddddddddd'...'xxxxxxxxxxxxxxxxxxxx' (662 characters)" in result.stderr
    assert "File name too long" in result.stderr and len(result.stderr) < 300
