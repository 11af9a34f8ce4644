"""Imported items in a report: chronologies with a `source:` (the manifest's `source` of their
entry), summarised by their benchmark's category, each with a page of its own.

A run of 500 benchmark items would give a report of 500 sections; instead the main report shows
one row per (dataset, category) in *Items by category* and in *At a glance*, and its size does
not grow with the number of items. Beside it, a category page per (dataset, category) and an
item page per item (docs/reports.md, "Imported items", says what each holds).

Counts are those of the side-by-side table (harness.report.policies `probe_counts`) over the
category's items, per column: nothing ranked, columns in declared order. Page names are safe
file names made as imported chronologies' are (harness.base.names `file_stem`); pages are
written never through a link (harness.base.files), and pages an earlier build of the same report
left that no longer belong are removed.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness.base.files import own_folder, write_atomic
from harness.base.names import file_stem
from harness.base.temporaries import temporary_folder
from harness.report.cells import plural
from harness.report.comparison import Column, Comparison, flags, unique
from harness.report.expectations import Cell, expectation_rows
from harness.report.expectations import evidence_text as evidence_of_row
from harness.report.glance import NOTHING_CHECKED, NOTHING_LOST, checks_something, count_glance, glance_cell
from harness.report.markdown import Markup, cell, link, table
from harness.report.offline import (
    NOT_MEANINGFUL,
    Evidence,
    evidence_at_probes,
    evidence_text,
    item_notice,
    literal_reader,
)
from harness.report.policies import Count, count_text, probe_counts
from harness.results.rows import EXPECT, PROBE, expect_kind

HEADING = "Items by category"
NO_CATEGORY = "no category"
PAGE_PREFIXES = ("category-", "item-", "chronology-")  # the pages a report writes in its folder
STAGING = "pages"  # a build's pages before they are moved into place (FolderPages), in `.harness-tmp-<pid>-<hex>.pages`


@dataclass(frozen=True)
class ItemSource:
    """What a manifest records of an imported chronology's `source:`."""

    dataset: str
    item_id: str
    category: str | None

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.dataset, self.category)


def item_source(entry: Mapping[str, Any]) -> ItemSource | None:
    """The source a manifest's chronology entry records; None for a hand-written chronology, and
    for an entry of a run written before sources were recorded (no `source` key)."""
    source = entry.get("source")
    if not isinstance(source, Mapping):
        return None
    category = source.get("category")
    return ItemSource(
        str(source.get("dataset")), str(source.get("item_id")), None if category is None else str(category)
    )


def sources(cmp: Comparison) -> dict[str, ItemSource]:
    """chronology -> its source, for the chronologies that are items (the first run's that records one)."""
    found: dict[str, ItemSource] = {}
    for run in cmp.runs:
        for entry in run.manifest.chronologies:
            source = item_source(entry)
            if source is not None:
                found.setdefault(entry["name"], source)
    return found


def category_label(key: tuple[str, str | None]) -> str:
    """`longmemeval_s · knowledge-update`; the dataset alone for items that name no category (a
    LoCoMo conversation, whose questions each name their own: *Benchmark scores* reads those)."""
    dataset, category = key
    return dataset if category is None else f"{dataset} · {category}"


def category_page(key: tuple[str, str | None]) -> str:
    """The category page's file name: safe, and never the same for two (dataset, category)."""
    return file_stem("category", json.dumps(list(key))) + ".md"


def item_page(chronology: str) -> str:
    """An item page's file name: safe, and never the same for two chronologies."""
    return file_stem("item", chronology) + ".md"


def chronology_page(chronology: str) -> str:
    """A chronology's page (every section of it, beside the report): safe, never the same for two."""
    return file_stem("chronology", chronology) + ".md"


