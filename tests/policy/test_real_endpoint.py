"""Which policies reach a real `openai:NAME` endpoint's Responses API, and how: only
`openai-compaction` and `openai-truncation` ask a Responses API route of their answer, and only
when their runner says the endpoint is real (`ProviderPolicy.reach`); their compaction goes to `responses/compact` and its item is never
read; a model that cannot reach a provider's API is refused at start."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from harness.base.errors import InputError
from harness.base.messages import Message
from harness.emulate.openai_wire import COMPACTION
from harness.emulate.sealing import seal
from harness.models import RESPONSES_ROUTES, CallRequest, Completion, ProviderRequest
from harness.policy.delegated import COMPACTION_ROLE, ProviderPolicy
from policies.openai_compaction import OpenAICompaction
from policies.openai_truncation import OpenAITruncation
from tests.conftest import BUILTIN_POLICIES, builtin_registry
from tests.policy.test_anthropic_compaction import TURNS
from tests.policy.test_policies import SYS

ROUTED = {"openai-compaction", "openai-truncation"}
SUMMARY = "database=PostgreSQL; never restart production during business hours"


class EndpointAux:
    """The seam as the runner gives it with `--model openai:NAME`: each call's route kept, its reply
    an item the emulator could read back (so a test sees the policy does not)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ProviderRequest | None]] = []

    def call(
        self,
        role: str,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None = None,
        reference: Callable[[CallRequest], str | Completion] | None = None,
        provider: ProviderRequest | None = None,
    ) -> str:
        self.calls.append((role, provider))
        return seal(SUMMARY, COMPACTION)


@pytest.mark.parametrize("name", sorted(BUILTIN_POLICIES))
def test_every_other_policy_answers_through_chat_completions_even_at_a_real_endpoint(name: str) -> None:
    policy = builtin_registry().create(builtin_registry().parse(name), SYS)
    asked = None
    if isinstance(policy, ProviderPolicy):  # as the runner asks it
        policy.reach(True)
        asked = policy.provider_request(TURNS[0], list(policy.view(TURNS[0])))
    route = asked if asked is not None and asked.api in RESPONSES_ROUTES else None
    assert (route is not None) == (name in ROUTED)
    if route is not None:
        assert route.api == "responses" and route.body["instructions"] == SYS.content


@pytest.mark.parametrize("policy", [OpenAICompaction(SYS), OpenAITruncation(SYS)])
def test_offline_the_routed_policies_answer_from_the_view_as_before(policy: Any) -> None:
    policy.reach(False)
    assert policy.provider_request(TURNS[0], list(policy.view(TURNS[0]))) is None


def test_at_a_real_endpoint_the_compaction_is_a_compact_call_and_its_item_is_never_read() -> None:
    policy = OpenAICompaction(SYS, compact_threshold=10)
    policy.reach(True)
    aux = EndpointAux()
    outcome = policy.after_answer(TURNS[0], "Noted.", aux)
    [(role, api)] = aux.calls
    assert role == COMPACTION_ROLE and api is not None and api.api == "responses/compact"
    assert api.body["instructions"] == SYS.content and api.body["input"][0]["role"] == "user"
    assert "encrypted item not counted" in outcome.trigger.how
    view = list(policy.view(TURNS[1]))
    assert [m.origin for m in view] == ["system", "opaque", "current"]
    assert "PostgreSQL" not in view[1].content  # readable to the emulator, never to the harness
    route = policy.provider_request(TURNS[1], view)
    assert route is not None and route.body["input"][0] == {
        "type": "compaction",
        "encrypted_content": policy.sealed[view[1]],
    }


def test_at_a_real_endpoint_truncation_sends_the_whole_request_and_makes_the_predicted_drops_unreadable() -> None:
    policy = OpenAITruncation(SYS, window=25)
    policy.reach(True)
    for turn in TURNS[:2]:
        policy.view(turn)
        policy.after_answer(turn, turn.assistant or "", EndpointAux())
    view = list(policy.view(TURNS[2]))
    assert [m.origin for m in view] == ["system", "opaque", "history", "history", "history", "current"]
    assert "may drop the 1 oldest messages" in policy.note  # the first turn's question, as the emulator would
    assert policy.count is not None and "a prediction" in policy.count.how
    route = policy.provider_request(TURNS[2], view)
    assert route is not None and route.body["truncation"] == "auto"
    assert [item["content"] for item in route.body["input"]] == [m.content for m in view[1:]]  # as sent, whole


@pytest.mark.parametrize(
    ("policy", "models", "says"),
    [
        ("openai-compaction", ["local"], "cannot reach it"),  # llama.cpp's server speaks chat completions only
        ("openai-truncation", ["openai:gpt-4o-mini", "reference"], "mix the offline emulator"),
        ("anthropic-compaction", ["openai:gpt-4o-mini"], "cannot reach it"),
        ("anthropic-context-editing", ["openai:gpt-4o-mini"], "cannot reach it"),
    ],
)
def test_a_model_that_cannot_reach_the_providers_api_is_refused(policy: str, models: list[str], says: str) -> None:
    registry = builtin_registry()
    with pytest.raises(InputError, match=says):
        registry.check_offline(models, [registry.parse(policy)])


@pytest.mark.parametrize("models", [["openai:gpt-4o-mini"], ["reference"], ["reference:lossy"]])
def test_the_openai_policies_run_offline_or_at_a_real_endpoint(models: list[str]) -> None:
    registry = builtin_registry()
    registry.check_offline(models, [registry.parse("openai-compaction"), registry.parse("openai-truncation")])
