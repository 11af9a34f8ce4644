"""Provider-reported token usage, and what counts as a token count.

An endpoint reports usage as JSON, and nothing guarantees that it is sane: `10**30` fits
neither SQLite nor pandas' integers, a negative count would be summed into totals, and `"12"`
or `12.0` is not a count. A reported value is a **token count** when it is a JSON integer
(not a boolean) from 0 to `MAX_TOKENS`. Any other reported value is **invalid**: the call keeps
it raw (as JSON text, shortened) in `Usage.invalid`, and the field counts as unknown everywhere,
exactly like a field the endpoint left out. A field reported as null or not at all is unknown
and not invalid.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.base.json_bounded import LongNumber

MAX_TOKENS = 10**9  # a billion tokens in one call is far beyond any context window
MAX_RAW_CHARS = 100  # an invalid value is kept raw, up to this many characters
FIELDS = ("prompt_tokens", "completion_tokens")


def is_token_count(value: object) -> bool:
    """True for an integer (not a bool) from 0 to MAX_TOKENS."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS


@dataclass(frozen=True)
class Usage:
    """Token usage as the provider reported it; a field it did not report, or reported invalid, is None.

    `invalid` maps a field (or `usage`, when the whole value was not an object) to the raw value
    the provider sent, as JSON text.
    """

    prompt_tokens: int | None
    completion_tokens: int | None
    invalid: Mapping[str, str] = field(default_factory=dict, hash=False)  # hashable Usage all the same

    def __post_init__(self) -> None:
        for name in FIELDS:
            value = getattr(self, name)
            if value is not None and not is_token_count(value):
                raise ValueError(f"Usage.{name}={value!r}: not a token count; record it in `invalid`")


def parse_usage(usage: object) -> Usage | None:
    """A chat-completions `usage` value -> Usage; None when the endpoint reported nothing."""
    if usage is None:
        return None
    if not isinstance(usage, dict):
        return Usage(None, None, {"usage": raw_text(usage)})
    counts: dict[str, int | None] = {}
    invalid: dict[str, str] = {}
    for name in FIELDS:
        value = usage.get(name)
        counts[name] = value if is_token_count(value) else None
        if value is not None and counts[name] is None:
            invalid[name] = raw_text(value)
    if all(v is None for v in counts.values()) and not invalid:
        return None
    return Usage(counts["prompt_tokens"], counts["completion_tokens"], invalid)


def raw_text(value: object) -> str:
    """A reported value as JSON text, shortened to MAX_RAW_CHARS."""
    try:  # a number too long to read (json_bounded's LongNumber) is shown as the number it was
        text = str(value) if isinstance(value, LongNumber) else json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= MAX_RAW_CHARS else text[: MAX_RAW_CHARS - 1] + "…"


def recorded_count(value: object) -> int | None:
    """A token count read back from results (pandas may give 12.0 for 12); None unless valid.

    Results written before usage was checked can hold negative or huge counts: they count as
    unknown, like today's invalid ones.
    """
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and is_token_count(value) else None
