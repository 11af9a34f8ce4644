"""The `openai:` client path, against a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from urllib.parse import quote, quote_plus

import pytest

from harness.base.errors import InputError, ModelError
from harness.base.messages import Message, ToolCall
from harness.models import CallRequest, Usage
from harness.models.openai import OpenAIModel, response_format, retry_after_seconds
from harness.run.judge import VERDICT_SCHEMA
from policies.bounded_facts import FACTS_SCHEMA, BoundedFacts, writer_messages
from tests.conftest import user
from tests.loopback import MISSING, Reply, ScriptedServer, chat_completion, error_body

KEY = "sk-loopback-test-KEY-7f3c9a2e"  # distinctive, so a leak is unmistakable
KEY_ENV = "HARNESS_TEST_API_KEY"
TURN = user(1, "module=Billing")
ANSWER = CallRequest("answer", (Message("system", "SYS"), Message("user", "Hello")), TURN)
WRITER = CallRequest("writer", writer_messages(TURN.user), TURN, FACTS_SCHEMA)
FACTS = '{"facts": [{"key": "module", "value": "Billing", "evidence": "module=Billing"}]}'


class Sleeps(list):
    """An injected `sleep` that records the delays instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """The scripted loopback server, stopped (its threads joined) when the test ends."""
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def model(server: ScriptedServer, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIModel]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with OpenAIModel(
        "test-model",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
        timeout=2,
        max_retries=2,
        seed=7,
        backoff_base=0.01,
        sleep=sleeps,
    ) as model:
        yield model


def failure(model: OpenAIModel, request: CallRequest = ANSWER) -> ModelError:
    with pytest.raises(ModelError) as caught:
        model.complete(request)
    assert KEY not in str(caught.value)
    return caught.value


# --- requests and usage ------------------------------------------------------------------


def test_a_call_sends_the_messages_and_the_key_from_the_named_variable(model, server) -> None:
    server.enqueue(Reply(body=chat_completion("Hi there.")))
    completion = model.complete(ANSWER)
    assert (completion.text, completion.attempts, model.name) == ("Hi there.", 1, "openai:test-model")
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["messages"] == [{"role": "system", "content": "SYS"}, {"role": "user", "content": "Hello"}]
    assert (request.body["model"], request.body["seed"], request.body["temperature"]) == ("test-model", 7, 0)
    assert not {"response_format", "max_tokens"} & request.body.keys() and not request.body.get("stream")


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}, Usage(12, 3)),
        ({"prompt_tokens": 12}, Usage(12, None)),  # a missing field stays unknown
        ({"completion_tokens": 0}, Usage(None, 0)),  # a reported 0 is kept as 0
        (  # the prompt cache's counts, beside the prompt's
            {"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 8}},
            Usage(12, 3, cached_input=8),
        ),
        (MISSING, None),  # no usage: unknown, never 0
        (None, None),
        ({}, None),
    ],
)
def test_usage_is_recorded_exactly_as_reported(model, server, usage, expected) -> None:
    server.enqueue(Reply(body=chat_completion("ok", usage=usage)))
    assert model.complete(ANSWER).usage == expected


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 10**30, "completion_tokens": 3}, Usage(None, 3, {"prompt_tokens": str(10**30)})),
        (
            {"prompt_tokens": -20, "completion_tokens": -1},
            Usage(None, None, {"prompt_tokens": "-20", "completion_tokens": "-1"}),
        ),
        ({"prompt_tokens": 12.0, "completion_tokens": 2}, Usage(None, 2, {"prompt_tokens": "12.0"})),
        (
            {"prompt_tokens": "12", "completion_tokens": True},
            Usage(None, None, {"prompt_tokens": '"12"', "completion_tokens": "true"}),
        ),
        ({"prompt_tokens": {"n": 1}}, Usage(None, None, {"prompt_tokens": '{"n": 1}'})),
        ("lots", Usage(None, None, {"usage": '"lots"'})),  # not even an object
        ({"prompt_tokens": 10**9, "completion_tokens": 0}, Usage(10**9, 0)),  # the largest sane count
        ({"prompt_tokens": 10**9 + 1}, Usage(None, None, {"prompt_tokens": str(10**9 + 1)})),
    ],
)
def test_usage_that_is_not_a_sane_count_is_unknown_and_kept_raw_as_invalid(model, server, usage, expected) -> None:
    server.enqueue(Reply(body=chat_completion("ok", usage=usage)))
    assert model.complete(ANSWER).usage == expected


def test_a_call_after_close_fails_as_a_model_error_and_sends_nothing(model, server) -> None:
    """A conversation thread still calling once the run has closed its models (a second Ctrl-C)
    gets an error the caller records, not a bare exception from a closed HTTP client."""
    server.enqueue(Reply(body=chat_completion("Hi there.")))
    model.complete(ANSWER)  # this thread now has an HTTP client of its own
    model.close()
    error = failure(model)
    assert "not sent: the model was closed" in str(error)
    assert len(server.requests) == 1


