"""A chronology of another domain, with its own `keys:`: its declarations and corrections are
read by the checks, the fact store and the reference model alike (issue 24, item 9)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.chronology.ledger import Ledger
from harness.chronology.loading import load_chronology
from harness.results.tables import load_results
from tests.conftest import run_through_cli

MEDICATION = Path(__file__).parent / "examples" / "medication.yaml"


def test_it_validates_without_warnings_and_names_its_keys() -> None:
    chronology = load_chronology(MEDICATION)
    assert chronology.keys == ("patient", "allergy", "medication", "dose") and chronology.warnings == ()


def test_the_ledger_sees_its_declarations_and_both_corrections() -> None:
    ledger = Ledger(load_chronology(MEDICATION))
    state = ledger.after(4)
    assert {v.subject for v in state.current.values()} == {
        "patient=Bed 4",
        "allergy=sulfonamides",
        "medication=azithromycin 250 mg",
        "dose=three times a day",
    }
    assert {(v.subject, v.since) for v in state.stale.values()} == {
        ("allergy=penicillin", 3),
        ("medication=amoxicillin 500 mg", 4),
    }


def test_without_keys_it_declares_nothing_and_validate_says_so(tmp_path: Path) -> None:
    text = MEDICATION.read_text(encoding="utf-8").replace("keys: [patient, allergy, medication, dose]\n", "")
    (tmp_path / "medication.yaml").write_text(text, encoding="utf-8")
    chronology = load_chronology(tmp_path / "medication.yaml")
    assert Ledger(chronology).after(4).current == {}
    flagged = [w.message.split(" declares nothing")[0] for w in chronology.warnings]
    assert flagged == [
        "warning: 'patient=Bed 4'",
        "warning: 'allergy=penicillin'",
        "warning: 'medication=amoxicillin 500 mg'",
        "warning: 'dose=three times a day'",
        "warning: 'allergy=sulfonamides'",
        "warning: 'medication=azithromycin 250 mg'",
    ]


def test_a_run_reports_its_corrections_and_stores_its_facts(tmp_path: Path) -> None:
    run = run_through_cli(
        tmp_path, [MEDICATION], "med", "--policy", "full-history", "--policy", "bounded-facts", "--no-charts"
    )
    probes = load_results(run).probes
    stale = probes[(probes.probe == "chart") & (probes.check == "stale")].set_index(["policy", "subject"])
    assert stale.in_view.to_dict() == {
        ("full-history", "allergy=penicillin"): True,
        ("full-history", "medication=amoxicillin 500 mg"): True,
        ("bounded-facts", "allergy=penicillin"): False,
        ("bounded-facts", "medication=amoxicillin 500 mg"): False,
    }
    chart = probes[(probes.probe == "chart") & (probes.check == "current")]
    assert chart[chart.subject.str.startswith(("allergy=", "medication="))].in_answer.map(bool).all()
    facts = pd.read_json(run / "facts.jsonl", lines=True)
    last = facts.iloc[-1]["facts"]
    assert {(f["key"], f["value"]) for f in last} >= {
        ("allergy", "sulfonamides"),
        ("medication", "azithromycin 250 mg"),
    }
