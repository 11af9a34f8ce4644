"""What the offline reader cannot answer, as the report says it: a literal reader (the run records
`reader: literal`) on imported items is named at the report's top; the items' cells lead with
where each probe's evidence was, and their expectations read as not meaningful, counts kept; a
probe that checks nothing reads `nothing checked`, never `nothing lost`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness.report.document import build_report, write_report
from harness.report.glance import NOTHING_CHECKED
from harness.report.offline import NOT_MEANINGFUL, evidence_at_probes, evidence_text
from harness.results.digests import settings_digests
from harness.results.rows import PROBE
from harness.results.tables import Results, load_results
from tests.report.test_items import answering, imported, run, section
from tests.report_text import whole_report

NOTICE = "**The offline reader cannot answer these 6 imported items.**"
KNOWLEDGE_UPDATE = "longmemeval\\_oracle · knowledge-update"


@pytest.fixture(scope="module")
def items_run(tmp_path_factory: pytest.TempPathFactory) -> Results:
    root = tmp_path_factory.mktemp("offline")
    return run(root / "r", imported(root / "chronologies"))


@pytest.fixture(scope="module")
def text(items_run: Results) -> str:
    return build_report(items_run, charts=False)


def row(markdown: str, heading: str, label: str) -> list[str]:
    """The cells of the row of `heading`'s table whose first cell links `label`."""
    [line] = [line for line in section(markdown, heading).splitlines() if line.startswith(f"| [{label}")]
    return [cell.strip() for cell in line.strip("|").split(" | ")]


def test_the_report_says_at_its_top_that_the_offline_reader_cannot_answer_the_items(text: str) -> None:
    head = text[: text.index("## Policies side by side")]
    assert NOTICE in head and "`reference` is a literal reader" in head


def test_a_model_recorded_as_answering_gets_no_notice_and_no_label(items_run: Results, tmp_path: Path) -> None:
    other = build_report(answering(items_run, tmp_path / "answering"), charts=False)
    assert "cannot answer" not in other and NOT_MEANINGFUL not in other


def test_a_run_before_readers_were_recorded_reads_the_reference_as_the_literal_reader(
    items_run: Results, tmp_path: Path
) -> None:
    folder = tmp_path / "before"
    shutil.copytree(items_run.directory, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["model_settings"] = {"reference": {"name": "reference"}}
    manifest["settings_sha256"] = settings_digests(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert NOTICE in build_report(load_results(folder), charts=False)


def test_items_by_category_leads_with_the_evidence_and_labels_the_expectations(text: str) -> None:
    _, _, full, window = row(text, "## Items by category", "factconsolidation")
    assert full.startswith("evidence in view at 2 of 2 probes · ")
    assert window.startswith("evidence in view at 1 of 2 probes; out: 1 left the window · ")
    assert window.endswith(f"expectations {NOT_MEANINGFUL} (offline met: 2/5, judged met: none measured)")


def test_at_a_glance_says_nothing_checked_where_no_probe_checked_anything(text: str) -> None:
    _, full, window = row(text, "## At a glance", "multichallenge · INFERENCE\\_MEMORY")
    assert full == window == f"{NOTHING_CHECKED} in 1 item"
    _, full, window = row(text, "## At a glance", KNOWLEDGE_UPDATE)
    assert full == f"evidence in view 1/1 probe; {NOTHING_CHECKED} in 1 item"  # the literal reader: evidence first


@pytest.mark.slow
def test_an_items_expectations_lead_with_their_evidence_as_not_meaningful(items_run: Results, tmp_path: Path) -> None:
    report = write_report([items_run.directory], tmp_path / "reports", charts=False)
    item = (report.parent / report.stem / "item-longmemeval_oracle-e47becba.md").read_text(encoding="utf-8")
    assert "**The offline reader cannot answer this item**" in item
    [value] = [line for line in item.splitlines() if line.startswith("| question (turn 4) | value: Lisbon |")]
    assert value.endswith(
        f"| evidence in view; {NOT_MEANINGFUL} (not met) | evidence in view; {NOT_MEANINGFUL} (not met) |"
    )


def test_a_hand_written_chronology_whose_probes_check_no_prohibition_or_value_reads_nothing_checked(
    tmp_path: Path,
) -> None:
    chronology = tmp_path / "asked.yaml"
    chronology.write_text(
        "title: Asked\nturns:\n  - user: The database is Oracle.\n    assistant: Noted.\n"
        "  - user: Which database?\n    probe: asked\n    expect:\n      - value: Oracle\n",
        encoding="utf-8",
    )
    text = whole_report(run(tmp_path / "r", [chronology]), charts=False)
    assert row(text, "## At a glance", "asked")[1:] == [NOTHING_CHECKED, NOTHING_CHECKED]
    assert "Nothing checked: no probe of this chronology checked a prohibition or a current value." in text
    assert "Nothing checked was missing" not in text  # which would read as nothing lost


def probes(*rows: tuple[int, str, object, object, str | None]) -> pd.DataFrame:
    """`expect` rows of one column: (turn, status, age, in_view, cause)."""
    return pd.DataFrame(
        [
            {
                PROBE.chronology: "c",
                PROBE.policy: "p",
                PROBE.model: "m",
                PROBE.repetition: 1,
                PROBE.turn: turn,
                PROBE.probe: f"q{turn}",
                PROBE.check: "expect",
                PROBE.status: status,
                PROBE.age: age,
                PROBE.in_view: in_view,
                PROBE.cause: cause,
            }
            for turn, status, age, in_view, cause in rows
        ]
    )


def test_evidence_is_counted_once_per_probe_whatever_its_expectations() -> None:
    evidence = evidence_at_probes(
        probes(
            (2, "measured", 1, True, None),
            (2, "measured", 1, True, None),  # a second expectation of the same probe
            (3, "measured", 2, False, "window"),
            (4, "measured", None, None, None),  # no evidence marked
            (5, "stopped", 4, None, "stopped"),
        )
    )
    assert evidence_text(evidence) == (
        "evidence in view at 1 of 2 probes; out: 1 left the window; 1 not measured (policy stopped or error)"
    )
