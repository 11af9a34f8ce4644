"""How well the local tokenizer counts a model's tokens: provider-reported prompt tokens over the
tiktoken count of the same requests, flagged with what it means when far from 1."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.report import tokenizer_fit
from harness.report.token_figures import call_counts
from harness.report.tokenizer_fit import HIGH, LOW, fit_caveats


def calls(*rows: tuple[str | None, int | None, int | None]) -> pd.DataFrame:
    """Calls as (call_model, tiktoken_tokens, reported_prompt_tokens)."""
    return pd.DataFrame(
        [
            {"call_model": m, "tiktoken_tokens": t, "reported_prompt_tokens": r, "reported_completion_tokens": None}
            | {"estimate_tokens": 1, "invalid_reported_usage": None}
            for m, t, r in rows
        ]
    )


def ratios(frame: pd.DataFrame) -> dict[str, tuple[float, int]]:
    return tokenizer_fit.ratios(tokenizer_fit.prompt_sums(frame, call_counts(frame)))


def test_the_ratio_is_taken_over_the_calls_that_have_both_counts_per_model() -> None:
    frame = calls(("m", 100, 150), ("m", 300, 450), ("m", 100, None), ("m", None, 40), ("n", 50, 50), (None, 9, None))
    assert ratios(frame) == {"m": (1.5, 2), "n": (1.0, 1)}


def test_a_model_that_reported_nothing_has_no_ratio() -> None:
    assert ratios(calls(("m", 100, None))) == {}


@pytest.mark.parametrize("ratio, flagged", [(LOW, False), (HIGH, False), (1.0, False), (0.79, True), (1.26, True)])
def test_only_a_ratio_outside_the_range_is_flagged(ratio: float, flagged: bool) -> None:
    assert bool(fit_caveats({"m": (ratio, 4)}, "cl100k_base")) is flagged


def test_the_flag_says_what_the_ratio_means_and_labels_each_figure() -> None:
    (text,) = fit_caveats({"openai:m": (2.4, 12)}, "cl100k_base")
    assert "openai:m" in text and "2.40×" in text and "12 calls" in text
    assert "provider-reported prompt tokens" in text and "tiktoken (cl100k_base)" in text
    assert f"{LOW}–{HIGH}" in text and "another tokenizer" in text and "not its token counts" in text
