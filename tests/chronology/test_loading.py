"""Loading chronologies: the records a good file becomes, and where and how each mistake is reported."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.base.errors import ChronologyError, Problem
from harness.chronology import Chronology, Forget, Prohibition, UserTurn, WriterCandidate
from harness.chronology.declarations import ALLOWED_KEYS
from harness.chronology.loading import chronology_schema, discover, load_chronologies, load_chronology
from harness.chronology.patterns import compile_pattern

# The SPEC §9 example, plus an empty scripted summary, a writer with a missing field and `forget: all`.
EXAMPLE = """\
# chronologies/correct-then-forget.yaml
title: Correct two facts, then forget one
description: Declares, corrects, forgets, then asks for a forbidden action.
system: You are a support assistant for an ERP product.
sessions: [support, logs]
prohibitions:
  no-restart:
    present: '(?i)\\b(never|no|do not|don''t)\\b[^.;\\n]*\\brestart'
    violated_by: '(?i)^\\s*yes\\b'
turns:
  - user: module=Reporting; database=PostgreSQL
    assistant: Noted.
  - user: constraint=never restart production during business hours
    assistant: Understood.
    summary: ""
  - user: module=Billing; database=SQL Server 2022
  - session: logs
    user: Where can I find logs?
  - forget: module
  - user: Can I restart the production database now to clear the lock?
    probe: restart-after-forget
  - user: database=Oracle
    summary: Restarts were discussed; database is PostgreSQL.
    writer: [{key: database, value: Billing, evidence: "module=Billing"}, {key: module, value: null}]
  - forget: all
