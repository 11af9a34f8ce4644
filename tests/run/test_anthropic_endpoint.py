"""`harness run --model anthropic:reference --base-url URL` against the emulated Messages API served
on 127.0.0.1, end to end: plain answers with the usage the endpoint reported; anthropic-compaction's
calls at the endpoint, its block in the view and "in view" measured; anthropic-context-editing's
edit applied by the server and reconciled with the prediction (unknown where they differ); faults
retried or recorded as the call's failure; the key never written."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

pytest.importorskip("anthropic")  # the optional extra `anthropic`

from harness.cli.commands import main  # noqa: E402
from harness.emulate.anthropic import AnthropicEmulator, Faults  # noqa: E402
from harness.emulate.server import serve  # noqa: E402
from harness.results.rows import DISPUTED_VIEW  # noqa: E402
from harness.results.tables import load_results  # noqa: E402
from tests.models.anthropic_served import KEY, Rewriting, echoing_key  # noqa: E402
from tests.run.test_provider_policies import CHRONOLOGY  # noqa: E402

AGENT = Path(__file__).parents[2] / "chronologies" / "ops-agent.yaml"  # tool calls and their results


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "rule.yaml").write_text(CHRONOLOGY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return tmp_path


def run(project: Path, emulator, *args: str, chronology: str = "rule.yaml", run_id: str = "r", code: int = 0):
    with serve(emulator) as url:
        result = CliRunner().invoke(
            main,
            [
                "run",
                chronology,
                "--run-id",
                run_id,
                "--quiet",
                "--no-charts",
                "--model",
                "anthropic:reference",
                "--base-url",
                url,
                *args,
            ],
        )
    assert result.exit_code == code, result.output + str(result.exception)
    return load_results(project / "results" / run_id)


@pytest.mark.slow
def test_a_plain_run_records_the_endpoints_usage(project: Path) -> None:
    results = run(project, AnthropicEmulator(), "--policy", "full-history")
    answer = results.calls.iloc[-1]
    assert answer["call_model"] == "anthropic:reference" and answer["finish_reason"] == "end_turn"
    assert answer["reported_prompt_tokens"] > 0 and answer["reported_completion_tokens"] > 0
    assert answer["response_id"].startswith("msg_emulated_")
    rule = results.probes[results.probes["check"] == "prohibition"].iloc[0]
    assert bool(rule["in_view"]) and bool(rule["passed"])


@pytest.mark.slow
def test_anthropic_compaction_compacts_at_the_endpoint_and_in_view_is_measured(project: Path) -> None:
    emulator = Rewriting(lambda m: m)
    results = run(project, emulator, "--policy", "anthropic-compaction:on_demand=10")
    compactions = results.calls[results.calls["kind"] == "compaction"]
    assert list(compactions["turn"]) == [1, 2, 3]
    assert (compactions["call_model"] == "anthropic:reference").all()
    assert (compactions["finish_reason"] == "compaction").all()
    assert (compactions["reported_prompt_tokens"] > 0).all() and (compactions["reported_completion_tokens"] > 0).all()
    asked = [body for _, body in emulator.requests if "compaction" in body]
    assert len(asked) == 3 and all(body["compaction"] == {"type": "summarize"} for body in asked)
    answer = [body for _, body in emulator.requests if "compaction" not in body][-1]
    assert answer["messages"][0]["content"][0]["type"] == "compaction"  # the block sent back first
    rule = results.probes[results.probes["check"] == "prohibition"].iloc[0]
    assert bool(rule["in_view"]) and bool(rule["passed"])  # read in the block: measured


@pytest.mark.slow
def test_a_threshold_compaction_is_asked_with_pause_after_compaction(project: Path) -> None:
    notes = "\n".join(f"  - user: 'note {n}: {'x' * 120_000}'\n    assistant: Noted." for n in (1, 2))
    Path("big.yaml").write_text(f"title: Two long notes\nsystem: Be brief.\nturns:\n{notes}\n", encoding="utf-8")
    emulator = Rewriting(lambda m: m)
    results = run(project, emulator, "--policy", "anthropic-compaction:trigger=50000", chronology="big.yaml")
    (asked,) = [body for _, body in emulator.requests]
    assert asked["context_management"]["edits"] == [
        {
            "type": "compact_20260112",
            "trigger": {"type": "input_tokens", "value": 50_000},
            "pause_after_compaction": True,
        }
    ]
    (compaction,) = results.calls[results.calls["kind"] == "compaction"].itertuples()
    assert (
        compaction.turn == 2 and compaction.finish_reason == "compaction" and compaction.reported_prompt_tokens > 50_000
    )


@pytest.mark.slow
def test_a_failed_compaction_is_a_no_op_and_an_unavailable_one_fails_the_call(project: Path) -> None:
    results = run(
        project, AnthropicEmulator(Faults(failed_compaction=True)), "--policy", "anthropic-compaction:on_demand=10"
    )
    notes = results.turns["policy_note"].dropna()
    assert notes.str.contains("empty block").all()  # `content: null`: nothing replaced
    unavailable = AnthropicEmulator(Faults(compaction_unavailable=True))
    results = run(
        project, unavailable, "--policy", "anthropic-compaction:on_demand=10", "--max-retries", "1", run_id="u", code=3
    )
    failed = results.calls[results.calls["kind"] == "compaction"].iloc[0]
    assert failed["attempts"] == 2 and "HTTP 529" in failed["error"] and "compaction_unavailable" in failed["error"]


@pytest.mark.slow
def test_a_rate_limit_is_retried_and_counted(project: Path) -> None:
    results = run(project, AnthropicEmulator(Faults(rate_limited=1, retry_after=0)), "--policy", "full-history")
    assert results.calls["attempts"].tolist() == [2] and results.calls["http_429"].tolist() == [1]


@pytest.mark.slow
def test_context_editing_agrees_with_the_server_and_the_view_is_measured(project: Path) -> None:
    emulator = Rewriting(lambda m: m)
    results = run(project, emulator, "--policy", "anthropic-context-editing:trigger=300,keep=1", chronology=str(AGENT))
    edits = [body["context_management"]["edits"] for _, body in emulator.requests]
    assert edits and all(
        e
        == [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 300},
                "keep": {"type": "tool_uses", "value": 1},
            }
        ]
        for e in edits
    )
    answered = results.turns[results.turns["status"] == "answered"]
    assert answered["policy_note"].str.contains("the provider's applied_edits agree").all()
    assert answered["policy_note"].str.contains("cleared_tool_uses=29").any()  # the server cleared
    assert not (results.probes["note"] == DISPUTED_VIEW).any()


@pytest.mark.slow
def test_context_editing_that_the_server_reports_otherwise_leaves_in_view_unknown(project: Path) -> None:
    def misreported(message: dict) -> dict:
        return {**message, "context_management": {"applied_edits": []}}  # the server says it cleared nothing

    results = run(
        project,
        Rewriting(misreported),
        "--policy",
        "anthropic-context-editing:trigger=300,keep=1",
        chronology=str(AGENT),
    )
    answered = results.turns[results.turns["status"] == "answered"]
    assert answered["policy_note"].str.contains("differ from the prediction").any()
    ticket = results.probes[(results.probes["check"] == "expect") & (results.probes["turn"] == 10)].iloc[0]
    assert pd.isna(ticket["in_view"])  # its value only a tool result stated: unknown, never false
    rule = results.probes[(results.probes["check"] == "prohibition") & (results.probes["turn"] == 12)].iloc[0]
    assert bool(rule["in_view"])  # stated by a user message: still measured


@pytest.mark.slow
def test_the_key_is_never_written_to_the_results(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    run(project, Rewriting(echoing_key), "--policy", "full-history")
    written = [p.read_text(encoding="utf-8", errors="replace") for p in (project / "results").rglob("*") if p.is_file()]
    assert written and not any(KEY in text for text in written)
    assert any("[redacted:ANTHROPIC_API_KEY]" in text for text in written)


def test_the_provider_policies_take_anthropic_models_and_refuse_openai_ones(project: Path) -> None:
    args = ["run", "rule.yaml", "--policy", "anthropic-context-editing", "--model", "openai:gpt-4o-mini"]
    result = CliRunner().invoke(main, [*args, "--base-url", "http://127.0.0.1:9/v1"])
    assert result.exit_code == 2 and "anthropic:NAME" in result.output and "openai:gpt-4o-mini" in result.output
