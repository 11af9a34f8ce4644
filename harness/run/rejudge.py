"""Re-scoring a finished run's rubric expectations with a second judge prompt (`harness rejudge
RESULTS --judge-prompt FILE`): judge sensitivity, shown rather than hidden.

The run's own judge model (its `--judge`, reached as the run reached it) is asked again about
every rubric it gave a verdict on, with the same question, answer and rubric, through the
user's prompt instead of the shipped one (`harness.run.judge.RUBRIC_PROMPT`). The two verdicts,
YES or NO, are compared: plain agreement k/n over the rows where both prompts gave a verdict,
and Cohen's kappa over the same rows (agreement beyond what the two prompts' rates of YES would
give by chance; undefined when both prompts said the same one word throughout). Each new call is
recorded with its request and reply in a JSON Lines file; the run's own files are never changed.

The run's chronologies are loaded one at a time, as their rubrics are asked again (the rows in
the run's order, where a chronology's rows lie together), and each is let go before the next is
loaded: a run of 500 LongMemEval items holds about 250 MB of chronology files, never in memory at
once. Each file is checked against the run's SHA-256 before the first call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from harness.base.errors import InputError, ModelError
from harness.base.files import FileRefused, kind_of_mode, read_regular_file
from harness.base.identity import IDENTITY, RunKey
from harness.base.text import visible
from harness.chronology import Chronology, UserTurn, load_chronology
from harness.models import CallRequest, Model
from harness.results.rows import CALL, EXPECT, JUDGED_EXPECT, PROBE, expect_kind
from harness.results.tables import Results
from harness.run.judge import (
    MAX_RUBRIC_REQUEST_BYTES,
    RUBRIC_FIELDS,
    RUBRIC_SCHEMA,
    parse_rubric_verdict,
    rubric_messages,
    rubric_request_bytes,
)

MAX_PROMPT_BYTES = 64 * 1024  # a judge prompt, not a document: it is sent with every rubric
VERDICT = "verdict "  # how `judge_note` names a usable verdict (`verdict YES`)
CALL_FAILED = "judge call failed: "  # how `note` begins when the call failed after its retries


@dataclass(frozen=True)
class Rejudged:
    """One rubric judged again: one JSON Lines record."""

    chronology: str
    policy: str
    model: str
    repetition: int
    turn: int
    probe: str
    subject: str
    first: str  # the run's verdict, YES or NO
    second: str | None  # the second prompt's, None when its reply gave none or the call failed
    note: str  # the second verdict's judge_note (`verdict NO`, or why there is none)
    messages: list[dict[str, object]]  # the request
    response: str | None


def read_prompt(path: Path) -> str:
    """The second prompt: UTF-8 text within MAX_PROMPT_BYTES that shows the judge the answer and
    the rubric (`{answer}`, `{rubric}`; `{question}` optional)."""
    try:
        data = read_regular_file(str(path), MAX_PROMPT_BYTES)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"--judge-prompt {path}: no such file") from None
    except FileRefused:
        if not path.is_file():  # a folder, a named pipe, a device: no length to shorten
            raise InputError(
                f"--judge-prompt {path}: {kind_of_mode(path.stat().st_mode)}, not a regular file; give a text file"
            ) from None
        raise InputError(
            f"--judge-prompt {path}: {path.stat().st_size:,} bytes, more than {MAX_PROMPT_BYTES:,}; "
            "a judge prompt is sent with every rubric: shorten it"
        ) from None
    except UnicodeDecodeError:
        raise InputError(f"--judge-prompt {path}: not UTF-8 text; save it as UTF-8") from None
    missing = [f"{{{name}}}" for name in RUBRIC_FIELDS[1:] if f"{{{name}}}" not in text]
    if missing:
        raise InputError(
            f"--judge-prompt {path}: the prompt never shows the judge {' and '.join(missing)}; write "
            f"{', '.join(f'{{{n}}}' for n in RUBRIC_FIELDS)} where the question, the answer and the rubric go"
        )
    return text


class RecordedChronologies:
    """The run's chronologies by name, loaded when asked for; only the last one asked for is kept."""

    def __init__(self, entries: Iterable[Mapping[str, str]], load: Callable[[str], Chronology]) -> None:
        self._entries = {entry["name"]: entry for entry in entries}
        self._load = load
        self._held: tuple[str, Chronology] | None = None

    def check(self, names: Iterable[str]) -> None:
        """Refuse before any call if a file of `names` is missing or changed since the run."""
        for name in dict.fromkeys(names):
            entry = self._entries[name]
            if not Path(entry["path"]).is_file():
                raise InputError(f"{entry['path']} not found; run from the folder the run started in")
            with open(entry["path"], "rb") as handle:
                if hashlib.file_digest(handle, "sha256").hexdigest() != entry["sha256"]:
                    raise _changed(entry)

    def __getitem__(self, name: str) -> Chronology:
        if self._held is not None and self._held[0] == name:
            return self._held[1]
        self._held = None  # let the previous one go before the next is loaded
        entry = self._entries[name]
        chronology = self._load(entry["path"])
        if chronology.sha256 != entry["sha256"]:
            raise _changed(entry)
        self._held = (name, chronology)
        return chronology


def _changed(entry: Mapping[str, str]) -> InputError:
    return InputError(f"{entry['path']} changed since the run (sha256 differs): its rubrics cannot be re-asked")


