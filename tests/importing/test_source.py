"""The input file: read within a cap, hashed, its records located; the licence decided."""

from __future__ import annotations

import hashlib
import json
import re
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.importing import source as source_module
from harness.importing.source import (
    OWN_LOGS,
    ImportRefused,
    Skips,
    Source,
    json_lines,
    json_list,
    json_records,
    licence_for,
    read_source,
)


def test_the_sha256_is_of_the_file_s_bytes(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n')
    assert read_source(path).sha256 == hashlib.sha256(b'{"a": 1}\n').hexdigest()


def test_a_file_over_the_cap_is_refused_with_the_option_that_raises_it(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"x" * 11)
    with pytest.raises(ImportRefused, match="11 bytes, over the 10 an import reads; raise it with --max-input-bytes"):
        read_source(path, limit=10)


def test_a_missing_file_a_folder_and_non_utf8_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ImportRefused, match="no such file"):
        read_source(tmp_path / "none.jsonl")
    with pytest.raises(ImportRefused, match="a folder, not a regular file"):
        read_source(tmp_path)
    (tmp_path / "b.jsonl").write_bytes(b'{"a": 1}\n{"b": "\xff"}\n')
    with pytest.raises(ImportRefused, match=r"b\.jsonl:2: not UTF-8 text \(byte 0xff"):
        read_source(tmp_path / "b.jsonl")


def test_records_are_read_from_a_json_list_or_json_lines(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text('[{"a": 1}, {"a": 2}]')
    (tmp_path / "lines.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n')
    assert [r.where for r in json_records(read_source(tmp_path / "list.json"))] == ["item 1", "item 2"]
    assert [r.where for r in json_records(read_source(tmp_path / "lines.jsonl"))] == ["1", "3"]


def test_a_list_item_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text('[{"a": 1}, 2]')
    with pytest.raises(ImportRefused, match=r"list\.json:item 2: a JSON number, not an object"):
        list(json_records(read_source(tmp_path / "list.json")))


def test_a_known_permissive_licence_is_recorded() -> None:
    assert licence_for("longmemeval", None) == "MIT"


def test_a_missing_licence_is_refused_unless_named() -> None:
    with pytest.raises(ImportRefused, match="no licence is known for this source; .* --accept-licence NAME"):
        licence_for("multichallenge", None)
    assert licence_for("multichallenge", "internal, ours") == "internal, ours"


def test_a_non_commercial_licence_is_refused_unless_accepted_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.importing import source

    monkeypatch.setitem(source.KNOWN_LICENCES, "longmemeval", "CC-BY-NC-4.0")
    with pytest.raises(ImportRefused, match="a non-commercial licence; .* --accept-licence CC-BY-NC-4.0"):
        licence_for("longmemeval", None)
    with pytest.raises(ImportRefused):
        licence_for("longmemeval", "CC-BY-4.0")
    assert licence_for("longmemeval", "CC-BY-NC-4.0") == "CC-BY-NC-4.0"


@pytest.mark.parametrize("blank", ["", " ", "\t\n"])
@pytest.mark.parametrize("format_name", ["multichallenge", "openai-chat"])
def test_a_blank_licence_name_passes_no_gate(format_name: str, blank: str) -> None:
    with pytest.raises(ImportRefused, match="--accept-licence .*: a blank name; name the licence"):
        licence_for(format_name, blank)


def test_naming_another_licence_than_the_known_one_is_refused() -> None:
    with pytest.raises(ImportRefused, match="this source's licence is MIT; drop the option"):
        licence_for("factconsolidation", "Apache-2.0")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"a": 1}\n {"a": 2}]', ":2: not JSON (expected ',' or ']' between items)"),
        ('[{"a": 1},\n {"a": }]', ":2: not JSON (Expecting value)"),
        ('[{"a": 1}] x', ":1: not JSON (text after the list)"),
        ('[{"a": 1}', ":1: not JSON (expected ',' or ']' between items)"),
    ],
)
def test_a_broken_json_list_is_refused_by_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "l.json").write_text(text)
    with pytest.raises(ImportRefused) as refused:
        list(json_records(read_source(tmp_path / "l.json")))
    assert f"l.json{message}" in str(refused.value)


def test_an_empty_json_list_holds_no_records(tmp_path: Path) -> None:
    (tmp_path / "l.json").write_text(" [ ] \n")
    assert list(json_records(read_source(tmp_path / "l.json"))) == []


