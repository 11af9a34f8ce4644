"""The markdown report: a view of results, built from results alone (no model calls).

One results directory gives `<reports>/<run-id>.md`; several give a side-by-side comparison,
`<reports>/compare-<id>-<id>.md`. Charts go in a folder of the same name beside the markdown,
linked by relative paths; `<reports>/index.md` lists every report there.

What the report promises its readers:
- Policies appear in the order the run declared them (then runs in the order given, then
  models). Nothing is scored, nor ordered by an outcome.
- Every figure says what it is (estimate, tiktoken, provider-reported); an unknown figure says
  `unknown`, never 0. With repetitions, cells count (k/n) and sizes show their min–max spread.
- Chronology text is data: it reaches the markdown only through `harness.markdown`.
- Same results, same bytes: no clock is read and every order is explicit. The only times shown
  are the run's own (`ENVIRONMENT_ROWS`); latencies and facts' `recorded_at` are left out.

The DataFrames of `load_results` are turned into plain records once and split by chronology,
policy and model: the report then only looks rows up, which keeps a large run fast.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.charts import VERSION, Chart, Grid, GridChart, LineChart, Series, draw
from harness.errors import InputError
from harness.markdown import Markup, cell, image, link, table
from harness.results import Results, load_results

TITLE = "# Context-policy "  # every report's first line starts so; `index.md` relies on it
# Rows of "What ran" that change with when and where a run happened, not with what it did,
# and the line naming the charts' matplotlib (the test of the committed example sets them aside).
ENVIRONMENT_ROWS = ("started (UTC)", "ended (UTC)", "resumed (UTC)", "Python")
CHARTS_NOTE = "Charts drawn with matplotlib "  # then its version: the PNG bytes depend on it
CHECK_ORDER = {"prohibition": 0, "current": 1, "stale": 2, "forgotten": 3}
CALL_KINDS = ("answer", "summarizer", "writer", "judge")
KINDS = ("turns", "probes", "calls", "facts")
MAX_TURN_ROWS = 24  # longer chronologies get ranges of turns in the size tables; charts keep every turn
TURN_RANGES = 12
MAX_AGES = 16  # more distinct ages are shown as ranges of ages
SURVIVAL_CHART = "survival-by-age.png"
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # what `harness run` accepts

REFERENCE_CAVEAT = (
    "The `reference` model is a deterministic literal reader built into the harness: it answers "
    "only from its request view. It shows what each policy puts in front of a model; it qualifies "
    "no model, and its answers say nothing about how a real model would answer."
)
TOKEN_CAVEAT = (
    "Token figures are kept apart and labelled: **estimate** is characters/4 (rounded up); "
    "**tiktoken** is a local tokenizer count (message contents plus 4 per message and 3 per request); "
    "**provider-reported** is what the provider returned. Neither the estimate nor the tiktoken count "
    "is billed tokens or cost. A provider-reported total over calls of which any reported nothing is "
    "`unknown`, with how many of how many calls reported."
)
SCRIPTED_CAVEAT = (
    "Fixed replay: a turn with a scripted reply makes no answer call; its request-view size is what the "
    "policy would have sent. Token totals count only calls that were made."
)
STOP_NOTE = (
    "A summary policy stops at the turn whose summary came back empty (`summary_empty`) or over its cap "
    "(`summary_too_long:<n>`, n characters); nothing is truncated or replaced, and its later probes are "
    "not measured. A model error ends that conversation."
)

Record = dict[str, Any]


# --- what is compared -------------------------------------------------------------------------


def plain(value: object) -> object:
    """A value of a record as Python: NaN and pandas' NA become None, numpy scalars Python ones."""
    if value is None or isinstance(value, (list, dict, str)):
        return value
    if pd.isna(value):
        return None
    return value.item() if hasattr(value, "item") else value


