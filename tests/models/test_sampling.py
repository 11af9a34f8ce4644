"""Generation caps per call kind: defaults, `--max-tokens N` and `KIND=N`, and clear errors."""

from __future__ import annotations

import pytest

from harness.base.errors import InputError
from harness.models.sampling import DEFAULT_MAX_TOKENS, Sampling, parse_max_tokens


def test_every_kind_has_a_default_cap_and_a_plug_in_role_takes_the_answers() -> None:
    sampling = Sampling()
    assert {k: sampling.cap(k) for k in DEFAULT_MAX_TOKENS} == {
        "answer": 512,
        "summarizer": 256,
        "writer": 384,
        "judge": 48,
    }
    assert sampling.cap("note-taker") == 512


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ((), DEFAULT_MAX_TOKENS),
        (("300",), {"answer": 300, "summarizer": 300, "writer": 300, "judge": 300}),
        (("judge=32",), {**DEFAULT_MAX_TOKENS, "judge": 32}),
        (
            ("200", "judge=32", "note-taker=64"),
            {"answer": 200, "summarizer": 200, "writer": 200, "judge": 32, "note-taker": 64},
        ),
    ],
)
def test_max_tokens_options_apply_in_order(given: tuple[str, ...], expected: dict[str, int]) -> None:
    assert parse_max_tokens(given) == expected


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("judge=abc", "expected N or KIND=N"),
        ("=12", "name the call kind"),
        ("answer=0", "at least 1 token"),
    ],
)
def test_a_bad_cap_names_the_option_and_the_fix(given: str, says: str) -> None:
    with pytest.raises(InputError, match=says) as caught:
        parse_max_tokens((given,))
    assert f"--max-tokens {given}" in str(caught.value)
