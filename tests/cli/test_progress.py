"""The progress display: its counts from a batch's events, plain lines, the live display, --quiet."""

from __future__ import annotations

import dataclasses
import io
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from harness.base.text import visible
from harness.chronology.loading import load_chronology
from harness.cli.commands import main
from harness.cli.progress import LiveProgress, PlainProgress, Snapshot, duration, watching
from harness.models import slots
from harness.models.catalog import model_factory
from harness.models.options import ModelOptions, Models
from harness.models.reference import ReferenceModel
from harness.models.slots import props_slots
from harness.policy import PolicyRegistry
from harness.run.batch import Runtime, run_batch
from harness.run.conversation import Conversation
from harness.run.events import planned_calls
from harness.run.spec import RunSpec
from tests.conftest import SHIPPED
from tests.hostile_text import CHRONOLOGY, FILE_NAME, HOSTILE, NAME, obeyed
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion

DRIFT = load_chronology(SHIPPED / "memory-drift.yaml")
REGISTRY = PolicyRegistry.installed()
LINE = re.compile(
    r"\[[12]/2\] memory-drift · (full-history|last-turns) · openai:m · rep 1: "
    r"error \(9 calls, (?P<retries>\d) retries, (?P<errors>\d) errors\)"
)


class Recording(PlainProgress):
    """Plain lines into a string, a summary on every change, and every snapshot kept."""

    def __init__(self) -> None:
        super().__init__(io.StringIO(), every=0)
        self.snapshots: list[Snapshot] = []

    def update(self) -> None:
        self.snapshots.append(self.tally.snapshot())
        super().update()

    @property
    def last(self) -> Snapshot:
        return self.tally.snapshot()


def replies(request: Recorded) -> Reply:
    """Slow answers (so two conversations overlap); the last question fails for good (400)."""
    if request.path.endswith("/models"):
        return Reply(body={"object": "list", "data": [{"id": "weights.gguf"}]})
    if request.method == "GET":  # llama.cpp's /props: not this server
        return Reply(404, body={"error": {"message": "not found"}})
    last = request.body["messages"][-1]["content"]
    if last == "Which database are we on?":
        return Reply(400, body={"error": {"message": "refused"}})
    usage = {"prompt_tokens": 5, "completion_tokens": 1}
    return Reply(body=chat_completion(f"echo {len(request.body['messages'])}", usage=usage), delay=0.05)


def run(server: ScriptedServer, tmp_path: Path, watcher, run_id: str, *, cache: bool, concurrency: int = 2) -> None:
    options = ModelOptions(base_url=server.base_url, max_retries=2)
    policies = [REGISTRY.parse("full-history"), REGISTRY.parse("last-turns")]
    plan = RunSpec(
        [DRIFT], policies, ["openai:m"], concurrency=concurrency, live=True, options=options,
        cache_dir=tmp_path / "cache" if cache else None,
    )  # fmt: skip
    run_batch(plan, tmp_path / run_id, run_id, Runtime(REGISTRY, factory=model_factory(options, 0), events=watcher))


def test_planned_calls_count_answers_and_judge_calls_before_the_run() -> None:
    conversation = Conversation(DRIFT, REGISTRY.parse("summary"), "m", 1)
    assert planned_calls(conversation, live=False, judging=False) == 3  # the three probes; the rest is scripted
    assert planned_calls(conversation, live=True, judging=False) == 9  # every user turn
    assert planned_calls(conversation, live=True, judging=True) == 12  # + one verdict per probe


