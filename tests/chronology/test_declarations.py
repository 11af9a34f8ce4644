"""The one reader of declarations, and the text it does not read as one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.chronology.declarations import ALLOWED_KEYS, near_misses, parse_declarations


@pytest.mark.parametrize(
    ("text", "key", "before"),
    [
        ("Sorry, I misread the tag. version=4.2.1", "version", "Sorry, I misread the tag."),
        ("module=Billing; we also use database=Oracle", "database", "we also use"),
        ("Note:\nplease set environment=staging", "environment", "please set"),
    ],
)
def test_prose_before_a_declaration_is_a_near_miss(text: str, key: str, before: str) -> None:
    [miss] = near_misses(text)
    assert (miss.key, miss.before) == (key, before)
    assert key not in parse_declarations(text)
    assert f"put {key}=... after a ';' or on its own line" in miss.advice()


@pytest.mark.parametrize(
    "text",
    ["module=Billing; database=SQL Server 2022", "Is it version=4.2.1?", "my-module=x", "colour=red", "version= "],
)
def test_declarations_questions_and_other_keys_are_no_near_miss(text: str) -> None:
    assert near_misses(text) == []


@given(
    st.lists(
        st.tuples(st.sampled_from(ALLOWED_KEYS), st.from_regex(r"[A-Za-z0-9 .]{1,12}", fullmatch=True)),
        min_size=1,
        max_size=5,
    ),
    st.sampled_from(["; ", "\n", ";"]),
)
def test_segments_that_are_declarations_are_read_and_never_near_misses(pairs, separator) -> None:
    text = separator.join(f"{key}={value}" for key, value in pairs)
    expected = {key: value.strip() for key, value in pairs if value.strip()}
    assert {k: d.value for k, d in parse_declarations(text).items()} == expected
    assert near_misses(text) == []
