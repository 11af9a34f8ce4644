"""How the report reads large results: only the columns it shows, no message body, and one
conversation's records by their byte spans."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from harness.report.comparison import OPTIONAL, READ, plain_column, records, records_by_part
from harness.results.calls_in_bulk import read_calls, read_keys_in_bulk
from harness.results.rows import CALL, PROBE
from harness.results.spans import SpanIndex
from harness.results.tables import load_results, read_columns, read_keys
from tests.conftest import run_through_cli
from tests.paths import SHIPPED


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two chronologies under the seed's comparison (answers, summaries with their bodies, fact
    writes): every kind of record the readers cut, at a third of the plain run of three."""
    files = [SHIPPED / "correct-then-forget.yaml", SHIPPED / "summary-overflow.yaml"]
    return run_through_cli(tmp_path_factory.mktemp("reading"), files, "reading", "--policy", "seed", "--no-charts")


def test_the_columns_read_for_the_report_hold_the_values_load_results_reads(run: Path) -> None:
    whole = load_results(run)
    for kind in ("turns", "probes"):
        lean = read_columns(run / f"{kind}.csv", READ[kind])
        assert list(lean.columns) == list(READ[kind])
        assert records(lean) == records(getattr(whole, kind)[list(READ[kind])])


def test_calls_are_read_without_their_message_bodies_and_with_their_types(run: Path) -> None:
    whole = [json.loads(line) for line in (run / "calls.jsonl").read_text(encoding="utf-8").splitlines()]
    lean = records(read_keys(run / "calls.jsonl", READ["calls"], drop=CALL.messages))
    assert lean == [{key: record[key] for key in READ["calls"]} for record in whole]
    assert any(record[CALL.messages] for record in whole)  # summarizer calls carry bodies: they were cut


def test_duckdb_reads_calls_as_the_line_reader_does(run: Path) -> None:
    line_by_line = read_keys(run / "calls.jsonl", READ["calls"], drop=CALL.messages)
    bulk = read_keys_in_bulk(run / "calls.jsonl", READ["calls"])
    assert bulk is not None
    assert records(bulk) == records(line_by_line)
    assert bulk.dtypes.to_dict() == line_by_line.dtypes.to_dict()
    for name in ("chronology", "kind"):
        assert list(bulk[name].cat.categories) == list(line_by_line[name].cat.categories)


