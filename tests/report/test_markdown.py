"""Chronology text in tables is data: it cannot break a row or inject markup."""

from __future__ import annotations

import pytest

from harness.report.markdown import cell, code, table

HOSTILE = ["a | b", "line\nbreak", "`code`", "<script>alert(1)</script>", "**bold** _it_ [x](y)", "back\\slash|"]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_cell_keeps_the_row_shape(text: str) -> None:
    rendered = table(["a", "b"], [[text, "ok"]])
    row = rendered.splitlines()[2]
    assert len(rendered.splitlines()) == 3
    assert row.replace("\\|", "").count("|") == 3


def test_html_is_escaped() -> None:
    assert "<script>" not in cell("<script>")


def test_missing_values_are_blank() -> None:
    assert cell(None) == "" and cell(float("nan")) == ""


def test_a_row_of_the_wrong_width_is_refused() -> None:
    with pytest.raises(ValueError):
        table(["a", "b"], [["only one"]])


def test_control_characters_in_a_cell_are_shown_as_escapes() -> None:
    assert cell("red \x1b[31m \x1b]52;c;aGk=\x07 \u202e \ud800") == (
        "red \\\\x1b\\[31m \\\\x1b\\]52;c;aGk=\\\\x07 \\\\u202e \\\\ud800"
    )  # each escape's backslash escaped in turn: the page shows `\x1b[31m`
    assert cell("two\r\nlines\u2028three") == "two lines three"  # a line break is a space, as before


def test_a_remote_image_or_a_tag_is_text() -> None:
    assert cell("![](http://evil.example/i.png) <img src=x>") == "!\\[\\](http://evil.example/i.png) &lt;img src=x&gt;"


def test_a_command_with_control_characters_is_not_inline_code() -> None:
    assert code("harness show --chronology x") == "`harness show --chronology x`"
    assert code("harness show --chronology '\x1b[2J'") == "harness show --chronology '\\\\x1b\\[2J'"
