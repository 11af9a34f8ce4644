"""The one definition of "in view" (docs/chronologies.md, "When something is in view").

A **prohibition** is stated by any message its `present` pattern matches.

A **value** `key=value` is stated by a message only where the message states it *as that
key's value*:

- the user's own words (history, retrieved or current message) state it by a declaring segment
  (the one reader of declarations, `harness.chronology.declarations`) or by the turn's `sets:`;
  never by prose around it, so the question's own words ("is production still up?") never put
  `environment=production` in view;
- the chronology's system message, and a system message a turn adds (`system:`), state it only
  by a declaring segment;
- a pinned copy (origin `pinned`) states what its original states: it is the same words;
- text a policy or a model produced (an assistant reply, a summary, a facts block or a stored
  fact, an answer), and outside text (a tool call's arguments, a tool's result: never a
  declaration by the user, whatever its role), states it by `key=value` written in it (a
  declaring segment, or one quoted in prose: `declarations.written_values`), or where one clause
  of the prose around those pairs the key's name with the value.

**Evidence** for probe P is each message marked `evidence: [P]`, whole: a turn's user message
(in a history, retrieved or current message), or a tool result (the tool message answering that
call, its content as recorded). The harness cannot tell whether a summary, a reply, a stored
fact or a collapsed note carries what the message held, so generated text never states
evidence, and neither does a message a policy clipped, cleared or rewrote.

Everywhere, a value is matched as a whole value, by the one definition of
`harness.chronology.values` (NFC, ignoring case): never inside a longer token, value, path,
address or version (`4.2` is not in `4.2.1` nor `4.2~rc1`, `ERP` not in `/var/log/erp.log`,
`alice` not in `alice@example.com`, `C` not in `C++`, `db1` not in `db1:5432`), never inside
another value of the same key that contains it (`SQL Server` in `SQL Server 2022`), and never
inside another key's declared value (`constraint=never drop the PostgreSQL replica` states no
database: a declaring segment states its own key's value only).

**Opaque content** (origin `opaque`: a provider's encrypted compaction item, which a real client
cannot read) states nothing, whatever its text: the harness does not guess what it kept. A view
holding one makes "in view" unknown for a subject no other message states (`harness.run.trace`).

**Outside text** in the retained state (a tool's result, a tool call, a recorded reply: text the
chronology supplies, not the policy's memory) is named by `outside`, so that a forgotten value it
repeats after the forget is a re-entry from that text, never memory the policy kept
(`harness.run.residue`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from harness.base.messages import Message
from harness.chronology.declarations import key_name, parse_declarations, without_declarations, written_values
from harness.chronology.types import Chronology, Prohibition, UserTurn
from harness.chronology.values import WholeValues, holds, identity
from harness.results.rows import RESIDUE_REENTERED

# A sentence ends at `.`, `!`, `?` or `…` followed by a space; a clause also at `;` and line
# breaks. `4.2.1` and `erp.log` are not split.
_CLAUSES = re.compile(r"(?<=[.!?…])\s+|[;\n\r]")

# Where a message's words are the user's own: they state a value only by a declaration or `sets:`.
_USER_ORIGINS = frozenset({"history", "current", "retrieved", "pinned"})
_FACTS_BLOCK_SEPARATOR = "\n\n"  # bounded-facts' message mode: the block, a blank line, the user's words


@dataclass(frozen=True, slots=True)
class Subject:
    """What a check follows: a prohibition by id, one value of one key, or one evidence turn."""

    kind: Literal["prohibition", "value", "evidence"]
    name: str  # the prohibition's id, the key, or the probe's id
    value: str = ""  # the value; for evidence, the evidence turn's number


def prohibition(pid: str) -> Subject:
    return Subject("prohibition", pid)


def value(key: str, text: str) -> Subject:
    return Subject("value", key, text)


def evidence(probe: str, turn: int, call: str | None = None) -> Subject:
    """A message of turn `turn` marked as evidence for `probe`: its user message, or with `call`
    the tool result answering that call."""
    return Subject("evidence", probe, str(turn) if call is None else f"{turn}:{call}")


def evidence_of(turn: UserTurn, probe: str) -> list[Subject]:
    """The messages of a turn marked as evidence for `probe`: its user message, its tool results."""
    marked = [evidence(probe, turn.number)] if probe in turn.evidence else []
    results = [r.id for step in turn.steps for r in step.results if probe in r.evidence]
    return marked + [evidence(probe, turn.number, call) for call in results]


def holds_value(text: str, wanted: str) -> bool:
    """Whether `text` holds `wanted` as a whole value (`harness.chronology.values`): the rule
    every value check uses, without a key (an `expect: {value: ...}`)."""
    return holds(text, wanted)


@dataclass(frozen=True, slots=True)
class Outside:
    """A retained message whose text came from outside the policy's memory, and its turn."""

    what: str  # the tool result | the tool call | the recorded reply
    turn: int

    @property
    def where(self) -> str:
        """How residue.csv names a value this text brought back: `re-entered from the tool result at turn 5`."""
        return f"{RESIDUE_REENTERED} {self.what} at turn {self.turn}"


