"""The failures an emulated OpenAI endpoint can be switched to reproduce, each documented where
people met it. `--fault NAME` acts on every request it applies to; `--fault NAME:N` on the first N.

The emulator always validates as the provider does: a tool output without its call, or a call
without its output, is refused whatever the switches (that refusal is what a client meets in
openai-agents-python #2317). The switches make the emulated model or server behave so that a
client's mistake, or the provider's own failure, happens:
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.base.errors import InputError
from harness.base.text import excerpt

FAULTS: dict[str, str] = {
    "unanswered-tool-call": (
        "the model answers a request that declares a function tool with a call to the first one, so a "
        "compaction asked for before the tool's output is sent meets the provider's 400 \"No tool output "
        'found for function call ..." (openai-agents-python #2317)'
    ),
    "orphaned-message-ids": (
        "the model emits a reasoning item before its message, and /responses/compact strips the reasoning "
        "but keeps the assistant messages with their ids, as gpt-5.4 did; a history replaying them is refused "
        "with a 400 on every later request (openai-agents-python #2727)"
    ),
    "rate-limit": "429 rate_limit_exceeded with a Retry-After header of 1 second",
    "server-error": "500 server_error",
    "overloaded": "503: the engine is overloaded",
    "no-usage": "responses carry no usage (null): a client must record it as unknown, never 0",
}
STATUS_FAULTS = ("rate-limit", "server-error", "overloaded")  # refused before the request is read
RETRY_AFTER_SECONDS = 1
SPEC = re.compile(r"^([a-z-]+)(?::([1-9][0-9]{0,5}))?$")


@dataclass(frozen=True)
class Fault:
    """A switch: its name, and how many requests it acts on (None: every one)."""

    name: str
    count: int | None = None


def parse_fault(spec: str, option: str = "--fault") -> Fault:
    """`NAME` or `NAME:N`, checked against `FAULTS`; InputError naming the known ones otherwise."""
    match = SPEC.match(spec.strip())
    if match is None or match.group(1) not in FAULTS:
        known = ", ".join(FAULTS)
        raise InputError(f"{option} {excerpt(spec)}: unknown fault; use NAME or NAME:N with NAME one of {known}")
    return Fault(match.group(1), int(match.group(2)) if match.group(2) else None)


def parse_faults(specs: Sequence[str | Fault]) -> tuple[Fault, ...]:
    """Each fault once: the same name twice would leave its count ambiguous."""
    faults = tuple(spec if isinstance(spec, Fault) else parse_fault(spec) for spec in specs)
    names = [fault.name for fault in faults]
    for name in set(names):
        if names.count(name) > 1:
            raise InputError(f"--fault {name} is given twice; give it once (NAME:N for its first N requests)")
    return faults


def error_for(name: str) -> tuple[int, str, str, str | None, dict[str, str]]:
    """A status fault's reply: (status, message, type, code, headers), worded as OpenAI words them."""
    if name == "rate-limit":
        message = "Rate limit reached for requests. Please try again in 1s."
        return 429, message, "requests", "rate_limit_exceeded", {"retry-after": str(RETRY_AFTER_SECONDS)}
    if name == "server-error":
        return 500, "The server had an error while processing your request. Sorry about that!", "server_error", None, {}
    return 503, "The engine is currently overloaded, please try again later.", "server_error", None, {}
