"""The whole report, its files and the index.

One results directory gives `<reports>/<run-id>.md`; several give a side-by-side comparison,
`<reports>/compare-<id>+<id>.md` (harness.report.names). Charts go in a folder of the same name beside the markdown,
linked by relative paths, with `policies.csv` (the side-by-side table's counts,
harness.report.policies); `<reports>/index.md` lists every report there. Without charts
(`--no-charts`) the report is its tables alone: no image is linked, and PNGs left by an earlier
build of the same report are removed, so nothing stale sits beside it; the folder still holds
`policies.csv`.

The reports folder is the user's and may be a link; what the harness writes in it (the report,
its charts folder and charts, `index.md`) is never written through a link (`harness.base.files`),
and a report beside them is read for the index only if it is a regular file, never followed.
"""

from __future__ import annotations

import html
import io
import itertools
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import TextIO

from harness.base.errors import InputError
from harness.base.files import FileRefused, own_folder, read_own_file, replacing, write_atomic
from harness.base.temporaries import is_temporary, sweep
from harness.base.text import visible
from harness.report.ages import by_age
from harness.report.answers import answers
from harness.report.benchmarks import CSV_NAME as SCORES_CSV
from harness.report.benchmarks import scores_csv
from harness.report.benchmarks import section as benchmark_scores
from harness.report.cells import plural
from harness.report.chart_data import Chart
from harness.report.charts_plan import (
    ChartSpool,
    chronology_charts,
    remove_charts,
    run_charts,
    write_charts,
)
from harness.report.comparison import Comparison, compare, unique
from harness.report.cost_section import cost_section
from harness.report.expectations import section as expectations
from harness.report.glance import at_a_glance, glance_row
from harness.report.header import caveats, one_line, what_ran
from harness.report.invariants import invariants
from harness.report.items import (
    FolderPages,
    Items,
    KeptPages,
    Pages,
    chronology_page,
    contents_link,
    glance_rows,
    item_page,
    item_text,
    write_pages,
)
from harness.report.items import section as items_section
from harness.report.judging import judged
from harness.report.markdown import Markup, anchor, cell, link, table
from harness.report.offline import notice
from harness.report.policies import CSV_NAME, FIRST_COLUMNS, policies_csv, side_by_side
from harness.report.prices import PriceList
from harness.report.probes import drift, losses, survival
from harness.report.repetitions import spread
from harness.report.residue import section as residue
from harness.report.sizes import sizes
from harness.report.timeline import fact_timeline, stops
from harness.report.token_figures import tokens
from harness.report.triggers import triggers
from harness.results.damage import naming_damage
from harness.results.integrity import check
from harness.results.outputs import check_output, check_outside_runs, starts_as
from harness.results.spans import view_reader
from harness.results.tables import Results, load_results

TITLE = "# Context-policy "  # every report's first line starts so; `index.md` and `write_report` rely on it
NOT_OURS_REMEDY = "give another --reports folder, or replace it with `harness report RESULTS... --force`"

SECTIONS = (
    ("Prohibition survival", survival),
    ("Drift: stale and forgotten values", drift),
    ("Expectations of the answer", expectations),
    ("What each policy keeps of old values", residue),
    ("Where each loss happened", losses),
    ("Answers at probes", answers),
    ("Policy stops and errors", stops),
    ("Fact-store timeline", fact_timeline),
)
SHOWN_WHEN_ANY = (expectations,)  # sections left out of a chronology that has nothing for them
# What the main report shows of a chronology written by hand: what was kept and lost, and why a
# policy stopped. Every section, these included, is on the chronology's page beside the report
# (`chronology_page`), where the detail that repeats per turn and per probe lives: a library's
# report stays a document one reads, and nothing is lost.
IN_REPORT = (survival, drift, expectations, residue, stops)
ON_PAGE_ONLY = [title for title, section in SECTIONS if section not in IN_REPORT] + [
    "Token triggers",
    "Sizes per turn",
    "Token figures",
]