class Presence:
    """Which subjects a message or a text states, for one chronology.

    `values`: every `key=value` the checks may ask about (the ledger's); a value outside it is
    never reported. Results are cached per message and per text: a replay asks about the same
    history messages at every turn they stay in a view.
    """

    def __init__(self, chronology: Chronology, values: Iterable[tuple[str, str]]) -> None:
        self.prohibitions: tuple[Prohibition, ...] = tuple(chronology.prohibitions)
        self.keys: tuple[str, ...] = chronology.keys  # the chronology's key set (the seed's ten by default)
        self.sets: dict[int, tuple[tuple[str, str], ...]] = {t.number: t.sets for t in chronology.user_turns if t.sets}
        # turn -> (its message, the evidence subjects that message states when sent whole)
        self.evidence: dict[int, tuple[str, frozenset[Subject]]] = {
            t.number: (t.user, frozenset(evidence(p, t.number) for p in t.evidence))
            for t in chronology.user_turns
            if t.evidence
        }
        # (turn, call id) -> (the recorded result, the evidence subjects its tool message states when whole)
        self.results: dict[tuple[int, str], tuple[str, frozenset[Subject]]] = {
            (t.number, r.id): (r.content, frozenset(evidence(p, t.number, r.id) for p in r.evidence))
            for t in chronology.user_turns
            for step in t.steps
            for r in step.results
            if r.evidence
        }
        by_key: dict[str, list[str]] = {}
        for key, text in values:
            if text not in by_key.setdefault(key, []):
                by_key[key].append(text)
        self._keys = {key: key_name(key) for key in by_key}
        self._values = {key: WholeValues(texts) for key, texts in by_key.items()}
        self._every = WholeValues(text for texts in by_key.values() for text in texts)
        # Each turn's recorded reply: outside text when a history holds it as written.
        self.replies: dict[int, str] = {t.number: t.assistant for t in chronology.user_turns if t.assistant}
        self._messages: dict[Message, frozenset[Subject]] = {}
        self._texts: dict[str, frozenset[Subject]] = {}

    # --- messages ----------------------------------------------------------------------------

    def of_message(self, message: Message) -> frozenset[Subject]:
        """Every subject the message states, by the rules of its kind (module docstring)."""
        found = self._messages.get(message)
        if found is None:
            found = self._messages[message] = self._of_message(message)
        return found

    def _of_message(self, message: Message) -> frozenset[Subject]:
        if message.origin == "opaque":  # what an encrypted item keeps is not the harness's to read
            return frozenset()
        stated = self._prohibitions(message.text)
        if message.origin == "facts+current":
            block, separator, own = message.content.partition(_FACTS_BLOCK_SEPARATOR)
            if not separator:
                block, own = "", message.content
            return frozenset(stated | self._generated(block) | self._users(own, message.turn))
        if message.role == "user" and message.origin in _USER_ORIGINS:
            return frozenset(stated | self._users(message.content, message.turn))
        if message.origin == "system" or (message.role == "system" and message.origin in _USER_ORIGINS):
            return frozenset(stated | self._declared(message.content))
        if message.role == "tool" and message.turn is not None and message.tool_call_id is not None:
            recorded, marked = self.results.get((message.turn, message.tool_call_id), ("", frozenset()))
            if marked and message.content == recorded:
                stated |= marked
        # Generated or outside text: a reply, a summary, a fact, a tool call's arguments, a tool's result.
        return frozenset(stated | self._generated(message.text))

    def of_answer(self, answer: str, question: str = "") -> frozenset[Subject]:
        """What an answer states: generated text, whose clauses may also lean on the keys the
        question names (`Which database?` answered by `PostgreSQL.`)."""
        stated = self._prohibitions(answer) | self._generated(answer)
        asked = self.asked(question)
        if asked:
            prose = without_declarations(answer, self.keys)
            stated |= {s for key in asked for s in self._whole_values(key, prose)}
        return frozenset(stated)

    def asked(self, question: str) -> list[str]:
        """The keys with known values that a question names (`Which database?`: `database`)."""
        return [key for key, pattern in self._keys.items() if pattern.search(question)]

    def without_values(self, text: str) -> str:
        """The text (folded, `harness.chronology.values.fold`) with every known value standing
        whole in it blanked: what it says apart from the values it quotes."""
        return self._every.without(text)

    def outside(self, message: Message) -> Outside | None:
        """Whether a message's text came from outside the policy's memory: a tool's result, an
        assistant's tool call, or a turn's recorded reply as written (module docstring)."""
        if message.turn is None or message.origin not in ("history", "retrieved", "current"):
            return None
        if message.role == "tool":
            return Outside("the tool result", message.turn)
        if message.role == "assistant" and message.tool_calls:
            return Outside("the tool call", message.turn)
        if message.role == "assistant" and self.replies.get(message.turn) == message.content:
            return Outside("the recorded reply", message.turn)
        return None

    def of_text(self, text: str) -> frozenset[Subject]:
        """What a text of unknown kind may state, read leniently (declarations, pairings and
        prohibitions): for a policy's `Drop`, which gives only the text it dropped."""
        found = self._texts.get(text)
        if found is None:
            found = self._texts[text] = frozenset(self._prohibitions(text) | self._generated(text))
        return found

    # --- the rules ---------------------------------------------------------------------------

    def _prohibitions(self, text: str) -> set[Subject]:
        return {prohibition(p.id) for p in self.prohibitions if p.present.search(text)}

    def _declared(self, text: str) -> set[Subject]:
        """The user's declarations (the last of a key wins, as the one reader says)."""
        return {s for k, d in parse_declarations(text, self.keys).items() for s in self._same(k, d.value)}

    def _same(self, key: str, text: str) -> list[Subject]:
        """Every known spelling of `text` as a value of `key` (the same value: `values.identity`)."""
        known = self._values.get(key)
        return [value(key, v) for v in known.by_identity.get(identity(text), ())] if known else []

    def _users(self, text: str, turn: int | None) -> set[Subject]:
        stated = self._declared(text)
        stated.update(value(k, v) for k, v in self.sets.get(turn, ()) if turn is not None)
        own, marked = self.evidence.get(turn, ("", frozenset())) if turn is not None else ("", frozenset())
        if marked and own in text:
            stated.update(marked)
        return stated

    def _generated(self, text: str) -> set[Subject]:
        """Every `key=value` written in it (a repeated key's earlier ones too: the model reads them
        all), by the values of its key standing whole in it (`database=PostgreSQL (turn 3)`), and
        the clauses of the prose around them that pair a key with its value."""
        stated = {
            s
            for w in written_values(text, self.keys)
            if w.key in self._values
            for s in self._whole_values(w.key, text[w.start : w.end])
        }
        prose = without_declarations(text, self.keys)
        keys = [key for key, pattern in self._keys.items() if pattern.search(prose)]
        if not keys:
            return stated
        for clause in _CLAUSES.split(prose):
            for key in keys:
                if self._keys[key].search(clause):
                    stated.update(self._whole_values(key, clause))
        return stated

    def _whole_values(self, key: str, text: str) -> set[Subject]:
        return {value(key, v) for v in self._values[key].found(text)}
