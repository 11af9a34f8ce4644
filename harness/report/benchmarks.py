"""*Benchmark scores*: each imported benchmark's own score, computed as its paper's code computes
it (harness.report.benchmark_metrics), per column (a policy under a model in a run), beside the
harness's own rows; the same figures as `benchmarks.csv` in the report's folder. Which items
count, by their `source.dataset`, and from what, is in docs/reports.md, "Benchmark scores".

A judged figure counts only verdicts given through the benchmark's own judge prompt (the
manifest's `judge_prompts`): a run without a judge says `needs --judge`, one whose judge asked
another prompt says so, never a number. A probe the policy never reached (stopped, error) and a
verdict the judge did not give are left out, and counted in the cell. Scores side by side, never
ranked.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any
from weakref import WeakKeyDictionary

import pandas as pd

from harness.report.benchmark_metrics import (
    locomo_score,
    longmemeval_scores,
    mean_or_none,
    mrcr_grade,
    multichallenge_scores,
)
from harness.report.comparison import Column, Comparison, flags
from harness.report.items import ItemSource, sources
from harness.report.markdown import table
from harness.report.offline import literal_models
from harness.results.rows import (
    CALL,
    EXPECT,
    LONGMEMEVAL_PROMPTS,
    MULTICHALLENGE_PROMPTS,
    NEEDS_JUDGE,
    PROBE,
    expect_kind,
)

HEADING = "Benchmark scores"
CSV_NAME = "benchmarks.csv"
NOT_RUN = "not run"
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass(frozen=True)
class Score:
    """One figure of one column: a `benchmarks.csv` row (field order is column order)."""

    run_id: str
    policy: str
    model: str
    dataset: str
    metric: str  # accuracy, task-averaged accuracy, pass rate, mean grade, F1, ...
    group: str  # the question type, axis, needle count or category; `all` for a whole-set figure
    value: float | None  # None: no number (see note)
    k: int | None  # items met, where the figure is k/n
    n: int | None  # items counted
    left_out: int  # probes not reached, or without a verdict
    note: str  # why there is no number (`needs --judge`, ...), else empty


COLUMNS = tuple(f.name for f in fields(Score))


def is_longmemeval(dataset: str) -> bool:
    return dataset.startswith("longmemeval")


def scores(cmp: Comparison) -> list[Score]:
    """Every column's figures for every benchmark the report's items come from (made once per report)."""
    if cmp not in _made:
        by_dataset: dict[str, dict[str, ItemSource]] = {}
        for name, source in sources(cmp).items():
            by_dataset.setdefault(source.dataset, {})[name] = source
        found = []
        for dataset in sorted(by_dataset):
            score = _SCORERS.get("longmemeval" if is_longmemeval(dataset) else dataset)
            if score is not None:
                for column in cmp.columns:
                    found += score(column, dataset, by_dataset[dataset])
        _made[cmp] = found
    return _made[cmp]


_made: WeakKeyDictionary[Comparison, list[Score]] = WeakKeyDictionary()


def _figure(column: Column, dataset: str, metric: str, group: str, **cells: object) -> Score:
    base = {"value": None, "k": None, "n": None, "left_out": 0, "note": ""}
    return Score(column.run.run_id, column.policy, column.model, dataset, metric, group, **{**base, **cells})  # type: ignore[arg-type]


def _rubric_rows(column: Column, items: dict[str, ItemSource]) -> pd.DataFrame:
    probes = column.frame("probes")
    rows = probes[flags(probes[PROBE.chronology].isin(list(items))) & flags(probes[PROBE.check] == EXPECT)]
    return rows[rows[PROBE.subject].astype(str).map(expect_kind) == "rubric"]


def _judged(
    column: Column, dataset: str, items: dict[str, ItemSource], prompts: tuple[str, ...], metric: str
) -> tuple[pd.DataFrame | None, list[Score]]:
    """The rubric rows (with `verdict`: whether each has one), or the one figure that says why there
    is no number: not run, no probe reached, no judge, or a judge that asked another prompt."""
    rows = _rubric_rows(column, items)
    if rows.empty:
        return None, [_figure(column, dataset, metric, "all", note=NOT_RUN)]
    measured = rows[flags(rows[PROBE.status] == "measured")]
    if measured.empty:
        return None, [_figure(column, dataset, metric, "all", left_out=len(rows), note="no probe reached")]
    if flags(measured[PROBE.note] == NEEDS_JUDGE).all():
        return None, [_figure(column, dataset, metric, "all", note=NEEDS_JUDGE)]
    recorded = column.run.manifest.judge_prompts or {}
    if not any(p in recorded for p in prompts):
        why = f"judged through another prompt than {prompts[0]}'s (a run before benchmarks' prompts): not its score"
        return None, [_figure(column, dataset, metric, "all", note=why)]
    return rows.assign(verdict=rows[PROBE.passed].astype("boolean").notna().to_numpy()), []


def _categories(items: dict[str, ItemSource]) -> list[str]:
    """The items' categories (question types, axes) in a stable order."""
    return sorted({i.category for i in items.values() if i.category})


