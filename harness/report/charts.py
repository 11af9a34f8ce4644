"""PNG charts for the report. The only module that imports matplotlib.

The report shapes the data into `LineChart`, `IntervalChart` and `GridChart` (plain numbers, no
pandas); this module lays them out and draws them, for a page about 900 pixels wide (GitHub's
column; no chart is wider than `MAX_WIDTH_PX`).

- Every policy has a style of its own (colour, dash pattern and hollow marker together, distinct
  for the first 630 policies), the same in every chart of a report. Policies whose lines are
  equal (same sizes at every turn) are drawn as one line, named together in the legend
  (`full-history = retrieval`); nearly equal lines stay apart by their dashes and hollow markers,
  which show through one another. Sizes an order of magnitude apart are drawn on a log scale,
  and the axis says so.
- Events (probes, forgets, session switches) are vertical lines with a numbered tag above the
  plot; tags that would touch are spread apart (with a leader line to their event), and a key
  below the chart says what each number is, on which turn.
- Counts are grids (policies × ages) stacked one above the other, every cell printing its `k/n`;
  ages are categories, not a scale, and a gap marks ages that were skipped.

Drawing uses the Agg canvas explicitly (`Figure` + `FigureCanvasAgg`, never pyplot), so it
neither needs nor changes the caller's backend, and runs inside matplotlib's default style, so a
user's matplotlibrc cannot change the picture. Sizes follow from the data alone and the PNG
carries no `Software` metadata: the bytes depend on the data and the matplotlib version only.

Drawing is most of a report's CPU time, so a batch of charts (`draw_many`) pays some costs once:
the default style is entered once; line charts of one size and plot share one figure and axes,
emptied between charts (`blank`), so ticks and axes are made once; figures of one pixel size
share one Agg renderer, so matplotlib's text-metric cache (kept per renderer) serves the ticks,
policy names and legend texts every chart repeats. PNGs are compressed at zlib level 3 instead
of PIL's 6 (about 6% larger files, a third of the encoding time). None of this changes a pixel.
"""

from __future__ import annotations

import functools
import math
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import matplotlib.style
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.colors import Colormap
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.ticker import LogLocator, MaxNLocator, NullLocator, StrMethodFormatter

