"""What a token trigger counts with (`counter`): the rules of each counter, and each built-in
policy's trigger under each, fired or held back when the count is unknown or unavailable."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from harness.base.messages import Message
from harness.policy import PolicyRegistry
from harness.policy.contract import AnswerUsage
from harness.policy.counters import COUNTER_PARAM, COUNTERS, TriggerCounter
from harness.policy.tokens import TokenCounter
from policies.clear_tool_uses import PLACEHOLDER, ClearToolUses
from policies.compaction_pipeline import CompactionPipeline
from policies.summary_buffer import SummaryBuffer
from policies.token_budget import TokenBudget
from policies.tool_result_compaction import ToolResultCompaction
from tests.conftest import user
from tests.policy.test_policies import SYS, FakeAux
from tests.policy.test_tool_result_compaction import step

MESSAGES = [Message("system", "You are terse."), Message("user", "What is the capital of Portugal?")]
NO_ENCODING = "no_such_encoding"


class UsageAux(FakeAux):
    """The seam as the runner gives it: scripted summaries, and the turn's answer call's usage."""

    def __init__(self, usage: AnswerUsage | None) -> None:
        super().__init__(summaries=["summary"] * 20)
        self.answer_usage = usage


def reported(prompt: int | None, completion: int | None = 0, request_chars: int = 0, answer_chars: int = 0):
    return lambda number: AnswerUsage(number, prompt, completion, request_chars, answer_chars)


def chars(messages: list[Message]) -> int:
    return sum(len(m.text) for m in messages)


# --- the counters ------------------------------------------------------------------------------


def test_local_is_the_default_and_counts_as_the_harness_counted_before_the_parameter() -> None:
    assert COUNTER_PARAM.default == "local" and COUNTER_PARAM.choices == COUNTERS
    count = TriggerCounter().count("main", MESSAGES)
    assert (count.counter, count.tokens, count.status) == (
        "tiktoken",
        TokenCounter().budget_count(MESSAGES).tokens,
        "counted",
    )
    assert count.how == "tiktoken cl100k_base"


def test_local_without_the_encoding_counts_the_estimate_and_says_so() -> None:
    count = TriggerCounter("local", TokenCounter(NO_ENCODING)).count("main", MESSAGES)
    assert (count.counter, count.tokens) == ("estimate", math.ceil(chars(MESSAGES) / 4))
    assert count.how == f"characters/4 estimate ({NO_ENCODING} unavailable offline)"


def test_tiktoken_without_the_encoding_is_unavailable_never_an_estimate_and_never_fires() -> None:
    count = TriggerCounter("tiktoken", TokenCounter(NO_ENCODING)).count("main", MESSAGES)
    assert (count.counter, count.tokens, count.status) == ("tiktoken", None, "unavailable")
    assert not count.exceeds(0)
    assert count.describe() == f"unavailable ({NO_ENCODING} cannot be loaded offline; did not fire)"


def test_estimate_is_characters_over_four_rounded_up_even_with_the_encoding() -> None:
    count = TriggerCounter("estimate").count("main", MESSAGES)
    assert (count.counter, count.tokens) == ("estimate", math.ceil(chars(MESSAGES) / 4))


def test_provider_is_unknown_before_any_answer_call_of_the_session() -> None:
    count = TriggerCounter("provider").count("main", MESSAGES)
    assert (count.counter, count.tokens, count.status) == ("provider", None, "unknown")
    assert "no earlier answer call in this session; did not fire" in count.how


@pytest.mark.parametrize(
    "aux, why",
    [
        (FakeAux(), "turn 3 made no answer call (scripted reply)"),  # an AuxCalls without answer_usage
        (UsageAux(None), "turn 3 made no answer call (scripted reply)"),
        (UsageAux(AnswerUsage(3, None, None, 10, 2)), "the answer call at turn 3 reported no usage"),
        (UsageAux(AnswerUsage(3, 90, None, 10, 2)), "the answer call at turn 3 reported no usage"),
    ],
)
def test_provider_is_unknown_after_a_turn_without_reported_usage(aux: FakeAux, why: str) -> None:
    counter = TriggerCounter("provider")
    counter.learn(user(3, "u3"), aux)
    count = counter.count("main", MESSAGES)
    assert (count.tokens, count.status) == (None, "unknown") and count.how == f"{why}; did not fire"


def test_provider_is_the_reported_input_and_output_plus_the_estimate_of_what_changed_since() -> None:
    counter = TriggerCounter("provider")
    counter.learn(user(2, "u2"), UsageAux(AnswerUsage(2, 1000, 40, request_chars=30, answer_chars=10)))
    grown = counter.of("main", chars=40 + 400, local_tokens=0)  # 400 characters added since
    shrunk = counter.of("main", chars=40 - 8, local_tokens=0)  # 8 characters removed since
    assert (grown.counter, grown.tokens, shrunk.tokens) == ("provider", 1040 + 100, 1040 - 2)
    assert grown.how == "provider reported 1040 at turn 2 + characters/4 estimate of 400 characters changed since"
    assert counter.count("other", MESSAGES).status == "unknown"  # another session's calls measured another view


# --- each policy's trigger under each counter ----------------------------------------------------


def steps(number: int) -> tuple:
    return (step(f"c{number}.1", content="word " * 80),)


POLICIES: dict[str, tuple[Callable[[str], Any], Callable[[Any, list[Message]], bool]]] = {
    # (a policy whose token trigger fires on any known count, whether it fired at the last turn)
    "clear-tool-uses": (
        lambda counter: ClearToolUses(SYS, trigger=0, keep=0, counter=counter),
        lambda policy, view: PLACEHOLDER in [m.content for m in view],
    ),
    "token-budget": (
        lambda counter: TokenBudget(SYS, budget=1, counter=counter),
        lambda policy, view: "u1" not in [m.content for m in view],
    ),
    "summary-buffer": (
        lambda counter: SummaryBuffer(SYS, budget=1, turns=0, counter=counter),
        lambda policy, view: any(m.origin == "summary" for m in policy.retained()),
    ),
    "tool-result-compaction": (
        lambda counter: ToolResultCompaction(SYS, trigger_on="tokens", trigger=0, min_preserved=0, counter=counter),
        lambda policy, view: any(m.content.startswith("[Tool Calls]") for m in policy.retained()),
    ),
    "compaction-pipeline": (
        lambda counter: CompactionPipeline(
            SYS, collapse_messages=10**6, summary_tokens=10**6, budget=0, truncate_preserved=0, counter=counter
        ),
        lambda policy, view: "u1" not in [m.content for m in policy.retained()],
    ),
}

CASES = [
    # counter, the encoding loads, each turn's reported usage -> (counter recorded, status, fired)
    ("local", True, None, ("tiktoken", "counted", True)),
    ("local", False, None, ("estimate", "counted", True)),
    ("tiktoken", True, None, ("tiktoken", "counted", True)),
    ("tiktoken", False, None, ("tiktoken", "unavailable", False)),
    ("estimate", True, None, ("estimate", "counted", True)),
    ("provider", True, reported(5000, 20), ("provider", "counted", True)),
    ("provider", True, reported(None, None), ("provider", "unknown", False)),
]


@pytest.mark.parametrize("name", list(POLICIES))
@pytest.mark.parametrize("counter, loads, usage, expected", CASES)
def test_each_trigger_counts_with_its_counter_and_never_fires_on_an_unknown_count(
    name: str, counter: str, loads: bool, usage: Any, expected: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not loads:
        monkeypatch.setattr("harness.policy.counters.TokenCounter", lambda: TokenCounter(NO_ENCODING))
    make, fired = POLICIES[name]
    policy = make(counter)
    for number in (1, 2, 3):
        turn = user(number, f"u{number}", steps=steps(number))
        view = list(policy.view(turn))
        outcome = policy.after_answer(turn, f"a{number}", UsageAux(usage(number) if usage else None))
    recorded, status, fires = expected
    assert (outcome.trigger.counter, outcome.trigger.status) == (recorded, status)
    assert (outcome.trigger.tokens is None) == (status != "counted")
    assert fired(policy, view) == fires, outcome.note
    if status != "counted":
        assert "did not fire" in outcome.note


def test_every_built_in_policy_with_a_token_trigger_takes_the_one_counter_parameter() -> None:
    factories = PolicyRegistry.installed().factories
    for name in POLICIES:
        assert COUNTER_PARAM in factories[name].params, name
