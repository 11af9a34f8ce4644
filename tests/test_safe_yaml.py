"""Composing YAML within limits: what a chronology may use is kept, what would hang is refused."""

from __future__ import annotations

import pytest

from harness.safe_yaml import MAX_DEPTH, MAX_TEXT, MAX_VALUES, YamlRefused, compose


def refusal(text: str) -> tuple[int | None, str]:
    with pytest.raises(YamlRefused) as caught:
        compose(text)
    return caught.value.line, caught.value.message


def test_aliases_share_text_and_build_the_same_values() -> None:
    _, value = compose("m: &m never restart production\nturns:\n  - user: *m\n  - user: *m\n")
    assert value == {"m": "never restart production", "turns": [{"user": "never restart production"}] * 2}


def test_nesting_up_to_the_limit_is_kept_one_more_level_is_refused() -> None:
    _, value = compose("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    for _ in range(MAX_DEPTH - 1):
        [value] = value
    assert value == []
    assert refusal("x: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH)[0] == 1  # the mapping is a level too


def test_expanded_values_are_counted_through_aliases() -> None:
    def text(uses: int) -> str:  # `a` is 11 values (a list of ten), `b` lists it `uses` times
        return "a: &a [" + ", ".join("x" * 10) + "]\nb: [" + ", ".join(["*a"] * uses) + "]\n"

    compose(text(MAX_VALUES // 11 - 1))  # 49,999 values in all: kept
    line, message = refusal(text(MAX_VALUES // 11 + 1))  # `b` alone is 50,007
    assert (line, message.split(";")[0]) == (
        2,
        f"aliases expand this value to more than {MAX_VALUES:,} keys and values",
    )


def test_expanded_characters_are_counted_through_aliases() -> None:
    text = f"s: &s {'x' * (MAX_TEXT // 4)}\nl: [*s, *s, *s, *s, *s]\n"
    assert refusal(text) == (
        2,
        f"aliases expand this value to more than {MAX_TEXT:,} characters; write it out, or use fewer aliases",
    )


def test_an_alias_to_a_finished_sibling_is_not_recursive() -> None:
    _, value = compose("a: &a [x]\nb: &b [*a, *a]\nc: [*b]\n")
    assert value["c"] == [[["x"], ["x"]]]
