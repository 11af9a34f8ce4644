"""Whether a results folder is whole: its records checked against the digests it recorded of
itself as it was written (harness.results.digests).

`check` gives a `Verdict`: the finished conversations whose records match their digests, and
each `Mismatch` found, with the file, the line, the conversation and what does not match. A
complete run is checked by one hash pass over its files (the manifest's `files`); only when a
file differs are the files read record by record, to say which conversation does not match. A
run that did not complete has no `files`: each finished conversation is checked against its
record in `conversations.jsonl`; an unfinished one's records are partial by nature (a resume
redoes it), and a torn last record is what a kill leaves.

A mismatch says what repairs it: `REDO` (the conversation runs again: its records go, as an
unfinished conversation's do), `DROP` (a line that is no record, or a record cut short: the
plan-order rewrite leaves it out), or nothing (records of a conversation the run does not plan,
a file changed outside any conversation's records: only a copy of the folder restores them).

The manifest's own settings are checked whenever it is read (harness.results.reader). A run of
format version 2 recorded no digests: it is `unverified`, never refused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.base import json_bounded
from harness.base.identity import RunKey
from harness.results.digests import EMPTY, file_digest, record_digest, tallied
from harness.results.order import RecordFile
from harness.results.reader import RECORD_FILES
from harness.results.rows import DIGESTS_FROM, Manifest

CONVERSATIONS = "conversations.jsonl"
REDO = "redo"  # the conversation runs again
DROP = "drop"  # the line is left out

__all__ = ["DROP", "REDO", "Mismatch", "Verdict", "check", "file_digests"]


@dataclass(frozen=True)
class Mismatch:
    """One thing in a results folder that does not match what the harness wrote."""

    file: str  # the file's name in the folder
    what: str  # what does not match, in words
    key: RunKey | None = None  # the conversation it concerns, when one
    line: int | None = None
    repair: str | None = None  # REDO, DROP, or None: nothing the harness can do

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        of = f" (conversation {self.key})" if self.key else ""
        return f"{where}{of}: {self.what}"


@dataclass(frozen=True)
class Verdict:
    """What `check` found in one results folder."""

    mismatches: tuple[Mismatch, ...] = ()
    finished: frozenset[RunKey] = frozenset()  # finished conversations whose records match their digests
    unverified: str | None = None  # why the folder could not be checked; None when it was

    @property
    def damaged(self) -> frozenset[RunKey]:
        """The conversations a mismatch concerns."""
        return frozenset(m.key for m in self.mismatches if m.key is not None)

    @property
    def repairable(self) -> bool:
        """Whether running the damaged conversations again, and leaving out what is no record, repairs every mismatch."""
        return all(m.repair is not None for m in self.mismatches)

    @property
    def refused(self) -> tuple[Mismatch, ...]:
        """The mismatches nothing the harness does repairs."""
        return tuple(m for m in self.mismatches if m.repair is None)

    def summary(self, mismatches: tuple[Mismatch, ...] | None = None) -> str:
        """The first mismatch (of `mismatches`, by default all), and how many more there are in all."""
        chosen = mismatches or self.mismatches
        more = len(self.mismatches) - 1
        return str(chosen[0]) + (f" (and {more} more mismatch{'es' if more > 1 else ''})" if more else "")


def check(directory: Path, manifest: Manifest, plan: Collection[RunKey] | None = None) -> Verdict:
    """Check `directory`'s records against their digests. `plan`: every conversation the run
    plans, when the caller knows it (a finished conversation outside it is a mismatch)."""
    if manifest.format_version < DIGESTS_FROM:
        return Verdict(
            unverified=f"format version {manifest.format_version}: written before results recorded their digests"
        )
    complete = manifest.status == "complete"
    differing: list[str] = []
    if complete:
        if not isinstance(manifest.files, dict):
            return Verdict(
                (
                    Mismatch(
                        "manifest.json",
                        f"says complete but records no `files`, which every complete run of format version "
                        f"{DIGESTS_FROM} has: its status was edited",
                    ),
                )
            )
        found = file_digests(directory)  # the record files not as `files` records them (or not recorded):
        differing = [name for name in RECORD_FILES if found.get(name) != manifest.files.get(name)]
        if not differing:
            return Verdict(finished=frozenset(finished_keys(directory)))
    return Records(directory, complete, plan).verdict(manifest, differing)


def file_digests(directory: Path) -> dict[str, Any]:
    """The `files` of a complete run's manifest: each record file's size and SHA-256."""
    return {name: file_digest(directory / name) for name in RECORD_FILES if (directory / name).is_file()}


def finished_keys(directory: Path) -> Iterable[RunKey]:
    """The conversations `conversations.jsonl` records (of a folder already found whole)."""
    return (r.key for r in RecordFile(directory / CONVERSATIONS) if r.key is not None)


class Records:
    """A results folder read record by record, each finished conversation's records counted and
    hashed per file and compared with the digests its record in `conversations.jsonl` holds."""

    def __init__(self, directory: Path, complete: bool, plan: Collection[RunKey] | None) -> None:
        self.directory, self.complete, self.plan = directory, complete, plan
        self.found: list[Mismatch] = []
        self.recorded: dict[RunKey, dict[str, Any]] = {}  # finished conversation -> its records' digests
        self.seen: set[RunKey] = set()  # every conversation conversations.jsonl records, intact or not

    def verdict(self, manifest: Manifest, differing: list[str]) -> Verdict:
        self.read_conversations()
        for name in tallied(manifest.format_version):
            self.read_file(name)
        if self.complete:
            self.check_counts(manifest)
            named = {m.file for m in self.found}
            self.found += [
                Mismatch(
                    name,
                    "differs from the file the run wrote, outside any conversation's records (its header, or the order of its records)",
                )
                for name in differing
                if name not in named
            ]
        damaged = {m.key for m in self.found}
        return Verdict(tuple(self.found), frozenset(k for k in self.recorded if k not in damaged))

    def outside_plan(self, key: RunKey) -> bool:
        return self.plan is not None and key not in self.plan

    def read_conversations(self) -> None:
        """Each finished conversation's record: in the plan, once, intact (its own `sha256`)."""
        first: dict[RunKey, int] = {}
        records = RecordFile(self.directory / CONVERSATIONS)
        for record in records:
            data = parsed(record.data)
            key = record.key
            if key is None or data is None:
                self.found.append(Mismatch(CONVERSATIONS, "is no conversation's record", line=record.line, repair=DROP))
                continue
            if self.outside_plan(key):
                self.found.append(
                    Mismatch(CONVERSATIONS, "a conversation the run's manifest does not plan", key, record.line)
                )
            elif key in first:
                self.found.append(
                    Mismatch(CONVERSATIONS, f"records it again (first at line {first[key]})", key, record.line, REDO)
                )
                self.recorded.pop(key, None)
            elif not isinstance(data.get("records"), dict) or data.get("sha256") is None:
                self.found.append(Mismatch(CONVERSATIONS, "records no digests of its records", key, record.line, REDO))
            elif record_digest(data) != data["sha256"]:
                self.found.append(
                    Mismatch(
                        CONVERSATIONS, "its fields were changed after it was written (sha256)", key, record.line, REDO
                    )
                )
            else:
                self.recorded[key] = data["records"]
            first.setdefault(key, record.line)
            self.seen.add(key)
        self.torn(records)

    def torn(self, records: RecordFile) -> None:
        """A record cut short: what a kill leaves, unless the run completed."""
        if self.complete and records.torn:
            self.found.append(Mismatch(records.path.name, "ends inside a record: the file was cut short", repair=DROP))

    def read_file(self, name: str) -> None:
        """Count and hash each finished conversation's records in one file; compare with its digests."""
        tallies: dict[RunKey, list[Any]] = {}
        strays: set[RunKey] = set()
        records = RecordFile(self.directory / name)
        for record in records:
            key = record.key
            if key is None:
                self.found.append(Mismatch(name, "is no record", line=record.line, repair=DROP))
            elif key in self.recorded:
                tally = tallies.setdefault(key, [0, hashlib.sha256()])
                tally[0] += 1
                tally[1].update(record.data)
            elif key not in strays and key not in self.seen:
                strays.add(key)
                self.stray(name, key, record.line)
        self.torn(records)
        for key, digests in self.recorded.items():
            self.compare(name, key, digests.get(name), tallies.get(key))

    def stray(self, name: str, key: RunKey, line: int) -> None:
        """Records of a conversation `conversations.jsonl` does not record as finished: partial
        while a run goes on; in a complete run, the conversation's record is missing."""
        if self.outside_plan(key):
            self.found.append(Mismatch(name, "a conversation the run's manifest does not plan", key, line))
        elif self.complete:
            self.found.append(
                Mismatch(name, f"its records are here but it has no record in {CONVERSATIONS}", key, line, REDO)
            )

    def compare(self, name: str, key: RunKey, recorded: Any, tally: list[Any] | None) -> None:
        count, sha = (tally[0], tally[1].hexdigest()) if tally else (0, EMPTY)
        if not isinstance(recorded, dict):
            self.found.append(Mismatch(CONVERSATIONS, f"records no digest of its records in {name}", key, repair=REDO))
        elif recorded.get("count") != count:
            written = recorded.get("count")
            self.found.append(
                Mismatch(name, f"holds {count} of its records where {written} were written", key, repair=REDO)
            )
        elif recorded.get("sha256") != sha:
            self.found.append(
                Mismatch(name, f"its {count} records differ from those written (sha256)", key, repair=REDO)
            )

    def check_counts(self, manifest: Manifest) -> None:
        """A complete run records every conversation it planned once."""
        if self.plan is not None:
            for key in self.plan:
                if key not in self.seen:
                    self.found.append(
                        Mismatch(CONVERSATIONS, "has no record, though the run completed", key, repair=REDO)
                    )
            return
        total = manifest.conversations.get("total")
        if total != len(self.seen):
            what = f"records {len(self.seen)} conversations where the manifest counts {total}"
            self.found.append(Mismatch(CONVERSATIONS, what, repair=REDO))  # a resume knows the plan: it redoes those


def parsed(data: bytes) -> dict[str, Any] | None:
    try:
        value = json_bounded.loads(data, what="the record")
    except ValueError:  # JsonBounded too
        return None
    return value if isinstance(value, dict) else None
