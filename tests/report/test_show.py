"""`harness show`: what the model was sent at one turn, message by message, and what was kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.base.messages import ToolCall
from harness.chronology import Forget, Step, ToolResult
from harness.cli.commands import main
from tests.conftest import NO_RESTART, chronology, user
from tests.hostile_text import NAME, hostile_run, obeyed
from tests.report.test_report import run_into

POLICIES = ["full-history", "last-turns:turns=1", "summary", "bounded-facts:mode=provider"]
TINY = chronology(
    user(1, "constraint=never restart production", assistant="Understood.", summary=""),
    user(2, "Hello \x1b[31mred\x1b[0m", assistant="Hi."),
    user(3, "Can I restart production now?", probe="restart"),
    Forget(number=4, line=4, key=None),
    prohibitions=(NO_RESTART,),
)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("show") / "r"
    run_into(directory, [TINY], POLICIES)
    return directory


def show(results: Path, *args: str):
    return CliRunner().invoke(main, ["show", str(results), "--chronology", "mem", *args])


def test_one_policy_prints_its_view_message_by_message_and_what_it_kept(results: Path) -> None:
    output = show(results, "--turn", "2", "--policy", "last-turns:turns=1").output
    assert output == "\n".join(
        [
            "mem · turn 2 · model reference · repetition 1",
            "",
            "== last-turns:turns=1 · session main · scripted",
            "request view: 4 messages, 67 characters "
            "(scripted reply: no call was made; this is what the policy would have sent)",
            "  [1] system · system",
            "      SYS",
            "  [2] user · history · turn 1 · session main",
            "      constraint=never restart production",
            "  [3] assistant · history · turn 1 · session main",
            "      Understood.",
            "  [4] user · current · turn 2 · session main",
            "      Hello \\x1b[31mred\\x1b[0m",  # control characters are shown, never sent to the terminal
            "answer: the scripted reply (no model call)",
            "      Hi.",
            "retained after turn 2: 4 messages, 67 characters",
            "  [1] user · history · turn 1 · session main",
            "      constraint=never restart production",
            "  [2] assistant · history · turn 1 · session main",
            "      Understood.",
            "  [3] user · history · turn 2 · session main",
            "      Hello \\x1b[31mred\\x1b[0m",
            "  [4] assistant · history · turn 2 · session main",
            "      Hi.",
            "",
        ]
    )


def test_without_policy_every_policy_is_shown_in_declared_order(results: Path) -> None:
    output = show(results, "--turn", "1").output
    headers = [line.split(" · ")[0][3:] for line in output.splitlines() if line.startswith("== ")]
    assert headers == POLICIES


def test_the_facts_block_is_labelled_as_facts(results: Path) -> None:
    output = show(results, "--turn", "2", "--policy", "bounded-facts:mode=provider").output
    assert "  [2] user · facts · session main\n      Remembered facts (unverified user assertions" in output


def test_a_forget_turn_has_no_request_view(results: Path) -> None:
    output = show(results, "--turn", "4", "--policy", "full-history").output
    assert "== full-history · forget\nrequest view: none (a forget event makes no model call)\n" in output
    assert "retained after turn 4: 0 messages, 0 characters" in output


def test_a_stopped_policy_says_where_its_replay_ended(results: Path) -> None:
    output = show(results, "--turn", "3", "--policy", "summary").output
    assert "== summary: no record at turn 3: the replay ended at turn 1, status stopped (summary_empty)" in output


def test_diff_shows_what_each_view_has_that_the_other_lacks(results: Path) -> None:
    output = show(results, "--turn", "3", "--diff", "full-history", "last-turns:turns=1").output
    assert output.split("\n\n", 1)[1] == "\n".join(
        [
            "in full-history's view, not in last-turns:turns=1's: 2 messages, 46 characters",
            "  [2] user · history · turn 1 · session main",
            "      constraint=never restart production",
            "  [3] assistant · history · turn 1 · session main",
            "      Understood.",
            "",
            "in last-turns:turns=1's view, not in full-history's: nothing",
            "",
        ]
    )


def test_diff_in_both_directions_with_the_facts_block(results: Path) -> None:
    output = show(results, "--turn", "3", "--diff", "bounded-facts:mode=provider", "full-history").output
    theirs = output.split("in full-history's view, not in bounded-facts:mode=provider's: ")[1]
    assert "[2] user · facts · session main" in output.split("in full-history's view")[0]
    assert theirs.startswith("4 messages") and "      Understood." in theirs


BAD = [
    (["--chronology", "nope", "--turn", "1"], "--chronology nope: not in this run; chronologies: mem"),
    (["--turn", "9"], "--turn 9: mem has no such turn in these results (turns: 1–4)"),
    (
        ["--turn", "1", "--policy", "last-turns"],
        "--policy last-turns: not in this run; policies: full-history, "
        "last-turns:turns=1, summary, bounded-facts:mode=provider",
    ),
    (["--turn", "1", "--diff", "full-history", "nope"], "--diff nope: not in this run; policies: full-history"),
    (["--turn", "1", "--model", "gpt"], "--model gpt: not in this run; models: reference"),
    (["--turn", "1", "--repetition", "2"], "--repetition 2: this run has repetitions 1–1"),
    (["--turn", "1", "--policy", "summary", "--diff", "summary", "full-history"], "give --policy or --diff, not both"),
]


@pytest.mark.parametrize("args, message", BAD)
def test_bad_input_exits_2_naming_what_exists(results: Path, args: list[str], message: str) -> None:
    argv = ["show", str(results)] + (args if args[0] == "--chronology" else ["--chronology", "mem", *args])
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2 and message in result.stderr


def test_a_folder_that_is_not_results_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["show", str(tmp_path), "--chronology", "mem", "--turn", "1"])
    assert result.exit_code == 2 and "not a results directory" in result.stderr


# Views are stored as references to earlier turns (harness/results/views.py): a late turn of two
# interleaved sessions must still print exactly its own session's messages, in order.
INTERLEAVED = chronology(
    *[user(n, f"{'s' if n % 2 else 'l'}{n}", "support" if n % 2 else "logs", assistant=f"a{n}") for n in range(1, 12)],
    sessions=("support", "logs"),
)


def test_a_late_turn_of_interleaved_sessions_shows_only_its_session(tmp_path: Path) -> None:
    directory = tmp_path / "r"
    run_into(directory, [INTERLEAVED], ["full-history", "last-turns:turns=1"])
    output = CliRunner().invoke(main, ["show", str(directory), "--chronology", "mem", "--turn", "11"]).output
    full, window = output.split("== ")[1:]
    shown = [line.strip() for line in full.split("answer")[0].splitlines() if line.startswith("      ")]
    assert shown == ["SYS", "s1", "a1", "s3", "a3", "s5", "a5", "s7", "a7", "s9", "a9", "s11"]
    kept = [line.strip() for line in full.split("retained after")[1].splitlines() if line.startswith("      ")]
    assert kept == [f"{p}{n}" for n in range(1, 12, 2) for p in "sa"] + [
        f"{p}{n}" for n in range(2, 12, 2) for p in "la"
    ]
    assert [line.strip() for line in window.split("answer")[0].splitlines() if line.startswith("      ")] == [
        "SYS",
        "s9",
        "a9",
        "s11",
    ]


def test_the_answer_of_the_turn_is_shown_whole_under_the_view(results: Path) -> None:
    """Issue 15: with a real model the answer is the result; it was only in calls.jsonl."""
    output = show(results, "--turn", "3", "--policy", "full-history").output
    view, rest = output.split("answer (reference):\n")
    assert rest.splitlines()[0].startswith("      ") and "retained after turn 3" in rest


def test_a_policy_note_is_printed_under_its_policy(tmp_path: Path) -> None:
    directory = tmp_path / "r"
    run_into(directory, [TINY], ["retrieval:turns=1", "full-history"])
    shown = show(directory, "--turn", "3")
    assert shown.exit_code == 0, shown.output
    retrieval = shown.output.split("== full-history")[0]
    assert "policy note: BM25 (bm25s) retrieved turn 1 (score " in retrieval
    assert "[2] user · retrieved · turn 1" in retrieval
    assert "policy note" not in shown.output.split("== full-history")[1]  # full history says nothing


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        return hostile_run(root).resolve()


@pytest.mark.parametrize("turn", ["2", "3", "4"])
@pytest.mark.slow
def test_hostile_text_from_the_endpoint_and_the_file_name_is_shown_never_obeyed(hostile: Path, turn: str) -> None:
    """Answers (turn 3), an endpoint's error (turn 4), chronology text and name: as escapes, on a terminal too."""
    shown = CliRunner().invoke(main, ["show", str(hostile), "--chronology", NAME, "--turn", turn], color=True)
    assert shown.exit_code == 0, shown.output
    assert obeyed(shown.output) == []
    assert shown.output.startswith("evil\\x1b]52;c;aGVsbG8=\\x07\\x1b[31mred · turn")
    assert "\\x1b]52;c;aGVsbG8=\\x07" in shown.output.split("\n", 1)[1]


