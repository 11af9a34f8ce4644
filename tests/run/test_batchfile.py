"""`harness run --batch FILE`: the file says what runs, is recorded, and is checked like a chronology."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.chronology.loading import discover
from harness.cli.commands import main
from tests.paths import ROOT, SHIPPED

BATCH = """\
chronologies:
  - chronologies/two-*.yaml
  - chronologies/correct-then-forget.yaml
policies:
  - full-history
  - last-turns:
      turns: 2
models: [reference]
seed: 3
concurrency: 2
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "chronologies").mkdir()
    for name in ("two-sessions", "correct-then-forget"):
        shutil.copy(SHIPPED / f"{name}.yaml", tmp_path / "chronologies")
    (tmp_path / "batches").mkdir()
    (tmp_path / "batches" / "b.yaml").write_text(BATCH.replace("chronologies/", "../chronologies/"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def harness(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [*args])
    return result.exit_code, result.output


def manifest(run_id: str) -> dict:
    return json.loads(Path(f"results/{run_id}/manifest.json").read_text())


@pytest.mark.slow
def test_a_batch_file_runs_what_the_same_options_run_and_is_recorded(project: Path) -> None:
    code, output = harness("run", "--batch", "batches/b.yaml", "--run-id", "file", "--quiet")
    assert code == 0, output
    options = ["--policy", "full-history", "--policy", "last-turns:turns=2", "--seed", "3", "--concurrency", "2"]
    files = ["chronologies/two-sessions.yaml", "chronologies/correct-then-forget.yaml"]
    code, output = harness("run", *files, *options, "--run-id", "cli", "--quiet")
    assert code == 0, output
    ours, theirs = manifest("file"), manifest("cli")
    batch = ours.pop("batch")
    assert batch["path"] == "batches/b.yaml"
    assert batch["sha256"] == hashlib.sha256(Path("batches/b.yaml").read_bytes()).hexdigest()
    assert batch["content"]["policies"][1] == {"last-turns": {"turns": 2}}
    assert theirs.pop("batch") is None
    for volatile in ("run_id", "started_at", "ended_at", "settings_sha256", "files"):  # digests: of `batch`, latencies
        ours.pop(volatile), theirs.pop(volatile)
    assert ours == theirs  # same chronologies (paths too), policies, seed, concurrency
    assert Path("results/file/probes.csv").read_text() == Path("results/cli/probes.csv").read_text()


def test_a_batch_file_may_ask_each_policy_to_draw_its_own_samples(project: Path) -> None:
    from harness.run.batchfile import batch_options
    from tests.conftest import builtin_registry

    Path("batches/b.yaml").write_text(Path("batches/b.yaml").read_text() + "independent_samples: true\n")
    options, record = batch_options(Path("batches/b.yaml"), {}, builtin_registry())
    assert options.independent_samples is True and record["content"]["independent_samples"] is True


@pytest.mark.slow
def test_a_batch_file_may_raise_the_byte_cap_and_a_resume_keeps_it(project: Path) -> None:
    Path("batches/b.yaml").write_text(Path("batches/b.yaml").read_text() + "max_response_bytes: 65536\n")
    code, output = harness("run", "--batch", "batches/b.yaml", "--run-id", "r", "--quiet")
    assert code == 0, output
    assert manifest("r")["model_options"]["max_response_bytes"] == 65536
    code, output = harness("run", "--resume", "results/r", "--max-response-bytes", "1000")
    assert code == 2 and "--max-response-bytes 1000 (the run has 65536)" in output


@pytest.mark.slow
def test_machine_options_beside_the_file_replace_its_values(project: Path) -> None:
    code, output = harness("run", "--batch", "batches/b.yaml", "--run-id", "r", "--quiet", "--concurrency", "1")
    assert code == 0, output
    assert manifest("r")["concurrency"] == 1


@pytest.mark.parametrize(
    "options",
    [
        ["--policy", "summary"],
        ["chronologies/two-sessions.yaml"],
        ["--seed", "1"],
        ["--independent-samples"],
        ["--answer-every-turn"],
        ["--model-role", "summarizer=reference"],
    ],
)
def test_options_that_say_what_runs_are_refused_beside_the_file(project: Path, options: list[str]) -> None:
    code, output = harness("run", "--batch", "batches/b.yaml", "--run-id", "r", *options)
    assert code == 2 and "beside --batch" in output and output.count("\n") == 1
    named = options[0] if options[0].startswith("--") else "PATH"
    assert output.startswith(f"error: {named} beside --batch")  # the option as it is called
    assert not Path("results/r").exists()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("chronologies: [nothing/*.yaml]\n", "b.yaml:1: chronologies[0]: nothing/*.yaml: matches no file"),
        ("chronologies: [chronologies]\npolicies: [nosuch]\n", "b.yaml:2: policies[0]: --policy nosuch: unknown"),
        ("chronologies: [chronologies]\nmodels: [gpt]\n", "b.yaml:2: models[0]: --model gpt: unknown model"),
        ("chronologies: [chronologies]\nrepetitions: 0\n", "b.yaml:2: repetitions: 0 is too small"),
        ("chronologies: [chronologies]\ncolour: blue\n", "b.yaml:2: colour: unknown field 'colour'"),
        ("chronologies: [chronologies]\nseed: 1\nseed: 2\n", "b.yaml:3: seed: duplicate key"),
        ("chronologies: [chronologies\n", "b.yaml:1: invalid YAML"),
        ("policies: [summary]\n", "b.yaml:1: chronologies: missing required field"),
        ("chronologies: [chronologies]\nshards: 2\n", "b.yaml:2: shards: the file splits the batch in 2"),
        ("chronologies: [chronologies]\nlocal:\n  threads: 0\n", "b.yaml:3: local.threads: 0 is too small"),
        (
            "chronologies: [chronologies]\napi_key_env: 'A B'\n",
            "b.yaml:2: api_key_env: --api-key-env 'A B': not an environment",
        ),
        ("chronologies: [chronologies]\nmax_response_bytes: 0\n", "b.yaml:2: max_response_bytes: 0 is too small"),
        ("chronologies: [chronologies]\nconcurrency: 5000\n", "b.yaml:2: concurrency: 5000 is too large"),
        (  # a long number is not quoted whole
            "chronologies: [chronologies]\nconcurrency: " + "9" * 90 + "\n",
            "b.yaml:2: concurrency: a whole number of about 90 digits is too large",
        ),
    ],
)
def test_a_bad_batch_file_is_reported_at_its_line_with_status_2(project: Path, text: str, says: str) -> None:
    Path("b.yaml").write_text(text)
    code, output = harness("run", "--batch", "b.yaml", "--shard", "1/3", "--run-id", "r")
    assert code == 2 and says in output, output
    assert not Path("results/r").exists()


