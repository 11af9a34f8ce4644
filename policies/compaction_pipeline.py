"""`compaction-pipeline`: four compaction strategies in turn, from gentle to aggressive.

Microsoft Agent Framework (MAF)'s .NET `PipelineCompactionStrategy`
(`dotnet/src/Microsoft.Agents.AI/Compaction/PipelineCompactionStrategy.cs`, read at commit
`5eb3eb7`) in the order its sample documents
(`dotnet/samples/02-agents/Agents/Agent_Step18_CompactionPipeline/`), with that sample's
triggers as defaults. Each stage checks its own trigger (the metric *exceeds* the limit), stops
at its target (the trigger's inverse) and never goes below its floor, over the groups
`policies.tool_result_compaction.Index` cuts the history into, as MAF's index does:

1. **Collapse tool results** (`ToolResultCompactionStrategy`, `MessagesExceed(7)`, 16 newest
   groups preserved): as the `tool-result-compaction` policy. Drops: `tool-collapse`.
2. **Summarize** (`SummarizationCompactionStrategy.cs`, `TokensExceed(1280)`, 8 newest groups
   preserved): the oldest non-system groups are taken one at a time until the rest no longer
   exceed the limit, and replaced, where the first of them was, by one summary written in one
   call of role `summarizer` (the `summary` policy's prompt and reference summarizer: the previous
   summary when it is among them, the users' messages, the rest as the assistant's side). As in
   the `summary` policy, the summary is sent marked generated and unverified, and one that is
   empty or longer than `max_chars` stops this policy's replay at that turn (MAF would insert
   `[Summary unavailable]`). Drops: `summary`.
3. **Sliding window** (`SlidingWindowCompactionStrategy.cs`, `TurnsExceed(4)`, 1 turn preserved):
   the oldest whole turns (by MAF's `TurnIndex`) are removed until at most `window_turns` remain;
   what precedes the first user message (the summary, turn 0) is kept. Drops: `reduction`.
4. **Truncate** (`TruncationCompactionStrategy.cs`, `TokensExceed(32768)`, 32 newest groups
   preserved): the oldest non-system groups are removed until the history fits `budget`
   tokens, never below the floor. Drops: `reduction`.

Like `tool-result-compaction`, it compacts the retained history after each exchange (MAF's
"pre-write" point, a fresh index each time): the view is the system message, that history and
the current turn. Tokens are counted over that history as `counter` says
(`harness.policy.counters`): by default (`local`) by the harness's local tokenizer (tiktoken
`cl100k_base`, each message's framing included) or, when its encoding is unavailable, by the
characters/4 estimate; the note says which. A count that is `unknown` (`provider` without
reported usage) or `unavailable` (`tiktoken` without its encoding) fires neither token trigger.
Groups are removed whole: a tool call never loses its result.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.base.messages import Message
from harness.chronology import Forget, UserTurn
from harness.policy import AuxCalls, Drop, Outcome, Param
from harness.policy.contract import MAX_CHARS, MAX_TOKENS, MAX_TURNS
from harness.policy.counters import COUNTER_PARAM, DEFAULT_COUNTER, TriggerCounter
from harness.policy.history import HistoryPolicy, exchange
from harness.policy.pinning import PIN_PARAM, Pins
from policies.summary import ROLE, SUMMARY_HEADER, stop_reason, summarize
from policies.tool_result_compaction import (
    DEFAULT_MIN_PRESERVED,
    Group,
    Index,
    Trigger,
    collapse_drops,
    collapse_note,
    collapse_tool_groups,
    may_compact,
    outcomes_of,
)

# MAF's defaults and its sample's triggers (Agent_Step18_CompactionPipeline/Program.cs).
COLLAPSE_MESSAGES = 7
SUMMARY_TOKENS = 0x500
SUMMARY_PRESERVED = 8  # SummarizationCompactionStrategy.DefaultMinimumPreserved
WINDOW_TURNS = 4
WINDOW_PRESERVED = 1  # SlidingWindowCompactionStrategy.DefaultMinimumPreserved
BUDGET = 0x8000
TRUNCATE_PRESERVED = 32  # TruncationCompactionStrategy.DefaultMinimumPreserved


class CompactionPipeline(HistoryPolicy):
    """System, the history compacted by the four stages in order, and the current turn."""

    name = "compaction-pipeline"
    description = (
        "Collapses old tool results, summarizes, windows turns, then truncates to a token budget "
        "(MAF's PipelineCompactionStrategy)."
    )
    params = (
        Param(
            "collapse_messages",
            COLLAPSE_MESSAGES,
            "collapse tool groups when the messages exceed this",
            minimum=0,
            maximum=MAX_TOKENS,
        ),
        Param(
            "collapse_preserved", DEFAULT_MIN_PRESERVED, "newest groups never collapsed", minimum=0, maximum=MAX_TOKENS
        ),
        Param(
            "summary_tokens",
            SUMMARY_TOKENS,
            "summarize when the history exceeds this many tokens",
            minimum=0,
            maximum=MAX_TOKENS,
        ),
        Param("summary_preserved", SUMMARY_PRESERVED, "newest groups never summarized", minimum=0, maximum=MAX_TOKENS),
        Param("max_chars", 700, "longest summary accepted, in characters", minimum=1, maximum=MAX_CHARS),
        Param(
            "window_turns",
            WINDOW_TURNS,
            "drop the oldest turns when there are more than this",
            minimum=0,
            maximum=MAX_TURNS,
        ),
        Param(
            "window_preserved", WINDOW_PRESERVED, "newest turns the window never drops", minimum=0, maximum=MAX_TURNS
        ),
        Param(
            "budget",
            BUDGET,
            "truncate the oldest groups when the history exceeds this many tokens",
            minimum=0,
            maximum=MAX_TOKENS,
        ),
        Param("truncate_preserved", TRUNCATE_PRESERVED, "newest groups never truncated", minimum=0, maximum=MAX_TOKENS),
        COUNTER_PARAM,
        PIN_PARAM,
    )
    sets = ("agent",)
    roles = (ROLE,)  # the summary policy's summarizer calls

    def __init__(
        self,
        system: Message | None,
        collapse_messages: int = COLLAPSE_MESSAGES,
        collapse_preserved: int = DEFAULT_MIN_PRESERVED,
        summary_tokens: int = SUMMARY_TOKENS,
        summary_preserved: int = SUMMARY_PRESERVED,
        max_chars: int = 700,
        window_turns: int = WINDOW_TURNS,
        window_preserved: int = WINDOW_PRESERVED,
        budget: int = BUDGET,
        truncate_preserved: int = TRUNCATE_PRESERVED,
        counter: str = DEFAULT_COUNTER,
        pin: str = "false",
    ) -> None:
        super().__init__(system)
        self.pins = Pins(pin)
        self.collapse = (Trigger("messages", collapse_messages), collapse_preserved)
        self.summarizing = (Trigger("tokens", summary_tokens), summary_preserved)
        self.windowing = (Trigger("turns", window_turns), window_preserved)
        self.truncation = (Trigger("tokens", budget), truncate_preserved)
        self.max_chars = max_chars
        self.summaries: dict[str, str] = {}  # the running summary's text, per session
        self.errors: dict[str, bool] = {}
        self.counter = TriggerCounter(counter)
        self.indexes: dict[str, Index] = {}  # per session: the index of the stored history

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        self.errors.update(outcomes_of(turn))
        self.pins.after_answer(turn)
        session, number = turn.session, turn.number
        # The index of the stored history, kept from the last call (a fresh one after any change,
        # so it is always the index MAF builds afresh from the stored history), plus this exchange.
        self.counter.learn(turn, aux)
        index = self.indexes.setdefault(session, self._index(session, ()))
        added = exchange(turn, answer)
        index.extend(added)
        dropped: list[Drop] = []
        notes: list[str] = []

        trigger, floor = self.collapse
        collapsed = collapse_tool_groups(index, trigger, floor, self.errors)
        if collapsed:
            dropped += collapse_drops(collapsed, number)
            notes.append(collapse_note(collapsed))

        seen = index.token_count()  # what the summarizing stage's token trigger compares first
        summary = self._summarize(index, turn, aux)
        if isinstance(summary, Outcome):
            summary.trigger = seen
            self.indexes[session] = self._index(session, self.histories.of(session))
            return summary  # nothing changes: the replay ends here
        if summary:
            why = f"absent from the summary written at turn {number}"
            dropped += [Drop(m.text, why, "summary") for g in summary for m in g.messages if m.text]
            notes.append(f"summarized {group_count(len(summary))}")

        windowed = window_turns(index, *self.windowing)
        if windowed:
            why = f"dropped from the retained history after turn {number}"
            dropped += [Drop(m.text, why, "reduction") for g in windowed for m in g.messages if m.text]
            notes.append(f"window dropped {group_count(len(windowed))}")

        truncated = truncate(index, *self.truncation)
        if truncated:
            why = f"truncated from the retained history to its {self.truncation[0].limit}-token budget after turn {number}"
            dropped += [Drop(m.text, why, "reduction") for g in truncated for m in g.messages if m.text]
            notes.append(f"truncation dropped {group_count(len(truncated))}")

        if notes:
            self.histories.set(session, index.messages())
            if summary or windowed or truncated:  # turns moved: read back as MAF reads the stored history
                index.reread()
        else:
            self.histories.set(session, self.histories.of(session) + added)  # appended, not copied
        if session in self.summaries and not any(g.kind == "summary" for g in index.groups):
            del self.summaries[session]  # truncated away
        stored = self.indexes[session]
        did = "; ".join(notes) if notes else "nothing compacted"
        turns = stored.metric("turns")
        note = f"{did}; history {stored.token_count().describe()}, {turns} turn{'s' * (turns != 1)}"
        return Outcome(dropped=dropped, note=note, trigger=seen)

    def _index(self, session: str, messages: Iterable[Message]) -> Index:
        """An index of `messages` whose token triggers count by this policy's `counter`."""
        return Index(messages, self.counter.local, self.counter.measure(session))

    def forget(self, event: Forget) -> Outcome:
        self.summaries.clear()  # the summary is a message of the history, which the forget clears
        self.indexes.clear()
        return super().forget(event)

    def _summarize(self, index: Index, turn: UserTurn, aux: AuxCalls) -> list[Group] | Outcome:
        """MAF's `SummarizationCompactionStrategy.CompactCoreAsync`: the groups summarized
        (replaced in `index` by the summary), or the Outcome that stops the replay."""
        trigger, floor = self.summarizing
        if not may_compact(index, trigger):
            return []
        non_system = index.non_system()
        most = len(non_system) - min(floor, len(non_system))
        if most <= 0:
            return []
        taken: list[int] = []
        remaining = index.copy()  # the index with the groups taken so far excluded, for the target
        for position in non_system[:most]:
            taken.append(position)
            remaining.pop(remaining.first_non_system())
            if not trigger.fires(remaining):
                break
        groups = [index.groups[i] for i in taken]
        previous = self.summaries.get(turn.session) if any(g.kind == "summary" for g in groups) else None
        users = "\n".join(m.content for g in groups if g.kind == "user" for m in g.messages)
        others = "\n".join(
            m.text if m.role != "tool" else f"[{m.tool_call_id}] {m.content}"
            for g in groups
            if g.kind not in ("user", "summary")
            for m in g.messages
        )
        text = summarize(aux, previous, users, others, self.max_chars)
        stop = stop_reason(text, self.max_chars)
        if stop is not None:
            return Outcome(stop=stop)
        self.summaries[turn.session] = text
        message = Message("assistant", f"{SUMMARY_HEADER}\n{text}", origin="summary", session=turn.session)
        first, gone = taken[0], set(taken)
        index.assign(
            [
                *index.groups[:first],
                index.group("summary", [message], None),
                *(g for i, g in enumerate(index.groups) if i >= first and i not in gone),
            ]
        )
        return groups


