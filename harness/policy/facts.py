"""The controlled fact memory of `bounded-facts`: explicit declarations, atomic admission.

Only `key=value` declarations the user wrote in the current message can become facts. A
writer (a model, or the deterministic reference writer) proposes candidates from that message
alone; `FactStore.admit` checks them against the declarations parsed from the same message and
admits the whole batch or nothing. A quotation proves the user wrote the words, not that they
are true: facts stay unverified assertions and never authorize an action.

    parse_declarations(text, keys)           what the user explicitly declared (harness.chronology.declarations)
    parse_writer_output(reply)               a writer's JSON reply -> candidates (harness.chronology.writer)
    FactStore                                begin_turn -> Ticket, admit -> Admission, forget

The allowed keys are the chronology's key set (`UserTurn.keys`: the seed's ten unless the
chronology names its own with `keys:`), which the ticket of each turn carries to admission.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from harness.chronology.declarations import ALLOWED_KEYS, MAX_VALUE_CHARS, Declaration, parse_declarations
from harness.chronology.writer import Candidate

MAX_FACTS = 5  # in the store, and per extraction
MAX_EVIDENCE_CHARS = 512
MAX_MESSAGE_CHARS = 4096

# Every rejection reason ends with this, so a reader of the diagnostics never has to guess.
_KEPT_NO_FALLBACK = "previous facts kept; no fallback applied"

_PROMPT_HEADER = "Remembered facts (unverified user assertions with provenance; they do not authorize any action):"
_PLAIN_HEADER = "Remembered facts (unverified user assertions; they do not authorize any action):"


# --- records -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """An admitted user assertion with its provenance: the quote, the turn, and when (UTC)."""

    key: str
    value: str
    evidence: str
    turn: int
    recorded_at: datetime  # UTC, tz-aware

    def as_record(self) -> dict[str, object]:
        """The fact as written to `facts.jsonl`."""
        return {
            "key": self.key,
            "value": self.value,
            "evidence": self.evidence,
            "turn": self.turn,
            # ISO-8601 in UTC with a trailing Z, e.g. 2024-05-01T12:00:00Z
            "recorded_at": self.recorded_at.astimezone(UTC).isoformat().removesuffix("+00:00") + "Z",
        }


@dataclass(frozen=True)
class Ticket:
    """The Epoch/Number ticket taken when a turn starts; only the latest one may write."""

    epoch: int
    number: int  # the turn number
    user_text: str  # the user's original text of that turn
    keys: tuple[str, ...] = ALLOWED_KEYS  # the key set the text is read with: the allowed keys


@dataclass(frozen=True)
class Admission:
    """One extraction's outcome: accepted, rejected (the whole batch) or none (nothing declared)."""

    status: Literal["accepted", "rejected", "none"]
    reason: str
    evicted: tuple[Fact, ...] = ()  # facts evicted by this admission
    replaced: tuple[Fact, ...] = ()  # previous facts replaced by a correction of the same key

    def as_record(self) -> dict[str, object]:
        """The admission as written to `facts.jsonl`."""
        return {
            "status": self.status,
            "reason": self.reason,
            "evicted": [fact.as_record() for fact in self.evicted],
            "replaced": [fact.as_record() for fact in self.replaced],
        }


def _age(fact: Fact) -> tuple[int, str]:
    """Sort key of the store: oldest turn first, then ordinal key order (str comparison)."""
    return (fact.turn, fact.key)


# --- admission checks --------------------------------------------------------------------


class _Rejected(Exception):
    """Internal: a check failed; the message is the reported reason (without the suffix)."""


_Checked = tuple[str, str, str]  # a candidate that passed its own checks: key, value, evidence


def _check_batch(user_text: str, candidates: Sequence[Candidate] | None, keys: Collection[str]) -> list[_Checked]:
    """Checks 2 to 6 of admission, in the order that decides the reported reason; `keys` are the allowed keys."""
    if len(user_text) > MAX_MESSAGE_CHARS:
        raise _Rejected(
            f"user message has {len(user_text)} characters; the limit is {MAX_MESSAGE_CHARS} "
            "and a message is never truncated"
        )
    if candidates is None:
        raise _Rejected("writer returned no facts list (None)")
    if len(candidates) > MAX_FACTS:
        raise _Rejected(f"writer proposed {len(candidates)} facts; at most {MAX_FACTS} per extraction")
    seen: set[str] = set()
    checked = [_check_candidate(n, c, user_text, keys, seen) for n, c in enumerate(candidates, 1)]
    _check_association(checked, parse_declarations(user_text, keys))
    return checked


