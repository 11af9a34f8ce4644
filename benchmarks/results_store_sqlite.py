"""The results store as it is (files appended, then the plan-order rewrite and the digests)
against one SQLite file written transactionally with the same CSV/JSONL files exported from it:
the measurements behind docs/decisions/0002-results-store.md. A prototype, not the harness's code.

Synthetic records at the proportions of the shipped library's run under the default policies
and the `reference` model (per probe row: 1.64 turns, 0.72 calls; 11.6 probe rows per
conversation): each conversation has 12 probe rows, 19 turns and 8 calls (3 answers, 3 writer
and 2 summarizer calls carrying their request), built as the real record types
(`harness.results.rows`: `ProbeRow`, `TurnRow`, `CallRecord`), in plan order chronology-major.
messages.jsonl, views.jsonl, facts.jsonl and residue.csv are left out (the rewrite and the
digests cost per byte the same on them; the calls file stands for the JSON-lines files).

(a) **today**: the real `ResultsWriter` shared by 2 writer threads (conversations interleaved,
as `--concurrency 2` writes them), then what a batch does when it ends: the real
`rewrite_records` (plan order) and `file_digests` (the manifest's `files`).
(b) **sqlite**: stdlib sqlite3, WAL, `synchronous=NORMAL`, one connection per writer thread,
each conversation's records held until it finishes and written in one transaction (a
conversation lasts minutes at a model's latency: a transaction open that long would hold the
other writer out); then probes.csv, turns.csv and calls.jsonl exported from it in plan order
(`csv_cells` and the writer's own JSON line; checked byte for byte against (a)'s files).

Then, each in a child process (its peak RSS its own): reading probes with pandas (`read_csv` of
the file; `read_sql_query` of the table), one conversation's calls (the span index by bisection
and by its whole index, against an indexed query), the report's call columns
(`calls_in_bulk.read_calls`: DuckDB from 256 MB on, against a query), the integrity check
(`integrity.check` of a complete run: one hash pass; of a running one: record by record,
against `PRAGMA quick_check` / `integrity_check`), and a kill -9 mid-write of each store.

    python benchmarks/results_store_sqlite.py                # 1,000,000 probe rows (about 2 GB on disk)
    python benchmarks/results_store_sqlite.py --rows 50000 --keep /tmp/store

No timed assertion: it prints what one run measured, and the ratios sqlite / today.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.results.rows import BOOL_COLUMNS, PROBE_COLUMNS, TURN_COLUMNS, CallRecord, ProbeCells, ProbeRow, TurnRow

PROBES_PER_CONVERSATION, TURNS_PER_CONVERSATION = 12, 19
CALL_KINDS = ("answer", "writer", "answer", "summarizer", "writer", "answer", "writer", "summarizer")
POLICIES = 14
THREADS = 2
READ_CALL_KEYS = (
    "kind",
    "chars",
    "estimate_tokens",
    "tiktoken_tokens",
    "reported_prompt_tokens",
    "latency_ms",
    "cached",
)
Key = tuple[str, str, str, int]


def plan(rows: int) -> list[Key]:
    """The conversations, in plan order (chronology-major), enough for `rows` probe rows."""
    count = -(-rows // PROBES_PER_CONVERSATION)
    repetitions = 50
    per_chronology = POLICIES * repetitions
    keys = []
    for n in range(count):
        chronology, rest = divmod(n, per_chronology)
        policy, repetition = divmod(rest, repetitions)
        keys.append((f"chronology-{chronology:03d}", f"policy-{policy:02d} window=8", "reference", repetition + 1))
    return keys


def conversation(key: Key, n: int) -> tuple[list[TurnRow], list[ProbeRow], list[CallRecord], dict[str, Any]]:
    """One conversation's records, deterministic in its place `n` (both stores get the same)."""
    ident = dict(zip(("chronology", "policy", "model", "repetition"), key, strict=True))
    turns = [
        TurnRow(
            **ident,
            turn=t,
            session="main",
            status="answered" if t % 6 == 5 else "scripted",
            stop_reason=None,
            error=None,
            view_messages=t + 2,
            view_chars=180 * t + 90,
            estimate_tokens=45 * t + 23,
            tiktoken_tokens=41 * t + 20 if t % 7 else None,
            reported_prompt_tokens=None,
            reported_completion_tokens=None,
            latency_ms=round(0.5 + (n * 31 + t) % 97 / 10, 3),
            retained_messages=2 * t,
            retained_chars=170 * t,
            aux_calls=int(t % 3 == 0),
            aux_chars=300 * (t % 3 == 0),
            aux_estimate_tokens=75 * (t % 3 == 0),
            aux_tiktoken_tokens=70 * (t % 3 == 0),
            aux_reported_calls=0,
            aux_reported_prompt_tokens=None,
            aux_reported_completion_tokens=None,
            policy_note="window dropped 2 messages" if t > 8 else None,
            group_violations=None,
        )
        for t in range(1, TURNS_PER_CONVERSATION + 1)
    ]
    probes = []
    for p in range(PROBES_PER_CONVERSATION):
        turn = 5 + 6 * (p // 4)
        kept = (n + p) % 3 != 0
        cells = ProbeCells(
            status="measured",
            check=("current", "stale", "prohibition", "expect")[p % 4],
            subject=f'key{p}=value {n % 17}, "quoted"' if p % 5 == 0 else f"key{p}=value {n % 17}",
            in_view=kept,
            in_answer=kept and p % 2 == 0,
            in_retained=kept,
            age=turn - p % 4,
            lost_at=None if kept else f"window (turn {turn - 1})",
            cause=None if kept else "window",
            passed=kept if p % 4 != 1 else not kept,
            note=None,
        )
        probes.append(ProbeRow(**ident, turn=turn, probe=f"probe-{p // 4}", session="main", cells=cells))
    calls = []
    for c, kind in enumerate(CALL_KINDS):
        request = (
            None
            if kind == "answer"
            else [
                {"role": "system", "content": f"You keep a {kind}'s notes. " * 8},
                {
                    "role": "user",
                    "content": f"Turn {c}: the budget moved to {n % 1000} and the region is eu-west-{c}. " * 12,
                },
            ]
        )
        calls.append(
            CallRecord(
                **ident,
                session="main",
                turn=2 * c + 1,
                kind=kind,
                call_model="reference",
                scripted=False,
                messages=request,
                messages_from="views.jsonl" if request is None else None,
                response=f"database=SQL Server {2000 + c}; budget={n % 1000}",
                response_chars=38,
                truncated=False,
                chars=1200 + 37 * c,
                estimate_tokens=300 + 9 * c,
                tiktoken_tokens=280 + 9 * c,
                tiktoken_encoding="cl100k_base",
                reported_prompt_tokens=None,
                reported_completion_tokens=None,
                invalid_reported_usage=None,
                latency_ms=round(0.9 + (n + c) % 13 / 10, 3),
                attempts=1,
                cached=False,
                shared=False,
                error=None,
                notes=[],
                format_refusals=0,
                structured_output=None,
                response_model=None,
                system_fingerprint=None,
                finish_reason=None,
                response_id=None,
                prefix_messages=0,
                prefix_chars=0,
                prefix_tiktoken_tokens=0,
            )
        )
    finished = {
        **ident,
        "status": "complete",
        "calls": len(calls),
        "retries": 0,
        "errors": 0,
        "cached": 0,
        "server": None,
    }
    return turns, probes, calls, finished


def records_in_writing_order(turns, probes, calls) -> Iterator[tuple[str, Any]]:
    """A conversation's records in the order a replay writes them: each turn's calls, its probe
    rows, then the turn's row."""
    for row in turns:
        for call in calls:
            if call.turn == row.turn:
                yield "call", call
        for probe in probes:
            if probe.turn == row.turn:
                yield "probe", probe
        yield "turn", row


def threads_over(keys: list[Key], work) -> None:
    """`work(thread, [(n, key), ...])` on `THREADS` threads, conversations dealt alternately."""
    mine = [[(n, k) for n, k in enumerate(keys) if n % THREADS == t] for t in range(THREADS)]
    workers = [threading.Thread(target=work, args=(t, mine[t])) for t in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


# --- (a) today's store ------------------------------------------------------------------------


def write_today(folder: Path, keys: list[Key]) -> None:
    from harness.results.writer import ResultsWriter

    with ResultsWriter(folder) as writer:
        write = {"call": writer.call, "probe": writer.probe, "turn": writer.turn}

        def work(_thread: int, mine: list[tuple[int, Key]]) -> None:
            for n, key in mine:
                turns, probes, calls, finished = conversation(key, n)
                for kind, record in records_in_writing_order(turns, probes, calls):
                    write[kind](record)
                writer.finished(finished)

        threads_over(keys, work)


def finish_today(folder: Path, keys: list[Key]) -> dict[str, Any]:
    """What the batch does when it ends: the plan-order rewrite, then the files' digests."""
    from harness.results.integrity import file_digests
    from harness.results.order import rewrite_records

    started = time.perf_counter()
    rewrite_records(folder, {k: n for n, k in enumerate(keys)})
    rewritten = time.perf_counter() - started
    files = file_digests(folder)
    (folder / "files.json").write_text(json.dumps(files))
    return {"rewrite_s": rewritten, "digests_s": time.perf_counter() - started - rewritten}


# --- (b) one SQLite file ------------------------------------------------------------------------


def quoted(columns: tuple[str, ...]) -> str:
    """Column names as SQL identifiers (`check` is a keyword)."""
    return ", ".join(f'"{c}"' for c in columns)


SCHEMA = f"""
CREATE TABLE IF NOT EXISTS conversations (conv INTEGER PRIMARY KEY, chronology TEXT, policy TEXT, model TEXT,
    repetition INTEGER, record TEXT);
CREATE TABLE IF NOT EXISTS probes (conv INTEGER, seq INTEGER, {quoted(PROBE_COLUMNS)}, PRIMARY KEY (conv, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS turns (conv INTEGER, seq INTEGER, {quoted(TURN_COLUMNS)}, PRIMARY KEY (conv, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS calls (conv INTEGER, seq INTEGER, kind TEXT, record TEXT);
CREATE INDEX IF NOT EXISTS calls_conv ON calls (conv, seq);
"""


def connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    return con


def write_sqlite(path: Path, keys: list[Key]) -> None:
    from harness.results.writer import _encode_record  # the writer's own JSON line, so the export is the same

    con = connect(path)
    con.executescript(SCHEMA)
    con.close()
    probe_sql = f"INSERT INTO probes VALUES ({', '.join('?' * (len(PROBE_COLUMNS) + 2))})"
    turn_sql = f"INSERT INTO turns VALUES ({', '.join('?' * (len(TURN_COLUMNS) + 2))})"

    def work(_thread: int, mine: list[tuple[int, Key]]) -> None:
        own = connect(path)
        for n, key in mine:
            turns, probes, calls, finished = conversation(key, n)
            rows: dict[str, list[tuple]] = {"probe": [], "turn": [], "call": []}
            for kind, record in records_in_writing_order(turns, probes, calls):
                seq = len(rows[kind])
                if kind == "call":
                    rows[kind].append((n, seq, record.kind, _encode_record(record.as_record())))
                else:
                    rows[kind].append((n, seq, *record.as_record().values()))
            own.execute("BEGIN IMMEDIATE")
            own.executemany(probe_sql, rows["probe"])
            own.executemany(turn_sql, rows["turn"])
            own.executemany("INSERT INTO calls VALUES (?, ?, ?, ?)", rows["call"])
            own.execute("INSERT INTO conversations VALUES (?, ?, ?, ?, ?, ?)", (n, *key, json.dumps(finished)))
            own.execute("COMMIT")
        own.close()

    threads_over(keys, work)


def export_sqlite(path: Path, folder: Path) -> None:
    """probes.csv, turns.csv and calls.jsonl from the database, in plan order, written as the
    writer writes them (a temporary file renamed: an export is whole or absent)."""
    import csv

    from harness.results.writer import csv_cells

    con = connect(path)
    folder.mkdir(parents=True, exist_ok=True)
    for name, table, columns in (("probes.csv", "probes", PROBE_COLUMNS), ("turns.csv", "turns", TURN_COLUMNS)):
        flags = [c in BOOL_COLUMNS for c in columns]
        temporary = folder / f".{name}.tmp"
        with temporary.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            cursor = con.execute(f"SELECT {quoted(columns)} FROM {table} ORDER BY conv, seq")
            while batch := cursor.fetchmany(10_000):
                writer.writerows(
                    csv_cells(
                        {c: (bool(v) if f and v is not None else v) for c, f, v in zip(columns, flags, row)}, columns
                    )
                    for row in batch
                )
        temporary.replace(folder / name)
    temporary = folder / ".calls.jsonl.tmp"
    with temporary.open("w", encoding="utf-8", newline="") as handle:
        cursor = con.execute("SELECT record FROM calls ORDER BY conv, seq")
        while batch := cursor.fetchmany(10_000):
            handle.write("".join(record + "\n" for (record,) in batch))
    temporary.replace(folder / "calls.jsonl")
    con.close()


# --- the phases, each in its own process --------------------------------------------------------


def phase(name: str, work: Path, rows: int) -> dict[str, Any]:
    keys = plan(rows)
    today, db, exported = work / "today", work / "store.sqlite", work / "exported"
    order = {k: n for n, k in enumerate(keys)}
    key = keys[len(keys) // 2]
    out: dict[str, Any] = {}
    started = time.perf_counter()
    if name == "write-today":
        write_today(today, keys)
    elif name == "finish-today":
        out.update(finish_today(today, keys))
    elif name == "write-sqlite":
        write_sqlite(db, keys)
    elif name == "checkpoint-sqlite":
        con = connect(db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
    elif name == "export-sqlite":
        export_sqlite(db, exported)
    elif name == "probes-read_csv":
        import pandas as pd

        out["rows"] = len(pd.read_csv(today / "probes.csv"))
    elif name == "probes-read_sql":
        import pandas as pd

        con = sqlite3.connect(db)
        out["rows"] = len(pd.read_sql_query(f"SELECT {quoted(PROBE_COLUMNS)} FROM probes ORDER BY conv, seq", con))
    elif name == "one-spans-bisect":
        from harness.results.spans import SpanIndex

        out["records"] = len(SpanIndex(today / "calls.jsonl", order).conversation(key))
    elif name == "one-spans-index":
        from harness.results.spans import SpanIndex

        out["records"] = len(SpanIndex(today / "calls.jsonl").conversation(key))
    elif name == "one-sql":
        import orjson

        con = sqlite3.connect(db)
        found = con.execute("SELECT record FROM calls WHERE conv = ? ORDER BY seq", (order[key],)).fetchall()
        out["records"] = len([orjson.loads(r) for (r,) in found])
    elif name == "chronology-blocks":
        import io

        import pandas as pd

        from harness.results.blocks import chronology_ranges, read_spans, spans_of

        ranges = chronology_ranges(today / "turns.csv")
        data = ranges.header + read_spans(today / "turns.csv", spans_of(ranges, [key[0]]))
        out["rows"] = len(pd.read_csv(io.BytesIO(data)))
    elif name == "chronology-sql":
        import pandas as pd

        con = sqlite3.connect(db)
        first = [n for n, k in enumerate(keys) if k[0] == key[0]]
        query = f"SELECT {quoted(TURN_COLUMNS)} FROM turns WHERE conv BETWEEN ? AND ? ORDER BY conv, seq"
        out["rows"] = len(pd.read_sql_query(query, con, params=(first[0], first[-1])))
    elif name == "calls-duckdb":
        from harness.results.calls_in_bulk import read_calls

        out["rows"] = len(read_calls(today / "calls.jsonl", READ_CALL_KEYS, drop="messages"))
    elif name == "calls-sql":
        import pandas as pd

        con = sqlite3.connect(db)
        picks = ", ".join(f"record ->> '$.{k}' AS {k}" for k in READ_CALL_KEYS)
        out["rows"] = len(pd.read_sql_query(f"SELECT {picks} FROM calls ORDER BY conv, seq", con))
    elif name == "check-complete":
        from harness.results.integrity import check
        from harness.results.rows import Manifest

        files = json.loads((today / "files.json").read_text())
        manifest = Manifest(
            format_version=4, run_id="x", status="complete", policies=[], repetitions=1, live=False, files=files
        )
        verdict = check(today, manifest)
        out["finished"], out["mismatches"] = len(verdict.finished), len(verdict.mismatches)
    elif name == "check-records":
        from harness.results.integrity import check
        from harness.results.rows import Manifest

        manifest = Manifest(format_version=4, run_id="x", status="running", policies=[], repetitions=1, live=False)
        verdict = check(today, manifest)
        out["finished"], out["mismatches"] = len(verdict.finished), len(verdict.mismatches)
    elif name == "check-quick":
        out["result"] = sqlite3.connect(db).execute("PRAGMA quick_check").fetchone()[0]
    elif name == "check-integrity":
        out["result"] = sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0]
    else:
        raise SystemExit(f"unknown phase {name}")
    out["seconds"] = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_s"] = usage.ru_utime + usage.ru_stime
    out["peak_mb"] = usage.ru_maxrss / 1024
    return out


def child(name: str, work: Path, rows: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--phase", name, "--work", str(work), "--rows", str(rows)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"phase {name} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- kill -9 mid-write ----------------------------------------------------------------------------


def killed(store: str, work: Path, rows: int, after: float) -> dict[str, Any]:
    """Start writing `rows` probe rows into a fresh store, kill -9 it after `after` seconds, and
    say what is left readable."""
    target = work / f"killed-{store}"
    target.mkdir()
    command = [sys.executable, __file__, "--phase", f"write-{store}", "--work", str(target), "--rows", str(rows)]
    process = subprocess.Popen(command)
    time.sleep(after)
    process.send_signal(signal.SIGKILL)
    process.wait()
    if store == "today":
        from harness.results.integrity import check
        from harness.results.order import RecordFile
        from harness.results.rows import Manifest

        left = {}
        for name in ("probes.csv", "turns.csv", "calls.jsonl", "conversations.jsonl"):
            records = RecordFile(target / "today" / name)
            left[name] = sum(1 for _ in records.raw())
            left[name + " torn bytes"] = len(records.torn)
        verdict = check(
            target / "today",
            Manifest(format_version=4, run_id="x", status="running", policies=[], repetitions=1, live=False),
        )
        left["finished conversations"] = len(verdict.finished)
        left["mismatches"] = len(verdict.mismatches)
        return left
    con = sqlite3.connect(target / "store.sqlite")
    left = {"integrity_check": con.execute("PRAGMA integrity_check").fetchone()[0]}
    for table in ("probes", "turns", "calls", "conversations"):
        left[table] = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    left["rows of unfinished conversations"] = con.execute(
        "SELECT (SELECT count(*) FROM probes WHERE conv NOT IN (SELECT conv FROM conversations))"
        " + (SELECT count(*) FROM calls WHERE conv NOT IN (SELECT conv FROM conversations))"
    ).fetchone()[0]
    left["wal bytes"] = (target / "store.sqlite-wal").stat().st_size if (target / "store.sqlite-wal").exists() else 0
    return left


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def same_bytes(a: Path, b: Path) -> bool:
    with a.open("rb") as x, b.open("rb") as y:
        while True:
            one, two = x.read(1 << 20), y.read(1 << 20)
            if one != two:
                return False
            if not one:
                return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="probe rows (default 1,000,000)")
    parser.add_argument("--keep", type=Path, help="write here and keep it (default: a temporary folder, removed)")
    parser.add_argument("--kill-after", type=float, default=6.0, help="seconds of writing before the kill -9")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.work, args.rows)))
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="results-store-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        report(work, args.rows, args.kill_after)
    finally:
        if args.keep is None:
            shutil.rmtree(work)