def contents(cmp: Comparison, names: Sequence[str] | None = None, more: Markup | None = None) -> list[str]:
    """Links to the chronologies' sections (`names`; default: all), and `more` after them."""
    links = [link(name, f"#{anchor(name)}") for name in (cmp.chronologies if names is None else names)]
    return ["Chronologies: " + " · ".join(links + ([more] if more else [])), ""]


def chronology_heading(cmp: Comparison, chronology: str) -> list[str]:
    """A chronology's heading: its name, its titles, and what its author expected."""
    titles = unique(c["title"] for _, c in cmp.entries(chronology))
    described = unique(c.get("description") or "" for _, c in cmp.entries(chronology))
    lines = [f"## {cell(chronology)}", "", f"*{cell(' / '.join(titles))}*", ""]
    return (
        lines
        + [f"Expected, in its author's words: {cell(d)}" for d in described if d]
        + ([""] if any(described) else [])
    )


def chronology_summary(cmp: Comparison, chronology: str) -> list[str]:
    """A hand-written chronology in the main report: its heading, the sections of `IN_REPORT`, and
    a link to its page, which holds every section."""
    lines = chronology_heading(cmp, chronology)
    page = f"{cmp.name}/{chronology_page(chronology)}"
    lines += [
        f"Every section of this chronology, {', '.join(t.lower() for t in ON_PAGE_ONLY)} included: {link('its page', page)}.",
        "",
    ]
    return lines + sections(cmp, chronology, IN_REPORT) + spread(cmp, chronology)


def sections(cmp: Comparison, chronology: str, among: Sequence[object] | None = None) -> list[str]:
    """The chronology's `SECTIONS` (only those `among`, when given), each under its title, in order."""
    lines: list[str] = []
    for title, section in SECTIONS:
        if among is not None and section not in among:
            continue
        body = section(cmp, chronology)
        if body or section not in SHOWN_WHEN_ANY:
            lines += [f"### {title}", ""] + body
        lines += judged(cmp, chronology) if section is survival else []
        lines += invariants(cmp, chronology) if section is stops else []
    return lines


def chronology_text(cmp: Comparison, chronology: str, section_lines: Sequence[str]) -> str:
    """A hand-written chronology's page: a line back to the report, then every section."""
    back = link(cmp.name, f"../{cmp.name}.md")
    lines = [f"# Chronology {cell(chronology)}", "", f"Every section of this chronology in {back}.", "", *section_lines]
    return "\n".join(lines).rstrip() + "\n"


def chronology_section(
    cmp: Comparison, chronology: str, charts: Mapping[str, Chart], beside: bool = False
) -> list[str]:
    """A chronology's sections, every one; `beside`: on a page, in the charts' folder."""
    lines = chronology_heading(cmp, chronology) + sections(cmp, chronology)
    lines += spread(cmp, chronology) + triggers(cmp, chronology)
    lines += ["### Sizes per turn", ""] + sizes(cmp, chronology, charts, beside)
    return lines + ["### Token figures", ""] + tokens(cmp, chronology)


def report_and_charts(
    cmp: Comparison, charts_drawn: bool = True, pages: Pages | None = None
) -> tuple[str, dict[str, Chart]]:
    """The markdown and its chart plan (see `compose`). Without charts the plan is empty; the
    items' pages go to `pages` when given (harness.report.items)."""
    out = io.StringIO()
    charts = run_charts(cmp) if charts_drawn else {}
    compose(cmp, charts, charts_drawn, out, pages)
    return out.getvalue(), charts


