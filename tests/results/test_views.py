"""Views on disk: each message once, every list a reference that reads back exactly."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from harness.base.messages import Message, ToolCall
from harness.models.reference import ReferenceModel
from harness.policy import PolicyRegistry
from harness.results.tables import load_results
from harness.results.views import (
    ConversationViews,
    KnownChange,
    ListRef,
    ViewEncoder,
    change,
    common_prefix,
    common_suffix,
    kept,
    message_fields,
)
from harness.run.conversation import Conversation
from tests.conftest import chronology, record_conversation, user

POOL = [Message("user", f"m{n % 4}", turn=n % 3) for n in range(12)]  # equal values repeat on purpose
LISTS = st.lists(st.sampled_from(POOL), max_size=12)


def naive_prefix(a: list, b: list) -> int:
    return next((n for n, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


@given(LISTS, LISTS)
def test_prefix_and_suffix_agree_with_a_plain_scan(a: list[Message], b: list[Message]) -> None:
    head = common_prefix(a, b)
    assert head == naive_prefix(a, b)
    limit = min(len(a), len(b)) - head
    assert common_suffix(a, b, limit) == min(naive_prefix(a[::-1], b[::-1]), limit)


def test_a_reference_is_the_base_head_then_new_ids_then_the_base_tail() -> None:
    assert ListRef(3, 2, 1, (9, 8)).apply([0, 1, 2, 3]) == [0, 1, 9, 8, 3]
    assert ListRef(None, 0, 0, (5,)).apply([]) == [5]


# One turn row: (session, view or None for a forget, retained).
ROWS = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.none() | LISTS, LISTS), max_size=15)


@given(ROWS)
def test_every_encoded_list_reads_back_exactly(rows: list[tuple[str, list[Message] | None, list[Message]]]) -> None:
    encoder, messages, written = ViewEncoder(), [], []
    for turn, (session, view, retained) in enumerate(rows, start=1):
        new, view_ref, retained_ref = encoder.encode(turn, session, view, retained)
        messages += new
        written.append({"turn": turn, "session": session, "status": "s", "view": view_ref, "retained": retained_ref})
    back = ConversationViews(json.loads(json.dumps(messages)), json.loads(json.dumps(written)))
    for turn, (_, view, retained) in enumerate(rows, start=1):
        record = back.at(turn)
        assert record is not None
        assert record["view"] == (None if view is None else [m.as_record() for m in view])
        assert record["retained"] == [m.as_record() for m in retained]


@given(ROWS)
def test_each_distinct_message_is_written_once(rows: list[tuple[str, list[Message] | None, list[Message]]]) -> None:
    encoder, written = ViewEncoder(), []
    for turn, (session, view, retained) in enumerate(rows, start=1):
        written += encoder.encode(turn, session, view, retained)[0]
    seen = {m for _, view, retained in rows for m in (view or []) + retained}
    assert sorted(r["id"] for r in written) == list(range(len(seen)))


def full_history_bytes(tmp_path: Path, turns: int) -> int:
    """Bytes of the .jsonl files but calls.jsonl (scripted turns make no call) after `turns` scripted turns of full history."""
    chron = chronology(*[user(n, f"status note {n:05d}", assistant=f"noted {n:05d}") for n in range(1, turns + 1)])
    registry = PolicyRegistry.installed()
    conversation = Conversation(chron, registry.parse("full-history"), "reference", 1)
    directory = tmp_path / str(turns)
    record_conversation(directory, conversation, registry, ReferenceModel())
    return sum(path.stat().st_size for path in directory.glob("*.jsonl") if path.name != "calls.jsonl")


def test_views_grow_linearly_with_the_turns(tmp_path: Path) -> None:
    """The whole view stored at every turn made 400 turns cost 4x per turn what 100 did."""
    small, large = full_history_bytes(tmp_path, 100) / 100, full_history_bytes(tmp_path, 400) / 400
    assert large / small < 1.1, (small, large)


def test_the_full_lists_come_back_through_load_results(tmp_path: Path) -> None:
    full_history_bytes(tmp_path, 3)
    results = load_results(tmp_path / "3")
    record = results.view_at("mem", "full-history", "reference", 1, 3)
    assert record is not None
    assert [m["content"] for m in record["view"]] == [
        "SYS",
        "status note 00001",
        "noted 00001",
        "status note 00002",
        "noted 00002",
        "status note 00003",
    ]
    assert record["view"][-1] == {
        "role": "user",
        "content": "status note 00003",
        "origin": "current",
        "turn": 3,
        "session": "main",
    }
    assert len(results.messages) == 1 + 3 + 2 * 3  # system, three current messages, three exchanges
    assert results.view_at("mem", "full-history", "reference", 1, 4) is None


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), LISTS, LISTS), max_size=8))
def test_a_view_change_worked_out_by_the_caller_encodes_the_same(
    rows: list[tuple[str, list[Message], list[Message]]],
) -> None:
    """The replay's change of each view (`KnownChange`) gives the records `ViewEncoder` works out
    alone; one whose previous view is not the list kept there is worked out again."""
    alone, told = ViewEncoder(), ViewEncoder()
    previous: dict[str, list[Message]] = {}
    for turn, (session, view, retained) in enumerate(rows, 1):
        before = previous.get(session, [])
        current = kept(view)
        known = KnownChange(before, change(before, view), current)
        assert told.encode_changes(turn, session, view, retained, known) == alone.encode_changes(
            turn, session, view, retained
        )
        previous[session] = current


def test_a_known_change_from_another_previous_view_is_not_trusted() -> None:
    first, second = [Message("user", "one")], [Message("user", "one"), Message("user", "two")]
    encoder = ViewEncoder()
    encoder.encode(1, "main", first, [])
    stale = KnownChange([], change([], second), kept(second))  # as if the session had no view yet
    _, view, _, view_change, _ = encoder.encode_changes(2, "main", second, [], stale)
    assert view == {"base": 1, "head": 1, "tail": 0, "ids": [1]} and view_change == change(first, second)


def test_a_view_read_back_keeps_them() -> None:
    assert (
        message_fields(
            {"id": 3, **Message("assistant", "", tool_calls=(ToolCall("call_1", "read_file", "{}"),)).as_record()}
        )["tool_calls"][0]["name"]
        == "read_file"
    )
    assert (
        message_fields({"id": 4, **Message("tool", "x", tool_call_id="call_1").as_record()})["tool_call_id"] == "call_1"
    )
    assert set(message_fields({"id": 5, **Message("user", "hi").as_record()})) == {
        "role",
        "content",
        "origin",
        "turn",
        "session",
    }