def report(work: Path, rows: int, kill_after: float) -> None:
    keys = plan(rows)
    print(
        f"{rows:,} probe rows: {len(keys):,} conversations, {len(keys) * TURNS_PER_CONVERSATION:,} turns, "
        f"{len(keys) * len(CALL_KINDS):,} calls; {THREADS} writer threads; {os.cpu_count()} cores seen"
    )
    m = {
        name: child(name, work, rows)
        for name in (
            "write-today",
            "finish-today",
            "write-sqlite",
            "checkpoint-sqlite",
            "export-sqlite",
        )
    }
    today, exported = work / "today", work / "exported"
    identical = {name: same_bytes(today / name, exported / name) for name in ("probes.csv", "turns.csv", "calls.jsonl")}
    sizes = {
        name: (today / name).stat().st_size
        for name in ("probes.csv", "turns.csv", "calls.jsonl", "conversations.jsonl")
    }
    sizes["store.sqlite"] = (work / "store.sqlite").stat().st_size
    for name in (
        "probes-read_csv",
        "probes-read_sql",
        "one-spans-bisect",
        "one-spans-index",
        "one-sql",
        "chronology-blocks",
        "chronology-sql",
        "calls-duckdb",
        "calls-sql",
        "check-complete",
        "check-records",
        "check-quick",
        "check-integrity",
    ):
        m[name] = child(name, work, rows)
    crash_rows = max(rows, 200_000)
    crash = {store: killed(store, work, crash_rows, kill_after) for store in ("today", "sqlite")}

    def line(label: str, a: str, b: str) -> None:
        x, y = m[a], m[b]
        print(
            f"{label:<44} {x['seconds']:8.2f} s {x['peak_mb']:7.0f} MB | {y['seconds']:8.2f} s {y['peak_mb']:7.0f} MB"
            f" | {y['seconds'] / x['seconds']:6.2f}x time"
        )

    print(f"{'':<44} {'today':>20} | {'sqlite':>20} | sqlite/today")
    print(
        f"{'write (2 threads)':<44} {m['write-today']['seconds']:8.2f} s {m['write-today']['peak_mb']:7.0f} MB | "
        f"{m['write-sqlite']['seconds']:8.2f} s {m['write-sqlite']['peak_mb']:7.0f} MB | "
        f"{m['write-sqlite']['seconds'] / m['write-today']['seconds']:6.2f}x time"
    )
    end_today = m["finish-today"]["seconds"]
    end_sqlite = m["checkpoint-sqlite"]["seconds"] + m["export-sqlite"]["seconds"]
    print(
        f"{'end of batch (rewrite+digests | export)':<44} {end_today:8.2f} s {m['finish-today']['peak_mb']:7.0f} MB | "
        f"{end_sqlite:8.2f} s {m['export-sqlite']['peak_mb']:7.0f} MB | {end_sqlite / end_today:6.2f}x time"
        f"   (rewrite {m['finish-today']['rewrite_s']:.2f} s, digests {m['finish-today']['digests_s']:.2f} s;"
        f" checkpoint {m['checkpoint-sqlite']['seconds']:.2f} s)"
    )
    total_today = m["write-today"]["seconds"] + end_today
    total_sqlite = m["write-sqlite"]["seconds"] + end_sqlite
    print(
        f"{'write + end of batch':<44} {total_today:8.2f} s {'':10} | {total_sqlite:8.2f} s {'':10} | "
        f"{total_sqlite / total_today:6.2f}x time"
    )
    line("probes: read_csv | read_sql_query", "probes-read_csv", "probes-read_sql")
    line("one conversation's calls: bisection | SQL", "one-spans-bisect", "one-sql")
    line("one conversation's calls: whole index | SQL", "one-spans-index", "one-sql")
    line("one chronology's turns: byte ranges | SQL", "chronology-blocks", "chronology-sql")
    line("report's call columns: read_calls | SQL", "calls-duckdb", "calls-sql")
    line("integrity, complete: hash pass | quick_check", "check-complete", "check-quick")
    line("integrity, by record | integrity_check", "check-records", "check-integrity")
    print("sizes (bytes):", json.dumps(sizes))
    print(
        f"today's files total {sum(v for k, v in sizes.items() if k != 'store.sqlite'):,}; store.sqlite "
        f"{sizes['store.sqlite']:,}; exported files {size(exported):,}"
    )
    print("exports byte-identical to today's plan-ordered files:", json.dumps(identical))
    print(f"kill -9 after {kill_after} s of writing {crash_rows:,} probe rows:")
    for store, left in crash.items():
        print(f"  {store}: {json.dumps(left)}")
    print(
        "checks:",
        json.dumps({k: {x: y for x, y in v.items() if x not in ("seconds", "cpu_s", "peak_mb")} for k, v in m.items()}),
    )
    print("cpu seconds:", json.dumps({k: round(v["cpu_s"], 2) for k, v in m.items()}))


if __name__ == "__main__":
    main()
