"""The results files: streamed, flushed, blank for unknown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.base.errors import InputError
from harness.results.reader import read_manifest
from harness.results.rows import (
    BOOL_COLUMNS,
    FLOAT_COLUMNS,
    FORMAT_VERSION,
    INT_COLUMNS,
    PROBE_COLUMNS,
    TURN_COLUMNS,
    Manifest,
    ProbeCells,
    ProbeRow,
)
from harness.results.writer import ResultsWriter, _encode_record, csv_cells
from tests.conftest import call_record, turn_row


def test_records_are_readable_before_the_writer_closes(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path)
    writer.turn(TURN_ROW)
    writer.probe(PROBE_ROW)
    assert (tmp_path / "turns.csv").read_text().splitlines()[1] == "c,p,m,1,1,s,forget,,,,,,,,,,0,0,0,0,0,,0,,,,,,,"
    assert (tmp_path / "probes.csv").read_text().splitlines()[
        1
    ] == "c,p,m,1,2,q,s,measured,stale,k=v,false,,true,1,,,,,,,"
    writer.close()


TURN_ROW = turn_row(
    turn=1,
    session="s",
    status="forget",
    **dict.fromkeys(("retained_messages", "retained_chars", "aux_calls", "aux_chars", "aux_estimate_tokens"), 0),
    aux_reported_calls=0,
)
PROBE_ROW = ProbeRow(
    "c", "p", "m", 1, 2, "q", "s", ProbeCells("measured", "stale", "k=v", False, None, True, 1, None, None, None)
)


def test_a_row_is_written_in_column_order_and_one_with_a_field_that_is_no_column_is_refused(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path) as writer:
        shuffled = dict(reversed(TURN_ROW.as_record().items()))
        writer._append_row("turns.csv", shuffled)
        with pytest.raises(ValueError, match="not columns: surprise"):
            writer._append_row("turns.csv", {**TURN_ROW.as_record(), "surprise": 1})
    lines = (tmp_path / "turns.csv").read_text().splitlines()
    assert lines == [",".join(TURN_COLUMNS), "c,p,m,1,1,s,forget,,,,,,,,,,0,0,0,0,0,,0,,,,,,,"]


def test_the_columns_are_the_fields_of_the_record_types_in_order() -> None:
    assert TURN_COLUMNS == tuple(TURN_ROW.as_record())
    assert PROBE_COLUMNS == tuple(PROBE_ROW.as_record())
    assert TURN_COLUMNS[:4] == PROBE_COLUMNS[:4] == ("chronology", "policy", "model", "repetition")


def test_the_reading_side_types_columns_by_the_field_annotations() -> None:
    assert set(BOOL_COLUMNS) == {"in_view", "in_answer", "in_retained", "passed", "judged_in_view", "judged_in_answer"}
    assert FLOAT_COLUMNS == ("latency_ms",)
    assert {"repetition", "turn", "age", "view_chars", "aux_reported_calls"} <= set(INT_COLUMNS)
    assert not set(INT_COLUMNS) & {"session", "policy_note", "lost_at"}


def test_headers_are_the_contract_columns_written_once(tmp_path: Path) -> None:
    ResultsWriter(tmp_path).close()
    ResultsWriter(tmp_path).close()  # reopening appends, never repeats the header
    assert (tmp_path / "turns.csv").read_text().splitlines() == [",".join(TURN_COLUMNS)]
    assert (tmp_path / "probes.csv").read_text().splitlines() == [",".join(PROBE_COLUMNS)]


def test_unknown_is_blank_never_zero_and_booleans_are_words() -> None:
    row = {"a": None, "b": 0, "c": 1, "d": True, "e": False, "f": 0.0, "g": "x", "h": ""}
    columns = (*row, "missing")
    assert csv_cells(row, columns) == ["", 0, 1, "true", "false", 0.0, "x", "", ""]


def test_a_record_line_is_json_dumps_without_ascii_escapes() -> None:
    record = {"content": 'café ☕ "q"', "n": [1, 2.5, None, True], "nested": {"k": "v"}}
    assert _encode_record(record) == json.dumps(record, ensure_ascii=False)


LINE_BREAKING = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg\x1dh\x1ei\rj"  # every break `str.splitlines` knows


def test_a_record_line_escapes_what_any_reader_takes_for_a_line_break(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path) as writer:
        writer.call(call_record(response=LINE_BREAKING, error=f"e {LINE_BREAKING}"))
        writer.message({"content": LINE_BREAKING})
        writer.call(call_record(response="second"))
    for name, count in (("calls.jsonl", 2), ("messages.jsonl", 1)):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert len(text.splitlines()) == text.count("\n") == count
        assert "\\u2028" in text and "\\u0085" in text
    first = json.loads((tmp_path / "calls.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["response"] == LINE_BREAKING  # escaped, not changed


def test_a_lone_surrogate_that_reaches_the_writer_is_written_as_a_replacement_character(tmp_path: Path) -> None:
    """The edges replace them and say so (harness.base.text); the writer never fails on one left."""
    with ResultsWriter(tmp_path) as writer:
        writer.message({"content": "half \ud800"})
        writer.finished({"chronology": "c\udcff"})
    assert json.loads((tmp_path / "messages.jsonl").read_text(encoding="utf-8")) == {"content": "half \ufffd"}
    finished = json.loads((tmp_path / "conversations.jsonl").read_text(encoding="utf-8"))
    assert finished["chronology"] == "c\ufffd"  # beside the digests of its records


def test_the_manifest_is_replaced_whole(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path) as writer:
        writer.manifest(
            Manifest(
                format_version=FORMAT_VERSION, repetitions=1, live=False, run_id="r", status="running", policies=[]
            )
        )
        writer.manifest(
            Manifest(
                format_version=FORMAT_VERSION, repetitions=1, live=False, run_id="r", status="complete", policies=[]
            )
        )
    assert json.loads((tmp_path / "manifest.json").read_text())["status"] == "complete"
    assert not list(tmp_path.glob(".*.tmp"))


def test_rewriting_copies_each_record_as_written_grouped_in_plan_order(tmp_path: Path) -> None:
    import json as _json

    from harness.results.order import rewrite_records

    lines = [
        _json.dumps({"chronology": "c", "policy": p, "model": "m", "repetition": 1, "n": n}, ensure_ascii=False)
        for n, p in enumerate(["b", "a", "b", "gone", "a"])
    ]
    (tmp_path / "calls.jsonl").write_text("\n".join(lines) + "\n" + '{"chronology": "c", "pol', encoding="utf-8")
    rewrite_records(tmp_path, {("c", "a", "m", 1): 0, ("c", "b", "m", 1): 1})
    assert (tmp_path / "calls.jsonl").read_text(encoding="utf-8").splitlines() == [
        lines[1],
        lines[4],
        lines[0],
        lines[2],
    ]


JSON_LINES = [
    b'{"chronology": "c", "policy": "p", "model": "m", "repetition": 2, "x": 1}\n',
    '{"chronology": "ç\\u00e9", "policy": "p", "model": "m", "repetition": 1}\n'.encode(),
    b'{"chronology": "c", "policy": "p", "model": "m", "repetition": 1, "x": NaN}\n',  # json reads NaN, orjson not
    b'{"chronology": "c", "policy": "p", "model": "m", "repetition": 1, "x": 123456789012345678901234567890}\n',
    b'{"chronology": "c", "policy": "p", "model": "m", "repetition": 1.0}\n',
    b'{"chronology": "c", "policy": "p", "model": "m"}\n',  # no repetition: no record
    b'{"chronology": "c", "policy": "p", "model": "m", "repetition": "x"}\n',
    b'["c", "p", "m", 1]\n',
    b'{"chronology": "c", "pol\n',
    b"\n",
]
CSV_LINES = [
    b"c,p,m,1,rest,of,row\n",
    b"c,p,m,1\r\n",
    b"c,p,m,1\n",
    b"c,p,m\n",
    b"c,p,m,x,y\n",
    b"c,p,m, 3 ,y\n",
    b'"c,1",p,m,2,y\n',
    b'c,"p ""q""",m,2\n',
    b"c\rd,p,m,1,y\n",
    b"\n",
    "ç,p,m,4,é\n".encode(),
]