@pytest.mark.slow  # the server's replies wait
def test_calls_in_flight_retries_and_errors_are_counted_per_call(tmp_path: Path) -> None:
    watcher = Recording()
    with ScriptedServer() as server:
        busy = [Reply(503, body={"error": {"message": "busy"}})]  # the first call is retried once
        server.default = lambda r: busy.pop() if busy and r.path.endswith("/completions") else replies(r)
        run(server, tmp_path, watcher, "a", cache=False)
    end = watcher.last
    assert (end.conversations_done, end.conversations_total) == (2, 2)
    assert end.calls_done == end.calls_total == 18  # 9 live turns in each conversation
    assert (end.retries, end.errors, end.cached, end.in_flight) == (1, 2, 0, 0)
    assert max(s.in_flight for s in watcher.snapshots) == 2  # two conversations at once
    # per call, not per conversation: the counts moved while no conversation had ended yet
    assert any(s.calls_done > 0 and s.conversations_done == 0 for s in watcher.snapshots)
    lines = watcher.stream.getvalue().splitlines()
    ended = [LINE.fullmatch(line) for line in lines if line.startswith("[")]
    assert all(ended) and len(ended) == 2
    assert sorted(int(m["retries"]) for m in ended) == [0, 1] and {m["errors"] for m in ended} == {"1"}
    assert any(line.startswith("... ") and "/18 calls" in line for line in lines)


@pytest.mark.slow  # the server's replies wait
def test_calls_served_from_the_cache_or_shared_in_flight_are_counted_cached(tmp_path: Path) -> None:
    def fine(request: Recorded) -> Reply:
        if request.method == "GET":
            return replies(request)
        return Reply(
            body=chat_completion("ok") | {"model": request.body["model"]}, delay=0.1
        )  # as llama.cpp: the name asked

    first, second = Recording(), Recording()
    with ScriptedServer() as server:
        server.default = fine
        run(server, tmp_path, first, "a", cache=True)
        run(server, tmp_path, second, "b", cache=True)
    shared = first.last
    assert shared.calls_done == 18 and 0 < shared.cached < 18  # identical views at once: sent once, shared
    assert (second.last.calls_done, second.last.cached, second.last.errors) == (18, 18, 0)


def test_a_conversation_that_ends_early_takes_its_unmade_calls_out_of_the_total(tmp_path: Path) -> None:
    def first_fails(request: Recorded) -> Reply:
        return Reply(400, body={"error": {"message": "refused"}})

    watcher = Recording()
    with ScriptedServer() as server:
        server.default = first_fails
        run(server, tmp_path, watcher, "a", cache=False, concurrency=1)
    assert watcher.snapshots[1].calls_total == 18  # planned: every live turn of both
    end = watcher.last
    assert (end.calls_done, end.calls_total, end.errors) == (2, 2, 2)  # each ended at its first call


def test_plain_summary_lines_come_at_most_every_interval() -> None:
    now = [0.0]
    watcher = PlainProgress(io.StringIO(), every=30, clock=lambda: now[0])
    conversation = Conversation(DRIFT, REGISTRY.parse("summary"), "reference", 1)
    plan = RunSpec([DRIFT], [conversation.policy], ["reference"])
    watcher.begin(plan, [conversation], 0, {"reference": Models(ReferenceModel())})
    for second in (1.0, 10.0, 31.0, 40.0, 62.0):
        now[0] = second
        watcher.call_started("answer")
    text = watcher.stream.getvalue()
    assert text.count("... ") == 2  # at 31 s and 62 s
    assert "... 0/1 conversations · 0/3 calls · 3 in flight · 0 retries · 0 errors · 0 cached · 31s elapsed" in text


def test_the_eta_extrapolates_the_time_per_planned_call() -> None:
    now = [0.0]
    watcher = PlainProgress(io.StringIO(), clock=lambda: now[0])
    now[0] = 2.0  # starting the server, before the batch begins: elapsed, but not in the ETA's rate
    assert watcher.tally.snapshot().elapsed == 2
    conversation = Conversation(DRIFT, REGISTRY.parse("summary"), "reference", 1)
    watcher.begin(RunSpec([DRIFT], [conversation.policy], ["reference"]), [conversation], 0, {})
    assert watcher.tally.snapshot().eta is None
    watcher.call_started("answer")
    now[0] = 22.0  # one planned call of three took 20 s
    watcher.call_ended("answer", _record(conversation))
    snapshot = watcher.tally.snapshot()
    assert snapshot.eta == pytest.approx(40.0) and "22s elapsed · ETA ~40s" in snapshot.summary()
    assert [duration(s) for s in (45, 185, 3720)] == ["45s", "3m05s", "1h02m"]