def _check_candidate(
    n: int, candidate: Candidate | None, user_text: str, keys: Collection[str], seen: set[str]
) -> _Checked:
    """One candidate's own checks; `seen` collects keys to catch duplicates in the batch."""
    if candidate is None:
        raise _Rejected(f"candidate {n} is missing (null)")
    # getattr: scripted chronology items (WriterCandidate) have the same three fields.
    key = getattr(candidate, "key", None)
    value = getattr(candidate, "value", None)
    evidence = getattr(candidate, "evidence", None)
    if not isinstance(key, str) or key not in keys:
        raise _Rejected(f"candidate {n}: unknown key {key!r} (allowed: {', '.join(keys)})")
    if key in seen:
        raise _Rejected(f"candidate {n}: duplicate key {key!r} in the batch")
    seen.add(key)
    value = _check_text(n, key, "value", value, MAX_VALUE_CHARS)
    evidence = _check_text(n, key, "evidence", evidence, MAX_EVIDENCE_CHARS)
    if evidence not in user_text:  # `in` on str is ordinal and case-sensitive
        raise _Rejected(f"candidate {n} ({key}): evidence is not quoted from the user message: {evidence!r}")
    if value not in evidence:
        raise _Rejected(f"candidate {n} ({key}): value {value!r} is not quoted in its evidence {evidence!r}")
    return key, value, evidence


def _check_text(n: int, key: str, field: str, text: object, limit: int) -> str:
    """A value or evidence field: present, not blank, and within its length limit."""
    if not isinstance(text, str) or not text.strip():
        raise _Rejected(f"candidate {n} ({key}): missing {field} (got {text!r})")
    if len(text) > limit:
        raise _Rejected(f"candidate {n} ({key}): {field} has {len(text)} characters; the limit is {limit}")
    return text


def _check_association(checked: list[_Checked], declared: dict[str, Declaration]) -> None:
    """The batch must be exactly the user's declarations: same count, keys and values."""
    if len(checked) != len(declared):
        listing = ", ".join(declared) or "nothing"
        raise _Rejected(f"count mismatch: {len(checked)} proposed, {len(declared)} declared ({listing})")
    for n, (key, value, _) in enumerate(checked, 1):
        declaration = declared.get(key)
        if declaration is None or declaration.value != value:
            raise _Rejected(
                f"wrong association: candidate {n} proposes {key}={value} "
                f"but the user declared {_closest(key, value, declared)}"
            )


def _closest(key: str, value: str, declared: dict[str, Declaration]) -> str:
    """The declarations a wrong candidate most likely meant: same key, else same value, else all."""
    if key in declared:
        matches = [declared[key]]
    else:
        matches = [d for d in declared.values() if d.value == value] or list(declared.values())
    return "; ".join(f"{d.key}={d.value}" for d in matches)


# --- the store ---------------------------------------------------------------------------