class Pages:
    """Where a report's pages go. This one keeps none: a report built as text alone
    (`report_and_charts`) links pages it does not write; `FolderPages` writes them, `KeptPages` keeps
    them in memory."""

    wanted = False  # whether the pages' text is to be made at all

    def write(self, name: str, text: str) -> None:
        """Nothing: the pages of a report built as text are not kept."""


class KeptPages(Pages):
    """The pages kept in memory, by file name: a report read whole in a notebook or a test
    (`harness.report.document.report_pages`)."""

    wanted = True

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def write(self, name: str, text: str) -> None:
        self.texts[name] = text


class FolderPages(Pages):
    """Pages written as they are made (none kept in memory) into a staging folder inside the
    report's folder, and moved into place by `commit` once the whole report is made: a build that
    fails half-way (a chart that cannot be drawn) leaves the previous build's pages as they were,
    beside the previous report. Never written through a link; `remove_stale` removes the pages an
    earlier build left that this one did not write; `discard` removes what a failed build staged."""

    wanted = True

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.names: set[str] = set()
        self.staging: Path | None = None

    def write(self, name: str, text: str) -> None:
        if self.staging is None:
            self.staging = temporary_folder(own_folder(self.folder), STAGING)
        write_atomic(self.staging / name, text)
        self.names.add(name)

    def commit(self) -> None:
        """Move every staged page into the report's folder (a rename replaces a link planted
        there, never follows it), then remove the pages this build did not write."""
        if self.staging is not None:
            for name in sorted(self.names):
                os.replace(self.staging / name, own_folder(self.folder) / name)
        self.discard()
        self.remove_stale()

    def discard(self) -> None:
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None

    def remove_stale(self) -> None:
        if not self.folder.is_dir() or self.folder.is_symlink():
            return
        for page in own_folder(self.folder).glob("*.md"):
            if page.name.startswith(PAGE_PREFIXES) and page.name not in self.names:
                page.unlink()


@dataclass
class Category:
    """One (dataset, category)'s items and, per column, their rows on its page."""

    key: tuple[str, str | None]
    items: list[str] = field(default_factory=list)
    rows: list[list[object]] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)  # per column: items that lost something at a glance
    run: list[int] = field(default_factory=list)  # per column: items it ran
    checked: list[int] = field(default_factory=list)  # per column: items with a prohibition or value checked


@dataclass
class Items:
    """The items of a report, gathered as its one pass over the chronologies goes (`add`)."""

    cmp: Comparison
    of: dict[str, ItemSource]
    categories: dict[tuple[str, str | None], Category] = field(default_factory=dict)
    counted: dict[tuple[str, str | None], list[str]] | None = None  # see summaries
    evidence: dict[tuple[str, str | None], list[Evidence]] = field(default_factory=dict)  # per column, by summaries

    @classmethod
    def of_report(cls, cmp: Comparison) -> Items:
        return cls(cmp, sources(cmp))

    def summaries(self) -> dict[tuple[str, str | None], list[str]]:
        """Per category, its summary cell per column, counted once after the pass (the main
        report's row and the category page's show the same): each column's probe rows taken
        once from probes.csv read whole, then those of each category's items."""
        if self.counted is None:
            self.counted = {key: [] for key in self.categories}
            self.evidence = {key: [] for key in self.categories}
            for n, column in enumerate(self.cmp.columns):
                frame = column.frame("probes")
                literal = literal_reader(column.run, column.model)
                for key, found in self.categories.items():
                    if not found.run[n]:
                        self.counted[key].append("not run")
                        self.evidence[key].append(Evidence())
                        continue
                    rows = frame[flags(frame[PROBE.chronology].isin(found.items))]
                    if rows.empty:  # no probe row: no prohibition, value or expectation at any probe
                        self.counted[key].append(NOTHING_CHECKED)
                        self.evidence[key].append(Evidence())
                        continue
                    evidence = evidence_at_probes(rows)
                    self.evidence[key].append(evidence)
                    counts = probe_counts(rows)
                    cells = summary_cell(counts, evidence_out_of_view(rows), evidence if literal else None)
                    self.counted[key].append(cells)
        return self.counted

    def add(self, chronology: str) -> None:
        """Count one item (its records are the ones the report has just read)."""
        key = self.of[chronology].key
        found = self.categories.get(key)
        if found is None:
            columns = len(self.cmp.columns)
            found = self.categories[key] = Category(key, lost=[0] * columns, run=[0] * columns, checked=[0] * columns)
        found.items.append(chronology)
        # Its row on the category page: the item, linked to its page, then a cell per column.
        page = link(self.of[chronology].item_id, item_page(chronology))
        found.rows.append([page, chronology] + [item_cell(c, chronology) for c in self.cmp.columns])
        for n, column in enumerate(self.cmp.columns):
            if column.has("turns", chronology):
                found.run[n] += 1
                found.lost[n] += lost_something(column, chronology)
                found.checked[n] += checks_something(column, chronology)

    def ordered(self) -> list[Category]:
        """Categories by dataset and name (no category last within its dataset): an order of names."""
        return [self.categories[k] for k in sorted(self.categories, key=lambda k: (k[0], k[1] is None, k[1] or ""))]