from harness.base.files import replacing
from harness.base.text import visible
from harness.report.chart_data import (  # noqa: F401 - drawn here, named from here
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

VERSION = matplotlib.__version__  # the report names it: PNG bytes depend on it
DPI = 100
MAX_WIDTH_PX = 1200  # no chart is wider; most are 900 (GitHub shows a file's images about 880 wide)
MAX_LABEL = 40  # characters; a longer label is shortened with an ellipsis
MAX_TITLE = 96  # characters of a chart's title (a chronology's name is part of it)
FONT = 8  # points: 11 pixels at DPI
PNG_COMPRESSION = 3  # zlib level; PIL's default 6 spends three times the encoding CPU for 6% smaller files
SAVE = {"format": "png", "dpi": DPI, "metadata": {"Software": None}, "pil_kwargs": {"compress_level": PNG_COMPRESSION}}

# A policy's style: its colour, dash pattern and hollow marker, each cycling at its own length
# (10, 7 and 9: coprime, so the triple repeats only after 630 policies).
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
DASHES = (
    "solid",
    (0, (5, 2)),
    (0, (1, 1.5)),
    (0, (6, 2, 1.5, 2)),
    (0, (2.5, 1.5)),
    (0, (9, 2, 1.5, 2, 1.5, 2)),
    (0, (10, 4)),
)
MARKERS = ("o", "s", "^", "D", "v", "P", "*", "<", ">")  # "X" is kept for policy stops
MAX_MARKERS = 40  # points per line up to which each point gets a marker; longer lines get MARKS of them
MARKS = 7

# Line charts, in inches: title band, tag band, plot, tick labels and axis title, then the key.
WIDTH = 9.0
LEFT = 0.8  # the y tick labels and axis title
PLOT_WIDTH = 5.5
TITLE = 0.4
TAG_BAND = 0.32
PLOT_HEIGHT = 2.7
BELOW = 0.55
LEGEND_CHARS = 30  # a longer policy name takes two lines in the legend
LEGEND_LINE = 0.135  # one text line of the legend at FONT, in inches
LEGEND_ENTRY = 0.06  # the space between two entries
LOG_FROM = 20  # a line this many times smaller than the largest value: log scale

# Event markers: a line across the plot, a numbered tag above it, an entry in the key below.
EVENT_STYLES = {"probe": ("#2b6cb0", ":"), "forget": ("#c53030", "-"), "session": ("#4a5568", "--")}
MAX_EVENT_LABELS = 24  # more events than this are drawn without tags or key
TAG_GAP = 24  # pixels between the centres of two tags (a two-digit tag is about 20 wide)
# The key's columns across the chart, by the characters an entry may have: as many columns as
# the longest entry allows; a longer one is shortened in a single column.
KEY_FITS = ((3, 44), (2, 68), (1, 136))
KEY_ROW = 0.2  # inches per key row
KEY_MARGIN = 0.3  # inches left and right of the key

# Grids (survival by age): cells, row labels and the colour bar, in inches.
GRID_WIDTH = 9.0  # the widest a grid is drawn; cells shrink to fit it
CELL_WIDTH = 0.6  # at most
CELL_HEIGHT = 0.28
CHAR_WIDTH = 0.066  # inches per character at FONT, for the row labels' column
BAR = 0.95  # the colour bar and its label
PANEL_TITLE = 0.3
PANEL_TICKS = 0.3
GAP_WIDTH = 5  # points: the white gap drawn where ages were skipped
NOTHING = "#e2e2e2"  # a cell where nothing was counted

# The interval chart: a small panel per policy, PANEL_COLUMNS across, sharing their axes.
PANEL_COLUMNS = 3
PANEL_SPACE = 0.25  # inches between two panels side by side
PANEL_HEIGHT = 1.15


def escape(text: str) -> str:
    """Text as matplotlib should print it: `$` would start mathtext, which can fail to parse; a
    control character (from a file name) is shown as an escape, as on a terminal, not drawn as a
    missing glyph with a warning that carries it raw to the terminal."""
    return visible(text).replace("$", r"\$")


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def middle(text: str, limit: int) -> str:
    """`text` shortened to `limit` characters with an ellipsis in its middle: what tells labels
    apart is often at their end (a policy's parameters, a comparison's run, what a chart shows)."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 5
    return text[:head] + "…" + text[len(text) - (limit - head - 1) :]


def plain(text: str) -> str:
    """A label: escaped, and shortened in its middle when long."""
    return escape(middle(text, MAX_LABEL))


def style(index: int) -> tuple[str, object, str]:
    """The colour, dash pattern and marker of the report's `index`-th policy."""
    return COLORS[index % len(COLORS)], DASHES[index % len(DASHES)], MARKERS[index % len(MARKERS)]


def draw(chart: Chart, path: Path) -> Path:
    """Draw `chart` into the PNG file `path` (its folder must exist); return `path`."""
    return draw_many([(chart, path)])[0]


def draw_many(jobs: Iterable[tuple[Chart, Path]]) -> list[Path]:
    """Draw each chart into its PNG file (their folders must exist); return the paths, in order.

    The default style is entered once for them all: entering it copies and validates every
    rcParam, and no chart changes one. Line charts of one size and plot are drawn on one figure and axes,
    emptied between charts (`blank`): its ticks stay, and creating ticks and axes is a fifth of
    a chart's cost.
    """
    done: list[Path] = []
    lines: dict[tuple, Axes] = {}  # the axes of the line charts of one figure size and plot
    with matplotlib.style.context("default"):
        for chart, path in jobs:
            if isinstance(chart, LineChart):
                layout = line_layout(chart)
                shape = (layout.height, layout.plot_height, layout.plot_bottom)
                figure = draw_lines(chart, layout, lines.get(shape))
                lines[shape] = figure.axes[0]
            elif isinstance(chart, IntervalChart):
                figure = draw_intervals(chart)
            elif isinstance(chart, ScatterChart):
                figure = draw_scatter(chart)
            else:
                figure = draw_grids(chart)
            with replacing(path, binary=True) as png:  # never through a link planted at the chart's name
                figure.savefig(png, **SAVE)  # type: ignore[arg-type]
            done.append(path)
    return done


@functools.lru_cache(maxsize=8)
def shared_renderer(width: int, height: int, dpi: float) -> RendererAgg:
    """One Agg renderer per pixel size, for every figure of that size (see `Canvas`)."""
    return RendererAgg(width, height, dpi)


class Canvas(FigureCanvasAgg):
    """An Agg canvas drawing with the renderer shared by its size. matplotlib caches text metrics
    per renderer, and a renderer is cleared before each drawing, so figures drawn one after
    another share the cache and nothing else."""

    def get_renderer(self) -> RendererAgg:
        width, height = self.get_width_height(physical=True)
        self.renderer = shared_renderer(width, height, self.figure.dpi)
        self._lastKey = (width, height, self.figure.dpi)
        return self.renderer


def new_figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), dpi=DPI)
    Canvas(figure)
    return figure