@pytest.mark.parametrize("raw", JSON_LINES)
def test_a_json_record_s_conversation_is_what_the_standard_parser_reads(raw: bytes) -> None:
    from harness.base.identity import RunKey
    from harness.results.order import record_key

    try:
        expected = RunKey.of(json.loads(raw.decode()))
    except (ValueError, KeyError, TypeError):
        expected = None
    assert record_key(raw, False, Path("calls.jsonl"), 1) == expected


@pytest.mark.parametrize("raw", CSV_LINES)
def test_a_csv_row_s_conversation_is_what_the_csv_module_reads(raw: bytes) -> None:
    import csv
    import io

    from harness.results.order import record_key

    try:
        cells = next(csv.reader(io.StringIO(raw.decode(), newline="")))
        expected = (cells[0], cells[1], cells[2], int(cells[3]))
    except (StopIteration, IndexError, ValueError):
        expected = None
    assert record_key(raw, True, Path("turns.csv"), 2) == expected


@pytest.mark.parametrize("is_csv", [False, True])
def test_a_record_that_is_not_utf8_is_named_by_file_and_line(is_csv: bool) -> None:
    from harness.results.order import record_key

    raw = b'{"chronology": "\xff", "policy": "p", "model": "m", "repetition": 1}\n' if not is_csv else b"\xff,p,m,1\n"
    with pytest.raises(InputError, match="results.x:7: not UTF-8"):
        record_key(raw, is_csv, Path("results.x"), 7)


