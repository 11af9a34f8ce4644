"""Charts: PNG files whose bytes follow from the data alone, drawn without pyplot."""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import matplotlib
import pytest

from harness.report.charts import Event, Grid, GridChart, LineChart, Series, draw, draw_many, shared_renderer
from tests.paths import ROOT

HARNESS = ROOT


def lines(*series: Series, title: str = "sizes") -> LineChart:
    return LineChart(title, "turn", "characters", series)


TWO = lines(Series("full-history", (1, 2, 3), (10, 20, 30)), Series("last-turns", (1, 2, 3), (10, 15, 15)))
GRID = GridChart("survival", "age", (Grid("in view", ("a", "b"), ("1", "2"), (((1, 1), (0, 2)), (None, (2, 2)))),))


def png(path: Path) -> bytes:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return data


EVENTS = LineChart(
    "sizes",
    "turn",
    "characters",
    (Series("summary", (1, 2, 4), (10, 20, 30), stops=(4,)), Series("full-history", (1, 2, 4), (10, 25, 40))),
    (
        Event(2, "probe", "probe p"),
        Event(3, "forget", "forget (turn 3)"),
        Event(4, "session", "session b"),
        Event(4, "probe", "probe q"),
    ),
)


@pytest.mark.parametrize("chart", [TWO, GRID, EVENTS], ids=["lines", "grid", "events"])
def test_the_same_data_gives_the_same_bytes(tmp_path: Path, chart) -> None:
    assert png(draw(chart, tmp_path / "a.png")) == png(draw(chart, tmp_path / "b.png"))


def test_no_software_or_time_metadata_is_written(tmp_path: Path) -> None:
    data = png(draw(TWO, tmp_path / "a.png"))
    assert b"Software" not in data and b"tIME" not in data and b"matplotlib" not in data.lower()


def test_the_callers_style_does_not_change_the_picture(tmp_path: Path) -> None:
    plain = png(draw(TWO, tmp_path / "plain.png"))
    with matplotlib.rc_context({"lines.linewidth": 9, "axes.facecolor": "black", "font.size": 20}):
        styled = png(draw(TWO, tmp_path / "styled.png"))
    assert styled == plain


def test_drawing_leaves_the_backend_alone(tmp_path: Path) -> None:
    backend = matplotlib.get_backend()
    draw(TWO, tmp_path / "a.png")
    assert matplotlib.get_backend() == backend


HOSTILE = ["$x^2$ unbalanced $", "_starts with an underscore", "a" * 120, "pipes | and `ticks` <b>"]


@pytest.mark.parametrize("label", HOSTILE)
def test_hostile_labels_are_drawn_as_text(tmp_path: Path, label: str) -> None:
    chart = lines(Series(label, (1, 2), (1, 2)), Series("other", (1, 2), (2, 1)), title=label)
    png(draw(chart, tmp_path / "a.png"))  # mathtext would raise on `$`; warnings are errors here


def test_gaps_bands_empty_series_and_many_series_draw(tmp_path: Path) -> None:
    series = [Series("gap", (1, 2, 3), (5, None, 7), low=(4, None, 6), high=(6, None, 9)), Series("empty", (), ())]
    series += [Series(f"policy {n}", (1, 2), (n, n + 1)) for n in range(14)]
    png(draw(lines(*series), tmp_path / "a.png"))


def test_a_grid_draws_cells_nothing_was_counted_in(tmp_path: Path) -> None:
    grid = Grid("in view", ("only",), ("1", "2", "3"), ((None, (0, 0), (3, 4)),))
    png(draw(GridChart("survival", "age", (grid, grid)), tmp_path / "a.png"))


def test_events_and_stops_change_the_picture(tmp_path: Path) -> None:
    bare = LineChart(
        "sizes",
        "turn",
        "characters",
        (Series("summary", (1, 2, 4), (10, 20, 30)), Series("full-history", (1, 2, 4), (10, 25, 40))),
    )
    assert png(draw(EVENTS, tmp_path / "a.png")) != png(draw(bare, tmp_path / "b.png"))


