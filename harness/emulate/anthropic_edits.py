"""Anthropic's context management parameters, read and validated, and the context edits applied.

Shapes from the SDK's types (`BetaContextManagementConfigParam`, SDK 2.10.0): `edits` is a list of
`clear_tool_uses_20250919` (`BetaClearToolUses20250919EditParam`), `clear_thinking_20251015`
(`BetaClearThinking20251015EditParam`) and `compact_20260112` (`BetaCompact20260112EditParam`);
the on-demand `compaction: {type: "summarize"}` is `BetaCompactionConfigParam`. Each needs its
beta in the `anthropic-beta` header (`BETA_*`), as the API's beta features do.

Edits run on the request before the model reads it; the client keeps its history whole
(Context editing, https://platform.claude.com/docs/en/build-with-claude/context-editing):

- `clear_tool_uses_20250919`: once the window's input tokens exceed `trigger` (default 100,000
  input tokens; or `{type: tool_uses}`, its tool uses exceed the value), every tool use older than
  the `keep` most recent (default 3) is cleared, oldest first, except those of `exclude_tools`
  (`harness.emulate.anthropic_clearing.uses_to_clear`, the rule the client-side policy shares); a
  cleared result's text becomes the placeholder, and with `clear_tool_inputs` (true, or a list of
  tool names) the cleared uses' inputs become `{}`. If it would free fewer than `clear_at_least`
  input tokens, nothing is cleared. Reported as `{type, cleared_tool_uses, cleared_input_tokens}`.
- `clear_thinking_20251015`: thinking blocks are removed from every assistant turn but the `keep`
  most recent with thinking (`{type: thinking_turns, value}`, default 1, or `"all"`); a turn is
  every assistant message between two user messages that carry text (a tool loop is one turn).
  Reported as `{type, cleared_thinking_turns, cleared_input_tokens}`. The documentation requires
  it to be listed first when combined with other edits, and the emulator refuses it otherwise.
  Without the edit thinking is kept whole (the default of current models, which the page gives
  per model family).

An edit that clears nothing is not reported in `applied_edits`. Token figures are the emulator's
estimate (`harness.emulate.anthropic_view.TOKEN_COUNTER`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.emulate.anthropic_clearing import PLACEHOLDER, uses_to_clear
from harness.emulate.anthropic_view import as_messages, input_tokens
from harness.emulate.anthropic_wire import ApiMessage, MessagesRequest, Text, Thinking, ToolResult, ToolUse, invalid

BETA_CONTEXT = "context-management-2025-06-27"
BETA_COMPACT = "compact-2026-01-12"
BETA_COMPACT_ON_DEMAND = "compact-2026-09-04"

CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
COMPACT = "compact_20260112"

DEFAULT_CLEAR_TRIGGER = 100_000
DEFAULT_KEEP_TOOL_USES = 3
DEFAULT_COMPACT_TRIGGER = 150_000  # `BetaCompact20260112EditParam.trigger`: "Defaults to 150000 input tokens."
MIN_COMPACT_TRIGGER = 50_000  # the smallest trigger the API takes (Compaction, "Parameters")


@dataclass(frozen=True)
class ClearToolUses:
    trigger_kind: str  # `input_tokens` or `tool_uses`
    trigger: int
    keep: int
    clear_at_least: int
    exclude: frozenset[str]
    clear_inputs: bool | frozenset[str]  # every cleared use's input, or those of the named tools


@dataclass(frozen=True)
class ClearThinking:
    keep: int | None  # None: "all"


@dataclass(frozen=True)
class Compact:
    """`compact_20260112`, or (`on_demand`) the `compaction` parameter, which compacts at once."""

    trigger: int
    pause: bool
    instructions: str | None
    on_demand: bool = False


@dataclass(frozen=True)
class Management:
    """The request's context management: its clearing edits in order, and its compaction if any."""

    clearing: tuple[ClearToolUses | ClearThinking, ...] = ()
    compact: Compact | None = None


