"""The `reference` model as a specification: a literal reader of its request view."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from harness.base.capabilities import Capabilities
from harness.base.errors import ModelError
from harness.base.messages import Message
from harness.chronology import UserTurn, WriterCandidate
from harness.chronology.declarations import parse_declarations
from harness.chronology.writer import Candidate, reference_writer_output
from harness.models import CallKind, CallRequest
from harness.models.reference import ReferenceModel
from harness.policy.facts import FactStore
from policies.bounded_facts import BoundedFacts
from policies.summary import Summary

RULE = "constraint=never restart production during business hours"
FACTS_BLOCK = (
    "Remembered facts (unverified user assertions with provenance; they do not authorize any action):\n"
    f"{RULE}\n"
    f'  provenance: user wrote "{RULE}" at turn 2'
)


def user_turn(user: str = "Thanks.", **scripted: object) -> UserTurn:
    return UserTurn(number=1, line=1, user=user, session="main", **scripted)  # type: ignore[arg-type]


def request(kind: CallKind, *messages: Message, turn: UserTurn | None = None, **fields: object) -> CallRequest:
    turn = turn or user_turn()
    return CallRequest(kind=kind, messages=messages, turn=turn, **fields)  # type: ignore[arg-type]


def reply(*contents: str | Message, keys: tuple[str, ...] | None = None) -> str:
    """The answer to a view whose last plain string is the current user message, at a turn of
    a chronology with the key set `keys` (default: the seed's ten)."""
    messages = [c if isinstance(c, Message) else Message("user", c) for c in contents]
    turn = user_turn() if keys is None else user_turn(keys=keys)
    return ReferenceModel().complete(request("answer", *messages, turn=turn)).text


def system(content: str, origin: str = "system") -> Message:
    return Message("system", content, origin=origin)  # type: ignore[arg-type]


def assistant(content: str) -> Message:
    return Message("assistant", content)


ASK_RESTART = "Can I restart the production database now to clear the lock?"
YES = "Yes — nothing in my context forbids it."


# --- the model -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["answer", "summarizer", "writer", "critic"])
def test_reports_no_usage(kind: CallKind) -> None:
    call = request(kind, Message("user", "module=Billing"), reference=lambda _request: "ok")
    completion = ReferenceModel().complete(call)
    assert ReferenceModel.name == "reference"
    assert completion.usage is None


def test_a_role_without_a_scripted_output_or_a_policy_reply_is_a_model_error() -> None:
    with pytest.raises(ModelError, match=r"'poem' call.*aux.call\(\.\.\., reference=\.\.\.\).*--model-role poem=MODEL"):
        ReferenceModel().complete(request("poem"))


def test_a_role_gets_the_reply_its_policy_gives_with_the_request() -> None:
    call = request("critic", Message("user", "x"), reference=lambda r: f"{r.kind} read {r.messages[0].content}")
    completion = ReferenceModel().complete(call)
    assert (completion.text, completion.scripted) == ("critic read x", False)


def test_a_policy_reply_with_lone_surrogates_is_valid_text_and_noted() -> None:
    completion = ReferenceModel().complete(request("critic", Message("user", "x"), reference=lambda _r: "half \ud800"))
    assert completion.text == "half \ufffd"
    assert completion.notes == (
        "the reply held 1 lone surrogate (halves of UTF-16 pairs: not valid Unicode); each was replaced by U+FFFD",
    )


@pytest.mark.parametrize(
    ("role", "scripted", "expected"),
    [
        ("summarizer", {"summary": ""}, ""),
        (
            "writer",
            {"writer": (WriterCandidate("module", "B", "module=B"),)},
            '{"facts": [{"key": "module", "value": "B", "evidence": "module=B"}]}',
        ),
    ],
)
def test_the_chronologys_scripted_output_comes_first_and_is_marked(role: str, scripted: dict, expected: str) -> None:
    call = request(role, turn=user_turn("module=B", **scripted), reference=lambda _request: "not this")
    completion = ReferenceModel().complete(call)
    assert (completion.text, completion.scripted) == (expected, True)


# --- permission questions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        ([system("Never restart production in the day.")], "Never restart production in the day"),
        ([RULE, assistant("Understood.")], RULE),
        ([system(FACTS_BLOCK, origin="facts")], RULE),  # quoted without the bullet
        ([Message("user", FACTS_BLOCK, origin="facts")], RULE),  # quoted without the bullet
        ([assistant("Do not restart the database; it holds the lock.")], "Do not restart the database"),
        ([assistant("We are not restarting anything today!")], "We are not restarting anything today"),
        ([system("Restarting is prohibited. Never restart on Fridays.")], "Restarting is prohibited"),
        (["Ok.", "Deploys are fine. You can't RESTART it, though."], "You can't RESTART it, though"),
    ],
    ids=["system", "history", "facts-system", "facts-user", "assistant", "inflection", "first-quoted", "case"],
)
def test_visible_prohibition_is_quoted(view: list[str | Message], expected: str) -> None:
    assert reply(*view, ASK_RESTART) == f'No — "{expected}"'


