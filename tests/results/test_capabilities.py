"""What a model could do, read from the run's records: as recorded, and by name for older runs."""

from __future__ import annotations

from typing import Any

import pytest

from harness.base.capabilities import Capabilities
from harness.results.capabilities import recorded_capabilities
from harness.results.rows import Manifest

LITERAL = Capabilities(deterministic=True, can_judge=False, reader="literal")
LOSSY = Capabilities(degrades_on_purpose=True, can_judge=False, reader="literal")


def manifest(settings: dict[str, Any] | None) -> Manifest:
    return Manifest(format_version=4, run_id="r", policies=[], repetitions=1, live=False, model_settings=settings)


def test_a_run_reads_back_what_each_model_stated() -> None:
    stated = Capabilities(deterministic=True, reader="literal")  # a plug-in's literal reader that may judge
    assert recorded_capabilities(manifest({"mine": {"name": "mine", **stated.as_record()}}), "mine") == stated


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("reference", LITERAL),
        ("reference:lossy", LOSSY),
        ("reference:lossy:recency=2", LOSSY),
        ("openai:x", Capabilities()),
    ],
)
def test_a_run_recorded_before_capabilities_is_read_by_the_models_name(name: str, expected: Capabilities) -> None:
    assert recorded_capabilities(manifest(None), name) == expected
    assert recorded_capabilities(manifest({name: {"name": name}}), name) == expected


def test_a_reader_recorded_alone_is_taken_as_recorded() -> None:
    answers = manifest({"reference": {"name": "reference", "reader": "a model that answers"}})
    assert recorded_capabilities(answers, "reference").reader is None
