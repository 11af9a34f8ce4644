"""Provider-reported token usage, and what counts as a token count.

An endpoint reports usage as JSON, and nothing guarantees that it is sane: `10**30` fits
neither SQLite nor pandas' integers, a negative count would be summed into totals, and `"12"`
or `12.0` is not a count. A reported value is a **token count** when it is a JSON integer
(not a boolean) from 0 to `MAX_TOKENS` (`harness.base.counts`, the rule the report applies too). Any other reported value is **invalid**: the call keeps
it raw (as JSON text, shortened) in `Usage.invalid`, and the field counts as unknown everywhere,
exactly like a field the endpoint left out. A field reported as null or not at all is unknown
and not invalid.

Prompt-cache counts are read under whichever of the providers' names the body holds
(`CACHE_NAMES`, the first present wins): tokens of the prompt served from the provider's prompt
cache (`cached_input`) and tokens written to it (`cache_write`). An endpoint that names neither
leaves them unknown (None), never 0: a reported 0 says the cache served nothing, an absent
name says nothing at all. In a chat-completions body both are counted inside `prompt_tokens`
(OpenAI's convention, which OpenAI-compatible gateways passing Anthropic's names keep).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.base.counts import is_token_count
from harness.base.json_bounded import LongNumber

MAX_RAW_CHARS = 100  # an invalid value is kept raw, up to this many characters
FIELDS = ("prompt_tokens", "completion_tokens")
# Where each prompt-cache count may be, as a path of keys under `usage`: OpenAI's chat
# completions (`prompt_tokens_details`), its Responses API (`input_tokens_details`), OpenRouter's
# and others' `cache_write_tokens`, and Anthropic's names.
CACHE_NAMES: dict[str, tuple[tuple[str, ...], ...]] = {
    "cached_input": (
        ("prompt_tokens_details", "cached_tokens"),
        ("input_tokens_details", "cached_tokens"),
        ("cache_read_input_tokens",),
    ),
    "cache_write": (
        ("prompt_tokens_details", "cache_write_tokens"),
        ("cache_write_tokens",),
        ("cache_creation_input_tokens",),
    ),
}


@dataclass(frozen=True)
class Usage:
    """Token usage as the provider reported it; a field it did not report, or reported invalid, is None.

    `invalid` maps a field (or `usage`, when the whole value was not an object) to the raw value
    the provider sent, as JSON text.
    """

    prompt_tokens: int | None
    completion_tokens: int | None
    invalid: Mapping[str, str] = field(default_factory=dict, hash=False)  # hashable Usage all the same
    cached_input: int | None = None  # of prompt_tokens: served from the provider's prompt cache
    cache_write: int | None = None  # of prompt_tokens: written to the provider's prompt cache

    def __post_init__(self) -> None:
        for name in (*FIELDS, *CACHE_NAMES):
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
        counts[name] = _count(usage, (name,), invalid)
    for name, paths in CACHE_NAMES.items():
        found = [path for path in paths if _found(usage, path) is not None]
        counts[name] = _count(usage, found[0], invalid) if found else None
    if all(v is None for v in counts.values()) and not invalid:
        return None
    return Usage(invalid=invalid, **counts)


def _found(usage: dict[str, object], path: tuple[str, ...]) -> object:
    """The value at `path` under `usage`; None when a key is absent or a parent is no object."""
    value: object = usage
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _count(usage: dict[str, object], path: tuple[str, ...], invalid: dict[str, str]) -> int | None:
    """The token count at `path`, or None; a value that is no count is kept raw in `invalid`
    under its dotted path."""
    value = _found(usage, path)
    if value is None or is_token_count(value):
        return value  # type: ignore[return-value]
    invalid[".".join(path)] = raw_text(value)
    return None


def raw_text(value: object) -> str:
    """A reported value as JSON text, shortened to MAX_RAW_CHARS."""
    try:  # a number too long to read (json_bounded's LongNumber) is shown as the number it was
        text = str(value) if isinstance(value, LongNumber) else json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= MAX_RAW_CHARS else text[: MAX_RAW_CHARS - 1] + "…"