def _each(why: Score, figures: list[tuple[str, str]]) -> list[Score]:
    """`why` (a figure without a number and its reason) repeated for each (metric, group) of the
    benchmark's table, so a run without a judge still shows which figures it would give."""
    return [replace(why, metric=metric, group=group) for metric, group in figures]


def _left_out(rows: pd.DataFrame, items: dict[str, ItemSource]) -> dict[str, int]:
    """Per category (question type, axis): the rubric rows without a verdict."""
    groups = rows.loc[~rows["verdict"], PROBE.chronology].astype(str).map(lambda name: items[name].category or "")
    return {str(group): int(n) for group, n in groups.value_counts(sort=False).items()}  # in first-seen order


def _longmemeval(column: Column, dataset: str, items: dict[str, ItemSource]) -> list[Score]:
    rows, said = _judged(column, dataset, items, LONGMEMEVAL_PROMPTS, "overall accuracy")
    if rows is None:  # every figure the benchmark reports, each saying why it has no number
        figures = [("accuracy", t) for t in _categories(items)] + [("task-averaged accuracy", "all")]
        figures += [("overall accuracy", "all")]
        figures += [("abstention accuracy", "_abs")] if any("_abs" in i.item_id for i in items.values()) else []
        return _each(said[0], figures)
    left, judged = _left_out(rows, items), rows[rows["verdict"]]
    labels = [
        (items[c].category or "", "_abs" in items[c].item_id, bool(p))
        for c, p in zip(judged[PROBE.chronology].astype(str), judged[PROBE.passed].astype(bool))
    ]
    found = longmemeval_scores(labels)
    out = [
        _figure(column, dataset, "accuracy", t, value=f.value, k=f.k, n=f.n, left_out=left.get(t, 0))
        for t, f in found.by_type.items()
    ]
    out += [_figure(column, dataset, "accuracy", t, n=0, left_out=n) for t, n in left.items() if t not in found.by_type]
    out.append(_figure(column, dataset, "task-averaged accuracy", "all", value=found.task_averaged))
    o, a = found.overall, found.abstention
    out.append(
        _figure(column, dataset, "overall accuracy", "all", value=o.value, k=o.k, n=o.n, left_out=sum(left.values()))
    )
    out.append(_figure(column, dataset, "abstention accuracy", "_abs", value=a.value, k=a.k, n=a.n))
    return out


def _multichallenge(column: Column, dataset: str, items: dict[str, ItemSource]) -> list[Score]:
    rows, said = _judged(column, dataset, items, MULTICHALLENGE_PROMPTS, "axis average")
    if rows is None:  # every figure the benchmark reports, each saying why it has no number
        return _each(said[0], [("pass rate", axis) for axis in _categories(items)] + [("axis average", "all")])
    left, judged = _left_out(rows, items), rows[rows["verdict"]]
    attempts = [
        (items[c].category or "", items[c].item_id, bool(p))
        for c, p in zip(judged[PROBE.chronology].astype(str), judged[PROBE.passed].astype(bool))
    ]
    found = multichallenge_scores(attempts)
    out = [
        _figure(column, dataset, "pass rate", axis, value=100 * f.k / f.n, k=f.k, n=f.n, left_out=left.get(axis, 0))
        for axis, f in found.by_axis.items()
    ]
    out += [
        _figure(column, dataset, "pass rate", a, n=0, left_out=n) for a, n in left.items() if a not in found.by_axis
    ]
    out.append(_figure(column, dataset, "axis average", "all", value=found.overall, left_out=sum(left.values())))
    return out