class FactStore:
    """At most five facts of one conversation, admitted atomically, each with its provenance.

    A store belongs to one conversation (one policy replay) and is driven by one thread, so it
    takes no locks. Turn numbers must increase: a ticket is issued once, and `forget` bumps the
    epoch, so neither an older turn's extraction nor one begun before a forget can write.
    """

    def __init__(self) -> None:
        self._facts: dict[str, Fact] = {}
        self._epoch = 0
        self._ticket: Ticket | None = None  # the latest ticket issued by begin_turn

    @property
    def facts(self) -> tuple[Fact, ...]:
        """The facts, oldest turn first, then ordinal key order."""
        return tuple(sorted(self._facts.values(), key=_age))

    @property
    def epoch(self) -> int:
        """Incremented by every `forget`; tickets of an earlier epoch are stale."""
        return self._epoch

    def begin_turn(self, number: int, user_text: str, keys: Sequence[str] = ALLOWED_KEYS) -> Ticket:
        """Take the ticket of a new turn, whose text is read with the key set `keys` (the
        chronology's, `UserTurn.keys`); raise ValueError if `number` does not increase."""
        if self._ticket is not None and number <= self._ticket.number:
            # Eviction and staleness both rely on turn order; a replayed number would let an
            # old message write again.
            raise ValueError(f"turn {number} cannot begin after turn {self._ticket.number}: turn numbers must increase")
        self._ticket = Ticket(self._epoch, number, user_text, tuple(keys))
        return self._ticket

    def admit(self, ticket: Ticket, candidates: Sequence[Candidate] | None, recorded_at: datetime) -> Admission:
        """Admit a writer's whole batch for `ticket`'s message, or reject it and change nothing.

        Raises ValueError only for a naive `recorded_at` (a caller bug, not a writer's fault).
        """
        if recorded_at.tzinfo is None or recorded_at.utcoffset() is None:  # its zone would be a guess
            raise ValueError(f"recorded_at must be timezone-aware (got naive {recorded_at.isoformat()})")
        recorded_at = recorded_at.astimezone(UTC)
        try:
            self._check_ticket(ticket)
            checked = _check_batch(ticket.user_text, candidates, ticket.keys)
        except _Rejected as rejection:
            return Admission("rejected", f"{rejection}; {_KEPT_NO_FALLBACK}")
        if not checked:
            return Admission("none", "nothing declared and nothing proposed; facts unchanged")
        return self._apply(ticket.number, checked, recorded_at)

    def forget(self, key: str | None) -> tuple[Fact, ...]:
        """Remove the fact `key` (all facts when None), return what was removed, bump the epoch."""
        removed = tuple(f for f in self.facts if key is None or f.key == key)
        for fact in removed:
            del self._facts[fact.key]
        # Bump even when nothing was removed: an extraction under way must not write afterwards.
        self._epoch += 1
        return removed

    def prompt_block(self, provenance: bool = True) -> str | None:
        """The facts as a labelled block for the request view; None when the store is empty.

        Each fact is a `key=value` line of its own, so the one reader of declarations reads the
        block as it reads the user; `provenance=False` leaves out the quotation lines (to show
        what the provenance itself adds to a request).
        """
        if not self._facts:
            return None
        # recorded_at is deliberately absent: the request view must be identical across runs.
        lines = [_PROMPT_HEADER if provenance else _PLAIN_HEADER]
        for fact in self.facts:
            lines.append(f"{fact.key}={fact.value}")
            if provenance:
                lines.append(f'  provenance: user wrote "{fact.evidence}" at turn {fact.turn}')
        return "\n".join(lines)

    def snapshot(self) -> list[dict[str, object]]:
        """The facts as records, in `facts` order."""
        return [fact.as_record() for fact in self.facts]

    def _check_ticket(self, ticket: Ticket) -> None:
        """Check 1: only the latest ticket of the current epoch may write."""
        if ticket.epoch != self._epoch:
            raise _Rejected(
                f"stale update: the ticket of turn {ticket.number} was taken in epoch "
                f"{ticket.epoch}, the store is in epoch {self._epoch} (a forget happened since)"
            )
        current = self._ticket
        if current is None or ticket.number != current.number:
            now = "no turn has begun" if current is None else f"the current turn is {current.number}"
            raise _Rejected(f"stale update: the ticket is for turn {ticket.number} but {now}")
        if ticket.user_text != current.user_text:
            raise _Rejected(f"stale update: the ticket's text is not the message that began turn {ticket.number}")
        if ticket.keys != current.keys:
            raise _Rejected(f"stale update: the ticket's keys are not those turn {ticket.number} began with")

    def _apply(self, turn: int, checked: list[_Checked], recorded_at: datetime) -> Admission:
        """Write a checked batch: corrections replace their key, then evict beyond five."""
        replaced: list[Fact] = []
        for key, value, evidence in checked:
            fact = Fact(key, value, evidence, turn, recorded_at)
            previous = self._facts.get(key)
            # A correction really replaces `previous`: re-admitting the same turn's fact does not.
            if previous is not None and (previous.turn, previous.value, previous.evidence) != (turn, value, evidence):
                replaced.append(previous)
            self._facts[key] = fact
        evicted = self._evict()
        reason = _accepted_reason(checked, replaced, evicted)
        return Admission("accepted", reason, tuple(evicted), tuple(replaced))

    def _evict(self) -> list[Fact]:
        """Evict the oldest turn (ties: ordinal key order) until at most five facts remain."""
        evicted: list[Fact] = []
        while len(self._facts) > MAX_FACTS:
            oldest = min(self._facts.values(), key=_age)
            evicted.append(self._facts.pop(oldest.key))
        return evicted


def _accepted_reason(checked: list[_Checked], replaced: list[Fact], evicted: list[Fact]) -> str:
    """A one-line account of an accepted batch: admitted, replaced and evicted facts."""
    reason = f"accepted {len(checked)}: " + "; ".join(f"{k}={v}" for k, v, _ in checked)
    if replaced:
        reason += "; replaced " + ", ".join(_describe(f) for f in replaced)
    if evicted:
        reason += "; evicted " + ", ".join(_describe(f) for f in evicted)
    return reason


def _describe(fact: Fact) -> str:
    """`key=value (turn N)`, how reasons name a fact."""
    return f"{fact.key}={fact.value} (turn {fact.turn})"
