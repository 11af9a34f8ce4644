"""The one reader of outside JSON: bounded in digits and depth, every refusal a located
`json.JSONDecodeError` (never a plain ValueError or a RecursionError)."""

from __future__ import annotations

import json

import pytest

from harness.base.json_bounded import MAX_DEPTH, MAX_DIGITS, JsonBounded, LongNumber, loads, raw_decode

REFUSED = {
    "an integer of 5,000 digits": ('{"n": ' + "9" * 5_000 + "}", "a number of 5,000 characters", 6),
    "a float of 200 digits": ("[1, 0." + "1" * 200 + "]", "a number of 202 characters", 4),
    "arrays 100,000 deep": ("[" * 100_000 + "]" * 100_000, f"arrays or objects nested more than {MAX_DEPTH}", 200),
    "objects 100,000 deep": ('{"a":' * 100_000 + "1" + "}" * 100_000, "more than 200 deep", 1000),
    "arrays one past the bound": ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "more than 200 deep", 200),
}


@pytest.mark.parametrize("text, says, position", REFUSED.values(), ids=REFUSED)
def test_beyond_a_bound_is_one_located_refusal(text: str, says: str, position: int) -> None:
    with pytest.raises(JsonBounded) as refused:
        loads(text, what="the file")
    assert refused.value.msg.startswith("the file: ") and says in refused.value.msg
    assert refused.value.pos == position and refused.value.lineno == 1
    assert isinstance(refused.value, json.JSONDecodeError)  # every caller already locates that


ACCEPTED = {
    "the deepest nesting read": "[" * MAX_DEPTH + "]" * MAX_DEPTH,
    "the longest number read": "9" * MAX_DIGITS,
    "brackets inside strings count for nothing": json.dumps(["[" * 1000, '\\"{{{', "]" * 5]),
    "bytes, as json.loads reads them": b'{"a": [1, 2.5, -3e4]}',
}


@pytest.mark.parametrize("text", ACCEPTED.values(), ids=ACCEPTED)
def test_within_the_bounds_reads_as_json_does(text: str | bytes) -> None:
    assert loads(text, what="x") == json.loads(text)


def test_a_number_too_long_may_be_kept_as_its_text() -> None:
    value = loads('{"prompt_tokens": ' + "1" * 500 + "}", what="x", keep_long_numbers=True)
    assert value["prompt_tokens"] == "1" * 500 and isinstance(value["prompt_tokens"], LongNumber)


def test_without_a_depth_bound_the_interpreter_limit_is_still_a_refusal() -> None:
    assert loads("[" * 900 + "]" * 900, what="x", max_depth=None) is not None
    with pytest.raises(JsonBounded):
        loads("[" * 100_000 + "]" * 100_000, what="x", max_depth=None)


def test_a_size_limit_refuses_before_reading() -> None:
    with pytest.raises(JsonBounded, match="is 12 characters, over the 10 read"):
        loads('"0123456789"', what="x", limit=10)


def test_raw_decode_bounds_only_the_value_it_reads() -> None:
    text = "[1] " + "[" * 300  # a buffer whose rest is not read yet
    assert raw_decode(text, 0, what="x") == ([1], 3)


def test_other_faults_stay_json_s_own() -> None:
    with pytest.raises(json.JSONDecodeError, match="Extra data") as fault:
        loads("[1] 2", what="x")
    assert not isinstance(fault.value, JsonBounded)