# --- answers scored without a judge (MRCR, LoCoMo) ----------------------------------------------

OLDER = "recorded by an older harness: not computed"


@dataclass(frozen=True)
class ProbeRecord:
    """What the manifest records of one probe for its benchmark's metric (`probes`, by probe id)."""

    category: str | None
    answer: str | None  # the reference answer
    prefix: str | None  # MRCR's random prefix


def probe_records(entry: Mapping[str, Any]) -> dict[str, ProbeRecord] | None:
    """A manifest chronology entry's `probes`; None when it has none (a run recorded before the
    field, or a chronology whose probes name neither a category nor a reference)."""
    found = entry.get("probes")
    if not isinstance(found, Mapping):
        return None
    out = {}
    for probe, record in found.items():
        reference = record.get("reference") or {}
        category, answer, prefix = record.get("category"), reference.get("answer"), reference.get("prefix")
        out[str(probe)] = ProbeRecord(
            None if category is None else str(category),
            None if answer is None else str(answer),
            None if prefix is None else str(prefix),
        )
    return out


@dataclass(frozen=True)
class Answered:
    """What an answer-scored probe gives the metric: the fields the module's docstring names."""

    group: str  # the probe's category, else its item's source.category
    answer: str | None  # None: the policy never answered (stopped, error)
    reference: str | None
    prefix: str | None


def answered(column: Column, items: dict[str, ItemSource]) -> list[Answered] | None:
    """Per probe (and repetition) of these items: the answer at its turn, and the probe's category
    and reference as the run's manifest records them; None when the manifest records none for any
    of them (a run from before the field)."""
    recorded = {str(e["name"]): probe_records(e) for e in column.run.manifest.chronologies if str(e["name"]) in items}
    if not any(r is not None for r in recorded.values()):
        return None
    probes = column.frame("probes")
    rows = probes[flags(probes[PROBE.chronology].isin(list(items)))]
    found, answers = [], {}
    keys = [PROBE.chronology, PROBE.repetition, PROBE.turn, PROBE.probe]
    for (chronology, repetition, turn, probe), group in rows.groupby(keys, observed=True, sort=False):
        record = (recorded.get(str(chronology)) or {}).get(str(probe), ProbeRecord(None, None, None))
        reached = bool(flags(group[PROBE.status] == "measured").any())
        if chronology not in answers:
            answers[chronology] = _answers(column, str(chronology))
        answer = answers[chronology].get((int(repetition), int(turn))) if reached else None
        category = record.category if record.category is not None else items[str(chronology)].category
        found.append(Answered(category or "", answer, record.answer, record.prefix))
    return found


def _answers(column: Column, chronology: str) -> dict[tuple[int, int], str]:
    """(repetition, turn) -> the answer call's response, in one chronology (calls that failed left out)."""
    calls = column.records(
        "calls",
        chronology,
        "benchmark answers",
        lambda frame: frame[CALL.kind] == "answer",
        (CALL.repetition, CALL.turn, CALL.response, CALL.error),
    )
    found: dict[tuple[int, int], str] = {}
    for c in calls:
        if not c.get(CALL.error) and c[CALL.response] is not None:
            found.setdefault((c[CALL.repetition], c[CALL.turn]), c[CALL.response])
    return found


