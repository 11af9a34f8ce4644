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
from hypothesis import given
from hypothesis import strategies as st

from harness.report.charts import (
    DPI,
    MAX_EVENT_LABELS,
    MAX_WIDTH_PX,
    PLOT_WIDTH,
    TAG_GAP,
    Event,
    Grid,
    GridChart,
    IntervalChart,
    LineChart,
    Series,
    coinciding,
    draw,
    draw_lines,
    draw_many,
    key_entries,
    line_layout,
    log_scale,
    shared_renderer,
    spread,
    style,
    tag_places,
)
from harness.report.charts_plan import AGE_AXIS, age_gaps, age_span, chart_plan
from harness.report.comparison import compare
from tests.conftest import COMPARISON, NO_RESTART, chronology, user
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


def width_px(path: Path) -> int:
    """The PNG's width in pixels, from its IHDR chunk."""
    return int.from_bytes(png(path)[16:20], "big")


EVENTS = LineChart(
    "sizes",
    "turn",
    "characters",
    (Series("summary", (1, 2, 4), (10, 20, 30), stops=(4,)), Series("full-history", (1, 2, 4), (10, 25, 40))),
    (
        Event(2, "probe", "probe p"),
        Event(3, "forget", "forget"),
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


@pytest.mark.slow
def test_charts_drawn_in_one_batch_have_the_bytes_of_each_drawn_alone(tmp_path: Path) -> None:
    """A batch shares the default style and one renderer per size; neither may carry a chart into the next."""
    gaps = Series("gap", (1, 2, 3), (5, None, 7), low=(4, None, 6), high=(6, None, 9))
    charts = [EVENTS, GRID, TWO, lines(gaps, Series("empty", (), ())), lines(Series("one", (1, 2), (3, 1))), EVENTS]
    charts += [lines(Series("empty", (), ())), lines(Series("big", (10, 5000), (1e6, 2e6))), TWO, SPREAD, TWO]
    charts += [INTERVALS, lines(*(Series(n, (1, 2), (1, 2)) for n in ELEVEN)), EVENTS]
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


# --- readable on a laptop (issue 25, item 5) ---------------------------------------------------

ELEVEN = tuple(COMPARISON)  # every built-in policy, as a plain run declares them
AGES = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "16", "32", "64", "128", "200")
SPREAD = lines(Series("full-history", (1, 2, 3), (100, 2000, 9000)), Series("last-turns", (1, 2, 3), (100, 200, 300)))
INTERVALS = IntervalChart(
    "answers",
    "age",
    "% honoured",
    AGES[:5],
    tuple(
        Series(n, (1, 2, 3, 4, 5), (50, None, 100, 0, 20), (30, None, 60, 0, 5), (70, None, 100, 40, 45))
        for n in ELEVEN
    ),
    (4,),
)


def survival(policies: tuple[str, ...], ages: tuple[str, ...], counts: tuple[int, int]) -> GridChart:
    cells = tuple(tuple(counts for _ in ages) for _ in policies)
    panels = (Grid("in the request view", policies, ages, cells), Grid("honoured by the answer", policies, ages, cells))
    return GridChart("Prohibition survival by age", AGE_AXIS, panels, age_gaps(list(ages)))


def test_every_policy_among_ten_and_more_has_a_style_of_its_own() -> None:
    """Colour, dash and marker together; the first ten have ten colours too."""
    assert len({style(n) for n in range(630)}) == 630
    assert len({style(n)[0] for n in range(10)}) == 10


@pytest.mark.parametrize(
    "chart",
    [
        survival(ELEVEN, AGES, (15, 15)),  # the example's survival by age with every policy: was 1936 wide
        survival(tuple(f"{p} · openai:gpt-4o-mini @ run-{n}" for n in (1, 2) for p in ELEVEN), AGES + ("300",), (1, 1)),
        survival(ELEVEN, tuple(f"{a}–{a + 15}" for a in range(1, 257, 16)), (1200, 1500)),
        lines(*(Series(n * 3, tuple(range(300)), tuple(range(300))) for n in ELEVEN)),
        LineChart("sizes", "turn", "characters", TWO.series, tuple(Event(x, "probe", "p" * 60) for x in range(24))),
        INTERVALS,
    ],
    ids=["survival", "compared-runs", "wide-counts", "long-lines", "many-events", "intervals"],
)
@pytest.mark.slow
def test_no_chart_is_wider_than_a_laptop_page(tmp_path: Path, chart) -> None:
    assert width_px(draw(chart, tmp_path / "a.png")) <= MAX_WIDTH_PX == 1200


def test_ages_are_labelled_as_categories_with_the_skipped_ones_marked() -> None:
    assert age_span("7") == (7, 7) and age_span("17–32") == (17, 32)
    assert age_gaps(["1", "2", "4", "5", "16"]) == (2, 4)  # 3 skipped before "4", 6-15 before "16"
    assert age_gaps(["1–16", "17–32", "33–40"]) == ()


def run_of_ten(tmp_path: Path):
    """Every built-in policy (ten, one twice) on a chronology probed at ages 1, 2 and 5."""
    from tests.report.test_report import run_into

    chron = chronology(
        user(1, "constraint=never restart production", assistant="Understood."),
        user(2, "Can I restart production?", probe="age-1"),
        user(3, "Can I restart production?", probe="age-2"),
        user(4, "module=Billing", assistant="Noted.", session="logs"),
        user(5, "status", assistant="ok"),
        user(6, "Can I restart production?", probe="age-5"),
        prohibitions=(NO_RESTART,),
        sessions=("main", "logs"),
    )
    return run_into(tmp_path, [chron], list(ELEVEN))


@pytest.mark.slow
def test_the_charts_of_a_run_of_every_policy_fit_a_page_with_labelled_axes(tmp_path: Path) -> None:
    plan = chart_plan(compare([run_of_ten(tmp_path / "run")]))
    ages = plan["survival-by-age.png"]
    assert isinstance(ages, GridChart)
    assert ages.panels[0].columns == ("1", "2", "5") and ages.gaps == (2,)
    assert "not to scale" in ages.xlabel and "skipped ages" in ages.xlabel
    view = next(chart for name, chart in plan.items() if name.endswith("view-size.png"))
    assert isinstance(view, LineChart) and [s.label for s in view.series] == list(ELEVEN)
    (tmp_path / "png").mkdir()
    for name, chart in plan.items():
        assert width_px(draw(chart, tmp_path / "png" / name)) <= MAX_WIDTH_PX, name


def test_equal_lines_are_drawn_once_and_named_together() -> None:
    same = Series("full-history", (1, 2), (5, 9))
    chart = lines(same, Series("summary", (1, 2), (5, 8)), Series("retrieval", (1, 2), (5, 9)))
    assert coinciding(chart.series) == [[0, 2], [1]]
    figure = draw_lines(chart, line_layout(chart))
    legend = figure.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["full-history\n= retrieval", "summary"]
    assert "a = b" in legend.get_title().get_text()
    assert len(figure.axes[0].lines) == 2


def test_a_stop_or_a_band_keeps_an_equal_line_apart() -> None:
    stopped = lines(Series("a", (1, 2), (5, 9)), Series("b", (1, 2), (5, 9), stops=(2,)))
    banded = lines(Series("a", (1, 2), (5, 9)), Series("b", (1, 2), (5, 9), (4, 8), (6, 10)))
    assert coinciding(stopped.series) == coinciding(banded.series) == [[0], [1]]


def test_sizes_an_order_of_magnitude_apart_are_drawn_on_a_log_scale_that_says_so() -> None:
    assert log_scale(SPREAD) and not log_scale(TWO)
    with_zero = lines(Series("a", (1, 2), (0, 9000)), Series("b", (1, 2), (100, 200)))
    assert not log_scale(with_zero)  # a log axis cannot show 0
    assert draw_lines(SPREAD, line_layout(SPREAD)).axes[0].get_ylabel() == "characters (log scale)"


CROWDED = LineChart(
    "sizes",
    "turn",
    "characters",
    (Series("a", tuple(range(1, 202)), tuple(range(1, 202))),),
    tuple(Event(x, "probe", f"age-{x}") for x in (1, 2, 3, 4, 5, 9, 17, 33, 65, 129, 199, 200, 201))
    + (Event(5, "session", "session logs"), Event(200, "forget", "forget")),
)


def test_event_tags_do_not_touch_and_stay_over_the_plot() -> None:
    places = tag_places(CROWDED, line_layout(CROWDED))
    assert len(places) == 13  # one per turn with events
    tags = [tag for _, tag in places]
    assert all(b - a >= TAG_GAP - 1e-9 for a, b in zip(tags, tags[1:]))
    assert 0 <= tags[0] and tags[-1] <= PLOT_WIDTH * DPI
    assert abs(places[9][0] - places[9][1]) < 1e-9  # turn 129, far from the others: over its event
    assert places[1][1] != places[1][0]  # turn 2, in a crowd: moved, a leader line drawn to its event


def test_the_key_says_what_each_tag_is_and_on_which_turn() -> None:
    entries = key_entries(CROWDED)
    assert entries[4] == "turn 5: age-5 · session logs"
    assert entries[-2] == "turn 200: age-200 · forget"
    many = lines(Series("a", (1, 100), (1, 2)))
    many = LineChart(many.title, "turn", "characters", many.series, tuple(Event(x, "probe", "p") for x in range(30)))
    assert key_entries(many) == ["30 events at 30 turns: too many to number (the tables list the probes)"]
    assert tag_places(many, line_layout(many)) == [] and MAX_EVENT_LABELS < 30


@given(st.lists(st.floats(0, 550), max_size=22))
def test_spread_tags_keep_their_order_and_distance_within_the_plot(wanted: list[float]) -> None:
    placed = spread(sorted(wanted), TAG_GAP, 0.0, 550.0)
    assert len(placed) == len(wanted)
    assert all(b - a >= TAG_GAP - 1e-6 for a, b in zip(placed, placed[1:]))
    assert all(-1e-6 <= p <= 550 + 1e-6 for p in placed)


def test_charts_of_one_height_but_another_plot_are_drawn_in_a_batch_as_alone(tmp_path: Path) -> None:
    """A batch reuses a line chart's axes for the next chart of its size: the key and the legend
    shape the plot, so two charts can share a height and not their plot."""

    def chart(policies: int, events: int) -> LineChart:
        series = tuple(Series(f"p{n}", (1, 2), (n, n + 1)) for n in range(policies))
        return LineChart("t", "turn", "characters", series, tuple(Event(x, "probe", "p") for x in range(events)))

    first, second = chart(14, 4), chart(15, 1)
    assert line_layout(first).height == line_layout(second).height
    assert line_layout(first).plot_height != line_layout(second).plot_height
    batch = draw_many([(first, tmp_path / "a.png"), (second, tmp_path / "b.png")])
    shared_renderer.cache_clear()
    assert png(draw(second, tmp_path / "alone.png")) == png(batch[1])


@pytest.mark.slow
def test_the_chart_beside_the_glance_is_a_panel_per_policy_in_declared_order_with_intervals(tmp_path: Path) -> None:
    """Issue 40: policies × measures on one screen, each point with its 95% Wilson interval, never sorted."""
    from harness.report.policies import policy_rows
    from harness.report.spread import wilson

    cmp = compare([run_of_ten(tmp_path / "run")])
    chart = chart_plan(cmp)["policies-by-measure.png"]
    assert isinstance(chart, IntervalChart)
    # the run's order, whatever the outcome; the control named as such
    assert [s.label for s in chart.series] == [p if p != "none" else "none (control)" for p in ELEVEN]
    assert chart.categories[:2] == ("prohibitions in view", "honoured")
    row = policy_rows(cmp)[1]
    count = row.counts["prohibitions_in_view"]
    low, high = wilson(count.k, count.n)
    series = chart.series[1]
    assert series.y[0] == pytest.approx(100 * count.k / count.n)
    assert (series.low[0], series.high[0]) == pytest.approx((100 * low, 100 * high))
    assert width_px(draw(chart, tmp_path / "measures.png")) <= MAX_WIDTH_PX