def test_max_tokens_is_sent_only_when_set(server) -> None:
    server.enqueue(Reply(body=chat_completion()))
    with OpenAIModel("m", base_url=server.base_url, max_tokens=64) as model:
        model.complete(ANSWER)
    assert server.requests[0].body["max_tokens"] == 64


# --- retries -----------------------------------------------------------------------------


def test_429_waits_for_retry_after_then_succeeds(model, server, sleeps) -> None:
    server.enqueue(Reply(429, {"Retry-After": "2"}, error_body("slow down", 429)), Reply(body=chat_completion("done")))
    completion = model.complete(ANSWER)
    assert (completion.text, completion.attempts, sleeps) == ("done", 2, [2.0])


def test_retry_after_is_capped(server, sleeps) -> None:
    server.enqueue(Reply(503, {"Retry-After": "3600"}), Reply(body=chat_completion()))
    with OpenAIModel("m", base_url=server.base_url, max_retry_after=5, sleep=sleeps) as model:
        assert model.complete(ANSWER).attempts == 2
    assert sleeps == [5]


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
    assert retry_after_seconds({"retry-after": "1.5"}, now) == 1.5
    assert retry_after_seconds({"retry-after": format_datetime(now + timedelta(seconds=30), usegmt=True)}, now) == 30
    assert retry_after_seconds({"retry-after": format_datetime(now - timedelta(seconds=30), usegmt=True)}, now) == 0
    assert retry_after_seconds({"retry-after-ms": "250"}, now) == 0.25
    assert retry_after_seconds({"retry-after": "soon"}, now) is None
    for not_a_time in ("nan", "inf", "1e999", "-inf"):
        assert retry_after_seconds({"retry-after": not_a_time, "retry-after-ms": not_a_time}, now) is None
    assert retry_after_seconds({}, now) is None


def test_repeated_500s_exhaust_the_retries_with_a_safe_message(model, server, sleeps) -> None:
    server.enqueue(*[Reply(500, body=error_body("the backend fell over"))] * 3)
    error = failure(model)
    assert error.attempts == 3 == len(server.requests)  # max_retries + 1
    assert "HTTP 500 Internal Server Error: the backend fell over" in str(error)
    assert len(sleeps) == 2 and all(0 < s <= 0.04 for s in sleeps)  # capped exponential backoff


def test_a_400_is_not_retried(model, server) -> None:
    server.enqueue(Reply(400, body=error_body("messages: bad role", 400)), Reply(body=chat_completion()))
    error = failure(model)
    assert error.attempts == 1 == len(server.requests)
    assert "HTTP 400 Bad Request: messages: bad role" in str(error)


def test_a_timeout_is_retried(server, sleeps) -> None:
    server.enqueue(Reply(body=chat_completion("late"), delay=3), Reply(body=chat_completion("on time")))
    with OpenAIModel("m", base_url=server.base_url, timeout=0.2, sleep=sleeps, backoff_base=0.01) as model:
        completion = model.complete(ANSWER)
    assert (completion.text, completion.attempts, len(sleeps)) == ("on time", 2, 1)


def test_timeouts_that_persist_say_so(server, sleeps) -> None:
    server.enqueue(*[Reply(body=chat_completion(), delay=3)] * 2)
    with OpenAIModel("m", base_url=server.base_url, timeout=0.2, max_retries=1, sleep=sleeps) as model:
        error = failure(model)
    assert error.attempts == 2 and "timed out: no complete response within 0.2s" in str(error)


@pytest.mark.slow  # waits out two 0.5 s deadlines
@pytest.mark.parametrize("head", [False, True], ids=["body drips", "status line and headers drip too"])
def test_a_dripping_reply_is_cut_at_the_deadline_of_each_attempt(server, sleeps, head) -> None:
    # One byte every 0.05 s: this ~250-byte reply takes ~12 s, and each read succeeds well within 0.5 s.
    server.default = Reply(body=chat_completion("slow"), drip=0.05, drip_head=head)
    with OpenAIModel("m", base_url=server.base_url, timeout=0.5, max_retries=1, sleep=sleeps) as model:
        started = time.monotonic()
        error = failure(model)
        elapsed = time.monotonic() - started
    assert error.attempts == 2 and "timed out: no complete response within 0.5s" in str(error)
    assert elapsed < 10  # two attempts of 0.5 s; the whole drip takes ~12 s per attempt: slack for a busy machine


def test_a_remote_endpoint_is_reached_through_the_environment_s_proxy_under_the_same_deadline(
    server, sleeps, monkeypatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.port}")  # the scripted server stands for the proxy
    server.enqueue(Reply(body=chat_completion("via the proxy")))
    server.default = Reply(body=chat_completion("slow"), drip=0.05, drip_head=True)
    # Never resolved: the proxy is asked for it.
    with OpenAIModel(
        "m", base_url="http://model.example.invalid/v1", timeout=0.5, max_retries=0, sleep=sleeps
    ) as model:
        assert model.complete(ANSWER).text == "via the proxy"
        started = time.monotonic()
        error = failure(model)
        assert time.monotonic() - started < 1.5
    assert server.requests[0].path == "http://model.example.invalid/v1/chat/completions"
    assert "timed out: no complete response within 0.5s" in str(error)


