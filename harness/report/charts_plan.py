"""Which charts a report has and their data; `harness.report.charts` draws them (the only module importing matplotlib)."""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from harness.base.files import own_folder
from harness.base.forking import forked_pool
from harness.report.ages import age_groups
from harness.report.chart_data import (
    Chart,
    Event,
    Grid,
    GridChart,
    IntervalChart,
    LineChart,
    Point,
    ScatterChart,
    Series,
)
from harness.report.chart_names import COST_CHART, INTERVALS_CHART, MEASURES_CHART, SURVIVAL_CHART, chart_name
from harness.report.comparison import Column, Comparison
from harness.report.cost_section import policy_costs, prefix_figures
from harness.report.policies import PolicyRow, policy_rows
from harness.report.sizes import by_turn
from harness.report.spread import wilson
from harness.results.rows import PROBE, TURN


def size_series(column: Column, chronology: str, field: str) -> Series:
    """Mean per turn, with a min–max band when repetitions differ; None where unknown.

    A forget sends no request: the view chart skips its turn (the forget is drawn as an event),
    so the line is neither broken nor dropped to zero there.
    """
    turns = sorted(by_turn(column, chronology).items())
    if field == TURN.view_chars:
        turns = [(t, rows) for t, rows in turns if not all(r[TURN.status] == "forget" for r in rows)]
    values = [[r[field] for r in rows if r[field] is not None] for _, rows in turns]
    band = any(len(set(v)) > 1 for v in values)
    stops = tuple(t for t, rows in turns if any(r[TURN.status] == "stopped" for r in rows))
    return Series(
        column.header,
        tuple(t for t, _ in turns),
        tuple(sum(v) / len(v) if v else None for v in values),
        tuple(min(v) if v else None for v in values) if band else None,
        tuple(max(v) if v else None for v in values) if band else None,
        stops,
    )


def events(cmp: Comparison, chronology: str) -> tuple[Event, ...]:
    """Probes, forgets and session switches of the chronology, in turn order.

    A turn is described by its last row in the last column that has it (the columns' turn rows,
    grouped by turn once for the size charts and tables, not walked again row by row)."""
    turns = {t: rows[-1] for c in cmp.columns for t, rows in by_turn(c, chronology).items()}
    probes = {r[PROBE.turn]: r[PROBE.probe] for c in cmp.columns for r in c.rows("probes", chronology)}
    found, session = [], None
    for turn in sorted(turns):
        row = turns[turn]
        if row[TURN.status] == "forget":
            found.append(Event(turn, "forget", "forget"))  # the chart's key gives the turn
            continue
        if session is not None and row[TURN.session] != session:
            found.append(Event(turn, "session", f"session {row[TURN.session]}"))
        session = row[TURN.session]
        if turn in probes:
            found.append(Event(turn, "probe", f"probe {probes[turn]}"))
    return tuple(found)


AGE_AXIS = "age: turns since the prohibition was stated (one column per age measured, not to scale)"


def age_span(label: str) -> tuple[int, int]:
    """The first and last age of an age group's label (`7`, or `17–32` for a range)."""
    first, _, last = label.partition("–")
    return int(first), int(last or first)


def age_gaps(labels: list[str]) -> tuple[int, ...]:
    """The columns before which ages were skipped: 9 then 16 leaves out 10–15."""
    spans = [age_span(label) for label in labels]
    return tuple(n for n in range(1, len(spans)) if spans[n][0] > spans[n - 1][1] + 1)


def age_axis(labels: list[str]) -> str:
    """The age axis' label: the columns are ages measured, in order, not a scale."""
    return AGE_AXIS + ("; ⋮ marks skipped ages" if age_gaps(labels) else "")


def survival_chart(cmp: Comparison) -> GridChart | None:
    labels, columns = age_groups(cmp)
    if not labels:
        return None
    panels = tuple(
        Grid(
            title,
            tuple(cmp.headers),
            tuple(labels),
            tuple(tuple(cell.counts(field) if cell else None for cell in column) for column in columns),
        )
        for title, field in (("in the request view", PROBE.in_view), ("honoured by the answer", PROBE.in_answer))
    )
    title = "Prohibition survival by age, all probes (k of n measured checks)"
    return GridChart(title, age_axis(labels), panels, age_gaps(labels))


def intervals_chart(cmp: Comparison) -> IntervalChart | None:
    """Honoured answers by age with their 95% Wilson intervals, when some cell has repetitions."""
    labels, columns = age_groups(cmp)
    if not any(cell is not None and cell.repeated for column in columns for cell in column):
        return None
    series = []
    for column, groups in zip(cmp.columns, columns):
        counts = [cell.answer if cell else None for cell in groups]
        bounds = [wilson(*kn) if kn else None for kn in counts]
        series.append(
            Series(
                column.header,
                tuple(range(1, len(labels) + 1)),
                tuple(100 * kn[0] / kn[1] if kn else None for kn in counts),
                tuple(100 * b[0] if b else None for b in bounds),
                tuple(100 * b[1] if b else None for b in bounds),
            )
        )
    title = "Answers honouring the prohibition, by age, with 95% Wilson intervals"
    return IntervalChart(title, age_axis(labels), "% honoured", tuple(labels), tuple(series), age_gaps(labels))


