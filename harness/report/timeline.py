"""Per chronology, turn by turn: where a policy stopped or a call failed, and the fact store's timeline."""

from __future__ import annotations

from harness.report.comparison import Column, Comparison, Record, Tables
from harness.report.markdown import cell, table
from harness.results.rows import CALL, TURN

STOP_NOTE = (
    "A summary policy stops at the turn whose summary came back empty (`summary_empty`) or over its cap "
    "(`summary_too_long:<n>`, n characters); nothing is truncated or replaced, and its later probes are "
    "not measured. A model error ends that conversation. `(scripted)` marks an output the chronology "
    "scripted (`summary:`, `writer:`) rather than a model's. A failed call that ends nothing is listed here "
    "with status `<kind> call failed`: a judge call (its verdicts are blank) or a policy's extra call whose "
    "policy went on without it (bounded facts keeps its previous facts: a `writer call failed`)."
)


def stops(cmp: Comparison, chronology: str) -> list[str]:
    body = []
    for column in cmp.columns:
        ended = column.records(
            "turns",
            chronology,
            "ended",
            lambda f: f[TURN.status].isin(("stopped", "error")),
            (TURN.turn, TURN.repetition, TURN.status, TURN.stop_reason, TURN.error),
        )
        ended.sort(key=lambda r: (r[TURN.turn], r[TURN.repetition]))
        ended_at = {(r[TURN.repetition], r[TURN.turn]) for r in ended if r[TURN.status] == "error"}
        groups = stop_groups(ended, scripted(column, chronology, "summarizer")) + call_failures(
            column, chronology, ended_at
        )
        for (turn, status, why), count in sorted(groups, key=lambda g: g[0][0]):
            body.append([column.header, turn, status, why, f"{count} of {column.repetitions(chronology)}"])
    if not body:
        return ["No policy stopped and no call failed.", ""]
    return [STOP_NOTE, "", table(["policy", "turn", "status", "reason", "repetitions"], body), ""]


def call_failures(
    column: Column, chronology: str, ended_at: set[tuple[int, int]]
) -> list[tuple[tuple[int, str, str], int]]:
    """((turn, `<kind> call failed`, error), in how many repetitions) of the failed calls that ended
    nothing: judge calls, and a policy's extra calls at turns where the conversation went on (one
    that ended it, at `ended_at`, is listed as that turn's error already; so is a failed answer)."""
    seen: dict[tuple[int, str, str], set[int]] = {}
    failed = column.records(
        "calls",
        chronology,
        "failed",
        lambda f: f[CALL.error].notna() & (f[CALL.kind] != "answer"),
        (CALL.turn, CALL.repetition, CALL.kind, CALL.error),
    )
    for call in failed:
        if call[CALL.kind] != "judge" and (call[CALL.repetition], call[CALL.turn]) in ended_at:
            continue
        key = (call[CALL.turn], f"{call[CALL.kind]} call failed", str(call[CALL.error]))
        seen.setdefault(key, set()).add(call[CALL.repetition])
    return [(key, len(reps)) for key, reps in seen.items()]


def scripted(column: Column, chronology: str, kind: str) -> set[tuple[int, int]]:
    """(repetition, turn) of the calls of `kind` whose output the chronology scripted."""
    picked = column.records(
        "calls",
        chronology,
        f"scripted {kind}",
        lambda f: (f[CALL.kind] == kind) & f[CALL.scripted].fillna(False).astype(bool),
        (CALL.repetition, CALL.turn),
    )
    return {(r[CALL.repetition], r[CALL.turn]) for r in picked}


def stop_groups(
    ended: list[Record], scripted_at: set[tuple[int, int]] = frozenset()
) -> list[tuple[tuple[int, str, str], int]]:
    """((turn, status, reason), how many repetitions) where a replay stopped or failed."""
    counted: dict[tuple[int, str, str], int] = {}
    for row in ended:
        why = row[TURN.stop_reason] if row[TURN.status] == "stopped" else row[TURN.error]
        mark = " (scripted)" if (row[TURN.repetition], row[TURN.turn]) in scripted_at else ""
        key = (row[TURN.turn], row[TURN.status], ("unknown" if why is None else str(why)) + mark)
        counted[key] = counted.get(key, 0) + 1
    return list(counted.items())


