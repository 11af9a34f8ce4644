"""`harness export RUN --format otel`: a run as OpenTelemetry traces (OTLP/JSON), one trace per
conversation, a span per model call, each check a `gen_ai.evaluation.result` event; parsed here
with the OpenTelemetry protocol's own types (`opentelemetry-proto`)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from harness.cli.commands import main
from harness.report.otel import _call_span
from tests.conftest import run_through_cli
from tests.paths import SHIPPED

POLICIES = ("--policy", "full-history", "--policy", "last-turns", "--policy", "summary")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("otel")
    files = [SHIPPED / "budget-cut-correction.yaml", SHIPPED / "coding-agent.yaml"]
    return run_through_cli(root, files, "traced", "--live", "--no-charts", *POLICIES)


def export(run: Path, out: Path, *options: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["export", str(run), "--format", "otel", "--out", str(out), *options])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text().splitlines()]


def parsed(line: dict[str, Any]) -> ExportTraceServiceRequest:
    """A line parsed as OTLP's protobuf type. OTLP/JSON writes trace and span ids as hex, where
    protobuf's own JSON mapping reads bytes as base64: converted first, as a collector does."""
    line = json.loads(json.dumps(line))
    for resource in line["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.ParseDict(line, ExportTraceServiceRequest())


def spans_of(line: dict[str, Any]) -> list[dict[str, Any]]:
    return line["resourceSpans"][0]["scopeSpans"][0]["spans"]


def attributes(item: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in item.get("attributes", [])}


def test_every_line_is_an_export_trace_service_request_one_per_conversation(run: Path, tmp_path: Path) -> None:
    lines = export(run, tmp_path / "t.jsonl")
    conversations = pd.read_json(run / "conversations.jsonl", lines=True)
    assert len(lines) == len(conversations) == 6
    requests = [parsed(line) for line in lines]
    trace_ids = set()
    for request in requests:
        spans = request.resource_spans[0].scope_spans[0].spans
        assert {len(span.trace_id) for span in spans} == {16} and {len(span.span_id) for span in spans} == {8}
        assert len({span.trace_id for span in spans}) == 1  # one trace per conversation
        trace_ids.add(spans[0].trace_id)
        root = spans[0]
        assert all(span.parent_span_id == root.span_id for span in spans[1:])
    assert len(trace_ids) == 6


def test_a_span_per_model_call_with_usage_only_as_the_provider_reported_it(run: Path, tmp_path: Path) -> None:
    lines = export(run, tmp_path / "t.jsonl")
    calls = pd.read_json(run / "calls.jsonl", lines=True)
    call_spans = [span for line in lines for span in spans_of(line)[1:]]
    assert len(call_spans) == len(calls)
    kinds = sorted(attributes(span)["harness.call.kind"] for span in call_spans)
    assert kinds == sorted(calls["kind"])
    for span in call_spans:
        found = attributes(span)
        assert found["gen_ai.operation.name"] == "chat" and found["gen_ai.request.model"] == "reference"
        assert found["gen_ai.conversation.id"].startswith("traced/")
        assert "gen_ai.usage.input_tokens" not in found  # the reference model reports none: no estimate in its place
        assert int(found["harness.tokens.estimate"]) > 0


def test_the_usage_the_provider_reported_is_the_gen_ai_usage() -> None:
    record = {
        "call_model": "gpt-x",
        "error": None,
        "finish_reason": "stop",
        "response_id": "r1",
        "response_model": "gpt-x-2026",
        "reported_prompt_tokens": 120.0,  # a frame's float beside a missing count
        "reported_completion_tokens": 7,
        "kind": "answer",
        "scripted": False,
        "cached": False,
        "attempts": 2,
        "turn": 3,
        "session": "main",
        "estimate_tokens": 100,
        "tiktoken_tokens": None,
        "tiktoken_encoding": None,
    }
    found = attributes(_call_span(record, "0" * 32, "1" * 16, "2" * 16, "c", 0, 5))
    assert found["gen_ai.usage.input_tokens"] == "120" and found["gen_ai.usage.output_tokens"] == "7"
    assert found["gen_ai.response.finish_reasons"] == {"values": [{"stringValue": "stop"}]}
    assert "harness.tokens.tiktoken" not in found  # unknown is left out, never 0


def test_each_check_is_an_evaluation_event_with_its_verdict(run: Path, tmp_path: Path) -> None:
    lines = export(run, tmp_path / "t.jsonl")
    probes = pd.read_csv(run / "probes.csv")
    events = [event for line in lines for span in spans_of(line) for event in span.get("events", [])]
    assert len(events) == len(probes) and {e["name"] for e in events} == {"gen_ai.evaluation.result"}
    labels = pd.Series([attributes(e)["gen_ai.evaluation.score.label"] for e in events]).value_counts().to_dict()
    measured = probes[probes.status == "measured"]
    assert labels.get("pass", 0) == int((measured.passed == True).sum())  # noqa: E712 - a nullable column
    assert labels.get("fail", 0) == int((measured.passed == False).sum())  # noqa: E712
    names = {attributes(e)["gen_ai.evaluation.name"] for e in events}
    assert names <= {"prohibition", "current", "stale", "forgotten", "expect"}


def test_a_turn_whose_request_dropped_a_message_of_the_previous_one_is_marked_compacted(
    run: Path, tmp_path: Path
) -> None:
    lines = export(run, tmp_path / "t.jsonl")
    marks: dict[str, set[str]] = {}
    for line in lines:
        spans = spans_of(line)
        policy = attributes(spans[0])["harness.policy"]
        for span in spans[1:]:
            found = attributes(span)
            if "gen_ai.conversation.compacted" in found:
                marks.setdefault(policy, set()).add(str(found["gen_ai.conversation.compacted"]))
    assert marks["full-history"] == {"False"}  # nothing ever leaves its request
    assert "True" in marks["last-turns"]  # its window slides


def test_content_is_written_only_when_asked(run: Path, tmp_path: Path) -> None:
    bare = export(run, tmp_path / "bare.jsonl")
    assert not any("gen_ai.input.messages" in attributes(s) for line in bare for s in spans_of(line))
    full = export(run, tmp_path / "full.jsonl", "--include-content")
    answers = [s for line in full for s in spans_of(line)[1:] if attributes(s)["harness.call.kind"] == "answer"]
    sent = json.loads(attributes(answers[0])["gen_ai.input.messages"])
    assert sent[0]["role"] == "system" and sent[-1]["role"] == "user"
    assert sent[-1]["parts"][0]["type"] == "text" and sent[-1]["parts"][0]["content"]


def test_options_of_the_other_format_are_refused(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    for extra in (["--policy", "full-history"], ["--repetition", "2"]):
        result = CliRunner().invoke(main, ["export", str(run), "--format", "otel", "--out", str(out), *extra])
        assert result.exit_code == 2 and "leave out --policy" in result.output
    args = ["export", str(run), "--format", "longmemeval", "--out", str(out), "--include-content"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "--include-content is for --format otel" in result.output
    assert not out.exists()
