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
allows. Tokens (`trigger_on=tokens`) are counted over that history as `counter` says
(`harness.policy.counters`): by default (`local`) by the harness's local tokenizer (tiktoken
`cl100k_base`, each message's framing included) or, when its encoding is unavailable, by the
characters/4 estimate, and the note says which; `unknown` or `unavailable` counts never fire.
MAF counts with the tokenizer it is given, or bytes/4.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from harness.base.messages import Message
from harness.base.sequences import Joined, Log
from harness.chronology import Forget, UserTurn
from harness.policy import AuxCalls, Drop, Outcome, Param
from harness.policy.contract import MAX_TOKENS, TriggerCount
from harness.policy.counters import COUNTER_PARAM, DEFAULT_COUNTER, Measure, TriggerCounter
from harness.policy.history import HistoryPolicy, exchange
from harness.policy.pinning import PIN_PARAM, Pins
from harness.policy.tokens import TokenCounter

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
    `IncludedGroupCount`), kept as running sums so a trigger costs nothing to check. Change the
    groups through `extend`, `replace`, `pop` and `assign` only."""

    def __init__(self, messages: Iterable[Message], counter: TokenCounter, measure: Measure | None = None) -> None:
        self.counter = counter
        # What a `tokens` trigger reads (`harness.policy.counters`): the local count by default.
        self.measure = measure or TriggerCounter(DEFAULT_COUNTER, counter).measure("")
        self.groups: list[Group] = []
        self.last_turn = 0  # the TurnIndex of the latest user message
        self.system_groups = 0
        self._messages = self._chars = self._tokens = 0
        self._turns: Counter[int] = Counter()  # groups per TurnIndex above 0
        self.extend(messages)

    def extend(self, messages: Iterable[Message]) -> None:
        """Append messages, grouped as MAF's index groups them (following the groups already held)."""
        pending, position = list(messages), 0
        while position < len(pending):
            message = pending[position]
            end = position + 1
            if message.role == "system":
                kind, turn = "system", None
            elif message.role == "user":
                self.last_turn += 1
                kind, turn = "user", self.last_turn
            elif message.role == "assistant" and message.tool_calls:
                while end < len(pending) and pending[end].role == "tool":
                    end += 1
                kind, turn = "tool-call", self.last_turn
            else:
                kind, turn = ("summary" if message.origin == "summary" else "text"), self.last_turn
            self.groups.append(self._counted(self.group(kind, pending[position:end], turn), 1))
            position = end

    def group(self, kind: str, messages: Sequence[Message], turn: int | None) -> Group:
        chars, tokens = self.counter.sizes(messages)
        return Group(kind, tuple(messages), turn, chars, tokens)

    def _counted(self, group: Group, sign: int) -> Group:
        self._messages += sign * len(group.messages)
        self._chars += sign * group.chars
        self._tokens += sign * group.tokens
        self.system_groups += sign * (group.kind == "system")
        if group.turn:
            self._turns[group.turn] += sign
            if not self._turns[group.turn]:
                del self._turns[group.turn]
        return group

    def replace(self, position: int, group: Group) -> None:
        self._counted(self.groups[position], -1)
        self.groups[position] = self._counted(group, 1)

    def pop(self, position: int) -> Group:
        return self._counted(self.groups.pop(position), -1)

    def assign(self, groups: Sequence[Group]) -> None:
        """Hold exactly `groups` (a summary inserted, turns removed)."""
        for group in self.groups:
            self._counted(group, -1)
        self.groups = [self._counted(group, 1) for group in groups]

    def reread(self) -> None:
        """Number the turns and name the kinds as a fresh index of the same messages would (a
        collapse note is then an assistant's text; what precedes the first user message, turn 0)."""
        turn, groups = 0, []
        for group in self.groups:
            if group.kind == "user":
                turn += 1
            kind = "text" if group.kind == "collapsed" else group.kind
            groups.append(replace(group, kind=kind, turn=None if kind == "system" else turn))
        self.assign(groups)
        self.last_turn = turn

    def copy(self) -> Index:
        """An index holding the same groups, changed apart from this one."""
        other = Index((), self.counter, self.measure)
        other.assign(self.groups)
        other.last_turn = self.last_turn
        return other

    def first_non_system(self) -> int:
        """The position of the oldest non-system group (the groups' count when there is none)."""
        return next((i for i, g in enumerate(self.groups) if g.kind != "system"), len(self.groups))

    def messages(self) -> list[Message]:
        return [m for g in self.groups for m in g.messages]

    def non_system_count(self) -> int:
        return len(self.groups) - self.system_groups

    def non_system(self) -> list[int]:
        """Positions of the non-system groups, oldest first."""
        return [i for i, g in enumerate(self.groups) if g.kind != "system"]

    def protected_from(self, preserved: int) -> int:
        """Where the newest `preserved` non-system groups start (the groups' count when none are)."""
        position, seen = len(self.groups), 0
        while seen < preserved and position > 0:
            position -= 1
            seen += self.groups[position].kind != "system"
        return position

    def token_count(self) -> TriggerCount:
        """The groups' token count by the index's `measure`: by default the local count (framing
        per message included), or the characters/4 estimate when the encoding is unavailable,
        as `TokenCounter.budget_count` of the messages without the request's framing."""
        return self.measure(self._chars, self._tokens)

    def tokens(self) -> int | None:
        """`token_count`'s tokens: None when unknown or unavailable."""
        return self.token_count().tokens

    def metric(self, unit: str) -> int | None:
        if unit == "messages":
            return self._messages
        if unit == "tokens":
            return self.tokens()
        if unit == "turns":
            return len(self._turns)
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
        """Whether the metric exceeds the limit; a token count that is unknown never fires."""
        metric = index.metric(self.unit)
        return metric is not None and metric > self.limit

    def describe(self, index: Index) -> str:
        if self.unit == "tokens":
            return f"tokens > {self.limit} ({index.token_count().describe()})"
        return f"{self.unit} > {self.limit} ({index.metric(self.unit)} {self.unit})"