def _record(conversation: Conversation):
    from harness.results.rows import CallRecord

    fields = {f.name: None for f in dataclasses.fields(CallRecord)}
    fields.update(conversation.key._asdict(), kind="answer", attempts=1, format_refusals=0, cached=False, error=None)
    return CallRecord(**fields)


def test_the_live_display_renders_the_counts_on_a_terminal(tmp_path: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160, color_system=None)
    policies = [REGISTRY.parse("full-history"), REGISTRY.parse("summary")]
    with LiveProgress(console) as watcher:
        run_batch(RunSpec([DRIFT], policies, ["reference"]), tmp_path / "r", "r", Runtime(REGISTRY, events=watcher))
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())  # cursor moves between redraws
    assert "[2/2] memory-drift · summary · reference · rep 1: complete" in text
    assert "2/2 conversations" in text and "in flight" in text and "elapsed" in text and "ETA" in text


def test_the_live_display_says_when_the_models_are_still_opening() -> None:
    out = io.StringIO()
    watcher = LiveProgress(Console(file=out, force_terminal=True, width=160, color_system=None))
    watcher.console.print(watcher.render())
    assert "opening the models" in out.getvalue()


def test_a_single_slot_server_is_named_in_the_progress(tmp_path: Path) -> None:
    watcher = Recording()
    with ScriptedServer() as server:
        server.default = lambda r: (
            Reply(body={"total_slots": 1}) if r.path == "/props" else Reply(body=chat_completion("ok"))
        )
        run(server, tmp_path, watcher, "a", cache=False)
        assert props_slots(server.base_url) == 1
    assert watcher.note and "has 1 slot" in watcher.note and "--concurrency 2 gains nothing" in watcher.note
    assert watcher.stream.getvalue().startswith("note: the server of openai:m has 1 slot")


@pytest.mark.parametrize(("concurrency", "said"), [(3, "beyond 2 requests queue"), (1, "1 slot stays idle")])
def test_spread_servers_are_named_with_their_slots_together(tmp_path: Path, concurrency: int, said: str) -> None:
    def one_slot(r: Recorded) -> Reply:
        return Reply(body={"total_slots": 1}) if r.path == "/props" else Reply(body=chat_completion("ok"))

    watcher = Recording()
    with ScriptedServer() as a, ScriptedServer() as b:
        a.default = b.default = one_slot
        options = ModelOptions(base_url=a.base_url, base_urls=(a.base_url, b.base_url), max_retries=2)
        plan = RunSpec(
            [DRIFT], [REGISTRY.parse("last-turns")], ["openai:m"], concurrency=concurrency, live=True, options=options
        )
        run_batch(plan, tmp_path / "r", "r", Runtime(REGISTRY, factory=model_factory(options, 0), events=watcher))
    assert watcher.note == f"the 2 servers of openai:m answer 2 requests at once: at --concurrency {concurrency} {said}"


def test_spread_servers_without_slot_counts_say_nothing(tmp_path: Path) -> None:
    watcher = Recording()
    with ScriptedServer() as a, ScriptedServer() as b:
        a.default = lambda r: (
            Reply(body={"total_slots": 1}) if r.path == "/props" else Reply(body=chat_completion("ok"))
        )
        b.default = lambda r: Reply(404, body={}) if r.path == "/props" else Reply(body=chat_completion("ok"))
        options = ModelOptions(base_url=a.base_url, base_urls=(a.base_url, b.base_url), max_retries=2)
        plan = RunSpec([DRIFT], [REGISTRY.parse("last-turns")], ["openai:m"], concurrency=3, live=True, options=options)
        run_batch(plan, tmp_path / "r", "r", Runtime(REGISTRY, factory=model_factory(options, 0), events=watcher))
    assert watcher.note is None  # one server unknown: their sum is unknown, nothing is guessed


def test_an_endpoint_without_slot_counts_is_left_unknown() -> None:
    with ScriptedServer() as server:
        server.default = Reply(404, body={"error": {"message": "not found"}})
        assert props_slots(server.base_url) is None