def fact_timeline(cmp: Comparison, chronology: str) -> list[str]:
    lines = []
    for column in cmp.columns:
        timelines = column_timelines(column, chronology)
        if not timelines:
            continue
        note = (
            ""
            if len(timelines) == 1
            else (
                " (repetition 1; every repetition has the same timeline)"
                if all(t == timelines[0] for t in timelines)
                else " (repetition 1; other repetitions differ: see facts.jsonl)"
            )
        )
        lines += [f"**{cell(column.header)}**{note}", ""]
        lines += [
            table(["turn", "event", "facts or reason", "store after (keys)"], timelines[0])
            if timelines[0]
            else "Nothing was admitted, rejected, evicted or forgotten.",
            "",
        ]
    if not lines:
        return ["No fact-store policy ran on this chronology.", ""]
    return [
        "Every admission, rejection (with its reason), re-declaration of a stored value, correction, eviction "
        "and forget of the fact store. Turns where nothing was declared are left out.",
        "",
    ] + lines


def column_timelines(column: Column, chronology: str) -> list[list[list[object]]]:
    """The fact-store timeline of each repetition of a column, in repetition order (none where a
    repetition has no facts record). Only the first repetition's records are parsed: another
    whose lines are the same bytes but for the identity, with the same writer outputs
    scripted, has the same timeline; only one that differs is parsed."""
    facts = column.tables.facts
    keys = sorted(column.tables.once("facts by owner", facts_by_owner, chronology).get(column.key(chronology), []))
    if not keys:
        return []
    written = scripted(column, chronology, "writer")
    by_repetition: dict[object, set[object]] = {}
    for repetition, turn in written:
        by_repetition.setdefault(repetition, set()).add(turn)
    first, first_bodies, timelines = None, None, []
    with facts.path.open("rb") as handle:  # one open file; one repetition's bodies held at a time
        for key in keys:
            bodies = facts.bodies(key, handle)
            turns = by_repetition.get(key[3], set())
            if first is not None and bodies == first_bodies and turns == first[0]:
                timelines.append(first[1])
                continue
            records = sorted(facts.conversation(key), key=lambda r: r["turn"])
            if not records:
                continue
            events = [
                e for record in records for e in fact_events(record, (record["repetition"], record["turn"]) in written)
            ]
            if first is None:
                first, first_bodies = (turns, events), bodies
            timelines.append(events)
    return timelines


def facts_by_owner(tables: Tables) -> dict[tuple, list[tuple]]:
    """(chronology, policy, model) -> its conversations in facts.jsonl (their span index keys)."""
    found: dict[tuple, list[tuple]] = {}
    for key in tables.facts.spans:
        found.setdefault(key[:3], []).append(key)
    return found


def fact_events(record: Record, scripted_writer: bool = False) -> list[list[object]]:
    """The rows of one facts.jsonl record: what happened to the store at that turn (the store's
    keys are listed only where something happened: most turns of a long run declare nothing)."""
    turn, admission = record["turn"], record["admission"]
    forget = record.get("forget")
    if isinstance(forget, dict):
        removed = describe(forget["removed"]) or "nothing to remove"
        return [[turn, f"forget {forget['key']}", removed, store_keys(record["facts"])]]
    mark = " (scripted writer output)" if scripted_writer else ""
    if admission["status"] == "rejected":
        return [[turn, "rejected" + mark, admission["reason"], store_keys(record["facts"])]]
    if admission["status"] != "accepted":
        return []
    after = store_keys(record["facts"])
    admitted = [f for f in record["facts"] if f["turn"] == turn]
    events = [[turn, "admitted" + mark, describe(admitted), after]]
    now = {f["key"]: f["value"] for f in admitted}
    replaced = admission.get("replaced") or []
    same = [f for f in replaced if now.get(f["key"]) == f["value"]]
    changed = [f for f in replaced if now.get(f["key"]) != f["value"]]
    for facts, event in ((same, "re-declared (same value)"), (changed, "replaced (correction)")):
        if facts:
            events.append([turn, event, describe(facts), after])
    if admission.get("evicted"):
        events.append([turn, "evicted", describe(admission["evicted"]), after])
    return events


def describe(facts: list[dict]) -> str:
    return "; ".join(f"{f['key']}={f['value']} (turn {f['turn']})" for f in facts)


def store_keys(facts: list[dict]) -> str:
    return f"{', '.join(f['key'] for f in facts) or 'empty'} ({len(facts)})"