def recorded_chronologies(
    entries: Iterable[Mapping[str, str]], load: Callable[[str], Chronology] = load_chronology
) -> RecordedChronologies:
    """The run's chronologies, from the paths its manifest records, each loaded when its rubrics are
    asked again (`load`: how a file is loaded); each must be unchanged."""
    return RecordedChronologies(entries, load)


def judged_rubrics(results: Results) -> pd.DataFrame:
    """The run's rubric rows that its judge gave a verdict on, with the answer each judged."""
    probes = results.probes
    rubric = (probes[PROBE.check] == EXPECT) & probes[PROBE.subject].astype(str).map(expect_kind).isin(JUDGED_EXPECT)
    verdict = probes[PROBE.judge_note].astype("string").str.startswith(VERDICT).fillna(False)
    rows = probes[rubric & verdict & (probes[PROBE.status] == "measured")]
    calls = results.calls
    answers = calls[calls[CALL.kind] == "answer"][[*IDENTITY, CALL.turn, CALL.response]]
    keys = [*IDENTITY, PROBE.turn]
    return rows.astype({k: object for k in keys}).merge(answers.astype({k: object for k in keys}), on=keys, how="left")


def rejudge(results: Results, chronologies: RecordedChronologies, judge: Model, prompt: str) -> list[Rejudged]:
    """Ask `judge` again about every judged rubric of the run, through `prompt`, in the run's order.
    Every request is measured before the first call: one over MAX_RUBRIC_REQUEST_BYTES refuses the
    prompt, with nothing asked."""
    rows = judged_rubrics(results)
    chronologies.check(str(name) for name in rows[PROBE.chronology])
    asked = []  # (row, its probe's turn, its rubric): each chronology loaded once, then let go
    for row in rows.to_dict("records"):
        turn = _turn(chronologies[str(row[PROBE.chronology])], int(row[PROBE.turn]))
        rubric = str(row[PROBE.subject]).split(": ", 1)[1]
        size = rubric_request_bytes(turn.user, str(row[CALL.response] or ""), rubric, prompt)
        if size > MAX_RUBRIC_REQUEST_BYTES:
            raise InputError(_too_large(prompt, size, str(row[PROBE.chronology]), int(row[PROBE.turn])))
        asked.append((row, turn, rubric))
    found = []
    for row, turn, rubric in asked:
        messages = rubric_messages(turn.user, str(row[CALL.response] or ""), rubric, prompt)
        try:
            reply: str | None = judge.complete(CallRequest("judge", messages, turn, RUBRIC_SCHEMA)).text
            note = parse_rubric_verdict(reply, "YES")["judge_note"]
        except ModelError as exc:
            reply, note = None, f"{CALL_FAILED}{exc}"
        found.append(
            Rejudged(
                *RunKey.of(row),
                int(row[PROBE.turn]),
                str(row[PROBE.probe]),
                str(row[PROBE.subject]),
                str(row[PROBE.judge_note]).removeprefix(VERDICT),
                note.removeprefix(VERDICT) if note.startswith(VERDICT) else None,
                note,
                [m.as_record() for m in messages],
                reply,
            )
        )
    return found


def _too_large(prompt: str, size: int, chronology: str, turn: int) -> str:
    counts = ", ".join(f"{{{name}}} {prompt.count('{' + name + '}')}×" for name in RUBRIC_FIELDS)
    return (
        f"--judge-prompt: the request for the rubric of {visible(chronology)} at turn {turn} would be {size:,} bytes, "
        f"more than {MAX_RUBRIC_REQUEST_BYTES:,} (the prompt names {counts}, each filled with its whole text); "
        "name each field once or a few times. Nothing was asked"
    )


def _turn(chronology: Chronology, number: int) -> UserTurn:
    return next(t for t in chronology.user_turns if t.number == number)


@dataclass(frozen=True)
class Agreement:
    """How the two prompts' verdicts agree, over the rows where both gave one."""

    agree: int
    compared: int
    kappa: float | None  # Cohen's kappa; None when undefined (one verdict throughout, or none compared)
    without: int  # rows where the second prompt gave no verdict

    def text(self) -> str:
        if not self.compared:
            return "no verdict to compare"
        kappa = "undefined (both prompts gave one verdict throughout)" if self.kappa is None else f"{self.kappa:.2f}"
        missing = f"; {self.without} without a second verdict" if self.without else ""
        return f"the prompts agree on {self.agree}/{self.compared} verdicts; Cohen's kappa {kappa}{missing}"


def agreement(rows: Iterable[Rejudged]) -> Agreement:
    listed = list(rows)
    pairs = [(r.first, r.second) for r in listed if r.second is not None]
    n = len(pairs)
    if not n:
        return Agreement(0, 0, None, len(listed))
    agree = sum(a == b for a, b in pairs)
    first_yes, second_yes = (sum(p[i] == "YES" for p in pairs) / n for i in (0, 1))
    chance = first_yes * second_yes + (1 - first_yes) * (1 - second_yes)
    kappa = None if chance == 1 else (agree / n - chance) / (1 - chance)
    return Agreement(agree, n, kappa, len(listed) - n)


def failed_calls(rows: Iterable[Rejudged]) -> int:
    """How many of the new judge calls failed after their retries (their rows hold no second verdict)."""
    return sum(r.note.startswith(CALL_FAILED) for r in rows)


def records(rows: Iterable[Rejudged]) -> str:
    """The JSON Lines text of the re-judged rows."""
    return "".join(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in rows)
