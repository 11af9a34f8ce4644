"""Reading a results directory back, as pandas DataFrames (pandas is also used by the report's
comparison and by `harness show`, which read these frames).

>>> from harness import load_results
>>> results = load_results("results/example")
>>> results.probes[results.probes.check == "prohibition"]
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from harness.errors import InputError
from harness.records import complete_text, identity_key, read_manifest, read_records
from harness.rows import BOOL_COLUMNS, FLOAT_COLUMNS, INT_COLUMNS, Manifest
from harness.views import ConversationViews


@dataclass(frozen=True)
class Results:
    """One run's results: its manifest and one DataFrame per record file."""

    directory: Path
    manifest: Manifest
    turns: pd.DataFrame
    probes: pd.DataFrame
    calls: pd.DataFrame
    facts: pd.DataFrame

    @cached_property
    def views(self) -> pd.DataFrame:
        """`views.jsonl` as written: per turn, `view` and `retained` as references into
        `messages` (see harness/views.py); `view_at` gives them as whole message lists.
        Read on first use: only `harness show` needs it, not the report."""
        return read_jsonl(self.directory / "views.jsonl")

    @cached_property
    def messages(self) -> pd.DataFrame:
        """`messages.jsonl`: each message of each conversation once, with its `id`."""
        return read_jsonl(self.directory / "messages.jsonl")

    def view_at(self, chronology: str, policy: str, model: str, repetition: int, turn: int) -> dict[str, Any] | None:
        """The `views.jsonl` row of one turn of one conversation, with `view` (None at a forget)
        and `retained` as whole lists of message records; None when that turn has no row."""
        found = self._views_by_conversation.get((chronology, policy, model, repetition))
        return found.at(turn) if found else None

    @cached_property
    def _views_by_conversation(self) -> dict[tuple[str, str, str, int], ConversationViews]:
        """Both files read as plain records (pandas would turn a missing message turn into NaN)."""
        grouped: dict[tuple[str, str, str, int], tuple[list, list]] = {}
        for index, name in enumerate(("messages.jsonl", "views.jsonl")):
            for record in read_records(self.directory / name):
                grouped.setdefault(identity_key(record), ([], []))[index].append(record)
        return {key: ConversationViews(messages, rows) for key, (messages, rows) in grouped.items()}

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    @property
    def policy_order(self) -> list[str]:
        """Policy labels in the order the run declared them."""
        return self.manifest.policy_labels


def read_jsonl(path: Path) -> pd.DataFrame:
    """Records of a JSON-lines file; a torn last line (an interrupted write) is skipped."""
    return pd.DataFrame(read_records(path))


def read_csv(path: Path) -> pd.DataFrame:
    """A results CSV with blanks kept as missing (unknown) and true/false as booleans."""
    if not path.is_file():
        raise InputError(f"{path}: missing; the results are incomplete: resume the run or start a new one")
    try:
        return typed(pd.read_csv(io.StringIO(complete_text(path)), dtype=str, keep_default_na=False, na_values=[""]))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{path}: not a results table ({reason}); restore it, or start a new run") from None


def typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Booleans and numbers where the columns hold them (the field types of harness/rows.py)."""
    for column in frame.columns:
        if column in BOOL_COLUMNS:
            frame[column] = frame[column].map({"true": True, "false": False}).astype("boolean")
        elif column in INT_COLUMNS:
            frame[column] = pd.to_numeric(frame[column]).astype("Int64")
        elif column in FLOAT_COLUMNS:
            frame[column] = pd.to_numeric(frame[column])
    return frame


def load_results(directory: str | Path) -> Results:
    """Load `results/<run-id>/`; raise InputError when it is not a results directory."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    return Results(
        directory,
        manifest,
        read_csv(directory / "turns.csv"),
        read_csv(directory / "probes.csv"),
        read_jsonl(directory / "calls.jsonl"),
        read_jsonl(directory / "facts.jsonl"),
    )
