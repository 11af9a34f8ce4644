"""Charts' file names and the markdown that links them (sections link charts; `charts_plan` draws them)."""

from __future__ import annotations

from collections.abc import Mapping

from harness.report.chart_data import Chart
from harness.report.comparison import Comparison
from harness.report.markdown import image

SURVIVAL_CHART = "survival-by-age.png"
INTERVALS_CHART = "answers-by-age-intervals.png"  # only when some cell has repetitions
COST_CHART = "cost-against-kept.png"  # the cost section's: a point per policy
MEASURES_CHART = "policies-by-measure.png"  # beside the glance: a panel per policy, a point per measure


def chart_name(cmp: Comparison, chronology: str, kind: str) -> str:
    """`<n>-<chronology>-<kind>-size.png`: the number keeps odd chronology names apart."""
    slug = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_") else "-" for ch in chronology)
    return f"{cmp.chronologies.index(chronology) + 1}-{slug}-{kind}-size.png"


def chart_link(cmp: Comparison, charts: Mapping[str, Chart], name: str, beside: bool = False) -> list[str]:
    """A chart's image, linked from the main report (`<name>/chart.png`), or `beside` it, from a
    page in the charts' folder (an item's page: harness.report.items)."""
    target = name if beside else f"{cmp.name}/{name}"
    return [str(image(charts[name].title, target)), ""] if name in charts else []
