"""A results folder changed after the harness wrote it is named as such: `harness run --resume`
runs again the conversations whose records no longer match their digests and refuses what no
rerun repairs; `harness report` and `harness merge` refuse it. Each tamper is tried on each
command; a run written before the digests (format version 2) reads as unverified."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.base.errors import InputError
from harness.chronology.loading import load_chronologies
from harness.cli.commands import main
from harness.results.integrity import check
from harness.results.reader import read_manifest
from harness.run.batch import Runtime, resume_batch, run_batch
from harness.run.shards import Shard
from harness.run.spec import RunSpec
from tests.conftest import assert_same_results, builtin_registry
from tests.paths import SHIPPED
from tests.scripted import ScriptedModel, serving

REGISTRY = builtin_registry()
CHRONOLOGIES = [SHIPPED / "correct-then-forget.yaml", SHIPPED / "two-sessions.yaml"]
POLICIES = ("full-history", "summary", "bounded-facts")  # summaries and a fact store: every record file


def plan(**overrides: object) -> RunSpec:
    """Six conversations on the reference model; `overrides` are RunSpec's."""
    policies = [REGISTRY.parse(p) for p in POLICIES]
    return RunSpec(load_chronologies(CHRONOLOGIES), policies, ["reference"], **overrides)  # type: ignore[arg-type]


class Killed(BaseException):
    """Stands for the process being killed: not an error the runner may catch."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Untouched folders: a complete run, the same run killed part way, and its two shards."""
    root = tmp_path_factory.mktemp("runs")
    run_batch(plan(), root / "whole", "whole", Runtime(REGISTRY))
    with pytest.raises(Killed):
        killed = serving(ScriptedModel(fails=Killed(), from_call=30))
        run_batch(plan(), root / "cut", "cut", Runtime(REGISTRY, factory=killed))
    for k in (1, 2):
        run_batch(plan(shard=Shard(k, 2)), root / f"shard{k}", f"shard{k}", Runtime(REGISTRY))
    return {path.name: path for path in root.iterdir()}


def delete_row(folder: Path) -> None:
    """The first conversation's first turns.csv row goes."""
    lines = (folder / "turns.csv").read_bytes().splitlines(keepends=True)
    (folder / "turns.csv").write_bytes(b"".join(lines[:1] + lines[2:]))


def duplicate_line(folder: Path) -> None:
    """The first calls.jsonl line is there twice."""
    lines = (folder / "calls.jsonl").read_bytes().splitlines(keepends=True)
    (folder / "calls.jsonl").write_bytes(b"".join(lines[:1] + lines))