def compose(
    cmp: Comparison, charts: MutableMapping[str, Chart], charts_drawn: bool, out: TextIO, pages: Pages | None = None
) -> None:
    """Write the markdown to `out`, made in one pass over the chronologies: each chronology's
    records are read into memory once, for its charts, its row at a glance and its section
    together; when `charts_drawn`, its charts are added to `charts` as it goes.

    The report grows with the batch, and its head (the glance over every chronology) is known
    only at the end: the sections wait in a temporary file, not in memory, and follow the head.
    Imported items (harness.report.items) get no section here: each has its own page, written to
    `pages` as the pass goes, and the head summarises them by category."""
    items, pages = Items.of_report(cmp), Pages() if pages is None else pages
    names = [name for name in cmp.chronologies if name not in items.of]  # written by hand
    with tempfile.TemporaryFile("w+", encoding="utf-8", newline="") as body:
        glance = compose_sections(cmp, names, charts, charts_drawn, body, items, pages)
        write_pages(items, pages)
        # What follows the glance, counted over every chronology.
        listed = names if items.of else None
        note = f"Imported items: {plural(len(items.of), 'item')}, listed on their category pages." if items.of else ""
        rest = contents(cmp, names, contents_link(items)) + items_section(items) + benchmark_scores(cmp)
        rest += what_ran(cmp, charts_drawn, listed, note) + caveats(cmp, listed) + by_age(cmp, charts)
        kind = "report" if len(cmp.runs) == 1 else "comparison"
        lines = [
            f"{TITLE}{kind}: {cell(', '.join(r.run_id for r in cmp.runs))}",
            "",
            one_line(cmp),
            "",
            *notice(cmp, len(items.of)),  # what the offline reader cannot answer, before any figure
            "Policies appear in the order the run declared them, never ordered by an outcome; nothing here "
            "is scored. Each policy loses something different: read the columns side by side.",
            "",
        ]
        head = "\n".join(
            lines
            + side_by_side(cmp)
            + cost_section(cmp, cmp.prices, charts)
            + at_a_glance(cmp, glance + glance_rows(items), charts)
            + rest
        )
        out.write(head if names else head.rstrip())
        body.seek(0)
        shutil.copyfileobj(body, out)
    out.write("\n")


def compose_sections(
    cmp: Comparison,
    names: Sequence[str],
    charts: MutableMapping[str, Chart],
    charts_drawn: bool,
    body: TextIO,
    items: Items,
    pages: Pages,
) -> list[list[object]]:
    """Write the sections of these chronologies (those written by hand) to `body`, each after a
    newline (the report's last one without its trailing blank lines); add their charts to
    `charts` when drawn; return their rows at a glance. Each of `items` gets its page in `pages`
    instead, and is counted for its category, in the same pass."""
    glance, last = [], names[-1] if names else None
    for chronology in cmp.chronologies:
        if charts_drawn:
            charts.update(chronology_charts(cmp, chronology))
        if chronology in items.of:
            if pages.wanted:
                lines = chronology_section(cmp, chronology, charts, beside=True)
                pages.write(item_page(chronology), item_text(cmp, chronology, items.of[chronology], lines))
            items.add(chronology)
            continue
        glance.append(glance_row(cmp, chronology))
        if pages.wanted:
            lines = chronology_section(cmp, chronology, charts, beside=True)
            pages.write(chronology_page(chronology), chronology_text(cmp, chronology, lines))
        section = "\n".join(chronology_summary(cmp, chronology))  # never empty: a heading first
        body.write("\n" + (section.rstrip() if chronology == last else section))
    return glance


def report_pages(runs: Results | Sequence[Results], charts: bool = False) -> tuple[str, dict[str, str]]:
    """The report's markdown and its pages (file name -> markdown: each chronology's, each imported
    item's and category's), made in memory: a report read whole without writing it."""
    pages = KeptPages()
    text, _ = report_and_charts(compare([runs] if isinstance(runs, Results) else runs), charts, pages)
    return text, pages.texts


def build_report(runs: Results | Sequence[Results], charts: bool = True) -> str:
    """The report of one run, or of several side by side, as markdown (same results, same bytes);
    `charts=False`: tables only, no image linked. The text alone: the charts and the imported
    items' pages it links are files `write_report` writes beside it."""
    return report_and_charts(compare([runs] if isinstance(runs, Results) else runs), charts)[0]


def check_whole(results: Results, notify: Callable[[str], None] | None = None) -> None:
    """Refuse a run whose records are not as the harness wrote them (harness.results.integrity),
    naming the file, the conversation and what differs; tell `notify` of a run that recorded no
    digests (format version 2), whose records the report takes as they are."""
    directory, manifest = results.directory, results.manifest
    verdict = check(directory, manifest)
    if verdict.unverified:
        if notify:
            notify(f"note: {directory} is unverified ({verdict.unverified}); the report takes its records as they are")
        return
    if not verdict.mismatches:
        return
    if manifest.shard and manifest.shard.get("index") is None:
        todo = "merge its shards again into a new folder, or restore it from a copy"
    elif verdict.repairable:
        todo = f"`harness run --resume {directory}` runs the conversations concerned again, or restore the folder from a copy"
    else:
        todo = "restore the folder from a copy, or start a new run"
    raise InputError(f"{directory}: {verdict.summary()}: the results were changed after the harness wrote them; {todo}")


