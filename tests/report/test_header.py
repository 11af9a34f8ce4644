"""The report's opening: what ran and its caveats say whether policies shared sampled answers,
how many retries the calls took, and when the local tokenizer does not fit the model."""

from __future__ import annotations

from itertools import count
from pathlib import Path

from harness.chronology.loading import load_chronologies
from harness.models import CallRequest, Completion, Usage
from harness.models.catalog import model_factory
from harness.models.options import ModelOptions
from harness.models.ratelimit import RateLimits
from harness.models.reference import ReferenceModel
from harness.models.sampling import Sampling
from harness.report.document import build_report
from harness.report.header import limits_text
from harness.results.tables import Results, load_results
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec
from tests.conftest import builtin_registry
from tests.report_text import whole_report
from tests.scripted import ScriptedModel, serving

REGISTRY = builtin_registry()
SAME_REQUESTS = (
    "title: t\nprohibitions:\n  p:\n    present: never restart\n    violated_by: '^Yes'\n"
    "turns:\n  - user: never restart it\n    assistant: ok\n  - user: Can I restart?\n    probe: q\n"
)


def sampled(
    tmp_path: Path, temperature: float = 0.7, independent: bool = False, answer=None, run_id: str = "r"
) -> Results:
    """Two policies sending identical requests to a cacheable model, the response cache on."""
    (tmp_path / "c.yaml").write_text(SAME_REQUESTS)
    draws = count(1)
    model = ScriptedModel("openai:m", answer or (lambda request: f"draw {next(draws)}"), cache_identity={"model": "m"})
    spec = RunSpec(
        load_chronologies([tmp_path / "c.yaml"]),
        [REGISTRY.parse("full-history"), REGISTRY.parse("last-turns:turns=9")],
        ["openai:m"],
        options=ModelOptions(sampling=Sampling(temperature)),
        cache_dir=tmp_path / "cache",
        independent_samples=independent,
    )
    run_batch(spec, tmp_path / run_id, run_id, Runtime(REGISTRY, factory=serving(model)))
    return load_results(tmp_path / run_id)


def caveats(report: str) -> str:
    return report.split("## Caveats", 1)[1].split("\n## ", 1)[0]


def what_ran(report: str) -> str:
    return report.split("## What ran", 1)[1].split("\n## ", 1)[0]


def test_shared_samples_are_named_in_what_ran_and_explained_in_the_caveats(tmp_path: Path) -> None:
    report = build_report(sampled(tmp_path))
    assert "| samples | shared across policies within a repetition" in what_ran(report)
    text = caveats(report)
    assert "one draw, not independent" in text and "common random numbers" in text
    assert "`--independent-samples`" in text


def test_independent_samples_say_each_policy_drew_its_own_with_a_seed_of_its_own(tmp_path: Path) -> None:
    report = build_report(sampled(tmp_path, independent=True))
    assert "| samples | independent per policy" in what_ran(report)
    text = caveats(report)
    assert "each policy's calls were requests of their own" in text
    assert "each policy and repetition with a seed of its own (--seed 0 plus its draw)" in text
    assert "common random numbers" not in text


def test_at_temperature_0_samples_say_nothing_is_sampled_and_no_caveat_speaks_of_draws(tmp_path: Path) -> None:
    report = build_report(sampled(tmp_path, temperature=0.0))
    assert "at temperature 0 nothing is sampled" in what_ran(report) and "draw" not in caveats(report)


def retried(request: CallRequest) -> Completion:
    """The reference model's text after two retries, with a prompt count far above tiktoken's."""
    return Completion(ReferenceModel().complete(request).text, Usage(5000, 3), attempts=3)


def test_retries_are_counted_per_policy_and_in_the_caveats(tmp_path: Path) -> None:
    from tests.report.test_report import table_under

    report = whole_report(sampled(tmp_path, independent=True, answer=retried))
    rows = table_under(report, "### Token figures")
    assert rows[0][:3] == ["policy", "calls", "retries (requests beyond each call's first)"]
    assert [row[2] for row in rows[2:]] == ["2", "2"]
    assert "4 retries in 2 of 2 model calls" in caveats(report)