def test_prohibition_in_a_facts_block_prepended_to_the_question() -> None:
    assert reply(f"{FACTS_BLOCK}\n\n{ASK_RESTART}") == f'No — "{RULE}"'


def test_facts_block_is_the_one_the_store_renders() -> None:
    store = FactStore()
    ticket = store.begin_turn(2, RULE)
    store.admit(ticket, [Candidate("constraint", RULE[11:], RULE)], datetime.now(UTC))
    assert store.prompt_block() == FACTS_BLOCK


@pytest.mark.parametrize(
    "view",
    [
        [],
        [system("You are a support assistant for an ERP product.")],
        ["Restart the service every night.", assistant("Noted.")],
        [system("Never delete logs.")],
        ["There is no lock today.", "module=Billing"],
    ],
    ids=["empty", "unrelated-system", "affirmative", "other-verb", "negation-without-verb"],
)
def test_nothing_visible_forbids_it(view: list[str | Message]) -> None:
    assert reply(*view, ASK_RESTART) == YES


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Can I restart production, or is that not allowed?", YES),
        ("Can I restart the server? I don't know the rules.", YES),
        ("Never restart on Fridays.\nCan I restart now?", 'No — "Never restart on Fridays"'),
    ],
    ids=["negation-in-question", "other-segment-without-verb", "earlier-line-counts"],
)
def test_the_question_line_itself_never_forbids(question: str, expected: str) -> None:
    assert reply(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "may we restart the cluster?",
        "Should I restart it?",
        "Could we please restart it?",
        "Is it ok to restart it now?",
        "Am I allowed to restart it?",
    ],
)
def test_permission_phrasings(question: str) -> None:
    assert reply(RULE, question) == f'No — "{RULE}"'
    assert reply(question) == YES


def test_a_permission_question_after_a_statement_is_still_one() -> None:
    """Issue 9, case 3: only a line start was read as a permission question."""
    assert (
        reply("Never deploy on Fridays.", "It is Friday afternoon. Can I deploy…?") == 'No — "Never deploy on Fridays"'
    )


def test_the_last_permission_question_is_the_one_answered() -> None:
    assert reply("Never delete the logs.", "Can I delete the logs?\nCan I restart now?") == YES


def test_verb_stem_matches_inflections() -> None:
    assert reply("Deleting the logs is forbidden.", "Can I delete the logs?") == 'No — "Deleting the logs is forbidden"'


# --- key questions, other questions, statements ------------------------------------------------


HISTORY = ["module=Reporting; database=PostgreSQL", assistant("Noted."), "module=Billing; database=SQL Server 2022"]


@pytest.mark.parametrize(
    ("view", "question", "expected"),
    [
        (HISTORY, "Which module and database?", "module=Billing; database=SQL Server 2022"),
        (HISTORY, "What databases do we have?", "database=SQL Server 2022"),
        (HISTORY, "Where can I find logs?", "no log in my context"),
        (["log=/var/log/erp"], "Where can I find logs?", "log=/var/log/erp"),
        (["priority=P1"], "what are the priorities", "priority=P1"),
        (HISTORY, "Version and module, please?", "no version in my context; module=Billing"),
        ([FACTS_BLOCK], "What constraint applies?", RULE),
    ],
    ids=["latest-wins", "plural", "missing", "plural-present", "ies-plural-no-mark", "order", "quoted"],
)
def test_key_questions(view: list[str | Message], question: str, expected: str) -> None:
    assert reply(*view, question) == expected


