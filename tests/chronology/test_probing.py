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