def test_a_file_that_is_no_list_is_refused_as_one(tmp_path: Path) -> None:
    (tmp_path / "l.json").write_text('{"a": 1}')
    with pytest.raises(ImportRefused, match=r"l\.json:1: not a JSON list of items"):
        list(json_list(read_source(tmp_path / "l.json")))


FIXTURES = Path(__file__).parent / "fixtures"
SMALL_PIECES = [1, 2, 3, 7, 64]


def records_read_whole(path: Path) -> list[tuple[str, object]]:
    return [(r.where, r.value) for r in json_records(read_source(path))]


@pytest.mark.parametrize("chunk", SMALL_PIECES)
@pytest.mark.parametrize(
    "name",
    ["longmemeval_oracle.json", "chat.jsonl", "conflict_resolution.jsonl", "sharegpt.json", "compactbench_case.json"],
)
def test_a_file_read_in_small_pieces_gives_the_same_records(
    monkeypatch: pytest.MonkeyPatch, chunk: int, name: str
) -> None:
    whole = records_read_whole(FIXTURES / name)
    monkeypatch.setattr(source_module, "CHUNK_BYTES", chunk)
    assert records_read_whole(FIXTURES / name) == whole


@pytest.mark.parametrize("chunk", SMALL_PIECES)
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"a": 1}\n {"a": 2}]', ":2: not JSON (expected ',' or ']' between items)"),
        ('[{"a": 1},\n {"a": }]', ":2: not JSON (Expecting value)"),
        ('[{"a": 1}] x', ":1: not JSON (text after the list)"),
        ('[{"a": 1}', ":1: not JSON (expected ',' or ']' between items)"),
        ('[{"a": "unended', ":1: not JSON (Unterminated string"),
        ('[{"a": 1},\n\n {"a": tru}]', ":3: not JSON (Expecting value)"),
        ('[{"a": 1},\n {"n": 12345678901234567890x, "b": "' + "long " * 20 + '"}]', ":2: not JSON (Expecting ','"),
        ('[{"a": 1},\n 2]', ":item 2: a JSON number, not an object"),
    ],
)
def test_a_broken_json_list_read_in_small_pieces_is_refused_at_the_same_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, chunk: int, text: str, message: str
) -> None:
    (tmp_path / "l.json").write_text(text)
    monkeypatch.setattr(source_module, "CHUNK_BYTES", chunk)
    with pytest.raises(ImportRefused) as refused:
        list(json_records(read_source(tmp_path / "l.json")))
    assert f"l.json{message}" in str(refused.value)


@pytest.mark.parametrize("chunk", SMALL_PIECES)
def test_json_lines_read_in_small_pieces_end_only_at_line_feeds_and_carriage_returns(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, chunk: int
) -> None:
    """U+2028, U+2029 and U+0085 may stand raw in a JSON string: `str.splitlines` cut the
    record there and refused valid JSON Lines."""
    text = '{"a": 1}\r\n\r\n{"a": 2}\r{"a": "x\u2028y\u2029z\x85"}\n\n{"a": 5}'
    (tmp_path / "l.jsonl").write_text(text, encoding="utf-8", newline="")
    monkeypatch.setattr(source_module, "CHUNK_BYTES", chunk)
    found = [(r.where, r.value["a"]) for r in json_records(read_source(tmp_path / "l.jsonl"))]
    assert found == [("1", 1), ("3", 2), ("4", "x\u2028y\u2029z\x85"), ("6", 5)]


@pytest.mark.parametrize("chunk", [1, 2, 3, 1024])
def test_non_utf8_read_in_small_pieces_names_the_same_line_and_offset(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, chunk: int
) -> None:
    (tmp_path / "b.jsonl").write_bytes('{"a": "é"}\n{"b": "ü\n'.encode() + b"\xff\n")  # é, ü: cut by 1-byte pieces
    monkeypatch.setattr(source_module, "CHUNK_BYTES", chunk)
    with pytest.raises(ImportRefused, match=r"b\.jsonl:3: not UTF-8 text \(byte 0xff at offset 22\)"):
        read_source(tmp_path / "b.jsonl")


def test_a_file_that_changes_after_it_was_hashed_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n')
    source = read_source(path)
    path.write_text('{"a": 1}\n{"a": 3}\n')
    with pytest.raises(ImportRefused, match=r"l\.jsonl: changed while it was being imported"):
        list(json_records(source))