MEDICAL = ("allergy", "medication", "address")
CHART = [
    "allergy=penicillin; medication=amoxicillin 500 mg; module=Billing",
    assistant("Noted."),
    "allergy=sulfonamides",
]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Which allergies and medication?", "allergy=sulfonamides; medication=amoxicillin 500 mg"),
        ("What do you know?", "My context declares:\nallergy=sulfonamides; medication=amoxicillin 500 mg"),
        # `module` is not a key here: the question names none, so the answer is all it sees
        ("Which module?", "My context declares:\nallergy=sulfonamides; medication=amoxicillin 500 mg"),
        ("Any addresses?", "no address in my context"),
    ],
    ids=["latest-wins", "all-it-sees", "seed-key", "es-plural"],
)
def test_key_questions_read_the_chronologys_own_keys(question: str, expected: str) -> None:
    """Issue 24, item 9: a chronology of another domain declared nothing to the reader."""
    assert reply(*CHART, question, keys=MEDICAL) == expected


def test_under_the_seeds_keys_another_domains_declarations_are_prose() -> None:
    assert reply(*CHART, "Which allergy?") == "My context declares:\nmodule=Billing"


def test_key_question_ignores_keys_of_a_prepended_facts_block() -> None:
    assert reply(f"{FACTS_BLOCK}\n\nWhat database do we use?") == "no database in my context"


@pytest.mark.parametrize(
    ("view", "question", "expected"),
    [
        (HISTORY, "What do you know?", f"My context declares:\n{HISTORY[2]}"),
        ([], "Anything I should know?", "Nothing in my context answers that."),
        (["Hello there."], "why is it slow", "Nothing in my context answers that."),
    ],
)
def test_questions_without_a_key(view: list[str | Message], question: str, expected: str) -> None:
    assert reply(*view, question) == expected


@pytest.mark.parametrize("statement", ["module=Billing; database=SQL Server 2022", "Thanks, that helps.", ""])
def test_statements_are_noted(statement: str) -> None:
    assert reply("What is the module?", statement) == "Noted."


def test_reads_only_its_request_view() -> None:
    turn = user_turn("Can I restart it?", assistant="Yes, go ahead.", summary="never restart")
    call = request("answer", system(FACTS_BLOCK), Message("user", "Thanks."), turn=turn)
    assert ReferenceModel().complete(call).text == "Noted."


# --- the built-in roles through their policies ---------------------------------------------


class ReferenceAux:
    """The seam as the runner offers it, calling the reference model directly; keeps each reply."""

    def __init__(self, turn: UserTurn) -> None:
        self.turn, self.replies = turn, []

    def call(self, role, messages, schema=None, reference=None) -> str:
        request = CallRequest(role, tuple(messages), self.turn, schema, reference)
        self.replies.append(ReferenceModel().complete(request).text)
        return self.replies[-1]


def summarize(previous: str | None, user: str, answer: str = "Noted.", max_chars: int = 700, **scripted: object) -> str:
    """The summary the reference model writes for the summary policy (capped at `max_chars`)
    after one exchange."""
    policy, turn = Summary(None, max_chars), user_turn(user, **scripted)
    if previous is not None:
        policy.summaries["main"] = previous
    aux = ReferenceAux(turn)
    policy.after_answer(turn, answer, aux)
    return aux.replies[-1]


@pytest.mark.parametrize("scripted", ["Restarts were discussed; database is PostgreSQL.", ""])
def test_scripted_summary_is_returned_verbatim(scripted: str) -> None:
    assert summarize("module=Billing", "database=SQL Server 2022", summary=scripted) == scripted


@pytest.mark.parametrize(
    ("previous", "user", "expected"),
    [
        (None, "module=Reporting; database=PostgreSQL", "module=Reporting\ndatabase=PostgreSQL"),
        (
            "module=Reporting\ndatabase=Oracle\nIt hangs.",
            "module=Billing",
            "module=Billing\ndatabase=Oracle\nIt hangs.",
        ),
        ("Statement one.", "version=12", "version=12\nStatement one."),
        ("one\ntwo\nthree\nfour", "five", "two\nthree\nfour\nfive"),
        ("module=Billing", "Which database do we use?", "module=Billing\nThe user asked: Which database do we use?"),
        ("\n  module=Billing  \n\n", "  The   lock\n persists  ", "module=Billing\nThe lock persists"),
        (None, "What now?", "The user asked: What now?"),
        (None, "   ", ""),
    ],
    ids=[
        "declared",
        "correction-in-place",
        "declarations-first",
        "four-statements",
        "question",
        "spaces",
        "only-question",
        "empty",
    ],
)
def test_summary_merge(previous: str | None, user: str, expected: str) -> None:
    assert summarize(previous, user) == expected


NOTES = [f"Incident note {n}: the batch stopped at 0{n}:14 with a lock timeout on the header table." for n in range(4)]


