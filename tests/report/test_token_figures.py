"""The report's token figures: provider-reported usage summed where it is a count, unknown where
it is not (with the sum over the calls that did report, never as the total), each repetition's
kinds added before the spread over repetitions, and the retries each column's calls took."""

from __future__ import annotations

import pandas as pd

from harness.report.token_figures import call_groups, reported


def call(prompt: object, invalid: dict | None = None) -> dict:
    return {"reported_prompt_tokens": prompt, "invalid_reported_usage": invalid}


def reported_cell(calls: list[dict], reps: int = 1) -> str:
    """The token table's provider-reported cell of these calls (each in repetition 1 unless it says)."""
    rest = {"chronology": "c", "policy": "p", "model": "m", "repetition": 1, "kind": "answer", "cached": False}
    rest |= {"estimate_tokens": 1, "tiktoken_tokens": 1, "reported_completion_tokens": None}
    (found,) = call_groups(pd.DataFrame([rest | c for c in calls])).of("c").values()
    return reported(found[0], "reported_prompt_tokens", reps)


def test_results_written_before_usage_was_checked_count_negative_and_huge_values_as_unknown() -> None:
    calls = [call(-20.0), call(10.0), call(1e30), call(5.0)]  # as pandas reads an old calls.jsonl
    text = reported_cell(calls)
    assert text == "unknown total; 15 over the 2 of 4 calls that reported; 2 reported invalid usage, counted as unknown"


def test_valid_counts_sum_and_invalid_ones_are_named() -> None:
    calls = [call(10), call(None, {"prompt_tokens": "-3"})]
    assert reported_cell(calls[:1]) == "10 (1 of 1 calls reported)"
    text = reported_cell(calls)
    assert text == "unknown total; 10 over the 1 of 2 calls that reported; 1 reported invalid usage, counted as unknown"


def test_a_partly_reported_total_shows_the_sum_of_the_calls_that_reported_never_as_the_total() -> None:
    assert reported_cell([call(10), call(None), call(5)]) == "unknown total; 15 over the 2 of 3 calls that reported"
    assert reported_cell([call(None), call(None)]) == "unknown (0 of 2 calls reported)"  # nothing to sum: unknown


def test_a_partly_reported_sum_over_repetitions_says_so() -> None:
    calls = [call(10), call(None), call(7) | {"repetition": 2}, call(None) | {"repetition": 2}]
    text = reported_cell(calls, reps=2)
    assert text == "unknown total; 17 over the 2 of 4 calls that reported, across 2 repetitions"


def test_retries_are_the_requests_beyond_each_calls_first_structured_output_refusals_aside() -> None:
    from harness.report.token_figures import RETRIES, kind_rows

    rest = {"chronology": "c", "policy": "p", "model": "m", "kind": "answer", "cached": False}
    rest |= {"estimate_tokens": 1, "tiktoken_tokens": 1, "reported_prompt_tokens": None}
    rest |= {"reported_completion_tokens": None, "invalid_reported_usage": None}
    calls = [  # (repetition, attempts, format_refusals)
        (1, 3, 0),  # two retries
        (1, 2, 1),  # a refused form, then the answer: no retry
        (1, 0, 0),  # from the cache: no request
        (2, 5, 0),  # four retries, then a failure (failed calls count too)
    ]
    frame = pd.DataFrame([rest | {"repetition": r, "attempts": a, "format_refusals": f} for r, a, f in calls])
    (found,) = call_groups(frame).of("c").values()
    assert (found[0].low[RETRIES], found[0].high[RETRIES], found[0].total[f"known {RETRIES}"]) == (2, 4, 4)
    (row,) = kind_rows("p", "", found, 2)
    assert row[2] == "2–4"  # per repetition, beside the calls


def test_retries_are_unknown_where_results_do_not_record_attempts() -> None:
    from harness.report.token_figures import kind_rows

    rest = {"chronology": "c", "policy": "p", "model": "m", "repetition": 1, "kind": "answer", "cached": False}
    rest |= {"estimate_tokens": 1, "tiktoken_tokens": 1, "reported_prompt_tokens": None}
    (found,) = call_groups(pd.DataFrame([rest | {"reported_completion_tokens": None}])).of("c").values()
    assert kind_rows("p", "", found, 1)[0][2] == "unknown"


def test_reported_counts_are_judged_only_where_reported_and_missing_ones_are_no_count() -> None:
    """The header's count of calls that reported usage and the token table read one judgement."""
    from harness.report.token_figures import SUMMED, call_counts

    column = pd.Series([None, 12, 12.0, -3, "7", [1], float("nan"), 2**40], index=range(10, 18), dtype=object)
    calls = pd.DataFrame({field: pd.Series([None] * len(column), index=column.index, dtype=object) for field in SUMMED})
    calls["reported_prompt_tokens"] = column
    found = call_counts(calls)["known reported_prompt_tokens"].astype(bool)
    assert list(found.index) == list(column.index)
    # missing, 12, 12.0 | negative, a string, a list, NaN, beyond MAX_TOKENS: no count
    assert found.tolist() == [False, True, True, False, False, False, False, False]


def test_figures_sum_each_repetition_over_kinds_then_count_over_repetitions() -> None:
    """The `all` row adds a repetition's kinds before taking the least and largest; a kind's row
    and the cached calls stand apart; a repetition with an unknown count makes its sum unknown."""
    from harness.report.token_figures import EVERY_KIND, kind_rows

    def call(kind: str, repetition: int, tokens: int | None, cached: bool = False) -> dict:
        return {"chronology": "c", "policy": "p", "model": "m", "repetition": repetition, "kind": kind} | {
            "cached": cached,
            "estimate_tokens": tokens,
            "tiktoken_tokens": 1,
            "reported_prompt_tokens": None,
            "reported_completion_tokens": None,
            "invalid_reported_usage": None,
        }

    calls = [call("answer", 1, 10), call("writer", 1, 5), call("answer", 2, 30), call("answer", 2, 1, cached=True)]
    calls += [call("summarizer", 3, None), call("answer", 3, 2)]
    (found,) = call_groups(pd.DataFrame(calls)).of("c").values()
    assert [(f.cached, f.kind) for f in found] == [
        (False, EVERY_KIND),
        (False, "answer"),
        (False, "writer"),
        (False, "summarizer"),
        (True, EVERY_KIND),
        (True, "answer"),
    ]
    every = found[0]
    assert (every.low["calls"], every.high["calls"], every.total["calls"]) == (1, 2, 5)
    assert (every.low["estimate_tokens"], every.high["estimate_tokens"]) == (2, 30)
    assert every.unknown["estimate_tokens"] == 1  # repetition 3: the summarizer's count is unknown
    rows = kind_rows("p", "", [f for f in found if not f.cached], 3)
    assert [[row[1], row[3]] for row in rows] == [  # calls, estimate
        ["all: 1–2 per repetition ×3", "unknown"],
        ["answer: 1 per repetition ×3", "2–30"],
        ["summarizer: 1 per repetition ×3", "unknown"],
        ["writer: 1 per repetition ×3", "5"],
    ]
