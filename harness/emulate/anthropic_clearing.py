"""The rule of Anthropic's tool result clearing (`clear_tool_uses_20250919`), shared by the
emulated server (`harness.emulate.anthropic_edits`) and the client-side `clear-tool-uses` policy
(`policies/clear_tool_uses.py`), so the two clear the same uses of the same trace.

Anthropic documents the strategy ("Context editing",
https://platform.claude.com/docs/en/build-with-claude/context-editing): once the prompt exceeds
the trigger, the oldest tool results are cleared first, the `keep` most recent uses are kept,
`exclude_tools` are never cleared, and a cleared result is replaced by placeholder text. Where it
is silent (the order of `keep` and `exclude_tools`, the placeholder's text, what a cleared input
becomes) the harness follows LangChain's `ClearToolUsesEdit`, as the policy's docstring says.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

PLACEHOLDER = "[cleared]"  # LangChain's DEFAULT_TOOL_PLACEHOLDER; Anthropic does not publish its text
CLEARED_INPUTS = "{}"  # a cleared call's arguments: the empty JSON object, as LangChain writes it


def uses_to_clear(names: Sequence[str], keep: int, exclude: Collection[str] = ()) -> list[int]:
    """Which of a view's tool uses (given by their tools' `names`, oldest first) are cleared:
    every use older than the `keep` most recent (counted over every tool, excluded ones included),
    except the uses of an `exclude`d tool. Indexes into `names`, oldest first."""
    older = range(max(len(names) - keep, 0))
    return [index for index in older if names[index] not in exclude]