def lost_something(column: Column, chronology: str) -> bool:
    """Whether a prohibition or current value left this column's view at a probe (the glance's
    losses; another session's, never shared, is not a loss)."""
    found = column.tables.once("losses at a glance", count_glance, chronology).get(column.key(chronology)) or {}
    return any(cause != "other-session" for causes in found.values() for cause in causes)


def item_cell(column: Column, chronology: str) -> str:
    """`value: met · rubric: needs --judge`, then what left the view at a probe, if anything; under
    a literal reader, which cannot answer the item: where each probe's evidence was, then the
    expectations' verdicts as not meaningful."""
    if not column.has("turns", chronology):
        return "not run"
    cells: dict[str, Cell] = {}
    probes: dict[tuple, Cell] = {}
    for row in expectation_rows(column, chronology):
        cells.setdefault(row[PROBE.subject], Cell()).rows.append(row)
        probes.setdefault((row[PROBE.turn], row[PROBE.probe]), Cell()).rows.append(row)
    if literal_reader(column.run, column.model):
        parts = [probe_evidence(probes)] if probes else []
        verdicts = " · ".join(f"{expect_kind(subject)}: {c.verdict()}" for subject, c in cells.items())
        parts += [f"expectations {NOT_MEANINGFUL} ({verdicts})"] if cells else []
    else:
        parts = [f"{expect_kind(subject)}: {c.text()}" for subject, c in cells.items()]
    lost = glance_cell(column, chronology)
    if lost not in (NOTHING_LOST, NOTHING_CHECKED) or not parts:
        parts.append(lost)
    return " · ".join(parts)


def probe_evidence(probes: dict[tuple, Cell]) -> str:
    """Where each probe's evidence was (its first measured repetition), named by probe when several."""
    shown = []
    for (turn, probe), found in probes.items():
        measured = found.measured()
        text = evidence_of_row(measured[0]) if measured else found.verdict()
        shown.append(text if len(probes) == 1 else f"{probe} (turn {turn}): {text}")
    return "; ".join(shown)


# --- the category rows ------------------------------------------------------------------------


def evidence_out_of_view(rows: pd.DataFrame) -> Count:
    """Measured expectations not met whose evidence is known: how many had it out of view."""
    failed = rows[flags(rows[PROBE.check] == EXPECT) & flags(rows[PROBE.status] == "measured")]
    failed = failed[flags(failed[PROBE.passed].astype("boolean") == False)]  # noqa: E712 - a nullable column
    in_view = failed[PROBE.in_view].astype("boolean")
    return Count(int(flags(in_view == False).sum()), int(in_view.notna().sum()))  # noqa: E712