def _graded(
    column: Column,
    dataset: str,
    items: dict[str, ItemSource],
    metric: tuple[str, str],
    grade: Callable[[Answered], float | None],
) -> list[Score]:
    """`metric`: the per-category figure's name and the whole set's (over every probe scored)."""
    (per_group, overall), probes = metric, answered(column, items)
    if probes is None:
        return [_figure(column, dataset, overall, "all", note=OLDER)]
    if not probes:
        return [_figure(column, dataset, overall, "all", note=NOT_RUN)]
    groups: dict[str, list[float]] = {}
    left: dict[str, int] = {}
    for probe in probes:
        value = None if probe.answer is None else grade(probe)
        if value is None:
            left[probe.group] = left.get(probe.group, 0) + 1
        else:
            groups.setdefault(probe.group, []).append(value)
    every = [v for values in groups.values() for v in values]
    out = [
        _figure(
            column,
            dataset,
            per_group,
            g,
            value=mean_or_none(groups.get(g, [])),
            n=len(groups.get(g, [])),
            left_out=left.get(g, 0),
        )
        for g in sorted({*groups, *left}, key=_group_order)
    ]
    out.append(
        _figure(column, dataset, overall, "all", value=mean_or_none(every), n=len(every), left_out=sum(left.values()))
    )
    return out


_LEADING_NUMBER = re.compile(r"^(\d+)")


def _group_order(group: str) -> tuple[int, str]:
    """Categories by their leading number (`2`, `8 needles` before `16 needles`), then by name."""
    number = _LEADING_NUMBER.match(group)
    return (int(number.group(1)), group) if number else (1 << 30, group)


def _mrcr(column: Column, dataset: str, items: dict[str, ItemSource]) -> list[Score]:
    def grade(p: Answered) -> float | None:
        return None if p.reference is None or p.prefix is None else mrcr_grade(p.answer or "", p.reference, p.prefix)

    return _graded(column, dataset, items, ("mean grade", "mean grade"), grade)


def _locomo(column: Column, dataset: str, items: dict[str, ItemSource]) -> list[Score]:
    def grade(p: Answered) -> float | None:
        if not p.group.isdigit() or int(p.group) not in LOCOMO_CATEGORIES:
            return None
        if p.reference is None and int(p.group) != 5:  # an adversarial question is scored without one
            return None
        return locomo_score(int(p.group), p.answer or "", p.reference or "")

    return _graded(column, dataset, items, ("F1", "overall F1"), grade)


_SCORERS: dict[str, Callable[[Column, str, dict[str, ItemSource]], list[Score]]] = {
    "longmemeval": _longmemeval,
    "multichallenge": _multichallenge,
    "mrcr": _mrcr,
    "locomo": _locomo,
}


# --- the section and the CSV ------------------------------------------------------------------------

WORDS = {
    "longmemeval": "LongMemEval's figures as its print_qa_metrics.py computes them from the judge's verdicts "
    "(asked through its own get_anscheck_prompt, the verdict YES when `yes` is in the reply): accuracy per "
    "question type, their mean (task-averaged, over the types the run has), the mean over every item "
    "(overall), and over the `_abs` items (abstention; they count in their type's accuracy too). k/n counts "
    "items × repetitions.",
    "multichallenge": "MultiChallenge's figures as its result_parser.py computes them from the judge's verdicts "
    "(asked through its own JUDGE_PROMPT, passed when the verdict is the item's PASS_CRITERIA): per axis, the "
    "percent of questions with at least one passing repetition (its attempts); the axis average is their mean. "
    "A question the policy never answered is left out and counted (upstream counts a question without a "
    "response as failed).",
    "mrcr": "MRCR's grade as its dataset card computes it (0 unless the answer starts with the item's random "
    "prefix, else difflib's SequenceMatcher ratio with the reference answer, the prefix removed; both as the "
    "run's manifest records the probe's reference), the mean per needle count and over every probe; n counts "
    "probes × repetitions.",
    "locomo": "LoCoMo's per-question score as its task_eval/evaluation.py computes it (token F1 after its "
    "normalisation and Porter stemming; multi-hop answers split at commas; open-domain references cut at the "
    "first `;`; category 5, adversarial: 1 when the answer says `not mentioned` or `no information available`), "
    "the mean per category (each probe's `category` and reference answer as the run's manifest records them), "
    "and overall the mean over every question scored, category 5 included, as its evaluation_stats.py's "
    "overall accuracy; n counts probes × repetitions.",
}