def read_management(request: MessagesRequest) -> Management:
    """The request's `context_management` and `compaction`, validated, with the betas they need."""
    if request.compaction is not None:
        if request.context_management is not None:
            raise invalid("compaction: cannot be combined with context_management")
        return Management(compact=_on_demand(request.compaction, request.betas))
    if request.context_management is None:
        return Management()
    edits = request.context_management.get("edits", [])
    if not isinstance(edits, list):
        raise invalid("context_management.edits: a list of edits")
    if BETA_CONTEXT not in request.betas and any(isinstance(e, dict) and e.get("type") != COMPACT for e in edits):
        raise invalid(f"context_management: requires the beta header anthropic-beta: {BETA_CONTEXT}")
    clearing: list[ClearToolUses | ClearThinking] = []
    compact: Compact | None = None
    for index, edit in enumerate(edits):
        where = f"context_management.edits.{index}"
        kind = edit.get("type") if isinstance(edit, dict) else None
        if kind == CLEAR_TOOL_USES:
            clearing.append(_clear_tool_uses(edit, where))
        elif kind == CLEAR_THINKING:
            if index != 0:
                raise invalid(f"{where}: {CLEAR_THINKING} must be listed first in context_management.edits")
            clearing.append(_clear_thinking(edit, where))
        elif kind == COMPACT:
            if compact is not None:
                raise invalid(f"{where}: {COMPACT} is given twice: give it once")
            if BETA_COMPACT not in request.betas:
                raise invalid(f"{where}: {COMPACT} requires the beta header anthropic-beta: {BETA_COMPACT}")
            compact = _compact(edit, where)
        else:
            raise invalid(f"{where}.type: expected one of {CLEAR_TOOL_USES}, {CLEAR_THINKING}, {COMPACT}")
    return Management(tuple(clearing), compact)


def _on_demand(config: Mapping[str, Any], betas: frozenset[str]) -> Compact:
    if BETA_COMPACT_ON_DEMAND not in betas:
        raise invalid(f"compaction: requires the beta header anthropic-beta: {BETA_COMPACT_ON_DEMAND}")
    if config.get("type") != "summarize":
        raise invalid("compaction.type: Input should be 'summarize'")
    return Compact(0, pause=True, instructions=_instructions(config, "compaction"), on_demand=True)


def _compact(edit: Mapping[str, Any], where: str) -> Compact:
    trigger = DEFAULT_COMPACT_TRIGGER
    if edit.get("trigger") is not None:
        trigger = _amount(edit["trigger"], ("input_tokens",), f"{where}.trigger")[1]
        if trigger < MIN_COMPACT_TRIGGER:
            raise invalid(f"{where}.trigger.value: must be at least {MIN_COMPACT_TRIGGER} input tokens")
    pause = edit.get("pause_after_compaction", False)
    if not isinstance(pause, bool):
        raise invalid(f"{where}.pause_after_compaction: Input should be a valid boolean")
    return Compact(trigger, pause, _instructions(edit, where))


def _instructions(config: Mapping[str, Any], where: str) -> str | None:
    text = config.get("instructions")
    if text is not None and not isinstance(text, str):
        raise invalid(f"{where}.instructions: Input should be a valid string")
    return text if text and text.strip() else None  # empty or blank counts as absent (SDK docstring)


def _clear_tool_uses(edit: Mapping[str, Any], where: str) -> ClearToolUses:
    kind, trigger = "input_tokens", DEFAULT_CLEAR_TRIGGER
    if edit.get("trigger") is not None:
        kind, trigger = _amount(edit["trigger"], ("input_tokens", "tool_uses"), f"{where}.trigger")
    keep = DEFAULT_KEEP_TOOL_USES
    if edit.get("keep") is not None:
        keep = _amount(edit["keep"], ("tool_uses",), f"{where}.keep")[1]
    least = 0
    if edit.get("clear_at_least") is not None:
        least = _amount(edit["clear_at_least"], ("input_tokens",), f"{where}.clear_at_least")[1]
    exclude = edit.get("exclude_tools") or []
    if not isinstance(exclude, list) or not all(isinstance(n, str) for n in exclude):
        raise invalid(f"{where}.exclude_tools: a list of tool names")
    inputs = edit.get("clear_tool_inputs") or False
    if isinstance(inputs, list) and all(isinstance(n, str) for n in inputs):
        inputs = frozenset(inputs)
    elif not isinstance(inputs, bool):
        raise invalid(f"{where}.clear_tool_inputs: a boolean or a list of tool names")
    return ClearToolUses(kind, trigger, keep, least, frozenset(exclude), inputs)


def _clear_thinking(edit: Mapping[str, Any], where: str) -> ClearThinking:
    keep = edit.get("keep", {"type": "thinking_turns", "value": 1})
    if keep == "all" or (isinstance(keep, dict) and keep.get("type") == "all"):
        return ClearThinking(None)
    return ClearThinking(_amount(keep, ("thinking_turns",), f"{where}.keep")[1])