def test_a_slow_reply_that_ends_within_the_deadline_arrives(server) -> None:
    server.default = Reply(body=b'{"choices": [{"message": {"content": "in time"}}]}', drip=0.002)
    with OpenAIModel("m", base_url=server.base_url, timeout=5) as model:
        assert model.complete(ANSWER).text == "in time"


def test_a_retry_after_longer_than_the_timeout_waits_the_timeout_and_says_so(server, sleeps) -> None:
    server.enqueue(Reply(429, {"Retry-After": "3600"}), Reply(429, {"Retry-After": "1"}), Reply(body=chat_completion()))
    with OpenAIModel("m", base_url=server.base_url, timeout=2, sleep=sleeps) as model:
        completion = model.complete(ANSWER)
    assert sleeps == [2, 1] and completion.attempts == 3
    assert completion.notes == ("Retry-After 3600s capped to 2s (the timeout)",)


def test_a_capped_wait_is_named_in_the_error_of_a_call_that_fails(server, sleeps) -> None:
    server.default = Reply(503, {"Retry-After": "3600"}, error_body("overloaded", 503))
    with OpenAIModel("m", base_url=server.base_url, timeout=2, max_retries=1, sleep=sleeps) as model:
        error = failure(model)
    assert sleeps == [2] and "Retry-After 3600s capped to 2s (the timeout)" in str(error)


def test_a_refused_connection_is_retried_then_reported() -> None:
    with socket.socket() as probe:  # a loopback port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, sleep=Sleeps()) as model:
        error = failure(model)
    assert error.attempts == 2 and "connection failed" in str(error)


# --- malformed bodies --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("<html>gateway</html>", "the body is not JSON (starts with '<html>gateway</html>')"),
        ({"id": "x", "object": "chat.completion"}, "no choices"),
        ({"choices": []}, "no choices"),
        ({"choices": [{"index": 0}]}, "choices[0] has no message"),
        (chat_completion(None), "choices[0].message has no text content"),
        (chat_completion(None, refusal="I cannot help with that."), "the model refused: I cannot help with that."),
        ("[" * 100_000 + "]" * 100_000, "the body's JSON is nested too deeply to read"),  # was a RecursionError
    ],
)
def test_a_malformed_body_is_a_clear_error_and_not_retried(model, server, body, says) -> None:
    server.enqueue(Reply(body=body), Reply(body=chat_completion()))
    error = failure(model)
    assert says in str(error) and error.attempts == 1


DEEP = "[" * 900 + "]" * 900  # readable JSON, deeper than the interpreter's recursion allows to walk


def test_a_deeply_nested_field_beside_the_answer_is_not_kept_and_breaks_nothing(model, server) -> None:
    server.enqueue(Reply(body='{"choices": [{"message": {"content": "fine"}}], "extra": ' + DEEP + "}"))
    assert model.complete(ANSWER).text == "fine"


def test_a_deeply_nested_error_body_is_an_error_like_any_other(model, server) -> None:
    server.enqueue(Reply(400, body=DEEP))
    assert "HTTP 400 Bad Request: [[[" in str(failure(model))


def test_a_malformed_5xx_is_retried(model, server) -> None:
    server.enqueue(Reply(502, body="<html>bad gateway</html>"), Reply(body=chat_completion("ok")))
    assert model.complete(ANSWER).attempts == 2


# --- structured output, for any request with a schema (the writer's here) -----------------


def formats(server: ScriptedServer) -> list[str | None]:
    return [(b.get("response_format") or {}).get("type") for b in server.bodies()]


def test_the_writer_asks_for_a_strict_json_schema_without_a_key_enum(model, server) -> None:
    server.enqueue(Reply(body=chat_completion(FACTS)))
    assert model.complete(WRITER).text == FACTS
    assert server.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "writer", "schema": FACTS_SCHEMA, "strict": True},
    }
    item = FACTS_SCHEMA["properties"]["facts"]["items"]
    assert item["properties"]["key"] == {"type": "string"} and item["additionalProperties"] is False
    assert model.structured_format == "json_schema"


def test_a_refused_json_schema_falls_back_to_json_object_and_remembers_it(model, server, sleeps) -> None:
    server.enqueue(
        Reply(500, body=error_body("json_schema not supported")),  # llama.cpp's answer
        Reply(body=chat_completion(FACTS)),
        Reply(body=chat_completion(FACTS)),
    )
    first, second = model.complete(WRITER), model.complete(WRITER)
    assert (first.attempts, second.attempts, sleeps) == (2, 1, [])  # a refusal is not retried
    assert formats(server) == ["json_schema", "json_object", "json_object"]
    assert server.requests[1].body["response_format"] == {"type": "json_object", "schema": FACTS_SCHEMA}
    assert model.structured_format == "json_object"


