"""Tool groups: an assistant message carrying tool calls, and the `tool` messages answering them.

A group is MAF's unit (`CompactionMessageIndex`): whatever a policy keeps or drops, it keeps or
drops a group whole. A request that holds a call without its result, or a result whose call is
not the assistant message right before it (past the group's other results), is refused by the
chat-completions API (HTTP 400). `group_problems` finds both in a message list; the replay
checks every view and retained state with it (`harness.run.groups`), and a plug-in's own tests
may call it too.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.base.messages import Message
from harness.base.sequences import TOOL_CALLS, Joined

__all__ = ["group_problems"]


def group_problems(messages: Sequence[Message]) -> list[str]:
    """Each split group in `messages`, in order, in words: a call without its result right after
    its assistant message, or a result without the call it answers right before it.

    Only the tool messages and the assistant messages with calls are read (through a history
    log's index when `messages` shares one), so a long history without tools costs nothing.
    """
    joined = messages if isinstance(messages, Joined) else Joined([(messages, len(messages))])
    calls, results = joined.positions(TOOL_CALLS), joined.positions("tool")
    if not calls and not results:
        return []
    found: list[tuple[int, str]] = []
    paired: set[int] = set()
    for position in calls:
        message = joined[position]
        waiting = [call.id for call in message.tool_calls]
        after = position + 1
        while after < len(joined) and (result := joined[after]).role == "tool" and result.tool_call_id in waiting:
            waiting.remove(result.tool_call_id)
            paired.add(after)
            after += 1
        found += [(position, f"call {name} (turn {message.turn}) without its result") for name in waiting]
    for position in results:
        if position not in paired:
            result = joined[position]
            found.append((position, f"result {result.tool_call_id} (turn {result.turn}) without its call before it"))
    return [text for _, text in sorted(found, key=lambda item: item[0])]
