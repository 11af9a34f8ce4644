"""Recorded replies (issue 27, item 1): an imported conversation's assistant turns are scripted
replies, so the model answers only at probes; they cost no tokens and are never judged. With
`--answer-every-turn` (`live`) the model answers every turn."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.chronology import Expectation
from harness.cli.commands import main
from harness.models.options import Models
from harness.results.tables import load_results
from harness.run.conversation import Conversation
from harness.run.events import planned_calls
from tests.conftest import builtin_registry, chronology, record_conversation, user
from tests.scripted import ScriptedModel

REGISTRY = builtin_registry()
RECORDED = chronology(
    user(1, "database=PostgreSQL", assistant="Noted, PostgreSQL.", evidence=("db",)),
    user(2, "The invoice run finished.", assistant="Good to hear."),
    user(3, "Which database are we on?", probe="db", expect=(Expectation("rubric", "Names PostgreSQL."),)),
)


def replayed(tmp_path: Path, live: bool):
    answers, judge = ScriptedModel(), ScriptedModel("judge", "YES")
    conversation = Conversation(RECORDED, REGISTRY.parse("full-history"), "reference", 1)
    record_conversation(tmp_path, conversation, REGISTRY, Models(answers, judge=judge), live=live)
    return load_results(tmp_path), answers, judge


def test_recorded_replies_are_kept_and_the_model_answers_only_the_probe(tmp_path: Path) -> None:
    results, answers, judge = replayed(tmp_path, live=False)
    assert list(results.turns.status) == ["scripted", "scripted", "answered"]
    assert results.turns.reported_prompt_tokens.isna().all()  # no call, no tokens; the probe's: not reported
    assert list(results.calls[["turn", "kind"]].itertuples(index=False, name=None)) == [(3, "answer"), (3, "judge")]
    assert answers.calls == 1 and judge.calls == 1  # only the probe's answer is judged
    history = [m.content for m in answers.requests[0].messages if m.role == "assistant"]
    assert history == ["Noted, PostgreSQL.", "Good to hear."]


def test_answering_every_turn_calls_the_model_at_every_turn(tmp_path: Path) -> None:
    results, answers, judge = replayed(tmp_path, live=True)
    assert list(results.turns.status) == ["answered", "answered", "answered"]
    assert answers.calls == 3 and judge.calls == 1  # still only the probe is judged


@pytest.mark.slow
def test_answer_every_turn_and_live_are_one_option(project: Path) -> None:
    (project / "chronologies" / "x.yaml").write_text(
        "title: t\nturns:\n  - user: database=PostgreSQL\n    assistant: Noted.\n"
        "  - user: Which database are we on?\n    probe: db\n    expect: {value: PostgreSQL}\n"
    )
    for name, flags in (("every", ["--answer-every-turn"]), ("live", ["--live"]), ("fixed", [])):
        result = CliRunner().invoke(
            main, ["run", "--run-id", name, "--quiet", "--no-charts", "--policy", "full-history", *flags]
        )
        assert result.exit_code == 0, result.output
    statuses = {
        name: list(load_results(project / "results" / name).turns.status) for name in ("every", "live", "fixed")
    }
    assert statuses == {"every": ["answered"] * 2, "live": ["answered"] * 2, "fixed": ["scripted", "answered"]}


def test_the_calls_planned_before_the_run_count_the_probes_answer_and_its_rubric() -> None:
    conversation = Conversation(RECORDED, REGISTRY.parse("full-history"), "reference", 1)
    assert planned_calls(conversation, live=False, judging=False) == 1  # recorded replies: no call
    assert planned_calls(conversation, live=False, judging=True) == 2  # + the rubric's verdict
