"""The data of the report's charts: plain numbers and labels, no pandas and no matplotlib.

The report shapes its charts here (harness.report.charts_plan) and `harness.report.charts` draws them;
a report without charts never imports matplotlib (about half a second and tens of megabytes).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Series:
    """One line: `y` None is a gap; `low`/`high` (optional) draw a min-max band around it;
    `stops` are the x where this series' policy stopped (marked with a cross)."""

    label: str
    x: tuple[float, ...]
    y: tuple[float | None, ...]
    low: tuple[float | None, ...] | None = None
    high: tuple[float | None, ...] | None = None
    stops: tuple[float, ...] = ()


@dataclass(frozen=True)
class Event:
    """Something that happened at `x` for every series: a probe, a forget, a session switch."""

    x: float
    kind: str  # probe | forget | session
    label: str


@dataclass(frozen=True)
class LineChart:
    """Lines on one axes, one per series, over vertical event markers."""

    title: str
    xlabel: str
    ylabel: str
    series: tuple[Series, ...]
    events: tuple[Event, ...] = ()


@dataclass(frozen=True)
class IntervalChart:
    """Per category (an age group) one point per series with its interval (`low`–`high`); the
    series' `x` are category numbers 1…n, named by `categories` on the axis. `gaps` as in
    `GridChart`."""

    title: str
    xlabel: str
    ylabel: str
    categories: tuple[str, ...]
    series: tuple[Series, ...]
    gaps: tuple[int, ...] = ()


@dataclass(frozen=True)
class Grid:
    """rows × columns cells of (k, n), or None where nothing was counted."""

    title: str
    rows: tuple[str, ...]
    columns: tuple[str, ...]
    cells: tuple[tuple[tuple[int, int] | None, ...], ...]


@dataclass(frozen=True)
class GridChart:
    """Grids stacked one above the other, sharing their columns; the colour of a cell is k/n.
    `gaps` are the positions (from 0) of the columns before which values were skipped (ages not
    measured): the columns are categories, not a scale, and a gap is drawn there."""

    title: str
    xlabel: str
    panels: tuple[Grid, ...]
    gaps: tuple[int, ...] = ()


@dataclass(frozen=True)
class Point:
    """One policy in a `ScatterChart`: at `x`, `y` with its interval `low`–`high`, and a second
    x (`x_also`, drawn hollow and joined to the first) for the same policy; `index` is its
    place among the report's policies (its style)."""

    label: str
    index: int
    x: float
    y: float
    low: float
    high: float
    x_also: float | None = None


@dataclass(frozen=True)
class ScatterChart:
    """One point per policy; `also` says what each point's hollow second x is."""

    title: str
    xlabel: str
    ylabel: str
    points: tuple[Point, ...]
    also: str = ""


Chart = LineChart | IntervalChart | GridChart | ScatterChart