def title(figure: Figure, text: str, height: float) -> None:
    """The chart's title, centred in the top 0.4 inch whatever the figure's height, shortened to fit."""
    figure.suptitle(escape(middle(text, MAX_TITLE)), fontsize=11, y=1 - 0.2 / height, va="center")


def as_floats(values: tuple[float | None, ...]) -> list[float]:
    return [math.nan if v is None else v for v in values]


def box(figure_height: float, left: float, bottom: float, width: float, height: float) -> tuple[float, ...]:
    """An axes rectangle given in inches from the figure's bottom left, as figure fractions."""
    return (left / WIDTH, bottom / figure_height, width / WIDTH, height / figure_height)


# --- line charts: layout ---------------------------------------------------------------------


@dataclass(frozen=True)
class LineLayout:
    """Where a line chart's parts go, in inches; follows from the chart's data alone."""

    height: float  # of the figure
    plot_height: float
    key_rows: int
    key_columns: int
    xlim: tuple[float, float]
    log: bool

    @property
    def plot_bottom(self) -> float:
        return self.key_rows * KEY_ROW + (0.1 if self.key_rows else 0) + BELOW


def line_layout(chart: LineChart) -> LineLayout:
    """The chart's size: the plot grows when the legend needs more height, the figure with the key."""
    legend = sum(LEGEND_LINE * lines + LEGEND_ENTRY for lines in legend_lines(chart)) + 2 * LEGEND_LINE
    plot_height = max(PLOT_HEIGHT, round(legend - BELOW + 0.1, 2))
    key = key_entries(chart)
    columns = key_columns(key)
    rows = -(-len(key) // columns)
    height = round(TITLE + TAG_BAND + plot_height + BELOW + rows * KEY_ROW + (0.1 if rows else 0), 2)
    return LineLayout(height, plot_height, rows, columns, x_limits(chart), log_scale(chart))


def key_columns(entries: list[str]) -> int:
    """How many columns the key has: as many as its longest entry fits in."""
    longest = max((len(e) for e in entries), default=0)
    return next((columns for columns, fits in KEY_FITS if longest <= fits), 1)


def x_limits(chart: LineChart) -> tuple[float, float]:
    """The x axis' range: every point and event, with a margin; set here so the tags' places are known."""
    xs = [x for s in chart.series for x in s.x] + [e.x for e in chart.events]
    if not xs:
        return (0.0, 1.0)
    low, high = min(xs), max(xs)
    margin = max(0.3, 0.03 * (high - low))
    return (low - margin, high + margin)


def log_scale(chart: LineChart) -> bool:
    """Whether the sizes span so much that a linear axis would flatten the smaller lines together:
    some line's largest value is LOG_FROM times smaller than the chart's (and none is 0)."""
    values = [v for s in chart.series for v in (*s.y, *(s.low or ()), *(s.high or ())) if v is not None]
    tops = [max(known) for s in chart.series if (known := [v for v in s.y if v is not None])]
    if not values or min(values) <= 0 or len(tops) < 2:
        return False
    return max(values) >= LOG_FROM * min(tops)


def coinciding(series: tuple[Series, ...]) -> list[list[int]]:
    """The series grouped by equal lines (same points, band and stops), in order of first appearance."""
    groups: dict[tuple, list[int]] = {}
    for index, s in enumerate(series):
        groups.setdefault((s.x, s.y, s.low, s.high, s.stops), []).append(index)
    return list(groups.values())


def legend_label(label: str) -> str:
    """A policy's name in the legend, on lines of at most LEGEND_CHARS characters."""
    text = plain(label)
    return "\n".join(textwrap.wrap(text, LEGEND_CHARS)) or " "


def legend_lines(chart: LineChart) -> list[int]:
    """Text lines of each legend entry: its policies' names, one per event kind, one for stops."""
    series = chart.series
    entries = [sum(legend_label(series[i].label).count("\n") + 1 for i in group) for group in coinciding(series)]
    entries += [1 for kind in EVENT_STYLES if any(e.kind == kind for e in chart.events)]
    return entries + ([1] if any(s.stops for s in chart.series) else [])


def event_groups(events: tuple[Event, ...]) -> list[tuple[float, list[Event]]]:
    """The events by the turn they are drawn at, in turn order."""
    at: dict[float, list[Event]] = {}
    for event in events:
        at.setdefault(event.x, []).append(event)
    return sorted(at.items())


def key_entries(chart: LineChart) -> list[str]:
    """The key's lines: per tag its turn and what happened there; one note when too many to tag."""
    groups = event_groups(chart.events)
    if len(groups) > MAX_EVENT_LABELS:
        return [f"{len(chart.events)} events at {len(groups)} turns: too many to number (the tables list the probes)"]
    return [f"turn {x:g}: " + " · ".join(e.label for e in together) for x, together in groups]


def spread(wanted: list[float], gap: float, low: float, high: float) -> list[float]:
    """Positions as near `wanted` (ascending) as can be with `gap` between neighbours, within
    [low, high] when they fit: crowded positions are spread around their mean."""
    blocks: list[list[float]] = []  # per block: its first position, then the wanted positions in it
    for place in wanted:
        blocks.append([place, place])
        while True:
            last = blocks[-1]
            last[0] = min(max(last[0], low), high - gap * (len(last) - 2))
            if len(blocks) < 2 or blocks[-2][0] + gap * (len(blocks[-2]) - 1) <= last[0]:
                break
            merged = blocks[-2][1:] + last[1:]
            blocks[-2:] = [[sum(merged) / len(merged) - gap * (len(merged) - 1) / 2, *merged]]
    return [block[0] + gap * n for block in blocks for n in range(len(block) - 1)]


def tag_places(chart: LineChart, layout: LineLayout) -> list[tuple[float, float]]:
    """Per tagged turn: where its event is and where its tag goes, in pixels from the plot's left."""
    groups = event_groups(chart.events)
    if len(groups) > MAX_EVENT_LABELS:
        return []
    low, high = layout.xlim
    width = PLOT_WIDTH * DPI
    wanted = [(x - low) / (high - low) * width for x, _ in groups]
    return list(zip(wanted, spread(wanted, TAG_GAP, 0.0, width)))


# --- line charts: drawing --------------------------------------------------------------------


def draw_lines(chart: LineChart, layout: LineLayout, on: Axes | None = None) -> Figure:
    """Every series on one axes (a new figure's, or `on`, an earlier chart's of the same size, emptied)."""
    if on is None:
        figure = new_figure(WIDTH, layout.height)
        axes = figure.add_axes(box(layout.height, LEFT, layout.plot_bottom, PLOT_WIDTH, layout.plot_height))
    else:
        axes, figure = blank(on), on.get_figure(root=True)
    title(figure, chart.title, layout.height)
    groups = coinciding(chart.series)
    for number, group in enumerate(groups):
        draw_series(axes, chart.series[group[0]], group[0], (number, len(groups)), [chart.series[i] for i in group])
    draw_events(axes, chart, layout)
    axes.set_xlim(*layout.xlim)
    axes.set_xlabel(escape(chart.xlabel), fontsize=FONT)
    axes.set_ylabel(escape(chart.ylabel) + (" (log scale)" if layout.log else ""), fontsize=FONT)
    axes.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
    if layout.log:
        axes.set_yscale("log")
        axes.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axes.yaxis.set_minor_locator(NullLocator())
    else:
        axes.set_yscale("linear")
        axes.yaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
        axes.set_ylim(bottom=0)
    axes.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    axes.tick_params(labelsize=FONT)
    axes.grid(True, alpha=0.3)
    legend(axes, chart, groups, layout)
    return figure


def draw_series(axes: Axes, series: Series, index: int, place: tuple[int, int], same: list[Series]) -> None:
    """One line in the style of policy `index`; `place` (its number, lines drawn) staggers the
    markers of long lines so that lines running together still show each one's."""
    color, dash, marker = style(index)
    if series.low is not None and series.high is not None:
        axes.fill_between(series.x, as_floats(series.low), as_floats(series.high), color=color, alpha=0.15, linewidth=0)
    count = len(series.x)
    step = max(1, math.ceil(count / MARKS))
    every = None if count <= MAX_MARKERS else (place[0] * step // place[1], step)
    axes.plot(
        series.x,
        as_floats(series.y),
        color=color,
        linestyle=dash,
        linewidth=1.6,
        marker=marker,
        markevery=every,
        markersize=6,
        markerfacecolor="none",
        markeredgewidth=1.2,
        label="\n= ".join(legend_label(s.label) for s in same),
    )
    draw_stops(axes, series, color)


def blank(axes: Axes) -> Axes:
    """`axes` as a new one for the next line chart: its artists, legend, view and data limits,
    autoscaling and colour cycles reset. What every line chart sets alike (tick sizes, grid,
    position) stays, and so do the ticks. tests/report/test_charts.py holds every chart drawn after another equal, byte
    for byte, to the same chart drawn alone."""
    for artist in (*axes.lines, *axes.collections, *axes.texts, *axes.patches, *axes.images):
        artist.remove()
    if axes.legend_ is not None:
        axes.legend_.remove()
    axes.set_yscale("linear")  # before the limits: a log axis refuses 0
    axes.set_xlim(0, 1, auto=True)  # a new axes' view, autoscaled
    axes.set_ylim(0, 1, auto=True)
    axes.relim()  # no data: the next chart's data alone sets the limits
    axes.set_prop_cycle(None)
    return axes


def draw_stops(axes: Axes, series: Series, color: str) -> None:
    """A cross where the policy stopped, on its own line."""
    points = [(x, y) for x, y in zip(series.x, series.y) if x in series.stops and y is not None]
    if points:
        axes.plot(
            [x for x, _ in points],
            [y for _, y in points],
            linestyle="none",
            marker="X",
            markersize=10,
            color=color,
            markeredgecolor="black",
            zorder=5,
        )


def draw_events(axes: Axes, chart: LineChart, layout: LineLayout) -> None:
    """A vertical line per event; a numbered tag per turn with events above the plot (spread
    apart where they would touch, a leader line down to the event), and the key below the chart."""
    for event in chart.events:
        color, dash = EVENT_STYLES[event.kind]
        axes.axvline(event.x, color=color, linestyle=dash, linewidth=0.9, alpha=0.8, zorder=0)
    groups = event_groups(chart.events)
    width = PLOT_WIDTH * DPI
    centre = 1 + (TAG_BAND * 0.55) / layout.plot_height  # axes fraction of the tags' centres
    for number, ((_, together), (at, tag)) in enumerate(zip(groups, tag_places(chart, layout)), start=1):
        color = EVENT_STYLES[together[0].kind][0]
        if abs(at - tag) > 0.5:
            axes.plot(
                [at / width, at / width, tag / width],
                [1.0, 1 + 0.05 / layout.plot_height, centre - 0.08 / layout.plot_height],
                transform=axes.transAxes,
                color=color,
                linewidth=0.7,
                clip_on=False,
            )
        tag_text(axes, tag / width, centre, number, color)
    draw_key(axes, chart, layout, groups)


def tag_text(axes: Axes, x: float, y: float, number: int, color: str) -> None:
    """A number in a circle of its event kind's colour, at (x, y) in axes fractions."""
    axes.text(
        x,
        y,
        str(number),
        transform=axes.transAxes,
        fontsize=FONT - 1,
        color="white",
        fontweight="bold",
        ha="center",
        va="center",
        bbox={"boxstyle": "circle,pad=0.25", "facecolor": color, "edgecolor": "none"},
        clip_on=False,
    )


def draw_key(axes: Axes, chart: LineChart, layout: LineLayout, groups: list[tuple[float, list[Event]]]) -> None:
    """The key under the x axis title: a tag per entry, then its turn and events, in columns."""
    entries = key_entries(chart)
    if not entries:
        return
    tagged = len(groups) <= MAX_EVENT_LABELS
    rows = layout.key_rows
    column_width = (WIDTH - 2 * KEY_MARGIN) / layout.key_columns
    for n, entry in enumerate(entries):
        row, column = n % rows, n // rows
        left = (KEY_MARGIN + column * column_width - LEFT) / PLOT_WIDTH  # axes fractions
        y = -(BELOW + 0.1 + (row + 0.5) * KEY_ROW) / layout.plot_height
        if tagged:
            tag_text(axes, left + 0.08 / PLOT_WIDTH, y, n + 1, EVENT_STYLES[groups[n][1][0].kind][0])
        axes.text(
            left + (0.22 if tagged else 0) / PLOT_WIDTH,
            y,
            escape(shorten(entry, dict(KEY_FITS)[layout.key_columns])),
            transform=axes.transAxes,
            fontsize=FONT,
            ha="left",
            va="center",
            clip_on=False,
        )


def legend(axes: Axes, chart: LineChart, groups: list[list[int]], layout: LineLayout) -> None:
    """Right of the plot, from the top of the tag band: a policy per line (policies whose lines
    are equal named together), then the kinds of event and the stop mark drawn."""
    kinds = [k for k in EVENT_STYLES if any(e.kind == k for e in chart.events)]
    handles = axes.get_legend_handles_labels()[0]
    handles += [Line2D([], [], color=EVENT_STYLES[k][0], linestyle=EVENT_STYLES[k][1], label=k) for k in kinds]
    if any(s.stops for s in chart.series):
        handles.append(
            Line2D(
                [],
                [],
                linestyle="none",
                marker="X",
                markersize=8,
                color="white",
                markeredgecolor="black",
                label="policy stopped",
            )
        )
    merged = any(len(group) > 1 for group in groups)
    axes.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.03, 1.0 + TAG_BAND / layout.plot_height),
        fontsize=FONT,
        frameon=False,
        handlelength=3.2,
        title="policy (one line for policies\nof equal sizes: a = b)" if merged else "policy",
        title_fontsize=FONT,
        alignment="left",
    )


