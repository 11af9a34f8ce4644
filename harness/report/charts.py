"""PNG charts for the report. The only module that imports matplotlib.

The report shapes the data into `LineChart` and `GridChart` (plain numbers, no pandas); this
module only draws. Policies often coincide exactly (three policies retain everything), so the
lines of a chart are drawn from the widest to the thinnest: coinciding lines nest and none is
hidden. Counts are drawn as an annotated grid that prints every `k/n`.

Drawing uses the Agg canvas explicitly (`Figure` + `FigureCanvasAgg`, never pyplot), so it
neither needs nor changes the caller's backend, and runs inside matplotlib's default style, so a
user's matplotlibrc cannot change the picture. Sizes follow from the data alone and the PNG
carries no `Software` metadata: the bytes depend on the data and the matplotlib version only.

Drawing is most of a report's CPU time, so a batch of charts (`draw_many`) pays some costs once:
the default style is entered once; its line charts are drawn on one figure and axes, emptied
between charts (`blank`), so ticks and axes are made once; figures of one pixel size share one
Agg renderer, so matplotlib's text-metric cache (kept per renderer) serves the ticks, policy
names and legend texts every chart repeats. PNGs are compressed at zlib level 3 instead of PIL's
6 (about 6% larger files, a third of the encoding time). None of this changes a pixel.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from pathlib import Path

import matplotlib
import matplotlib.style
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from harness.base.files import replacing
from harness.report.chart_data import Chart, Event, Grid, GridChart, LineChart, Series  # noqa: F401 - drawn here, named from here

VERSION = matplotlib.__version__  # the report names it: PNG bytes depend on it
DPI = 80
MAX_MARKERS = 40  # points per line up to which each point gets a marker
MAX_LABEL = 40  # characters; a longer label is shortened with an ellipsis
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
CONTEXT = "#d0d0d0"  # the other series, behind the highlighted one
WIDTH, HEIGHT = 9.0, 4.4  # inches of a line chart (the top holds the event labels)
MAX_EVENT_LABEL = 22  # characters of an event label
MARKERS = ("o", "s", "^", "D", "v", "P", "*", "<", ">", "h")  # "X" is kept for policy stops
# How each kind of event is drawn: colour, line style; its label sits at the top of the axes.
EVENT_STYLES = {"probe": ("#2b6cb0", ":"), "forget": ("#c53030", "-"), "session": ("#718096", "--")}
MAX_EVENT_LABELS = 24  # more events than this are drawn without their labels
CELL = (0.7, 0.34)  # inches per grid cell
LABELS = 2.9  # inches for the row labels of a grid
PNG_COMPRESSION = 3  # zlib level; PIL's default 6 spends three times the encoding CPU for 6% smaller files
SAVE = {"format": "png", "dpi": DPI, "metadata": {"Software": None}, "pil_kwargs": {"compress_level": PNG_COMPRESSION}}


def escape(text: str) -> str:
    """Text as matplotlib should print it: `$` would start mathtext, which can fail to parse."""
    return text.replace("$", r"\$")


def plain(text: str) -> str:
    """A label: escaped, and shortened with an ellipsis when long."""
    return escape(text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…")


def draw(chart: Chart, path: Path) -> Path:
    """Draw `chart` into the PNG file `path` (its folder must exist); return `path`."""
    return draw_many([(chart, path)])[0]


def draw_many(jobs: Iterable[tuple[Chart, Path]]) -> list[Path]:
    """Draw each chart into its PNG file (their folders must exist); return the paths, in order.

    The default style is entered once for them all: entering it copies and validates every
    rcParam, and no chart changes one. Line charts (all one size) are drawn on one figure and
    axes, emptied between charts (`blank`): its ticks stay, and creating ticks and axes is a
    fifth of a chart's cost.
    """
    done, lines = [], None
    with matplotlib.style.context("default"):
        for chart, path in jobs:
            if isinstance(chart, LineChart):
                figure = draw_lines(chart, lines)
                lines = figure.axes[0]
            else:
                figure = draw_grids(chart)
            with replacing(path, binary=True) as png:  # never through a link planted at the chart's name
                figure.savefig(png, **SAVE)  # type: ignore[arg-type]
            done.append(path)
    return done


@functools.lru_cache(maxsize=4)
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


def new_figure(width: float, height: float, title: str) -> Figure:
    figure = Figure(figsize=(width, height), dpi=DPI)
    Canvas(figure)
    figure.suptitle(escape(title), fontsize=11)
    return figure


def as_floats(values: tuple[float | None, ...]) -> list[float]:
    return [math.nan if v is None else v for v in values]


# --- lines -----------------------------------------------------------------------------------


def draw_lines(chart: LineChart, on: Axes | None = None) -> Figure:
    """Every series on one axes (a new figure's, or `on`, an earlier line chart's, emptied first).
    Policies often coincide exactly, so each line is drawn thinner than the one before it:
    coinciding lines show as nested strokes, none hidden.
    (One axes instead of small multiples: ticks and axes are most of matplotlib's cost.)"""
    if on is None:
        figure = new_figure(WIDTH, HEIGHT, chart.title)
        axes = figure.add_axes((0.09, 0.11, 0.62, 0.6))
    else:
        axes, figure = blank(on), on.get_figure(root=True)
        figure.suptitle(escape(chart.title), fontsize=11)
    count = len(chart.series)
    for index, series in enumerate(chart.series):
        color, width = COLORS[index % len(COLORS)], 1.2 + 1.6 * (count - 1 - index)
        if series.low is not None and series.high is not None:
            axes.fill_between(
                series.x, as_floats(series.low), as_floats(series.high), color=color, alpha=0.15, linewidth=0
            )
        marker = MARKERS[index % len(MARKERS)] if len(series.x) <= MAX_MARKERS else None
        axes.plot(
            series.x,
            as_floats(series.y),
            color=color,
            linewidth=width,
            marker=marker,
            markersize=4,
            label=plain(series.label),
            solid_capstyle="butt",
        )
        draw_stops(axes, series, color)
    draw_events(axes, chart.events)
    axes.set_xlabel(plain(chart.xlabel), fontsize=8)
    axes.set_ylabel(plain(chart.ylabel), fontsize=8)
    axes.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
    axes.tick_params(labelsize=7)
    axes.set_ylim(bottom=0)
    axes.grid(True, alpha=0.3)
    axes.legend(
        handles=axes.get_legend_handles_labels()[0] + event_handles(chart),
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        fontsize=7,
        frameon=False,
        title="drawn widest first; coinciding lines nest",
        title_fontsize=6,
    )
    return figure


def blank(axes: Axes) -> Axes:
    """`axes` as a new one for the next line chart: its artists, legend, view and data limits,
    autoscaling and colour cycles reset. What every line chart sets alike (tick sizes, grid,
    position) stays, and so do the ticks. tests/report/test_charts.py holds every chart drawn after another equal, byte
    for byte, to the same chart drawn alone."""
    for artist in (*axes.lines, *axes.collections, *axes.texts, *axes.patches, *axes.images):
        artist.remove()
    if axes.legend_ is not None:
        axes.legend_.remove()
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


def draw_events(axes: Axes, events: tuple[Event, ...]) -> None:
    """A vertical line per event, labelled at the top unless there are too many to read."""
    for event in events:
        color, style = EVENT_STYLES[event.kind]
        axes.axvline(event.x, color=color, linestyle=style, linewidth=0.9, alpha=0.8, zorder=0)
    at: dict[float, list[Event]] = {}
    for event in events:
        at.setdefault(event.x, []).append(event)
    if len(at) > MAX_EVENT_LABELS:
        return
    for x, together in at.items():
        label = " · ".join(e.label for e in together)
        label = label if len(label) <= MAX_EVENT_LABEL else label[: MAX_EVENT_LABEL - 1] + "…"
        axes.text(
            x,
            1.01,
            escape(label),
            transform=axes.get_xaxis_transform(),
            rotation=90,
            fontsize=6,
            color=EVENT_STYLES[together[0].kind][0],
            ha="center",
            va="bottom",
        )


def event_handles(chart: LineChart) -> list[Line2D]:
    """Legend entries for the kinds of event drawn, and for policy stops."""
    kinds = [k for k in EVENT_STYLES if any(e.kind == k for e in chart.events)]
    handles = [Line2D([], [], color=EVENT_STYLES[k][0], linestyle=EVENT_STYLES[k][1], label=k) for k in kinds]
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
    return handles


# --- grids of counts --------------------------------------------------------------------------


def draw_grids(chart: GridChart) -> Figure:
    rows = max(1, len(chart.panels[0].rows))
    panel_width = CELL[0] * max(1, len(chart.panels[0].columns))
    width = LABELS + len(chart.panels) * (panel_width + 0.3) + 0.2
    height = CELL[1] * rows + 1.25
    figure = new_figure(width + 0.9, height, chart.title)
    for number, grid in enumerate(chart.panels):
        left = LABELS + number * (panel_width + 0.3)
        axes = figure.add_axes(
            (left / (width + 0.9), 0.55 / height, panel_width / (width + 0.9), CELL[1] * rows / height)
        )
        image = draw_grid(axes, grid, chart.xlabel, labels=number == 0)
    scale = figure.add_axes(
        ((width + 0.15) / (width + 0.9), 0.55 / height, 0.12 / (width + 0.9), CELL[1] * rows / height)
    )
    bar = figure.colorbar(image, cax=scale)
    bar.set_label("share k/n", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    return figure


def draw_grid(axes: Axes, grid: Grid, xlabel: str, labels: bool) -> AxesImage:
    shares = [[math.nan if c is None or c[1] == 0 else c[0] / c[1] for c in row] for row in grid.cells]
    image = axes.imshow(shares, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    for i, row in enumerate(grid.cells):
        for j, counted in enumerate(row):
            text, color = ("–", "black") if counted is None else (f"{counted[0]}/{counted[1]}", ink(shares[i][j]))
            axes.text(j, i, text, ha="center", va="center", fontsize=8, color=color)
    axes.set_xticks(range(len(grid.columns)), [plain(c) for c in grid.columns], fontsize=8)
    axes.set_yticks(range(len(grid.rows)), [plain(r) for r in grid.rows] if labels else [], fontsize=8)
    axes.set_title(plain(grid.title), fontsize=9, y=1.0, pad=4)
    axes.set_xlabel(plain(xlabel), fontsize=8)
    axes.tick_params(length=0)
    return image


def ink(share: float) -> str:
    """Text colour readable on a cell of this shade."""
    return "white" if share == share and share > 0.6 else "black"