def chart_plan(cmp: Comparison) -> dict[str, Chart]:
    """Every chart of the report, by file name (drawn by `write_charts`, linked by the markdown)."""
    plan: dict[str, Chart] = {}
    for chronology in cmp.chronologies:
        plan |= chronology_charts(cmp, chronology)
    return plan | run_charts(cmp)


def chronology_charts(cmp: Comparison, chronology: str) -> dict[str, Chart]:
    """The size charts of one chronology: its request views and retained states, turn by turn."""
    plan: dict[str, Chart] = {}
    for kind, field, what in (
        ("view", TURN.view_chars, "request view sent at each turn"),
        ("retained", TURN.retained_chars, "retained state after each turn"),
    ):
        series = tuple(size_series(c, chronology, field) for c in cmp.columns)
        plan[chart_name(cmp, chronology, kind)] = LineChart(
            f"{chronology}: {what}", "turn", "characters", series, events(cmp, chronology)
        )
    return plan


def run_charts(cmp: Comparison) -> dict[str, Chart]:
    """The charts over the whole run that have something to draw: survival by age over every probe
    and its intervals when some cell has repetitions, cost against what was kept, and the policies'
    measures side by side."""
    rows = policy_rows(cmp)
    plan: dict[str, Chart | None] = {SURVIVAL_CHART: survival_chart(cmp), INTERVALS_CHART: intervals_chart(cmp)}
    plan |= {COST_CHART: cost_chart(cmp, rows), MEASURES_CHART: measures_chart(rows)}
    return {name: chart for name, chart in plan.items() if chart is not None}  # None: nothing to draw


# (category label, the side-by-side count): the measures of the chart beside the glance, in the table's order
MEASURES = (
    ("prohibitions in view", "prohibitions_in_view"),
    ("honoured", "honoured_asked_in_view"),
    ("current in view", "current_in_view"),
    ("current in answers", "current_in_answer"),
    ("stale in view", "stale_in_view"),
    ("stale in answers", "stale_in_answer"),
    ("forgotten back in view", "forgotten_in_view"),
    ("expectations met", "expect_offline"),
)


def measures_chart(rows: list[PolicyRow]) -> IntervalChart | None:
    """A panel per policy in the declared order (never sorted by an outcome), a point per measure of
    the side-by-side table with its 95% Wilson interval over the checks; a measure no policy has
    checked is left out, one a policy has not checked is a gap in its panel."""
    shown = [(label, name) for label, name in MEASURES if any(r.counts[name].n for r in rows)]
    if not shown:
        return None
    series = []
    for row in rows:
        counts = [row.counts[name] for _, name in shown]
        bounds = [wilson(c.k, c.n) if c.n else None for c in counts]
        series.append(
            Series(
                f"{row.header} (control)" if row.control else row.header,
                tuple(range(1, len(shown) + 1)),
                tuple(100 * c.k / c.n if c.n else None for c in counts),
                tuple(100 * b[0] if b else None for b in bounds),
                tuple(100 * b[1] if b else None for b in bounds),
            )
        )
    title = "Measures per policy over the whole run, with 95% Wilson intervals"
    xlabel = "measure (the policies' table; stale and forgotten values should appear nowhere)"
    return IntervalChart(title, xlabel, "% of the checks", tuple(c for c, _ in shown), tuple(series))


KEPT = ("prohibitions_in_view", "current_in_view")  # what was kept: the side-by-side table's counts


def cost_chart(cmp: Comparison, rows: list[PolicyRow] | None = None) -> ScatterChart | None:
    """Per policy, a point: what it kept in view at probes (prohibitions and current values, with
    the 95% Wilson interval) against what its own calls cost, without a cache and (hollow) with
    the cacheable prefix cached; in input tokens when some policy has no price (or none is given)."""
    rows, points, money = policy_rows(cmp) if rows is None else rows, [], cmp.prices is not None
    costs = {c.header: policy_costs(c, cmp.prices) for c in cmp.columns} if cmp.prices else {}
    if money and any(c.uncached.amount is None or c.prefix_cached.amount is None for c in costs.values()):
        money = False  # one axis of one kind: tokens for all, never a cost beside a count
    for index, (column, row) in enumerate(zip(cmp.columns, rows, strict=True)):
        k, n = (sum(row.counts[name].k for name in KEPT), sum(row.counts[name].n for name in KEPT))
        figures = prefix_figures(column)
        if not n or figures is None:
            continue
        low, high = wilson(k, n)
        if money:
            found = costs[column.header]
            x, also = found.uncached.amount, found.prefix_cached.amount
        else:
            x, also = figures[0], None if figures[1] is None else figures[0] - figures[1]
        points.append(Point(column.header, index, float(x or 0), 100 * k / n, 100 * low, 100 * high, also))
    if not points:
        return None
    if money:
        assert cmp.prices is not None
        xlabel = f"cost of the policy's own calls, {cmp.prices.currency}"
        also = "hollow: with the cacheable prefix cached (estimate)"
    else:
        counted = {f[2] for f in map(prefix_figures, cmp.columns) if f is not None}
        words = counted.pop() if len(counted) == 1 else "tiktoken, or the estimate where a count is missing"
        xlabel = f"input tokens of the policy's own calls ({words})"
        also = "hollow: the part not in the cacheable prefix"
    against = "what the calls cost" if money else "the input tokens the calls sent"
    title = f"Kept in view at probes against {against}, one point per policy"
    ylabel = "% prohibitions and current values in view (95% Wilson)"
    return ScatterChart(title, xlabel, ylabel, tuple(points), also)


