"""The committed lossy example (docs/reports.md, "The example report"): the library under
`reference:lossy` over three repetitions, and its paired comparison with the reference run,
regenerated as the docs say and compared with what is committed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from tests.paths import ROOT
from tests.report.test_report import normalised

EXAMPLE = ROOT / "reports" / "example-lossy"
DOCS = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")
RUNS = (
    ["run", "chronologies/library.txt", "--run-id", "example", "--no-charts", "--quiet"],
    [
        "run",
        "chronologies/library.txt",
        "--model",
        "reference:lossy",
        "--repetitions",
        "3",
        "--run-id",
        "example-lossy",
        "--no-charts",
        "--quiet",
    ],
)


def test_the_docs_give_the_commands_this_test_runs() -> None:
    for args in RUNS:
        assert "harness " + " ".join(args[:-2]) in DOCS.replace(' --out "$out"', "").replace(
            ' --reports "$out/reports"', ""
        ).replace(" --reports reports/example-lossy", "")
    assert "harness compare example example-lossy --reports" in DOCS


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lossy")
    shutil.copytree(ROOT / "chronologies", root / "chronologies")
    out, reports = root / "results", root / "reports" / "example-lossy"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        first, second = RUNS
        ran = CliRunner().invoke(
            main, [*first[:-2], "--out", str(out), "--reports", str(root / "scratch"), *first[-2:]]
        )
        assert ran.exit_code == 0, ran.output
        ran = CliRunner().invoke(main, [*second[:-2], "--out", str(out), "--reports", str(reports), *second[-2:]])
        assert ran.exit_code == 0, ran.output
        patch.chdir(out)
        ran = CliRunner().invoke(main, ["compare", "example", "example-lossy", "--reports", str(reports)])
        assert ran.exit_code == 0, ran.output
    return reports


def files(folder: Path) -> list[Path]:
    return sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())


@pytest.mark.slow
def test_the_committed_lossy_example_matches_the_code(regenerated: Path) -> None:
    assert files(EXAMPLE) == files(regenerated), "regenerate reports/example-lossy as docs/reports.md says"
    for name in files(regenerated):
        committed, fresh = (EXAMPLE / name).read_text(), (regenerated / name).read_text()
        assert normalised(committed) == normalised(fresh), f"{name} is out of date; see docs/reports.md"


@pytest.mark.slow
def test_the_lossy_example_shows_spread_that_is_not_all_0_or_1() -> None:
    report = (EXAMPLE / "example-lossy.md").read_text(encoding="utf-8")
    rows = [line for line in report.splitlines() if line.startswith("| ") and " points |" in line]
    widths = {line.split(" | ")[3] for line in rows}
    assert rows and widths - {"0 points"}, "every spread is 0: the lossy example no longer varies"
