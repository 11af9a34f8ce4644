"""Sampling settings and generation caps, per call kind (`--temperature`, `--top-p`, `--max-tokens`).

A reply without a cap can run to thousands of tokens on a small model (a judge wrote 3,688),
so every kind of call has a default cap, and `--max-tokens` changes it: `--max-tokens 300`
sets every kind, `--max-tokens answer=512` one kind (repeatable; later options win). A role
a plug-in names (not in the table) takes the answer's cap. A reply cut by the cap comes back
with `finish_reason: length`, recorded per call and flagged in the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.base.errors import InputError

# Defaults: an answer of a few paragraphs; a summary just past the summary policy's 700-character
# cap (so an over-long one is still seen as too long); a writer's five facts with evidence; a
# judge's one-word verdict in JSON, with room for a short preamble.
DEFAULT_MAX_TOKENS: Mapping[str, int] = {"answer": 512, "summarizer": 256, "writer": 384, "judge": 48}


@dataclass(frozen=True)
class Sampling:
    """What the endpoint is asked besides the messages (the seed is the run's `--seed`); recorded in
    the manifest and, through the model's identity, in every cache key."""

    temperature: float = 0.0
    top_p: float | None = None  # None: not sent (the endpoint's default)
    max_tokens: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_MAX_TOKENS))

    def cap(self, kind: str) -> int | None:
        """The token cap of a call of `kind`; a role not listed takes the answer's."""
        return self.max_tokens.get(kind, self.max_tokens.get("answer"))

    def as_record(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": dict(sorted(self.max_tokens.items())),
        }


def parse_max_tokens(values: tuple[str, ...]) -> dict[str, int]:
    """`--max-tokens` options over the defaults: `N` sets every kind, `KIND=N` one kind."""
    caps = dict(DEFAULT_MAX_TOKENS)
    for value in values:
        kind, eq, number = value.rpartition("=")
        option = f"--max-tokens {value}"
        if eq and not kind.strip():
            raise InputError(f"{option}: name the call kind before '=', e.g. --max-tokens answer=512")
        try:
            n = int(number)
        except ValueError:
            raise InputError(
                f"{option}: expected N or KIND=N with a whole number N, e.g. --max-tokens judge=32"
            ) from None
        if n < 1:
            raise InputError(f"{option}: a cap must be at least 1 token")
        if eq:
            caps[kind.strip()] = n
        else:
            caps = {k: n for k in caps}
    return caps
