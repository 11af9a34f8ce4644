"""Residue (docs/chronologies.md, "What a policy keeps of old values"): after every turn and
forget, each corrected or forgotten value is looked for in the policy's retained state, place by
place, and residue.csv records where it starts and stops being held."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from harness.base.messages import Message, ToolCall
from harness.chronology import Forget, UserTurn
from harness.chronology.types import Step, ToolResult
from harness.models.reference import ReferenceModel
from harness.policy import Drop, Outcome, PolicyRegistry
from harness.policy.history import current_message, exchange
from harness.report.comparison import compare
from harness.report.policies import policies_csv
from harness.report.residue import section as residue_section
from harness.results.tables import Results, load_results
from harness.run.conversation import Conversation
from tests.conftest import BUILTIN_POLICIES, chronology, record_conversation, user


class Archiving:
    """A memory that archives instead of deleting: a forget moves the history aside, and the
    archive stays in its retained state."""

    name = "archiving"
    description = "Keeps every turn; a forget moves the history to an archive instead of deleting it."
    params: ClassVar[tuple] = ()

    def __init__(self, system: Message | None) -> None:
        self.history: list[Message] = []
        self.archive: list[Message] = []

    def view(self, turn: UserTurn) -> list[Message]:
        return [*self.history, current_message(turn)]

    def after_answer(self, turn: UserTurn, answer: str, aux: Any) -> Outcome:
        self.history += exchange(turn, answer)
        return Outcome()

    def forget(self, event: Forget) -> Outcome:
        moved, self.archive, self.history = self.history, self.archive + self.history, []
        return Outcome(dropped=[Drop(m.content, f"archived at turn {event.number}", "forget") for m in moved])

    def retained(self) -> list[Message]:
        return [*self.archive, *self.history]


REGISTRY = PolicyRegistry.from_mapping({**BUILTIN_POLICIES, "archiving": Archiving})

CORRECT_THEN_FORGET = chronology(
    user(1, "module=Billing; database=MySQL", assistant="Noted."),
    user(2, "database=PostgreSQL", assistant="Noted."),  # MySQL becomes stale at turn 2
    Forget(number=3, line=3, key="module"),  # Billing forgotten at turn 3; the forget clears histories
    user(4, "The invoice run finished.", assistant="Noted."),
)


def residue(tmp_path: Path, chron: Any, policy: str) -> pd.DataFrame:
    folder = tmp_path / policy.replace(":", "_").replace("=", "_")
    record_conversation(folder, Conversation(chron, REGISTRY.parse(policy), "reference", 1), REGISTRY, ReferenceModel())
    return load_results(folder).residue


def results(folder: Path) -> Results:
    """A recorded conversation's results, its manifest naming the model it ran (the report's columns)."""
    found = load_results(folder)
    return replace(found, manifest=replace(found.manifest, models=["reference"]))


def changes(rows: pd.DataFrame) -> list[tuple]:
    return [
        (r.turn, r.subject, r.check, r.since, r.where, r.change)
        for r in rows[["turn", "subject", "check", "since", "where", "change"]].itertuples(index=False)
    ]


def test_a_memory_that_archives_instead_of_deleting_keeps_the_forgotten_value(tmp_path: Path) -> None:
    assert changes(residue(tmp_path, CORRECT_THEN_FORGET, "archiving")) == [
        (2, "database=MySQL", "stale", 2, "history", "kept"),
        (3, "module=Billing", "forgotten", 3, "history", "kept"),  # never removed: kept to the end
    ]


def test_full_history_keeps_a_corrected_value_until_the_forget_clears_it(tmp_path: Path) -> None:
    assert changes(residue(tmp_path, CORRECT_THEN_FORGET, "full-history")) == [
        (2, "database=MySQL", "stale", 2, "history", "kept"),
        (3, "database=MySQL", "stale", 2, "history", "cleared by a forget"),
    ]


def test_a_value_declared_anew_is_current_again_not_residue(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "database=MySQL", assistant="Noted."),
        user(2, "database=PostgreSQL", assistant="Noted."),
        user(3, "database=MySQL", assistant="Noted."),  # MySQL current again, PostgreSQL stale
    )
    assert changes(residue(tmp_path, chron, "full-history")) == [
        (2, "database=MySQL", "stale", 2, "history", "kept"),
        (3, "database=MySQL", "stale", 2, "history", "current again"),
        (3, "database=PostgreSQL", "stale", 3, "history", "kept"),
    ]


def test_a_window_over_the_retained_history_lets_a_corrected_value_go(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "database=MySQL", assistant="Noted."),
        user(2, "database=PostgreSQL", assistant="Noted."),
        *(user(n, f"The invoice run {n} finished.", assistant="Noted.") for n in range(3, 7)),
    )
    rows = changes(residue(tmp_path, chron, "retained-reduction"))
    assert rows[0] == (2, "database=MySQL", "stale", 2, "history", "kept")
    assert rows[1][1:] == ("database=MySQL", "stale", 2, "history", "gone")


def test_retrieval_names_its_history_its_index(tmp_path: Path) -> None:
    rows = residue(tmp_path, CORRECT_THEN_FORGET, "retrieval")
    assert set(rows["where"]) == {"index"}


def test_the_fact_store_replaces_a_corrected_value_and_removes_a_forgotten_one(tmp_path: Path) -> None:
    assert residue(tmp_path, CORRECT_THEN_FORGET, "bounded-facts").empty


def test_a_summary_that_keeps_a_corrected_value_is_recorded_in_the_summary(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "database=MySQL", assistant="Noted.", summary="database=MySQL"),
        user(2, "database=PostgreSQL", assistant="Noted.", summary="database=MySQL; database was changed"),
        user(3, "The invoice run finished.", assistant="Noted.", summary="database=PostgreSQL"),
    )
    assert changes(residue(tmp_path, chron, "summary")) == [
        (2, "database=MySQL", "stale", 2, "summary", "kept"),
        (3, "database=MySQL", "stale", 2, "summary", "gone"),
    ]


def test_the_report_calls_an_archived_forgotten_value_a_finding_and_a_kept_correction_the_design(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "run"
    for policy in ("full-history", "archiving"):
        conversation = Conversation(CORRECT_THEN_FORGET, REGISTRY.parse(policy), "reference", 1)
        record_conversation(folder / policy, conversation, REGISTRY, ReferenceModel())
    section = "\n".join(residue_section(compare([results(folder / "archiving")]), "mem"))
    assert "| module=Billing | forgotten at turn 3 | history | turn 3 to the end | finding | archiving |" in section
    assert (
        "| database=MySQL | corrected at turn 2 | history | turn 2 to the end | by design: a history keeps what it "
        "was told | archiving |" in section
    )
    table = pd.read_csv(io.StringIO(policies_csv(compare([results(folder / "full-history")]))))
    assert table.loc[0, ["stale_kept", "stale_kept_at_end", "forgotten_kept"]].tolist() == [1, 0, 0]
    archived = pd.read_csv(io.StringIO(policies_csv(compare([results(folder / "archiving")]))))
    assert archived.loc[0, ["forgotten_kept", "forgotten_kept_at_end", "forgotten_kept_in_history"]].tolist() == [
        1,
        1,
        1,
    ]


def test_a_run_of_format_3_has_its_residue_not_recorded_never_none_kept(tmp_path: Path) -> None:
    record_conversation(
        tmp_path / "old",
        Conversation(CORRECT_THEN_FORGET, REGISTRY.parse("archiving"), "reference", 1),
        REGISTRY,
        ReferenceModel(),
    )
    found = results(tmp_path / "old")
    old = replace(found, manifest=replace(found.manifest, format_version=3))
    assert old.residue is None
    cmp = compare([old])
    assert residue_section(cmp, "mem")[0].startswith("Residue is not recorded")
    table = pd.read_csv(io.StringIO(policies_csv(cmp)), keep_default_na=False)
    assert table.loc[0, ["stale_kept", "forgotten_kept"]].tolist() == ["", ""]


def test_a_forgotten_value_a_tool_result_repeats_after_the_forget_re_entered_from_it(tmp_path: Path) -> None:
    """The forget did clear what the history held: the value came back from outside text, and
    residue.csv names that text, never the history as the place that kept it."""
    chron = chronology(
        user(1, "module=Billing", assistant="Noted."),
        Forget(number=2, line=2, key="module"),
        user(
            3,
            "Which service failed overnight?",
            steps=(Step((ToolCall("c1", "list_failures", "{}"),), (ToolResult("c1", "The module is Billing."),)),),
            assistant="The invoice job failed.",
        ),
        user(4, "The invoice run finished.", assistant="Noted."),
    )
    assert changes(residue(tmp_path, chron, "full-history")) == [
        (3, "module=Billing", "forgotten", 2, "re-entered from the tool result at turn 3", "kept"),
    ]
    folder = tmp_path / "report"
    record_conversation(
        folder, Conversation(chron, REGISTRY.parse("full-history"), "reference", 1), REGISTRY, ReferenceModel()
    )
    section = "\n".join(residue_section(compare([results(folder)]), "mem"))
    assert (
        "| module=Billing | forgotten at turn 2 | re-entered from the tool result at turn 3 | turn 3 to the end | re-entry: outside text repeated it, not kept | full-history |"
        in section
    )
    table = pd.read_csv(io.StringIO(policies_csv(compare([results(folder)]))))
    assert table.loc[0, ["forgotten_kept", "forgotten_kept_at_end"]].tolist() == [0, 0]  # not kept: re-entered