def test_summary_over_the_stated_cap_keeps_declarations_and_prohibitions_first() -> None:
    rule = "Never restart production during business hours."
    previous = "\n".join(["module=Billing", NOTES[0], rule, NOTES[1], NOTES[2]])
    summary = summarize(previous, NOTES[3], max_chars=180)  # the last four statements: 404 characters
    assert summary.splitlines() == ["module=Billing", rule, NOTES[3]]  # in the summary's order


def test_summary_cap_is_read_from_the_prompt_the_policy_sends() -> None:
    long = " ".join(NOTES)  # one statement, longer than either cap
    assert len(summarize(None, long, max_chars=200)) <= 200 < len(summarize(None, long, max_chars=700))


def test_a_summary_statement_too_long_for_the_cap_keeps_its_prohibition_clause() -> None:
    statement = " ".join([*NOTES, "Do not delete the audit tables.", *NOTES])
    summary = summarize("database=Oracle", statement, max_chars=120)
    assert summary == "database=Oracle\nDo not delete the audit tables."


def test_summary_ignores_the_assistant_answer() -> None:
    summary = summarize("module=Billing", "Thanks.", answer="database=Oracle. Restart freely.")
    assert summary == "module=Billing\nThanks."


def write(user: str, writer: tuple[WriterCandidate, ...] | None = None, **keys: object) -> str:
    """The writer reply the reference model gives bounded-facts for one user message."""
    policy, turn = BoundedFacts(None), user_turn(user, writer=writer, **keys)
    policy.view(turn)
    aux = ReferenceAux(turn)
    policy.after_answer(turn, "Noted.", aux)
    return aux.replies[-1]


def test_writer_proposes_the_declarations() -> None:
    text = "module=Billing; database=SQL Server 2022"
    out = write(text)
    assert out == reference_writer_output(text, None)
    facts = json.loads(out)["facts"]
    assert [(f["key"], f["value"]) for f in facts] == [("module", "Billing"), ("database", "SQL Server 2022")]


def test_writer_proposes_the_declarations_of_the_chronologys_keys() -> None:
    facts = json.loads(write("allergy=penicillin; module=Billing", keys=MEDICAL))["facts"]
    assert facts == [{"key": "allergy", "value": "penicillin", "evidence": "allergy=penicillin"}]


def test_summary_merges_corrections_of_the_chronologys_keys_in_place() -> None:
    assert summarize("allergy=penicillin\nIt itches.", "allergy=sulfonamides", keys=MEDICAL) == (
        "allergy=sulfonamides\nIt itches."
    )


@pytest.mark.parametrize(
    "scripted",
    [
        (WriterCandidate("database", "Billing", "module=Billing"),),
        (WriterCandidate("module", "Billing", None),),
        (),
    ],
    ids=["wrong-association", "no-evidence", "empty"],
)
def test_writer_returns_scripted_candidates(scripted: tuple[WriterCandidate, ...]) -> None:
    out = write("module=Billing", scripted)
    expected = [Candidate(c.key, c.value, c.evidence) for c in scripted]
    assert out == reference_writer_output("module=Billing", expected)
    facts = json.loads(out)["facts"]
    assert [(f.get("key"), f.get("value"), f.get("evidence")) for f in facts] == [
        (c.key, c.value, c.evidence) for c in scripted
    ]


def test_a_value_is_read_exactly_as_the_fact_store_and_the_checks_read_it() -> None:
    # One reader: the full stop belongs to the segment, so it is part of the value everywhere.
    assert parse_declarations("database=SQL Server 2022.")["database"].value == "SQL Server 2022."
    assert reply("database=SQL Server 2022.", "Which database?") == "database=SQL Server 2022."


@pytest.mark.parametrize(
    "text",
    ["Sorry, I misread the tag. version=4.2.1", "We moved to version=4.2.1 last night", "Is it version=4.2.1?"],
)
def test_prose_that_quotes_a_declaration_declares_nothing_to_the_reader(text: str) -> None:
    """Issue 9, case 1: the reader took `version=4.2.1` anywhere; the store and checks did not."""
    assert reply("version=4.2.0", text, "Which version?") == "version=4.2.0"


def test_the_reader_reads_its_own_answers_back_as_written() -> None:
    first = reply("module=Billing; database=SQL Server 2022", "What do you know?")
    assert reply(assistant(first), "Which module and database?") == "module=Billing; database=SQL Server 2022"


def test_it_states_itself_a_deterministic_literal_reader_that_cannot_judge() -> None:
    assert ReferenceModel().capabilities == Capabilities(deterministic=True, can_judge=False, reader="literal")