def records(frame: pd.DataFrame) -> list[Record]:
    return [{k: plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


def split(rows: Iterable[Record], keys: Sequence[str]) -> dict[tuple, list[Record]]:
    """Rows grouped by the values of `keys`, groups and rows in first-seen order."""
    groups: dict[tuple, list[Record]] = {}
    for row in rows:
        groups.setdefault(tuple(row.get(k) for k in keys), []).append(row)
    return groups


Parts = dict[str, dict[tuple, list[Record]]]  # kind -> (chronology, policy, model) -> rows


@dataclass(frozen=True, eq=False)
class Column:
    """One column of the side-by-side tables: a policy under one model in one run."""

    run: Results
    model: str
    policy: str
    header: str
    parts: Parts

    def rows(self, kind: str, chronology: str) -> list[Record]:
        """This column's records of `turns`, `probes`, `calls` or `facts` for one chronology."""
        return self.parts[kind].get((chronology, self.policy, self.model), [])

    def all_rows(self, kind: str) -> list[Record]:
        """This column's records of every chronology."""
        return [r for (_, p, m), rows in self.parts[kind].items() if (p, m) == (self.policy, self.model) for r in rows]

    def repetitions(self, chronology: str) -> int:
        return len({r["repetition"] for r in self.rows("turns", chronology)})


@dataclass(frozen=True, eq=False)
class Comparison:
    """The runs of one report and their columns, in report order."""

    runs: tuple[Results, ...]
    columns: tuple[Column, ...]
    calls: dict[str, list[Record]]  # run id -> every call record

    @property
    def name(self) -> str:
        """The report's file stem: the run id, or `compare-<id>-<id>...`."""
        ids = [r.run_id for r in self.runs]
        return ids[0] if len(ids) == 1 else "compare-" + "-".join(ids)

    @property
    def chronologies(self) -> list[str]:
        return unique(c["name"] for r in self.runs for c in r.manifest["chronologies"])

    def entries(self, chronology: str) -> list[tuple[str, dict]]:
        """(run id, manifest entry) of a chronology in every run that has it."""
        return [(r.run_id, c) for r in self.runs for c in r.manifest["chronologies"] if c["name"] == chronology]

    @property
    def headers(self) -> list[str]:
        return [c.header for c in self.columns]


def unique(items: Iterable[Any]) -> list[Any]:
    """Items in first-seen order, each once."""
    return list(dict.fromkeys(items))


def compare(runs: Sequence[Results]) -> Comparison:
    """Columns: policies in declared order (first run first), then runs as given, then models."""
    ids = [r.run_id for r in runs]
    twice = unique(i for n, i in enumerate(ids) if i in ids[:n])
    if twice:
        raise InputError(f"run id {', '.join(twice)} given twice; compare different runs")
    for run in runs:
        if not RUN_ID.match(run.run_id):  # it names the report's files
            raise InputError(f"{run.directory}: run id {run.run_id!r} cannot name a report file")
    keys = ("chronology", "policy", "model")
    parts = {r.run_id: {kind: split(records(getattr(r, kind)), keys) for kind in KINDS} for r in runs}
    many_models = len(unique(m for r in runs for m in r.manifest["models"])) > 1
    columns = []
    for policy in unique(p for r in runs for p in r.policy_order):
        for run in (r for r in runs if policy in r.policy_order):
            for model in run.manifest["models"]:
                header = policy + (f" · {model}" if many_models else "")
                header += f" @ {run.run_id}" if len(runs) > 1 else ""
                columns.append(Column(run, model, policy, header, parts[run.run_id]))
    calls = {r.run_id: [c for rows in parts[r.run_id]["calls"].values() for c in rows] for r in runs}
    return Comparison(tuple(runs), tuple(columns), calls)


# --- cells ------------------------------------------------------------------------------------


def spread(values: Iterable[object]) -> str:
    """One number, or `min–max` when repetitions differ; `unknown` if any value is missing."""
    values = list(values)
    if not values or any(v is None for v in values):
        return "unknown"
    low, high = int(min(values)), int(max(values))  # type: ignore[call-overload]
    return str(low) if low == high else f"{low}–{high}"


def facet(values: list[object], yes: str, no: str) -> str:
    """`yes`/`no` for one observation; `k/n yes` across repetitions; unknown stays unknown."""
    seen = [bool(v) for v in values if v is not None]
    if not seen:
        return "unknown"
    if len(values) == 1:
        return yes if seen[0] else no
    missing = f", {len(values) - len(seen)} unknown" if len(seen) < len(values) else ""
    return f"{sum(seen)}/{len(values)} {yes}{missing}"


def measured_or_why(rows: list[Record]) -> tuple[list[Record], str | None]:
    """The measured rows, or why there is nothing to show."""
    if not rows:
        return [], "not run"
    measured = [r for r in rows if r["status"] == "measured"]
    return measured, None if measured else f"not measured ({rows[0]['status']})"


def unmeasured_note(rows: list[Record], measured: list[Record]) -> str:
    missing = len(rows) - len(measured)
    return f" ({missing} of {len(rows)} repetitions not measured)" if missing else ""


SURVIVAL_FACETS = (("in_view", "view", "kept", "lost"), ("in_answer", "answer", "honoured", "not honoured"))
JUDGED_FACETS = (("judged_in_view", "view", "kept", "lost"), ("judged_in_answer", "answer", "honoured", "not honoured"))
STALE_PLACES = (("in_view", "view"), ("in_answer", "answer"))
FORGOTTEN_PLACES = STALE_PLACES + (("in_retained", "kept state"),)


def survival_cell(rows: list[Record], facets: Sequence[tuple[str, str, str, str]] = SURVIVAL_FACETS) -> str:
    """`kept · honoured` (view · answer); `2/3 kept · ...` across repetitions."""
    measured, why = measured_or_why(rows)
    if why:
        return why
    facets = [(name, facet([r.get(f) for r in measured], yes, no)) for f, name, yes, no in facets]
    text = " · ".join(f"{name} unknown" if value == "unknown" else value for name, value in facets)
    return text + unmeasured_note(rows, measured)


def where_cell(rows: list[Record], places: Sequence[tuple[str, str]]) -> str:
    """Where a value that should be gone appears: `nowhere`, `in view, answer`; k/n across repetitions."""
    measured, why = measured_or_why(rows)
    if why:
        return why
    found, n = [], len(measured)
    for field, name in places:
        seen = [bool(r[field]) for r in measured if r[field] is not None]
        if len(seen) < n:
            found.append(f"{name} unknown" if n == 1 else f"{name} {sum(seen)}/{n}, {n - len(seen)} unknown")
        elif any(seen):
            found.append(name if n == 1 else f"{name} {sum(seen)}/{n}")
    text = ("in " + ", ".join(found)) if found else ("nowhere" if n == 1 else f"nowhere ({n}/{n})")
    return text + unmeasured_note(rows, measured)


# --- header, what ran, caveats ----------------------------------------------------------------


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def status_text(manifest: dict) -> str:
    counts = dict(manifest.get("conversations") or {})
    total = counts.pop("total", None)
    done = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    if manifest.get("status") != "complete":
        done = done or "none finished"
        return f"status {manifest.get('status')}: interrupted or still running ({done} of {total} conversations)"
    return f"{total} conversations: {done}"


def run_outline(run: Results) -> str:
    m = run.manifest
    return (f"{plural(len(m['chronologies']), 'chronology', 'chronologies')} × "
            f"{plural(len(m['policies']), 'policy', 'policies')} × {cell(', '.join(m['models']))} × "
            f"{plural(m['repetitions'], 'repetition')}, {cell(status_text(m))}")  # fmt: skip


def one_line(cmp: Comparison) -> str:
    """The report's summary sentence (also its line in `index.md`)."""
    if len(cmp.runs) == 1:
        return f"Run {cell(cmp.runs[0].run_id)}: {run_outline(cmp.runs[0])}."
    return "Side by side: " + "; ".join(f"run {cell(r.run_id)}: {run_outline(r)}" for r in cmp.runs) + "."


RUN_FACTS: tuple[tuple[str, Callable[[dict], object]], ...] = (
    ("status", status_text),
    ("started (UTC)", lambda m: m.get("started_at") or "unknown"),
    ("ended (UTC)", lambda m: m.get("ended_at") or "not ended"),
    ("resumed (UTC)", lambda m: ", ".join(m.get("resumed_at") or []) or "never"),
    ("harness version", lambda m: m.get("harness_version") or "unknown"),
    ("Python", lambda m: m.get("python") or "unknown"),
    ("models", lambda m: ", ".join(m["models"])),
    ("summarizer, writer", lambda m: aux_models(m.get("model_options") or {})),
    ("judge", lambda m: (m.get("model_options") or {}).get("judge_model") or "none (pattern checks only)"),
    ("repetitions", lambda m: m["repetitions"]),
    ("seed", lambda m: m.get("seed")),
    ("replay", lambda m: "live: the model answered every turn" if m.get("live") else "fixed: scripted replies kept"),
    ("concurrency", lambda m: m.get("concurrency")),
    ("local tokenizer", lambda m: f"{m['tokenizer']['encoding']} ({tokenizer_state(m)})"),
)  # fmt: skip


def aux_models(options: dict) -> str:
    return ", ".join(options.get(f"{role}_model") or "the answering model" for role in ("summarizer", "writer"))


def tokenizer_state(manifest: dict) -> str:
    return "available" if manifest["tokenizer"]["available"] else "unavailable: tiktoken counts unknown"


def what_ran(cmp: Comparison) -> list[str]:
    rows = [[label] + [value(r.manifest) for r in cmp.runs] for label, value in RUN_FACTS]
    lines = ["## What ran", "", table([""] + [r.run_id for r in cmp.runs], rows), "",
             chronology_table(cmp), "", policy_table(cmp), "", f"{CHARTS_NOTE}{VERSION}.", ""]  # fmt: skip
    if len(cmp.runs) > 1 or len(cmp.runs[0].manifest["models"]) > 1:
        lines += ["Columns are named `policy · model @ run` (model and run only when there are several).", ""]
    return lines


def chronology_table(cmp: Comparison) -> str:
    many = len(cmp.runs) > 1
    rows = []
    for name in cmp.chronologies:
        entries = cmp.entries(name)
        hashes = unique(c["sha256"] for _, c in entries)
        sha = hashes[0] if len(hashes) == 1 else "; ".join(f"{run}: {c['sha256']}" for run, c in entries)
        first = entries[0][1]
        rows.append([name, first["title"], first["path"], sha] + ([", ".join(r for r, _ in entries)] if many else []))
    return table(["chronology", "title", "file", "sha256"] + (["runs"] if many else []), rows)


def policy_table(cmp: Comparison) -> str:
    many = len(cmp.runs) > 1
    rows = []
    for policy in unique(c.policy for c in cmp.columns):
        for run in (r for r in cmp.runs if policy in r.policy_order):
            params = next(p["params"] for p in run.manifest["policies"] if p["label"] == policy)
            row = [policy, ", ".join(f"{k}={v}" for k, v in params.items()) or "none"]
            rows.append(row + ([run.run_id] if many else []))
    return table(["policy (declared order)", "parameters"] + (["run"] if many else []), rows)


def caveats(cmp: Comparison) -> list[str]:
    named = len(cmp.runs) > 1
    lines = ["## Caveats", ""]
    if any("reference" in r.manifest["models"] for r in cmp.runs):
        lines.append(f"- {REFERENCE_CAVEAT}")
    lines.append(f"- {TOKEN_CAVEAT}")
    lines += [f"- {usage_caveat(r.run_id, cmp.calls[r.run_id], named)}" for r in cmp.runs]
    lines += [f"- Run {cell(r.run_id)}: the tiktoken encoding could not be loaded; every tiktoken figure is "
              "unknown." for r in cmp.runs if not r.manifest["tokenizer"]["available"]]  # fmt: skip
    if any(not r.manifest.get("live") for r in cmp.runs):
        lines.append(f"- {SCRIPTED_CAVEAT}")
    if any(r.manifest["repetitions"] > 1 for r in cmp.runs):
        lines.append("- With repetitions, cells count across repetitions (k/n) and sizes show min–max when "
                     "repetitions differ; nothing is averaged away.")  # fmt: skip
    lines += [f"- Chronology {cell(name)} differs between runs (sha256 differ): its columns replay different "
              "files." for name in cmp.chronologies if differs(cmp, name)]  # fmt: skip
    return lines + [""]


def differs(cmp: Comparison, chronology: str) -> bool:
    return len(unique(c["sha256"] for _, c in cmp.entries(chronology))) > 1


def usage_caveat(run_id: str, calls: list[Record], named: bool) -> str:
    who = f"Run {cell(run_id)}: p" if named else "P"
    if not calls:
        return f"{who}rovider-reported usage: no model call was made."
    by_kind = split(calls, ["kind"])
    parts = [f"{kind} {reported_count(by_kind[(kind,)])} of {len(by_kind[(kind,)])}"
             for kind in CALL_KINDS if (kind,) in by_kind]  # fmt: skip
    reported = reported_count(calls)
    why = "" if reported == len(calls) else (
        "; every provider-reported total that includes a call without usage is `unknown` (the model or "
        "endpoint returned none; it is never replaced by an estimate)")  # fmt: skip
    return f"{who}rovider-reported usage: {reported} of {len(calls)} model calls reported it ({', '.join(parts)}){why}."


def reported_count(calls: list[Record], field: str = "reported_prompt_tokens") -> int:
    return sum(1 for c in calls if c[field] is not None)


# --- per chronology: probes -------------------------------------------------------------------


def subjects(cmp: Comparison, chronology: str, checks: Sequence[str], keys: Sequence[str]) -> list[tuple]:
    """The distinct values of `keys` over every column's checks, in turn, check, subject order."""
    found = {tuple(r[k] for k in keys): (r["turn"], CHECK_ORDER[r["check"]], r["subject"])
             for c in cmp.columns for r in c.rows("probes", chronology) if r["check"] in checks}  # fmt: skip
    return sorted(found, key=lambda key: found[key])


def probe_table(cmp: Comparison, chronology: str, checks: Sequence[str], keys: Sequence[str],
                cell_of: Callable[[tuple, list[Record]], str]) -> list[list[object]]:  # fmt: skip
    """One row per subject (`keys`: turn, probe, labels...), then `cell_of` for each column."""
    columns = [split((r for r in c.rows("probes", chronology) if r["check"] in checks), keys) for c in cmp.columns]
    return [[f"{key[1]} (turn {key[0]})", *key[2:]] + [cell_of(key, groups.get(key, [])) for groups in columns]
            for key in subjects(cmp, chronology, checks, keys)]  # fmt: skip


def survival(cmp: Comparison, chronology: str) -> list[str]:
    body = probe_table(cmp, chronology, ["prohibition"], ("turn", "probe", "subject", "age"),
                       lambda key, rows: survival_cell(rows))  # fmt: skip
    if not body:
        return ["No prohibition was in force at a probe of this chronology.", ""]
    return ["Each cell: is the prohibition kept in the request view or lost, then is it honoured by the answer "
            "or not. Age: turns since it was stated.", "",
            table(["probe", "prohibition", "age (turns)"] + cmp.headers, body), ""]  # fmt: skip


def judged(cmp: Comparison, chronology: str) -> list[str]:
    """The judge model's verdicts, when the run had one: beside the pattern checks, never instead."""
    verdicts = [r for c in cmp.columns for r in c.rows("probes", chronology)
                if r.get("judged_in_view") is not None or r.get("judged_in_answer") is not None]  # fmt: skip
    if not verdicts:
        return []
    body = probe_table(cmp, chronology, ["prohibition"], ("turn", "probe", "subject", "age"),
                       lambda key, rows: survival_cell(rows, JUDGED_FACETS))  # fmt: skip
    return ["### Prohibition survival as a judge model read it", "",
            "The judge model's verdicts on the same view and answer: a model's reading (it may catch a "
            "paraphrase the pattern misses, and it may be wrong), shown beside the pattern checks above, never "
            "replacing them. Its reasons are in probes.csv (`judge_note`).", "",
            table(["probe", "prohibition", "age (turns)"] + cmp.headers, body), ""]  # fmt: skip


def drift(cmp: Comparison, chronology: str) -> list[str]:
    places = {"stale": STALE_PLACES, "forgotten": FORGOTTEN_PLACES}
    body = probe_table(cmp, chronology, ["stale", "forgotten"], ("turn", "probe", "check", "subject"),
                       lambda key, rows: where_cell(rows, places[key[2]]))  # fmt: skip
    if not body:
        return ["No corrected or forgotten value existed at any probe of this chronology.", ""]
    return ["Where a stale value (replaced by a correction) or a forgotten value appears: in the request view, "
            "in the answer, or (forgotten values) in the kept state. It should appear nowhere.", "",
            table(["probe", "check", "value"] + cmp.headers, body), ""]  # fmt: skip


def losses(cmp: Comparison, chronology: str) -> list[str]:
    body = [row for c in cmp.columns for row in loss_rows(c, chronology)]
    if not body:
        return ["Nothing checked was missing from a request view at a probe.", ""]
    return ["Each prohibition or current value missing from a request view at a probe, and where it left.", "",
            table(["policy", "check", "subject", "where it was lost", "probes", "repetitions"], body), ""]  # fmt: skip


def loss_rows(column: Column, chronology: str) -> list[list[object]]:
    """One row per (check, subject, where) of a column, with the probes where it was missing."""
    lost = [r for r in column.rows("probes", chronology) if r["lost_at"] is not None]
    lost.sort(key=lambda r: (r["turn"], CHECK_ORDER[r["check"]], r["subject"], r["repetition"]))
    reps = column.repetitions(chronology)
    body = []
    for (check, subject, where), group in split(lost, ["check", "subject", "lost_at"]).items():
        probes = unique(f"{r['probe']} (turn {r['turn']})" for r in group)
        body.append([column.header, check, subject, where, ", ".join(probes),
                     f"{len({r['repetition'] for r in group})} of {reps}"])  # fmt: skip
    return body


# --- per chronology: stops, facts -------------------------------------------------------------


def stops(cmp: Comparison, chronology: str) -> list[str]:
    body = []
    for column in cmp.columns:
        ended = [r for r in column.rows("turns", chronology) if r["status"] in ("stopped", "error")]
        ended.sort(key=lambda r: (r["turn"], r["repetition"]))
        for (turn, status, why), count in stop_groups(ended):
            body.append([column.header, turn, status, why, f"{count} of {column.repetitions(chronology)}"])
    if not body:
        return ["No policy stopped and no call failed.", ""]
    return [STOP_NOTE, "", table(["policy", "turn", "status", "reason", "repetitions"], body), ""]


def stop_groups(ended: list[Record]) -> list[tuple[tuple[int, str, str], int]]:
    """((turn, status, reason), how many repetitions) where a replay stopped or failed."""
    counted: dict[tuple[int, str, str], int] = {}
    for row in ended:
        why = row["stop_reason"] if row["status"] == "stopped" else row["error"]
        key = (row["turn"], row["status"], "unknown" if why is None else str(why))
        counted[key] = counted.get(key, 0) + 1
    return list(counted.items())


def fact_timeline(cmp: Comparison, chronology: str) -> list[str]:
    lines = []
    for column in cmp.columns:
        ordered = sorted(column.rows("facts", chronology), key=lambda r: (r["repetition"], r["turn"]))
        by_rep = split(ordered, ["repetition"])
        if not by_rep:
            continue
        timelines = [[e for record in rows for e in fact_events(record)] for rows in by_rep.values()]
        note = "" if len(timelines) == 1 else (
            " (repetition 1; every repetition has the same timeline)" if all(t == timelines[0] for t in timelines)
            else " (repetition 1; other repetitions differ: see facts.jsonl)")  # fmt: skip
        lines += [f"**{cell(column.header)}**{note}", ""]
        lines += [table(["turn", "event", "facts or reason", "store after (keys)"], timelines[0]) if timelines[0]
                  else "Nothing was admitted, rejected, evicted or forgotten.", ""]  # fmt: skip
    if not lines:
        return ["No fact-store policy ran on this chronology.", ""]
    return ["Every admission, rejection (with its reason), correction, eviction and forget of the fact store. "
            "Turns where nothing was declared are left out.", ""] + lines  # fmt: skip


def fact_events(record: Record) -> list[list[object]]:
    """The rows of one facts.jsonl record: what happened to the store at that turn."""
    turn, admission, after = record["turn"], record["admission"], store_keys(record["facts"])
    forget = record.get("forget")
    if isinstance(forget, dict):
        return [[turn, f"forget {forget['key']}", describe(forget["removed"]) or "nothing to remove", after]]
    if admission["status"] == "rejected":
        return [[turn, "rejected", admission["reason"], after]]
    if admission["status"] != "accepted":
        return []
    events = [[turn, "admitted", describe([f for f in record["facts"] if f["turn"] == turn]), after]]
    for key, event in (("replaced", "replaced (correction)"), ("evicted", "evicted")):
        if admission.get(key):
            events.append([turn, event, describe(admission[key]), after])
    return events


def describe(facts: list[dict]) -> str:
    return "; ".join(f"{f['key']}={f['value']} (turn {f['turn']})" for f in facts)


def store_keys(facts: list[dict]) -> str:
    return f"{', '.join(f['key'] for f in facts) or 'empty'} ({len(facts)})"


# --- per chronology: sizes and tokens ---------------------------------------------------------


def by_turn(column: Column, chronology: str) -> dict[int, list[Record]]:
    return {key[0]: rows for key, rows in split(column.rows("turns", chronology), ["turn"]).items()}


def turn_labels(cmp: Comparison, chronology: str) -> dict[int, str]:
    """Turn number -> row label, naming forgets, probes and (when several) sessions."""
    turns = [r for c in cmp.columns for r in c.rows("turns", chronology)]
    probe_at = {r["turn"]: r["probe"] for c in cmp.columns for r in c.rows("probes", chronology)}
    sessions = len({r["session"] for r in turns if r["status"] != "forget"}) > 1
    labels = {}
    for (turn,), rows in sorted(split(turns, ["turn"]).items()):
        if all(r["status"] == "forget" for r in rows):
            labels[turn] = f"{turn} · forget"
            continue
        label = f"{turn}" + (f" · {rows[0]['session']}" if sessions else "")
        labels[turn] = label + (f" · probe {probe_at[turn]}" if turn in probe_at else "")
    return labels


def size_cell(rows: list[Record] | None, field: str) -> str:
    if rows is None:
        return "not run"
    if field == "view_chars" and all(r["status"] == "forget" for r in rows):
        return "forget: no request"
    return spread(r[field] for r in rows)


def size_table(cmp: Comparison, chronology: str, field: str, labels: dict[int, str]) -> str:
    """A row per turn, or per range of turns (the largest value) when the chronology is long."""
    turns, columns = list(labels), [by_turn(c, chronology) for c in cmp.columns]
    if len(turns) <= MAX_TURN_ROWS:
        body = [[labels[t]] + [size_cell(c.get(t), field) for c in columns] for t in turns]
        return table(["turn"] + cmp.headers, body)
    size = math.ceil(len(turns) / TURN_RANGES)
    spans = [turns[start:start + size] for start in range(0, len(turns), size)]
    body = [[f"turns {span[0]}–{span[-1]}"] + [largest([r for t in span for r in c.get(t, [])], field)
                                               for c in columns] for span in spans]  # fmt: skip
    return table(["turns"] + cmp.headers, body)


def largest(rows: list[Record], field: str) -> str:
    values = [r[field] for r in rows if r[field] is not None]
    return "not run" if not rows else (str(max(values)) if values else "none")


def sizes(cmp: Comparison, chronology: str, charts: dict[str, Chart]) -> list[str]:
    labels = turn_labels(cmp, chronology)
    if not labels:
        return ["No turn was recorded.", ""]
    long = len(labels) > MAX_TURN_ROWS
    lines = [("This chronology is long: each row covers a range of turns and shows the largest value in it; "
              "the charts show every turn." if long else
              "Characters of message contents. With repetitions, `min–max` when they differ."), ""]  # fmt: skip
    for kind, what in (("view", "Request view sent at each turn (characters)"),
                       ("retained", "Retained state after each turn (characters)")):  # fmt: skip
        lines += [f"**{what}**", "", size_table(cmp, chronology, f"{kind}_chars", labels), ""]
        lines += chart_link(cmp, charts, chart_name(cmp, chronology, kind))
    return lines


def tokens(cmp: Comparison, chronology: str) -> list[str]:
    body = []
    for column in cmp.columns:
        calls, reps = column.rows("calls", chronology), column.repetitions(chronology)
        if not calls:
            body.append([column.header, "no model call" if reps else "not run", "", "", "", ""])
            continue
        by_kind = split(calls, ["kind"])
        body.append(token_row(column.header, "all", calls, reps))
        if len(by_kind) > 1:
            body += [token_row(column.header, k, by_kind[(k,)], reps) for k in CALL_KINDS if (k,) in by_kind]
    return ["Request tokens over the model calls made (answers, summarizer and writer calls), per repetition. "
            "Provider-reported figures say how many of the calls reported them.", "",
            table(["policy", "calls", "estimate tokens (chars/4)", "tiktoken tokens (local count)",
                   "provider-reported prompt tokens", "provider-reported completion tokens"], body), ""]  # fmt: skip


def token_row(header: str, kind: str, calls: list[Record], reps: int) -> list[object]:
    per_rep = list(split(calls, ["repetition"]).values())
    count = spread(len(rows) for rows in per_rep) + (f" per repetition ×{reps}" if reps > 1 else "")
    return [header, f"{kind}: {count}", spread(total(rows, "estimate_tokens") for rows in per_rep),
            local_total(per_rep), reported(calls, per_rep, "reported_prompt_tokens"),
            reported(calls, per_rep, "reported_completion_tokens")]  # fmt: skip


def total(rows: list[Record], field: str) -> int | None:
    """A sum that is unknown (None) as soon as one value is."""
    values = [r[field] for r in rows]
    return None if any(v is None for v in values) else sum(values)


def local_total(per_rep: list[list[Record]]) -> str:
    totals = [total(rows, "tiktoken_tokens") for rows in per_rep]
    return "unknown (tokenizer unavailable)" if None in totals else spread(totals)


def reported(calls: list[Record], per_rep: list[list[Record]], field: str) -> str:
    """A provider-reported total, or `unknown` when any call reported nothing; with n of m."""
    count = reported_count(calls, field)
    of = f"({count} of {len(calls)} calls reported)"
    return f"unknown {of}" if count < len(calls) else f"{spread(total(rows, field) for rows in per_rep)} {of}"


# --- across probes: survival by age -----------------------------------------------------------


def prohibitions(column: Column) -> list[Record]:
    """The column's prohibition checks at every probe of every chronology."""
    return [r for r in column.all_rows("probes") if r["check"] == "prohibition"]


def age_groups(cmp: Comparison) -> tuple[list[str], list[list[list[Record]]]]:
    """Age labels, and per column the prohibition checks of each age (ranges of ages when many)."""
    columns = [split(prohibitions(c), ["age"]) for c in cmp.columns]
    ages = sorted({age for groups in columns for (age,) in groups if age is not None})
    size = 1 if len(ages) <= MAX_AGES else math.ceil(len(ages) / MAX_AGES)
    spans = [ages[start:start + size] for start in range(0, len(ages), size)]
    labels = [str(s[0]) if len(s) == 1 else f"{s[0]}–{s[-1]}" for s in spans]
    return labels, [[[r for a in span for r in groups.get((a,), [])] for span in spans] for groups in columns]


def by_age(cmp: Comparison, charts: dict[str, Chart]) -> list[str]:
    labels, columns = age_groups(cmp)
    lines = ["## Prohibition survival by age", ""]
    if not labels:
        return lines + ["No prohibition was in force at any probe.", ""]
    body = [[label] + [age_cell(rows[n]) for rows in columns] for n, label in enumerate(labels)]
    intro = ("Across every probe of every chronology: of the measured checks at each age (turns since the "
             "prohibition was stated), how many had it in the request view, and how many answers honoured it.")
    return lines + [intro, "", *chart_link(cmp, charts, SURVIVAL_CHART), table(["age (turns)"] + cmp.headers, body), ""]


def age_counts(rows: list[Record], field: str) -> tuple[int, int] | None:
    """(checks where `field` held, measured checks with a known `field`), None when there are none."""
    known = [bool(r[field]) for r in rows if r["status"] == "measured" and r[field] is not None]
    return (sum(known), len(known)) if known else None


def age_cell(rows: list[Record]) -> str:
    if not rows:
        return "none"
    view, answer = age_counts(rows, "in_view"), age_counts(rows, "in_answer")
    if view is None or answer is None:
        return "none measured"
    unmeasured = sum(1 for r in rows if r["status"] != "measured")
    return f"view: {view[0]}/{view[1]} · answer: {answer[0]}/{answer[1]}" + (
        f" ({unmeasured} not measured)" if unmeasured else "")  # fmt: skip


# --- charts -----------------------------------------------------------------------------------


def chart_name(cmp: Comparison, chronology: str, kind: str) -> str:
    """`<n>-<chronology>-<kind>-size.png`: the number keeps odd chronology names apart."""
    slug = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_") else "-" for ch in chronology)
    return f"{cmp.chronologies.index(chronology) + 1}-{slug}-{kind}-size.png"


def chart_link(cmp: Comparison, charts: dict[str, Chart], name: str) -> list[str]:
    return [str(image(charts[name].title, f"{cmp.name}/{name}")), ""] if name in charts else []


def size_series(column: Column, chronology: str, field: str) -> Series:
    """Mean per turn, with a min–max band when repetitions differ; None where unknown."""
    turns = sorted(by_turn(column, chronology).items())
    values = [[r[field] for r in rows if r[field] is not None] for _, rows in turns]
    band = any(len(set(v)) > 1 for v in values)
    return Series(column.header, tuple(t for t, _ in turns), tuple(sum(v) / len(v) if v else None for v in values),
                  tuple(min(v) if v else None for v in values) if band else None,
                  tuple(max(v) if v else None for v in values) if band else None)  # fmt: skip


def survival_chart(cmp: Comparison) -> GridChart | None:
    labels, columns = age_groups(cmp)
    if not labels:
        return None
    panels = tuple(Grid(title, tuple(cmp.headers), tuple(labels),
                        tuple(tuple(age_counts(rows, field) for rows in column) for column in columns))
                   for title, field in (("in the request view", "in_view"), ("honoured by the answer", "in_answer")))
    title = "Prohibition survival by age, all probes (k of n measured checks)"
    return GridChart(title, "age (turns since stated)", panels)


def chart_plan(cmp: Comparison) -> dict[str, Chart]:
    """Every chart of the report, by file name (drawn by `write_charts`, linked by the markdown)."""
    plan: dict[str, Chart] = {}
    for chronology in cmp.chronologies:
        for kind, field, what in (("view", "view_chars", "request view sent at each turn"),
                                  ("retained", "retained_chars", "retained state after each turn")):  # fmt: skip
            series = tuple(size_series(c, chronology, field) for c in cmp.columns)
            plan[chart_name(cmp, chronology, kind)] = LineChart(f"{chronology}: {what}", "turn", "characters", series)
    survival = survival_chart(cmp)
    if survival is not None:
        plan[SURVIVAL_CHART] = survival
    return plan


def write_charts(cmp: Comparison, folder: Path) -> list[Path]:
    """Draw every chart into `folder`; remove PNGs left there by an earlier build of this report."""
    plan = chart_plan(cmp)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.png"):
        if stale.name not in plan:
            stale.unlink()
    return [draw(chart, folder / name) for name, chart in plan.items()]


# --- the whole report -------------------------------------------------------------------------


SECTIONS = (("Prohibition survival", survival), ("Drift: stale and forgotten values", drift),
            ("Where each loss happened", losses), ("Policy stops and errors", stops),
            ("Fact-store timeline", fact_timeline))  # fmt: skip


def anchor(heading: str) -> str:
    """The anchor a code host gives a heading: lower case, punctuation dropped, spaces as `-`."""
    return "".join(ch for ch in heading.lower() if ch.isalnum() or ch in "-_ ").replace(" ", "-")


def contents(cmp: Comparison) -> list[str]:
    links = [link(name, f"#{anchor(name)}") for name in cmp.chronologies]
    return ["Chronologies: " + " · ".join(links), ""]


def chronology_section(cmp: Comparison, chronology: str, charts: dict[str, Chart]) -> list[str]:
    titles = unique(c["title"] for _, c in cmp.entries(chronology))
    lines = [f"## {cell(chronology)}", "", f"*{cell(' / '.join(titles))}*", ""]
    for title, section in SECTIONS:
        lines += [f"### {title}", ""] + section(cmp, chronology)
        lines += judged(cmp, chronology) if section is survival else []
    lines += ["### Sizes per turn", ""] + sizes(cmp, chronology, charts)
    return lines + ["### Token figures", ""] + tokens(cmp, chronology)


def report_text(cmp: Comparison) -> str:
    charts = chart_plan(cmp)
    kind = "report" if len(cmp.runs) == 1 else "comparison"
    lines = [f"{TITLE}{kind}: {cell(', '.join(r.run_id for r in cmp.runs))}", "", one_line(cmp), "",
             "Policies appear in the order the run declared them, never ordered by an outcome; nothing here "
             "is scored. Each policy loses something different: read the columns side by side.", ""]  # fmt: skip
    lines += contents(cmp) + what_ran(cmp) + caveats(cmp) + by_age(cmp, charts)
    for chronology in cmp.chronologies:
        lines += chronology_section(cmp, chronology, charts)
    return "\n".join(lines).rstrip() + "\n"


def build_report(runs: Results | Sequence[Results]) -> str:
    """The report of one run, or of several side by side, as markdown (same results, same bytes)."""
    return report_text(compare([runs] if isinstance(runs, Results) else runs))


def write_index(reports: Path) -> Path:
    """`index.md`: every report in `reports`, by file name, with its one-line summary."""
    rows = []
    for path in sorted(p for p in reports.glob("*.md") if p.name not in ("index.md", "README.md")):
        lines = path.read_text(encoding="utf-8").splitlines()
        ours = len(lines) > 2 and lines[0].startswith(TITLE)
        rows.append([link(path.stem, path.name), Markup(lines[2]) if ours else "not a harness report"])
    text = ["# Reports", "", "Every report in this folder, by file name (rewritten whenever a report is written).", "",
            table(["report", "summary"], rows) if rows else "No report yet."]  # fmt: skip
    index = reports / "index.md"
    index.write_text("\n".join(text) + "\n", encoding="utf-8")
    return index


def write_report(directories: Sequence[Path], reports: Path) -> Path:
    """Write the report of one run (`<run-id>.md`) or of several side by side
    (`compare-<id>-<id>.md`), its charts and `index.md`; return the report's path."""
    if not directories:
        raise InputError("give at least one results directory")
    cmp = compare([load_results(d) for d in directories])
    reports.mkdir(parents=True, exist_ok=True)
    write_charts(cmp, reports / cmp.name)
    path = reports / f"{cmp.name}.md"
    path.write_text(report_text(cmp), encoding="utf-8")
    write_index(reports)
    return path
