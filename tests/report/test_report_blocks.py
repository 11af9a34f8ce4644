"""The report reads a run's turns and calls a block of chronologies at a time
(harness.results.blocks): the same bytes whatever the block's bound, or read whole, and no read
returns more than a block's rows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.report.comparison import compare
from harness.report.document import report_and_charts, write_report
from harness.report.policies import policies_csv
from harness.results import blocks
from harness.results.tables import load_results
from tests.conftest import run_through_cli
from tests.paths import SHIPPED
from tests.results.test_blocks import interleaved

LIBRARY = [SHIPPED / line for line in (SHIPPED / "library.txt").read_text().splitlines() if line.endswith(".yaml")]
LOSSY = ("--model", "reference:lossy", "--repetitions", "2")  # sampled: repetitions differ
SOME = ("constraint-eviction", "correct-then-forget", "two-sessions")


class Runs:
    """Runs made when first asked for, once per module: `library` (the shipped library), `some`
    (a few of its chronologies) and `lossy` (those under `reference:lossy`, two repetitions)."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.factory, self.made = factory, {}

    def __getitem__(self, name: str) -> Path:
        if name not in self.made:
            files = LIBRARY if name == "library" else [SHIPPED / f"{n}.yaml" for n in SOME]
            options = LOSSY if name == "lossy" else ()
            self.made[name] = run_through_cli(self.factory.mktemp(name), files, name, "--no-charts", *options)
        return self.made[name]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(tmp_path_factory)


def report(directories: list[Path]) -> tuple[str, str]:
    """The report's markdown and its policies.csv (without the integrity check `harness report`
    makes first: the same text)."""
    cmp = compare([load_results(d) for d in directories])
    return report_and_charts(cmp, charts_drawn=False)[0], policies_csv(cmp)


@pytest.mark.parametrize(
    "names", [["some"], ["lossy"], ["some", "lossy"], pytest.param(["library"], marks=pytest.mark.slow)]
)
@pytest.mark.slow
def test_the_report_is_the_same_bytes_read_whole_one_chronology_at_a_time_or_all_in_one_block(
    runs: Runs, names: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directories = [runs[name] for name in names]
    with monkeypatch.context() as patch:
        patch.setattr(blocks, "chronology_ranges", lambda path: None)  # as every run was read before blocks
        whole = report(directories)
    monkeypatch.setattr(blocks, "BLOCK_RECORDS", 1)  # a block per chronology
    assert report(directories) == whole
    monkeypatch.setattr(blocks, "BLOCK_RECORDS", 10**9)  # one block of every chronology
    assert report(directories) == whole


def counting(reads: list[int], read: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        found = read(*args, **kwargs)
        reads.append(len(found))
        return found

    return counted


@pytest.mark.slow
def test_no_read_returns_more_rows_than_a_block_holds(
    runs: Runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = runs["lossy"]
    reader = blocks.block_reader(run, [], ["chronology"], ["chronology"], bound=1)
    assert reader.turns is not None and reader.calls is not None
    largest = max(n for _, _, n in [*reader.turns.spans.values(), *reader.calls.spans.values()])  # one chronology
    total = sum(n for _, _, n in reader.turns.spans.values())
    reads: list[int] = []
    for name in ("read_columns", "read_keys", "read_calls"):
        monkeypatch.setattr(blocks, name, counting(reads, getattr(blocks, name)))
    monkeypatch.setattr(blocks, "BLOCK_RECORDS", 1)
    write_report([run], tmp_path, charts=False)
    assert len(reads) >= 2 * len(reader.turns.spans)  # turns and calls of every chronology, a block at a time
    assert max(reads) <= largest < total  # read whole, turns.csv alone is `total` rows


@pytest.mark.slow
def test_a_run_whose_records_are_not_in_plan_order_reports_as_the_same_run_in_order(
    runs: Runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As an interrupted concurrent run leaves them: its conversations' records interleaved (the
    integrity check refuses such files in a run whose manifest says complete: `report` makes none)."""
    mixed = interleaved(runs["lossy"], tmp_path / "lossy")
    monkeypatch.setattr(blocks, "BLOCK_RECORDS", 1)
    assert blocks.block_reader(mixed, [], [], []).whole
    assert report([mixed]) == report([runs["lossy"]])
