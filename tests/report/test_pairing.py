"""Which check of one run is which of the other: policies by label or, across a change of
parameters, by name; models by name only when both runs ran the same ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.base.errors import InputError
from harness.report.pairing import ChronologyPair, deterministic, pair_policies, pair_runs
from harness.results.rows import Manifest
from harness.results.tables import Results


def results(*labels: str, models: tuple[str, ...] = ("reference",)) -> Results:
    policies = [{"label": label, "name": label.split(":")[0], "params": {}} for label in labels]
    manifest = Manifest(format_version=3, run_id="r", policies=policies, repetitions=1, live=False, models=list(models))
    return Results(Path("r"), manifest)


def test_policies_pair_by_label_in_the_first_runs_order() -> None:
    assert pair_policies(results("summary", "full-history"), results("full-history", "summary")) == {
        "summary": "summary",
        "full-history": "full-history",
    }


def test_a_policy_whose_parameters_changed_pairs_by_name() -> None:
    pairs = pair_policies(results("full-history", "last-turns"), results("last-turns:turns=1", "full-history"))
    assert pairs == {"full-history": "full-history", "last-turns": "last-turns:turns=1"}


def test_two_candidates_of_one_name_pair_with_neither() -> None:
    pairs = pair_policies(results("last-turns"), results("last-turns:turns=1", "last-turns:turns=5"))
    assert pairs == {}


def test_a_policy_in_one_run_only_has_no_pair() -> None:
    assert pair_policies(results("summary", "retrieval"), results("summary")) == {"summary": "summary"}


def test_the_model_is_part_of_the_pair_when_both_runs_ran_the_same_models() -> None:
    assert pair_runs(results("summary"), results("summary")).model_keyed
    assert not pair_runs(results("summary"), results("summary", models=("openai:new",))).model_keyed


def test_runs_of_several_different_models_are_refused() -> None:
    with pytest.raises(InputError, match=r"pair only when each ran one model"):
        pair_runs(results("summary", models=("reference", "openai:a")), results("summary", models=("openai:b",)))


@pytest.mark.parametrize(
    ("a", "b", "paired", "status"),
    [
        ("1" * 64, "1" * 64, True, "same file"),
        ("1" * 64, "2" * 64, False, "changed: not paired"),
        (None, "2" * 64, False, "only in run B"),
        ("1" * 64, None, False, "only in run A"),
    ],
)
def test_a_chronology_pairs_only_with_the_same_file(a: str | None, b: str | None, paired: bool, status: str) -> None:
    found = ChronologyPair("c", a, b)
    assert (found.paired, found.status) == (paired, status)


NONE_DRAWN = "none drawn: every model of this run is deterministic, so an identical request gets the same answer"
SHARED = "shared across policies within a repetition: ..."


@pytest.mark.parametrize(
    ("model", "requested", "ran", "samples", "expected"),
    [
        ("reference", 5, 1, SHARED, True),  # one repetition of five asked: the run cut it (harness.run.spec)
        ("reference", 1, 1, NONE_DRAWN, True),  # one asked, and the run says nothing was drawn
        ("reference", 1, 1, SHARED, False),  # beside a sampled role: it may answer otherwise
        ("reference", 1, 1, None, False),  # a manifest before `samples`: not known, so pair by number
        ("reference:lossy", 3, 3, NONE_DRAWN, False),  # seeded per repetition: each repetition its own
    ],
)
def test_a_model_is_deterministic_as_its_run_recorded_it(
    model: str, requested: int, ran: int, samples: str | None, expected: bool
) -> None:
    manifest = Manifest(
        format_version=3,
        run_id="r",
        policies=[],
        repetitions=requested,
        repetitions_run={model: ran},
        samples=samples,
        live=False,
        models=[model],
    )
    assert deterministic(Results(Path("r"), manifest), model) is expected