def test_when_both_forms_are_refused_the_call_fails_with_the_endpoint_reasons(model, server) -> None:
    server.enqueue(
        Reply(400, body=error_body("unknown response_format json_schema", 400)),
        Reply(400, body=error_body("response_format not supported", 400)),
    )
    error = failure(model, WRITER)
    assert error.attempts == 2
    assert "json_schema: HTTP 400 Bad Request: unknown response_format json_schema" in str(error)
    assert "json_object: HTTP 400 Bad Request: response_format not supported" in str(error)
    assert "not guessed" in str(error) and model.structured_format is None


def test_a_transient_failure_does_not_change_the_remembered_form(model, server) -> None:
    server.enqueue(Reply(body=chat_completion(FACTS)), Reply(500), Reply(body=chat_completion(FACTS)))
    model.complete(WRITER)
    assert model.complete(WRITER).attempts == 2  # once the form is known, a 500 is retried
    assert formats(server) == ["json_schema"] * 3


def test_a_request_without_a_schema_asks_for_no_structured_output(model, server) -> None:
    server.enqueue(Reply(body=chat_completion("plain")))
    model.complete(CallRequest("summarizer", (Message("user", "summarize"),), TURN))
    assert formats(server) == [None] and model.structured_format is None


@pytest.mark.parametrize(
    ("role", "schema", "name"),
    [("judge", VERDICT_SCHEMA, "judge"), ("note taker/v2", {"type": "object"}, "note_taker_v2")],
)
def test_any_role_with_a_schema_takes_the_same_path_named_after_its_role(model, server, role, schema, name) -> None:
    server.enqueue(Reply(500, body=error_body("json_schema not supported")), Reply(body=chat_completion("{}")))
    model.complete(CallRequest(role, (Message("user", "x"),), TURN, schema))
    assert server.requests[0].body["response_format"]["json_schema"]["name"] == name
    assert server.requests[1].body["response_format"] == response_format("json_object", role, schema)
    assert model.structured_format == "json_object"


class ModelAux:
    """The policies' AuxCalls, calling the model directly (the runner records calls; not needed here)."""

    def __init__(self, model: OpenAIModel) -> None:
        self.model = model

    def call(self, role, messages, schema=None, reference=None) -> str:
        return self.model.complete(CallRequest(role, tuple(messages), TURN, schema, reference)).text


def admission(model: OpenAIModel) -> dict:
    policy = BoundedFacts(None)
    policy.view(TURN)
    return policy.after_answer(TURN, "Noted.", ModelAux(model)).facts["admission"]


def test_a_schema_valid_reply_with_a_wrong_association_is_rejected_by_the_host(model, server) -> None:
    wrong = '{"facts": [{"key": "database", "value": "Billing", "evidence": "module=Billing"}]}'
    server.enqueue(Reply(body=chat_completion(wrong)))
    result = admission(model)
    assert result["status"] == "rejected"
    assert "wrong association" in result["reason"] and "no fallback applied" in result["reason"]


def test_an_unknown_key_reaches_the_host_and_is_rejected(model, server) -> None:
    unknown = '{"facts": [{"key": "modul", "value": "Billing", "evidence": "module=Billing"}]}'
    server.enqueue(Reply(body=chat_completion(unknown)))
    assert "unknown key 'modul'" in admission(model)["reason"]


def test_a_correct_reply_is_admitted(model, server) -> None:
    server.enqueue(Reply(body=chat_completion(FACTS)))
    assert admission(model)["status"] == "accepted"


def test_an_endpoint_refusing_structured_output_rejects_the_extraction(model, server) -> None:
    server.enqueue(Reply(500, body=error_body("no json_schema")), Reply(500, body=error_body("no grammar")))
    result = admission(model)
    assert result["status"] == "rejected" and result["reason"].startswith("writer call failed: ")
    assert "no json_schema" in result["reason"] and "no grammar" in result["reason"]


# --- the key -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        Reply(401, body=error_body(f"Incorrect API key provided: {KEY}", 401)),  # as OpenAI echoes it
        Reply(500, body=f"proxy failed for Authorization: Bearer {KEY}"),
        Reply(body=f"not json {KEY}"),
    ],
)
def test_the_key_never_appears_in_an_error_message(model, server, reply) -> None:
    server.default = reply
    error = failure(model)  # asserts the key is absent
    assert f"[redacted:{KEY_ENV}]" in str(error)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    "reply",
    [
        Reply(500, body=error_body("x" * 285 + f" {KEY} rest")),  # the key straddles the 300-character cut
        Reply(body=("y" * 70 + KEY).encode()),  # not JSON: quoted from its first 80 bytes
        Reply(body=chat_completion(None, refusal="r" * 285 + KEY)),
    ],
)
def test_no_part_of_the_key_survives_a_shortened_reason(model, server, reply) -> None:
    server.default = reply
    assert KEY[:10] not in str(failure(model))


