"""A file that is not a chronology (a system file a batch or a list names by mistake or by
malice) is said to be one, at its line, without a word of its text; a chronology's own mistakes
quote it only as a short, printable excerpt."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.base.errors import ChronologyError
from harness.chronology.loading import discover, load_chronology
from harness.chronology.safe_yaml import shown

SHADOW = "".join(f"user{i}:$6$SECRET-HASH-{i}:19000:0:99999:7:::\n" for i in range(40))
PROC_STATUS = "Name:\tpython3\nUmask:\t0022\nState:\tR (running)\nTgid:\t4242\nSECRET_TOKEN: abc123\n"


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ChronologyError) as caught:
        load_chronology(path)
    return [str(p) for p in caught.value.problems]


@pytest.mark.parametrize("text", [SHADOW, PROC_STATUS, "\n\n# a comment first\nSECRET-HASH: 1\n"])
def test_a_mapping_with_no_chronology_field_is_not_a_chronology_and_none_of_it_is_shown(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "shadow"
    path.write_text(text)
    found = problems_of(path)
    line = next(i for i, row in enumerate(text.splitlines(), start=1) if row and not row.startswith("#"))
    assert found == [
        f"{path}:{line}: not a chronology: none of its top-level keys is a chronology field (title, turns, ...); "
        "give a chronology file (`harness new NAME` writes one)"
    ]
    assert "SECRET" not in "".join(found) and "python3" not in "".join(found)


def test_a_chronology_with_misspelt_fields_is_still_told_which(tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text("Title: t\nturn:\n  - user: a\n")
    assert any("did you mean 'title'?" in p for p in problems_of(path))


def test_an_unknown_field_is_quoted_short_and_printable(tmp_path: Path) -> None:
    path = tmp_path / "odd.yaml"
    key = "\x1b]0;owned\x07" + "K" * 500
    path.write_text(
        f'title: t\nturns:\n  - user: a\n"{key.replace(chr(27), chr(92) + "e").replace(chr(7), chr(92) + "a")}": 1\n'
    )
    [problem] = problems_of(path)
    assert "\x1b" not in problem and "\x07" not in problem and "K" * 30 not in problem
    assert problem.startswith(f"{path}:4: ") and "(510 characters)" in problem and "unknown field" in problem


def test_an_undefined_alias_is_named_short(tmp_path: Path) -> None:
    path = tmp_path / "alias.yaml"
    path.write_text("title: t\nturns: *" + "A" * 5000 + "\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}:2: invalid YAML: found undefined alias") and len(problem) < 300


def test_a_list_that_is_no_list_of_chronologies_is_said_to_be_none_without_its_lines(tmp_path: Path) -> None:
    listing = tmp_path / "notes.txt"
    listing.write_text(SHADOW)
    with pytest.raises(ChronologyError) as caught:
        discover([listing])
    assert [str(p) for p in caught.value.problems] == [
        f"{listing}: not a list of chronologies: none of its 40 entries names a file next to it; "
        "a .txt list names one chronology file per line"
    ]


def test_a_list_entry_that_names_no_file_is_quoted_short_and_printable(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("")
    listing = tmp_path / "library.txt"
    listing.write_text("a.yaml\n" + "\x1b[2J" + "x" * 300 + ".yaml\n")
    with pytest.raises(ChronologyError) as caught:
        discover([listing])
    [problem] = [str(p) for p in caught.value.problems]
    assert (
        problem
        == f"{listing}:2: {shown(chr(27) + '[2J' + 'x' * 300 + '.yaml')}: no such file next to the list; fix the name"
    )
    assert "\x1b" not in problem and len(problem) < 200


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("title", "'title'"),
        ("\x1b[31mred", "'\\x1b[31mred'"),
        ("\u202eevil", "'\\u202eevil'"),
        ("a\u2028b", "'a\\u2028b'"),
        ("x" * 100, "'xxxxxxxxxxxxxxxxxxxx'... (100 characters)"),
    ],
)
def test_an_excerpt_is_short_and_every_character_in_it_printable(text: str, expected: str) -> None:
    assert shown(text) == expected


@pytest.mark.parametrize(
    "turn",
    [
        "  - user: a\n    session: " + "s" * 300,
        "  - user: a\n  - forget: " + "k" * 300,
        "  - user: a\n    sets: {" + "k" * 300 + ": v}",
    ],
    ids=["session", "forget", "sets"],
)
def test_a_long_name_in_a_chronology_is_quoted_short(tmp_path: Path, turn: str) -> None:
    path = tmp_path / "long.yaml"
    path.write_text(f"title: t\nturns:\n{turn}\n")
    found = problems_of(path)
    assert found and all(len(p) < 400 and "(300 characters)" in p for p in found), found
