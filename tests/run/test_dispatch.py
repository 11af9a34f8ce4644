"""Which conversation a concurrent batch starts next: the one expected to make the most calls,
learned from the calls as they start."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from harness.chronology.loading import load_chronology
from harness.models.catalog import model_factory
from harness.models.options import ModelOptions
from harness.run.batch import Runtime, run_batch
from harness.run.dispatch import Dispatch
from harness.run.spec import RunSpec
from tests.conftest import SHIPPED, builtin_registry
from tests.loopback import Reply, ScriptedServer, chat_completion

REGISTRY = builtin_registry()


def take_all(dispatch: Dispatch) -> list[int]:
    taken = []
    while (index := dispatch.take()) is not None:
        taken.append(index)
    return taken


def test_before_any_call_the_most_planned_calls_start_first_in_plan_order_among_equals() -> None:
    dispatch = Dispatch("abcd", [3, 9, 3, 9], ["w", "w", "w", "w"])
    assert take_all(dispatch) == [1, 3, 0, 2]
    assert dispatch.take() is None


def test_a_policy_seen_making_a_call_of_its_own_after_each_answer_starts_before_a_window() -> None:
    # Plan order alternates a window and a summary, both with 9 planned answers.
    dispatch = Dispatch("abcdef", [9] * 6, ["window", "summary"] * 3)
    assert [dispatch.take(), dispatch.take()] == [0, 1]
    dispatch.started(0, "answer")
    dispatch.started(1, "answer")
    dispatch.started(1, "summarizer")
    assert dispatch.stale
    assert take_all(dispatch) == [3, 5, 2, 4]  # the summaries (2 calls per answer) first


def test_calls_per_planned_call_weigh_the_planned_calls() -> None:
    # 9 answers with a summarizer call each (18 calls) against 12 answers alone: the first is longer.
    dispatch = Dispatch("abcd", [9, 12, 9, 12], ["summary", "window", "summary", "window"])
    for label_index, kinds in ((0, ["answer", "summarizer"]), (1, ["answer"])):
        for kind in kinds:
            dispatch.started(label_index, kind)
    assert take_all(dispatch) == [0, 2, 1, 3]


def test_a_policy_not_seen_yet_counts_as_the_costliest_seen() -> None:
    dispatch = Dispatch("abc", [9, 9, 9], ["window", "summary", "unseen"])
    dispatch.started(0, "answer")
    dispatch.started(1, "answer")
    dispatch.started(1, "summarizer")
    assert take_all(dispatch) == [1, 2, 0]  # `unseen` ties with the summary's 2 calls per answer


def test_what_has_started_keeps_its_place_and_each_conversation_starts_once() -> None:
    dispatch = Dispatch("abcd", [9] * 4, ["window", "window", "summary", "summary"])
    first = dispatch.take()
    dispatch.started(0, "answer")
    dispatch.started(2, "answer")
    dispatch.started(2, "summarizer")
    rest = take_all(dispatch)
    assert first == 0 and rest == [2, 3, 1]


def test_a_small_move_of_a_rate_does_not_order_the_waiting_again() -> None:
    dispatch = Dispatch("ab", [9, 9], ["x", "x"])
    for _ in range(20):
        dispatch.started(0, "answer")
    dispatch.take()
    assert not dispatch.stale
    dispatch.started(0, "answer")
    dispatch.started(0, "summarizer")  # 22 calls for 21 answers: under 10% from 1
    assert not dispatch.stale
    dispatch.started(0, "summarizer")
    dispatch.started(0, "summarizer")  # 24 for 21: more than 10%
    assert dispatch.stale


def test_in_order_never_reorders() -> None:
    dispatch = Dispatch.in_order("abc")
    dispatch.started(2, "answer")
    dispatch.started(2, "summarizer")
    assert not dispatch.stale
    assert take_all(dispatch) == [0, 1, 2]


def test_threads_taking_at_once_start_each_conversation_exactly_once() -> None:
    n = 2000
    dispatch = Dispatch(range(n), [i % 7 for i in range(n)], [i % 3 for i in range(n)])
    taken: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        while (index := dispatch.take()) is not None:
            dispatch.started(index, "answer" if index % 2 else "writer")
            with lock:
                taken.append(index)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == list(range(n))


@pytest.mark.slow
def test_a_live_batch_starts_the_conversations_with_more_calls_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plan order alternates full-history and summary; once the summaries are seen making a
    summarizer call after each answer, the waiting ones start before the waiting windows."""
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    started: list[str] = []

    class Seen:
        def begin(self, *args: object) -> None: ...

        def call_started(self, kind: str) -> None: ...

        def call_ended(self, kind: str, record: object) -> None: ...

        def conversation_ended(self, n: int, total: int, conversation: object, finished: object) -> None:
            started.append(f"{conversation.policy.label} {conversation.repetition}")  # type: ignore[attr-defined]

    policies = [REGISTRY.parse("full-history"), REGISTRY.parse("summary")]
    with ScriptedServer() as server:
        server.default = Reply(body=chat_completion("No."), delay=0.02)
        options = ModelOptions(base_url=server.base_url)
        plan = RunSpec(
            [load_chronology(SHIPPED / "memory-drift.yaml")], policies, ["openai:m"], 3, 2, live=True, options=options
        )
        run_batch(plan, tmp_path / "r", "r", Runtime(REGISTRY, factory=model_factory(options, 0), events=Seen()))  # type: ignore[arg-type]
    assert sorted(started[:2]) == ["full-history 1", "summary 1"]
    assert started[2:] == ["summary 2", "summary 3", "full-history 2", "full-history 3"]


def started_calls(dispatch: Dispatch, index: int, answers: int, own: int) -> None:
    """The conversation at `index` starts `answers` answers and `own` calls of its policy's own."""
    for kind, count in (("answer", answers), ("writer", own)):
        for _ in range(count):
            dispatch.started(index, kind)


@pytest.mark.parametrize(
    ("q_calls", "order"),
    [
        (100, [2, 3, 4, 5]),  # the same rate: plan order, chronology by chronology
        (95, [2, 3, 4, 5]),  # within 10% (`MOVE`), a difference the order does not act on
        (80, [2, 4, 3, 5]),  # p's conversations are longer: they start first
    ],
)
def test_conversations_expected_to_make_about_as_many_calls_start_in_plan_order(q_calls: int, order: list) -> None:
    # Plan order: chronologies A, B, C, each under policies p and q, one planned call each.
    dispatch = Dispatch(["Ap", "Aq", "Bp", "Bq", "Cp", "Cq"], [1] * 6, ["p", "q"] * 3)
    assert [dispatch.take(), dispatch.take()] == [0, 1]
    started_calls(dispatch, 0, 1, 99)  # p: 100 calls per planned call
    started_calls(dispatch, 1, 1, 49)  # q: 50 so far
    assert dispatch.take() == 2  # ordered again: p's first
    started_calls(dispatch, 1, 0, q_calls - 50)  # q's rate learned further: the waiting ordered again
    assert [2, *take_all(dispatch)] == order