def summary_cell(counts: dict[str, Count], failed_evidence: Count, evidence: Evidence | None = None) -> str:
    """`offline met: 3/6 · judged met: 6 needs --judge · prohibitions in view 2/3 [..] · evidence out of
    view at 2 of 3 failed`; with `evidence` (a literal reader, which cannot answer the items): where
    the probes' evidence was first, then the expectations met labelled not meaningful."""
    met = [
        f"offline met: {count_text('expect_offline', counts['expect_offline'])}",
        f"judged met: {count_text('expect_judged', counts['expect_judged'])}",
    ]
    prohibitions = (
        [f"prohibitions in view: {count_text('prohibitions_in_view', counts['prohibitions_in_view'])}"]
        if counts["prohibitions_in_view"].n
        else []
    )
    if evidence is not None:
        expected = counts["expect_offline"], counts["expect_judged"]
        meaningless = (
            [f"expectations {NOT_MEANINGFUL} ({', '.join(met)})"] if any(c.n or c.waiting for c in expected) else []
        )
        return " · ".join([evidence_text(evidence), *prohibitions, *meaningless])
    parts = met + prohibitions
    if failed_evidence.n:
        parts.append(f"evidence out of view at {failed_evidence.k} of {failed_evidence.n} failed")
    return " · ".join(parts)


def summary_row(items: Items, found: Category, label: object) -> list[object]:
    return [label, len(found.items), *items.summaries()[found.key]]


SUMMARY_WORDS = (
    "Imported benchmark items (chronologies with a `source:`), one row per dataset and category, each "
    "linked to a page listing its items, each item linked to its own page of sections. Per policy: "
    "the items' expectations met, offline ones (value, pattern, not, abstain) and judged rubrics apart "
    "(`needs --judge`: rubrics of a run without a judge, not measured), prohibitions in view where the "
    "items have any, and of the expectations not met whose evidence is marked, at how many it was out "
    "of the request view (each item's page says where and why it left). k/n counts probe rows over "
    "the items and repetitions, as *Policies side by side*. `nothing checked`: no probe of the items "
    "checked a prohibition, a value or an expectation. Counts side by side, not a score: no "
    "leaderboard, no winner."
)
LITERAL_WORDS = (
    "Under a model that is a literal reader (the offline `reference`), which cannot answer the items, a "
    "cell leads with what the run measures: at how many probes (once each, whatever its expectations) "
    "the evidence was in the request view, and why it was out at the others; the expectations met "
    f"follow, `{NOT_MEANINGFUL}`."
)


def section(items: Items) -> list[str]:
    """The main report's *Items by category*; nothing when the report has no item."""
    if not items.categories:
        return []
    cmp = items.cmp
    rows = [
        summary_row(items, found, link(category_label(found.key), f"{cmp.name}/{category_page(found.key)}"))
        for found in items.ordered()
    ]
    literal = any(literal_reader(c.run, c.model) for c in cmp.columns)
    words = f"{SUMMARY_WORDS} {LITERAL_WORDS}" if literal else SUMMARY_WORDS
    return [f"## {HEADING}", "", words, "", table(["category", "items"] + cmp.headers, rows), ""]


def glance_rows(items: Items) -> list[list[object]]:
    """*At a glance*'s rows for items: one per category, linked to its page."""
    items.summaries()  # the evidence per category and column
    rows = []
    for found in items.ordered():
        label = f"{category_label(found.key)} ({plural(len(found.items), 'item')})"
        cells = [
            glance_items_cell(found, n, items.evidence[found.key][n], literal_reader(c.run, c.model))
            for n, c in enumerate(items.cmp.columns)
        ]
        rows.append([link(label, f"{items.cmp.name}/{category_page(found.key)}"), *cells])
    return rows


