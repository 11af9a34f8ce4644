"""The one definition of "in view" (docs/chronologies.md, "When something is in view").

A **prohibition** is stated by any message its `present` pattern matches.

A **value** `key=value` is stated by a message only where the message states it *as that
key's value*:

- the user's own words (history, retrieved or current message) state it by a declaring segment
  (the one reader of declarations, `harness.chronology.declarations`) or by the turn's `sets:`;
  never by prose around it, so the question's own words ("is production still up?") never put
  `environment=production` in view;
- the chronology's system message states it only by a declaring segment;
- text a policy or a model produced (an assistant reply, a summary, a facts block or a stored
  fact, an answer), and outside text (a tool call's arguments, a tool's result: never a
  declaration by the user, whatever its role), states it by a declaring segment, or where one
  clause pairs the key's name with the value.

**Evidence** for probe P is each message marked `evidence: [P]`, whole: a turn's user message
(in a history, retrieved or current message), or a tool result (the tool message answering that
call, its content as recorded). The harness cannot tell whether a summary, a reply, a stored
fact or a collapsed note carries what the message held, so generated text never states
evidence, and neither does a message a policy clipped, cleared or rewrote.

Everywhere, a value is matched as a whole value: never inside a longer value, path or version
(`4.2` is not in `4.2.1`, `ERP` not in `/var/log/erp.log`, `Billing` not in `billing.log`), and
never inside another value of the same key that contains it (`SQL Server` in `SQL Server 2022`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from harness.base.messages import Message
from harness.chronology.declarations import key_name, parse_declarations
from harness.chronology.types import Chronology, Prohibition, UserTurn

# A sentence ends at `.`, `!`, `?` or `…` followed by a space; a clause also at `;` and line
# breaks. `4.2.1` and `erp.log` are not split.
_CLAUSES = re.compile(r"(?<=[.!?…])\s+|[;\n\r]")

# Characters that continue a value, path or version on either side of a match.
_BEFORE = r"(?<![\w./\\-])"
_AFTER = r"(?![\w/\\-]|\.\w)"

# Where a message's words are the user's own: they state a value only by a declaration or `sets:`.
_USER_ORIGINS = frozenset({"history", "current", "retrieved"})
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
    """Whether `text` holds `wanted` as a whole value, ignoring case: the rule every value
    check uses, without a key (an `expect: {value: ...}`)."""
    return bool(_one_value(wanted).found(text))


class _KeyValues:
    """Every known value of one key as one pattern: whole values only, the longest first at each
    position, so a value is never found inside another value of the key that contains it."""

    def __init__(self, values: Iterable[str]) -> None:
        self.by_text: dict[str, list[str]] = {}
        for text in values:
            self.by_text.setdefault(text.lower(), []).append(text)
        ordered = sorted(self.by_text, key=len, reverse=True)
        alternatives = "|".join(re.escape(text) for text in ordered)
        self.pattern = re.compile(f"{_BEFORE}(?:{alternatives}){_AFTER}", re.IGNORECASE)

    def found(self, text: str) -> set[str]:
        return {value for match in self.pattern.finditer(text) for value in self.by_text[match.group(0).lower()]}


@functools.lru_cache(maxsize=1024)
def _one_value(text: str) -> _KeyValues:
    return _KeyValues((text,))


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
        self._values = {key: _KeyValues(texts) for key, texts in by_key.items()}
        self._known = {(key, text) for key, texts in by_key.items() for text in texts}
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
        stated = self._prohibitions(message.text)
        if message.origin == "facts+current":
            block, separator, own = message.content.partition(_FACTS_BLOCK_SEPARATOR)
            if not separator:
                block, own = "", message.content
            return frozenset(stated | self._generated(block) | self._users(own, message.turn))
        if message.role == "user" and message.origin in _USER_ORIGINS:
            return frozenset(stated | self._users(message.content, message.turn))
        if message.origin == "system":
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
        asked = [key for key, pattern in self._keys.items() if pattern.search(question)]
        if asked:
            stated |= {s for key in asked for s in self._whole_values(key, answer)}
        return frozenset(stated)

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
        declared = parse_declarations(text, self.keys)
        return {value(k, d.value) for k, d in declared.items() if (k, d.value) in self._known}

    def _users(self, text: str, turn: int | None) -> set[Subject]:
        stated = self._declared(text)
        stated.update(value(k, v) for k, v in self.sets.get(turn, ()) if turn is not None)
        own, marked = self.evidence.get(turn, ("", frozenset())) if turn is not None else ("", frozenset())
        if marked and own in text:
            stated.update(marked)
        return stated

    def _generated(self, text: str) -> set[Subject]:
        stated = self._declared(text)
        keys = [key for key, pattern in self._keys.items() if pattern.search(text)]
        if not keys:
            return stated
        for clause in _CLAUSES.split(text):
            for key in keys:
                if self._keys[key].search(clause):
                    stated.update(self._whole_values(key, clause))
        return stated

    def _whole_values(self, key: str, text: str) -> set[Subject]:
        return {value(key, v) for v in self._values[key].found(text)}