def remove_charts(folder: Path) -> None:
    """A report written without charts: remove the PNGs an earlier build left in its folder
    (and the folder, when nothing else is in it), so the markdown is not beside stale images."""
    if not folder.is_dir() and not folder.is_symlink():
        return
    for stale in own_folder(folder).glob("*.png"):
        stale.unlink()
    if not any(folder.iterdir()):
        folder.rmdir()


PARALLEL_FROM = 8  # charts; fewer are drawn in this process (a worker costs more than it saves)
BATCHES_PER_WORKER = 4  # each worker draws its charts in a few batches, so an early finisher takes more


class ChartSpool(MutableMapping[str, Chart]):
    """A chart plan kept in a temporary file, not in memory: each chart pickled as it is added,
    found again by its byte span. A batch's report adds charts for every chronology before any is
    drawn; held in memory, their series would grow the report's peak with the batch. The file
    has no name (removed once opened: nothing is left behind, even by a killed report); the
    drawing workers, forked, read their charts through the descriptor they inherit
    (`draw_spooled`). `close` frees it."""

    def __init__(self) -> None:
        handle, name = tempfile.mkstemp(prefix="harness-charts-", suffix=".pickle")
        os.unlink(name)
        self._handle = handle
        self._spans: dict[str, tuple[int, int]] = {}
        self._end = 0

    def __setitem__(self, name: str, chart: Chart) -> None:
        data = pickle.dumps(chart, protocol=pickle.HIGHEST_PROTOCOL)
        written = 0
        while written < len(data):
            written += os.pwrite(self._handle, data[written:], self._end + written)
        self._spans[name] = (self._end, len(data))
        self._end += len(data)

    def __getitem__(self, name: str) -> Chart:
        return spooled(self.span(name))

    def __delitem__(self, name: str) -> None:
        del self._spans[name]

    def __contains__(self, name: object) -> bool:  # the mapping's own would read and unpickle the chart
        return name in self._spans

    def __iter__(self) -> Iterator[str]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def span(self, name: str) -> tuple[int, int, int]:
        """Where one chart lies: (file descriptor, offset, length), for `spooled`."""
        return (self._handle, *self._spans[name])

    def close(self) -> None:
        os.close(self._handle)


def spooled(span: tuple[int, int, int]) -> Chart:
    """One chart of a `ChartSpool` (in its process or a forked one), read from its file."""
    handle, offset, length = span
    return pickle.loads(os.pread(handle, length, offset))  # noqa: S301 - written by this report's process


def draw_spooled(jobs: list[tuple[tuple[int, int, int], Path]]) -> list[Path]:
    """`draw_many` of charts read from a `ChartSpool` one at a time."""
    from harness.report.charts import draw_many  # matplotlib: only where charts are drawn

    return draw_many((spooled(where), path) for where, path in jobs)


def write_charts(
    cmp: Comparison, folder: Path, workers: int | None = None, plan: Mapping[str, Chart] | None = None
) -> list[Path]:
    """Draw every chart into `folder`; remove PNGs left there by an earlier build of this report.

    Many charts are drawn in parallel processes (one per core unless `workers` says otherwise),
    each drawing a batch at a time (`draw_many` pays its set-up once per batch); each PNG's bytes
    depend on its data alone, so the files are the same either way. A `ChartSpool` plan is read
    chart by chart where it is drawn.
    """
    from harness.report.charts import draw_many  # matplotlib: only where charts are drawn

    plan = chart_plan(cmp) if plan is None else plan
    own_folder(folder)  # never a link: its stale PNGs are removed
    for stale in folder.glob("*.png"):
        if stale.name not in plan:
            stale.unlink()
    if isinstance(plan, ChartSpool):
        jobs: list[tuple[Any, Path]] = [(plan.span(name), folder / name) for name in plan]
        draw: Callable[[Any], list[Path]] = draw_spooled
    else:
        jobs, draw = [(chart, folder / name) for name, chart in plan.items()], draw_many
    workers = min(len(jobs), workers if workers is not None else os.cpu_count() or 1)
    if workers < 2 or len(jobs) < PARALLEL_FROM:
        return draw(jobs)
    size = -(-len(jobs) // (workers * BATCHES_PER_WORKER))
    batches = [jobs[start : start + size] for start in range(0, len(jobs), size)]
    with forked_pool(workers) as pool:  # the workers inherit matplotlib already imported
        return [path for done in pool.map(draw, batches) for path in done]
