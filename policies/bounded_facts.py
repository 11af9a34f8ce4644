"""`bounded-facts`: a strict, provenance-carrying store of at most five declared facts.

The view is the system, the facts block and the current user message; no history is sent.
Two injection modes, as in the seed: `message` prepends the block to the user's message
(Demo150), `provider` supplies it as a separate context message (Demo160). In both, the
writer reads only the user's own text after a successful call: never the injected block,
never a generated answer. Every business session shares the one store.

The writer is one extra call of role `writer`, with the prompt and the JSON Schema below: the
model adapter asks the endpoint for structured output, and the host validates the reply like
any other candidate. Under the offline `reference` model its reply is the chronology's scripted
`writer:` for the turn, else the candidates of the user's explicit declarations
(`harness.chronology.writer.reference_writer_output`).

The allowed keys, in the writer's prompt and at admission, are the chronology's key set, which
every turn carries (`UserTurn.keys`: the seed's ten unless the chronology names its own).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

from harness.base.errors import ModelError
from harness.base.messages import Message
from harness.chronology import Forget, UserTurn
from harness.chronology.declarations import ALLOWED_KEYS
from harness.chronology.writer import parse_writer_output, reference_writer_output
from harness.policy import AuxCalls, Drop, Outcome, Param
from harness.policy.facts import (
    MAX_FACTS,
    Admission,
    Fact,
    FactStore,
    Ticket,
)
from harness.policy.history import after_current, current_message, step_messages, system_messages, turn_system

NO_FALLBACK = "previous facts kept; no fallback applied"
ROLE = "writer"

# `{keys}`: the allowed keys, the chronology's key set (`writer_instructions`).
WRITER_INSTRUCTIONS = (
    "Extract the explicit key=value declarations from the user's message. Allowed keys: "
    "{keys}. Reply with JSON only: "
    '{{"facts": [{{"key": "...", "value": "...", "evidence": "..."}}]}} with at most '
    f"{MAX_FACTS} facts, where evidence is an exact quotation of the user's message that "
    "contains the value. Never infer, never rephrase: a question or prose is not a "
    'declaration. Reply {{"facts": []}} when the message declares nothing.'
)

# The shape of the writer's reply, for structured output. It fixes the shape only (strings, no
# extra fields): no enum of allowed keys and no maxItems, so the host sees and rejects them.
FACTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {name: {"type": "string"} for name in ("key", "value", "evidence")},
                "required": ["key", "value", "evidence"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
    "additionalProperties": False,
}


def fact_text(fact: Fact) -> str:
    """A fact as one retained item, with its provenance."""
    return f'{fact.key}={fact.value} (user wrote "{fact.evidence}" at turn {fact.turn})'


class BoundedFacts:
    """System, the facts block (unverified user assertions), and the current user message."""

    name = "bounded-facts"
    description = "Sends only admitted key=value facts with provenance (at most 5) plus the current message."
    params = (
        Param("mode", "message", "how the facts block is injected", choices=("message", "provider")),
        Param("provenance", "on", "quote each fact's evidence and turn in the block", choices=("on", "off")),
    )
    keeps = "admitted key=value declarations"
    shared_across_sessions = True  # every session reads and writes the one fact store
    roles = (ROLE,)  # the fact writer's calls

    def __init__(self, system: Message | None, mode: str = "message", provenance: str = "on") -> None:
        self.system = system
        self.mode = mode
        self.provenance = provenance == "on"
        self.store = FactStore()
        self._ticket: Ticket | None = None

    def view(self, turn: UserTurn) -> list[Message]:
        # The ticket is taken when the turn starts: an extraction applied later with an older
        # ticket (or one from before a forget) is refused as stale.
        self._ticket = self.store.begin_turn(turn.number, turn.user, turn.keys)
        block, current = self.store.prompt_block(self.provenance), current_message(turn)
        if block is None:
            context = [current]
        elif self.mode == "message":
            context = [Message("user", f"{block}\n\n{turn.user}", "facts+current", turn.number, turn.session)]
        else:
            context = [Message("user", block, origin="facts", session=turn.session), current]
        return system_messages(self.system) + context + after_current(turn)

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        admission = self._admit(turn, aux)
        corrected = {f.key for f in admission.replaced}
        added = [f.key for f in self.store.facts if f.turn == turn.number and f.key not in corrected]
        why = f"evicted from the fact store by new key{'s' if len(added) > 1 else ''} {', '.join(added)} at turn {turn.number}"
        dropped = [Drop(fact_text(f), why, "eviction") for f in admission.evicted]
        dropped += replaced_drops(admission.replaced, self.store.facts, turn.number)
        # The message itself is never stored: only what the store admitted from it survives.
        kept = "not stored: only admitted key=value declarations become facts"
        if admission.status == "rejected":
            kept = f"not stored: the extraction of turn {turn.number} was rejected ({admission.reason})"
        dropped.append(Drop(turn.user, f"{kept} (turn {turn.number})", "not-stored"))
        # The turn's tool calls and results are never stored either: the writer reads only the
        # user's words, so an admission's outcome says nothing about them.
        dropped += [
            Drop(m.text, f"{unread(m)} (turn {turn.number})", "not-stored")
            for m in turn_system(turn) + step_messages(turn)
            if m.text
        ]
        return Outcome(dropped=dropped, facts=self._record(admission))

    def _admit(self, turn: UserTurn, aux: AuxCalls) -> Admission:
        assert self._ticket is not None, "view() starts every turn"
        # Only the user's original text, whatever the mode: the block and answers are excluded.
        try:
            reply = aux.call(
                ROLE,
                writer_messages(turn.user, turn.keys),
                schema=FACTS_SCHEMA,
                reference=lambda _request: reference_writer_output(turn.user, None, turn.keys),
            )
        except ModelError as exc:
            return Admission("rejected", f"writer call failed: {exc}; {NO_FALLBACK}")
        try:
            candidates = parse_writer_output(reply)
        except ValueError as exc:
            return Admission("rejected", f"writer output unusable: {exc}; {NO_FALLBACK}")
        return self.store.admit(self._ticket, candidates, datetime.now(UTC))

    def forget(self, event: Forget) -> Outcome:
        removed = self.store.forget(event.key)
        why = f"removed by forget {event.key or 'all'} at turn {event.number}"
        record = self._record(Admission("none", "forget"), forgotten=event.key or "all", removed=removed)
        return Outcome(dropped=[Drop(fact_text(f), why, "forget") for f in removed], facts=record)

    def _record(self, admission: Admission, forgotten: str | None = None, removed: tuple = ()) -> dict:
        record = {"facts": self.store.snapshot(), "admission": admission.as_record()}
        if forgotten is not None:
            record["forget"] = {"key": forgotten, "removed": [f.as_record() for f in removed]}
        return record

    def retained(self) -> list[Message]:
        return [Message("system", fact_text(f), origin="facts", turn=f.turn) for f in self.store.facts]


def replaced_drops(replaced: Collection[Fact], facts: Collection[Fact], number: int) -> list[Drop]:
    """The facts a correction replaced at turn `number`, each named with the value that replaced it
    (still in `facts`: eviction takes the oldest turn first, never the turn's own facts)."""
    now = {f.key: f for f in facts}
    why = "replaced in the fact store by the correction {}={} at turn {}"
    return [Drop(fact_text(old), why.format(old.key, now[old.key].value, number), "replaced") for old in replaced]


def unread(message: Message) -> str:
    """Why a turn's system message, tool call or result is not in the store: the writer never reads it."""
    kinds = {"tool": "tool results", "system": "system messages"}
    kind = kinds.get(message.role, "tool calls")
    return f"not stored: {kind} are not read by the fact store"


def writer_instructions(keys: Collection[str] = ALLOWED_KEYS) -> str:
    """The writer's instructions, allowing the keys `keys`."""
    return WRITER_INSTRUCTIONS.format(keys=", ".join(keys))


def writer_messages(user_text: str, keys: Collection[str] = ALLOWED_KEYS) -> tuple[Message, ...]:
    """The writer's request: its instructions (allowing `keys`, the chronology's key set) and
    the user's original text only (no history, no facts block, no answer)."""
    return (
        Message("system", writer_instructions(keys), origin="system"),
        Message("user", user_text, origin="current"),
    )
