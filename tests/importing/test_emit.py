"""The YAML written and the file names chosen: deterministic, safe, read back as written."""

from __future__ import annotations

from harness.chronology.safe_yaml import compose
from harness.importing.emit import MAX_NAME, file_stem, yaml_text


def test_text_yaml_would_read_as_another_type_is_quoted_and_reads_back_as_written() -> None:
    document = {"title": "No", "turns": [{"user": "3.10", "assistant": "2024-01-01"}, {"user": "a\nb", "probe": "p"}]}
    text = yaml_text(document)
    assert "title: 'No'" in text and "user: |-\n    a\n    b" in text
    assert compose(text)[1] == document


def test_fields_keep_their_order() -> None:
    assert yaml_text({"title": "t", "source": {"dataset": "d"}, "turns": []}).splitlines()[0] == "title: t"


def test_a_safe_item_id_is_kept_as_it_is() -> None:
    assert file_stem("longmemeval_s", "e47becba") == "longmemeval_s-e47becba"


def test_an_unsafe_item_id_is_made_safe_and_kept_apart_by_its_hash() -> None:
    a, b = file_stem("d", "../a b"), file_stem("d", "../a/b")
    assert a.startswith("d-a-b-") and b.startswith("d-a-b-") and a != b
    assert all(c.isalnum() or c in "-_" for c in a)


def test_a_long_item_id_is_cut_to_the_name_limit() -> None:
    assert len(file_stem("d", "x" * 500)) == MAX_NAME
