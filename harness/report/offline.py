"""What the offline reader cannot answer, said in the report, and what the run measures instead.

A model that states `reader: literal` among its capabilities (`reference`, `reference:lossy`)
answers only permission requests and questions about declared `key=value` keys, so it answers
every imported item "Nothing in my context answers that." under every policy: its expectation
figures measure no policy. Under such a column an imported item is **unanswerable**: the report
says so and leads with where each probe's evidence was instead (docs/reports.md, "Imported items",
shows each place it is said).

Decided from results alone (the report never imports the models): the manifest's
`model_settings` (harness.results.capabilities: for a run written before readers were recorded,
the model named `reference`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from harness.base.capabilities import LITERAL
from harness.base.identity import IDENTITY
from harness.report.cells import plural
from harness.report.comparison import Column, Comparison, flags, unique
from harness.report.glance import CAUSE_WORDS
from harness.report.markdown import code
from harness.results.capabilities import recorded_capabilities
from harness.results.rows import EXPECT, PROBE
from harness.results.tables import Results

NOT_MEANINGFUL = "not meaningful: the offline reader cannot answer"
PROBE_KEY = (*IDENTITY, PROBE.turn, PROBE.probe)


def literal_reader(run: Results, model: str) -> bool:
    """Whether `model` ran in `run` as a literal reader, as its manifest records."""
    return recorded_capabilities(run.manifest, model).reader == LITERAL


def cannot_answer(column: Column, items: Mapping[str, object] | Comparison, chronology: str) -> bool:
    """Whether this column's model cannot answer this chronology: a literal reader on an imported
    item (`items`: the report's items by chronology, or the comparison whose manifest entries
    record an item's `source`)."""
    if isinstance(items, Comparison):
        item = any(isinstance(entry.get("source"), Mapping) for _, entry in items.entries(chronology))
    else:
        item = chronology in items
    return item and literal_reader(column.run, column.model)


def literal_models(cmp: Comparison) -> list[str]:
    """The models of the report's columns that are literal readers, in column order."""
    return unique(c.model for c in cmp.columns if literal_reader(c.run, c.model))


def notice(cmp: Comparison, items: int) -> list[str]:
    """The report's top lines when a literal reader answered imported items (`items` of them)."""
    models = literal_models(cmp)
    if not items or not models:
        return []
    names = ", ".join(code(m) for m in models)
    verb = "is a literal reader" if len(models) == 1 else "are literal readers"
    return [
        f"**The offline reader cannot answer these {plural(items, 'imported item')}.** {names} {verb} "
        "(the run records `reader: literal`): it answers only a permission request or a question about a "
        "declared `key=value` key, and a benchmark's questions are neither. It answers them “Nothing in my "
        "context answers that.” under every policy, full history included: `value` and `pattern` "
        "expectations fail and `not` and `abstain` ones pass whatever the policy kept, so under it the "
        "items' expectations met are **not "
        f"meaningful** (counted, labelled so; *Policies side by side* counts them with the rest). What "
        "this run measures on them, offline, leads their cells: whether each probe's evidence was in the "
        "request view, and where and why it left, per policy (*Items by category*, each item's page). "
        "Scoring the items needs a model that answers (`--model`) and, for rubrics, `--judge`.",
        "",
    ]


def item_notice(models: list[str]) -> list[str]:
    """An item page's lines when some of its columns' models are literal readers."""
    if not models:
        return []
    names = ", ".join(code(m) for m in models)
    return [
        f"**The offline reader cannot answer this item**: under {names} (a literal reader) every "
        "expectation below is not meaningful; what the run measures is whether the probe's evidence was "
        "in the request view, and where and why it left.",
        "",
    ]


# --- evidence at probes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """Over probes with evidence marked (once per probe and repetition, whatever the number of its
    expectations): at how many of the measured it was in view, why it was out at the others, and
    how many were not measured (the policy stopped, or a call failed, before them)."""

    in_view: int = 0
    measured: int = 0
    causes: dict[str, int] = field(default_factory=dict)
    unmeasured: int = 0


def evidence_at_probes(rows: pd.DataFrame) -> Evidence:
    """The evidence of these probe rows' expectations (any checks; `expect` rows with an `age`
    are those whose probe has evidence marked)."""
    marked = rows[flags(rows[PROBE.check] == EXPECT) & rows[PROBE.age].notna().to_numpy(dtype=bool)]
    probes = marked.drop_duplicates(list(PROBE_KEY))
    measured = probes[flags(probes[PROBE.status] == "measured")]
    in_view = measured[PROBE.in_view].astype("boolean")
    out = measured[flags(in_view == False)]  # noqa: E712 - a nullable column
    counted = out[PROBE.cause].astype(object).fillna("untraced").value_counts(sort=False)
    causes = {str(cause): int(n) for cause, n in counted.items() if n}
    return Evidence(int(flags(in_view == True).sum()), int(in_view.notna().sum()), causes, len(probes) - len(measured))  # noqa: E712


def evidence_text(evidence: Evidence) -> str:
    """`evidence in view at 3 of 5 probes; out: 2 left the window; 1 not measured`, or that none is marked."""
    if not evidence.measured and not evidence.unmeasured:
        return "no evidence marked"
    parts = [f"evidence in view at {evidence.in_view} of {plural(evidence.measured, 'probe')}"]
    if evidence.causes:
        parts.append("out: " + ", ".join(f"{n} {CAUSE_WORDS.get(c, c)}" for c, n in evidence.causes.items()))
    if evidence.unmeasured:
        parts.append(f"{evidence.unmeasured} not measured (policy stopped or error)")
    return "; ".join(parts)