def test_a_json_list_is_read_item_by_item_not_whole(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    path.write_text("[" + ", ".join(f'{{"n": {n}, "text": "{"x" * 50}"}}' for n in range(200)) + "]")
    monkeypatch.setattr(source_module, "CHUNK_BYTES", 64)
    read: list[int] = []

    class Counted(Source):
        def pieces(self):  # type: ignore[no-untyped-def]
            for piece in super().pieces():
                read.append(len(piece))
                yield piece

    checked = read_source(path)
    records = json_list(Counted(checked.path, checked.sha256, checked.size))
    assert next(records).value["n"] == 0
    assert sum(read) < 4 * 64  # the first item, not the file's 14,000 characters
    assert [r.value["n"] for r in records] == list(range(1, 200))


def test_a_line_many_pieces_long_is_scanned_once_not_once_per_piece(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    long = {"messages": [{"role": "user", "content": "x" * 64 * 300}]}  # 300 pieces of 64
    path = tmp_path / "l.jsonl"
    path.write_text(f'{{"n": 1}}\n{json.dumps(long)}\r\n{{"n": 3}}', encoding="utf-8", newline="")
    monkeypatch.setattr(source_module, "CHUNK_BYTES", 64)
    scanned: list[int] = []
    split = source_module._split
    monkeypatch.setattr(source_module, "_split", lambda text: scanned.append(len(text)) or split(text))
    records = list(json_lines(read_source(path)))
    assert [(r.where, r.value) for r in records] == [("1", {"n": 1}), ("2", long), ("3", {"n": 3})]
    assert sum(scanned) <= path.stat().st_size  # each character split once: linear in the line's length


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab\r\n\x0b\x0c\x1c\x85\u2028 "), max_size=60),
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=12),
)
@pytest.mark.slow
def test_lines_read_a_piece_at_a_time_are_those_of_the_whole_text_ended_by_cr_lf_only(
    text: str, cuts: list[int]
) -> None:
    bounds = [0, *sorted(c for c in cuts if c <= len(text)), len(text)]
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    whole = re.split(r"\r\n|\r|\n", text)  # JSON Lines' line ends; U+2028, U+0085, \x0c... are text
    expected = whole[:-1] if whole[-1] == "" else whole
    assert list(source_module._lines(InPieces(pieces))) == expected  # type: ignore[arg-type]


class InPieces:
    """A stand-in for a Source whose text comes in the pieces given."""

    def __init__(self, pieces: list[str]) -> None:
        self._pieces = pieces

    def pieces(self) -> Iterator[str]:
        return iter(self._pieces)


@pytest.mark.parametrize("chunk", [*SMALL_PIECES, 1 << 20])
def test_one_json_object_over_several_lines_is_one_record_and_several_are_each_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, chunk: int
) -> None:
    monkeypatch.setattr(source_module, "CHUNK_BYTES", chunk)
    (tmp_path / "one.json").write_text('\n{\n  "a": 1,\n  "b": [1, 2]\n}\n')
    assert [(r.where, r.value) for r in json_records(read_source(tmp_path / "one.json"))] == [
        ("2", {"a": 1, "b": [1, 2]})
    ]
    (tmp_path / "two.json").write_text('{\n "a": 1\n}\n{\n "a": 2\n}')
    assert [(r.where, r.ordinal) for r in json_records(read_source(tmp_path / "two.json"))] == [("1", 1), ("4", 2)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('"just text"', ":1: a JSON string, not an object; give JSON Lines (one JSON object a line), a JSON array"),
        ("42\n", ":1: a JSON number, not an object; give JSON Lines"),
        ('{"a": 1}\n{"a": 2}\n[3]\n', ":3: JSONL whose line 3 is a JSON array, not an object; one JSON object a line"),
        ('"a"\n{"a": 2}\n', ":1: JSONL whose line 1 is a JSON string, not an object; one JSON object a line"),
        ("title: a chronology\n", ":1: not JSON (Expecting value); give JSON Lines (one JSON object a line)"),
        ('{"a": 1}\n{"a": \n', ":2: not JSON (Expecting value at column 7); JSONL holds one JSON object a line"),
        ('{\n "a": 1,\n "b": }', ":3: not JSON (Expecting value)"),
        ('[{"a": 1}, [2]]', ":item 2: a JSON array, not an object; each item of the array is one"),
    ],
)
def test_a_file_of_another_shape_is_refused_naming_the_shape_found(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "f.json").write_text(text)
    with pytest.raises(ImportRefused) as refused:
        list(json_records(read_source(tmp_path / "f.json")))
    assert f"f.json{message}" in str(refused.value)


