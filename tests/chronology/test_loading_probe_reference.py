"""A probe's own `category:` and `reference:` (a benchmark whose one item asks questions of several
categories, and whose metric needs the published answer): loaded into the probe's record, refused
off a probe."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.base.errors import ChronologyError
from harness.chronology import load_chronology
from harness.chronology.types import Reference

PROBE = "title: t\nturns:\n  - user: When did Ana adopt her dog?\n    probe: q1\n"


def load(tmp_path: Path, text: str):
    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8")
    return load_chronology(path)


def test_a_probe_keeps_its_category_and_reference_answer(tmp_path: Path) -> None:
    text = PROBE + "    category: 2 temporal\n    reference: {answer: 3 March 2023}\n"
    [probe] = load(tmp_path, text).probes
    assert (probe.category, probe.reference) == ("2 temporal", Reference("3 March 2023"))


def test_a_reference_may_name_the_prefix_an_answer_must_start_with(tmp_path: Path) -> None:
    [probe] = load(tmp_path, PROBE + "    reference: {answer: aYooSG8CQgpoem, prefix: aYooSG8CQg}\n").probes
    assert probe.reference == Reference("aYooSG8CQgpoem", "aYooSG8CQg")


def test_without_them_a_probe_has_neither(tmp_path: Path) -> None:
    [probe] = load(tmp_path, PROBE).probes
    assert (probe.category, probe.reference) == (None, None)


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("title: t\nturns:\n  - user: a\n    category: x\n", "turns[0].category", "add probe: or remove category:"),
        ("title: t\nturns:\n  - user: a\n    reference: {answer: x}\n", "turns[0].reference", "add probe:"),
        (PROBE + "    reference: {prefix: x}\n", "turns[0].reference.answer", "missing"),
        (PROBE + "    category: ''\n", "turns[0].category", "empty text"),
    ],
)
def test_misplaced_or_incomplete_they_are_refused_naming_the_field(
    tmp_path: Path, text: str, field: str, message: str
) -> None:
    with pytest.raises(ChronologyError) as caught:
        load(tmp_path, text)
    assert any(p.field == field and message in p.message for p in caught.value.problems), caught.value.problems