def test_a_provider_count_far_from_tiktokens_is_flagged(tmp_path: Path) -> None:
    text = caveats(build_report(sampled(tmp_path, independent=True, answer=retried)))
    assert "provider-reported prompt tokens of openai:m are" in text and "another tokenizer" in text


def reference_run(tmp_path: Path, *policies: str, run_id: str = "r") -> Results:
    (tmp_path / "c.yaml").write_text(SAME_REQUESTS.replace("never restart it", "module=Billing; never restart it"))
    spec = RunSpec(load_chronologies([tmp_path / "c.yaml"]), [REGISTRY.parse(p) for p in policies], ["reference"])
    run_batch(spec, tmp_path / run_id, run_id, Runtime(REGISTRY))
    return load_results(tmp_path / run_id)


def test_side_by_side_each_run_leads_the_caveats_it_alone_has(tmp_path: Path) -> None:
    """Runs shown together: a caveat of one run is led by its id, its first word in lower case."""
    endpoint = sampled(tmp_path, independent=True, answer=retried, run_id="endpoint")
    offline = reference_run(tmp_path, "summary", run_id="offline")
    lines = caveats(build_report([endpoint, offline])).splitlines()
    assert "- Run endpoint: 4 retries in 2 of 2 model calls" in "\n".join(lines)
    assert any(line.startswith("- Run endpoint: sampled answers (temperature 0.7) are independent") for line in lines)
    assert any(line.startswith("- Run endpoint: provider-reported usage: ") for line in lines)
    assert any(line.startswith("- Run offline: the offline `reference` model stood in") for line in lines)
    assert any(line.startswith("- Run endpoint: the provider-reported prompt tokens of openai:m") for line in lines)
    assert not any(line.startswith("- Run offline: 4 retries") for line in lines)


def test_the_caveats_name_the_roles_the_idealized_reference_model_stood_in_for(tmp_path: Path) -> None:
    text = caveats(build_report(reference_run(tmp_path, "summary", "bounded-facts")))
    assert "stood in for the policies' summarizer and writer calls" in text
    assert "These are idealized" in text and "`--model-role summarizer=MODEL`" in text


def test_no_idealized_caveat_where_the_reference_model_played_no_policy_role(tmp_path: Path) -> None:
    assert "idealized" not in caveats(build_report(reference_run(tmp_path, "full-history", "last-turns")))


def test_a_lossy_reference_run_names_its_parameters_and_says_it_fails_on_purpose(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(SAME_REQUESTS)
    spec = RunSpec(
        load_chronologies([tmp_path / "c.yaml"]),
        [REGISTRY.parse("summary")],
        ["reference:lossy:recency=4,seed=1"],
        options=ModelOptions(sampling=Sampling(0.7)),
        cache_dir=None,
    )
    run_batch(spec, tmp_path / "r", "r", Runtime(REGISTRY, factory=model_factory(spec.options, spec.seed)))
    report = build_report([load_results(tmp_path / "r")])
    shown = "reference:lossy:recency=4,seed=1 (summary\\_drop=0.0, writer\\_miss=0.0, recency=4, stale=0.0, seed=1)"
    assert f"| models | {shown} |" in what_ran(report)
    assert "| sampling | not used: the reference model does not sample (reference:lossy draws" in what_ran(report)
    said = caveats(report)
    assert "`reference:lossy` is that reader degraded on purpose" in said
    assert "The offline `reference:lossy` model stood in for the policies' summarizer calls" in said
    assert "Sampled answers" not in said  # nothing is sampled, whatever the temperature asked
    assert "The offline `reference` model stood in" not in said  # that caveat is the plain reference's


def test_rate_limits_are_said_from_the_manifests_record_with_each_shards_share() -> None:
    assert limits_text(RateLimits(rpm=60, tpm=100_000, shards=7).as_record()) == (
        "--max-rpm 60, --max-tpm 100,000 for the batch; each of 7 shards: 8 rpm, 14,285 tpm"
    )
    assert limits_text(RateLimits(tpm=500).as_record()) == "--max-rpm none, --max-tpm 500"
    assert limits_text(RateLimits().as_record()) is None and limits_text({}) is None  # none set; a run before them