def glance_items_cell(found: Category, n: int, evidence: Evidence, literal: bool) -> str:
    """A category's cell at a glance for column `n`, short (at most about 100 characters: the
    category's page has the words): in how many of its items that checked a prohibition or value
    one was lost from view (`lost in 2 of 6 items (3 unchecked)`; `nothing checked in 6 items`
    where none did, never "nothing lost"), and where the evidence was (`evidence in view 4/6
    probes, 2 out`): first under a literal reader, which cannot answer the items, else after."""
    ran, checked, lost = found.run[n], found.checked[n], found.lost[n]
    if not ran:
        return "not run"
    marked = evidence.measured or evidence.unmeasured
    if not checked:
        kept = f"{NOTHING_CHECKED} in {plural(ran, 'item')}"
        return kept if not marked else f"{short_evidence(evidence)}; {kept}"
    kept = f"lost in {lost} of {plural(checked, 'item')}" if lost else f"none lost in {plural(checked, 'item')}"
    kept += f" ({ran - checked} unchecked)" if checked < ran else ""
    if not marked:
        return kept
    parts = [short_evidence(evidence), kept] if literal else [kept, short_evidence(evidence)]
    return "; ".join(parts)


def short_evidence(evidence: Evidence) -> str:
    """`evidence in view 4/6 probes, 2 out, 1 unmeasured`: the glance's form of `evidence_text`."""
    parts = [f"evidence in view {evidence.in_view}/{plural(evidence.measured, 'probe')}"]
    out = sum(evidence.causes.values())
    parts += [f"{out} out"] if out else []
    parts += [f"{evidence.unmeasured} unmeasured"] if evidence.unmeasured else []
    return ", ".join(parts)


# --- the pages ------------------------------------------------------------------------------------


def write_pages(items: Items, pages: Pages) -> None:
    """Every category's page (its items' pages are written as the report's pass goes)."""
    cmp = items.cmp
    if not pages.wanted:
        return
    for found in items.ordered():
        label = category_label(found.key)
        lines = [
            f"# Items: {cell(label)}",
            "",
            f"{plural(len(found.items), 'item')} of {link(cmp.name, f'../{cmp.name}.md')}, "
            f"in the order the run planned them. Back to [{HEADING}](../{cmp.name}.md#items-by-category).",
            "",
            table(["category", "items"] + cmp.headers, [summary_row(items, found, label)]),
            "",
            "Per item and policy: each expectation of its probe's answer (met, not met and where its evidence "
            "was, or `needs --judge`), then what left the request view at a probe, if anything. The item's "
            "page holds every section.",
            "",
            table(["item", "chronology"] + cmp.headers, found.rows),
        ]
        pages.write(category_page(found.key), "\n".join(lines) + "\n")


def item_text(cmp: Comparison, chronology: str, source: ItemSource, section_lines: Sequence[str]) -> str:
    """An item's page: where it came from, then the sections the main report would show for it."""
    entries = cmp.entries(chronology)
    entry = entries[0][1]
    hashes = {run: e["sha256"] for run, e in entries}
    sha = entry["sha256"] if len(set(hashes.values())) == 1 else "; ".join(f"{r}: {h}" for r, h in hashes.items())
    back = link(category_label(source.key), category_page(source.key))
    lines = [
        f"# Item {cell(source.item_id)}: {cell(entry['title'])}",
        "",
        f"Of {link(cmp.name, f'../{cmp.name}.md')}, category {back}.",
        "",
        table(
            ["dataset", "item", "category", "file", "sha256"],
            [[source.dataset, source.item_id, source.category or NO_CATEGORY, entry["path"], sha]],
        ),
        "",
        *item_notice(unique(c.model for c in cmp.columns if literal_reader(c.run, c.model))),
        *section_lines,
    ]
    return "\n".join(lines).rstrip() + "\n"


def contents_link(items: Items) -> Markup | None:
    """The main report's link to *Items by category*, when it has items."""
    if not items.categories:
        return None
    count = sum(len(c.items) for c in items.categories.values())
    return link(f"{HEADING} ({plural(count, 'item')})", "#items-by-category")
