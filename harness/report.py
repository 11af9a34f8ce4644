"""The markdown report: a view of results, built from results alone (no model calls).

It compares policies without ranking them: policies appear in the order the run declared,
and no score, "best" or winner is computed. Every number says what it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from harness.markdown import table
from harness.results import Results, load_results

REFERENCE_CAVEAT = (
    "The `reference` model is a deterministic literal reader built into the harness. It shows "
    "what each policy puts in front of a model; it qualifies no model. Scripted runs qualify no model."
)
TOKEN_CAVEAT = (
    "Token figures are kept apart: **estimate** is characters/4 (rounded up); **tiktoken** is a "
    "local tokenizer count (message contents plus 4 per message and 3 per request); **reported** "
    "is what the provider returned. Neither the estimate nor the local count is billed tokens or cost; "
    "a reported total over calls where any call reported nothing is `unknown`."
)


def mark(value: object, yes: str = "yes", no: str = "no") -> str:
    """A boolean cell; missing means unknown, never no."""
    if value is None or value is pd.NA or (isinstance(value, float) and pd.isna(value)):
        return "unknown"
    return yes if bool(value) else no


def count_cell(values: pd.Series, yes: str) -> str:
    """`yes` or `no` for one observation; `k/n yes` across repetitions; unknown when blank."""
    known = values.dropna()
    if known.empty:
        return "unknown"
    if len(values) == 1:
        return mark(known.iloc[0], yes, f"not {yes}")
    return f"{int(known.sum())}/{len(values)} {yes}" + (f" ({len(values) - len(known)} unknown)" if len(known) < len(values) else "")


def what_ran(results: Results) -> list[str]:
    m = results.manifest
    lines = [f"## What ran: `{m['run_id']}`", "",
             f"- status: {m['status']}; started {m['started_at']}, ended {m.get('ended_at') or 'not ended'}",
             f"- harness {m['harness_version']}, Python {m['python']}",
             f"- models: {', '.join(m['models'])}; repetitions: {m['repetitions']}; seed: {m['seed']}; "
             f"{'live' if m['live'] else 'fixed replay (scripted replies kept)'}; concurrency {m['concurrency']}",
             f"- local tokenizer: {m['tokenizer']['encoding']} "
             f"({'available' if m['tokenizer']['available'] else 'unavailable: tiktoken counts are blank'})", ""]  # fmt: skip
    lines += [table(["chronology", "title", "file", "sha256"],
                    [(c["name"], c["title"], c["path"], c["sha256"][:16]) for c in m["chronologies"]]), ""]
    lines += [table(["policy (declared order)", "parameters"],
                    [(p["label"], ", ".join(f"{k}={v}" for k, v in p["params"].items()) or "none")
                     for p in m["policies"]]), ""]  # fmt: skip
    return lines


def caveats(results: Results) -> list[str]:
    lines = ["## Caveats", ""]
    if "reference" in results.manifest["models"]:
        lines.append(f"- {REFERENCE_CAVEAT}")
    lines.append(f"- {TOKEN_CAVEAT}")
    calls = results.calls
    reported = 0 if calls.empty else int(calls["reported_prompt_tokens"].notna().sum())
    lines.append(f"- Provider-reported usage: {reported} of {len(calls)} model calls reported it.")
    return lines + [""]


def survival(results: Results, chronology: str, model: str) -> list[str]:
    probes = results.probes
    rows = probes[(probes.chronology == chronology) & (probes.model == model) & (probes.check == "prohibition")]
    if rows.empty:
        return ["No prohibition was checked at a probe of this chronology.", ""]
    header = ["probe (turn)", "prohibition", "age"] + results.policy_order
    body = []
    for (turn, probe, subject), group in rows.groupby(["turn", "probe", "subject"], sort=True):
        cells = [f"{probe} ({turn})", subject, group["age"].iloc[0]]
        for policy in results.policy_order:
            sel = group[group.policy == policy]
            cells.append(survival_cell(sel))
        body.append(cells)
    return ["Cells: is the prohibition in the request view / is it honoured by the answer.", "",
            table(header, body), ""]  # fmt: skip


def survival_cell(rows: pd.DataFrame) -> str:
    if rows.empty:
        return "not run"
    if (rows.status != "measured").all():
        return rows.status.iloc[0]
    return f"view: {count_cell(rows.in_view, 'kept')} · answer: {count_cell(rows.in_answer, 'honoured')}"


def drift(results: Results, chronology: str, model: str) -> list[str]:
    probes = results.probes
    rows = probes[(probes.chronology == chronology) & (probes.model == model)
                  & probes.check.isin(["stale", "forgotten"])]  # fmt: skip
    if rows.empty:
        return ["No corrected or forgotten value existed at any probe.", ""]
    header = ["probe (turn)", "check", "value"] + results.policy_order
    body = []
    for (turn, probe, check, subject), group in rows.groupby(["turn", "probe", "check", "subject"], sort=True):
        cells = [f"{probe} ({turn})", check, subject]
        for policy in results.policy_order:
            sel = group[group.policy == policy]
            if sel.empty or (sel.status != "measured").all():
                cells.append("not measured" if sel.empty else sel.status.iloc[0])
            else:
                cells.append(f"view: {count_cell(sel.in_view, 'present')} · answer: {count_cell(sel.in_answer, 'present')}")
        body.append(cells)
    return ["Cells: does the stale (corrected) or forgotten value appear in the request view / in the answer. "
            "It should appear in neither.", "", table(header, body), ""]  # fmt: skip


def losses(results: Results, chronology: str, model: str) -> list[str]:
    probes = results.probes
    rows = probes[(probes.chronology == chronology) & (probes.model == model) & probes.lost_at.notna()]
    if rows.empty:
        return ["Nothing checked was lost from a request view.", ""]
    order = {p: i for i, p in enumerate(results.policy_order)}
    rows = rows.assign(_o=rows.policy.map(order)).sort_values(["_o", "turn", "check", "subject", "repetition"])
    body = rows[["policy", "probe", "turn", "check", "subject", "lost_at"]].drop_duplicates()
    return [table(["policy", "probe", "turn", "check", "subject", "where it was lost"], body.itertuples(index=False)), ""]


def sizes(results: Results, chronology: str, model: str) -> list[str]:
    turns = results.turns
    rows = turns[(turns.chronology == chronology) & (turns.model == model) & (turns.repetition == 1)]
    header = ["policy", "turns run", "status at end", "largest view (chars)", "final retained (chars)",
              "estimate tokens (sum of views)", "tiktoken tokens (sum of views)",
              "reported prompt tokens", "aux calls", "aux estimate tokens"]  # fmt: skip
    body = []
    for policy in results.policy_order:
        sel = rows[rows.policy == policy]
        if sel.empty:
            continue
        views = sel[sel.view_chars.notna()]
        body.append([policy, len(sel), sel.status.iloc[-1], views.view_chars.max(), sel.retained_chars.iloc[-1],
                     views.estimate_tokens.sum(), total_or_unknown(views.tiktoken_tokens),
                     reported_total(sel), int(sel.aux_calls.sum()), int(sel.aux_estimate_tokens.sum())])  # fmt: skip
    return ["Repetition 1. View figures describe the answer call's request view at each turn "
            "(scripted turns included: what the policy would send).", "", table(header, body), ""]  # fmt: skip


def total_or_unknown(values: pd.Series) -> object:
    return "unavailable" if values.isna().any() else int(values.sum())


def reported_total(rows: pd.DataFrame) -> str:
    answered = rows[rows.status.isin(["answered", "stopped"]) & rows.latency_ms.notna()]
    reported = answered.reported_prompt_tokens.dropna()
    if answered.empty:
        return "no model call"
    if len(reported) < len(answered):
        return f"unknown ({len(reported)} of {len(answered)} calls reported)"
    return f"{int(reported.sum())} ({len(answered)} of {len(answered)} calls reported)"


def stops(results: Results) -> list[str]:
    turns = results.turns
    rows = turns[turns.status.isin(["stopped", "error"])]
    lines = ["## Policy stops and errors", ""]
    if rows.empty:
        return lines + ["No policy stopped and no call failed.", ""]
    body = rows[["chronology", "policy", "model", "repetition", "turn", "status", "stop_reason", "error"]]
    return lines + [table(list(body.columns), body.itertuples(index=False)), ""]


def build_report(results: Results) -> str:
    """The whole report of one run, as markdown text (same results, same bytes)."""
    m = results.manifest
    lines = [f"# Context-policy comparison: {m['run_id']}", "",
             "Policies are listed in the order the run declared them. This report ranks nothing.", ""]  # fmt: skip
    lines += what_ran(results) + caveats(results)
    for chronology in [c["name"] for c in m["chronologies"]]:
        for model in m["models"]:
            lines += [f"## {chronology} · {model}", "", "### Prohibition survival", ""]
            lines += survival(results, chronology, model)
            lines += ["### Drift: stale and forgotten values", ""] + drift(results, chronology, model)
            lines += ["### Where each loss happened", ""] + losses(results, chronology, model)
            lines += ["### Size and token figures", ""] + sizes(results, chronology, model)
    lines += stops(results)
    return "\n".join(lines).rstrip() + "\n"


def write_report(directories: Sequence[Path], reports: Path) -> Path:
    """Write `reports/<run-id>.md` for one results directory; return its path."""
    results = load_results(directories[0])
    reports.mkdir(parents=True, exist_ok=True)
    path = reports / f"{results.run_id}.md"
    path.write_text(build_report(results), encoding="utf-8")
    return path