def test_no_part_of_a_long_escaped_key_survives_the_quote_of_a_body_that_is_not_json(server, monkeypatch) -> None:
    """An escaped key is six times its length: a second echo cut by the quoted window must not show."""
    key = "sk-proj-" + "Ab0" * 52
    escaped = "".join(f"\\u{ord(c):04x}" for c in key)
    monkeypatch.setenv(KEY_ENV, key)
    server.default = Reply(body=escaped * 2)
    with OpenAIModel("m", base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0) as model:
        error = str(failure(model))
    assert "u0073" not in error and f"[redacted:{KEY_ENV}]" in error, error  # quoted by repr: \\u0073


def echo_authorization(request) -> dict:
    return chat_completion(f"You sent {request.headers['authorization']}; key={KEY}.")


def test_a_key_echoed_in_a_successful_answer_is_redacted(model, server) -> None:
    server.default = Reply(body=echo_authorization)
    assert model.complete(ANSWER).text == f"You sent Bearer [redacted:{KEY_ENV}]; key=[redacted:{KEY_ENV}]."


# The Authorization header as endpoints and proxies have been seen to give it back.
HEADER_ECHOES = {
    "percent-encoded": lambda header: quote(header, safe=""),
    "form-encoded": quote_plus,
    "upper case": str.upper,
    "lower case": str.lower,
    "base64": lambda header: base64.b64encode(header.encode()).decode(),
    "base64 of the key alone": lambda header: base64.b64encode(header.split()[1].encode()).decode(),
    "wrapped at 16 characters": lambda header: "\n".join(header[i : i + 16] for i in range(0, len(header), 16)),
    "JSON-escaped twice": lambda header: "".join(f"\\u{ord(c):04x}" for c in header),
}


@pytest.mark.parametrize("echo", HEADER_ECHOES.values(), ids=HEADER_ECHOES.keys())
def test_a_key_echoed_in_another_form_is_redacted_in_answers_and_errors(model, server, echo) -> None:
    server.enqueue(Reply(body=lambda r: chat_completion(f"You sent {echo(r.headers['authorization'])}.")))
    text = model.complete(ANSWER).text
    assert f"[redacted:{KEY_ENV}]" in text and KEY[8:20].lower() not in text.lower(), text
    server.default = Reply(401, body=lambda r: error_body(f"rejected {echo(r.headers['authorization'])}", 401))
    error = str(failure(model))
    assert f"[redacted:{KEY_ENV}]" in error and KEY[8:20].lower() not in error.lower(), error


def test_a_short_key_is_redacted_only_as_a_whole_word(server, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, "local")  # a local server's token: "locally" must stay readable
    server.default = Reply(body=lambda r: chat_completion(f"locally, {r.headers['authorization']}"))
    with OpenAIModel("m", base_url=server.base_url, api_key_env=KEY_ENV) as model:
        assert model.complete(ANSWER).text == f"locally, Bearer [redacted:{KEY_ENV}]"


@pytest.mark.parametrize(
    "url",
    [
        "http://user:secret@127.0.0.1:9/v1",
        "http://secret@127.0.0.1:9/v1",
        "https://u:secret@api.example.com/v1",
        "http://127.0.0.1:9/v1?api_key=secret",
        "http://127.0.0.1:9/v1?api-version=1&Access_Token=secret",
    ],
)
def test_credentials_in_the_base_url_are_refused_without_repeating_them(url, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    with pytest.raises(InputError, match="carries credentials") as caught:
        OpenAIModel("m", base_url=url, api_key_env=KEY_ENV)
    assert "secret" not in str(caught.value) and "--api-key-env" in str(caught.value)


def test_credentials_in_openai_base_url_are_refused_too(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:secret@127.0.0.1:9/v1")  # the openai package reads it
    with pytest.raises(InputError, match="OPENAI_BASE_URL.*carries credentials") as caught:
        OpenAIModel("m")
    assert "secret" not in str(caught.value)


def test_a_missing_key_is_an_input_error_naming_the_variable() -> None:
    with pytest.raises(InputError, match="HARNESS_TEST_API_KEY is not set"):
        OpenAIModel("gpt-4o-mini", api_key_env=KEY_ENV)  # the library's default endpoint: refused before any call


def test_a_server_needs_no_key(server) -> None:
    server.enqueue(Reply(body=chat_completion()))
    with OpenAIModel("m", base_url=server.base_url, api_key_env=KEY_ENV) as model:
        model.complete(ANSWER)
    assert server.requests[0].headers["authorization"] == "Bearer unused"


@pytest.mark.parametrize(
    ("key", "says"),
    [
        (KEY[:8] + "\u200d" + KEY[8:], "an invisible character (ZERO WIDTH JOINER, U+200D) at character 9"),
        (KEY + "\n", "a line feed (U+000A) at character 30 of 30, its end"),
    ],
)
def test_a_key_a_header_cannot_carry_is_refused_at_setup_not_at_each_call(server, monkeypatch, key, says) -> None:
    """A zero-width character made the HTTP client raise at the first call; a trailing line feed
    failed every call as a connection error. Neither is sent: setup says which variable to fix."""
    monkeypatch.setenv(KEY_ENV, key)
    with pytest.raises(InputError, match=KEY_ENV) as caught:
        OpenAIModel("m", base_url=server.base_url, api_key_env=KEY_ENV)
    assert says in str(caught.value) and KEY[3:12] not in str(caught.value)
    assert server.requests == []


def test_describe_holds_no_secret(model) -> None:
    assert KEY not in str(model.describe()) and model.describe()["api_key_env"] == KEY_ENV


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"model": " "}, "model name is empty"),
        ({"base_url": "localhost:8080"}, "expected an http"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"timeout": float("inf")}, "timeout"),
        ({"max_retries": -1}, "max retries"),
        ({"max_response_bytes": 0}, "max response bytes"),
    ],
)
def test_bad_options_are_input_errors(options, says) -> None:
    with pytest.raises(InputError, match=says):
        OpenAIModel(**{"model": "m", "base_url": "http://127.0.0.1:9/v1", **options})


