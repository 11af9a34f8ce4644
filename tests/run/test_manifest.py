"""The manifest says how far the run's answers are independent draws (`samples`), and a resume
restores the choice that decides it (`independent_samples`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.models.options import MAX_RESPONSE_BYTES, ModelOptions
from harness.models.sampling import Sampling
from harness.run.manifest import recorded_options, samples_of
from harness.run.spec import RunSpec
from tests.conftest import builtin_registry

CACHE = Path(".harness-cache")


def spec(models: list[str], temperature: float = 0.7, cache: Path | None = CACHE, independent: bool = False) -> RunSpec:
    options = ModelOptions(sampling=Sampling(temperature))
    policies = [builtin_registry().parse("full-history")]
    return RunSpec([], policies, models, options=options, cache_dir=cache, independent_samples=independent)


@pytest.mark.parametrize(
    "plan, says",
    [
        (spec(["openai:m"]), "shared across policies within a repetition: "),
        (spec(["openai:m"], independent=True), "independent per policy: "),
        (spec(["openai:m"], cache=None), "independent per policy: "),
        (spec(["reference"]), "none drawn: "),
    ],
    ids=["cache", "independent", "no-cache", "deterministic"],
)
def test_samples_say_whether_policies_share_a_draw(plan: RunSpec, says: str) -> None:
    assert samples_of(plan).startswith(says)


def test_samples_say_why_they_cannot_be_shared_or_independent() -> None:
    assert "--independent-samples" in samples_of(spec(["openai:m"], independent=True))
    assert "--no-cache" in samples_of(spec(["openai:m"], cache=None))
    assert "deterministic" in samples_of(spec(["reference"]))


def test_at_temperature_0_samples_say_that_sharing_matters_only_where_the_endpoint_is_nondeterministic() -> None:
    text = samples_of(spec(["openai:m"], temperature=0.0))
    assert text.startswith("shared across policies within a repetition") and "temperature 0" in text
    assert "temperature 0" not in samples_of(spec(["openai:m"]))


def test_the_byte_cap_is_recorded_and_a_manifest_without_it_means_the_default() -> None:
    options = ModelOptions(max_response_bytes=1000)
    assert options.as_record()["max_response_bytes"] == 1000
    assert recorded_options(options.as_record()) == options
    older = {k: v for k, v in options.as_record().items() if k != "max_response_bytes"}
    assert recorded_options(older).max_response_bytes == MAX_RESPONSE_BYTES == 4 * 1024 * 1024
