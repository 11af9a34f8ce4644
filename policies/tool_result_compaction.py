"""`tool-result-compaction`: old tool groups collapsed into one short assistant message each.

Microsoft Agent Framework (MAF)'s .NET `ToolResultCompactionStrategy`
(`dotnet/src/Microsoft.Agents.AI/Compaction/ToolResultCompactionStrategy.cs`, read at commit
`5eb3eb7`), over MAF's message index (`CompactionMessageIndex.cs`), its triggers
(`CompactionTriggers.cs`) and the base class's rules (`CompactionStrategy.cs`):

- The history is cut into **groups** as MAF's index does: a system message; a user message (each
  starts a new turn, MAF's `TurnIndex`, 0 before the first); an assistant message carrying tool
  calls with the `tool` messages after it (a `ToolCall` group, one per step); any other message
  alone (a summary, an assistant's text).
- Nothing happens unless the **trigger** fires (the metric *exceeds* `trigger`:
  `MessagesExceed`, `TokensExceed`, `TurnsExceed`, `GroupsExceed`) and more than one non-system
  group is left (`CompactionStrategy.CompactAsync`).
- The newest `min_preserved` non-system groups are protected (MAF's `MinimumPreservedGroups`,
  default 16); the other `ToolCall` groups are collapsed oldest first, each replaced in place by
  one assistant message, and the **target** (the trigger's inverse, MAF's default) is checked
  after each: the collapsing stops once the trigger would no longer fire. A collapse keeps the
  group count and the turn count, so a `groups` or `turns` trigger collapses every eligible group.
- User messages and the assistant's replies are never touched.

Where the harness differs from MAF: the collapse message names each tool (in first-called
order, as MAF's `DefaultToolCallFormatter`) with each call's **outcome**, `ok` or `error` (the
chronology's `results[].error`), not the result's text: MAF's default formatter repeats every
result in full, which a custom `ToolCallFormatter` may replace, as this one does. The error flag
does not reach `Message`; the policy reads it from the turn's steps. Compaction runs on the
retained history after each exchange (MAF's lifecycle point "pre-write", as `AsChatReducer`,
with a fresh index at every call): the request view is the system message, that history, and
the current turn (its user message and steps), so it can hold one turn more than the trigger
allows. Tokens (`trigger_on=tokens`) are counted over that history by the harness's local
tokenizer (`TokenCounter`, tiktoken `cl100k_base`, each message's framing included) or, when
its encoding is unavailable, by the characters/4 estimate, and the note says which; MAF counts
with the tokenizer it is given, or bytes/4.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.base.messages import Message
from harness.chronology import UserTurn
from harness.policy import AuxCalls, Drop, Outcome, Param
from harness.policy.contract import MAX_TOKENS
from harness.policy.history import HistoryPolicy, exchange
from harness.policy.tokens import TokenCounter, estimate_tokens

COLLAPSE_HEADER = "[Tool Calls]"  # MAF's DefaultToolCallFormatter's first line
UNITS = ("messages", "tokens", "turns", "groups")  # what a trigger counts (MAF's CompactionTriggers)
DEFAULT_MIN_PRESERVED = 16  # MAF's ToolResultCompactionStrategy.DefaultMinimumPreserved


@dataclass(frozen=True)
class Group:
    """One of MAF's groups: its kind, its messages, and the turn it belongs to (MAF's `TurnIndex`:
    0 before the first user message, None for a system message)."""

    # system, user, tool-call, text (any other message alone), summary (the pipeline's running
    # summary), collapsed (a collapse message made in this call; `text` when read back)
    kind: str
    messages: tuple[Message, ...]
    turn: int | None
    chars: int
    tokens: int  # local tokens with framing, 0 when the encoding is unavailable


class Index:
    """The history as MAF's `CompactionMessageIndex` sees it: groups, and the metrics the
    triggers read (`IncludedMessageCount`, `IncludedTokenCount`, `IncludedTurnCount`,
    `IncludedGroupCount`). Compaction replaces or removes groups in `groups`."""

    def __init__(self, messages: Iterable[Message], counter: TokenCounter) -> None:
        self.counter = counter
        self.groups: list[Group] = []
        turn, pending = 0, list(messages)
        position = 0
        while position < len(pending):
            message = pending[position]
            end = position + 1
            if message.role == "system":
                kind, group_turn = "system", None
            elif message.role == "user":
                turn += 1
                kind, group_turn = "user", turn
            elif message.role == "assistant" and message.tool_calls:
                while end < len(pending) and pending[end].role == "tool":
                    end += 1
                kind, group_turn = "tool-call", turn
            else:
                kind, group_turn = ("summary" if message.origin == "summary" else "text"), turn
            self.groups.append(self.group(kind, pending[position:end], group_turn))
            position = end

    def group(self, kind: str, messages: Sequence[Message], turn: int | None) -> Group:
        chars, tokens = self.counter.sizes(messages)
        return Group(kind, tuple(messages), turn, chars, tokens)

    def messages(self) -> list[Message]:
        return [m for g in self.groups for m in g.messages]

    def non_system(self) -> list[int]:
        """Positions of the non-system groups, oldest first."""
        return [i for i, g in enumerate(self.groups) if g.kind != "system"]

    def tokens(self) -> int:
        """The groups' local token count (framing per message included), or the characters/4
        estimate when the encoding is unavailable: `TokenCounter.budget_count` of the messages
        without the request's framing."""
        if self.counter.available:
            return sum(g.tokens for g in self.groups)
        return estimate_tokens(sum(g.chars for g in self.groups))

    def metric(self, unit: str) -> int:
        if unit == "messages":
            return sum(len(g.messages) for g in self.groups)
        if unit == "tokens":
            return self.tokens()
        if unit == "turns":
            return len({g.turn for g in self.groups if g.turn is not None and g.turn > 0})
        if unit == "groups":
            return len(self.groups)
        raise ValueError(f"unknown trigger unit {unit!r}; one of {', '.join(UNITS)}")


