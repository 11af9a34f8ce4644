"""`harness show`: exactly what the model was sent at one turn, and what each policy kept.

Everything comes from `views.jsonl` (the request view and the retained state recorded at every
turn, scripted turns included, as references into `messages.jsonl`) and `turns.csv` (why a
replay stopped, what a policy noted). Each message is printed
whole, with its role and origin (`system`, `history`, `summary`, `facts`, `facts+current`, `retrieved`,
`current`); control characters are shown escaped (`harness.base.text.visible`) so that no text from
a chronology, its file name or an endpoint can drive the terminal.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.base.errors import InputError
from harness.base.messages import Message
from harness.base.text import visible
from harness.results.damage import naming_damage
from harness.results.rows import CALL, TURN
from harness.results.spans import view_reader
from harness.results.tables import Results, load_results

INDENT = "      "


@dataclass(frozen=True)
class Place:
    """Where to look in the results: one turn of a chronology, under one model and repetition."""

    results: Results
    chronology: str
    number: int
    model: str
    repetition: int

    @property
    def title(self) -> str:
        return f"{visible(self.chronology)} · turn {self.number} · model {visible(self.model)} · repetition {self.repetition}"

    def rows(self, frame: pd.DataFrame, policy: str) -> pd.DataFrame:
        """This policy's rows of `frame` (views or turns) in this conversation, every turn."""
        return frame[
            (frame[TURN.chronology] == self.chronology)
            & (frame[TURN.policy] == policy)
            & (frame[TURN.model] == self.model)
            & (frame[TURN.repetition] == self.repetition)
        ]

    def record(self, policy: str) -> dict | None:
        """This policy's view row at this turn, with whole message lists; None when it has none."""
        return self.results.view_at(self.chronology, policy, self.model, self.repetition, self.number)


def turn_ranges(numbers: list[int]) -> str:
    """`1–9` or `1–4, 6, 8–9`."""
    spans: list[list[int]] = []
    for n in sorted(set(numbers)):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in spans)


def locate(directory: Path, chronology: str, number: int, model: str | None, repetition: int) -> Place:
    """The turn asked for; an InputError that names what exists when it is not in the results."""
    results = load_results(directory, view_reader)
    views = results.views
    if views.empty or "view" not in views:
        raise InputError(
            f"{directory}: no views.jsonl records (no turn was recorded, or the run predates "
            "views.jsonl); show needs a run made with this harness version"
        )
    names = results.manifest.chronology_names
    if chronology not in names:
        raise InputError(f"--chronology {visible(chronology)}: not in this run; chronologies: {listing(names)}")
    model = check_model(results, model, repetition)
    turns = [int(t) for t in views[views[TURN.chronology] == chronology][TURN.turn]]
    if number not in turns:
        raise InputError(
            f"--turn {number}: {chronology} has no such turn in these results (turns: {turn_ranges(turns)})"
        )
    return Place(results, chronology, number, model, repetition)


def check_model(results: Results, model: str | None, repetition: int) -> str:
    """The model asked for (default: the run's first), once it and the repetition are known."""
    models = list(results.manifest.models)
    model = model or models[0]
    if model not in models:
        raise InputError(f"--model {visible(model)}: not in this run; models: {listing(models)}")
    reps = results.manifest.repetitions
    if not 1 <= repetition <= reps:
        raise InputError(f"--repetition {repetition}: this run has repetitions 1–{reps}")
    return model


def check_policy(results: Results, policy: str, option: str) -> None:
    if policy not in results.policy_order:
        raise InputError(f"{option} {visible(policy)}: not in this run; policies: {listing(results.policy_order)}")


def listing(names: list[str]) -> str:
    """Names from the results, for a message: each shown as `visible` shows it."""
    return ", ".join(map(visible, names))


@naming_damage  # a view pointing at messages no record holds, a turn written as text: one message
def show_text(
    directory: Path,
    chronology: str,
    turn: int,
    policy: str | None = None,
    diff: tuple[str, str] | None = None,
    model: str | None = None,
    repetition: int = 1,
) -> str:
    """What `harness show` prints: one policy, every policy, or the difference between two."""
    if policy and diff:
        raise InputError("give --policy or --diff, not both")
    where = locate(directory, chronology, turn, model, repetition)
    if diff:
        for name in diff:
            check_policy(where.results, name, "--diff")
        return diff_text(where, *diff)
    if policy:
        check_policy(where.results, policy, "--policy")
    policies = [policy] if policy else where.results.policy_order
    return "\n".join([where.title, ""] + [policy_text(where, p) for p in policies])