INDEX_TITLE = "# Reports\n"  # the index's first line: how the harness knows an `index.md` is its own


def check_index(reports: Path, force: bool, remedy: str = NOT_OURS_REMEDY) -> None:
    """Refuse (unless `force`) before anything is written when `index.md` in `reports` is a file the
    harness did not write: `write_index` would replace it. `remedy`: what the refusal advises."""
    check_output(reports / "index.md", "--reports", force, lambda found: starts_as(found, INDEX_TITLE), remedy)


def check_report_place(reports: Path, name: str, force: bool, run_folder: Path | None = None) -> Path:
    """The path of the report `name` in `reports`, once it is sure the report, its folder and the
    index may be written there (`harness.results.outputs`); `harness run` asks before it runs,
    giving the `run_folder` it claimed (no manifest in it yet, so only its name tells it is a run's)."""
    path = reports / f"{name}.md"
    if run_folder is not None and (reports / name).resolve() == run_folder.resolve():
        raise InputError(
            f"--reports {visible(str(reports))}: the report's folder would be the run's own folder "
            f"{visible(str(run_folder))}; give a --reports folder other than --out"
        )
    check_output(path, "--reports", force, lambda found: starts_as(found, TITLE), NOT_OURS_REMEDY)
    check_index(reports, force)
    check_report_folder(reports / name, force)
    return path


def check_report_folder(folder: Path, force: bool) -> None:
    """Refuse (unless `force`) a report's folder of the user's: a build removes PNGs and item pages
    an earlier build left there. The folder is the harness's when it is missing or empty, or holds
    the `policies.csv` every build writes (its header starts `CSV_HEAD`). Never a results folder,
    even with `force` (`--reports results` names the run's own folder as the report's)."""
    check_outside_runs(folder, "--reports")
    if force or not folder.is_dir() or folder.is_symlink():
        return  # a link there (or in it) is refused as the charts are written (harness.base.files)
    # A build killed before its policies.csv was in place left at most the harness's temporaries
    # (swept as this build starts) and links (refused further on): the folder is still its own.
    if all(p.is_symlink() or is_temporary(p.name) for p in folder.iterdir()):
        return
    if not starts_as(folder / CSV_NAME, CSV_HEAD):
        raise InputError(
            f"--reports {visible(str(folder))}: the report's folder is there and was not written by the harness "
            f"(no {CSV_NAME}); {NOT_OURS_REMEDY}"
        )


CSV_HEAD = ",".join(FIRST_COLUMNS) + ","  # how every policies.csv starts


def write_index(reports: Path) -> Path:
    """`index.md`: every report in `reports`, by file name, with its one-line summary."""
    rows = []
    for path in sorted(p for p in reports.glob("*.md") if p.name not in ("index.md", "README.md")):
        rows.append([link(path.stem, path.name), summary(path)])
    text = [
        INDEX_TITLE.rstrip("\n"),
        "",
        "Every report in this folder, by file name (rewritten whenever a report is written).",
        "",
        table(["report", "summary"], rows) if rows else "No report yet.",
    ]
    index = reports / "index.md"
    write_atomic(index, "\n".join(text) + "\n")
    return index


# index.md reads the head of each markdown file in the folder, never a whole file, and shows at
# most this many characters of a summary (a report holds its own whole; `…` marks the cut).
INDEX_HEAD_CHARS = 16_384
MAX_INDEX_SUMMARY_CHARS = 800
NOT_OURS = "not a harness report"
_ESCAPED = re.compile(r"\\([\\|*_\[\]])")  # what `cell` escapes with a backslash


