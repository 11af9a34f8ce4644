"""`harness compare`'s markdown: what differed, the flips with both runs' causes, outcomes known in
one run only, the statistics per policy and check kind, token figures, and checks in one run
only. Every number is labelled with what it counts; nothing is ordered by an outcome and nothing
is called better."""

from __future__ import annotations

import shlex
from typing import Any

import pandas as pd

from harness.report.compare import PairedComparison
from harness.report.compare_tokens import FIGURE_NAMES, FIGURES, Sums, TokenRow
from harness.report.controls import CONTROL, WORDS
from harness.report.document import TITLE
from harness.report.gate import p_text
from harness.report.markdown import cell, code, plural, table
from harness.report.mcnemar import METHOD, Paired
from harness.report.token_figures import reported_words
from harness.results.rows import PROBE


def summary_line(c: PairedComparison) -> str:
    unpaired = len(c.pairing.unpaired)
    neither = len(c.pairing.pairs) - len(c.known) - len(c.half_known)
    return (
        f"{plural(len(c.known), 'paired check')} (× repetition) with an outcome in both runs: "
        f"{c.passed_to_failed} passed→failed, {c.failed_to_passed} failed→passed; "
        f"{plural(len(c.half_known), 'pair')} with an outcome in one run only, {neither} in neither (not asked, "
        f"or not measured); {plural(unpaired, 'check')} in one run only."
    )


def markdown(c: PairedComparison) -> str:
    a, b = c.run_ids
    lines = [
        f"{TITLE}paired comparison: {cell(a)} vs {cell(b)}",
        "",
        cell(summary_line(c)),
        "",
        f"Run A: {cell(str(c.paths[0]))} (run id {cell(a)}). Run B: {cell(str(c.paths[1]))} (run id {cell(b)}). "
        "Each check of A is paired with the same check of B on (chronology, policy, probe, check, subject, "
        "repetition). This states what changed and how uncertain the change is; it names no winner.",
        "",
        *[cell(note) for note in c.notes],
        *([""] if c.notes else []),
    ]
    lines += differences_section(c) + flips_section(c) + half_known_section(c)
    lines += statistics_section(c) + tokens_section(c) + unpaired_section(c)
    return "\n".join(lines).rstrip() + "\n"


def differences_section(c: PairedComparison) -> list[str]:
    differ, same = c.differences
    lines = ["## What differed between the runs", ""]
    if differ:
        rows = [[d.field, d.what, d.a, d.b] for d in differ]
        lines += [table(["manifest field", "what it is", "run A", "run B"], rows), ""]
    else:
        lines += ["The manifests record the same settings for the fields below.", ""]
    lines += [f"Recorded the same in both runs: {', '.join(same) or 'none of the compared fields'}.", ""]
    chronologies = [
        [x.name, x.sha256_a or "not in run A", x.sha256_b or "not in run B", x.status] for x in c.pairing.chronologies
    ]
    lines += ["Chronology files (a chronology whose file changed is not paired):", ""]
    lines += [table(["chronology", "sha256 in A", "sha256 in B", "paired"], chronologies), ""]
    pairs = c.pairing.policy_pairs
    renamed = [[a, b] for a, b in pairs.items() if a != b]
    if renamed:
        lines += [
            "Policies paired by name whose parameters differ:",
            "",
            table(["policy in A", "policy in B"], renamed),
            "",
        ]
    only = [["A", p] for p in c.pairing.a.policy_order if p not in pairs]
    only += [["B", p] for p in c.pairing.b.policy_order if p not in pairs.values()]
    if only:
        lines += ["Policies in one run only (their checks are listed under *Checks in one run only*):", ""]
        lines += [table(["run", "policy"], only), ""]
    return lines


def control_line(c: PairedComparison) -> list[str]:
    """How many flips the control says need no memory, or why that is not known."""
    found = c.passable_flips
    if found is None:
        return [
            f"Whether a flip was {WORDS} is not known: the control `{CONTROL}` did not run in both runs.",
            "",
        ]
    passable, flips = found
    return [
        f"{passable} of the {plural(flips, 'flip')} of policies other than the control `{CONTROL}` passed, in the "
        f"run where they passed, a check `{CONTROL}` passed too ({WORDS}): such a flip says nothing of what "
        "the policy remembers.",
        "",
    ]


