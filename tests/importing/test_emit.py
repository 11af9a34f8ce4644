"""The YAML written: deterministic, read back as written (its file's name: tests/base/test_names.py)."""

from __future__ import annotations

from harness.chronology.safe_yaml import compose
from harness.importing.emit import yaml_text


def test_text_yaml_would_read_as_another_type_is_quoted_and_reads_back_as_written() -> None:
    document = {"title": "No", "turns": [{"user": "3.10", "assistant": "2024-01-01"}, {"user": "a\nb", "probe": "p"}]}
    text = yaml_text(document)
    assert "title: 'No'" in text and "user: |-\n    a\n    b" in text
    assert compose(text)[1] == document


def test_fields_keep_their_order() -> None:
    assert yaml_text({"title": "t", "source": {"dataset": "d"}, "turns": []}).splitlines()[0] == "title: t"
