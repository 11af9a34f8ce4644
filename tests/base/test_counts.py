"""What counts as a token count, read back from results (the report's sums:
tests/report/test_token_figures.py)."""

from __future__ import annotations

import math

import pytest

from harness.base.counts import MAX_TOKENS, recorded_count


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