def _amount(raw: object, kinds: tuple[str, ...], where: str) -> tuple[str, int]:
    """A `{type, value}` amount of one of `kinds`, value a non-negative integer."""
    if not isinstance(raw, dict) or raw.get("type") not in kinds:
        raise invalid(f"{where}: expected {{type: {' or '.join(kinds)}, value}}")
    value = raw.get("value")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid(f"{where}.value: a non-negative integer")
    return raw["type"], value


# --- applying the clearing edits -----------------------------------------------------------------


@dataclass(frozen=True)
class Cleared:
    """The window after the clearing edits, and what the response reports of each applied one."""

    messages: tuple[ApiMessage, ...]
    applied: tuple[dict[str, Any], ...]


def apply_clearing(request: MessagesRequest, shown: Sequence[ApiMessage], management: Management) -> Cleared:
    """The clearing edits applied in the order given, each to the window the previous one left."""
    messages, applied = tuple(shown), []
    for edit in management.clearing:
        before = _tokens(request, messages)
        if isinstance(edit, ClearThinking):
            edited, count = _clear_thinking_turns(messages, edit)
            kind, name = CLEAR_THINKING, "cleared_thinking_turns"
        else:
            edited, count = _clear_uses(request, messages, edit)
            kind, name = CLEAR_TOOL_USES, "cleared_tool_uses"
        if count:
            applied.append({"type": kind, name: count, "cleared_input_tokens": before - _tokens(request, edited)})
            messages = edited
    return Cleared(messages, tuple(applied))


def _tokens(request: MessagesRequest, messages: Sequence[ApiMessage]) -> int:
    return input_tokens(as_messages(request.system, messages), request.tools)


def _clear_uses(
    request: MessagesRequest, messages: tuple[ApiMessage, ...], edit: ClearToolUses
) -> tuple[tuple[ApiMessage, ...], int]:
    uses = [b for m in messages for b in m.blocks if isinstance(b, ToolUse)]
    answered = {b.tool_use_id for m in messages for b in m.blocks if isinstance(b, ToolResult)}
    uses = [u for u in uses if u.id in answered]  # a use is a call and its result
    size = len(uses) if edit.trigger_kind == "tool_uses" else _tokens(request, messages)
    if size <= edit.trigger:
        return messages, 0
    chosen = [uses[i] for i in uses_to_clear([u.name for u in uses], edit.keep, edit.exclude)]
    if not chosen:
        return messages, 0
    ids = {u.id for u in chosen}
    inputs = {u.id for u in chosen if edit.clear_inputs is True or (edit.clear_inputs and u.name in edit.clear_inputs)}
    edited = tuple(
        ApiMessage(m.role, tuple(_cleared_block(b, ids, inputs) for b in m.blocks), m.clear_at) for m in messages
    )
    if _tokens(request, messages) - _tokens(request, edited) < edit.clear_at_least:
        return messages, 0
    return edited, len(chosen)


def _cleared_block(block: Any, ids: set[str], inputs: set[str]) -> Any:
    if isinstance(block, ToolResult) and block.tool_use_id in ids:
        return replace(block, content=PLACEHOLDER)
    if isinstance(block, ToolUse) and block.id in inputs:
        return replace(block, input={})
    return block


def _clear_thinking_turns(messages: tuple[ApiMessage, ...], edit: ClearThinking) -> tuple[tuple[ApiMessage, ...], int]:
    if edit.keep is None:
        return messages, 0
    turn, turns = 0, []  # the turn of each message: a user message with text opens the next one
    for message in messages:
        if message.role == "user" and any(isinstance(b, Text) for b in message.blocks):
            turn += 1
        turns.append(turn)
    thinking = sorted(
        {t for m, t in zip(messages, turns, strict=True) if any(isinstance(b, Thinking) for b in m.blocks)}
    )
    cleared = set(thinking[: max(len(thinking) - edit.keep, 0)])
    if not cleared:
        return messages, 0
    edited = tuple(
        ApiMessage(m.role, tuple(b for b in m.blocks if not isinstance(b, Thinking)), m.clear_at) if t in cleared else m
        for m, t in zip(messages, turns, strict=True)
    )
    return edited, len(cleared)
