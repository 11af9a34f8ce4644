"""Chronology text in tables is data: it cannot break a row or inject markup."""

from __future__ import annotations

import pytest

from harness.report.markdown import cell, table

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