def flips_section(c: PairedComparison) -> list[str]:
    lines = ["## Flips", ""]
    if c.flips.empty:
        return lines + ["No paired check changed outcome between the runs.", ""]
    lines += [
        f"Each paired check (per repetition) whose outcome differs: {c.passed_to_failed} passed→failed, "
        f"{c.failed_to_passed} failed→passed. Per run: whether the subject was in the request view and in the "
        "answer (a prohibition: honoured by it), and the cause and place of its loss from the view (blank: not "
        "lost there); the commands print each run's request view at the probe.",
        "",
        *control_line(c),
    ]
    rows = [
        [
            row["direction"],
            row[PROBE.chronology],
            row["pair_policy"],
            row[PROBE.probe],
            row[PROBE.check],
            row[PROBE.subject],
            row[PROBE.repetition],
            presence(row, "a"),
            row["cause_a"],
            row["lost_at_a"],
            presence(row, "b"),
            row["cause_b"],
            row["lost_at_b"],
            code(shlex.join(c.show_command("a", row))),
            code(shlex.join(c.show_command("b", row))),
        ]
        for row in c.flips.to_dict("records")
    ]
    header = ["direction", "chronology", "policy", "probe", "check", "subject", "repetition"]
    header += [
        "in view · in answer, A",
        "cause in A",
        "lost at in A",
        "in view · in answer, B",
        "cause in B",
        "lost at in B",
    ]
    header += ["view in A", "view in B"]
    return lines + [table(header, rows), ""]


def presence(row: dict[str, Any], side: str) -> str:
    """Whether the subject was in the request view and in the answer (for a prohibition: honoured)."""
    words = {True: "yes", False: "no"}
    found = [row[f"{column}_{side}"] for column in (PROBE.in_view, PROBE.in_answer)]
    return " · ".join("unknown" if pd.isna(v) else words[bool(v)] for v in found)


def outcome(row: dict[str, Any], side: str) -> str:
    """A side's outcome in words: passed, failed, or why there is none."""
    passed = row[f"passed_{side}"]
    if not pd.isna(passed):
        return "passed" if passed else "failed"
    note = row[f"note_{side}"]
    status = row[f"status_{side}"]
    why = note if not pd.isna(note) else status
    lost = row[f"lost_at_{side}"]
    return f"no outcome ({why}{'; ' + str(lost) if not pd.isna(lost) and status != 'measured' else ''})"


def half_known_section(c: PairedComparison) -> list[str]:
    if c.half_known.empty:
        return []
    rows = [
        [
            r[PROBE.chronology],
            r["pair_policy"],
            r[PROBE.probe],
            r[PROBE.check],
            r[PROBE.subject],
            r[PROBE.repetition],
            outcome(r, "a"),
            outcome(r, "b"),
        ]
        for r in c.half_known.to_dict("records")
    ]
    return [
        "## Outcome in one run only",
        "",
        "Paired checks with an outcome in one run and none in the other (not asked by the probe, or the policy "
        "stopped or failed before it): not flips, and not counted by the test below.",
        "",
        table(["chronology", "policy", "probe", "check", "subject", "repetition", "run A", "run B"], rows),
        "",
    ]


def rate(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.1f}%)" if n else "no checks"


def points(a: float | None, b: float | None) -> str:
    return "" if a is None or b is None else f"{100 * (b - a):+.1f} pp"


def statistics_row(policy: str, kind: str, s: Paired, adjusted: float) -> list[object]:
    a, b = s.a, s.b
    return [
        policy,
        kind,
        s.pairs,
        s.passed_to_failed,
        s.failed_to_passed,
        s.items,
        s.items_passed_to_failed,
        s.items_failed_to_passed,
        s.conversations,
        s.conversations_lower,
        s.conversations_higher,
        p_text(s.p_value),
        p_text(adjusted),
        rate(a.passed, a.pairs),
        rate(b.passed, b.pairs),
        points(a.pass_at_1, b.pass_at_1),
        rate(a.items_passed, a.items),
        rate(b.items_passed, b.items),
        points(a.pass_power_k, b.pass_power_k),
    ]


