"""Results on disk: the public contract of `results/<run-id>/` (SPEC §7).

Every record is appended and flushed as it happens, so an interrupted run leaves valid files.
The manifest is written with a temporary file and a rename, so it is never half-written.
One `ResultsWriter` may be shared by concurrent conversations: appends take a lock.
"""

from __future__ import annotations

import csv
import json
import os
import threading
from pathlib import Path
from typing import Any, TextIO

FORMAT_VERSION = 1

TURN_COLUMNS = (
    "chronology", "policy", "model", "repetition", "turn", "session", "status", "stop_reason",
    "error", "view_messages", "view_chars", "estimate_tokens", "tiktoken_tokens",
    "reported_prompt_tokens", "reported_completion_tokens", "latency_ms",
    "retained_messages", "retained_chars",
    "aux_calls", "aux_chars", "aux_estimate_tokens", "aux_tiktoken_tokens",
    "aux_reported_calls", "aux_reported_prompt_tokens", "aux_reported_completion_tokens",
)  # fmt: skip

PROBE_COLUMNS = (
    "chronology", "policy", "model", "repetition", "turn", "probe", "session", "status",
    "check", "subject", "in_view", "in_answer", "in_retained", "age", "lost_at", "passed",
)  # fmt: skip

# `views.jsonl` extends SPEC §7: per turn, the request view and the retained state after it
# (scripted turns make no call, yet `harness show` must still say what the model would see).
FILES = ("manifest.json", "calls.jsonl", "turns.csv", "probes.csv", "facts.jsonl", "views.jsonl")


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
        for name in ("calls.jsonl", "facts.jsonl", "views.jsonl"):
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
