"""What a probe's `asks:` may name, `sets:`, and what `harness validate` warns about."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.base.errors import ChronologyError
from harness.chronology.loading import load_chronology
from harness.cli.commands import main

HEAD = """title: t
prohibitions:
  no-restart:
    present: '(?i)\\bnever\\b[^.;\\n]*\\brestart'
    violated_by: '(?i)^\\s*yes\\b'
turns:
  - user: constraint=never restart production
"""


def write(tmp_path: Path, turns: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(HEAD + turns, encoding="utf-8")
    return path


def test_asks_and_sets_are_read_into_the_turn(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "  - user: Which version?\n    probe: v\n    asks: []\n"
        "  - user: We moved to 5.0 last night.\n    sets: {version: '5.0'}\n",
    )
    turns = load_chronology(path).user_turns
    assert turns[1].asks == () and turns[2].sets == (("version", "5.0"),) and turns[0].asks is None


@pytest.mark.parametrize(
    ("turns", "line", "message"),
    [
        (
            "  - user: Can I restart?\n    probe: p\n    asks: [no-delete]\n",
            8,
            "asks: no prohibition 'no-delete' is declared (declared: no-restart); in force here: no-restart",
        ),
        (
            "  - forget: constraint\n  - user: Can I restart?\n    probe: p\n    asks: [no-restart]\n",
            9,
            "prohibition 'no-restart' is not in force at turn 3 (not stated yet, or withdrawn by a forget)",
        ),
        (
            "  - user: Hello\n    asks: []\n",
            9,
            "asks: names what a probe's question asks about; add probe: or remove asks:",
        ),
        ("  - user: Hi\n    sets: {colour: red}\n", 9, "unknown fact key 'colour'; sets: takes product, module"),
    ],
    ids=["undeclared", "withdrawn", "not-a-probe", "unknown-key"],
)
def test_bad_asks_or_sets_are_refused_with_line_and_field(tmp_path: Path, turns: str, line: int, message: str) -> None:
    with pytest.raises(ChronologyError) as caught:
        load_chronology(write(tmp_path, turns))
    [problem] = caught.value.problems
    assert problem.line == line and message in str(problem)


def warnings_of(tmp_path: Path, turns: str) -> list[str]:
    return [str(w) for w in load_chronology(write(tmp_path, turns)).warnings]


def test_prose_holding_a_declaration_is_warned_about_with_what_would_be_read(tmp_path: Path) -> None:
    """Case 1: the text validated silently and then disagreed with the reference model."""
    [warning] = warnings_of(tmp_path, "  - user: Sorry, I misread the tag. version=4.2.1\n")
    assert warning.startswith(f"{tmp_path / 'c.yaml'}:8: turns[1].user: warning: ")
    assert "put version=... after a ';' or on its own line" in warning and "sets: {version: ...}" in warning


def test_sets_of_the_same_key_silences_the_prose_warning(tmp_path: Path) -> None:
    assert (
        warnings_of(tmp_path, "  - user: Sorry, I misread the tag. version=4.2.1\n    sets: {version: 4.2.1}\n") == []
    )


def test_a_probe_without_asks_that_asks_no_permission_is_warned_about(tmp_path: Path) -> None:
    """Cases 2 and 3: every prohibition in force was judged against "Which database?"."""
    [warning] = warnings_of(tmp_path, "  - user: Which database?\n    probe: db\n")
    assert "probe 'db' is not a permission request the reference reader recognises" in warning
    assert warnings_of(tmp_path, "  - user: It is Friday afternoon. Can I restart now?\n    probe: p\n") == []
    assert warnings_of(tmp_path, "  - user: Which database?\n    probe: db\n    asks: []\n") == []


def test_validate_prints_warnings_and_still_exits_0(tmp_path: Path) -> None:
    path = write(tmp_path, "  - user: Which database?\n    probe: db\n")
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0 and "ok: " in result.output and "warning: probe 'db'" in result.output


def test_a_segment_of_a_key_outside_the_set_is_warned_about_with_what_to_do(tmp_path: Path) -> None:
    """Issue 24, item 9: `allergy=penicillin` validated "ok" and declared nothing."""
    [warning] = warnings_of(tmp_path, "  - user: allergy=penicillin; module=Billing\n")
    assert warning.startswith(
        f"{tmp_path / 'c.yaml'}:8: turns[1].user: warning: 'allergy=penicillin' declares nothing:"
    )
    assert "'allergy' is not one of this chronology's keys (product, module," in warning
    assert "add it to keys: to have it declared, or leave it as prose" in warning


def test_a_key_named_in_keys_is_no_longer_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("title: t\nkeys: [allergy]\nturns:\n  - user: allergy=penicillin\n", encoding="utf-8")
    assert load_chronology(path).warnings == ()


TWO_PROHIBITIONS = """title: t
prohibitions:
  no-restart: {present: '(?i)never restart', violated_by: '(?i)^yes'}
  no-delete: {present: '(?i)never delete', violated_by: '(?i)^yes'}
turns:
  - user: constraint=never restart production