STATISTICS_HEADER = [
    "policy",
    "check kind",
    "pairs (checks × repetitions)",
    "pairs passed→failed",
    "pairs failed→passed",
    "items (checks)",
    "items passed→failed",
    "items failed→passed",
    "conversations (the test's units)",
    "conversations with pass share lower in B",
    "conversations with pass share higher in B",
    "sign test p (conversations, two-sided, raw)",
    "Holm-adjusted p (the gate's)",
    "pass@1 in A",
    "pass@1 in B",
    "pass@1 B − A",
    "pass^k in A",
    "pass^k in B",
    "pass^k B − A",
]


def statistics_section(c: PairedComparison) -> list[str]:
    lines = ["## Per policy and check kind", ""]
    if not c.statistics:
        return lines + ["No check was paired with an outcome in both runs: nothing to test.", ""]
    lines += [
        f"Counts over the checks paired with an outcome in both runs. {METHOD}: {len(c.statistics)} tests. Pairs "
        "and items are counted as they are, but the checks of one conversation fail together, so only "
        "conversations are tested. pass@1 is the share of pairs passed (every repetition counted); pass^k the "
        "share of items passed in every paired repetition (k: the repetitions paired, 1 without repetitions). "
        "B − A in percentage points. A p-value says how surprising the imbalance of conversations would be if "
        "the runs did not differ; it ranks nothing.",
        "",
    ]
    rows = [statistics_row(policy, kind, s, c.adjusted[(policy, kind)]) for (policy, kind), s in c.statistics.items()]
    return lines + [table(STATISTICS_HEADER, rows), ""]


def figure_text(sums: Sums | None, figure: str) -> str:
    if sums is None:
        return "no call"
    value = sums.sums[figure]
    if figure.startswith("reported_"):
        return reported_words(str(value), 0 if value is None else value, sums.known[figure], sums.calls, 0)
    if value is None:
        return f"unknown ({sums.known[figure]} of {sums.calls} calls counted)"
    return str(value)


def ratio_text(row: TokenRow, figure: str) -> str:
    found = row.ratio(figure)
    if found is not None:
        return f"{found:.3f}"
    a = row.a.sums[figure] if row.a else None
    return "none (0 in A)" if a == 0 else "unknown"


def calls_text(sums: Sums | None) -> str:
    if sums is None:
        return "no call"
    return f"{sums.calls}" + (f" (+{sums.cached} from cache, not counted)" if sums.cached else "")


def tokens_section(c: PairedComparison) -> list[str]:
    lines = ["## Token figures by call kind", ""]
    if not c.tokens:
        return lines + ["No model call in the conversations both runs hold.", ""]
    lines += [
        "Request tokens summed over the calls of the conversations both runs hold (same chronology file, a paired "
        "policy, the same repetition); calls served from the response cache sent nothing and are left out. Each "
        "figure is its own kind, never added to another; unknown stays unknown. Ratio: B / A.",
        "",
    ]
    rows = []
    for row in c.tokens:
        rows.append([row.policy, row.kind, "calls sent", calls_text(row.a), calls_text(row.b), ""])
        rows += [
            [row.policy, row.kind, FIGURE_NAMES[f], figure_text(row.a, f), figure_text(row.b, f), ratio_text(row, f)]
            for f in FIGURES
        ]
    return lines + [table(["policy", "call kind", "figure", "run A", "run B", "ratio B / A"], rows), ""]


def unpaired_section(c: PairedComparison) -> list[str]:
    lines = ["## Checks in one run only", ""]
    unpaired = c.pairing.unpaired
    if unpaired.empty:
        return lines + ["Every check of each run has its partner in the other.", ""]
    keys = ["run", PROBE.chronology, PROBE.policy, "reason"]
    grouped = unpaired.groupby(keys, sort=False, dropna=False)
    rows = [
        [*key, len(rows), ", ".join(str(r) for r in sorted(set(rows[PROBE.repetition].astype(int))))]
        for key, rows in grouped
    ]
    return lines + [
        "Checks without a partner in the other run, counted per run, chronology, policy and reason; they are in no "
        "count above. `--format csv` lists each.",
        "",
        table(["run", "chronology", "policy", "reason", "checks", "repetitions"], rows),
        "",
    ]