def cell(found: Score | None) -> str:
    """`0.667 (2/3)`, `75.0%`, `0.412 (n=3)`, or why there is no number."""
    if found is None:
        return NOT_RUN
    if found.note:
        return found.note
    left = f"; {found.left_out} left out" if found.left_out else ""
    if found.value is None:
        return f"no item scored{left}"
    percent = found.metric in ("pass rate", "axis average")
    number = f"{found.value:.1f}%" if percent else f"{found.value:.3f}"
    counted = f"{found.k}/{found.n}" if found.k is not None else (f"n={found.n}" if found.n is not None else "")
    inside = "; ".join(p for p in (counted, left.removeprefix("; ")) if p)
    return f"{number} ({inside})" if inside else number


def section(cmp: Comparison) -> list[str]:
    """The main report's *Benchmark scores*; nothing when no item comes from a scored benchmark."""
    found = scores(cmp)
    if not found:
        return []
    lines = [
        f"## {HEADING}",
        "",
        "Each benchmark's own score, computed as its published evaluation code computes it, per policy; the "
        f"harness's own rows are *Items by category* above. The same figures are `{CSV_NAME}` in the report's "
        "folder. `left out`: probes the policy never reached, or without a judge's verdict. Scores side by side, "
        "not a ranking: no winner.",
        "",
        *_literal_caveat(cmp),
    ]
    for dataset in dict.fromkeys(s.dataset for s in found):
        mine = [s for s in found if s.dataset == dataset]
        kind = "longmemeval" if is_longmemeval(dataset) else dataset
        rows = []
        for metric, group in dict.fromkeys((s.metric, s.group) for s in mine):
            label = f"{metric} · {_group_label(kind, group)}" if group != "all" else metric
            rows.append([label] + [cell(_of(mine, column, metric, group)) for column in cmp.columns])
        lines += [
            f"### {dataset}",
            "",
            WORDS[kind],
            *_prompts_used(cmp, kind),
            "",
            table(["figure"] + cmp.headers, rows),
            "",
        ]
    return lines


def _literal_caveat(cmp: Comparison) -> list[str]:
    """Under a literal reader (the offline `reference`) the figures score its one answer: said so."""
    models = literal_models(cmp)
    if not models:
        return []
    names = ", ".join(f"`{m}`" for m in models)
    return [
        f"Under {names}, a literal reader that answers a benchmark's questions “Nothing in my context answers "
        "that.” whatever the policy kept, these figures score that answer: low, alike under every policy, and "
        "no measure of what a policy kept (see the top of the report). A model that answers (`--model`) gives "
        "the benchmark's scores.",
        "",
    ]


PROMPTS_OF = {"longmemeval": LONGMEMEVAL_PROMPTS, "multichallenge": MULTICHALLENGE_PROMPTS}


def _prompts_used(cmp: Comparison, kind: str) -> list[str]:
    """Which judge prompts the runs' manifests record for this benchmark, by SHA-256."""
    said = []
    for run in cmp.runs:
        recorded = run.manifest.judge_prompts or {}
        named = [f"`{n}` sha256 {recorded[n]}" for n in PROMPTS_OF.get(kind, ()) if n in recorded]
        if named:
            where = f" (run {run.run_id})" if len(cmp.runs) > 1 else ""
            said.append(f"Judge prompt{'s' if len(named) > 1 else ''}{where}: {', '.join(named)}.")
    return ["", " ".join(said)] if said else []


def _group_label(kind: str, group: str) -> str:
    if kind == "locomo" and group.isdigit():
        return f"category {group} ({LOCOMO_CATEGORIES.get(int(group), 'unknown')})"
    return group  # MRCR's is its needle count as the item names it (`2 needles`)


def _of(found: Iterable[Score], column: Column, metric: str, group: str) -> Score | None:
    return next(
        (
            s
            for s in found
            if (s.run_id, s.policy, s.model, s.metric, s.group)
            == (column.run.run_id, column.policy, column.model, metric, group)
            or (s.run_id, s.policy, s.model) == (column.run.run_id, column.policy, column.model)
            and s.note
            and s.group == "all"
        ),
        None,
    )


def scores_csv(cmp: Comparison) -> str | None:
    """`benchmarks.csv`: every figure as plain numbers (an unknown one an empty cell); None when the
    report has no scored benchmark item."""
    found = scores(cmp)
    if not found:
        return None
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for s in found:
        writer.writerow(["" if v is None else v for v in (getattr(s, name) for name in COLUMNS)])
    return out.getvalue()
