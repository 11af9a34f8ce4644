"""An item's file name: deterministic, safe, kept apart from another item's, within the limit."""

from __future__ import annotations

from harness.base.names import MAX_NAME, file_stem


def test_a_safe_item_id_is_kept_as_it_is() -> None:
    assert file_stem("longmemeval_s", "e47becba") == "longmemeval_s-e47becba"


def test_an_unsafe_item_id_is_made_safe_and_kept_apart_by_its_hash() -> None:
    a, b = file_stem("d", "../a b"), file_stem("d", "../a/b")
    assert a.startswith("d-a-b-") and b.startswith("d-a-b-") and a != b
    assert all(c.isalnum() or c in "-_" for c in a)


def test_a_long_item_id_is_cut_to_the_name_limit() -> None:
    assert len(file_stem("d", "x" * 500)) == MAX_NAME
