"""The whole report, its files and the index.

One results directory gives `<reports>/<run-id>.md`; several give a side-by-side comparison,
`<reports>/compare-<id>-<id>.md`. Charts go in a folder of the same name beside the markdown,
linked by relative paths; `<reports>/index.md` lists every report there. Without charts
(`--no-charts`) the report is its tables alone: no image is linked, and PNGs left by an earlier
build of the same report are removed, so nothing stale sits beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.charts import Chart
from harness.errors import InputError
from harness.markdown import Markup, anchor, cell, link, table
from harness.report.ages import by_age
from harness.report.answers import answers
from harness.report.charts_plan import age_charts, chronology_charts, remove_charts, write_charts
from harness.report.comparison import Comparison, compare, unique
from harness.report.glance import at_a_glance, glance_row
from harness.report.header import caveats, one_line, what_ran
from harness.report.judging import judged
from harness.report.probes import drift, losses, survival
from harness.report.repetitions import spread
from harness.report.sizes import sizes
from harness.report.timeline import fact_timeline, stops
from harness.report.token_figures import tokens
from harness.results import Results, load_results

TITLE = "# Context-policy "  # every report's first line starts so; `index.md` relies on it

SECTIONS = (
    ("Prohibition survival", survival),
    ("Drift: stale and forgotten values", drift),
    ("Where each loss happened", losses),
    ("Answers at probes", answers),
    ("Policy stops and errors", stops),
    ("Fact-store timeline", fact_timeline),
)


def contents(cmp: Comparison) -> list[str]:
    links = [link(name, f"#{anchor(name)}") for name in cmp.chronologies]
    return ["Chronologies: " + " · ".join(links), ""]


def chronology_section(cmp: Comparison, chronology: str, charts: dict[str, Chart]) -> list[str]:
    titles = unique(c["title"] for _, c in cmp.entries(chronology))
    described = unique(c.get("description") or "" for _, c in cmp.entries(chronology))
    lines = [f"## {cell(chronology)}", "", f"*{cell(' / '.join(titles))}*", ""]
    lines += [f"Expected, in its author's words: {cell(d)}" for d in described if d] + ([""] if any(described) else [])
    for title, section in SECTIONS:
        lines += [f"### {title}", ""] + section(cmp, chronology)
        lines += judged(cmp, chronology) if section is survival else []
    lines += spread(cmp, chronology)
    lines += ["### Sizes per turn", ""] + sizes(cmp, chronology, charts)
    return lines + ["### Token figures", ""] + tokens(cmp, chronology)


def report_text(cmp: Comparison, charts_drawn: bool = True) -> str:
    """The markdown; `charts_drawn=False`: tables only, no image linked."""
    return report_and_charts(cmp, charts_drawn)[0]


def report_and_charts(cmp: Comparison, charts_drawn: bool = True) -> tuple[str, dict[str, Chart]]:
    """The markdown and its chart plan, made in one pass over the chronologies: each
    chronology's records are read into memory once, for its charts, its row at a glance and
    its section together. Without charts the plan is empty."""
    charts = age_charts(cmp) if charts_drawn else {}
    return compose(cmp, charts, charts_drawn), charts


def compose(cmp: Comparison, charts: dict[str, Chart], charts_drawn: bool) -> str:
    """The markdown; when `charts_drawn`, each chronology's charts are added to `charts` as it goes."""
    sections, glance = [], []
    for chronology in cmp.chronologies:
        if charts_drawn:
            charts |= chronology_charts(cmp, chronology)
        glance.append(glance_row(cmp, chronology))
        sections += chronology_section(cmp, chronology, charts)
    kind = "report" if len(cmp.runs) == 1 else "comparison"
    lines = [
        f"{TITLE}{kind}: {cell(', '.join(r.run_id for r in cmp.runs))}",
        "",
        one_line(cmp),
        "",
        "Policies appear in the order the run declared them, never ordered by an outcome; nothing here "
        "is scored. Each policy loses something different: read the columns side by side.",
        "",
    ]
    lines += at_a_glance(cmp, glance) + contents(cmp) + what_ran(cmp, charts_drawn) + caveats(cmp) + by_age(cmp, charts)
    return "\n".join(lines + sections).rstrip() + "\n"


def build_report(runs: Results | Sequence[Results], charts: bool = True) -> str:
    """The report of one run, or of several side by side, as markdown (same results, same bytes);
    `charts=False`: tables only, no image linked."""
    return report_text(compare([runs] if isinstance(runs, Results) else runs), charts)


def write_index(reports: Path) -> Path:
    """`index.md`: every report in `reports`, by file name, with its one-line summary."""
    rows = []
    for path in sorted(p for p in reports.glob("*.md") if p.name not in ("index.md", "README.md")):
        lines = path.read_text(encoding="utf-8").splitlines()
        ours = len(lines) > 2 and lines[0].startswith(TITLE)
        rows.append([link(path.stem, path.name), Markup(lines[2]) if ours else "not a harness report"])
    text = [
        "# Reports",
        "",
        "Every report in this folder, by file name (rewritten whenever a report is written).",
        "",
        table(["report", "summary"], rows) if rows else "No report yet.",
    ]
    index = reports / "index.md"
    index.write_text("\n".join(text) + "\n", encoding="utf-8")
    return index


def write_report(directories: Sequence[Path], reports: Path, charts: bool = True) -> Path:
    """Write the report of one run (`<run-id>.md`) or of several side by side
    (`compare-<id>-<id>.md`), its charts (unless `charts=False`) and `index.md`; return the report's path."""
    if not directories:
        raise InputError("give at least one results directory")
    cmp = compare([load_results(d) for d in directories])
    reports.mkdir(parents=True, exist_ok=True)
    text, plan = report_and_charts(cmp, charts)
    if charts:
        write_charts(cmp, reports / cmp.name, plan=plan)
    else:
        remove_charts(reports / cmp.name)
    path = reports / f"{cmp.name}.md"
    path.write_text(text, encoding="utf-8")
    write_index(reports)
    return path
