"""Properties of the checks over generated chronologies, against a slow reference reading.

Chronologies with restatements, values nested in other values (`4.2` in `4.2.1`, `Billing` in
`billing.log`), prose naming values, `sets:`, two sessions and forgets are replayed under
several policies. Each probe row is then compared with a plain, slow reading of the recorded
views (views.jsonl), written from docs/chronologies.md ("When something is in view", "Where it
was lost") and sharing no code with the checks but the one reader of declarations:

- `in_view` is true exactly where a message of the probe's view states the subject;
- a window loss names the last turn where the subject left the probe session's view, a turn
  after its latest statement (made in any session);
- `age` counts from the latest statement;
- residue.csv, replayed change by change, holds after every turn and forget exactly the old
  values (corrected or forgotten, by a slow walk of the turns) that a message of each place of
  the recorded retained state states; a recorded reply written from the turn that made the value
  old on is outside text the value re-entered from, not a place that kept it.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.chronology import Forget, UserTurn
from harness.chronology.declarations import parse_declarations
from harness.models.reference import ReferenceModel
from harness.results.tables import Results, load_results
from harness.run.conversation import Conversation
from tests.conftest import NO_RESTART, builtin_registry, chronology, record_conversation

REGISTRY = builtin_registry()
POLICIES = ("full-history", "last-turns:turns=1", "retained-reduction", "bounded-facts", "summary")
SESSIONS = ("main", "chat")
VALUES = {
    "module": ("Billing", "Reporting"),
    "version": ("4.2", "4.2.1"),
    "product": ("ERP", "ERP Cloud"),
    "log": ("/var/log/erp.log", "billing.log"),
}
REPLIES = ("Noted.", "Understood: I will never restart production.", "The module is Billing.", "Version 4.2.1 it is.")
RULE = re.compile(r"(?i)\bnever\b[^.;\n]*\brestart")

# --- generated chronologies ----------------------------------------------------------------

declaration = st.sampled_from(sorted(VALUES)).flatmap(lambda k: st.sampled_from(VALUES[k]).map(lambda v: f"{k}={v}"))
step = st.one_of(
    st.tuples(st.just("declare"), st.lists(declaration, min_size=1, max_size=2)),
    st.tuples(st.just("prose"), st.sampled_from([v for vs in VALUES.values() for v in vs])),
    st.tuples(st.just("sets"), st.sampled_from(VALUES["version"])),
    st.tuples(st.just("rule"), st.just("")),
    st.tuples(st.just("filler"), st.just("")),
    st.tuples(st.just("forget"), st.sampled_from([*VALUES, None])),
    st.tuples(st.just("probe"), st.sampled_from(["values", "restart"])),
)
entry = st.tuples(step, st.sampled_from(SESSIONS), st.sampled_from(REPLIES))
last = st.tuples(
    st.tuples(st.just("probe"), st.sampled_from(["values", "restart"])), st.sampled_from(SESSIONS), st.just("")
)
steps = st.tuples(st.lists(entry, min_size=2, max_size=14), st.lists(last, min_size=1, max_size=2)).map(
    lambda parts: parts[0] + parts[1]  # every chronology ends with probes
)


def build(generated: list[tuple[tuple[str, Any], str, str]]) -> Any:
    turns: list[UserTurn | Forget] = []
    for number, ((kind, arg), session, reply) in enumerate(generated, start=1):
        if kind == "forget":
            turns.append(Forget(number=number, line=number, key=arg))
            continue
        fields: dict[str, Any] = {"assistant": reply}
        if kind == "declare":
            text = "; ".join(arg)
        elif kind == "prose":
            text = f"The {arg} thing was mentioned in the ticket."
        elif kind == "sets":
            text, fields["sets"] = f"We moved to the {arg} release.", (("version", arg),)
        elif kind == "rule":
            text = "Remember: never restart production by day."
        elif kind == "filler":
            text = f"Invoice run {number} finished."
        elif arg == "values":
            text, fields = "Which module, product, log and version are we on?", {"probe": f"p{number}", "asks": ()}
        else:
            text, fields = "Can I restart production now?", {"probe": f"p{number}", "asks": ("no-restart",)}
        turns.append(UserTurn(number=number, line=number, user=text, session=session, **fields))
    return chronology(*turns, sessions=SESSIONS, prohibitions=(NO_RESTART,))


# --- the slow reading ------------------------------------------------------------------------


def whole_values(key: str, text: str) -> set[str]:
    """The values of `key` found in `text` as whole values, scanning position by position; at
    each position the longest value wins, so a value inside a longer one is not found."""
    found, lowered, position = set(), text.lower(), 0
    candidates = sorted(VALUES[key], key=len, reverse=True)
    while position < len(text):
        for candidate in candidates:
            end = position + len(candidate)
            if lowered[position:end] != candidate.lower():
                continue
            # Whole: after white space, an opening mark or `key=`; before white space or the end,
            # past closing sentence punctuation (SPEC section 10).
            before = text[position - 1] if position else " "
            rest = text[end:].lstrip(".,;:!?)\"'")
            if not (
                before.isspace()
                or before in "(\"'"
                or (before == "=" and text[:position].split()[-1][:-1].lstrip("(\"'").isidentifier())
            ):
                continue
            if rest and not rest[0].isspace():
                continue
            found.add(candidate)
            position = end - 1
            break
        position += 1
    return found


def clauses(text: str) -> list[str]:
    return re.split(r"(?<=[.!?…])\s+|[;\n\r]", text)


def names_key(key: str, text: str) -> bool:
    return re.search(rf"(?i)(?<![\w-]){key}s?(?![\w-])", text) is not None


def states(record: dict[str, Any], key: str, value: str, sets: dict[int, dict[str, str]]) -> bool:
    content, role, origin = record["content"], record["role"], record["origin"]

    def declared(text: str) -> bool:
        found = parse_declarations(text).get(key)
        return found is not None and found.value == value

    def generated(text: str) -> bool:
        return declared(text) or any(names_key(key, c) and value in whole_values(key, c) for c in clauses(text))

    def users(text: str) -> bool:
        return declared(text) or sets.get(record["turn"], {}).get(key) == value

    if origin == "facts+current":
        block, _, own = content.partition("\n\n")
        return generated(block) or users(own)
    if role == "user" and origin in ("history", "current", "retrieved"):
        return users(content)
    if origin == "system":
        return declared(content)
    return generated(content)


def holds(record: dict[str, Any], check: str, subject: str, sets: dict[int, dict[str, str]]) -> bool:
    if check == "prohibition":
        return RULE.search(record["content"]) is not None
    key, _, value = subject.partition("=")
    return states(record, key, value, sets)


def latest_statement(chron: Any, check: str, subject: str, probe: int) -> int | None:
    """The turn that last stated a prohibition or declared a current value, up to the probe."""
    found = None
    for turn in chron.user_turns:
        if turn.number > probe:
            break
        if check == "prohibition" and RULE.search(turn.user):
            found = turn.number
        if check == "current":
            key, _, value = subject.partition("=")
            declared = {k: d.value for k, d in parse_declarations(turn.user).items()} | dict(turn.sets)
            if declared.get(key) == value:
                found = turn.number
    return found


def check_rows(chron: Any, results: Results, policy: str) -> None:
    sets = {t.number: dict(t.sets) for t in chron.user_turns}
    views = {t.number: results.view_at("mem", policy, "reference", 1, t.number) for t in chron.user_turns}
    probes = results.probes
    for row in probes[(probes.policy == policy) & (probes.status == "measured")].itertuples():
        view = views[row.turn]["view"]
        in_view = any(holds(m, row.check, row.subject, sets) for m in view)
        assert bool(row.in_view) == in_view, (policy, row.turn, row.check, row.subject, view)
        if row.check not in ("prohibition", "current"):
            continue
        since = latest_statement(chron, row.check, row.subject, row.turn)
        assert row.age == row.turn - since, (policy, row.turn, row.subject, since)
        if row.cause == "window":
            session = [t.number for t in chron.user_turns if t.session == row.session and t.number <= row.turn]
            held = [any(holds(m, row.check, row.subject, sets) for m in views[n]["view"]) for n in session]
            left = [n for i, n in enumerate(session) if i and held[i - 1] and not held[i] and n > since]
            assert left, (policy, row.turn, row.subject, "a window loss with no departure after the statement")
            assert row.lost_at == f"left the request window at turn {left[-1]}", (policy, row.turn, row.subject)


def old_values(chron: Any) -> dict[int, dict[str, tuple[str, int]]]:
    """After each turn and forget: `key=value` -> (stale or forgotten, the turn that made it old)."""
    current: dict[str, str] = {}
    old: dict[str, tuple[str, int]] = {}
    found = {}
    for turn in chron.turns:
        if isinstance(turn, Forget):
            for key in [turn.key] if turn.key else list(current):
                if key in current:
                    old[f"{key}={current.pop(key)}"] = ("forgotten", turn.number)
        else:
            declared = {k: d.value for k, d in parse_declarations(turn.user).items()} | dict(turn.sets)
            for key, value in declared.items():
                if current.get(key) not in (None, value):
                    old[f"{key}={current[key]}"] = ("stale", turn.number)
                current[key] = value
                old.pop(f"{key}={value}", None)
        found[turn.number] = dict(old)
    return found


def place(record: dict[str, Any], since: int, replies: dict[int, str | None]) -> str:
    turn = record["turn"]
    if record["role"] == "assistant" and turn is not None and turn >= since and record["content"] == replies[turn]:
        return f"re-entered from the recorded reply at turn {turn}"
    return {"summary": "summary", "facts": "fact store"}.get(record["origin"], "history")


def residue_rows(chron: Any, results: Results, policy: str) -> None:
    sets = {t.number: dict(t.sets) for t in chron.user_turns}
    replies = {t.number: t.assistant for t in chron.user_turns}
    residue = results.residue
    rows = residue[residue.policy == policy]
    held: set[tuple[str, str, str, int]] = set()
    for turn in chron.turns:
        for row in rows[rows.turn == turn.number].itertuples():
            entry = (row.subject, row.where, row.check, int(row.since))
            if row.change == "kept":
                held.add(entry)
            else:
                held.discard(entry)
        retained = results.view_at("mem", policy, "reference", 1, turn.number)["retained"]
        expected = {
            (subject, place(m, since, replies), check, since)
            for subject, (check, since) in old_values(chron)[turn.number].items()
            for m in retained
            if holds(m, "value", subject, sets)
        }
        assert held == expected, (policy, turn.number, held, expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
@pytest.mark.slow
def test_probe_and_residue_rows_agree_with_a_slow_reading_of_the_recorded_views(generated) -> None:
    chron = build(generated)
    with tempfile.TemporaryDirectory() as tmp:
        for policy in POLICIES:
            folder = Path(tmp) / policy.replace(":", "_").replace("=", "_")
            conversation = Conversation(chron, REGISTRY.parse(policy), "reference", 1)
            record_conversation(folder, conversation, REGISTRY, ReferenceModel())
            check_rows(chron, load_results(folder), policy)
            residue_rows(chron, load_results(folder), policy)
