"""The manifest says how far the run's answers are independent draws (`samples`), and a resume
restores the choice that decides it (`independent_samples`); a run that stops says so, a full disk
notwithstanding."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from harness.chronology.loading import load_chronologies
from harness.models.options import MAX_RESPONSE_BYTES, ModelOptions
from harness.models.sampling import Sampling
from harness.policy.tokens import TokenCounter
from harness.run.batch import Runtime, run_batch
from harness.run.manifest import new_manifest, overwrite_in_place, recorded_options, samples_of
from harness.run.spec import RunSpec
from tests.conftest import SHIPPED, builtin_registry
from tests.importing.goldens import GOLDEN
from tests.scripted import ScriptedModel, serving

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


def test_samples_of_a_lossy_reference_run_say_what_it_draws_and_never_speak_of_temperature() -> None:
    shared = samples_of(spec(["reference:lossy"], temperature=0.0))
    assert shared.startswith("shared across policies within a repetition: reference:lossy draws each degradation")
    assert "degraded alike" in shared and "temperature" not in shared
    alone = samples_of(spec(["reference", "reference:lossy:recency=4"], cache=None))
    assert alone.startswith("independent per policy: ") and "(--no-cache)" in alone
    assert "(--independent-samples)" in samples_of(spec(["reference:lossy"], independent=True))


# --- how a stopped run is marked ------------------------------------------------------------------


def test_a_run_stopped_by_a_full_disk_is_marked_failed_even_when_no_new_file_can_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    model = ScriptedModel(fails=OSError(errno.ENOSPC, "No space left on device", "calls.jsonl"), from_call=4)

    def no_new_file(path: Path, data: object) -> None:  # the temporary file a whole write renames
        raise full

    chronologies = load_chronologies([SHIPPED / "memory-drift.yaml"])
    plan = RunSpec(chronologies, [builtin_registry().parse("full-history")], ["reference"], live=True)
    monkeypatch.setattr("harness.run.manifest.write_json_atomic", no_new_file)
    with pytest.raises(OSError, match="No space left"):
        run_batch(plan, tmp_path / "r", "r", Runtime(builtin_registry(), serving(model)))
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "No space left on device" in manifest["error"]
    assert manifest["ended_at"] is not None


def test_a_manifest_overwritten_in_place_never_grows_and_cuts_a_long_error(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    record = {"run_id": "r", "status": "running", "error": None, "fields": list(range(200))}
    path.write_text(json.dumps(record, indent=2))
    size = path.stat().st_size
    overwrite_in_place(path, {**record, "status": "failed", "error": "OSError: " + "x" * 100_000})
    written = json.loads(path.read_text())
    assert path.stat().st_size <= size and written["status"] == "failed"
    assert written["error"].startswith("OSError: xxx") and written["error"].endswith("...")


def test_the_byte_cap_is_recorded_and_a_manifest_without_it_means_the_default() -> None:
    options = ModelOptions(max_response_bytes=1000)
    assert options.as_record()["max_response_bytes"] == 1000
    assert recorded_options(options.as_record()) == options
    older = {k: v for k, v in options.as_record().items() if k != "max_response_bytes"}
    assert recorded_options(older).max_response_bytes == MAX_RESPONSE_BYTES == 4 * 1024 * 1024


# --- where each chronology came from ---------------------------------------------------------------


def test_each_chronology_entry_records_its_source_and_a_hand_written_one_none() -> None:
    item = GOLDEN / "longmemeval-joined" / "longmemeval_oracle-e47becba.yaml"
    plan = RunSpec(load_chronologies([item, SHIPPED / "memory-drift.yaml"]), [], ["reference"])
    entries = new_manifest(plan, "r", TokenCounter("cl100k_base")).chronologies
    assert [e["source"] for e in entries] == [
        {"dataset": "longmemeval_oracle", "item_id": "e47becba", "category": "knowledge-update"},
        None,
    ]


def test_an_entry_records_the_category_and_reference_answer_its_probes_name_and_others_none() -> None:
    items = [GOLDEN / "locomo" / "locomo-conv-1.yaml", GOLDEN / "mrcr" / "mrcr-needles-2.yaml"]
    plan = RunSpec(load_chronologies([*items, SHIPPED / "memory-drift.yaml"]), [], ["reference"])
    locomo, mrcr, hand_written = new_manifest(plan, "r", TokenCounter("cl100k_base")).chronologies
    assert locomo["probes"]["q1"] == {"category": "2", "reference": {"answer": "3 March 2023"}}
    assert list(locomo["probes"]) == ["q1", "q2", "q3"]
    assert mrcr["probes"] == {
        "recall": {
            "category": None,
            "reference": {"answer": "Zq7.Xk2Tick by tock I count your day.", "prefix": "Zq7.Xk2"},
        }
    }
    assert "probes" not in hand_written