def may_compact(index: Index, trigger: Trigger) -> bool:
    """MAF's `CompactionStrategy.CompactAsync` guard: more than one non-system group, and the trigger fires."""
    return index.non_system_count() > 1 and trigger.fires(index)


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


def collapse_tool_groups(
    index: Index, trigger: Trigger, min_preserved: int, errors: Mapping[str, bool], start: int = 0
) -> list[Group]:
    """MAF's `ToolResultCompactionStrategy.CompactCoreAsync`: collapse the unprotected tool
    groups oldest first until the target is met; return the groups collapsed (in place in
    `index`). `start`: no tool group before this position is left to collapse."""
    if not may_compact(index, trigger):
        return []
    collapsed: list[Group] = []
    for position in range(start, index.protected_from(min_preserved)):
        group = index.groups[position]
        if group.kind != "tool-call":
            continue
        first = group.messages[0]
        note = Message("assistant", collapse_text(group, errors), first.origin, first.turn, first.session)
        index.replace(position, index.group("collapsed", [note], group.turn))
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


class SettledHistories:
    """Per session, a history in two logs: the settled part, which this policy never changes
    again (no tool group in it is left to collapse), and the rest, appended to until a collapse
    rebuilds it. Both are `Log`s, so a view shares their storage and a turn costs what it adds
    and what it collapses, not the history's length. Read as `SessionHistories` is (`of`,
    `all`, `clear`)."""

    def __init__(self) -> None:
        self._by_session: dict[str, tuple[Log, Log]] = {}

    def _logs(self, session: str) -> tuple[Log, Log]:
        return self._by_session.setdefault(session, (Log(), Log()))

    def of(self, session: str) -> Joined:
        settled, rest = self._logs(session)
        return Joined([(settled, len(settled)), (rest, len(rest))])

    def append(self, session: str, messages: Sequence[Message]) -> None:
        self._logs(session)[1].extend(messages)

    def settle(self, session: str, settled: Iterable[Message], rest: Iterable[Message]) -> None:
        """Add `settled` to the settled part; `rest` replaces the rest."""
        log = self._logs(session)[0]
        log.extend(settled)
        self._by_session[session] = (log, Log(rest))

    def clear(self) -> list[Message]:
        dropped = list(self.all())
        self._by_session.clear()
        return dropped

    def all(self) -> Joined:
        return Joined([(log, len(log)) for logs in self._by_session.values() for log in logs])


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
        COUNTER_PARAM,
        PIN_PARAM,
    )
    sets = ("agent",)
    roles = ()

    def __init__(
        self,
        system: Message | None,
        trigger_on: str = "messages",
        trigger: int = 7,
        min_preserved: int = DEFAULT_MIN_PRESERVED,
        counter: str = DEFAULT_COUNTER,
        pin: str = "false",
    ) -> None:
        super().__init__(system)
        self.pins = Pins(pin)
        self.trigger = Trigger(trigger_on, trigger)
        self.min_preserved = min_preserved
        self.errors: dict[str, bool] = {}  # call id -> the tool failed; call ids are unique in a chronology
        self.counter = TriggerCounter(counter)
        self.histories = SettledHistories()  # type: ignore[assignment]  # read as SessionHistories is
        self.indexes: dict[str, Index] = {}  # per session
        self.open_from: dict[str, int] = {}  # per session: the groups before it are settled

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        self.errors.update(outcomes_of(turn))
        self.pins.after_answer(turn)
        # One index per session, kept between calls: this strategy only replaces tool groups in
        # place, so it equals the index MAF builds afresh from the stored history at each call.
        self.counter.learn(turn, aux)
        index = self.indexes.setdefault(turn.session, Index((), self.counter.local, self.counter.measure(turn.session)))
        added = exchange(turn, answer)
        index.extend(added)
        before = self.trigger.describe(index)
        seen = index.token_count() if self.trigger.unit == "tokens" else None
        start = self.open_from.get(turn.session, 0)
        collapsed = collapse_tool_groups(index, self.trigger, self.min_preserved, self.errors, start)
        if collapsed:
            # No tool group before the first one still open is left to collapse: settled.
            now = self.open_from[turn.session] = _first_open(index, start)
            settled = [m for g in index.groups[start:now] for m in g.messages]
            self.histories.settle(turn.session, settled, [m for g in index.groups[now:] for m in g.messages])
        else:
            self.histories.append(turn.session, added)
        did = collapse_note(collapsed) if collapsed else "nothing collapsed"
        note = f"trigger {before}: {did}; newest {self.min_preserved} groups preserved"
        return Outcome(dropped=collapse_drops(collapsed, turn.number), note=note, trigger=seen)

    def forget(self, event: Forget) -> Outcome:
        self.indexes.clear()
        self.open_from.clear()
        return super().forget(event)


def _first_open(index: Index, start: int) -> int:
    """The first position from `start` holding a tool group not collapsed (the end when none does)."""
    return next((i for i in range(start, len(index.groups)) if index.groups[i].kind == "tool-call"), len(index.groups))
