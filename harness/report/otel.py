"""`harness export RUN --format otel --out FILE`: a run as OpenTelemetry traces (OTLP/JSON), one
`ExportTraceServiceRequest` per conversation per line, named by the GenAI semantic conventions
(docs/reports.md, "OpenTelemetry traces", lists every span, event and attribute).

Usage tokens under `gen_ai.usage.*` are only ever the provider-reported ones; the harness's own
counts sit beside them under `harness.tokens.*`. Message content only with `--include-content`: a
trace viewer is often shared more widely than a results folder.

Times are **reconstructed**: the run records each call's latency, not when it started, so each
conversation's calls are laid end to end from the run's start (`started_at`), each as long as
its recorded latency (a scripted or cached call: 0). Durations are measured; start times and
the gaps between calls are not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import pandas as pd

from harness.base.identity import IDENTITY, RunKey
from harness.results.calls_in_bulk import read_calls
from harness.results.rows import CALL, PROBE, TURN
from harness.results.tables import Results

SCOPE = "context-policy-harness"
NANOS = 1_000_000_000
SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT = 1, 3
STATUS_OK, STATUS_ERROR = 1, 2

CALL_FIELDS = (
    *IDENTITY,
    CALL.session,
    CALL.turn,
    CALL.kind,
    CALL.call_model,
    CALL.scripted,
    CALL.response,
    CALL.estimate_tokens,
    CALL.tiktoken_tokens,
    CALL.tiktoken_encoding,
    CALL.reported_prompt_tokens,
    CALL.reported_completion_tokens,
    CALL.latency_ms,
    CALL.attempts,
    CALL.cached,
    CALL.error,
    CALL.response_model,
    CALL.finish_reason,
    CALL.response_id,
)


def otel_lines(results: Results, include_content: bool = False) -> Iterator[str]:
    """One OTLP/JSON `ExportTraceServiceRequest` per conversation of the run, each on a line."""
    manifest = results.manifest
    start = _nanos(manifest.started_at)
    resource = {
        "attributes": _attributes(
            {
                "service.name": SCOPE,
                "harness.run_id": manifest.run_id,
                "harness.seed": manifest.seed,
                "harness.version": manifest.harness_version,
            }
        )
    }
    scope = {"name": SCOPE, "version": _own_version()}
    fields = CALL_FIELDS + ((CALL.messages,) if include_content else ())
    calls = read_calls(results.directory / "calls.jsonl", fields)
    probes = results.probes
    by_conversation_calls = _grouped(calls)
    by_conversation_probes = _grouped(probes)
    turns = results.turns
    for key, conversation_turns in _grouped(turns).items():
        spans = _conversation_spans(
            results,
            key,
            conversation_turns,
            by_conversation_calls.get(key),
            by_conversation_probes.get(key),
            start,
            include_content,
        )
        request = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": spans}]}]}
        yield json.dumps(request, ensure_ascii=False, separators=(",", ":"))


def _conversation_spans(
    results: Results,
    key: RunKey,
    turns: pd.DataFrame,
    calls: pd.DataFrame | None,
    probes: pd.DataFrame | None,
    start: int,
    include_content: bool,
) -> list[dict[str, Any]]:
    run_id = results.manifest.run_id
    conversation_id = "/".join(map(str, (run_id, *key)))
    trace_id = _hex_id(conversation_id, 16)
    root_id = _hex_id(f"{conversation_id}/root", 8)
    compacted = _compacted_turns(results, key, turns)
    spans: list[dict[str, Any]] = []
    answer_span_of: dict[int, dict[str, Any]] = {}
    clock = start
    for record in _records(calls):
        duration = 0 if _missing(record[CALL.latency_ms]) else int(float(record[CALL.latency_ms]) * 1_000_000)
        turn = int(record[CALL.turn])
        span_id = _hex_id(f"{conversation_id}/{turn}/{record[CALL.kind]}/{len(spans)}", 8)
        span = _call_span(record, trace_id, span_id, root_id, conversation_id, clock, clock + duration)
        if record[CALL.kind] == "answer" and turn in compacted:
            span["attributes"] += _attributes({"gen_ai.conversation.compacted": compacted[turn]})
        if include_content:
            span["attributes"] += _attributes(_content(results, key, record))
        if record[CALL.kind] == "answer":
            answer_span_of[turn] = span
        spans.append(span)
        clock += duration
    root = {
        "traceId": trace_id,
        "spanId": root_id,
        "name": f"conversation {key.chronology}",
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(clock),
        "attributes": _attributes(
            {
                "gen_ai.conversation.id": conversation_id,
                "harness.run_id": run_id,
                **{f"harness.{name}": value for name, value in key._asdict().items()},
            }
        ),
        "events": [],
        "status": {"code": STATUS_OK},
    }
    for check in _records(probes):
        target = answer_span_of.get(int(check[PROBE.turn]), root)
        target.setdefault("events", []).append(_evaluation(check, int(target["endTimeUnixNano"])))
    return [root, *spans]


def _call_span(
    record: Mapping[str, Any], trace_id: str, span_id: str, parent: str, conversation_id: str, start: int, end: int
) -> dict[str, Any]:
    to = record[CALL.call_model]
    model = None if _missing(to) else str(to)
    failed = not _missing(record[CALL.error])
    finish = record[CALL.finish_reason]
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "gen_ai.conversation.id": conversation_id,
        "gen_ai.response.id": record[CALL.response_id],
        "gen_ai.response.model": record[CALL.response_model],
        "gen_ai.response.finish_reasons": None if _missing(finish) else [str(finish)],
        "gen_ai.usage.input_tokens": _int(record[CALL.reported_prompt_tokens]),  # provider-reported only
        "gen_ai.usage.output_tokens": _int(record[CALL.reported_completion_tokens]),
        "harness.call.kind": record[CALL.kind],
        "harness.call.scripted": record[CALL.scripted],
        "harness.call.cached": record[CALL.cached],
        "harness.call.attempts": _int(record[CALL.attempts]),
        "harness.turn": _int(record[CALL.turn]),
        "harness.session": record[CALL.session],
        "harness.tokens.estimate": _int(record[CALL.estimate_tokens]),
        "harness.tokens.tiktoken": _int(record[CALL.tiktoken_tokens]),
        "harness.tokens.tiktoken_encoding": record[CALL.tiktoken_encoding],
        "error.type": "model_error" if failed else None,
    }
    status: dict[str, Any] = (
        {"code": STATUS_ERROR, "message": str(record[CALL.error])} if failed else {"code": STATUS_OK}
    )
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": f"chat {model}" if model else f"chat (scripted {record[CALL.kind]})",
        "kind": SPAN_KIND_CLIENT,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": _attributes(attributes),
        "status": status,
    }


def _evaluation(check: Mapping[str, Any], at: int) -> dict[str, Any]:
    measured = check[PROBE.status] == "measured" and not _missing(check[PROBE.passed])
    passed = bool(check[PROBE.passed]) if measured else None
    label = "not measured" if passed is None else "pass" if passed else "fail"
    where = check[PROBE.lost_at]
    explanation = str(check[PROBE.subject]) + ("" if _missing(where) else f": {where}")
    return {
        "timeUnixNano": str(at),
        "name": "gen_ai.evaluation.result",
        "attributes": _attributes(
            {
                "gen_ai.evaluation.name": check[PROBE.check],
                "gen_ai.evaluation.score.label": label,
                "gen_ai.evaluation.score.value": None if passed is None else float(passed),
                "gen_ai.evaluation.explanation": explanation,
                "harness.check.probe": check[PROBE.probe],
                "harness.check.subject": check[PROBE.subject],
                "harness.check.status": check[PROBE.status],
                "harness.check.in_view": _tristate(check[PROBE.in_view]),
                "harness.check.in_answer": _tristate(check[PROBE.in_answer]),
                "harness.check.cause": check[PROBE.cause],
                "harness.check.note": check[PROBE.note],
            }
        ),
    }


def _compacted_turns(results: Results, key: RunKey, turns: pd.DataFrame) -> dict[int, bool]:
    """turn -> whether a message of the session's previous request left this turn's request."""
    found: dict[int, bool] = {}
    previous: dict[str, set[tuple[str, str, Any]]] = {}
    for turn in sorted(int(t) for t in turns[TURN.turn]):
        row = results.view_at(*key, turn)
        if row is None or row.get("view") is None:
            continue
        session = str(row["session"])
        now = {(m["role"], m["content"], m.get("turn")) for m in row["view"]}
        if session in previous:
            found[turn] = not previous[session] <= now
        previous[session] = now
    return found


def _content(results: Results, key: RunKey, record: Mapping[str, Any]) -> dict[str, Any]:
    """`gen_ai.input.messages` and `gen_ai.output.messages` as the conventions shape them."""
    sent = record.get(CALL.messages)
    if not isinstance(sent, list):  # an answer: its request is the turn's view
        row = results.view_at(*key, int(record[CALL.turn]))
        sent = row["view"] if row and row.get("view") else []
    reply = record[CALL.response]
    return {
        "gen_ai.input.messages": json.dumps([_message(m) for m in sent], ensure_ascii=False),
        "gen_ai.output.messages": None
        if _missing(reply)
        else json.dumps([_message({"role": "assistant", "content": reply})], ensure_ascii=False),
    }


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": message.get("role"), "parts": [{"type": "text", "content": message.get("content")}]}


def _attributes(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """OTLP `KeyValue`s; a value that is missing (None, NaN) is left out, never sent as 0."""
    return [{"key": name, "value": _any_value(value)} for name, value in values.items() if not _missing(value)]


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return {"arrayValue": {"values": [_any_value(item) for item in value]}}
    if hasattr(value, "item"):  # a numpy scalar from a frame
        return _any_value(value.item())
    return {"stringValue": str(value)}


def _int(value: Any) -> int | None:
    """A count as an integer (a frame may hold it as a float beside a missing one); None when missing."""
    return None if _missing(value) else int(value)


def _tristate(value: Any) -> str:
    return "unknown" if _missing(value) else "true" if bool(value) else "false"


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (list, tuple)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _records(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    return [] if frame is None else frame.to_dict("records")


def _grouped(frame: pd.DataFrame) -> dict[RunKey, pd.DataFrame]:
    """The frame's rows by conversation."""
    if frame.empty:
        return {}
    return {RunKey.typed(*key): group for key, group in frame.groupby(list(IDENTITY), sort=False, observed=True)}


def _hex_id(text: str, size: int) -> str:
    """A stable id of `size` bytes as hex (OTLP/JSON's encoding of trace and span ids)."""
    return hashlib.sha256(text.encode()).digest()[:size].hex()


def _nanos(stamp: str | None) -> int:
    if not stamp:
        return 0
    return int(datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()) * NANOS


def _own_version() -> str:
    try:
        return version("context-policy-harness")
    except PackageNotFoundError:
        return "unknown"