# --- redirects -----------------------------------------------------------------------------


def origin(server: ScriptedServer) -> str:
    return f"http://127.0.0.1:{server.port}"


@pytest.mark.parametrize("status", [307, 308, 302, 301])
def test_a_redirect_to_another_origin_is_refused_naming_both(model, server, status) -> None:
    """A 307 to another port re-posted the conversation there and recorded the answer as the
    configured endpoint's. It is a final failure: nothing reaches the other origin."""
    with ScriptedServer() as elsewhere:
        elsewhere.default = Reply(body=chat_completion("answered elsewhere"))
        server.default = Reply(status, {"Location": f"{elsewhere.base_url}/chat/completions"})
        error = str(failure(model))
        assert elsewhere.requests == [] and len(server.requests) == 1
    assert f"redirected to another origin, {origin(elsewhere)}" in error and origin(server) in error
    assert "--base-url" in error and "(1 attempt)" in error


def test_a_redirect_to_another_host_name_of_this_machine_is_another_origin(model, server) -> None:
    server.default = Reply(307, {"Location": f"http://localhost:{server.port}/v1/chat/completions"})
    assert f"redirected to another origin, http://localhost:{server.port}" in str(failure(model))


def test_a_redirect_within_the_origin_is_followed(model, server) -> None:
    server.enqueue(Reply(307, {"Location": "/v2/chat/completions"}), Reply(body=chat_completion("moved")))
    assert model.complete(ANSWER).text == "moved"
    assert [r.path for r in server.requests] == ["/v1/chat/completions", "/v2/chat/completions"]
    assert server.requests[1].body == server.requests[0].body  # a 307 keeps the method and the body


def test_the_listing_is_not_read_from_another_origin(model, server) -> None:
    with ScriptedServer() as elsewhere:
        elsewhere.default = Reply(body={"object": "list", "data": [{"id": "other"}]})
        server.default = Reply(302, {"Location": f"{elsewhere.base_url}/models"})
        assert model.listed() is None and elsewhere.requests == []


# --- concurrency -------------------------------------------------------------------------


def echo(request) -> dict:
    return chat_completion(f"echo: {request.body['messages'][-1]['content']}")