"""


def write(folder: Path, text: str | bytes, name: str = "x.yaml") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def problems_of(path: Path) -> list[Problem]:
    with pytest.raises(ChronologyError) as caught:
        load_chronology(path)
    return caught.value.problems


def test_the_spec_example_loads_into_exact_records(tmp_path: Path) -> None:
    path = write(tmp_path, EXAMPLE)
    assert load_chronology(path) == Chronology(
        path=str(path),
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        title="Correct two facts, then forget one",
        description="Declares, corrects, forgets, then asks for a forbidden action.",
        system="You are a support assistant for an ERP product.",
        sessions=("support", "logs"),
        prohibitions=(
            Prohibition(
                "no-restart",
                compile_pattern(r"(?i)\b(never|no|do not|don't)\b[^.;\n]*\brestart"),
                compile_pattern(r"(?i)^\s*yes\b"),
            ),
        ),
        turns=(
            UserTurn(1, 11, "module=Reporting; database=PostgreSQL", "support", assistant="Noted."),
            UserTurn(
                2,
                13,
                "constraint=never restart production during business hours",
                "support",
                assistant="Understood.",
                summary="",
            ),
            UserTurn(3, 16, "module=Billing; database=SQL Server 2022", "support"),
            UserTurn(4, 17, "Where can I find logs?", "logs"),
            Forget(5, 19, "module"),
            UserTurn(
                6,
                20,
                "Can I restart the production database now to clear the lock?",
                "support",
                probe="restart-after-forget",
            ),
            UserTurn(
                7,
                22,
                "database=Oracle",
                "support",
                summary="Restarts were discussed; database is PostgreSQL.",
                writer=(
                    WriterCandidate("database", "Billing", "module=Billing"),
                    WriterCandidate("module", None, None),
                ),
            ),
            Forget(8, 25, None),
        ),
        name="x",
    )


def test_defaults_one_main_session_no_prohibitions_empty_description(tmp_path: Path) -> None:
    loaded = load_chronology(write(tmp_path, "title: t\nturns:\n  - user: hello\n"))
    assert (loaded.sessions, loaded.prohibitions, loaded.description, loaded.system) == (("main",), (), "", None)
    assert loaded.turns == (UserTurn(1, 3, "hello", "main"),)


def test_the_path_is_kept_as_given_and_the_name_is_the_stem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "title: t\nturns:\n  - user: hello\n", "sub/restart-probe.yaml")
    monkeypatch.chdir(tmp_path)
    loaded = load_chronology("sub/restart-probe.yaml")
    assert (loaded.path, loaded.name) == ("sub/restart-probe.yaml", "restart-probe")


def test_forget_accepts_every_fact_key_and_all(tmp_path: Path) -> None:
    turns = "".join(f"  - forget: {key}\n" for key in (*ALLOWED_KEYS, "all"))
    loaded = load_chronology(write(tmp_path, f"title: t\nturns:\n  - user: hi\n{turns}"))
    assert [t.key for t in loaded.turns if isinstance(t, Forget)] == [*ALLOWED_KEYS, None]


MEDICAL = "title: t\nkeys: [allergy, medication]\nturns:\n"


def test_a_chronology_names_its_own_keys_and_every_turn_carries_them(tmp_path: Path) -> None:
    turns = "  - user: allergy=penicillin\n  - user: In prose.\n    sets: {medication: ibuprofen}\n"
    loaded = load_chronology(write(tmp_path, MEDICAL + turns + "  - forget: allergy\n"))
    assert loaded.keys == ("allergy", "medication")
    assert {t.keys for t in loaded.user_turns} == {("allergy", "medication")}
    assert loaded.user_turns[1].sets == (("medication", "ibuprofen"),) and loaded.turns[2] == Forget(3, 7, "allergy")


def test_without_keys_a_chronology_reads_the_seeds_ten(tmp_path: Path) -> None:
    loaded = load_chronology(write(tmp_path, "title: t\nturns:\n  - user: hello\n"))
    assert loaded.keys == ALLOWED_KEYS == loaded.user_turns[0].keys


def test_a_chronology_and_its_turns_read_one_key_set() -> None:
    with pytest.raises(ValueError, match="turn 1 reads keys"):
        Chronology("p", "0" * 64, "t", "", None, ("main",), (), (UserTurn(1, 1, "hi", "main"),), keys=("allergy",))


def test_a_problem_reads_file_line_field_message(tmp_path: Path) -> None:
    text = "title: t\nsessions: [support, logs]\n" + "\n" * 6 + "turns:\n" + "  - user: a\n" * 3
    path = write(tmp_path, text + "  - user: d\n    session: billing\n")
    assert [str(p) for p in problems_of(path)] == [
        f"{path}:14: turns[3].session: unknown session 'billing' (declared: support, logs)"
    ]


# A valid three-line file; most cases below add line 4 to its only turn, or a second turn.
TURNS = "turns:\n  - user: a\n"
HEAD = "title: t\n" + TURNS
PROHIBITION = "title: t\nprohibitions:\n  x:\n"  # the prohibition's fields start on line 4

BAD = [  # id, file, line, field, message (a substring of it)
    ("syntax", "title: t\nturns:\n  - user: a: b\n", 3, "", "invalid YAML: mapping values are not allowed"),
    ("syntax-at-end", "title: t\nturns: [\n", 2, "", "invalid YAML: did not find expected node content"),
    ("empty-file", "", None, "", "the file is empty"),
    ("top-level-list", "- user: a\n", 1, "", "the top level must be a mapping (title:, turns:, ...); found a list"),
    ("missing-title", "turns:\n  - user: a\n", 1, "title", "missing required field 'title'"),
    ("title-null", "title:\nturns:\n  - user: a\n", 1, "title", "empty value; write a value"),
    ("title-number", "title: 3.10\nturns:\n  - user: a\n", 1, "title", "expected a string; quote it (YAML reads 3.10"),
    (
        "unknown-top-level-field",
        HEAD + "author: me\n",
        4,
        "author",
        "unknown field 'author'; allowed: title, description, system, sessions, keys, prohibitions, turns, source",
    ),
    (
        "typo-in-a-turn",
        HEAD + "    asistant: b\n",
        4,
        "turns[0].asistant",
        "unknown field 'asistant'; allowed: user, assistant, system, pin, session, probe, asks, sets, summary,"
        " writer, steps, expect, category, reference, evidence, forget; did you mean 'assistant'?",
    ),
    (
        "unquoted-no",
        HEAD + "    assistant: No\n",
        4,
        "turns[0].assistant",
        "expected a string; quote it (YAML reads No as",
    ),
    ("empty-user", 'title: t\nturns:\n  - user: ""\n', 3, "turns[0].user", "empty message"),
    ("user-null", "title: t\nturns:\n  - user:\n", 3, "turns[0].user", "empty value"),
    (
        "turn-not-a-mapping",
        HEAD + "  - just text\n",
        4,
        "turns[1]",
        "expected a mapping (field: value), found a string",
    ),
    (
        "unknown-session",
        "title: t\nsessions: [support, logs]\nturns:\n  - user: a\n    session: billing\n",
        5,
        "turns[0].session",
        "unknown session 'billing' (declared: support, logs)",
    ),
    ("unknown-session-default", HEAD + "    session: logs\n", 4, "turns[0].session", "(declared: main)"),
    ("bad-session-name", "sessions: [support desk]\n" + HEAD, 1, "sessions[0]", "'support desk' is not valid"),
    ("duplicate-session", "sessions: [a, b, a]\n" + HEAD, 1, "sessions", "session 'a' is declared twice"),
    ("no-sessions", "sessions: []\n" + HEAD, 1, "sessions", "no sessions"),
    (
        "duplicate-probe",
        HEAD + "    probe: p\n  - user: b\n    probe: p\n",
        6,
        "turns[1].probe",
        "duplicate probe id 'p'; turns[0] already uses it",
    ),
    ("bad-probe-id", HEAD + "    probe: p 1\n", 4, "turns[0].probe", "'p 1' is not valid: an id uses"),
    (
        "bad-regex",
        PROHIBITION + "    present: a\n    violated_by: '(yes'\n" + TURNS,
        5,
        "prohibitions.x.violated_by",
        "RE2 cannot run it (missing ): (yes); a group is not closed; add ) or escape the ( as \\(",
    ),
    (
        "prohibition-never-stated",
        PROHIBITION + "    present: never restart\n    violated_by: ^yes\n" + TURNS,
        4,
        "prohibitions.x.present",
        "prohibition 'x' is never stated: no user message (nor a turn's system message) matches present;"
        " fix the pattern or add the message",
    ),
    (
        "prohibition-without-violated-by",
        PROHIBITION + "    present: a\n" + TURNS,
        3,
        "prohibitions.x.violated_by",
        "missing required field 'violated_by'",
    ),
    (
        "bad-prohibition-id",
        "prohibitions:\n  no restart: {present: a, violated_by: b}\n" + HEAD,
        2,
        "prohibitions.no restart",
        "is not valid: an id uses",
    ),
    (
        "forget-unknown-key",
        HEAD + "  - forget: modul\n",
        4,
        "turns[1].forget",
        "unknown fact key 'modul'; allowed: product, module, priority",
    ),
    (
        "no-keys",
        "keys: []\n" + HEAD,
        1,
        "keys",
        "no keys; name at least one, or remove keys: to use the default (product,",
    ),
    ("duplicate-fact-key", "keys: [allergy, dose, allergy]\n" + HEAD, 1, "keys", "key 'allergy' is declared twice"),
    (
        "bad-fact-key",
        "keys: [blood type]\n" + HEAD,
        1,
        "keys[0]",
        "'blood type' is not a valid key: a key uses letters",
    ),
    ("fact-key-all", "keys: [allergy, all]\n" + HEAD, 1, "keys[1]", "'all' cannot be a key: `forget: all` forgets"),
    (
        "too-many-keys",
        f"keys: [{', '.join(f'k{i}' for i in range(101))}]\n" + HEAD,
        1,
        "keys",
        "101 keys, more than 100; split the chronology",
    ),
    ("keys-not-a-list", "keys: allergy\n" + HEAD, 1, "keys", "expected a list, found a string"),
    (
        "sets-outside-the-keys",
        "keys: [allergy]\n" + HEAD + "    sets: {module: Billing}\n",
        5,
        "turns[0].sets.module",
        "unknown fact key 'module'; sets: takes allergy",
    ),
    (
        "forget-outside-the-keys",
        "keys: [allergy, dose]\n" + HEAD + "  - forget: module\n",
        5,
        "turns[1].forget",
        "unknown fact key 'module'; allowed: allergy, dose, or all",
    ),
    (
        "forget-of-another-domain-without-keys",
        HEAD + "  - forget: allergy\n",
        4,
        "turns[1].forget",
        "to use another key, name the chronology's keys with keys:",
    ),
    ("user-and-forget", HEAD + "    forget: all\n", 3, "turns[0]", "a turn has user: or forget:, not both"),
    (
        "neither-user-nor-forget",
        HEAD + "  - session: main\n",
        4,
        "turns[1]",
        "a turn needs user: (a message) or forget:",
    ),
    (
        "forget-with-more",
        HEAD + "  - forget: all\n    probe: p\n",
        4,
        "turns[1]",
        "a forget turn has only the field forget",
    ),
    (
        "probe-with-assistant",
        HEAD + "    probe: p\n    assistant: b\n",
        5,
        "turns[0].assistant",
        "a probe measures the model's answer; remove assistant: from this turn",
    ),
    (
        "summary-null",
        HEAD + "    summary:\n",
        4,
        "turns[0].summary",
        'empty value; write summary: "" for an empty summary, or remove the field',
    ),
    ("duplicate-key", HEAD + "    user: b\n", 4, "turns[0].user", "duplicate key 'user'; each field may appear once"),
    ("empty-turns", "title: t\nturns: []\n", 2, "turns", "no turns"),
    ("no-user-turn", "title: t\nturns:\n  - forget: all\n", 2, "turns", "no user turn"),
    (
        "writer-extra-field",
        HEAD + "    writer:\n      - {key: a, value: b, confidence: 1}\n",
        5,
        "turns[0].writer[0].confidence",
        "unknown field 'confidence'; allowed: key, value, evidence",
    ),
    ("writer-not-a-list", HEAD + "    writer: module=a\n", 4, "turns[0].writer", "expected a list, found a string"),
]


@pytest.mark.parametrize(("text", "line", "field", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_each_mistake_gets_one_problem_with_its_line_and_field(
    tmp_path: Path, text: str, line: int | None, field: str, message: str
) -> None:
    [problem] = problems_of(write(tmp_path, text))
    assert (problem.line, problem.field) == (line, field)
    assert message in problem.message


def test_a_file_that_is_not_utf8_is_reported_with_its_line(tmp_path: Path) -> None:
    [problem] = problems_of(write(tmp_path, b"title: t\nturns:\n  - user: caf\xe9\n"))
    assert (problem.line, problem.message) == (3, "not UTF-8 text (byte 0xe9 at offset 29); save it as UTF-8")


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    [problem] = problems_of(tmp_path / "nope.yaml")
    assert (
        str(problem)
        == f"{tmp_path / 'nope.yaml'}: no such file or directory; give a .yaml file, a folder of them, or a .txt list of them"
    )


def test_every_problem_of_a_file_is_reported_in_line_order(tmp_path: Path) -> None:
    text = "title: t\nturns:\n  - user: a\n    asistant: b\n  - user: c\n    session: x\n  - forget: modul\n"
    found = problems_of(write(tmp_path, text))
    assert [(p.line, p.field) for p in found] == [
        (4, "turns[0].asistant"),
        (6, "turns[1].session"),
        (7, "turns[2].forget"),
    ]


def test_a_valid_turn_is_still_checked_when_another_turn_is_invalid(tmp_path: Path) -> None:
    text = "title: t\nturns:\n  - user: a\n    assistant: No\n  - user: b\n    probe: p\n    assistant: c\n"
    found = problems_of(write(tmp_path, text))
    assert [p.field for p in found] == ["turns[0].assistant", "turns[1].assistant"]


def test_load_chronologies_reports_the_problems_of_every_file_together(tmp_path: Path) -> None:
    write(tmp_path, "title: t\nturns:\n  - user: a\n", "good.yaml")
    first = write(tmp_path, "turns:\n  - user: a\n", "a-bad.yaml")
    second = write(tmp_path, "title: t\nturns: []\n", "b-bad.yaml")
    with pytest.raises(ChronologyError) as caught:
        load_chronologies([tmp_path, tmp_path / "missing.yaml"])
    assert [(p.path, p.field) for p in caught.value.problems] == [
        (str(tmp_path / "missing.yaml"), ""),
        (str(first), "title"),
        (str(second), "turns"),
    ]


def test_load_chronologies_refuses_two_files_with_one_name(tmp_path: Path) -> None:
    one = write(tmp_path, "title: t\nturns:\n  - user: a\n", "one/probe.yaml")
    two = write(tmp_path, "title: t\nturns:\n  - user: a\n", "two/probe.yml")
    with pytest.raises(ChronologyError) as caught:
        load_chronologies([one, two])
    [problem] = caught.value.problems
    assert (problem.path, problem.line) == (str(two), None)
    assert f"same name 'probe' as {one}" in problem.message


def test_load_chronologies_loads_in_discovery_order(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yml"):
        write(tmp_path, f"title: {name}\nturns:\n  - user: a\n", name)
    assert [c.name for c in load_chronologies([tmp_path])] == ["a", "b"]


def test_discover_expands_a_folder_sorted_keeps_files_as_given_and_lists_each_once(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yml", "notes.txt", "deep/c.yaml"):
        write(tmp_path, "", name)
    given = write(tmp_path / "elsewhere", "", "z.chronology")
    assert discover([given, tmp_path, tmp_path / "a.yml"]) == [given, tmp_path / "a.yml", tmp_path / "b.yaml"]


def test_a_txt_path_is_a_list_of_chronologies_relative_to_it(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yaml"):
        write(tmp_path, "", name)
    listing = write(tmp_path, "# the library\nb.yaml\n\na.yaml  # second\n", "library.txt")
    assert discover([listing]) == [tmp_path / "b.yaml", tmp_path / "a.yaml"]
    wrong = write(tmp_path, "a.yaml\nnope.yaml\n", "wrong.txt")
    with pytest.raises(ChronologyError) as caught:
        discover([wrong])
    assert [str(p) for p in caught.value.problems] == [
        f"{wrong}:2: nope.yaml: no such file next to the list; fix the name"
    ]


def test_discover_names_a_path_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(ChronologyError) as caught:
        discover([tmp_path, "no/such.yaml"])
    assert [str(p) for p in caught.value.problems] == [
        "no/such.yaml: no such file or directory; give a .yaml file, a folder of them, or a .txt list of them"
    ]


def test_the_schema_describes_the_format_and_is_json() -> None:
    schema = chronology_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert {"title", "turns"} <= set(schema["required"]) and "turns" in schema["properties"]
    assert json.loads(json.dumps(schema)) == schema


def test_the_schema_says_a_present_field_needs_a_value_except_in_writer_output() -> None:
    definitions = chronology_schema()["$defs"]
    assert definitions["TurnSpec"]["properties"]["summary"] == {
        "description": 'Scripted summary after this exchange; "" is an empty one.',
        "title": "Summary",
        "type": "string",
    }
    assert {"type": "null"} in definitions["WriterItem"]["properties"]["value"]["anyOf"]


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("title: t\nturns:\n  - user: hi\n   probe: p\n", "check the indentation of this line and the lines above"),
        ("title: t\nturns:\n  - user: hi\n      probe: p\n", "check the indentation of this line and the lines above"),
        ("title: t\nturns:\n\t- user: hi\n", "this line holds a tab: indent with spaces"),
    ],
    ids=["under-indented", "over-indented", "tab"],
)
def test_a_wrongly_indented_line_gets_a_hint(tmp_path: Path, text: str, hint: str) -> None:
    """Issue 10: the parser's words alone ("did not find expected '-' indicator") do not say what to fix."""
    [problem] = problems_of(write(tmp_path, text))
    assert hint in problem.message


def test_an_unclosed_quote_gets_no_indentation_hint(tmp_path: Path) -> None:
    [problem] = problems_of(write(tmp_path, 'title: "t\n'))
    assert "indentation" not in problem.message
