"""What one policy did with each subject, built as the replay goes, in one pass.

For every subject (`harness.run.presence`) and every session, the trace keeps whether the
session's latest request view states it and its last departure with the cause that removed
it; for the retained state, how many of its messages state each subject, per session (a shared
store's messages belong to every session) and per place (`where`: the history, a summary, the
fact store), which `harness.run.residue` reads for what a policy keeps of an old value.

Views and retained states are read by their changes (`harness.results.views.change`), so a
turn costs what changed, not the length of the history.

The cause of a departure is the policy's own: the last `Drop` that held the subject between the
last view that showed it and the view that no longer does (a drop of another session counts
only when the policy shares its state across sessions, or for a forget, which touches all);
with no such drop, a subject still retained for the session left the request window; otherwise
the departure is untraced. A subject that never entered the session's view since its statement
is explained by the policy's drop (any session's, for a shared state), else by `other-session`
when it was stated in another session of a policy whose state is not shared, else untraced.
A view-only edit (`harness.policy.VIEW_CAUSES`, clear-tool-uses' `tool-clear`) is reported by
the policy after the view it edited: such a drop at the same turn, of the same session, names
the cause of a departure from that turn's view that would otherwise read `window`.

A view (or retained state) holding opaque content (origin `opaque`, an encrypted compaction item
whose text `harness.run.presence` never reads) cannot show that a subject is absent: `seen_in_view`
and `seen_in_retained` are then None (unknown) for every subject no readable message states.

Messages in dispute (`dispute`: a provider reported context edits other than the policy predicted,
`Outcome.disputed`) make `seen_in_view` None for every subject that only they state, until the
session's next view; what the rest of the view states stays measured.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from harness.base.messages import Message
from harness.chronology.types import Forget
from harness.policy import PLACES, VIEW_CAUSES, Drop
from harness.results.rows import DISPUTED_VIEW, OPAQUE_VIEW
from harness.results.views import Change, change
from harness.run.presence import Outside, Presence, Subject
from harness.run.turnstate import TurnState


def place_of(message: Message, history: str = "history") -> str:
    """Where in the retained state a message sits: `summary`, `fact store`, or `history`."""
    return PLACES.get(message.origin, history)


@dataclass(frozen=True)
class Loss:
    """Where something left the probe session's request view, in words, and its cause category."""

    cause: str  # window, reduction, summary, eviction, replaced, not-stored, tool-collapse, forget, tool-clear, other-session, untraced
    where: str