# --- intervals ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PanelLayout:
    """Small multiples: `columns` × `rows` panels, each `width` × `height` inches, in a figure of `figure_height`."""

    columns: int
    rows: int
    width: float
    height: float
    figure_height: float
    rotate: bool  # the category labels stand upright: side by side they would touch


def panel_layout(chart: IntervalChart) -> PanelLayout:
    count = max(1, len(chart.series))
    columns = min(PANEL_COLUMNS, count)
    rows = -(-count // columns)
    width = (WIDTH - LEFT - 0.25 - PANEL_SPACE * (columns - 1)) / columns
    longest = max((len(plain(c)) for c in chart.categories), default=1)
    rotate = longest * CHAR_WIDTH * 0.9 > width / max(1, len(chart.categories)) - 0.04
    below = 0.15 + (longest * CHAR_WIDTH * 0.9 if rotate else 0.15) + 0.35  # tick labels and the axis title
    height = round(TITLE + rows * (PANEL_TITLE + PANEL_HEIGHT) + (rows - 1) * 0.2 + below, 2)
    return PanelLayout(columns, rows, round(width, 3), PANEL_HEIGHT, height, rotate)


def draw_intervals(chart: IntervalChart) -> Figure:
    """One small panel per policy (its honoured share at each age with the interval), all on the
    same axes: intervals of several policies drawn at one age would hide one another."""
    layout = panel_layout(chart)
    figure = new_figure(WIDTH, layout.figure_height)
    title(figure, chart.title, layout.figure_height)
    size = len(chart.categories)
    for index, series in enumerate(chart.series):
        row, column = divmod(index, layout.columns)
        left = LEFT + column * (layout.width + PANEL_SPACE)
        top = layout.figure_height - TITLE - row * (PANEL_TITLE + PANEL_HEIGHT + 0.2) - PANEL_TITLE
        axes = figure.add_axes(box(layout.figure_height, left, top - PANEL_HEIGHT, layout.width, PANEL_HEIGHT))
        draw_interval_panel(axes, chart, series, index)
        last_row = index + layout.columns >= len(chart.series)
        labels = [plain(c) for c in chart.categories] if last_row else []
        axes.set_xticks(range(1, size + 1), labels, fontsize=FONT - 1, rotation=90 if layout.rotate else 0)
        axes.set_xlim(0.5, size + 0.5)
        if column:
            axes.set_yticks([0, 50, 100], [])
        else:
            axes.set_yticks([0, 50, 100], ["0", "50", "100"], fontsize=FONT - 1)
            axes.set_ylabel(escape(chart.ylabel), fontsize=FONT - 1)
    figure.text(0.5, 0.12 / layout.figure_height, escape(chart.xlabel), ha="center", va="bottom", fontsize=FONT)
    return figure


def draw_interval_panel(axes: Axes, chart: IntervalChart, series: Series, index: int) -> None:
    color, _, marker = style(index)
    points = [(x, y, lo, hi) for x, y, lo, hi in zip(series.x, series.y, *bounds(series)) if y is not None]
    axes.errorbar(
        [p[0] for p in points],
        [p[1] for p in points],
        yerr=[[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]],
        color=color,
        linestyle="none",
        marker=marker,
        markersize=5,
        markerfacecolor="none",
        elinewidth=1.2,
        capsize=2,
    )
    for gap in chart.gaps:  # skipped ages, between this category and the one before it (x from 1)
        axes.axvline(gap + 0.5, color="#999999", linewidth=0.8, linestyle=(0, (1, 2)))
        axes.text(gap + 0.5, -4, "⋮", ha="center", va="top", fontsize=FONT + 1, color="#555555", clip_on=False)
    axes.set_ylim(-4, 104)
    axes.set_title(plain(series.label), fontsize=FONT, loc="left", pad=3, color=color)
    axes.tick_params(length=2)
    axes.grid(True, axis="y", alpha=0.3)


def bounds(series: Series) -> tuple[list[float], list[float]]:
    """The interval around each point; the point itself where none was given."""
    low, high = series.low or series.y, series.high or series.y
    return (
        [b if b is not None else y or 0.0 for b, y in zip(low, series.y)],
        [b if b is not None else y or 0.0 for b, y in zip(high, series.y)],
    )


# --- a point per policy ------------------------------------------------------------------------

SCATTER_HEIGHT = 4.2  # inches: title, plot, axis title and the note on hollow markers


def draw_scatter(chart: ScatterChart) -> Figure:
    """A point per policy in its own style, with its interval, and its hollow second x joined
    to it by a thin line; the legend names the policies at the right of the plot."""
    figure = new_figure(WIDTH, SCATTER_HEIGHT)
    title(figure, chart.title, SCATTER_HEIGHT)
    axes = figure.add_axes(box(SCATTER_HEIGHT, LEFT, 0.8, PLOT_WIDTH, SCATTER_HEIGHT - TITLE - 1.0))
    for point in chart.points:
        draw_point(axes, point)
    axes.set_xlabel(escape(chart.xlabel), fontsize=FONT)
    axes.set_ylabel(escape(chart.ylabel), fontsize=FONT)
    axes.set_ylim(-4, 104)
    axes.set_xlim(left=0)
    axes.tick_params(labelsize=FONT - 1, length=2)
    axes.grid(True, alpha=0.3)
    if chart.also:
        figure.text(LEFT / WIDTH, 0.1 / SCATTER_HEIGHT, escape(chart.also), fontsize=FONT - 1, va="bottom")
    axes.legend(
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        fontsize=FONT,
        frameon=False,
        title="policy",
        title_fontsize=FONT,
        alignment="left",
    )
    return figure


def draw_point(axes: Axes, point: Point) -> None:
    color, _, marker = style(point.index)
    if point.x_also is not None:
        axes.plot([point.x, point.x_also], [point.y, point.y], color=color, linewidth=0.8, alpha=0.6)
        axes.plot([point.x_also], [point.y], color=color, marker=marker, markersize=6, markerfacecolor="none")
    axes.errorbar(
        [point.x],
        [point.y],
        yerr=[[point.y - point.low], [point.high - point.y]],
        color=color,
        marker=marker,
        markersize=6,
        linestyle="none",
        elinewidth=1.2,
        capsize=2,
        label=legend_label(point.label),
    )


# --- grids of counts --------------------------------------------------------------------------


@dataclass(frozen=True)
class GridLayout:
    """A grid chart's size in inches and its cells' font, from its data alone."""

    width: float
    height: float
    labels: float  # the row labels' column
    cell: float  # a cell's width
    font: float  # of the counts in the cells
    ticks: float  # the band under each grid for its column labels
    rotate: bool  # the column labels stand upright: side by side they would touch


def text_width(characters: int, points: float) -> float:
    """About how wide a text is, in inches, with a little room either side."""
    return characters * points * 0.6 / 72 + 0.06


def grid_layout(chart: GridChart) -> GridLayout:
    """Cells as wide as CELL_WIDTH, narrower when many columns would make the chart wider than
    GRID_WIDTH; the counts' font shrinks (to 6 points) when a count would not fit its cell, and
    past that the cells widen, the chart staying within MAX_WIDTH_PX. Column labels that would
    touch stand upright."""
    first = chart.panels[0]
    labels = round(min(max((len(plain(r)) for r in first.rows), default=1), MAX_LABEL) * CHAR_WIDTH + 0.25, 2)
    columns = max(1, len(first.columns))
    widest = max((len(f"{c[0]}/{c[1]}") for g in chart.panels for row in g.cells for c in row if c), default=1)
    cell = min(CELL_WIDTH, (GRID_WIDTH - labels - BAR) / columns)
    font = next((size for size in (FONT, FONT - 1, FONT - 2) if text_width(widest, size) <= cell), FONT - 2)
    if text_width(widest, font) > cell:
        cell = min(text_width(widest, font), (MAX_WIDTH_PX / DPI - labels - BAR) / columns)
    cell = math.floor(cell * 1000) / 1000
    tick = max((len(plain(c)) for c in first.columns), default=1) * CHAR_WIDTH
    rotate = tick > cell - 0.04
    ticks = round(tick + 0.15, 2) if rotate else PANEL_TICKS
    rows = max(1, len(first.rows))
    height = round(TITLE + len(chart.panels) * (PANEL_TITLE + CELL_HEIGHT * rows + ticks) + 0.3, 2)
    width = math.floor((labels + cell * columns + BAR) * 100) / 100
    return GridLayout(width, height, labels, cell, font, ticks, rotate)


def draw_grids(chart: GridChart) -> Figure:
    """The grids one above the other (so the chart stays narrow), each with the ages under it,
    and one colour bar beside them."""
    layout = grid_layout(chart)
    rows = max(1, len(chart.panels[0].rows))
    columns = max(1, len(chart.panels[0].columns))
    figure = new_figure(layout.width, layout.height)
    title(figure, chart.title, layout.height)
    panel = CELL_HEIGHT * rows
    top = layout.height - TITLE
    image = None
    for number, grid in enumerate(chart.panels):
        top -= PANEL_TITLE
        axes = figure.add_axes(inches(layout, layout.labels, top - panel, layout.cell * columns, panel))
        last = number == len(chart.panels) - 1
        image = draw_grid(axes, grid, chart, layout, chart.xlabel if last else "")
        top -= panel + layout.ticks
    bottom = top + layout.ticks
    scale = figure.add_axes(
        inches(
            layout,
            layout.labels + layout.cell * columns + 0.2,
            bottom,
            0.14,
            layout.height - TITLE - PANEL_TITLE - bottom,
        )
    )
    bar = figure.colorbar(image, cax=scale)
    bar.set_label("share k/n (grey –: nothing counted)", fontsize=FONT)
    bar.ax.tick_params(labelsize=FONT)
    return figure


def inches(layout: GridLayout, left: float, bottom: float, width: float, height: float) -> tuple[float, ...]:
    return (left / layout.width, bottom / layout.height, width / layout.width, height / layout.height)


def blues() -> Colormap:
    """The cells' colour map: shares in blues, a cell with nothing counted in grey."""
    return matplotlib.colormaps["Blues"].with_extremes(bad=NOTHING)


def draw_grid(axes: Axes, grid: Grid, chart: GridChart, layout: GridLayout, xlabel: str) -> AxesImage:
    shares = [[math.nan if c is None or c[1] == 0 else c[0] / c[1] for c in row] for row in grid.cells]
    image = axes.imshow(shares, cmap=blues(), vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    for i, row in enumerate(grid.cells):
        for j, counted in enumerate(row):
            text, color = ("–", "#555555") if counted is None else (f"{counted[0]}/{counted[1]}", ink(shares[i][j]))
            axes.text(j, i, text, ha="center", va="center", fontsize=layout.font, color=color)
    for gap in chart.gaps:  # ages skipped: the columns are categories, not a scale
        axes.axvline(gap - 0.5, color="white", linewidth=GAP_WIDTH)
        axes.text(gap - 0.5, len(grid.rows) - 0.5, "⋮", ha="center", va="top", fontsize=FONT + 2, color="#555555")
    axes.set_xticks(
        range(len(grid.columns)), [plain(c) for c in grid.columns], fontsize=FONT, rotation=90 if layout.rotate else 0
    )
    axes.set_yticks(range(len(grid.rows)), [plain(r) for r in grid.rows], fontsize=FONT)
    axes.set_title(plain(grid.title), fontsize=FONT + 1, loc="left", pad=4)
    if xlabel:
        axes.set_xlabel(escape(xlabel), fontsize=FONT)
    axes.tick_params(length=0)
    return image


def ink(share: float) -> str:
    """Text colour readable on a cell of this shade."""
    return "white" if share == share and share > 0.6 else "black"
