"""Text from outside: shown as escapes on a terminal, stored as valid Unicode."""

from __future__ import annotations

import os
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.base.text import not_utf8, path_shown, shown, terminal, valid_unicode, visible

# What hostile text sends a terminal: colours and a screen clear (CSI), a hidden link (OSC 8),
# a clipboard write (OSC 52), a bell, a backspace, a carriage return, the 8-bit CSI, NEL, the
# line separator, a right-to-left override, and a lone surrogate.
HOSTILE = (
    "a\x1b[31mred\x1b[2J\x1b]8;;http://evil.example\x07link\x1b]8;;\x07"
    "\x1b]52;c;aGVsbG8=\x07\x08\r\x9b1m\x85\u2028\u202efdp.exe\ud800"
)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31m", "\\x1b[31m"),
        ("\x1b]52;c;aGVsbG8=\x07", "\\x1b]52;c;aGVsbG8=\\x07"),
        ("over\rwrite\x08", "over\\x0dwrite\\x08"),
        ("\x9b2J", "\\x9b2J"),
        ("line\u2028break\x85", "line\\u2028break\\x85"),
        ("\u202eexe.txt", "\\u202eexe.txt"),
        ("half \ud800", "half \\ud800"),
        ("tab\tand\nnewline", "tab\\x09and\\x0anewline"),
        ("plain text, accents é, emoji 👨‍👩‍👧", "plain text, accents é, emoji 👨‍👩‍👧"),
    ],
)
def test_visible_shows_each_control_as_an_escape(raw: str, shown: str) -> None:
    assert visible(raw) == shown


def test_terminal_keeps_a_message_s_lines_and_tabs_and_nothing_else() -> None:
    assert terminal("one\n\ttwo\r\x1b[2J") == "one\n\ttwo\\x0d\\x1b[2J"


@given(st.text())
@pytest.mark.slow
def test_nothing_a_terminal_obeys_is_left(text: str) -> None:
    shown = visible(text)
    assert not any(unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") for c in shown)
    assert "\u202e" not in shown
    shown.encode("utf-8")  # no lone surrogate left either
    assert visible(shown) == shown  # shown once is shown for good


def test_lone_surrogates_become_replacement_characters_and_are_counted() -> None:
    assert valid_unicode("a\ud800b\udfff") == ("a\ufffdb\ufffd", 2)
    assert valid_unicode("\ud83d\ude00") == ("😀", 0)  # a pair in halves is the character it encodes
    assert valid_unicode("already \ufffd valid") == ("already \ufffd valid", 0)


@given(st.lists(st.one_of(st.text(), st.integers(0xD800, 0xDFFF).map(chr))).map("".join))
def test_valid_unicode_can_always_be_written_as_utf8(text: str) -> None:
    fixed, replaced = valid_unicode(text)
    fixed.encode("utf-8")
    assert replaced <= sum(0xD800 <= ord(c) <= 0xDFFF for c in text)


def test_every_kind_of_hostile_text_is_shown_inert() -> None:
    shown = visible(HOSTILE)
    assert "\x1b" not in shown and "\x07" not in shown and "\r" not in shown
    assert shown.startswith("a\\x1b[31mred") and shown.endswith("\\u202efdp.exe\\ud800")


def test_not_utf8_names_the_byte_a_system_name_held() -> None:
    assert not_utf8(os.fsdecode(b"caf\xe9.yaml")) == "byte 0xe9"
    assert not_utf8("half \ud800") == "U+D800"
    assert not_utf8("café ☕") is None


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("plain", "'plain'"),
        ("\x1b[2J" + "x" * 100, "'\\x1b[2Jxxxxxxxxxxxxxxxx'... (104 characters)"),
        (7, "7"),
        ([1, "a"], "[1, 'a']"),
        (list(range(100)), "[0, 1, 2, 3, 4, 5, 6... (390 characters)"),
        (10**5000, "a whole number of about 5,000 digits"),
        ([10**5000], "a list too long to show"),
    ],
    ids=["text", "long-text", "number", "list", "long-list", "huge-number", "list-of-a-huge-number"],
)
def test_shown_quotes_any_outside_value_within_40_characters(value: object, quoted: str) -> None:
    assert shown(value) == quoted


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("results/r", "results/r"),
        ("results/\x1b[2J", "'results/\\x1b[2J'"),
        (
            "/home/me/" + "d" * 4000 + "/results/x.md",
            "'/home/me/ddddddddddd'...'ddddddd/results/x.md' (4,022 characters)",
        ),
    ],
    ids=["short", "unprintable", "long"],
)
def test_a_path_is_named_within_40_characters_its_start_and_its_file_kept(path: str, named: str) -> None:
    assert path_shown(path) == named
