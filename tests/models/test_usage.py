"""Provider-reported usage, read by the rule of tests/base/test_counts.py."""

from __future__ import annotations

import pytest

from harness.models.usage import MAX_RAW_CHARS, Usage, parse_usage


def test_usage_refuses_a_count_that_is_not_one() -> None:
    with pytest.raises(ValueError, match="not a token count"):
        Usage(-1, 3)
    assert Usage(None, 3, {"prompt_tokens": "-1"}).invalid == {"prompt_tokens": "-1"}


def test_a_long_raw_value_is_kept_shortened() -> None:
    usage = parse_usage({"prompt_tokens": "9" * 5000})
    assert usage is not None and usage.prompt_tokens is None
    assert len(usage.invalid["prompt_tokens"]) == MAX_RAW_CHARS and usage.invalid["prompt_tokens"].endswith("…")


@pytest.mark.parametrize(
    ("usage", "cached", "written"),
    [
        ({"prompt_tokens": 900, "prompt_tokens_details": {"cached_tokens": 768}}, 768, None),  # OpenAI chat
        ({"prompt_tokens": 900, "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 900}}, 0, 900),
        ({"input_tokens_details": {"cached_tokens": 512}}, 512, None),  # OpenAI Responses
        ({"prompt_tokens": 9, "cache_read_input_tokens": 7, "cache_creation_input_tokens": 2}, 7, 2),  # Anthropic's
        ({"prompt_tokens": 9, "cache_write_tokens": 4}, None, 4),
        ({"prompt_tokens": 9, "completion_tokens": 1}, None, None),  # not reported: unknown, never 0
        ({"prompt_tokens": 9, "prompt_tokens_details": {"audio_tokens": 0}}, None, None),
    ],
    ids=["openai", "openai-write", "responses", "anthropic", "write-only", "absent", "details-without-cache"],
)
def test_prompt_cache_counts_are_read_under_either_providers_names(usage, cached, written) -> None:
    found = parse_usage(usage)
    assert found is not None and (found.cached_input, found.cache_write) == (cached, written)


def test_a_prompt_cache_count_that_is_no_count_is_unknown_and_kept_raw() -> None:
    found = parse_usage({"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": -3}})
    assert found == Usage(9, None, {"prompt_tokens_details.cached_tokens": "-3"})
    assert parse_usage({"cache_read_input_tokens": 5}) == Usage(
        None, None, cached_input=5
    )  # a cache count alone is usage