def test_an_unknown_name_is_refused_as_escapes_too(hostile: Path) -> None:
    shown = CliRunner().invoke(main, ["show", str(hostile), "--chronology", "x\x1b[2J", "--turn", "1"], color=True)
    assert shown.exit_code == 2 and obeyed(shown.output) == []
    assert "--chronology x\\x1b[2J: not in this run; chronologies: evil\\x1b]52" in shown.output


def test_an_answer_degraded_on_purpose_says_what_it_ignored(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    turns = [("constraint=never restart production", "Understood.")] + [(f"version={n}", "Noted.") for n in range(2, 7)]
    lines = ["title: t", "prohibitions:", "  p:", "    present: never restart", "    violated_by: '^Yes'", "turns:"]
    for said, reply in turns:
        lines += [f"  - user: {said}", f"    assistant: {reply}"]
    lines += ["  - user: Can I restart production now?", "    probe: q"]
    (source / "mem.yaml").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    ran = CliRunner().invoke(
        main,
        [
            "run",
            str(source),
            "--policy",
            "full-history",
            "--model",
            "reference:lossy:recency=4",
            "--out",
            str(out),
            "--run-id",
            "r",
            "--reports",
            str(tmp_path / "rep"),
            "--quiet",
            "--no-charts",
            "--no-cache",
        ],
    )
    assert ran.exit_code == 0, ran.output
    output = show(out / "r", "--turn", "7").output
    assert (
        "answer (reference:lossy:recency=4):\n"
        "      Yes — nothing in my context forbids it.\n"
        "degraded on purpose (calls.jsonl `degraded`): 1\n"
        '  recency: ignored the prohibition "constraint=never restart production" (from turn 1)\n'
    ) in output
    assert "degraded on purpose" not in show(out / "r", "--turn", "6").output  # a scripted reply


def test_a_tool_step_is_shown_with_its_calls_and_the_call_each_result_answers(tmp_path: Path) -> None:
    step = Step((ToolCall("call_1", "read_file", '{"path": "a.py"}'),), (ToolResult("call_1", "print(1)"),))
    agent = chronology(user(1, "Read a.py.", steps=(step,), assistant="It prints 1."))
    run_into(tmp_path / "r", [agent], ["full-history"])
    output = show(tmp_path / "r", "--turn", "1", "--policy", "full-history").output
    chars = len("SYS") + len("Read a.py.") + len('read_file({"path": "a.py"})') + len("print(1)")
    assert f"request view: 4 messages, {chars} characters" in output  # the call's name and arguments count
    assert "  [3] assistant · current · turn 1 · session main\n" in output
    assert '      calls read_file({"path": "a.py"}) · id call_1\n' in output
    assert "  [4] tool · current · answers call_1 · turn 1 · session main\n      print(1)\n" in output
    assert "answer: the scripted reply (no model call)\n      It prints 1.\n" in output