@pytest.mark.parametrize("pattern", ["/**/*.yaml", "../../**/*.yaml"])
def test_a_recursive_glob_reaching_past_the_project_is_refused_at_its_line(project: Path, pattern: str) -> None:
    Path("batches/far.yaml").write_text(f"models: [reference]\nchronologies:\n  - {pattern}\n")
    code, output = harness("run", "--batch", "batches/far.yaml", "--run-id", "r")
    assert code == 2 and output.count("\n") == 1, output
    assert (
        f"far.yaml:3: chronologies[0]: {os.path.normpath(Path('batches') / pattern)}: a recursive glob (**)" in output
    )
    assert not Path("results/r").exists()


def test_a_batch_run_resumes_with_its_file_and_refuses_another(project: Path) -> None:
    code, output = harness("run", "--batch", "batches/b.yaml", "--shard", "1/2", "--run-id", "r", "--quiet")
    assert code == 0, output
    finished = Path("results/r/conversations.jsonl")
    kept = finished.read_text().splitlines()[:-1]
    finished.write_text("".join(line + "\n" for line in kept))
    data = manifest("r")
    Path("results/r/manifest.json").write_text(json.dumps({**data, "status": "interrupted"}))
    Path("batches/other.yaml").write_text(BATCH)
    code, output = harness("run", "--resume", "results/r", "--batch", "batches/other.yaml")
    assert code == 2 and "--batch batches/other.yaml" in output
    code, output = harness("run", "--resume", "results/r", "--shard", "2/2")
    assert code == 2 and "--shard 2/2 (the run has 1/2)" in output
    code, output = harness("run", "--resume", "results/r", "--batch", "batches/b.yaml", "--shard", "1/2", "--quiet")
    assert code == 0, output
    assert manifest("r")["status"] == "complete" and manifest("r")["batch"] == data["batch"]
    assert len(finished.read_text().splitlines()) == len(kept) + 1