# --- one policy -------------------------------------------------------------------------------


def policy_text(where: Place, policy: str) -> str:
    record = where.record(policy)
    if record is None:
        return f"== {visible(policy)}: {absent(where, policy)}\n"
    session = "" if record["status"] == "forget" else f" · session {visible(str(record['session']))}"
    heading = f"== {visible(policy)}{session} · {visible(str(record['status']))}{stop_note(where, policy)}"
    lines = [heading, *policy_note(where, policy)]
    if not isinstance(record["view"], list):
        lines.append("request view: none (a forget event makes no model call)")
    else:
        lines.append(f"request view: {size(record['view'])}{scripted_note(record['status'])}")
        lines += messages_text(record["view"])
        lines += answer_text(where, policy, record)
    lines.append(f"retained after turn {where.number}: {size(record['retained'])}")
    lines += messages_text(record["retained"])
    return "\n".join(lines) + "\n"


def answer_text(where: Place, policy: str, record: dict) -> list[str]:
    """The answer of this turn, whole: the model's (its `answer` call), or the scripted reply."""
    if record["status"] == "scripted":
        kept = [
            m
            for m in record["retained"]
            if m["role"] == "assistant" and m["turn"] == where.number and not m.get("tool_calls")
        ]
        if not kept:
            return ["answer: the scripted reply (no model call; this policy keeps no copy of it)"]
        return ["answer: the scripted reply (no model call)", *text_lines(kept[0]["content"])]
    calls = where.rows(where.results.calls, policy)
    answers = calls[(calls[CALL.turn] == where.number) & (calls[CALL.kind] == "answer")]
    if answers.empty:
        return []
    call = answers.iloc[-1]
    if pd.isna(call[CALL.response]):
        return [f"answer: none, the call failed ({visible(str(call[CALL.error]))})"]
    cut = " (cut at 100,000 characters, see calls.jsonl)" if bool(call.get(CALL.truncated, False)) else ""
    lines = [f"answer ({visible(str(call[CALL.call_model]))}){cut}:", *text_lines(call[CALL.response])]
    return lines + degraded_text(call.get(CALL.degraded))


# How `show` words each kind of `degraded` entry (reference:lossy, harness.models.lossy).
DEGRADED_WORDS = {"summary_drop": "dropped", "writer_miss": "omitted", "recency": "ignored", "stale": "answered"}


def degraded_text(entries: object) -> list[str]:
    """What the model degraded on purpose in this answer, one line each; nothing when it
    degraded nothing (or is a model that never does)."""
    if not isinstance(entries, list) or not entries:
        return []
    lines = [f"degraded on purpose (calls.jsonl `degraded`): {len(entries)}"]
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        kind = str(entry.get("kind"))
        words = f'{kind}: {DEGRADED_WORDS.get(kind, "changed")} the {entry.get("what")} "{entry.get("text")}"'
        if entry.get("from_turn") is not None:
            words += f" (from turn {entry['from_turn']})"
        if entry.get("replaced") is not None:
            words += f' instead of "{entry["replaced"]}"'
        lines.append(f"  {visible(words)}")
    return lines


def absent(where: Place, policy: str) -> str:
    """Why a policy has no record at this turn: its replay ended earlier."""
    turns = where.rows(where.results.turns, policy)
    if turns.empty:
        return "no record of this policy in this conversation"
    last = turns.sort_values(TURN.turn).iloc[-1]
    status = last[TURN.status]
    why = last[TURN.stop_reason] if status == "stopped" else last[TURN.error]
    detail = f" ({visible(str(why))})" if not pd.isna(why) else ""
    return f"no record at turn {where.number}: the replay ended at turn {last[TURN.turn]}, status {status}{detail}"