def run_threads(count: int, call) -> list:
    results: list = [None] * count

    def work(i: int) -> None:
        results[i] = call(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(t.is_alive() for t in threads)
    return results


def test_one_model_serves_several_threads_at_once(model, server) -> None:
    server.default = Reply(body=echo, delay=5, gate=4)  # released once all 4 have arrived
    asks = [CallRequest("answer", (Message("user", f"question {i}"),), TURN) for i in range(4)]
    texts = run_threads(4, lambda i: model.complete(asks[i]).text)
    assert texts == [f"echo: question {i}" for i in range(4)]
    assert server.max_in_flight == 4


def test_concurrent_writers_agree_on_the_structured_output_form(model, server) -> None:
    def llama_cpp_like(request) -> Reply:
        if request.body["response_format"]["type"] == "json_schema":  # held until all 4 negotiate
            return Reply(500, body=error_body("json_schema unsupported"), delay=5, gate=4)
        return Reply(body=chat_completion(FACTS))

    server.default = llama_cpp_like
    results = run_threads(4, lambda i: model.complete(WRITER))
    assert [r.attempts for r in results] == [2] * 4 and model.structured_format == "json_object"
    assert model.complete(WRITER).attempts == 1
    assert formats(server) == ["json_schema"] * 4 + ["json_object"] * 5


# --- sampling, caps and what the endpoint said (issue 15) ----------------------------------


def test_each_call_kind_sends_its_own_cap_and_the_sampling_settings(server) -> None:
    server.enqueue(Reply(body=chat_completion()), Reply(body=chat_completion(FACTS)), Reply(body=chat_completion()))
    caps = {"answer": 500, "writer": 300}
    with OpenAIModel("m", base_url=server.base_url, max_tokens=caps, temperature=0.3, top_p=0.9, seed=5) as model:
        model.complete(ANSWER)
        model.complete(WRITER)
        model.complete(CallRequest("note-taker", ANSWER.messages, TURN))  # a role not listed: the answer's cap
    sent = [(b["max_tokens"], b["temperature"], b["top_p"], b["seed"]) for b in server.bodies()]
    assert sent == [(500, 0.3, 0.9, 5), (300, 0.3, 0.9, 5), (500, 0.3, 0.9, 5)]


def test_the_response_model_fingerprint_finish_reason_and_id_are_kept(model, server) -> None:
    body = chat_completion("cut sh", model="served-name") | {"system_fingerprint": "fp_1", "id": "chatcmpl-9"}
    body["model"] = "served-name"
    body["choices"][0]["finish_reason"] = "length"
    server.enqueue(Reply(body=body))
    done = model.complete(ANSWER)
    assert (done.response_model, done.fingerprint, done.finish_reason, done.response_id) == (
        "served-name",
        "fp_1",
        "length",
        "chatcmpl-9",
    )
    assert done.structured_form is None and done.format_refusals == 0


def test_a_refused_form_is_counted_apart_from_retries(model, server) -> None:
    server.enqueue(Reply(500, body=error_body("json_schema not supported")), Reply(body=chat_completion(FACTS)))
    done = model.complete(WRITER)
    assert (done.attempts, done.format_refusals, done.structured_form) == (2, 1, "json_object")


def test_any_base_url_needs_no_key_and_is_built_without_a_request(monkeypatch) -> None:
    # Built only: nothing is sent, so a LAN-style address is safe to name here.
    with OpenAIModel("m", base_url="http://192.168.1.50:8080/v1", api_key_env=KEY_ENV) as model:
        assert model.describe()["key_set"] is False


def test_a_keyless_endpoint_on_another_loopback_address_answers(monkeypatch) -> None:
    with ScriptedServer(host="127.0.0.2") as other:
        other.enqueue(Reply(body=chat_completion("lan")))
        with OpenAIModel("m", base_url=other.base_url, api_key_env=KEY_ENV) as model:
            assert model.complete(ANSWER).text == "lan"
        assert other.base_url.startswith("http://127.0.0.2:")


def test_a_401_from_a_keyless_endpoint_names_the_variable_to_set(server) -> None:
    server.enqueue(Reply(401, body=error_body("invalid api key", 401)))
    with OpenAIModel("m", base_url=server.base_url, api_key_env=KEY_ENV) as model:
        error = failure(model)
    assert "HTTP 401" in str(error) and f"set the environment variable {KEY_ENV}" in str(error)


def test_a_listing_is_read_once_and_never_retried(server) -> None:
    server.default = Reply(body={"object": "list", "data": [{"id": "m", "object": "model", "created": 1}]})
    with OpenAIModel("m", base_url=server.base_url) as model:
        assert model.listed() == {"object": "list", "data": [{"id": "m", "object": "model", "created": 1}]}
        assert model.listing() is not None
    assert [r.path for r in server.requests] == ["/v1/models", "/v1/models"]  # one request each


# --- text that is not valid Unicode, or drives a terminal -------------------------------------

LONE = (
    '{"choices": [{"finish_reason": "stop", "message": {"content": "half \\ud800 and \\udfff"}}], "model": "m\\ud800"}'
)


@pytest.mark.parametrize(
    "body",
    [
        LONE,  # JSON escapes of lone surrogates
        '{"choices": [{"message": {"content": "half \xed\xa0\x80 and \xed\xbf\xbf"}}], "model": "m\xed\xa0\x80"}'.encode(
            "latin-1"
        ),  # the same halves as raw (CESU-style) bytes
    ],
)
def test_lone_surrogates_in_a_reply_become_replacement_characters_and_a_note(model, server, body) -> None:
    server.enqueue(Reply(body=body))
    completion = model.complete(ANSWER)
    assert completion.text == "half \ufffd and \ufffd" and completion.response_model == "m\\ud800"
    assert completion.notes == (
        "the endpoint's reply held 2 lone surrogates (halves of UTF-16 pairs: not valid Unicode); "
        "each was replaced by U+FFFD",
    )


def test_a_surrogate_pair_in_halves_is_the_character_it_encodes(model, server) -> None:
    server.enqueue(Reply(body='{"choices": [{"message": {"content": "\\ud83d\\ude00"}}]}'))
    assert model.complete(ANSWER).text == "😀"


def test_invalid_usage_with_a_lone_surrogate_is_kept_valid(model, server) -> None:
    server.enqueue(Reply(body='{"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": "\\ud800"}}'))
    completion = model.complete(ANSWER)
    assert completion.usage == Usage(None, None, {"prompt_tokens": '"\ufffd"'})
    assert "1 lone surrogate " in completion.notes[0]


def test_an_error_reason_is_quoted_as_valid_text_with_its_controls_shown(model, server) -> None:
    server.enqueue(Reply(400, body='{"error": {"message": "bad \\ud800 \\u001b]52;c;aGk=\\u0007 \\u001b[2J"}}'))
    error = str(failure(model))
    assert "HTTP 400 Bad Request: bad \\ud800 \\x1b]52;c;aGk=\\x07 \\x1b[2J" in error
    error.encode("utf-8")


# --- bounded bytes -----------------------------------------------------------------------

CAP = 64 * 1024  # a test's cap; the bodies below inflate or run to a hundred times as much


def gzip_reply(body: object, status: int = 200) -> Reply:
    """`body` as JSON, gzipped, as an endpoint may send it whatever it was asked."""
    return Reply(status, {"Content-Encoding": "gzip"}, gzip.compress(json.dumps(body).encode()))


@pytest.mark.parametrize(
    "reply",
    [
        gzip_reply(chat_completion("0" * (8 << 20))),  # a few kilobytes inflating to 8 MiB
        gzip_reply(error_body("0" * (8 << 20)), 500),  # an error body: 500 is retried, this is not
        Reply(chunks=itertools.repeat(b"0" * 4096, 2048)),  # a chunked body of 8 MiB, no length given
    ],
    ids=["gzip-answer", "gzip-error", "chunked"],
)
def test_a_response_past_the_byte_cap_fails_the_call_and_is_never_retried(server, sleeps, reply) -> None:
    server.enqueue(reply)
    with OpenAIModel("m", base_url=server.base_url, max_retries=3, max_response_bytes=CAP, sleep=sleeps) as model:
        error = failure(model)
    assert f"response too large: the body ran past {CAP:,} bytes (decoded)" in str(error)
    assert "raise --max-response-bytes" in str(error)
    assert error.attempts == 1 == len(server.requests) and sleeps == []


def test_a_gzipped_answer_within_the_cap_is_read(server) -> None:
    server.enqueue(gzip_reply(chat_completion("0" * 1000)))
    with OpenAIModel("m", base_url=server.base_url, max_response_bytes=CAP) as model:
        assert model.complete(ANSWER).text == "0" * 1000
        assert model.describe()["max_response_bytes"] == CAP


def test_a_listing_past_the_byte_cap_is_no_listing(server) -> None:
    listing = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "0" * (8 << 20)}]}
    server.default = gzip_reply(listing)
    with OpenAIModel("m", base_url=server.base_url, max_response_bytes=CAP) as model:
        assert model.listed() is None and model.listing() is None
    assert len(server.requests) == 2  # one request each, never retried