def test_skipping_passes_over_bad_records_keeping_the_places_of_the_others(tmp_path: Path) -> None:
    (tmp_path / "l.jsonl").write_text('{"n": 1}\n{"n": \n\n[3]\n{"n": 4}\n')
    (tmp_path / "a.json").write_text('[{"n": 1}, 2, {"n": 3}]')
    skips = Skips(enabled=True)
    lines = list(json_records(read_source(tmp_path / "l.jsonl", skips=skips)))
    assert [(r.where, r.ordinal, r.name) for r in lines] == [("1", 1, "line-1"), ("5", 4, "line-5")]
    items = list(json_records(read_source(tmp_path / "a.json", skips=skips)))
    assert [(r.where, r.ordinal, r.name) for r in items] == [("item 1", 1, "item-1"), ("item 3", 3, "item-3")]
    assert [reason.split("/")[-1] for reason in skips.reasons] == [
        "l.jsonl:2: not JSON (Expecting value at column 7); JSONL holds one JSON object a line: fix the line",
        "l.jsonl:4: JSONL whose line 4 is a JSON array, not an object; one JSON object a line: fix the line",
        "a.json:item 2: a JSON number, not an object; each item of the array is one",
    ]


def test_jsonl_whose_first_line_is_broken_is_still_read_line_by_line(tmp_path: Path) -> None:
    (tmp_path / "l.jsonl").write_text('{"n": \n{"n": 2}\n')
    skips = Skips(enabled=True)
    assert [r.where for r in json_records(read_source(tmp_path / "l.jsonl", skips=skips))] == ["2"]
    assert skips.reasons[0].endswith(
        "l.jsonl:1: not JSON (Expecting value at column 7); JSONL holds one JSON object a line: fix the line"
    )


def test_without_skipping_the_first_bad_record_refuses_the_import(tmp_path: Path) -> None:
    (tmp_path / "l.jsonl").write_text('{"n": 1}\n[2]\n{"n": 3}\n')
    with pytest.raises(ImportRefused, match=r"l\.jsonl:2: JSONL whose line 2 is a JSON array"):
        list(json_records(read_source(tmp_path / "l.jsonl")))


def test_a_chat_log_needs_no_licence_flag_and_records_a_name_given() -> None:
    assert licence_for("sharegpt", None) == licence_for("openai-chat", None) == OWN_LOGS
    assert licence_for("sharegpt", "Apache-2.0") == "Apache-2.0"
    assert licence_for("compactbench", None) == "Apache-2.0"


def _peak_while(read: Iterator[object]) -> tuple[int, ImportRefused]:
    """The peak of memory allocated while `read` is consumed to its refusal, and the refusal."""
    tracemalloc.start()
    try:
        with pytest.raises(ImportRefused) as refused:
            list(read)
        return tracemalloc.get_traced_memory()[1], refused.value
    finally:
        tracemalloc.stop()


def test_a_line_past_the_record_bound_is_refused_holding_about_the_bound(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(source_module, "MAX_RECORD_CHARS", 1 << 20)
    path = tmp_path / "one-line.jsonl"
    path.write_text('{"n": 1}\n{"text": "' + "x" * (50 << 20) + '"}\n')  # a 50 MB second line
    peak, refused = _peak_while(json_records(read_source(path)))
    assert "one-line.jsonl:2: a line of more than 1,048,576 characters, refused before it is decoded" in str(refused)
    assert peak < 8 << 20  # about the bound and a piece or two, not the 50 MB line (twice over)


@pytest.mark.parametrize("shape", ["list", "object"])
def test_a_json_value_past_the_record_bound_is_refused_holding_about_the_bound(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shape: str
) -> None:
    monkeypatch.setattr(source_module, "MAX_RECORD_CHARS", 1 << 20)
    item = '{\n"text": "' + "x" * (30 << 20) + '"}'
    path = tmp_path / "big.json"
    path.write_text(f'[{{"n": 1}},\n{item}]' if shape == "list" else f'{{\n"n": 1\n}}\n{item}')
    peak, refused = _peak_while(json_records(read_source(path)))
    line = 2 if shape == "list" else 4
    assert f"big.json:{line}: a JSON value of more than 1,048,576 characters, refused before it" in str(refused)
    assert peak < 8 << 20


def test_a_record_within_the_bound_is_read_whole(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(source_module, "MAX_RECORD_CHARS", 1 << 20)
    monkeypatch.setattr(source_module, "CHUNK_BYTES", 4096)
    text = "x" * ((1 << 20) - 20)
    (tmp_path / "a.jsonl").write_text(f'{{"t": "{text}"}}\n')
    (tmp_path / "a.json").write_text(f'[{{"t": "{text}"}}]')
    for name in ("a.jsonl", "a.json"):
        assert [r.value["t"] for r in json_records(read_source(tmp_path / name))] == [text]
