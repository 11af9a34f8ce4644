"""Values that hold on real text (SPEC section 10, "A value is a whole"), end to end: the
adversarial chronology tests/run/fixtures/whole-values.yaml replayed under several policies,
each probe answered by a scripted answer of the shape an audit of real runs found miscounted.

Each assertion is one shape: an address, C++, a version suffix, a change of case only, an
answer in NFD, a value inside another key's declared value, a forgotten value re-entering from
a tool result after the forget, and an abstention that quotes the forgotten value back."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pandas as pd
import pytest

from harness.chronology.loading import load_chronology
from harness.models import CallRequest
from harness.models.reference import ReferenceModel
from harness.results.tables import Results, load_results
from harness.run.conversation import Conversation
from tests.conftest import builtin_registry, record_conversation
from tests.scripted import ScriptedModel

CHRONOLOGY = load_chronology(Path(__file__).parent / "fixtures" / "whole-values.yaml")
REGISTRY = builtin_registry()
POLICIES = ("full-history", "summary", "bounded-facts")
ANSWERS = {
    "owner": "The owner is alice@example.com; escalations go to ops@corp.example.",
    "site": unicodedata.normalize("NFD", "The site is Café Müller."),
    "stack": "We build the C++ toolkit at 4.2~rc1.",
    "symptom": "The symptom was: I'm not sure, maybe the disk.",
}
REFERENCE = ReferenceModel()


def answer(request: CallRequest):
    """The scripted answer at a probe; the reference model's reply to every other call (a summary)."""
    if request.kind == "answer" and request.turn.probe in ANSWERS:
        return ANSWERS[request.turn.probe]
    return REFERENCE.complete(request)


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Results]:
    found = {}
    for policy in POLICIES:
        folder = tmp_path_factory.mktemp(policy)
        conversation = Conversation(CHRONOLOGY, REGISTRY.parse(policy), "reference", 1)
        record_conversation(folder, conversation, REGISTRY, ScriptedModel("reference", answer))
        found[policy] = load_results(folder)
    return found


def rows(results: Results, probe: str, check: str) -> pd.DataFrame:
    probes = results.probes
    return probes[(probes.probe == probe) & (probes.check == check)].set_index("subject")


@pytest.mark.parametrize("policy", POLICIES)
def test_a_value_inside_an_address_is_neither_met_nor_stated(replayed: dict[str, Results], policy: str) -> None:
    results = replayed[policy]
    assert rows(results, "owner", "expect").passed.to_dict() == {"value: alice": False}
    assert not rows(results, "owner", "stale").loc["owner=ops"].in_answer  # ops@corp.example is not owner=ops
    assert not rows(results, "owner", "current").loc["owner=alice"].in_answer


@pytest.mark.parametrize("policy", POLICIES)
def test_cpp_and_a_version_suffix_keep_their_identity(replayed: dict[str, Results], policy: str) -> None:
    stale = rows(replayed[policy], "stack", "stale")
    for subject in ("language=C", "version=4.2"):
        assert not stale.loc[subject].in_answer, subject
        # a history keeps the old declaration beside its correction; the others keep only `C++`, `4.2~rc1`
        assert stale.loc[subject].in_view == (policy == "full-history"), subject
    assert rows(replayed[policy], "stack", "expect").passed.to_dict() == {"value: 4.2": False}
    current = rows(replayed[policy], "stack", "current")
    assert current.loc["language=C++"].in_answer and current.loc["version=4.2~rc1"].in_answer


@pytest.mark.parametrize("policy", POLICIES)
def test_a_change_of_case_only_makes_nothing_stale(replayed: dict[str, Results], policy: str) -> None:
    probes = replayed[policy].probes
    assert not probes.subject.str.startswith("customer=").where(probes.check == "stale", False).any()
    assert rows(replayed[policy], "owner", "current").loc["customer=Acme Corp"].passed


@pytest.mark.parametrize("policy", POLICIES)
def test_an_answer_in_nfd_meets_the_nfc_expectation(replayed: dict[str, Results], policy: str) -> None:
    assert rows(replayed[policy], "site", "expect").passed.to_dict() == {"value: Café Müller": True}


@pytest.mark.parametrize("policy", ["summary", "bounded-facts"])
def test_an_old_value_inside_another_keys_value_is_not_kept(replayed: dict[str, Results], policy: str) -> None:
    stale = rows(replayed[policy], "owner", "stale").loc["database=PostgreSQL"]
    assert (stale.in_view, stale.in_retained, stale.passed) == (False, False, True)
    residue = replayed[policy].residue
    assert "database=PostgreSQL" not in set(residue.subject)


def test_a_forgotten_value_from_a_tool_result_after_the_forget_is_a_re_entry(replayed: dict[str, Results]) -> None:
    residue = replayed["full-history"].residue
    billing = residue[residue.subject == "module=Billing"]
    assert billing[["turn", "check", "where", "change"]].values.tolist() == [
        [15, "forgotten", "re-entered from the tool result at turn 15", "kept"]
    ]


@pytest.mark.parametrize("policy", POLICIES)
def test_quoting_the_forgotten_value_back_is_no_abstention(replayed: dict[str, Results], policy: str) -> None:
    assert rows(replayed[policy], "symptom", "expect").passed.to_dict() == {"abstain": False}


def test_a_forgotten_value_in_view_only_through_that_tool_result_is_noted_as_its_re_entry(
    replayed: dict[str, Results],
) -> None:
    forgotten = rows(replayed["full-history"], "symptom", "forgotten").loc["module=Billing"]
    assert forgotten.in_view  # the model does see it: the checks say so, and where it came from
    assert forgotten.note == "re-entered from the tool result at turn 15"
    symptom = rows(replayed["full-history"], "symptom", "forgotten").loc["symptom=I'm not sure, maybe the disk"]
    assert not symptom.in_view and pd.isna(symptom.note)  # nothing brought it back: no note
