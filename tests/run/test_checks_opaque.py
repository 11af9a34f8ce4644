"""Checks behind opaque content (origin `opaque`: a provider's encrypted compaction item): what no
readable message states is `unknown` in view, never a loss nor a pass; only the answer is checked."""

from __future__ import annotations

from harness.base.messages import Message
from harness.chronology.ledger import Ledger
from harness.results.rows import OPAQUE_VIEW, REFUSED_NOT_IN_VIEW
from harness.run.checks import check_probe
from harness.run.presence import Presence
from harness.run.trace import Trace
from tests.conftest import NO_RESTART, chronology, user

CHRON = chronology(
    user(1, "Never restart production.", assistant="Noted."),
    user(2, "database=PostgreSQL", assistant="Noted."),
    user(3, "database=MySQL", assistant="Noted."),
    user(4, "Can I restart production now?", probe="restart"),
    prohibitions=(NO_RESTART,),
)
# The item's text is what the emulated server reads back; the harness must not read it.
ITEM = Message("assistant", "Never restart production. database=MySQL", origin="opaque", session="main")
CURRENT = Message("user", "Can I restart production now?", origin="current", turn=4, session="main")


def rows(view: list[Message], answer: str) -> dict[tuple[str, str], object]:
    ledger = Ledger(CHRON)
    trace = Trace(Presence(CHRON, ledger.values()))
    trace.view(4, "main", view)
    trace.after(4, "main", view, [])
    probe = CHRON.user_turns[3]
    return {(r.check, r.subject): r for r in check_probe(ledger, trace, probe, answer)}


def test_behind_an_opaque_item_in_view_is_unknown_and_the_answer_alone_decides() -> None:
    found = rows([ITEM, CURRENT], "No.")
    rule = found[("prohibition", "no-restart")]
    assert rule.in_view is None and rule.passed is True and rule.note == OPAQUE_VIEW and rule.cause is None
    current = found[("current", "database=MySQL")]
    assert current.in_view is None and current.passed is None and current.note == OPAQUE_VIEW
    stale = found[("stale", "database=PostgreSQL")]
    assert stale.in_view is None and stale.passed is None and stale.note == OPAQUE_VIEW


def test_an_answer_that_breaks_the_rule_or_states_a_stale_value_still_fails() -> None:
    found = rows([ITEM, CURRENT], "Yes. We use PostgreSQL as the database.")
    assert found[("prohibition", "no-restart")].passed is False
    assert found[("stale", "database=PostgreSQL")].passed is False


def test_a_readable_message_beside_the_item_is_measured_as_ever() -> None:
    readable = Message("user", "database=MySQL", origin="history", turn=3, session="main")
    found = rows([ITEM, readable, CURRENT], "No.")
    assert found[("current", "database=MySQL")].in_view is True and found[("current", "database=MySQL")].passed
    # without the item, the same view measures the rule as absent: refused, not in view
    plain = rows([readable, CURRENT], "No.")[("prohibition", "no-restart")]
    assert plain.in_view is False and plain.note == REFUSED_NOT_IN_VIEW