def group_count(count: int) -> str:
    return f"{count} group{'s' * (count != 1)}"


def window_turns(index: Index, trigger: Trigger, preserved: int) -> list[Group]:
    """MAF's `SlidingWindowCompactionStrategy.CompactCoreAsync`: the oldest turns removed whole
    (turn 0 and the last `preserved` turns kept) until the target is met; the groups removed."""
    if not may_compact(index, trigger):
        return []
    order: list[int] = []
    for group in index.groups:
        if group.kind != "system" and group.turn is not None and group.turn not in order:
            order.append(group.turn)
    protected = {0, *order[len(order) - min(preserved, len(order)) :]}
    removed: list[Group] = []
    for turn in order:
        if turn in protected:
            continue
        removed += [g for g in index.groups if g.turn == turn and g.kind != "system"]
        index.assign([g for g in index.groups if g.turn != turn or g.kind == "system"])
        if not trigger.fires(index):
            break
    return removed


def truncate(index: Index, trigger: Trigger, preserved: int) -> list[Group]:
    """MAF's `TruncationCompactionStrategy.CompactCoreAsync`: the oldest non-system groups
    removed until the target is met, the newest `preserved` kept; the groups removed."""
    if not may_compact(index, trigger):
        return []
    most = index.non_system_count() - preserved
    removed: list[Group] = []
    while len(removed) < most:
        removed.append(index.pop(index.first_non_system()))
        if not trigger.fires(index):
            break
    return removed
