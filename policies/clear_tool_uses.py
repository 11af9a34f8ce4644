"""`clear-tool-uses`: Anthropic's context editing `clear_tool_uses_20250919`, on the request view.

Semantics as Anthropic documents them ("Context editing",
https://platform.claude.com/docs/en/build-with-claude/context-editing, "Configuration options for
tool result clearing" and "Context editing response"):

- The edit runs on the prompt before it reaches the model; the client keeps the full, unmodified
  history. Here: the retained history is kept whole, and only the request view is edited.
- `trigger` (default 100,000 input tokens): once the prompt **exceeds** it, clearing begins.
- `keep` (default 3 tool uses): the most recent tool use/result pairs kept; the oldest are cleared
  first.
- `clear_at_least` (default none, here 0): the minimum of tokens a clearing must free; if the
  edit cannot clear that much, it is not applied at all.
- `exclude_tools` (default none): tool names whose uses and results are never cleared (here
  joined by `+`, `exclude_tools=read_runbook+query`: a comma separates a spec's parameters).
- `clear_tool_inputs` (default false): also clear the calls' parameters; by default only the
  results are cleared and the calls stay visible.
- A cleared result is replaced by a placeholder text telling the model it was removed; the
  response reports `cleared_tool_uses` and `cleared_input_tokens`.

Where the documentation is silent, the harness chose, following LangChain's `ClearToolUsesEdit`
(langchain `agents/middleware/context_editing.py`), which mirrors this strategy:

- the placeholder text is LangChain's, `[cleared]` (Anthropic does not publish its own);
- `keep` counts the most recent tool uses of any tool, excluded ones included, and everything
  older than them is cleared except the excluded tools' uses (LangChain's order of the two rules);
- cleared inputs become the empty argument object `{}` (LangChain's), so the call stays a valid
  call and its result still answers it: a cleared tool use keeps its assistant message and its
  `tool` message, and no group is ever split;
- only the `input_tokens` forms are taken: `trigger` and `clear_at_least` in tokens, `keep` in
  tool uses (Anthropic's `tool_uses` trigger is not offered);
- every tool use of the view can be cleared, the current turn's own steps included, as the
  server sees one prompt with no turns.

Counting: the input tokens are the uncleared view's, counted as `counter` says
(`harness.policy.counters`): by default (`local`) with the labelled local tokenizer (the figure
`turns.csv` records as `tiktoken_tokens`; the characters/4 estimate when the encoding is
unavailable, and the note says which); `tiktoken`, `estimate`, or `provider` (the previous
answer call's reported usage plus the estimate of what changed since, as Pydantic AI Harness
counts; `unknown`, and nothing cleared, when it reported none). Anthropic counts the prompt on
its server, with its own framing and the tool definitions, which no counter here sees.

Recorded per turn in `turns.csv` `policy_note`: the count, the trigger, `cleared_tool_uses` and
`cleared_input_tokens` (the same counter, before minus after). A result that leaves the view is
reported at that turn as a `Drop` with cause `tool-clear` (the trace names it as the departure's
cause; the history still holds it, so it is never `reduction`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.base.messages import Message, ToolCall
from harness.chronology import Forget, UserTurn
from harness.emulate.anthropic_clearing import CLEARED_INPUTS, PLACEHOLDER, uses_to_clear
from harness.policy import AuxCalls, Drop, Outcome, Param
from harness.policy.contract import MAX_TOKENS, MAX_TURNS, TriggerCount
from harness.policy.counters import COUNTER_PARAM, DEFAULT_COUNTER, TriggerCounter
from harness.policy.history import HistoryPolicy


@dataclass(frozen=True)
class ToolUse:
    """One tool call of a view and the index of the messages holding the call and its result."""

    call: ToolCall
    call_at: int
    result_at: int


def tool_uses(view: Sequence[Message]) -> list[ToolUse]:
    """The view's tool uses in chronological order: each call answered by a result after it.
    A call without its result (a split group, which the harness reports apart) is not a use."""
    pending: dict[str, tuple[ToolCall, int]] = {}
    uses: list[ToolUse] = []
    for index, message in enumerate(view):
        for call in message.tool_calls:
            pending[call.id] = (call, index)
        if message.role == "tool" and message.tool_call_id in pending:
            call, call_at = pending.pop(message.tool_call_id)
            uses.append(ToolUse(call, call_at, index))
    return uses


def parse_names(text: str) -> frozenset[str]:
    """`exclude_tools`: tool names joined by `+` (a comma separates a spec's parameters on the
    command line; a tool name holds neither), blanks around them ignored; commas are taken too."""
    return frozenset(name.strip() for name in text.replace(",", "+").split("+") if name.strip())


class ClearToolUses(HistoryPolicy):
    """Full history, with the oldest tool results cleared from the request once it exceeds `trigger`."""

    name = "clear-tool-uses"
    description = (
        "Anthropic context editing clear_tool_uses_20250919: old tool results replaced by a placeholder "
        "in the request once it exceeds a token trigger; history kept whole."
    )
    params = (
        Param(
            "trigger",
            100_000,
            "input tokens of the view (counted by `counter`) above which clearing begins",
            minimum=0,
            maximum=MAX_TOKENS,
        ),
        Param("keep", 3, "most recent tool uses never cleared", minimum=0, maximum=MAX_TURNS),
        Param(
            "clear_at_least",
            0,
            "tokens a clearing must free, else nothing is cleared (0: no minimum)",
            minimum=0,
            maximum=MAX_TOKENS,
        ),
        Param("exclude_tools", "", "tool names whose uses are never cleared, joined by + (read_runbook+query)"),
        Param(
            "clear_tool_inputs", "false", "also replace the cleared calls' arguments by {}", choices=("false", "true")
        ),
        COUNTER_PARAM,
    )
    sets = ("agent",)
    roles = ()

    def __init__(
        self,
        system: Message | None,
        trigger: int = 100_000,
        keep: int = 3,
        clear_at_least: int = 0,
        exclude_tools: str = "",
        clear_tool_inputs: str = "false",
        counter: str = DEFAULT_COUNTER,
    ) -> None:
        super().__init__(system)
        self.trigger, self.keep, self.clear_at_least = trigger, keep, clear_at_least
        self.exclude = parse_names(exclude_tools)
        self.clear_inputs = clear_tool_inputs == "true"
        self.counter = TriggerCounter(counter)
        self.note: str | None = None
        self.count: TriggerCount | None = None  # what the trigger saw at this turn's view
        self.pending: list[Drop] = []  # what this turn's view cleared that the session's previous view sent
        self.cleared: dict[str, set[str]] = {}  # per session: the call ids its latest view cleared

    def view(self, turn: UserTurn) -> Sequence[Message]:
        whole = super().view(turn)
        before = self.count = self.counter.count(turn.session, list(whole))
        counted = before.describe()
        previous = self.cleared.get(turn.session, set())
        self.pending = []
        if not before.exceeds(self.trigger):
            self.note = f"view {counted}, trigger {self.trigger} not exceeded: cleared_tool_uses=0"
            self.cleared[turn.session] = set()
            return whole
        messages = list(whole)
        uses = tool_uses(messages)
        # The rule the emulated Anthropic server clears by too (harness.emulate.anthropic_clearing).
        chosen = [uses[i] for i in uses_to_clear([use.call.name for use in uses], self.keep, self.exclude)]
        edited = self._cleared(messages, chosen)
        after = self.counter.count(turn.session, edited)
        freed = (before.tokens or 0) - (after.tokens or 0)  # both counted: `before` exceeded the trigger
        if not chosen or freed < self.clear_at_least:
            why = "" if not chosen else f" (it would free {freed}, under clear_at_least {self.clear_at_least})"
            self.note = f"view {counted} exceeds trigger {self.trigger}: cleared_tool_uses=0{why}"
            self.cleared[turn.session] = set()
            return whole
        self.note = (
            f"view {counted} exceeds trigger {self.trigger}: cleared_tool_uses={len(chosen)}, "
            f"cleared_input_tokens={freed}; view after clearing {after.tokens} tokens"
        )
        self.cleared[turn.session] = {use.call.id for use in chosen}
        why = f"cleared from the request view at turn {turn.number} (clear_tool_uses_20250919, history kept whole)"
        for use in chosen:
            if use.call.id in previous:
                continue
            self.pending.append(
                Drop(messages[use.result_at].content, f"tool result of {use.call.id} {why}", "tool-clear")
            )
            if self.clear_inputs:
                text = f"{use.call.name}({use.call.arguments})"
                self.pending.append(Drop(text, f"arguments of {use.call.id} {why}", "tool-clear"))
        return edited

    def _cleared(self, messages: list[Message], chosen: list[ToolUse]) -> list[Message]:
        """The view with each chosen use's result replaced by the placeholder (and, with
        `clear_tool_inputs`, its call's arguments by `{}`); every message keeps its place."""
        edited = list(messages)
        ids = {use.call.id for use in chosen}
        for use in chosen:
            result = edited[use.result_at]
            edited[use.result_at] = Message(
                "tool", PLACEHOLDER, result.origin, result.turn, result.session, tool_call_id=result.tool_call_id
            )
        if self.clear_inputs:
            for at in sorted({use.call_at for use in chosen}):
                message = edited[at]
                calls = tuple(ToolCall(c.id, c.name, CLEARED_INPUTS) if c.id in ids else c for c in message.tool_calls)
                edited[at] = Message(
                    message.role, message.content, message.origin, message.turn, message.session, tool_calls=calls
                )
        return edited

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        outcome = super().after_answer(turn, answer, aux)
        outcome.dropped = self.pending + outcome.dropped
        outcome.note, outcome.trigger, self.pending = self.note, self.count, []
        self.counter.learn(turn, aux)
        return outcome

    def forget(self, event: Forget) -> Outcome:
        self.cleared.clear()
        return super().forget(event)