def stop_note(where: Place, policy: str) -> str:
    turns = where.rows(where.results.turns, policy)
    row = turns[turns[TURN.turn] == where.number]
    if row.empty or row[TURN.status].iloc[0] not in ("stopped", "error"):
        return ""
    why = row[TURN.stop_reason].iloc[0] if row[TURN.status].iloc[0] == "stopped" else row[TURN.error].iloc[0]
    return "" if pd.isna(why) else f" ({visible(str(why))})"


def policy_note(where: Place, policy: str) -> list[str]:
    """What the policy said about this turn (turns.csv `policy_note`), as one line; none if nothing
    (results written before the column existed have none)."""
    turns = where.rows(where.results.turns, policy)
    row = turns[turns[TURN.turn] == where.number]
    if row.empty or TURN.policy_note not in row.columns or pd.isna(row[TURN.policy_note].iloc[0]):
        return []
    return [f"policy note: {visible(str(row[TURN.policy_note].iloc[0]))}"]


def scripted_note(status: str) -> str:
    if status == "scripted":
        return " (scripted reply: no call was made; this is what the policy would have sent)"
    return ""


def size(messages: list[dict]) -> str:
    chars = sum(len(Message.from_record(m).text) for m in messages)  # a tool call's name and arguments count
    return f"{len(messages)} message{'s' if len(messages) != 1 else ''}, {chars} characters"


def messages_text(messages: list[dict], numbers: list[int] | None = None) -> list[str]:
    """Each message whole, under `[n] role · origin · turn · session` (n: its place in the list)."""
    lines = []
    for number, message in zip(numbers or range(1, len(messages) + 1), messages):
        lines.append(f"  [{number}] {label(message)}")
        content = message["content"]
        calls = [
            f"calls {call['name']}({call['arguments']}) · id {call['id']}" for call in message.get("tool_calls") or ()
        ]
        if not content and not calls:
            lines.append(INDENT + "(empty)")
            continue
        lines += text_lines(content) if content else []
        lines += [line for call in calls for line in text_lines(call)]
    return lines


def text_lines(content: str) -> list[str]:
    """A text, indented line by line, control characters escaped (tabs kept)."""
    return [INDENT + visible(line, keep="\t") if line else "" for line in content.split("\n")]


def label(message: dict) -> str:
    parts = [message["role"], message.get("origin") or "unknown origin"]
    if message.get("tool_call_id") is not None:
        parts.append(f"answers {message['tool_call_id']}")
    if message.get("turn") is not None:
        parts.append(f"turn {message['turn']}")
    if message.get("session"):
        parts.append(f"session {message['session']}")
    return visible(" · ".join(map(str, parts)))


# --- two policies -----------------------------------------------------------------------------


def only_in(first: list[dict], second: list[dict]) -> list[tuple[int, dict]]:
    """(place, message) of the messages of `first` that `second` lacks: same role, same turn
    and same text (a message repeated counts as many times as it appears)."""
    left = Counter(identity(m) for m in second)
    missing = []
    for number, message in enumerate(first, start=1):
        key = identity(message)
        if left[key]:
            left[key] -= 1
        else:
            missing.append((number, message))
    return missing


def identity(message: dict) -> tuple[object, ...]:
    """What makes two view messages the same message; the origin may differ (history vs current)."""
    calls = tuple(call["id"] for call in message.get("tool_calls") or ())
    return message["role"], message.get("turn"), message["content"], calls, message.get("tool_call_id")


def diff_text(where: Place, first: str, second: str) -> str:
    records = {p: where.record(p) for p in (first, second)}
    lines = [
        where.title,
        f"request views compared: {visible(first)} and {visible(second)} (same role, turn and text count as shared)",
        "",
    ]
    for policy, record in records.items():
        if record is None or not isinstance(record["view"], list):
            why = absent(where, policy) if record is None else "a forget event: no request view"
            return "\n".join(lines + [f"{visible(policy)} has nothing to compare at turn {where.number}: {why}", ""])
    views = {policy: record["view"] for policy, record in records.items() if record is not None}
    for a, b in ((first, second), (second, first)):
        extra = only_in(views[a], views[b])
        messages = [m for _, m in extra]
        lines.append(f"in {visible(a)}'s view, not in {visible(b)}'s: " + (size(messages) if extra else "nothing"))
        lines += messages_text(messages, [n for n, _ in extra]) + [""]
    return "\n".join(lines)
