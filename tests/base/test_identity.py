"""A conversation's identity: four fields, the first of every record, read one of three ways."""

from __future__ import annotations

from dataclasses import fields

import pytest

from harness.base.identity import IDENTITY, RunKey
from harness.results.rows import CallRecord, ProbeRow, ResidueRow, TurnRow

RECORD = {"chronology": "c", "policy": "p", "model": "m", "repetition": 2, "turn": 1}


def test_every_record_type_starts_with_the_identity() -> None:
    assert IDENTITY == ("chronology", "policy", "model", "repetition")
    for row in (TurnRow, ProbeRow, ResidueRow, CallRecord):
        assert tuple(f.name for f in fields(row))[:4] == IDENTITY, row


def test_a_conversation_is_named_by_its_four_fields() -> None:
    key = RunKey("c", "p q", "m", 2)
    assert str(key) == "c · p q · m · 2" and f"{key}" == str(key)
    assert key == ("c", "p q", "m", 2) and hash(key) == hash(("c", "p q", "m", 2))


def test_of_reads_names_as_text_and_the_repetition_as_a_whole_number() -> None:
    assert RunKey.of(RECORD) == ("c", "p", "m", 2)
    assert RunKey.of({**RECORD, "model": 3, "repetition": "2"}) == ("c", "p", "3", 2)
    with pytest.raises(KeyError):
        RunKey.of({"chronology": "c"})
    with pytest.raises(ValueError):
        RunKey.typed("c", "p", "m", "two")


def test_held_is_the_identity_as_the_record_holds_it() -> None:
    assert RunKey.held({**RECORD, "repetition": "2"}) == ("c", "p", "m", "2")
    assert RunKey.held({"content": "x"}) == (None, None, None, None)


def test_written_is_the_identity_only_as_the_writer_writes_it() -> None:
    assert RunKey.written(RECORD) == ("c", "p", "m", 2)
    for odd in ({"repetition": 2.0}, {"repetition": True}, {"repetition": "2"}, {"policy": None}, {"model": 3}):
        assert RunKey.written(RECORD | odd) is None, odd
    assert RunKey.written({"chronology": "c"}) is None and RunKey.written([1]) is None and RunKey.written(None) is None