@dataclass
class _Session:
    view: Sequence[Message] = ()
    counts: Counter[Subject] = field(default_factory=Counter)
    last: int | None = None  # the turn of the latest view
    opaque: int = 0  # messages of the latest view whose content the harness cannot read (origin `opaque`)
    disputed: Counter[Subject] = field(default_factory=Counter)  # stated by messages in dispute (`dispute`)
    held: Counter[Subject] = field(default_factory=Counter)  # of `counts`, set aside while in dispute
    # Each subject's last departure: the turn of the view that no longer held it, and why.
    departures: dict[Subject, tuple[int, Loss]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Dropped:
    turn: int
    session: str | None  # the turn's session; None for a forget
    drop: Drop


class Trace:
    """One conversation's subjects under one policy, turn by turn."""

    def __init__(self, presence: Presence, shared: bool = False, history: str = "history") -> None:
        self.presence = presence
        self.shared = shared  # the policy keeps one state for every session (a shared fact store)
        self.history = history  # what the policy calls its retained history (`place_of`)
        self._sessions: dict[str, _Session] = {}
        self._retained: Sequence[Message] = ()
        self._kept: dict[str | None, Counter[Subject]] = {}  # retained counts per message session
        # Retained counts per place (`place_of`) and outside text (`Presence.outside`; None: the policy's own).
        self._places: dict[tuple[str, Outside | None], Counter[Subject]] = {}
        self._opaque = 0  # retained messages whose content the harness cannot read (origin `opaque`)
        self.touched: set[Subject] = set()  # the subjects whose retained counts the latest `after` changed
        self._drops: dict[Subject, list[_Dropped]] = {}
        # What each message text was seen to state: a `Drop` gives only the text it dropped.
        self._stating: dict[str, frozenset[Subject]] = {}

    # --- feeding -----------------------------------------------------------------------------

    def take(self, state: TurnState) -> None:
        """A turn's change: its request view's (a forget has none and touches every session),
        then its retained state's with the policy's drops, then what is in dispute."""
        number, session, outcome = state.number, state.session, state.outcome
        if state.sent is not None:
            self.view(number, session, state.sent.view, state.sent.known.change)
        forget = isinstance(state.turn, Forget)
        self.after(number, None if forget else session, state.retained, outcome.dropped, state.retained_change)
        if outcome.disputed:
            self.dispute(session, outcome.disputed)

    def view(self, number: int, session: str, view: Sequence[Message], known: Change | None = None) -> None:
        """The request view of turn `number`; `known`: its change from the session's previous
        view, when the caller worked it out already."""
        state = self._sessions.setdefault(session, _Session())
        state.counts.update(state.held)  # a dispute lasts one view
        state.held, state.disputed = Counter(), Counter()
        difference = known if known is not None else change(state.view, view)
        state.opaque += sum(m.origin == "opaque" for m in difference.added)
        state.opaque -= sum(m.origin == "opaque" for m in difference.removed)
        # Most messages state nothing: only those that state something touch the counts.
        removed = [stated for m in difference.removed if (stated := self._stated(m))]
        added = [stated for m in difference.added if (stated := self._stated(m))]
        touched = {subject for stated in (*removed, *added) for subject in stated}
        before = {subject for subject in touched if state.counts[subject] > 0}
        for stated in removed:
            state.counts.subtract(stated)
        for stated in added:
            state.counts.update(stated)
        for subject in touched:
            if state.counts[subject] > 0:
                continue
            del state.counts[subject]
            if subject in before and state.last is not None:
                state.departures[subject] = (number, self._cause(subject, session, state.last, number))
        state.view, state.last = view, number

    def after(
        self,
        number: int,
        session: str | None,
        retained: Sequence[Message],
        dropped: Iterable[Drop],
        known: Change | None = None,
    ) -> None:
        """The retained state after turn `number` (a forget when `session` is None) and what
        the policy dropped at it."""
        difference = known if known is not None else change(self._retained, retained)
        self._retained = retained
        self.touched = set()
        self._opaque += sum(m.origin == "opaque" for m in difference.added)
        self._opaque -= sum(m.origin == "opaque" for m in difference.removed)
        for message in difference.removed:
            if stated := self._stated(message):
                self._kept_counts(message.session).subtract(stated)
                self._place_counts(message).subtract(stated)
                self.touched |= stated
        for message in difference.added:
            if stated := self._stated(message):
                self._kept_counts(message.session).update(stated)
                self._place_counts(message).update(stated)
                self.touched |= stated
        for drop in dropped:
            subjects = self.presence.of_text(drop.text) | self._stating.get(drop.text, frozenset())
            for subject in subjects:
                self._drops.setdefault(subject, []).append(_Dropped(number, session, drop))
            if drop.cause in VIEW_CAUSES and session is not None:
                self._explain_view(number, session, drop, subjects)

    def dispute(self, session: str, messages: Iterable[Message]) -> None:
        """Whether `messages` reached the model with the session's latest view is unknown (those
        of the view, and any it may have held instead): what only they state is unknown in view."""
        state = self._sessions.setdefault(session, _Session())
        shown = set(state.view)
        for message in set(messages):
            stated = self._stated(message)
            state.disputed.update(stated)
            if message in shown:
                state.held.update(stated)
                state.counts.subtract(stated)

    # --- reading -----------------------------------------------------------------------------

    def in_view(self, session: str, subject: Subject) -> bool:
        state = self._sessions.get(session)
        return state is not None and state.counts[subject] > 0

    def in_retained(self, subject: Subject) -> bool:
        return any(counts[subject] > 0 for counts in self._kept.values())

    def seen_in_view(self, session: str, subject: Subject) -> bool | None:
        """`in_view`, or None (unknown) when the view does not state it but holds opaque content."""
        if self.in_view(session, subject):
            return True
        state = self._sessions.get(session)
        return None if state is not None and (state.opaque > 0 or state.disputed[subject] > 0) else False

    def unknown_note(self, session: str) -> str:
        """Why `seen_in_view` is unknown in `session`'s latest view: the probes.csv note."""
        state = self._sessions.get(session)
        return DISPUTED_VIEW if state is not None and state.disputed and not state.opaque else OPAQUE_VIEW

    def seen_in_retained(self, subject: Subject) -> bool | None:
        """`in_retained`, or None (unknown) when it is not stated but the state holds opaque content."""
        if self.in_retained(subject):
            return True
        return None if self._opaque > 0 else False

    def holders(self, subject: Subject) -> list[tuple[str, Outside | None]]:
        """The places of the retained state that state `subject` now (`place_of`), each with the
        outside text that states it there (None: a message that is not outside text), for the
        residue to tell a re-entry from memory."""
        return [key for key, counts in self._places.items() if counts[subject] > 0]

    def reentry(self, session: str, subject: Subject, since: int) -> Outside | None:
        """The outside text (`Presence.outside`) written from turn `since` on that alone puts
        `subject` in the session's latest view, the earliest; None when another message states it
        too (or none does)."""
        state = self._sessions.get(session)
        holding = [m for m in state.view if subject in self._stated(m)] if state else []
        outside = [self.presence.outside(m) for m in holding]
        if not outside or any(o is None or o.turn < since for o in outside):
            return None
        return min((o for o in outside if o is not None), key=lambda o: o.turn)

    def loss(self, session: str, subject: Subject, since: int, stated_in: str | None) -> Loss:
        """Why `subject`, stated last at turn `since` (in session `stated_in`), is not in the
        session's latest view: its last departure after `since`, else why it never came in."""
        state = self._sessions.get(session) or _Session()
        left, loss = state.departures.get(subject, (0, None))
        if loss is not None and left > since:
            return loss
        drop = self._last_drop(subject, since, session, any_session=self.shared)
        if drop is not None and self.shared:
            return Loss(drop.drop.cause, drop.drop.why)
        # A state every session shares is this session's too: what it never reported is untraced.
        if stated_in is not None and stated_in != session and not self.shared:
            return Loss(
                "other-session",
                f"never in the view of session {session}: stated at turn {since} in "
                f"session {stated_in}, whose history this session does not share",
            )
        if drop is not None:
            return Loss(drop.drop.cause, drop.drop.why)
        return Loss(
            "untraced", f"not in the view of session {session} since turn {since} (the policy reported no reason)"
        )

    # --- inside ------------------------------------------------------------------------------

    def _stated(self, message: Message) -> frozenset[Subject]:
        stated = self.presence.of_message(message)
        if stated:
            known = self._stating.get(message.text)
            if known is None or not stated <= known:
                self._stating[message.text] = stated | (known or frozenset())
        return stated

    def _kept_counts(self, session: str | None) -> Counter[Subject]:
        return self._kept.setdefault(session, Counter())

    def _place_counts(self, message: Message) -> Counter[Subject]:
        return self._places.setdefault((place_of(message, self.history), self.presence.outside(message)), Counter())

    def _explain_view(self, number: int, session: str, drop: Drop, subjects: frozenset[Subject]) -> None:
        """A view-only drop of turn `number` explains what left that turn's view as a window."""
        state = self._sessions.get(session)
        if state is None:
            return
        for subject in subjects:
            left = state.departures.get(subject)
            if left is not None and left[0] == number and left[1].cause == "window":
                state.departures[subject] = (number, Loss(drop.cause, drop.why))

    def _last_drop(self, subject: Subject, since: int, session: str, any_session: bool) -> _Dropped | None:
        for dropped in reversed(self._drops.get(subject, ())):
            if dropped.turn < since:
                return None
            if any_session or dropped.session in (session, None):
                return dropped
        return None

    def _cause(self, subject: Subject, session: str, shown: int, number: int) -> Loss:
        drop = self._last_drop(subject, shown, session, any_session=self.shared)
        if drop is not None:
            return Loss(drop.drop.cause, drop.drop.why)
        own, shared = self._kept.get(session), self._kept.get(None)
        if (own and own[subject] > 0) or (shared and shared[subject] > 0):
            return Loss("window", f"left the request window at turn {number}")
        return Loss(
            "untraced",
            f"left the view at turn {number}, no longer retained (the policy reported no reason)",
        )
