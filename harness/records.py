"""Results on disk: the public contract of `results/<run-id>/` (SPEC §7).

Every record is appended and flushed as it happens, so an interrupted run leaves valid files.
The manifest is written with a temporary file and a rename, so it is never half-written.
One `ResultsWriter` may be shared by concurrent conversations: appends take a lock.
"""

from __future__ import annotations

import csv
import json
import os
import re
import threading
from pathlib import Path
from typing import Any, TextIO

FORMAT_VERSION = 2  # 2: views.jsonl holds references into messages.jsonl (harness/views.py)

# A run id names the results folder and the report's files.
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

TURN_COLUMNS = (
    "chronology", "policy", "model", "repetition", "turn", "session", "status", "stop_reason",
    "error", "view_messages", "view_chars", "estimate_tokens", "tiktoken_tokens",
    "reported_prompt_tokens", "reported_completion_tokens", "latency_ms",
    "retained_messages", "retained_chars",
    "aux_calls", "aux_chars", "aux_estimate_tokens", "aux_tiktoken_tokens",
    "aux_reported_calls", "aux_reported_prompt_tokens", "aux_reported_completion_tokens",
    "policy_note",
)  # fmt: skip

PROBE_COLUMNS = (
    "chronology", "policy", "model", "repetition", "turn", "probe", "session", "status",
    "check", "subject", "in_view", "in_answer", "in_retained", "age", "lost_at", "cause", "passed",
    "note", "judged_in_view", "judged_in_answer", "judge_note",
)  # fmt: skip

# `views.jsonl` extends SPEC §7: per turn, the request view and the retained state after it
# (scripted turns make no call, yet `harness show` must still say what the model would see),
# as references into `messages.jsonl`, which holds each message of a conversation once.
# `conversations.jsonl` records each finished conversation: what `--resume` keeps.
FILES = ("manifest.json", "calls.jsonl", "turns.csv", "probes.csv", "facts.jsonl", "messages.jsonl",
         "views.jsonl", "conversations.jsonl")


def csv_cell(value: Any) -> Any:
    """None is unknown and stays blank; booleans are written as true/false."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON next to `path`, then rename it into place."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


class ResultsWriter:
    """Appends records to the files of one results directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._files: dict[str, TextIO] = {}
        self._csv: dict[str, csv.DictWriter] = {}
        for name in ("calls.jsonl", "facts.jsonl", "messages.jsonl", "views.jsonl", "conversations.jsonl"):
            self._files[name] = (directory / name).open("a", encoding="utf-8")
        for name, columns in (("turns.csv", TURN_COLUMNS), ("probes.csv", PROBE_COLUMNS)):
            self._open_csv(name, columns)

    def _open_csv(self, name: str, columns: tuple[str, ...]) -> None:
        path = self.directory / name
        fresh = not path.exists() or path.stat().st_size == 0
        handle = path.open("a", encoding="utf-8", newline="")
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="raise")
        if fresh:
            writer.writeheader()
            handle.flush()
        self._files[name], self._csv[name] = handle, writer

    def manifest(self, data: dict[str, Any]) -> None:
        write_json_atomic(self.directory / "manifest.json", data)

    def call(self, record: dict[str, Any]) -> None:
        self._append_json("calls.jsonl", record)

    def facts(self, record: dict[str, Any]) -> None:
        self._append_json("facts.jsonl", record)

    def finished(self, record: dict[str, Any]) -> None:
        self._append_json("conversations.jsonl", record)

    def message(self, record: dict[str, Any]) -> None:
        self._append_json("messages.jsonl", record)

    def view(self, record: dict[str, Any]) -> None:
        self._append_json("views.jsonl", record)

    def turn(self, row: dict[str, Any]) -> None:
        self._append_row("turns.csv", row)

    def probe(self, row: dict[str, Any]) -> None:
        self._append_row("probes.csv", row)

    def _append_json(self, name: str, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock:
            self._files[name].write(line)
            self._files[name].flush()

    def _append_row(self, name: str, row: dict[str, Any]) -> None:
        cells = {k: csv_cell(v) for k, v in row.items()}
        with self._lock:
            self._csv[name].writerow(cells)
            self._files[name].flush()

    def close(self) -> None:
        with self._lock:
            for handle in self._files.values():
                handle.close()
            self._files.clear()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


IDENTITY = ("chronology", "policy", "model", "repetition")
RECORD_FILES = ("calls.jsonl", "facts.jsonl", "messages.jsonl", "views.jsonl", "conversations.jsonl", "turns.csv",
                "probes.csv")  # fmt: skip


def identity_key(record: dict[str, Any]) -> tuple[str, str, str, int]:
    """The conversation a record belongs to."""
    return (str(record["chronology"]), str(record["policy"]), str(record["model"]), int(record["repetition"]))


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every complete record of a JSON-lines or CSV results file (a torn last line is dropped)."""
    if not path.exists():
        return []
    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
        return [r for r in rows if None not in r.values() and None not in r]  # a torn row is short
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def rewrite_records(directory: Path, order: dict[tuple[str, str, str, int], int]) -> None:
    """Keep only the records of the conversations in `order`, grouped in that order (stable
    within a conversation), each file replaced whole. Used to finish and to resume a run."""
    for name in RECORD_FILES:
        path = directory / name
        records = [r for r in read_records(path) if identity_key(r) in order]
        records.sort(key=lambda r: order[identity_key(r)])
        tmp = path.with_name(f".{name}.tmp")
        with tmp.open("w", encoding="utf-8", newline="") as handle:
            if name.endswith(".csv"):
                writer = csv.DictWriter(handle, fieldnames=TURN_COLUMNS if name == "turns.csv" else PROBE_COLUMNS)
                writer.writeheader()
                writer.writerows(records)
            else:
                handle.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        os.replace(tmp, path)
