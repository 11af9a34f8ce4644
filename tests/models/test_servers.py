"""Several `--base-url` for one model: conversations spread over servers, one server each."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.models.servers import Balancer, conversation_scope
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion
from tests.paths import SHIPPED

POLICIES = ("--policy", "full-history", "--policy", "last-turns", "--policy", "request-compaction")


def echo(request: Recorded) -> Reply:
    """The same reply for the same request on either server; slow enough for conversations to overlap."""
    last = (request.body or {}).get("messages", [{}])[-1].get("content", "")
    return Reply(
        body=chat_completion(f"echo {len(last)}", usage={"prompt_tokens": 5, "completion_tokens": 1}), delay=0.02
    )


@pytest.fixture
def servers() -> Iterator[tuple[ScriptedServer, ScriptedServer]]:
    with ScriptedServer() as a, ScriptedServer() as b:
        a.default = b.default = echo
        yield a, b


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(run_id: str, *urls: str, status: int = 0) -> Path:
    args = ["run", "memory-drift.yaml", "--model", "openai:m", "--live", "--no-cache", "--concurrency", "3", "--quiet"]
    args += [*POLICIES, "--run-id", run_id, *(x for url in urls for x in ("--base-url", url))]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == status, result.output
    return Path("results") / run_id


@pytest.mark.slow
def test_two_servers_each_serve_whole_conversations(servers, project: Path) -> None:
    a, b = servers
    results = run("two", a.base_url, b.base_url)
    conversations = [json.loads(line) for line in (results / "conversations.jsonl").read_text().splitlines()]
    served = Counter(c["server"] for c in conversations)
    assert set(served) == {a.base_url, b.base_url}  # both got conversations
    calls = Counter(c["server"] for c in conversations for _ in range(c["calls"]))
    posts = [sum(r.method == "POST" for r in server.requests) for server in (a, b)]
    assert posts == [calls[a.base_url], calls[b.base_url]]  # one server each
    manifest = json.loads((results / "manifest.json").read_text())
    assert manifest["model_options"]["base_urls"] == [a.base_url, b.base_url]
    assert manifest["model_settings"]["openai:m"]["base_urls"] == [a.base_url, b.base_url]


@pytest.mark.slow
def test_spread_records_are_those_of_one_server_apart_from_which_served(servers, project: Path) -> None:
    a, b = servers
    one, two = run("one", a.base_url), run("two", a.base_url, b.base_url)
    latency = re.compile(r'"latency_ms": [0-9.]+')
    for name in ("calls.jsonl", "messages.jsonl", "views.jsonl", "probes.csv"):
        assert latency.sub("", (one / name).read_text()) == latency.sub("", (two / name).read_text()), name
    assert finished(one) == finished(two)


def finished(results: Path) -> list[dict]:
    """conversations.jsonl without which server served (and the record's digest, which covers it),
    its records' digests as counts (the records hold latencies)."""
    records = [json.loads(line) for line in (results / "conversations.jsonl").read_text().splitlines()]
    for record in records:
        del record["server"], record["sha256"]
        record["records"] = {name: digest["count"] for name, digest in record["records"].items()}
    return records


def test_the_same_server_twice_is_refused(servers, project: Path) -> None:
    a, _ = servers
    run("twice", a.base_url, a.base_url, status=2)
    assert not Path("results/twice").exists() and not a.requests


def lists(*entries: dict[str, object]) -> Callable[[Recorded], Reply]:
    """A server whose `/v1/models` lists `entries` and which answers chats as `echo`."""

    def answer(request: Recorded) -> Reply:
        if request.method == "GET" and request.path.endswith("/models"):
            return Reply(body={"object": "list", "data": [{"object": "model", "created": 1, **e} for e in entries]})
        return echo(request)

    return answer


def test_servers_that_list_different_weights_are_refused_before_anything_is_sent(servers, project: Path) -> None:
    a, b = servers
    a.default = lists({"id": "small.gguf", "meta": {"n_params": 135}})
    b.default = lists({"id": "large.gguf", "meta": {"n_params": 360}})
    result = CliRunner().invoke(
        main,
        ["run", "memory-drift.yaml", "--model", "openai:m", "--live", "--run-id", "mixed", "--quiet"]
        + ["--base-url", a.base_url, "--base-url", b.base_url],
    )
    assert result.exit_code == 2, result.output
    assert "do not serve the same model" in result.output
    assert f"{a.base_url} lists small.gguf" in result.output and f"{b.base_url} lists large.gguf" in result.output
    assert not (project / "results" / "mixed").exists()  # nothing half-written
    assert all(r.method == "GET" for r in a.requests + b.requests)  # no conversation began


@pytest.mark.slow
def test_servers_that_list_the_same_weights_or_nothing_run(servers, project: Path) -> None:
    a, b = servers
    a.default = b.default = lists({"id": "same.gguf", "meta": {"n_params": 135}})
    run("same", a.base_url, b.base_url)
    b.default = echo  # lists nothing: it cannot be compared, and is let be
    run("unlisted", a.base_url, b.base_url)
    assert sum(r.path.endswith("/models") for r in b.requests) == 2  # each run read each listing once


@pytest.mark.slow
def test_with_the_cache_each_listing_is_read_once(servers, project: Path) -> None:
    """The cache keys responses by what the first server lists: the listing read to check the
    servers is the one used, not read again."""
    a, b = servers
    a.default = b.default = lists({"id": "same.gguf", "meta": {"n_params": 135}})
    args = ["run", "memory-drift.yaml", "--model", "openai:m", "--live", "--quiet", "--run-id", "cached"]
    result = CliRunner().invoke(main, [*args, *POLICIES, "--base-url", a.base_url, "--base-url", b.base_url])
    assert result.exit_code == 0, result.output
    assert [sum(r.path.endswith("/models") for r in server.requests) for server in (a, b)] == [1, 1]


@pytest.mark.slow
def test_a_resume_keeps_the_servers_it_started_with(servers, project: Path) -> None:
    a, b = servers
    results = run("r", a.base_url, b.base_url)
    resumed = CliRunner().invoke(main, ["run", "--resume", str(results), "--base-url", a.base_url, "--quiet"])
    assert resumed.exit_code == 2 and "--base-url" in resumed.output


def test_a_conversation_takes_the_least_busy_server_and_gives_it_back() -> None:
    balancer = Balancer(["a", "b"])
    with conversation_scope() as first, conversation_scope() as second:
        assert (first.server_of(balancer), second.server_of(balancer)) == (0, 1)
        assert first.server_of(balancer) == 0  # the same server for the whole conversation
        with conversation_scope() as third:
            assert third.server_of(balancer) == 0  # equals: the lowest-numbered
            assert third.server == "a"
    assert balancer.take() == 0 and balancer.take() == 1  # every server given back