def test_a_manifest_reads_back_as_the_type_it_was_written_from(tmp_path: Path) -> None:
    from harness.results.digests import sealed

    written = sealed(
        Manifest(
            format_version=FORMAT_VERSION,
            run_id="r",
            repetitions=1,
            live=False,
            status="failed",
            policies=[{"label": "full-history", "name": "full-history", "params": {}}],
            models=["reference"],
            seed=3,
            conversations={"total": 2, "complete": 1},
            model_settings={"reference": {"name": "reference"}},
            error="OSError: disk full",
        )
    )
    with ResultsWriter(tmp_path) as writer:
        writer.manifest(written)
    assert read_manifest(tmp_path) == written


def test_a_manifest_of_an_earlier_harness_without_the_later_fields_still_reads(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(  # format version 2: before manifests held digests
        json.dumps({"format_version": 2, "run_id": "old", "policies": [], "repetitions": 1, "live": False})
    )
    manifest = read_manifest(tmp_path)
    assert (manifest.run_id, manifest.model_settings, manifest.error, manifest.conversations) == ("old", None, None, {})


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"run_id": None}, "field 'run_id' is missing"),
        ({"repetitions": None}, "field 'repetitions' is missing"),  # a resume would otherwise guess 1
        ({"live": None}, "field 'live' is missing"),
        ({"seed": "3"}, "field 'seed' should be int or null, not str"),
        ({"live": 1}, "field 'live' should be bool, not int"),
        ({"concurrency": True}, "field 'concurrency' should be int or null, not bool"),
        ({"conversations": []}, "field 'conversations' should be dict, not list"),
        ({"error": 5}, "field 'error' should be str or null, not int"),
    ],
)
def test_a_bad_manifest_field_is_named_with_its_file(tmp_path: Path, changes: dict, problem: str) -> None:
    data = {"format_version": FORMAT_VERSION, "run_id": "r", "policies": [], "repetitions": 1, "live": False, **changes}
    (tmp_path / "manifest.json").write_text(json.dumps({k: v for k, v in data.items() if v is not None}))
    with pytest.raises(InputError) as caught:
        read_manifest(tmp_path)
    assert str(tmp_path / "manifest.json") in str(caught.value) and problem in str(caught.value)
