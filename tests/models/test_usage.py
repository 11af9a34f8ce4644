"""Provider-reported usage: what counts as a token count (the report's sums: tests/report/test_token_figures.py)."""

from __future__ import annotations

import math

import pytest

from harness.models.usage import MAX_RAW_CHARS, MAX_TOKENS, Usage, parse_usage, recorded_count


@pytest.mark.parametrize(
    ("value", "count"),
    [
        (12, 12),
        (12.0, 12),
        (0, 0),
        (MAX_TOKENS, MAX_TOKENS),
        (None, None),
        (-20, None),
        (-20.0, None),
        (10**30, None),
        (1e30, None),
        (12.5, None),
        (math.nan, None),
        (math.inf, None),
        ("12", None),
        (True, None),
    ],
)
def test_a_recorded_value_counts_only_when_it_is_a_sane_token_count(value, count) -> None:
    assert recorded_count(value) == count


def test_usage_refuses_a_count_that_is_not_one() -> None:
    with pytest.raises(ValueError, match="not a token count"):
        Usage(-1, 3)
    assert Usage(None, 3, {"prompt_tokens": "-1"}).invalid == {"prompt_tokens": "-1"}


def test_a_long_raw_value_is_kept_shortened() -> None:
    usage = parse_usage({"prompt_tokens": "9" * 5000})
    assert usage is not None and usage.prompt_tokens is None
    assert len(usage.invalid["prompt_tokens"]) == MAX_RAW_CHARS and usage.invalid["prompt_tokens"].endswith("…")