def test_the_report_reads_a_large_file_by_duckdb_into_the_line_reader_s_frame(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.results.calls_in_bulk as bulk
    from harness.report.comparison import ONLY

    line_by_line = read_calls(run / "calls.jsonl", READ["calls"], drop=CALL.messages, only=ONLY)
    monkeypatch.setattr(bulk, "read_keys", None)  # from here, only DuckDB may read it
    monkeypatch.setattr(bulk, "BULK_BYTES", 0)
    read = read_calls(run / "calls.jsonl", READ["calls"], drop=CALL.messages, only=ONLY)
    assert records(read) == records(line_by_line) and read.dtypes.to_dict() == line_by_line.dtypes.to_dict()


def test_duckdb_leaves_a_file_it_cannot_read_exactly_to_the_line_reader(tmp_path: Path) -> None:
    record = {"chronology": "c", "policy": "p", "model": "m", "repetition": 1, "turn": 2, "kind": "answer"}
    good = json.dumps(record | {"scripted": False, "reported_prompt_tokens": 12.0}) + "\n"
    for text in (good + good[:30], good + json.dumps(record | {"turn": 2.5}) + "\n", good + "not json\n"):
        (tmp_path / "calls.jsonl").write_text(text, encoding="utf-8")
        assert read_keys_in_bulk(tmp_path / "calls.jsonl", READ["calls"]) is None
    (tmp_path / "calls.jsonl").write_text(good + good, encoding="utf-8")
    bulk = read_keys_in_bulk(tmp_path / "calls.jsonl", READ["calls"])
    assert bulk is not None and records(bulk) == records(read_keys(tmp_path / "calls.jsonl", READ["calls"]))
    assert bulk[CALL.reported_prompt_tokens].tolist() == [12.0, 12.0]  # raw counts stay as read


@pytest.mark.parametrize("names", [3, 300])
def test_duckdb_reads_a_name_missing_from_some_records_as_missing(tmp_path: Path, names: int) -> None:
    """A failed call has no `finish_reason`: missing, whatever DuckDB's code type (it was read
    as code 255 of a uint8: an IndexError, or another name)."""
    lines = []
    for i in range(2 * names):
        record = {"chronology": "c", "policy": "p", "model": "m", "repetition": 1, "turn": 2, "kind": "answer"}
        lines.append(json.dumps(record | ({"finish_reason": f"r{i // 2}"} if i % 2 else {})))
    (tmp_path / "calls.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    bulk = read_keys_in_bulk(tmp_path / "calls.jsonl", READ["calls"])
    assert bulk is not None
    assert records(bulk) == records(read_keys(tmp_path / "calls.jsonl", READ["calls"]))
    assert bulk[CALL.finish_reason].isna().sum() == names


def test_duckdb_checks_types_on_distinct_texts_as_the_line_reader_types_values(tmp_path: Path) -> None:
    """Escaped spellings of one name are one category, and `answ\\u0065r` is an answer (its
    response is read); a value of another JSON type in a name, flag or whole-number key leaves
    the file to the line reader."""
    from harness.report.comparison import ONLY

    record = {"chronology": "café", "policy": "p", "model": "m", "repetition": 1, "turn": 2, "kind": "answer"}
    lines = [json.dumps(record | {"response": "a"}, ensure_ascii=False), json.dumps(record | {"response": "b"})]
    lines.append(json.dumps(record | {"kind": "writer", "response": "c"}).replace('"writer"', '"writ\\u0065r"'))
    lines.append(json.dumps(record | {"response": "d"}).replace('"answer"', '"answ\\u0065r"'))
    (tmp_path / "calls.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    bulk = read_keys_in_bulk(tmp_path / "calls.jsonl", READ["calls"], ONLY)
    line_by_line = read_keys(tmp_path / "calls.jsonl", READ["calls"], only=ONLY)
    assert bulk is not None and records(bulk) == records(line_by_line)
    assert list(bulk[CALL.chronology].cat.categories) == ["café"] and plain_column(bulk[CALL.response]) == [
        "a",
        "b",
        None,
        "d",
    ]
    for odd in ({"turn": "2"}, {"turn": 2.0}, {"scripted": 1}, {"cached": "true"}, {"kind": 3}, {"turn": 2**63}):
        text = "\n".join([*lines, json.dumps(record | odd)]) + "\n"
        (tmp_path / "calls.jsonl").write_text(text, encoding="utf-8")
        assert read_keys_in_bulk(tmp_path / "calls.jsonl", READ["calls"], ONLY) is None, odd


def test_a_message_body_that_looks_like_keys_is_cut_whole_and_a_torn_line_is_skipped(tmp_path: Path) -> None:
    body = [{"role": "user", "content": 'say ", "messages_from": "x", "kind": "judge" and {"chronology": "c"}'}]
    record = {"chronology": "c", "policy": "p", "model": "m", "repetition": 1, "kind": "summarizer"}
    record |= {"messages": body, "messages_from": None, "response": "ok"}
    line = json.dumps(record, ensure_ascii=False)
    (tmp_path / "calls.jsonl").write_text(line + "\n" + line[:40], encoding="utf-8")
    read = read_keys(tmp_path / "calls.jsonl", [CALL.kind, CALL.response, CALL.messages], drop=CALL.messages)
    assert records(read) == [{"kind": "summarizer", "response": "ok", "messages": None}]


def test_a_csv_cut_inside_a_quoted_cell_reads_to_its_last_whole_row(tmp_path: Path) -> None:
    header = ",".join(PROBE)
    row = ["c", "p", "m", "1", "2", "q", "s", "measured", "prohibition", "x", "true", "", "false", "1"]
    row += ["", "", "true", '"a note\nover two lines"', "", "", ""]
    (tmp_path / "probes.csv").write_text(header + "\n" + ",".join(row) + "\n" + ",".join(row)[:-12], encoding="utf-8")
    read = read_columns(tmp_path / "probes.csv", [PROBE.subject, PROBE.in_view, PROBE.in_answer, PROBE.note])
    assert records(read) == [{"subject": "x", "in_view": True, "in_answer": None, "note": "a note\nover two lines"}]
    assert isinstance(read[PROBE.subject].dtype, pd.CategoricalDtype)


def test_a_csv_cut_just_after_a_newline_inside_a_quoted_cell_reads_to_its_last_whole_row(tmp_path: Path) -> None:
    """The file ends with a newline, but inside quotes: the parser stops inside a string, and the
    file is read again up to its last whole row."""
    header = ",".join(PROBE)
    row = ["c", "p", "m", "1", "2", "q", "s", "measured", "prohibition", "x", "true", "", "false", "1"]
    row += ["", "", "true", '"a note\nover two lines"', "", "", ""]
    whole = ",".join(row)
    torn = whole[: whole.index("\n") + 1]  # up to the newline inside the note
    (tmp_path / "probes.csv").write_text(header + "\n" + whole + "\n" + torn, encoding="utf-8")
    assert (tmp_path / "probes.csv").read_bytes().endswith(b"\n")
    read = read_columns(tmp_path / "probes.csv", [PROBE.subject, PROBE.note])
    assert records(read) == [{"subject": "x", "note": "a note\nover two lines"}]


def test_the_span_index_reads_one_conversation_or_one_chronology(tmp_path: Path) -> None:
    def record(chronology: str, policy: str, repetition: int, n: int) -> str:
        identity = {"chronology": chronology, "policy": policy, "model": "m", "repetition": repetition}
        return json.dumps({**identity, "n": n}, ensure_ascii=False)

    lines = [record("a", "p", 1, 0), record("a", "p", 1, 1), record("a", 'q "x"', 1, 2), record("b", "p", 1, 3)]
    lines += [record("a", "p", 2, 4), record("a", "p", 1, 5)]
    (tmp_path / "facts.jsonl").write_text("\n".join(lines) + "\n" + lines[0][:30], encoding="utf-8")
    index = SpanIndex(tmp_path / "facts.jsonl")
    assert [r["n"] for r in index.conversation(("a", "p", "m", 1))] == [0, 1, 5]
    assert [r["n"] for r in index.conversation(("a", 'q "x"', "m", 1))] == [2]
    assert index.conversation(("z", "p", "m", 1)) == []


def test_span_index_names_decode_as_json_with_or_without_escapes(tmp_path: Path) -> None:
    identity = {"chronology": "café", "policy": "p\\q", "model": "m", "repetition": 3}
    lines = [json.dumps({**identity, "n": 0}, ensure_ascii=False), json.dumps({**identity, "n": 1})]
    (tmp_path / "facts.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spans = SpanIndex(tmp_path / "facts.jsonl").spans
    assert list(spans) == [("café", "p\\q", "m", 3)]  # two runs: the escaped line has other bytes
    assert len(spans[("café", "p\\q", "m", 3)]) == 2


def test_records_by_part_are_the_records_of_each_part_taken_alone(run: Path) -> None:
    probes = read_columns(run / "probes.csv", READ["probes"])
    positions = probes.groupby([PROBE.policy, PROBE.check], observed=True, sort=False).indices
    parts = records_by_part(probes, positions)
    assert list(parts) == list(positions)
    assert parts == {key: records(probes.take(rows), OPTIONAL) for key, rows in positions.items()}
    assert any(PROBE.note not in part[0] for part in parts.values())  # a part with no note leaves it out


def test_responses_are_read_for_answer_calls_only_by_both_readers(run: Path) -> None:
    from harness.report.comparison import ONLY

    whole = [json.loads(line) for line in (run / "calls.jsonl").read_text(encoding="utf-8").splitlines()]
    line_by_line = read_keys(run / "calls.jsonl", READ["calls"], drop=CALL.messages, only=ONLY)
    bulk = read_keys_in_bulk(run / "calls.jsonl", READ["calls"], ONLY)
    assert bulk is not None and records(bulk) == records(line_by_line)
    expected = [r[CALL.response] if r[CALL.kind] == "answer" else None for r in whole]
    assert plain_column(line_by_line[CALL.response]) == expected
    assert any(r[CALL.response] for r in whole if r[CALL.kind] != "answer")  # summaries were left out
    assert any(expected)


def test_a_response_of_another_type_counts_only_where_it_is_read(tmp_path: Path) -> None:
    from harness.report.comparison import ONLY

    record = {"chronology": "c", "policy": "p", "model": "m", "repetition": 1, "turn": 2}
    lines = [record | {"kind": "summarizer", "response": 12}, record | {"kind": "answer", "response": "ok"}]
    (tmp_path / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    bulk = read_keys_in_bulk(tmp_path / "calls.jsonl", READ["calls"], ONLY)  # the 12 is never read
    assert bulk is not None and plain_column(bulk[CALL.response]) == [None, "ok"]
    lines[1][CALL.response] = 12
    (tmp_path / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    assert read_keys_in_bulk(tmp_path / "calls.jsonl", READ["calls"], ONLY) is None  # to the line reader
    assert plain_column(read_keys(tmp_path / "calls.jsonl", READ["calls"], only=ONLY)[CALL.response]) == [None, 12]


def test_values_typed_chunk_by_chunk_give_the_frame_typed_whole(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.results.tables as results

    record = {"chronology": "c", "policy": "p", "model": "m", "repetition": 1, "kind": "answer", "turn": 1}
    odd = [record | {"turn": 2.0}, record | {"turn": 2**70, "kind": "judge"}, record | {"scripted": 1}]
    texts = [(run / "calls.jsonl").read_text(encoding="utf-8")]
    texts.append("".join(json.dumps(r) + "\n" for r in [record, record, record, *odd, record]) + "not json\n")
    for n, text in enumerate(texts):
        path = tmp_path / f"calls-{n}.jsonl"
        path.write_text(text + '{"torn', encoding="utf-8")
        monkeypatch.setattr(results, "CHUNK_LINES", 10**9)
        whole = read_keys(path, READ["calls"], drop=CALL.messages)
        monkeypatch.setattr(results, "CHUNK_LINES", 2)
        chunked = read_keys(path, READ["calls"], drop=CALL.messages)
        assert chunked.dtypes.to_dict() == whole.dtypes.to_dict()
        assert records(chunked) == records(whole)
        for name in ("chronology", "kind"):
            assert list(chunked[name].cat.categories) == list(whole[name].cat.categories)
    assert chunked[CALL.turn].tolist()[3:5] == [2.0, 2**70]  # a column with a value beyond 64 bits stays as read


def test_repetitions_are_counted_over_runs_of_rows() -> None:
    from harness.report.comparison import repetition_counts, run_starts

    turns = pd.DataFrame(
        {
            "chronology": pd.Categorical(["a", "a", "a", "b", "a", "a", "b"]),
            "policy": pd.Categorical(["p"] * 7),
            "model": pd.Categorical(["m"] * 7),
            "repetition": pd.array([1, 1, 2, 1, 1, None, 3], dtype="Int64"),
        }
    )
    assert run_starts(turns, list(turns.columns)).tolist() == [0, 2, 3, 4, 5, 6]
    expected = turns.groupby(["chronology", "policy", "model"], observed=True)["repetition"].nunique()
    assert repetition_counts(turns) == {tuple(k): int(n) for k, n in expected.items()}
