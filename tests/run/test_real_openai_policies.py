"""`openai-compaction` and `openai-truncation` with `--model openai:NAME`: a whole run against the
OpenAI emulator served on 127.0.0.1 as a real endpoint would be (`harness.emulate.server`). Each
compaction is a `POST /responses/compact` call with the usage the endpoint reported; each answer a
`POST /responses` carrying the sealed item or `truncation: "auto"`; what the harness cannot read
(the item, what the server's truncation may drop) is `in view: unknown`, and the answer is checked."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.emulate.openai import OpenAIEmulator
from harness.emulate.server import Reply, serve
from harness.policy.delegated import EMULATED_NOTE
from harness.results.rows import OPAQUE_VIEW
from harness.results.tables import load_results
from tests.run.test_provider_policies import CHRONOLOGY

COMPACTION = "openai-compaction:compact_threshold=10"


class Recording(OpenAIEmulator):
    """The emulator, keeping each request's path and JSON body as it arrived."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.received: list[tuple[str, dict[str, Any]]] = []
        self._guard = threading.Lock()

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        with self._guard:
            self.received.append((path, json.loads(body or b"{}")))
        return super().handle(method, path, headers, body)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "rule.yaml").write_text(CHRONOLOGY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a loopback endpoint is sent the placeholder
    return tmp_path


@pytest.fixture
def endpoint() -> Iterator[Recording]:
    yield Recording()


def run(project: Path, emulator: OpenAIEmulator, policy: str, *args: str, status: int = 0):
    with serve(emulator) as root:
        options = ["--model", "openai:reference", "--base-url", f"{root}/v1", "--policy", policy]
        result = CliRunner().invoke(
            main, ["run", "rule.yaml", "--run-id", "r", "--quiet", "--no-charts", *options, *args]
        )
    assert result.exit_code == status, result.output + str(result.exception)
    return load_results(project / "results" / "r")


def prohibition(results) -> pd.Series:
    probes = results.probes
    return probes[probes["check"] == "prohibition"].iloc[0]


def test_compactions_and_answers_reach_the_endpoints_responses_api(project: Path, endpoint: Recording) -> None:
    results = run(project, endpoint, COMPACTION)
    calls = results.calls
    compactions = calls[calls["kind"] == "compaction"]
    assert list(compactions["turn"]) == [1, 2, 3] and set(compactions["api"]) == {"responses/compact"}
    compacts = [body for path, body in endpoint.received if path == "/v1/responses/compact"]
    assert [body["model"] for body in compacts] == ["reference"] * 3  # the model named, not the emulator's default
    # The usage is the endpoint's, provider-reported, not the offline emulation's note.
    assert (compactions["reported_prompt_tokens"] > 0).all() and (compactions["reported_completion_tokens"] > 0).all()
    assert not any(EMULATED_NOTE in notes for notes in compactions["notes"])
    [answer] = [body for path, body in endpoint.received if path == "/v1/responses"]
    sealed = compactions[compactions["turn"] == 2].iloc[0]["response"]
    assert answer["input"][0] == {"type": "compaction", "encrypted_content": sealed}  # sent back sealed
    assert answer["instructions"] == "You are an operations assistant." and "truncation" not in answer
    answers = calls[calls["kind"] == "answer"]
    assert list(answers["api"]) == ["responses"] and answers.iloc[0]["reported_prompt_tokens"] > 0


def test_the_real_item_is_never_read_so_in_view_is_unknown_and_the_answer_is_checked(
    project: Path, endpoint: Recording
) -> None:
    results = run(project, endpoint, COMPACTION)
    items = results.messages[results.messages["origin"] == "opaque"]["content"]
    assert len(items) == 3  # one per compaction, each what is known of the item, never what it says
    assert all("unreadable by the harness" in text and "restart" not in text for text in items)
    rule = prohibition(results)
    assert pd.isna(rule["in_view"]) and rule["note"] == OPAQUE_VIEW
    assert bool(rule["passed"])  # the endpoint's model read the item and refused: decided by the answer alone


@pytest.mark.slow  # waits the endpoint's Retry-After, 1 second
def test_a_429_on_a_compaction_is_retried_within_bounds(project: Path) -> None:
    results = run(project, Recording(faults=["rate-limit:1"]), COMPACTION)
    first = results.calls.iloc[0]
    assert (first["kind"], first["attempts"], first["http_429"]) == ("compaction", 2, 1)
    assert pd.isna(first["error"])


def test_a_compaction_that_keeps_failing_is_recorded_as_its_failure_and_earlier_records_stay(project: Path) -> None:
    results = run(project, Recording(faults=["server-error"]), COMPACTION, "--max-retries", "1", status=3)
    [failed] = results.calls.to_dict("records")
    assert failed["kind"] == "compaction" and failed["attempts"] == 2 and "HTTP 500" in failed["error"]
    assert list(results.turns["turn"]) == [1]  # the turn's row written, the replay stopped there


def test_an_answer_without_usage_records_it_unknown_never_0(project: Path) -> None:
    results = run(project, Recording(faults=["no-usage"]), COMPACTION)
    answer = results.calls[results.calls["kind"] == "answer"].iloc[0]
    assert pd.isna(answer["reported_prompt_tokens"]) and pd.isna(answer["reported_completion_tokens"])


def test_truncation_sends_the_whole_request_and_what_it_predicts_dropped_is_unknown(project: Path) -> None:
    endpoint = Recording(context_window=30)
    results = run(project, endpoint, "openai-truncation:window=30")
    [answer] = [body for path, body in endpoint.received if path == "/v1/responses"]
    assert answer["truncation"] == "auto" and len(answer["input"]) == 5  # the whole history and the question
    rule = prohibition(results)
    assert pd.isna(rule["in_view"]) and rule["note"] == OPAQUE_VIEW  # predicted dropped: not absent on its word
    assert not bool(rule["passed"])  # the server did drop it: the answer says yes, and that is checked
    current = results.probes[results.probes["check"] == "current"].iloc[0]
    assert bool(current["in_view"])  # predicted kept: measured


def test_truncation_within_the_window_is_measured_whole(project: Path) -> None:
    results = run(project, Recording(), "openai-truncation")
    assert bool(prohibition(results)["in_view"]) and pd.isna(prohibition(results)["note"])


def test_a_request_the_endpoint_refuses_is_the_answers_failure_and_earlier_records_stay(project: Path) -> None:
    results = run(project, Recording(context_window=20), "openai-truncation:window=20", status=3)
    [answer] = results.calls.to_dict("records")
    assert "HTTP 400" in answer["error"] and answer["attempts"] == 1  # a 400 is final
    assert list(results.turns["turn"]) == [1, 2, 3]
