"""`anthropic:NAME`: the Messages API through the official SDK, against the emulated API served on
127.0.0.1: the request as the API takes it, the reply, the usage as reported (unknown, never 0,
when it is missing), the shared retry rules, and the key never kept."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack

import pytest

pytest.importorskip("anthropic")  # the optional extra `anthropic`

from harness.base.errors import InputError, ModelError  # noqa: E402
from harness.base.messages import Message, ToolCall  # noqa: E402
from harness.emulate.anthropic import AnthropicEmulator, Faults  # noqa: E402
from harness.emulate.server import serve  # noqa: E402
from harness.models import CallRequest, ProviderRequest, Usage  # noqa: E402
from harness.models.anthropic import NOT_COMPACTED, AnthropicModel, parse_message  # noqa: E402
from harness.models.catalog import check_keys, check_model_name, open_anthropic  # noqa: E402
from harness.models.options import ModelOptions  # noqa: E402
from harness.models.redaction import Redactor  # noqa: E402
from tests.conftest import user  # noqa: E402
from tests.models.anthropic_served import KEY, Rewriting, echoing_key, without_usage  # noqa: E402

SYSTEM = Message("system", "You are an operations assistant.", origin="system")


def ask(model: AnthropicModel, *messages: Message, provider: ProviderRequest | None = None):
    return model.complete(CallRequest("answer", (SYSTEM, *messages), user(1, "q"), provider=provider))


def no_sleep(_: float) -> None:
    """Retries wait nothing in a test."""


def test_a_plain_answer_sends_system_apart_and_records_what_the_endpoint_said() -> None:
    emulator = Rewriting(lambda m: m)
    with serve(emulator) as url, AnthropicModel("reference", base_url=url) as model:
        done = ask(model, Message("user", "database=PostgreSQL"), Message("user", "Which database?"))
    headers, body = emulator.requests[0]
    assert body["system"] == SYSTEM.content and body["model"] == "reference" and body["max_tokens"] == 4096
    assert body["messages"] == [  # one user message: the API wants user and assistant to alternate
        {
            "role": "user",
            "content": [{"type": "text", "text": "database=PostgreSQL"}, {"type": "text", "text": "Which database?"}],
        }
    ]
    assert headers["authorization"] == "Bearer unused"  # a loopback endpoint with no key set: the placeholder
    assert "PostgreSQL" in done.text
    assert done.usage is not None and done.usage.prompt_tokens and done.usage.completion_tokens
    assert (done.usage.cached_input, done.usage.cache_write) == (0, 0)  # reported as 0: nothing cached
    assert done.finish_reason == "end_turn" and done.response_model == "reference"
    assert done.response_id and done.response_id.startswith("msg_emulated_")


def test_tool_calls_and_results_are_tool_use_and_tool_result_blocks() -> None:
    emulator = Rewriting(lambda m: m)
    call = Message("assistant", "", tool_calls=(ToolCall("t1", "read", '{"path": "a"}'),))
    result = Message("tool", "a says hello", tool_call_id="t1")
    with serve(emulator) as url, AnthropicModel("reference", base_url=url) as model:
        ask(model, Message("user", "Read a."), call, result, Message("user", "What did it say?"))
    messages = emulator.requests[0][1]["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}],
    }
    assert messages[2]["content"][0] == {"type": "tool_result", "tool_use_id": "t1", "content": "a says hello"}


def test_cache_figures_are_counted_in_the_prompt_and_kept_apart() -> None:
    def cached(message: dict) -> dict:
        usage = {
            "input_tokens": 10,
            "output_tokens": 3,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 7,
        }
        return {**message, "usage": usage}

    with serve(Rewriting(cached)) as url, AnthropicModel("reference", base_url=url) as model:
        done = ask(model, Message("user", "hi"))
    assert done.usage == Usage(117, 3, cached_input=100, cache_write=7)


def test_missing_usage_is_unknown_never_zero() -> None:
    with serve(Rewriting(without_usage)) as url, AnthropicModel("reference", base_url=url) as model:
        done = ask(model, Message("user", "hi"))
    assert done.usage is None and done.text


@pytest.mark.parametrize("faults", [Faults(rate_limited=2, retry_after=0), Faults(server_errors=2)], ids=["429", "500"])
def test_a_429_or_a_5xx_is_retried_within_bounds(faults: Faults) -> None:
    with serve(AnthropicEmulator(faults)) as url:
        with AnthropicModel("reference", base_url=url, max_retries=2, sleep=no_sleep) as model:
            assert ask(model, Message("user", "hi")).attempts == 3
        with AnthropicModel("reference", base_url=url, max_retries=0, sleep=no_sleep) as model:
            assert ask(model, Message("user", "hi")).attempts == 1  # the faults are spent


def test_a_fault_past_the_retries_fails_the_call_with_its_status_and_attempts() -> None:
    with serve(AnthropicEmulator(Faults(server_errors=5))) as url:
        with AnthropicModel("reference", base_url=url, max_retries=1, sleep=no_sleep) as model:
            with pytest.raises(ModelError) as failed:
                ask(model, Message("user", "hi"))
    assert failed.value.attempts == 2 and "HTTP 500" in str(failed.value) and "emulated fault" in str(failed.value)


def test_compaction_unavailable_answers_529_overloaded_and_is_retried_then_fails() -> None:
    on_demand = ProviderRequest("anthropic", {"compaction": {"type": "summarize"}}, ("compact-2026-09-04",))
    with serve(AnthropicEmulator(Faults(compaction_unavailable=True))) as url:
        with AnthropicModel("reference", base_url=url, max_retries=2, sleep=no_sleep) as model:
            with pytest.raises(ModelError) as failed:
                ask(model, Message("user", "hi"), provider=on_demand)
    assert (
        failed.value.attempts == 3 and "HTTP 529" in str(failed.value) and "compaction_unavailable" in str(failed.value)
    )


def test_a_requested_compaction_returns_the_blocks_readable_content_and_its_iterations_usage() -> None:
    on_demand = ProviderRequest("anthropic", {"compaction": {"type": "summarize"}}, ("compact-2026-09-04",))
    emulator = Rewriting(lambda m: m)
    with serve(emulator) as url, AnthropicModel("reference", base_url=url) as model:
        done = ask(model, Message("user", "database=PostgreSQL"), provider=on_demand)
    headers, body = emulator.requests[0]
    assert headers["anthropic-beta"] == "compact-2026-09-04" and body["compaction"] == {"type": "summarize"}
    assert done.finish_reason == "compaction" and "database=PostgreSQL" in done.text
    assert done.usage is not None and done.usage.prompt_tokens and done.usage.completion_tokens


def test_a_null_block_or_none_is_an_empty_reply_and_a_note_says_why() -> None:
    redactor = Redactor(None, "ANTHROPIC_API_KEY")
    base = {"id": "m", "model": "x", "stop_reason": "compaction", "usage": {"input_tokens": 5, "output_tokens": 0}}
    null = {**base, "content": [{"type": "compaction", "content": None}]}
    assert parse_message(json.dumps(null).encode(), redactor, compaction=True).text == ""
    answered = {**base, "stop_reason": "end_turn", "content": [{"type": "text", "text": "an answer"}]}
    reply = parse_message(json.dumps(answered).encode(), redactor, compaction=True)
    assert reply.text == "" and NOT_COMPACTED in reply.notes  # the server did not compact: nothing replaced


def test_the_key_is_sent_and_redacted_from_what_comes_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    emulator = Rewriting(echoing_key)
    with serve(emulator) as url, AnthropicModel("reference", base_url=url) as model:
        done = ask(model, Message("user", "hi"))
    assert emulator.requests[0][0]["authorization"] == f"Bearer {KEY}"  # as the SDK sends it
    assert KEY not in done.text and "[redacted:ANTHROPIC_API_KEY]" in done.text
    assert KEY not in json.dumps(model.describe())


def test_the_anthropic_api_needs_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(InputError, match="ANTHROPIC_API_KEY is not set.*Anthropic API"):
        AnthropicModel("claude-x")
    with pytest.raises(InputError, match="ANTHROPIC_API_KEY"):
        check_keys(("anthropic:claude-x",), ModelOptions())
    check_keys(("anthropic:claude-x",), ModelOptions(base_url="http://127.0.0.1:9"))  # a loopback needs none
    monkeypatch.setenv("MY_KEY", KEY)
    check_keys(("anthropic:claude-x",), ModelOptions(api_key_env="MY_KEY"))  # --api-key-env names another


def test_anthropic_name_is_a_model_name() -> None:
    check_model_name("anthropic:claude-sonnet-4-5")
    with pytest.raises(InputError, match="anthropic:NAME"):
        check_model_name("claude")


def test_without_the_extra_the_model_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "harness.models.anthropic", None)  # as if `anthropic` were not installed
    with ExitStack() as stack, pytest.raises(InputError, match=r"context-policy-harness\[anthropic\]"):
        open_anthropic("anthropic:claude-x", "http://127.0.0.1:9", ModelOptions(), stack)