@pytest.mark.slow
def test_the_shipped_example_batch_file_is_valid(tmp_path: Path) -> None:
    args = ["run", "--batch", str(ROOT / "batches" / "default.yaml"), "--shard", "3/3", "--out", str(tmp_path)]
    code, output = harness(*args, "--run-id", "example", "--quiet", "--reports", str(tmp_path / "reports"))
    assert code == 0, output
    data = json.loads((tmp_path / "example" / "manifest.json").read_text())
    library = discover([SHIPPED / "library.txt"])  # the batch names the shipped library
    assert data["shard"] == {"index": 3, "count": 3} and len(data["chronologies"]) == len(library)


@pytest.mark.slow
def test_a_policy_parameter_is_taken_as_written_not_as_yaml_reads_it(project: Path) -> None:
    """YAML 1.1 reads `on` as a boolean; the policy's parameter means the word."""
    text = "chronologies: [chronologies]\npolicies:\n  - bounded-facts:\n      provenance: off\n      mode: provider\n"
    Path("batches/on.yaml").write_text(text.replace("[chronologies]", "[../chronologies]"))
    code, output = harness("run", "--batch", "batches/on.yaml", "--run-id", "on", "--quiet")
    assert code == 0, output
    assert [p["label"] for p in manifest("on")["policies"]] == ["bounded-facts:mode=provider,provenance=off"]


# --- the key's variable and the server it is sent to --------------------------------------------

REMOTE = "chronologies: [../chronologies]\nmodels: [openai:m]\nbase_url: {url}\napi_key_env: {variable}\n"


def remote_batch(url: str = "http://models.example.invalid:8000/v1", variable: str = "GITHUB_TOKEN") -> Path:
    path = Path("batches/remote.yaml")
    path.write_text(REMOTE.format(url=url, variable=variable))
    return path


def test_a_file_choosing_a_variable_and_a_remote_server_is_refused_without_confirmation(project, monkeypatch) -> None:
    """`api_key_env: GITHUB_TOKEN` with a server of the file's choosing would send that token there."""
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_0123456789abcdefghij")
    code, output = harness("run", "--batch", str(remote_batch()), "--run-id", "r")
    assert code == 2, output
    assert "remote.yaml:4: api_key_env:" in output and "GITHUB_TOKEN" in output
    assert "models.example.invalid:8000" in output and "--api-key-env GITHUB_TOKEN" in output
    assert "ghp_" not in output and not Path("results/r").exists()


@pytest.mark.parametrize(
    ("url", "variable", "given"),
    [
        ("http://models.example.invalid:8000/v1", "GITHUB_TOKEN", {"api_key_env": "GITHUB_TOKEN"}),  # confirmed
        ("http://models.example.invalid:8000/v1", "GITHUB_TOKEN", {"base_url": ("http://127.0.0.1:9/v1",)}),
        ("http://127.0.0.1:8000/v1", "GITHUB_TOKEN", {}),  # this machine
        ("[http://localhost:8000/v1, 'http://[::1]:8001/v1']", "LOCAL_KEY", {}),
        ("http://models.example.invalid:8000/v1", "OPENAI_API_KEY", {}),  # the harness's own variable
    ],
)
def test_a_file_s_key_variable_goes_where_the_command_line_or_this_machine_says(project, url, variable, given) -> None:
    from harness.run.batchfile import batch_options
    from tests.conftest import builtin_registry

    options, _ = batch_options(remote_batch(url, variable), given, builtin_registry())
    assert options.api_key_env == given.get("api_key_env", variable)


def test_a_file_that_calls_no_openai_model_sends_no_key_and_needs_no_confirmation(project) -> None:
    from harness.run.batchfile import batch_options
    from tests.conftest import builtin_registry

    path = remote_batch()
    path.write_text(path.read_text().replace("openai:m", "reference"))
    batch_options(path, {}, builtin_registry())