# --- tool steps ------------------------------------------------------------------------------

STEP_CALL = Message("assistant", "", tool_calls=(ToolCall("call_1", "read_file", '{"path": "a.py"}'),))
STEP_RESULT = Message("tool", "print(1)", tool_call_id="call_1")


def test_a_tool_step_is_sent_in_the_wire_format(model: OpenAIModel, server: ScriptedServer) -> None:
    server.enqueue(Reply(body=chat_completion("It prints 1.")))
    messages = (Message("user", "Read a.py."), STEP_CALL, STEP_RESULT)
    assert model.complete(CallRequest("answer", messages, TURN)).text == "It prints 1."
    sent = server.requests[0].body["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
        ],
    }
    assert sent[2] == {"role": "tool", "content": "print(1)", "tool_call_id": "call_1"}


@pytest.mark.parametrize(
    "messages, said",
    [
        ((Message("user", "Read a.py."), STEP_RESULT), "must be a response to a preceeding message with 'tool_calls'"),
        ((Message("user", "Read a.py."), STEP_CALL), "did not have response messages: call_1"),
    ],
    ids=["orphan result", "unanswered call"],
)
def test_an_unpaired_tool_message_is_refused_with_400_and_not_retried(
    model: OpenAIModel, server: ScriptedServer, messages: tuple[Message, ...], said: str
) -> None:
    error = failure(model, CallRequest("answer", messages, TURN))
    assert "400" in str(error) and said in str(error)
    assert len(server.requests) == 1 and server.refused == 1


LONG = "9" * 5_000  # more digits than Python converts (4,300): `json.loads` raised a ValueError


def test_a_usage_figure_of_thousands_of_digits_is_unknown_and_the_answer_kept(model, server) -> None:
    """Before, the whole body was "not JSON" and a good answer lost for one absurd figure."""
    body = json.dumps(chat_completion("fine", usage={"prompt_tokens": 0, "completion_tokens": 2}))
    server.enqueue(Reply(body=body.replace('"prompt_tokens": 0', f'"prompt_tokens": {LONG}')))
    completion = model.complete(ANSWER)
    assert completion.text == "fine"
    assert completion.usage == Usage(None, 2, {"prompt_tokens": LONG[:99] + "…"})
