"""`harness compare` refuses a run that did not complete (interrupted, or still being written) in
one line with exit status 2, unless `--allow-incomplete`: then it compares the conversations the
run finished and says which are missing."""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.base.locking import RunLock
from harness.chronology.loading import load_chronologies
from harness.cli.commands import main
from harness.models import Model
from harness.report.pairing import UNFINISHED
from harness.results.integrity import finished_keys
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec
from tests.conftest import SHIPPED, builtin_registry
from tests.faults import AtCall, ctrl_c

REGISTRY = builtin_registry()


def harness(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A complete run of one chronology under every default policy, and the same run cut by a
    Ctrl-C at its 9th model call (status `interrupted`)."""
    root = tmp_path_factory.mktemp("incomplete")
    plan = RunSpec(load_chronologies([SHIPPED / "memory-drift.yaml"]), REGISTRY.default_specs(), ["reference"])
    run_batch(plan, root / "whole", "whole", Runtime(REGISTRY))
    model = AtCall(9, ctrl_c)

    def factory(name: str, stack: ExitStack) -> Model:
        return model

    with pytest.raises(KeyboardInterrupt):
        run_batch(plan, root / "cut", "cut", Runtime(REGISTRY, factory=factory, notify=lambda _text: None))
    return root / "whole", root / "cut"


def test_an_interrupted_run_is_refused_in_one_line_even_by_a_gate(runs: tuple[Path, Path]) -> None:
    whole, cut = runs
    for args in ((whole, cut), (cut, whole), (whole, cut, "--fail-on", "failed>=1")):
        result = harness("compare", *args)
        assert result.exit_code == 2 and result.stdout == ""  # a gate never passes what it did not read
        [line] = result.stderr.splitlines()
        planned = json.loads((cut / "manifest.json").read_text())["conversations"]["total"]
        assert f"{cut}: the run is interrupted (" in line and f" of {planned} conversations finished)" in line
        assert f"harness run --resume {cut}" in line and "--allow-incomplete" in line


def test_allowed_it_pairs_the_finished_conversations_and_names_the_missing_ones(runs: tuple[Path, Path]) -> None:
    whole, cut = runs
    finished = set(finished_keys(cut))
    assert finished, "the cut must leave a finished conversation to compare"
    result = harness("compare", whole, cut, "--allow-incomplete", "--format", "json", "--fail-on", "failed>=1")
    assert result.exit_code == 0, result.output
    note = next(line for line in result.stderr.splitlines() if line.startswith(f"note: {cut} is interrupted"))
    assert "not finished: memory-drift · " in note
    data = json.loads(result.stdout)
    assert note in data["notes"]
    statistics = {s["policy"]: s for s in data["statistics"] if s["check_kind"] == "all checks"}
    assert set(statistics) == {policy for _, policy, _, _ in finished}  # only finished conversations are paired
    alone = {(x["run"], x["policy"]): x["reason"] for x in data["checks_in_one_run_only"]}
    assert alone and all(run == "A" and reason == UNFINISHED for (run, _), reason in alone.items())
    assert {policy for _, policy in alone}.isdisjoint(statistics)


def test_a_run_still_being_written_is_refused_naming_its_writer(runs: tuple[Path, Path]) -> None:
    whole, cut = runs
    with RunLock(cut, "run"):  # as a `harness run --resume` holds it while it writes
        result = harness("compare", whole, cut)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert f"the run is still being written by process {os.getpid()} (harness run since " in line
    assert "wait for it to end" in line
    assert harness("compare", whole, cut, "--allow-incomplete").exit_code == 0  # its lock was let go: interrupted


@pytest.mark.slow
def test_the_report_of_a_run_still_being_written_names_its_writer_not_resume(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    """A resume would be refused while the run is held: the report says to wait, as `compare` does."""
    _, cut = runs
    with RunLock(cut, "run"):
        result = harness("report", cut, "--reports", tmp_path / "held", "--no-charts")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "held" / "cut.md").read_text(encoding="utf-8")
    held = f"still being written by process {os.getpid()} (harness run since "
    assert held in text and "wait for it to end, then report it again" in text
    assert "--resume" not in text.split("## What ran")[0]
    assert harness("report", cut, "--reports", tmp_path / "free", "--no-charts").exit_code == 0
    free = (tmp_path / "free" / "cut.md").read_text(encoding="utf-8")  # let go: interrupted, to be resumed
    assert "interrupted (Ctrl-C), none finished of 15 conversations; &#96;harness run --resume&#96; finishes it" in free
