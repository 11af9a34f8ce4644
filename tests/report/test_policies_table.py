"""Policies side by side: one row per policy over every chronology and repetition, whose counts
are those a direct pandas count of probes.csv, turns.csv and calls.jsonl gives, shown alike in
the report's table and in `policies.csv` (unknown empty, never 0), with or without charts."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from harness.report.call_kinds import kind_row
from harness.report.policies import CSV_NAME, WITH_INTERVAL, count_text, probe_counts, short_count
from harness.report.spread import wilson
from harness.report.totals import call_counts, owner_kinds, owner_statuses
from harness.results.rows import JUDGED_EXPECT, NOT_ASKED, OPAQUE_VIEW, REFUSED_NOT_IN_VIEW, expect_kind
from tests.conftest import run_through_cli
from tests.paths import SHIPPED

CHRONOLOGIES = [SHIPPED / "correct-then-forget.yaml", SHIPPED / "memory-drift.yaml"]
POLICIES = ("full-history", "last-turns", "summary")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("run")
    options = [o for p in POLICIES for o in ("--policy", p)]
    run_through_cli(root, CHRONOLOGIES, "r", "--no-charts", *options)
    return root


def direct_counts(probes: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """The side-by-side counts of one policy's probe rows, counted here without the report's code."""
    m = probes[probes["status"] == "measured"]
    own = m["cause"].fillna("") != "other-session"  # another session's, not a loss: left out
    p = m[(m["check"] == "prohibition") & own]
    asked = p["note"].fillna("") != NOT_ASKED
    in_view, answer = p["in_view"], p["in_answer"]
    shown = asked & (in_view == True)  # noqa: E712  (pandas: compared element-wise, NaN is not True)
    out = asked & (in_view == False)  # noqa: E712
    found = {
        "prohibitions_in_view": ((in_view == True).sum(), in_view.notna().sum()),  # noqa: E712
        "honoured_asked_in_view": ((shown & (answer == True)).sum(), (shown & answer.notna()).sum()),  # noqa: E712
        "refused_not_in_view": ((out & (p["note"] == REFUSED_NOT_IN_VIEW)).sum(), out.sum()),
    }
    current = m[(m["check"] == "current") & own]
    for place in ("in_view", "in_answer"):
        found[f"current_{place}"] = ((current[place] == True).sum(), current[place].notna().sum())  # noqa: E712
    for check, places in (("stale", ("in_view", "in_answer")), ("forgotten", ("in_view", "in_answer", "in_retained"))):
        rows = m[m["check"] == check]
        for place in places:
            found[f"{check}_{place}"] = ((rows[place] == True).sum(), rows[place].notna().sum())  # noqa: E712
    return {k: (int(a), int(b)) for k, (a, b) in found.items()}


def direct_passable(probes: pd.DataFrame, policy: str, model: str, control_ran: bool) -> dict[str, int]:
    """One policy's counts passable without memory, counted here without the report's code: its
    measured rows true in a place whose row of `none` (same chronology, model, repetition, probe,
    check, subject, and rank among equal ones) is true there too. Empty for `none` itself, or
    when `none` did not run (unknown, not 0)."""
    if policy == "none" or not control_ran:
        return {}
    key = ["chronology", "model", "repetition", "probe", "check", "subject"]
    ranked = probes.assign(nth=probes.groupby(["policy", *key], dropna=False).cumcount())
    control = ranked[(ranked["policy"] == "none") & (ranked["status"] == "measured")]
    mine = ranked[(ranked["policy"] == policy) & (ranked["model"] == model) & (ranked["status"] == "measured")]
    both = mine.merge(
        control[[*key, "nth", "in_view", "in_answer", "passed"]], on=[*key, "nth"], how="left", suffixes=("", "_none")
    )
    own = both["cause"].fillna("") != "other-session"  # another session's: left out, but for expectations

    def true(column: str) -> pd.Series:
        return both[column].astype("boolean").fillna(False).astype(bool)

    free = {place: true(place) & true(f"{place}_none") for place in ("in_view", "in_answer", "passed")}
    check = both["check"]
    asked = both["note"].fillna("") != NOT_ASKED
    judged = both["subject"].map(expect_kind).isin(JUDGED_EXPECT)
    return {
        "prohibitions_in_view_passable": (free["in_view"] & own & (check == "prohibition")).sum(),
        "honoured_asked_in_view_passable": (
            free["in_answer"] & own & true("in_view") & asked & (check == "prohibition")
        ).sum(),
        "current_in_view_passable": (free["in_view"] & own & (check == "current")).sum(),
        "current_in_answer_passable": (free["in_answer"] & own & (check == "current")).sum(),
        "expect_offline_passable": (free["passed"] & (check == "expect") & ~judged).sum(),
        "expect_judged_passable": (free["passed"] & (check == "expect") & judged).sum(),
        "passed_checks_passable": (free["passed"] & own).sum(),
    }


def table_rows(report: str) -> dict[str, list[str]]:
    """The side-by-side table of a report: policy -> its cells."""
    section = report.split("## Policies side by side", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split(" | ")] for line in lines[1:])}


def test_every_count_is_a_direct_pandas_count_of_the_results(small_run: Path) -> None:
    probes = pd.read_csv(small_run / "results" / "r" / "probes.csv")
    turns = pd.read_csv(small_run / "results" / "r" / "turns.csv")
    table = pd.read_csv(small_run / "reports" / "r" / CSV_NAME, keep_default_na=False)
    assert table["policy"].tolist() == list(POLICIES)  # the declared order, one row each
    for _, row in table.iterrows():
        mine = probes[probes["policy"] == row["policy"]]
        for name, (k, n) in direct_counts(mine).items():
            assert (int(row[f"{name}_k"]), int(row[f"{name}_n"])) == (k, n), (row["policy"], name)
        conversations = turns[turns["policy"] == row["policy"]][["chronology", "repetition"]].drop_duplicates()
        ended = sum(int(row[f"conversations_{s}"]) for s in ("completed", "stopped", "error"))
        assert ended == len(conversations)
    assert sum(int(k) for k in table["stale_in_view_k"]) > 0  # the run has something to count
    assert 0 < table["current_in_view_k"].astype(int).sum() < table["current_in_view_n"].astype(int).sum()
    residue = pd.read_csv(small_run / "results" / "r" / "residue.csv")
    kept = residue[residue["change"] == "kept"]
    for _, row in table.iterrows():
        for check in ("stale", "forgotten"):
            mine = kept[(kept["policy"] == row["policy"]) & (kept["check"] == check)]
            values = mine[["chronology", "repetition", "subject", "since"]].drop_duplicates()
            assert int(row[f"{check}_kept"]) == len(values), (row["policy"], check)
    assert table["stale_kept"].astype(int).sum() > 0


def test_the_csv_and_the_table_show_the_same_counts(small_run: Path) -> None:
    report = (small_run / "reports" / "r.md").read_text(encoding="utf-8")
    assert report.index("## Policies side by side") < report.index("At a glance")
    shown = table_rows(report)
    table = pd.read_csv(small_run / "reports" / "r" / CSV_NAME, keep_default_na=False)
    assert list(shown) == table["policy"].tolist()
    for _, row in table.iterrows():
        cells = shown[row["policy"]]
        for n, name in enumerate(WITH_INTERVAL):
            k, of = int(row[f"{name}_k"]), int(row[f"{name}_n"])
            assert cells[n].startswith(f"{k}/{of}") if of else cells[n] == "none measured", (row["policy"], name)
            if not of:
                continue
            low, high = wilson(k, of)
            assert (float(row[f"{name}_low"]), float(row[f"{name}_high"])) == pytest.approx((low, high), abs=1e-6)
            assert f"\\[{round(low * 100)}–{round(high * 100)}%\\]" in cells[n]  # escaped by `cell`
        stale = " · ".join(f"{row[f'stale_{p}_k']}/{row[f'stale_{p}_n']}" for p in ("in_view", "in_answer"))
        assert cells[4] == stale
        places = ("in_view", "in_answer", "in_retained")
        assert cells[5] == " · ".join(f"{row[f'forgotten_{p}_k']}/{row[f'forgotten_{p}_n']}" for p in places)
        kept = [f"{row[f'{c}_kept']} {w}" for c, w in (("stale", "corrected"), ("forgotten", "forgotten"))]
        assert [k for k in kept if not k.startswith("0 ")] == [p.split(" (")[0] for p in cells[6].split(" · ")] or (
            cells[6] == "none" and row["stale_kept"] == row["forgotten_kept"] == 0
        )
        ended = sum(int(row[f"conversations_{s}"]) for s in ("completed", "stopped", "error"))
        assert cells[7] == f"{row['conversations_stopped']} · {row['conversations_error']} of {ended}"
        own = sum(int(row[f"{k}_tiktoken_tokens"]) for k in ("answer", "summarizer") if f"{k}_calls" in row)
        assert cells[8] == f"{own} (tiktoken)"  # no probe expects an answer: no expectation column
        # the reference model reports no usage: unknown, an empty cell, never 0
        assert row["answer_reported_prompt_tokens"] == "" and int(row["answer_reported_prompt_tokens_calls"]) == 0


def test_the_table_fits_a_screen_and_the_long_figures_are_by_call_kind_below(small_run: Path) -> None:
    report = (small_run / "reports" / "r.md").read_text(encoding="utf-8")
    section = report.split("## Policies side by side", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.split("### Cost by call kind")[0].splitlines() if line.startswith("| ")]
    assert all(len(line.strip("|").split(" | ")) <= 12 for line in rows)
    table = pd.read_csv(small_run / "reports" / "r" / CSV_NAME, keep_default_na=False)
    below = section.split("### Cost by call kind", 1)[1]
    for _, row in table.iterrows():
        calls, estimate = int(row["answer_calls"]), int(row["answer_estimate_tokens"])
        line = (
            f"| {row['policy']} | answer | {calls} | {row['retries']} | {estimate} | {row['answer_tiktoken_tokens']} |"
        )
        assert line in below
        assert f"| unknown (0 of {calls} calls reported) |" in below


def test_no_charts_still_writes_the_csv_in_the_report_folder(small_run: Path) -> None:
    folder = small_run / "reports" / "r"
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith("chronology-")) == [CSV_NAME]


def test_the_table_never_marks_a_policy_as_best(small_run: Path) -> None:
    section = (small_run / "reports" / "r.md").read_text(encoding="utf-8").split("## Policies side by side")[1]
    section = section.split("\n## ", 1)[0]
    assert not re.search(r"\*\*|<span|color|best|winner|rank\b", section)


def frame(rows: list[dict]) -> pd.DataFrame:
    blank = {"status": "measured", "note": None, "cause": None, "in_view": None, "in_answer": None, "in_retained": None}
    blank |= {"subject": "s", "passed": None}
    return pd.DataFrame([blank | r for r in rows])


def test_a_refusal_out_of_view_is_counted_apart_and_not_as_honoured() -> None:
    probes = frame(
        [
            {"check": "prohibition", "in_view": True, "in_answer": True},
            {"check": "prohibition", "in_view": True, "in_answer": False},
            {"check": "prohibition", "in_view": True, "note": NOT_ASKED},  # not asked: no answer verdict
            {"check": "prohibition", "in_view": False, "in_answer": False, "note": REFUSED_NOT_IN_VIEW},
            {"check": "prohibition", "in_view": False, "in_answer": False},
            {"check": "prohibition", "status": "stopped"},  # never reached: counted nowhere
            {"check": "prohibition", "in_view": False, "cause": "other-session"},  # not the policy's: nowhere
            {"check": "forgotten", "in_view": False, "in_answer": False, "in_retained": True},
            {"check": "stale", "in_view": True, "in_answer": None},  # answer unknown: no verdict
            {"check": "current", "in_view": True, "in_answer": True},
            {"check": "current", "in_view": False, "in_answer": False},
            {"check": "current", "in_view": False, "in_answer": False, "cause": "other-session"},  # nowhere
            {"check": "current", "status": "error"},  # never reached: counted nowhere
        ]
    )
    counts = {name: (c.k, c.n) for name, c in probe_counts(probes).items()}
    assert counts["prohibitions_in_view"] == (3, 5)
    assert counts["honoured_asked_in_view"] == (1, 2)
    assert counts["refused_not_in_view"] == (1, 2)
    assert counts["forgotten_in_retained"] == (1, 1) and counts["forgotten_in_view"] == (0, 1)
    assert counts["stale_in_view"] == (1, 1) and counts["stale_in_answer"] == (0, 0)
    assert counts["current_in_view"] == (1, 2) and counts["current_in_answer"] == (1, 2)


def test_what_an_opaque_compaction_item_hides_is_counted_unknown_never_absent() -> None:
    probes = frame(
        [
            {"check": "prohibition", "in_view": True, "in_answer": True},
            {"check": "prohibition", "in_answer": True, "passed": True, "note": OPAQUE_VIEW},
            {"check": "current", "note": OPAQUE_VIEW},
            {"check": "current", "in_view": False},
        ]
    )
    counts = probe_counts(probes)
    assert (counts["prohibitions_in_view"].k, counts["prohibitions_in_view"].n) == (1, 1)
    assert count_text("prohibitions_in_view", counts["prohibitions_in_view"]).endswith(
        "· 1 unknown (opaque compaction item)"
    )
    assert count_text("stale_in_view", counts["current_in_view"]) == "0/1 · 1 unknown (opaque compaction item)"
    assert count_text("stale_in_view", counts["stale_in_view"]) == "none measured"
    assert short_count("current_in_view", counts["current_in_view"]) == "0/1 [0–79%] · 1 unknown"  # the cell


def test_a_conversation_is_counted_once_by_how_it_ended() -> None:
    turns = pd.DataFrame(
        {
            "chronology": ["a", "a", "a", "a", "b", "b"],
            "repetition": [1, 1, 2, 2, 1, 1],
            "status": ["answered", "stopped", "answered", "error", "answered", "forget"],
        }
    ).assign(policy="p", model="m")
    assert owner_statuses(turns) == {("p", "m"): {"completed": 1, "stopped": 1, "error": 1}}


def calls(*prompts: object) -> pd.DataFrame:
    base = {"chronology": "a", "policy": "p", "model": "m", "kind": "answer", "cached": False, "attempts": 1}
    base |= {"estimate_tokens": 10, "tiktoken_tokens": None, "format_refusals": 0}
    base |= {"reported_completion_tokens": None, "invalid_reported_usage": None}
    return pd.DataFrame([base | {"reported_prompt_tokens": p} for p in prompts])


def kind_figures(calls: pd.DataFrame) -> tuple[dict, int]:
    """The one column's figures per kind of these calls, and its calls from the cache."""
    kinds, cached = owner_kinds(calls, call_counts(calls))
    return kinds.get(("p", "m"), {}), cached[("p", "m")]


def test_a_partly_reported_sum_is_never_shown_as_the_total_and_unknown_is_never_0() -> None:
    kinds, cached = kind_figures(calls(7, None, 5))
    (figures,) = kinds.values()
    estimate, tiktoken, prompt, completion = kind_row("p", "answer", figures)[4:]
    assert (estimate, tiktoken) == ("30", "unknown")
    assert prompt.startswith("unknown total; 12 over the 2 of 3 calls that reported")
    assert completion.startswith("unknown (0 of 3 calls reported)")
    (figures,) = kind_figures(calls(7, 5))[0].values()
    assert kind_row("p", "answer", figures)[6].startswith("12 (2 of 2 calls reported)")
    assert cached == 0
    served = calls(7, 5).assign(cached=[True, False])
    kinds, cached = kind_figures(served)
    assert cached == 1 and kinds["answer"].calls == 1  # a call from the cache sent nothing: counted apart