@pytest.mark.slow  # process pools
def test_charts_drawn_in_parallel_processes_have_the_same_bytes(tmp_path: Path) -> None:
    from harness.report.charts_plan import write_charts
    from harness.report.comparison import compare
    from harness.results.tables import load_results
    from tests.conftest import run_through_cli

    shipped = HARNESS / "chronologies"
    run = load_results(
        run_through_cli(
            tmp_path,
            [
                shipped / "memory-drift.yaml",
                shipped / "two-sessions.yaml",
                shipped / "stale-premise.yaml",
                shipped / "summary-overflow.yaml",
            ],
            "p",
        )
    )
    serial = write_charts(compare([run]), tmp_path / "serial", workers=1)
    parallel = write_charts(compare([run]), tmp_path / "parallel", workers=2)
    assert len(serial) >= 8 and [p.name for p in serial] == [p.name for p in parallel]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(serial, parallel))
    from harness.report.charts_plan import ChartSpool, chart_plan

    named = set(Path(tempfile.gettempdir()).glob("harness-charts-*"))
    plan, spool = chart_plan(compare([run])), ChartSpool()  # the report's plan, kept in a file
    assert set(Path(tempfile.gettempdir()).glob("harness-charts-*")) == named  # a file without a name: none left
    try:
        spool.update(plan)
        assert list(spool) == list(plan) and all(spool[name] == chart for name, chart in plan.items())
        for workers in (1, 2):
            spooled = write_charts(compare([run]), tmp_path / f"spooled-{workers}", workers=workers, plan=spool)
            assert [p.name for p in spooled] == [p.name for p in serial]
            assert all(a.read_bytes() == b.read_bytes() for a, b in zip(serial, spooled))
    finally:
        spool.close()


def test_charts_drawn_in_one_batch_have_the_bytes_of_each_drawn_alone(tmp_path: Path) -> None:
    """A batch shares the default style and one renderer per size; neither may carry a chart into the next."""
    gaps = Series("gap", (1, 2, 3), (5, None, 7), low=(4, None, 6), high=(6, None, 9))
    charts = [EVENTS, GRID, TWO, lines(gaps, Series("empty", (), ())), lines(Series("one", (1, 2), (3, 1))), EVENTS]
    charts += [lines(Series("empty", (), ())), lines(Series("big", (10, 5000), (1e6, 2e6))), TWO]
    batch = draw_many([(chart, tmp_path / f"batch-{i}.png") for i, chart in enumerate(charts)])
    for i, chart in enumerate(charts):
        shared_renderer.cache_clear()  # alone: a renderer no other chart drew with
        assert png(draw(chart, tmp_path / f"alone-{i}.png")) == png(batch[i]), i


WORKERS_OF_A_KILLED_PARENT = """
import multiprocessing, os, signal, sys
from concurrent.futures import ProcessPoolExecutor
from harness.base.forking import exit_with_parent
pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"), initializer=exit_with_parent,
                           initargs=(os.getpid(),))
pids = set()
while len(pids) < 2:  # both workers started and initialised
    pids |= {pool.submit(os.getpid).result() for _ in range(8)}
print(*sorted(pids), flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # no shutdown, as under the OOM killer
"""


def gone(pid: int) -> bool:
    """Exited: no such process, or a zombie waiting to be reaped by whoever adopted it."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "\nState:\tZ" in status


@pytest.mark.slow  # a process and its forked workers
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads process states from /proc")
def test_chart_workers_end_when_their_parent_is_killed(tmp_path: Path) -> None:
    """Otherwise they wait for work for ever and hold the parent's stdout and stderr open
    (output goes to a file here: through a pipe, this test would hang instead of failing)."""
    with (tmp_path / "out").open("w") as out:
        child = subprocess.run(
            [sys.executable, "-c", WORKERS_OF_A_KILLED_PARENT], stdout=out, stderr=out, timeout=60, cwd=HARNESS
        )
    assert child.returncode == -signal.SIGKILL, (tmp_path / "out").read_text()
    pids = [int(p) for p in (tmp_path / "out").read_text().split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 10
    while not all(gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(gone(pid) for pid in pids)