@dataclass(frozen=True)
class Trigger:
    """MAF's `CompactionTriggers.<Unit>Exceed(limit)`: fires when the metric exceeds `limit`; its
    inverse is the default target (compaction stops once it no longer fires)."""

    unit: str
    limit: int

    def fires(self, index: Index) -> bool:
        return index.metric(self.unit) > self.limit

    def describe(self, index: Index) -> str:
        return f"{self.unit} > {self.limit} ({index.metric(self.unit)} {self.unit})"


def may_compact(index: Index, trigger: Trigger) -> bool:
    """MAF's `CompactionStrategy.CompactAsync` guard: more than one non-system group, and the trigger fires."""
    return len(index.non_system()) > 1 and trigger.fires(index)


def outcomes_of(turn: UserTurn) -> dict[str, bool]:
    """Each result's call id and whether the tool failed (the chronology's `results[].error`)."""
    return {result.id: result.error for step in turn.steps for result in step.results}


def collapse_text(group: Group, errors: Mapping[str, bool]) -> str:
    """The collapse message: MAF's YAML-like block, each tool named once in first-called order,
    one line per call with its outcome (`ok`, or `error` when the tool failed)."""
    answered = {m.tool_call_id for m in group.messages if m.role == "tool"}
    by_name: dict[str, list[str]] = {}
    for message in group.messages:
        for call in message.tool_calls:
            if call.id not in answered:
                outcome = "no result"
            else:
                outcome = "error" if errors.get(call.id, False) else "ok"
            by_name.setdefault(call.name, []).append(outcome)
    lines = [COLLAPSE_HEADER]
    for name, outcomes in by_name.items():
        lines += [f"{name}:", *(f"  - {outcome}" for outcome in outcomes)]
    return "\n".join(lines)


def collapse_tool_groups(index: Index, trigger: Trigger, min_preserved: int, errors: Mapping[str, bool]) -> list[Group]:
    """MAF's `ToolResultCompactionStrategy.CompactCoreAsync`: collapse the unprotected tool
    groups oldest first until the target is met; return the groups collapsed (in place in `index`)."""
    if not may_compact(index, trigger):
        return []
    non_system = index.non_system()
    protected = set(non_system[max(0, len(non_system) - min_preserved) :])
    eligible = [i for i, g in enumerate(index.groups) if g.kind == "tool-call" and i not in protected]
    collapsed: list[Group] = []
    for position in eligible:
        group = index.groups[position]
        first = group.messages[0]
        note = Message("assistant", collapse_text(group, errors), first.origin, first.turn, first.session)
        index.groups[position] = index.group("collapsed", [note], group.turn)
        collapsed.append(group)
        if not trigger.fires(index):
            break
    return collapsed


def collapse_drops(collapsed: Iterable[Group], after_turn: int) -> list[Drop]:
    """A `tool-collapse` drop for each call message and result of the groups collapsed."""
    return [
        Drop(
            m.text,
            f"tool results of turn {m.turn} collapsed into a {COLLAPSE_HEADER} note after turn {after_turn}",
            "tool-collapse",
        )
        for group in collapsed
        for m in group.messages
        if m.text
    ]


def collapse_note(collapsed: Sequence[Group]) -> str:
    turns = sorted({m.turn for g in collapsed for m in g.messages[:1] if m.turn is not None})
    of = f" (turn{'s' if len(turns) > 1 else ''} {', '.join(map(str, turns))})" if turns else ""
    return f"collapsed {len(collapsed)} tool group{'s' if len(collapsed) != 1 else ''}{of}"


class ToolResultCompaction(HistoryPolicy):
    """System, the history with its old tool groups collapsed, and the current turn."""

    name = "tool-result-compaction"
    description = (
        "Collapses old tool groups into one [Tool Calls] note each (MAF's ToolResultCompactionStrategy); "
        "newest groups kept."
    )
    params = (
        Param("trigger_on", "messages", "what the trigger counts (MAF's CompactionTriggers)", choices=UNITS),
        Param("trigger", 7, "collapse when that count exceeds this number", minimum=0, maximum=MAX_TOKENS),
        Param(
            "min_preserved",
            DEFAULT_MIN_PRESERVED,
            "newest non-system groups never collapsed (MAF's MinimumPreservedGroups)",
            minimum=0,
            maximum=MAX_TOKENS,
        ),
    )
    sets = ("agent",)
    roles = ()

    def __init__(
        self,
        system: Message | None,
        trigger_on: str = "messages",
        trigger: int = 7,
        min_preserved: int = DEFAULT_MIN_PRESERVED,
    ) -> None:
        super().__init__(system)
        self.trigger = Trigger(trigger_on, trigger)
        self.min_preserved = min_preserved
        self.errors: dict[str, bool] = {}  # call id -> the tool failed; call ids are unique in a chronology
        self.counter = TokenCounter()

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        self.errors.update(outcomes_of(turn))
        index = Index([*self.histories.of(turn.session), *exchange(turn, answer)], self.counter)
        before = self.trigger.describe(index)
        collapsed = collapse_tool_groups(index, self.trigger, self.min_preserved, self.errors)
        self.histories.set(turn.session, index.messages())
        tokens = f"; tokens counted by {self.counter.method()}" if self.trigger.unit == "tokens" else ""
        did = collapse_note(collapsed) if collapsed else "nothing collapsed"
        note = f"trigger {before}: {did}; newest {self.min_preserved} groups preserved{tokens}"
        return Outcome(dropped=collapse_drops(collapsed, turn.number), note=note)