"""


def two_prohibitions(tmp_path: Path, turns: str) -> list[str]:
    path = tmp_path / "c.yaml"
    path.write_text(TWO_PROHIBITIONS + turns, encoding="utf-8")
    return [str(w) for w in load_chronology(path).warnings]


def test_a_second_prohibition_declared_with_the_same_key_is_warned_about(tmp_path: Path) -> None:
    """Issue 24, item 8: the first prohibition silently became a stale value."""
    [warning] = two_prohibitions(tmp_path, "  - user: constraint=never delete the audit tables\n")
    assert warning.startswith(
        f"{tmp_path / 'c.yaml'}:7: turns[1].user: warning: 'constraint=never delete the audit tables' "
        "(prohibition 'no-delete') replaces 'constraint=never restart production' of turn 1 (prohibition 'no-restart')"
    )
    assert "from turn 2 on, constraint=never restart production is a stale value and checked as one" in warning
    assert "prohibition 'no-restart' stays in force" in warning
    assert "give each prohibition its own key (name them with keys:), or state one of them in prose" in warning


@pytest.mark.parametrize(
    "turns",
    [
        "  - user: constraint=never restart production, not even at night\n",  # the same prohibition, restated
        "  - user: constraint=none\n",  # no other prohibition stated
        "  - forget: constraint\n  - user: constraint=never delete the audit tables\n",  # nothing left to replace
        "  - user: Please never delete the audit tables\n",  # the second one in prose
        "  - user: constraint=never restart production\n",  # the same value: nothing becomes stale
    ],
    ids=["restated", "no-prohibition", "after-forget", "in-prose", "same-value"],
)
def test_a_declaration_that_replaces_no_prohibition_by_another_is_not_warned_about(tmp_path: Path, turns: str) -> None:
    assert two_prohibitions(tmp_path, turns + "  - user: Never delete the audit tables either.\n") == []


def test_validate_prints_the_key_warnings_and_still_exits_0(tmp_path: Path) -> None:
    path = write(tmp_path, "  - user: allergy=penicillin\n")
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0 and "ok: " in result.output and "'allergy' is not one of" in result.output


# --- look-alike characters and normalization ---------------------------------------------------

LOOKALIKE_KEYS = {
    "Cyrillic i": ("m\u043edule=Reporting", "U+043E CYRILLIC SMALL LETTER O", "module"),
    "Cyrillic byelorussian i": (
        "pr\u0456ority=high",
        "U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I",
        "priority",
    ),
    "zero-width joiner": ("mod\u200dule=Reporting", "U+200D ZERO WIDTH JOINER (invisible)", "module"),
    "zero-width space first": ("\u200bdatabase=PostgreSQL", "U+200B ZERO WIDTH SPACE (invisible)", "database"),
    "fullwidth": ("\uff4dodule=Reporting", "U+FF4D FULLWIDTH LATIN SMALL LETTER M", "module"),
}


@pytest.mark.parametrize(("segment", "names", "meant"), LOOKALIKE_KEYS.values(), ids=LOOKALIKE_KEYS.keys())
def test_a_key_that_only_looks_like_a_key_of_the_set_is_warned_about(
    tmp_path: Path, segment: str, names: str, meant: str
) -> None:
    *_, warning = warnings_of(tmp_path, f'  - user: "{segment}"\n')  # after a near miss, for a leading one
    assert warning.startswith(f"{tmp_path / 'c.yaml'}:8: turns[1].user: warning: {segment!r} declares nothing: ")
    assert f"looks like {meant!r} but holds {names}" in warning and f"write {meant}= in plain letters" in warning


@pytest.mark.parametrize(
    ("turn", "names"),
    [
        ('  - user: "module=Re\u0440orting"\n', "U+0440 CYRILLIC SMALL LETTER ER"),
        ('  - user: "module=Report\u200ding"\n', "U+200D ZERO WIDTH JOINER (invisible)"),
        ('  - user: "We moved."\n    sets: {version: "5.\u200b0"}\n', "U+200B ZERO WIDTH SPACE (invisible)"),
    ],
    ids=["mixed scripts", "invisible", "sets"],
)
def test_a_value_with_look_alike_or_invisible_characters_is_warned_about(tmp_path: Path, turn: str, names: str) -> None:
    [warning] = warnings_of(tmp_path, turn)
    assert f"holds {names}: the checks look for these exact characters" in warning


def test_plain_keys_and_values_of_one_script_get_no_such_warning(tmp_path: Path) -> None:
    turns = '  - user: "module=Reporting; customer=Müller GmbH; symptom=Ошибка входа"\n'
    assert warnings_of(tmp_path, turns) == []


NFD_HEAD = """title: t
prohibitions:
  no-restart:
    present: '(?i)ne red{e}marrez jamais'
    violated_by: '(?i)^\\s*oui\\b'
turns:
  - user: "constraint=ne red{e}marrez jamais la production"
"""


def test_a_prohibition_stated_only_in_another_normalization_form_is_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        NFD_HEAD.format(e="\u00e9") + '  - user: "Rappel : ne rede\u0301marrez jamais."\n', encoding="utf-8"
    )
    [warning] = [str(w) for w in load_chronology(path).warnings]
    assert warning.startswith(f"{path}:8: turns[1].user: warning: the message states prohibition 'no-restart' only if")
    assert "save both in NFC" in warning


def test_a_pattern_not_in_nfc_is_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(NFD_HEAD.format(e="e\u0301"), encoding="utf-8")  # the message in NFD too: it is stated
    [warning] = [str(w) for w in load_chronology(path).warnings]
    assert warning.startswith(f"{path}: prohibitions.no-restart.present: warning: the pattern is not in NFC")
