"""Server-side compaction as the emulator performs it: the summary, its block, and the rules a
compaction block sent back must meet.

Anthropic documents compaction at https://platform.claude.com/docs/en/build-with-claude/compaction;
the shapes are the SDK's (`BetaCompactionBlock`: `content` readable, null when the compaction
failed; `signature` "to be sent back with the block verbatim"; `BetaCompactionConfigParam` for the
on-demand form, whose block "a later request sends back first in `messages`").

- **The summary** (`summarize`): the reference summarizer (`harness.models.reference_summary`)
  merges, in order, the text of every user message, tool result and `system` message of the
  window (a previous compaction's summary first), as the `summary` policy merges turns. So a
  system message inside the summarised range is summarised like any statement, and stops applying
  as a system message (it lies before the block). Assistant text is generated text and is never
  summarised, as for every reference summary. `instructions` that state a cap ("in at most N
  characters") bound it (`stated_cap`'s pattern); else it is bound by `DEFAULT_SUMMARY_CHARS`. The text then passes through the request's
  model as a `summarizer` call, so `reference:lossy` degrades it as it degrades any summary.
- **The block's signature** (`sign`): a digest of the summary and of how it was made
  (`threshold` or `on-demand`), so a block whose summary was edited is refused (400), and an
  on-demand block is known wherever it is sent.
- **Where a block may stand** (`check_blocks`): first in its assistant message, once per message,
  never sent twice; an on-demand block only as the first block of the first message. Anything
  else answers 400 `invalid_request_error`, as the documented "misplaced or duplicate compaction
  block" does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from harness.base.messages import Message
from harness.emulate.anthropic_view import emulated_turn
from harness.emulate.anthropic_wire import ApiMessage, Compaction, invalid
from harness.models import CallRequest, Model
from harness.models.reference_summary import CAP_RE, reference_summary

THRESHOLD = "threshold"
ON_DEMAND = "on-demand"
SIGNATURE_PREFIX = "harness-emulate"
SUMMARIZER_PROMPT = "Summarize the conversation so far for a model that will continue it without it."
SUMMARISED_ROLES = ("user", "tool", "system")
# A summary's length when the instructions state no cap: a compaction writes a few thousand tokens
# (the SDK's usage docstring: "a compaction that closes a ~200k-token context can report only a
# few thousand tokens"), never the context it closes.
DEFAULT_SUMMARY_CHARS = 8_000


def sign(content: str, kind: str) -> str:
    """The signature of a block holding `content`, made by a `kind` compaction."""
    digest = hashlib.sha256(f"{kind}\n{content}".encode()).hexdigest()[:32]
    return f"{SIGNATURE_PREFIX}.{kind}.{digest}"


def kind_of(block: Compaction, where: str) -> str:
    """How a block sent back was made (`threshold` when it carries no signature); 400 when its
    signature is not one the emulator wrote over this content."""
    if block.signature is None or block.content is None:
        return THRESHOLD
    for kind in (THRESHOLD, ON_DEMAND):
        if block.signature == sign(block.content, kind):
            return kind
    raise invalid(
        f"{where}: the compaction block's signature does not match its content; send the block back unchanged"
    )


def check_blocks(messages: Sequence[ApiMessage]) -> None:
    """The placement rules of compaction blocks sent back (see the module docstring)."""
    seen: dict[str, str] = {}
    for index, message in enumerate(messages):
        at = [i for i, b in enumerate(message.blocks) if isinstance(b, Compaction)]
        if len(at) > 1:
            raise invalid(f"messages.{index}: duplicate compaction blocks: a message holds at most one, first")
        if not at:
            continue
        where = f"messages.{index}.content.{at[0]}"
        if at[0] != 0:
            raise invalid(f"{where}: misplaced compaction block: it must be the first block of its message")
        block = message.blocks[0]
        assert isinstance(block, Compaction)
        if kind_of(block, where) == ON_DEMAND and index != 0:
            raise invalid(
                f"{where}: misplaced compaction block: a block from on-demand compaction must come first in messages"
            )
        if block.signature is not None:
            if block.signature in seen:
                raise invalid(f"{where}: duplicate compaction block: the same block is also at {seen[block.signature]}")
            seen[block.signature] = where


def summarize(model: Model, messages: Sequence[Message], instructions: str | None) -> str:
    """The summary of `messages` (the window as harness messages, the top-level `system` left out:
    it is not summarised and keeps applying) written by `model` as a
    `summarizer` call whose deterministic reply is the reference summary."""
    cap_match = CAP_RE.search(instructions or "")
    cap = int(cap_match.group(1)) if cap_match else DEFAULT_SUMMARY_CHARS
    summary: str | None = None
    for message in messages:
        if message.origin == "summary" and summary is None:
            summary = message.content
        elif message.role in SUMMARISED_ROLES:
            summary = reference_summary(summary, message.content, max_chars=cap)
    text = summary or ""
    prompt = (Message("system", instructions or SUMMARIZER_PROMPT), Message("user", transcript(messages)))
    request = CallRequest("summarizer", prompt, emulated_turn(), reference=lambda _: text)
    return model.complete(request).text


def transcript(messages: Sequence[Message]) -> str:
    """The window as the summarizer's request shows it: one `role: text` paragraph a message."""
    return "\n\n".join(f"{m.role}: {m.text}" for m in messages)
