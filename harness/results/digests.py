"""The digests a results folder records of itself, so that it can say whether it is whole.

Three, each written where what it covers is decided, and each cheap to check:

- **Per conversation, per file**: as the writer appends a conversation's records, it keeps
  their count and a running SHA-256 of their bytes in each file (`Tallies`); the conversation's
  record in `conversations.jsonl`, written when it finishes, holds them (`records`) and a
  SHA-256 of its own fields (`sha256`). That line is flushed with the rest, so what a kill
  leaves is checkable: a conversation without its line was unfinished and is redone anyway.
  The plan-order rewrite and a merge copy records byte for byte, in file order within a
  conversation, so the digests hold in the folder they end in.
- **Per setting**: the manifest's `settings_sha256` gives a SHA-256 of each field that decides
  what runs (`SETTINGS`), sealed when the run starts (and when a merge writes its manifest);
  none of them is rewritten afterwards, so a manifest edited to another model or chronology
  hash no longer matches.
- **Per file**: a complete run's manifest gives each record file's size and SHA-256 (`files`),
  taken after the last rewrite: one hash pass checks the whole folder.

The digests detect changes made after the harness wrote the records (an edit, a deleted or
duplicated line, a cut file); they are not a signature: someone who recomputes them can
forge them. `harness.results.integrity` checks them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.base.identity import RunKey
from harness.results.rows import RESIDUE_FROM, Manifest

# The manifest fields decided when a run starts and never rewritten by a resume: what runs,
# with what, and where it reads its inputs. (`status`, times, `conversations`, `model_settings`,
# `error` and `files` change as the run goes on.)
SETTINGS = (
    "format_version",
    "chronologies",
    "policies",
    "models",
    "model_options",
    "repetitions",
    "repetitions_run",
    "seed",
    "live",
    "concurrency",
    "cache_dir",
    "tokenizer",
    "shard",
    "batch",
    "independent_samples",
    "samples",
)

# The files whose records belong to conversations (conversations.jsonl holds their digests).
TALLIED = ("calls.jsonl", "facts.jsonl", "messages.jsonl", "views.jsonl", "turns.csv", "probes.csv", "residue.csv")
# A file a run of an earlier format version did not write, by the version that added it.
TALLIED_FROM = {"residue.csv": RESIDUE_FROM}


def tallied(format_version: int) -> tuple[str, ...]:
    """The files whose records a run of `format_version` counts per conversation."""
    return tuple(name for name in TALLIED if TALLIED_FROM.get(name, 0) <= format_version)


EMPTY = hashlib.sha256().hexdigest()


def canonical(value: Any) -> bytes:
    """A JSON value as the bytes its digest is taken of: as it reads back from a file (tuples as
    lists, keys as strings), keys sorted, no spaces, ASCII only."""
    return json.dumps(json.loads(json.dumps(value)), sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def digest(value: Any) -> str:
    """The SHA-256 of a JSON value's canonical form."""
    return hashlib.sha256(canonical(value)).hexdigest()


def settings_digests(record: dict[str, Any]) -> dict[str, str]:
    """A manifest's `settings_sha256`: the digest of each of its `SETTINGS` (absent: null)."""
    return {name: digest(record.get(name)) for name in SETTINGS}


def sealed(manifest: Manifest) -> Manifest:
    """The manifest with the digests of its settings as they are now."""
    return replace(manifest, settings_sha256=settings_digests(manifest.as_record()))


def changed_settings(record: dict[str, Any]) -> list[str]:
    """The settings of a manifest record that no longer match its `settings_sha256` (a setting
    the digests do not name counts as changed: they name every one)."""
    recorded = record.get("settings_sha256") or {}
    return [name for name, value in settings_digests(record).items() if recorded.get(name) != value]


def record_digest(record: dict[str, Any]) -> str:
    """The SHA-256 of a conversations.jsonl record's fields but its own `sha256`."""
    return digest({k: v for k, v in record.items() if k != "sha256"})


def file_digest(path: Path) -> dict[str, Any]:
    """A file's size in bytes and SHA-256, as a manifest's `files` records them."""
    with path.open("rb") as handle:
        sha = hashlib.file_digest(handle, "sha256").hexdigest()
    return {"bytes": path.stat().st_size, "sha256": sha}


@dataclass
class Tally:
    """The records of one conversation in one file: how many, and a running SHA-256 of their bytes."""

    count: int = 0
    sha: Any = field(default_factory=hashlib.sha256)

    def add(self, data: bytes) -> None:
        self.count += 1
        self.sha.update(data)

    def as_record(self) -> dict[str, Any]:
        return {"count": self.count, "sha256": self.sha.hexdigest()}


class Tallies:
    """Each conversation's tallies per file, as its records are written (not thread-safe: the
    writer holds its lock)."""

    def __init__(self) -> None:
        self._open: dict[RunKey, dict[str, Tally]] = {}

    def add(self, key: RunKey, name: str, data: bytes) -> None:
        files = self._open.setdefault(key, {})
        tally = files.get(name)
        if tally is None:
            tally = files[name] = Tally()
        tally.add(data)

    def close(self, key: RunKey) -> dict[str, dict[str, Any]]:
        """The `records` of a finished conversation (every tallied file, none written: count 0);
        its tallies are then forgotten."""
        files = self._open.pop(key, {})
        return {name: (files[name] if name in files else Tally()).as_record() for name in TALLIED}


def finished_record(record: dict[str, Any], records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A conversations.jsonl record with its conversation's `records` and its own `sha256`."""
    full = {**record, "records": records}
    return {**full, "sha256": record_digest(full)}
