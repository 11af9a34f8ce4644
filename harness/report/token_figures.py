"""Per chronology: token figures of the model calls made, each labelled with what it is."""

from __future__ import annotations

from harness.markdown import table
from harness.report.cells import spread
from harness.report.comparison import Comparison, Record, split
from harness.rows import CALL
from harness.usage import recorded_count

CALL_KINDS = ("answer", "summarizer", "writer", "judge")


def tokens(cmp: Comparison, chronology: str) -> list[str]:
    body: list[list[object]] = []
    for column in cmp.columns:
        calls, reps = column.rows("calls", chronology), column.repetitions(chronology)
        if not calls:
            body.append([column.header, "no model call" if reps else "not run", "", "", "", ""])
            continue
        sent = [c for c in calls if not c.get(CALL.cached)]
        reused = [c for c in calls if c.get(CALL.cached)]
        body += kind_rows(column.header, "", sent, reps) + kind_rows(column.header, "from cache, ", reused, reps)
    return [
        "Request tokens over the model calls, per repetition, split by call kind (answer, summarizer, writer, "
        "judge, and any role a policy names). `all` counts the calls sent in this run. Calls served from the "
        "response cache, or shared with an identical call in flight, sent no request: they are counted apart "
        "(`from cache` rows), and their provider-reported figures are the original response's, not spent in "
        "this run. Provider-reported figures say how many of the calls reported them.",
        "",
        table(
            [
                "policy",
                "calls",
                "estimate tokens (chars/4)",
                "tiktoken tokens (local count)",
                "provider-reported prompt tokens",
                "provider-reported completion tokens",
            ],
            body,
        ),
        "",
    ]


def kind_rows(header: str, prefix: str, calls: list[Record], reps: int) -> list[list[object]]:
    """The `all` row of `calls`, then one per call kind when there are several kinds."""
    if not calls:
        return []
    by_kind = split(calls, [CALL.kind])
    kinds = [k for k in CALL_KINDS if (k,) in by_kind] + sorted(k for (k,) in by_kind if k not in CALL_KINDS)
    rows = [token_row(header, f"{prefix}all", calls, reps)]
    return rows + ([token_row(header, prefix + k, by_kind[(k,)], reps) for k in kinds] if len(kinds) > 1 else [])


def token_row(header: str, kind: str, calls: list[Record], reps: int) -> list[object]:
    per_rep = list(split(calls, [CALL.repetition]).values())
    count = spread(len(rows) for rows in per_rep) + (f" per repetition ×{reps}" if reps > 1 else "")
    return [
        header,
        f"{kind}: {count}",
        spread(total(rows, CALL.estimate_tokens) for rows in per_rep),
        local_total(per_rep),
        reported(calls, per_rep, CALL.reported_prompt_tokens),
        reported(calls, per_rep, CALL.reported_completion_tokens),
    ]


def total(rows: list[Record], field: str) -> int | None:
    """A sum that is unknown (None) as soon as one value is."""
    values = [r[field] for r in rows]
    return None if any(v is None for v in values) else sum(values)


def local_total(per_rep: list[list[Record]]) -> str:
    totals = [total(rows, CALL.tiktoken_tokens) for rows in per_rep]
    return "unknown (tokenizer unavailable)" if None in totals else spread(totals)


def reported(calls: list[Record], per_rep: list[list[Record]], field: str) -> str:
    """A provider-reported total, or `unknown` when any call reported nothing valid; with n of m."""
    count, invalid = reported_count(calls, field), invalid_count(calls, field)
    bad = f"; {invalid} reported invalid usage, counted as unknown" if invalid else ""
    of = f"({count} of {len(calls)} calls reported{bad})"
    if count < len(calls):
        return f"unknown {of}"
    return f"{spread(reported_total(rows, field) for rows in per_rep)} {of}"


def reported_total(rows: list[Record], field: str) -> int | None:
    """A provider-reported sum that is unknown (None) as soon as one value is not a valid count."""
    counts = [recorded_count(r[field]) for r in rows]
    return None if any(v is None for v in counts) else sum(v for v in counts if v is not None)


def reported_count(calls: list[Record], field: str = CALL.reported_prompt_tokens) -> int:
    """Calls that reported a valid token count for `field` (`harness.usage`)."""
    return sum(1 for c in calls if recorded_count(c[field]) is not None)


def invalid_calls(calls: list[Record]) -> int:
    """Calls that reported invalid usage in any field."""
    return sum(
        1
        for c in calls
        if invalid_count([c], CALL.reported_prompt_tokens) or invalid_count([c], CALL.reported_completion_tokens)
    )


def invalid_count(calls: list[Record], field: str) -> int:
    """Calls whose `field` was reported but is not a token count: recorded as invalid, or (results
    written before usage was checked) a negative, huge or fractional number."""
    name = field.removeprefix("reported_")  # `invalid_reported_usage` is keyed by the endpoint's names

    def invalid(call: Record) -> bool:
        raw = call.get(CALL.invalid_reported_usage) or {}
        return name in raw or "usage" in raw or (call[field] is not None and recorded_count(call[field]) is None)

    return sum(1 for c in calls if invalid(c))