def head_lines(path: Path) -> list[str]:
    """The first three lines of the first `INDEX_HEAD_CHARS` characters of a file beside the
    index; none when it is not a regular file (a link, a FIFO: never followed, never waited on)
    or cannot be read."""
    try:
        head = read_own_file(path, 4 * INDEX_HEAD_CHARS).decode("utf-8", errors="replace")[:INDEX_HEAD_CHARS]
    except (FileRefused, OSError):
        return []
    return [line.rstrip("\n") for line in itertools.islice(io.StringIO(head, newline=None), 3)]


def summary(path: Path) -> Markup | str:
    """A report's one-line summary (its third line), as `index.md` shows it.

    Any markdown file in the folder may start like a report, so its line is never copied as it
    is: it is read back from markdown (`cell`'s escapes undone) and escaped again by `cell`. A
    line the harness wrote comes out as it went in; any other shows its tags, links and control
    characters as text."""
    lines = head_lines(path)
    if len(lines) < 3 or not lines[0].startswith(TITLE):
        return NOT_OURS
    text = html.unescape(_ESCAPED.sub(r"\1", lines[2]))
    cut = text if len(text) <= MAX_INDEX_SUMMARY_CHARS else text[: MAX_INDEX_SUMMARY_CHARS - 1] + "…"
    return Markup(cell(cut))  # escaped here, once


def write_scores(folder: Path, text: str | None) -> None:
    """`benchmarks.csv` in the report's folder; one an earlier build left is removed when there is none."""
    if text is not None:
        write_atomic(own_folder(folder) / SCORES_CSV, text)
    elif folder.is_dir() and not folder.is_symlink():
        own_folder(folder).joinpath(SCORES_CSV).unlink(missing_ok=True)


@naming_damage  # a record the readers cannot use: one message naming its file, line and field
def write_report(
    directories: Sequence[Path],
    reports: Path,
    charts: bool = True,
    notify: Callable[[str], None] | None = None,
    force: bool = False,
    prices: PriceList | None = None,
) -> Path:
    """Write the report of one run (`<run-id>.md`) or of several side by side
    (`compare-<id>+<id>.md`), its charts (unless `charts=False`) and `index.md`; return the report's path.
    Each run's records are checked first (`check_whole`); `notify` is told of a run that cannot be,
    and of the temporaries a report killed mid-write left, removed (`harness.base.temporaries`).
    The report goes where `harness.results.outputs` allows: never in a results folder, and over a
    file already there only if it is a harness report (its first line: `TITLE`), or with `force`."""
    if not directories:
        raise InputError("give at least one results directory")
    loaded = [load_results(d, view_reader) for d in directories]  # views by span index: see spans.py
    for results in loaded:
        check_whole(results, notify)
    cmp = compare(loaded, prices)  # `prices`: the cost section's money (harness.report.cost_section)
    path = check_report_place(reports, cmp.name, force)
    reports.mkdir(parents=True, exist_ok=True)  # a folder the user names: may be a link
    # What a report killed mid-write left: the reports folder is the user's (followed), the report's
    # own folder is the harness's (a link there is never followed, and refused further on).
    for folder in (reports, *([] if (reports / cmp.name).is_symlink() else [reports / cmp.name])):
        for note in sweep(folder):
            if notify is not None:
                notify(note)
    plan: MutableMapping[str, Chart] = ChartSpool() if charts else {}
    pages = FolderPages(reports / cmp.name)  # the items' pages, beside the charts
    try:
        with replacing(path) as out:  # renamed into place once the charts are drawn too
            plan.update(run_charts(cmp) if charts else {})
            compose(cmp, plan, charts, out, pages)
            # the side-by-side table as CSV, in the charts folder (made for it without charts), first:
            # it marks the folder as the harness's (`check_report_folder`), so a build killed while it
            # draws the charts leaves a folder the next build may replace
            write_atomic(own_folder(reports / cmp.name) / CSV_NAME, policies_csv(cmp))
            if charts:
                write_charts(cmp, reports / cmp.name, plan=plan)
            else:
                remove_charts(reports / cmp.name)
            write_scores(reports / cmp.name, scores_csv(cmp))
            pages.commit()  # the items' pages, once everything else is made
    finally:
        pages.discard()
        if isinstance(plan, ChartSpool):
            plan.close()
    write_index(reports)
    return path