def test_a_props_redirect_is_not_followed_and_is_said(tmp_path: Path) -> None:
    """`/props` is asked of the endpoint named and nowhere else: a 302 to another address is not
    followed (that server gets no request), and the progress note says so."""
    with ScriptedServer() as elsewhere, ScriptedServer() as server:
        elsewhere.default = Reply(body={"total_slots": 1})
        server.default = lambda r: (
            Reply(302, {"Location": f"{elsewhere.base_url.removesuffix('/v1')}/props"}, body="")
            if r.path == "/props"
            else Reply(body=chat_completion("ok"))
        )
        with pytest.raises(slots.PropsRedirected, match=r"redirect \(HTTP 302\) to http://127\.0\.0\.1:"):
            props_slots(server.base_url)
        watcher = Recording()
        run(server, tmp_path, watcher, "a", cache=False)
        assert elsewhere.requests == []
    assert watcher.note and "answered with a redirect (HTTP 302)" in watcher.note and "not followed" in watcher.note


def test_a_props_page_that_does_not_end_is_read_no_further_than_its_cap(monkeypatch) -> None:
    monkeypatch.setattr(slots, "PROPS_BYTES", 4096)
    sent = []

    def chunks():  # 64 MiB, sixteen thousand times the cap; the probe stops reading at the cap
        for _ in range(16384):
            sent.append(1)
            yield b"[" * 4096

    with ScriptedServer() as server:
        server.default = Reply(chunks=chunks())
        assert props_slots(server.base_url) is None
    # The server stops when the probe closes the connection; what the sockets' buffers took by
    # then (a few MiB on loopback) is all it sent, far from the whole body.
    assert len(sent) < 4096


def test_watching_picks_the_live_display_on_a_terminal_and_nothing_when_quiet() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    with watching(quiet=True, stream=Terminal()) as nothing:
        assert nothing is None
    with watching(quiet=False, stream=io.StringIO()) as plain:
        assert isinstance(plain, PlainProgress)
    with watching(quiet=False, stream=Terminal()) as live:
        assert isinstance(live, LiveProgress)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "chronologies").mkdir()
    (tmp_path / "chronologies" / "memory-drift.yaml").write_bytes((SHIPPED / "memory-drift.yaml").read_bytes())
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_quiet_prints_nothing_and_plain_lines_go_to_stderr(project: Path) -> None:
    quiet = CliRunner().invoke(main, ["run", "--run-id", "q", "--quiet", "--policy", "summary"])
    assert quiet.exit_code == 0 and quiet.stderr == ""
    loud = CliRunner().invoke(main, ["run", "--run-id", "l", "--policy", "summary"])
    assert "[1/1] memory-drift · summary · reference · rep 1: complete (12 calls, 0 retries, 0 errors)" in loud.stderr


def test_a_hostile_chronology_name_reaches_the_progress_lines_as_escapes(project: Path) -> None:
    (project / "chronologies" / FILE_NAME).write_text(CHRONOLOGY, encoding="utf-8")
    loud = CliRunner().invoke(main, ["run", "--run-id", "l", "--policy", "summary", "--no-charts"], color=True)
    assert loud.exit_code == 0, loud.output
    assert obeyed(loud.stderr) == []
    assert re.search(rf"\[[12]/2\] {re.escape(visible(NAME))} · summary · reference · rep 1: complete", loud.stderr)


def test_a_line_said_on_the_live_display_is_shown_never_obeyed() -> None:
    out = io.StringIO()
    watcher = LiveProgress(Console(file=out, force_terminal=True, width=400, color_system=None))
    watcher.say(f"[1/1] {HOSTILE}")
    assert obeyed(out.getvalue()) == [] and visible(HOSTILE) in out.getvalue()


@pytest.mark.parametrize(
    "body", ["[" * 100_000 + "]" * 100_000, '{"total_slots": 1, "n": ' + "[" * 300 + "]" * 300 + "}"]
)
def test_a_props_page_beyond_the_json_bounds_is_left_unknown(body: str) -> None:
    """Nested deeper than Python reads: a RecursionError escaped the probe before."""
    with ScriptedServer() as server:
        server.default = Reply(body=body)
        assert props_slots(server.base_url) is None