def truncate(folder: Path) -> None:
    """calls.jsonl is cut in the middle of a record."""
    data = (folder / "calls.jsonl").read_bytes()
    cut = data.index(b"\n", len(data) // 2) - 5
    (folder / "calls.jsonl").write_bytes(data[:cut])


def edit_manifest(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        data = json.loads((folder / "manifest.json").read_text())
        change(data)
        (folder / "manifest.json").write_text(json.dumps(data, indent=2))

    return edit


edit_model = edit_manifest(lambda m: m.update(models=["other"], repetitions_run={"other": 1}))
edit_chronology_hash = edit_manifest(lambda m: m["chronologies"][0].update(sha256="0" * 64))

# tamper -> (what it does, what the message names)
REPAIRED = {
    "deleted row": (delete_row, "turns.csv (conversation correct-then-forget · full-history · reference · 1)"),
    "duplicated line": (
        duplicate_line,
        "calls.jsonl (conversation correct-then-forget · full-history · reference · 1)",
    ),
    "truncated file": (truncate, "calls.jsonl"),
}
REFUSED = {
    "edited model": (edit_model, "manifest.json: models, repetitions_run changed after the run started"),
    "edited chronology hash": (edit_chronology_hash, "manifest.json: chronologies changed after the run started"),
}
TAMPERS = {**REPAIRED, **REFUSED}


def copied(folder: Path, into: Path) -> Path:
    target = into / folder.name
    shutil.copytree(folder, target, ignore=shutil.ignore_patterns(".lock"))
    return target


def harness(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def refused_once(result: Result, says: str) -> None:
    """Exit 2 and one line that says what does not match."""
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and says in result.stderr, result.stderr


@pytest.mark.parametrize("origin", ["cut", "whole"])
@pytest.mark.parametrize("tamper", REPAIRED)
@pytest.mark.slow
def test_resume_runs_again_the_conversations_whose_records_were_changed_and_says_so(
    runs: dict[str, Path], tmp_path: Path, origin: str, tamper: str
) -> None:
    change, says = REPAIRED[tamper]
    folder = copied(runs[origin], tmp_path)
    change(folder)
    result = harness("run", "--resume", folder, "--reports", tmp_path / "reports", "--no-charts", "--quiet")
    assert result.exit_code == 0, result.output
    assert says in result.stderr and "changed after the harness wrote them" in result.stderr
    assert "again" in result.stderr
    assert_same_results(runs["whole"], folder)
    assert check(folder, read_manifest(folder)).mismatches == ()


@pytest.mark.parametrize("origin", ["cut", "whole"])
@pytest.mark.parametrize("tamper", REFUSED)
def test_resume_refuses_a_manifest_edited_after_the_run_started(
    runs: dict[str, Path], tmp_path: Path, origin: str, tamper: str
) -> None:
    change, says = REFUSED[tamper]
    folder = copied(runs[origin], tmp_path)
    change(folder)
    calls = (folder / "calls.jsonl").read_bytes()
    refused_once(harness("run", "--resume", folder, "--reports", tmp_path / "reports", "--quiet"), says)
    assert (folder / "calls.jsonl").read_bytes() == calls  # no finished call dropped


@pytest.mark.parametrize("tamper", TAMPERS)
def test_report_refuses_results_changed_after_they_were_written(
    runs: dict[str, Path], tmp_path: Path, tamper: str
) -> None:
    change, says = TAMPERS[tamper]
    folder = copied(runs["whole"], tmp_path)
    change(folder)
    refused_once(harness("report", folder, "--reports", tmp_path / "reports", "--no-charts"), says)
    assert not (tmp_path / "reports" / "whole.md").exists()


@pytest.mark.parametrize("tamper", TAMPERS)
def test_merge_refuses_a_shard_changed_after_it_was_written(runs: dict[str, Path], tmp_path: Path, tamper: str) -> None:
    """A shard missing a row, with a line twice, cut short; both shards' manifests edited alike
    (one alone would differ from the other)."""
    change, says = TAMPERS[tamper]
    one, two = copied(runs["shard1"], tmp_path), copied(runs["shard2"], tmp_path)
    change(one)
    if tamper in REFUSED:
        change(two)
    result = harness("merge", tmp_path / "merged", one, two, "--reports", tmp_path / "reports")
    refused_once(result, says)
    assert str(one) in result.stderr
    assert not (tmp_path / "merged").exists()


@pytest.mark.slow
def test_untouched_folders_are_whole_after_a_concurrent_run_a_resume_and_a_merge(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    run_batch(plan(concurrency=3), tmp_path / "par", "par", Runtime(REGISTRY))  # records rewritten in plan order
    resumed = copied(runs["cut"], tmp_path)
    resume_batch(resumed, Runtime(REGISTRY))
    result = harness("merge", tmp_path / "merged", runs["shard1"], runs["shard2"], "--reports", tmp_path / "reports")
    assert result.exit_code == 0, result.output
    for folder in (runs["whole"], tmp_path / "par", resumed, tmp_path / "merged"):
        verdict = check(folder, read_manifest(folder))
        assert verdict.mismatches == () and verdict.unverified is None
        assert len(verdict.finished) == 6


def test_a_conversation_record_edited_by_hand_runs_again(runs: dict[str, Path], tmp_path: Path) -> None:
    """Its own digest says it changed: an error turned into `complete` is not kept."""
    folder = copied(runs["cut"], tmp_path)
    path = folder / "conversations.jsonl"
    first, *rest = path.read_text().splitlines(keepends=True)
    path.write_text("".join([first.replace('"calls": ', '"calls": 1'), *rest]))
    notices: list[str] = []
    resume_batch(folder, Runtime(REGISTRY, notify=notices.append))
    assert len(notices) == 1 and "conversations.jsonl:1" in notices[0] and "its fields were changed" in notices[0]
    assert_same_results(runs["whole"], folder)


def test_records_of_a_conversation_the_run_does_not_plan_are_refused(runs: dict[str, Path], tmp_path: Path) -> None:
    folder = copied(runs["cut"], tmp_path)
    with (folder / "turns.csv").open("a") as handle:
        handle.write("elsewhere,full-history,reference,1,1,main,answered" + "," * 19 + "\n")
    with pytest.raises(InputError, match=r"turns.csv:\d+ \(conversation elsewhere · full-history .*does not plan"):
        resume_batch(folder, Runtime(REGISTRY))


def test_a_complete_manifest_without_file_digests_is_refused(runs: dict[str, Path], tmp_path: Path) -> None:
    """A run killed part way whose status was edited to `complete`."""
    folder = copied(runs["cut"], tmp_path)
    edit_manifest(lambda m: m.update(status="complete"))(folder)
    refused_once(harness("report", folder, "--reports", tmp_path / "reports"), "says complete but records no `files`")


def unsealed(folder: Path) -> None:
    """The folder as a harness before the digests wrote it: format version 2, no digests."""
    data = json.loads((folder / "manifest.json").read_text())
    data.update(format_version=2)
    data.pop("settings_sha256"), data.pop("files", None)
    (folder / "manifest.json").write_text(json.dumps(data))
    path = folder / "conversations.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k not in ("records", "sha256")}) + "\n" for r in records)
    )


def test_a_run_without_digests_is_reported_as_unverified(runs: dict[str, Path], tmp_path: Path) -> None:
    folder = copied(runs["whole"], tmp_path)
    unsealed(folder)
    result = harness("report", folder, "--reports", tmp_path / "reports", "--no-charts")
    assert result.exit_code == 0, result.output
    assert f"note: {folder} is unverified (format version 2" in result.stderr
    assert (tmp_path / "reports" / "whole.md").is_file()


def test_a_run_without_digests_whose_manifest_names_another_model_is_not_resumed(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """Without digests, what conversations.jsonl recorded still tells: its conversations are not
    the manifest's, and a resume would drop every finished one."""
    folder = copied(runs["cut"], tmp_path)
    unsealed(folder)
    edit_model(folder)
    calls = (folder / "calls.jsonl").read_bytes()
    with pytest.raises(
        InputError,
        match="records conversation correct-then-forget · full-history · reference · 1, which the manifest does not plan",
    ):
        resume_batch(folder, Runtime(REGISTRY))
    assert (folder / "calls.jsonl").read_bytes() == calls


@pytest.mark.slow
def test_a_complete_run_whose_conversations_file_was_cut_is_refused_by_report_and_repaired_by_resume(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """In a run that did not complete, a cut last line is what a kill leaves; in a complete one it is a change."""
    folder = copied(runs["whole"], tmp_path)
    path = folder / "conversations.jsonl"
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    refused_once(
        harness("report", folder, "--reports", tmp_path / "reports"), "conversations.jsonl: ends inside a record"
    )
    result = harness("run", "--resume", folder, "--reports", tmp_path / "reports", "--no-charts", "--quiet")
    assert result.exit_code == 0 and "run again" in result.stderr, result.output
    assert_same_results(runs["whole"], folder)
