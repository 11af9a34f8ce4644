"""The count a policy's token trigger saw reaches turns.csv through a real answer call: the
provider-reported usage of a server on 127.0.0.1 that reports it, and `unknown` from one that does not."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.results.tables import load_results
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion

CHRONOLOGY = """\
title: Three plain turns
system: You are terse.
turns:
  - user: module=Reporting
  - user: database=PostgreSQL
  - user: Which database do we use?
"""
POLICY = "token-budget:counter=provider,budget=100000"  # never trims: the view is the whole history


def replying(usage: bool):
    def reply(request: Recorded) -> Reply:
        if request.path.endswith("/models"):
            return Reply(body={"object": "list", "data": []})
        last = (request.body or {}).get("messages", [{}])[-1].get("content", "")
        body = chat_completion(f"echo {len(last)}")
        if usage:
            body["usage"] = {"prompt_tokens": 40 + len(last), "completion_tokens": 3}
        return Reply(body=body)

    return reply


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "three.yaml").write_text(CHRONOLOGY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return tmp_path


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


def turns(server: ScriptedServer, project: Path, usage: bool):
    server.default = replying(usage)
    args = ["run", "three.yaml", "--model", "openai:m", "--base-url", server.base_url, "--policy", POLICY]
    result = CliRunner().invoke(main, [*args, "--run-id", "r", "--no-cache", "--quiet", "--no-charts"])
    assert result.exit_code == 0, result.output + str(result.exception)
    results = load_results(project / "results" / "r")
    return results.turns.sort_values("turn").reset_index(drop=True), results.calls.sort_values("turn")


def test_the_provider_count_is_the_previous_answer_calls_reported_usage_plus_what_was_added(
    server: ScriptedServer, project: Path
) -> None:
    rows, calls = turns(server, project, usage=True)
    assert list(rows.trigger_counter) == ["provider"] * 3
    assert list(rows.trigger_status) == ["unknown", "counted", "counted"]  # turn 1: no earlier answer call
    assert rows.trigger_tokens.isna()[0]
    answers = list(calls[calls.kind == "answer"].response)
    for at in (1, 2):
        previous = rows.iloc[at - 1]
        reported = previous.reported_prompt_tokens + previous.reported_completion_tokens
        added = rows.view_chars[at] - previous.view_chars - len(answers[at - 1])
        assert rows.trigger_tokens[at] == reported + math.ceil(added / 4)


def test_a_provider_that_reports_no_usage_leaves_the_count_unknown_and_the_budget_unapplied(
    server: ScriptedServer, project: Path
) -> None:
    rows, _ = turns(server, project, usage=False)
    assert list(rows.trigger_status) == ["unknown"] * 3 and rows.trigger_tokens.isna().all()
    assert "the answer call at turn 2 reported no usage; did not fire" in rows.policy_note[2]
