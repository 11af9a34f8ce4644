"""The call records: answers refer to the recorded view; an oversized answer is cut, and says so."""

from __future__ import annotations

from pathlib import Path

from harness.caller import MAX_ANSWER_CHARS
from harness.models import CallRequest, Completion
from harness.policy import PolicyRegistry
from harness.records import FORMAT_VERSION, ResultsWriter
from harness.results import Results, load_results
from harness.runner import Conversation, run_conversation
from harness.tokens import TokenCounter
from tests.conftest import chronology, user

REGISTRY = PolicyRegistry.installed()
FOUR = chronology(*[user(n, f"question {n}") for n in range(1, 5)])


class Talker:
    """Answers every call with `size` characters of prose; keeps the requests it was sent."""

    name = "talker"

    def __init__(self, size: int) -> None:
        self.size, self.requests = size, []

    def complete(self, request: CallRequest) -> Completion:
        self.requests.append(request)
        text = ("the lock table is fine. " * (self.size // 24 + 1))[: self.size]
        return Completion(text)


def replay(directory: Path, model: Talker, policy: str = "full-history") -> Results:
    conversation = Conversation(FOUR, REGISTRY.parse(policy), "talker", 1)
    with ResultsWriter(directory) as sink:
        sink.manifest({"format_version": FORMAT_VERSION, "run_id": "t", "policies": [conversation.policy.as_record()]})
        run_conversation(conversation, REGISTRY, model, TokenCounter(), sink)  # type: ignore[arg-type]
    return load_results(directory)


def test_an_answer_call_refers_to_the_view_recorded_at_its_turn(tmp_path: Path) -> None:
    model = Talker(10)
    results = replay(tmp_path, model)
    answers = results.calls[results.calls.kind == "answer"]
    assert answers.messages.isna().all() and (answers.messages_from == "views.jsonl").all()
    for request in model.requests:
        record = results.view_at("mem", "full-history", "talker", 1, request.turn.number)
        assert record is not None and record["view"] == [m.as_record() for m in request.messages]


def test_an_answer_beyond_the_limit_is_cut_and_the_record_says_so(tmp_path: Path) -> None:
    results = replay(tmp_path, Talker(MAX_ANSWER_CHARS + 7))
    call = results.calls.iloc[0]
    assert call.truncated and call.response_chars == MAX_ANSWER_CHARS + 7 and len(call.response) == MAX_ANSWER_CHARS
    later = results.view_at("mem", "full-history", "talker", 1, 2)
    assert later is not None and len(later["view"][2]["content"]) == MAX_ANSWER_CHARS  # the cut answer is the history


def test_an_answer_within_the_limit_is_kept_whole(tmp_path: Path) -> None:
    call = replay(tmp_path, Talker(MAX_ANSWER_CHARS)).calls.iloc[0]
    assert not call.truncated and call.response_chars == len(call.response) == MAX_ANSWER_CHARS


def test_ten_megabyte_answers_write_results_linear_in_what_is_kept(tmp_path: Path) -> None:
    """Four 10 MB answers under full history wrote hundreds of MB; now each kept answer is
    stored twice (its call's response, and once as a message) and nothing else grows."""
    replay(tmp_path, Talker(10_000_000))
    written = sum(path.stat().st_size for path in tmp_path.iterdir())
    assert written < 4 * 2 * MAX_ANSWER_CHARS + 20_000, written
