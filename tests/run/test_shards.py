"""`--shard K/N` and `harness merge`: N slices of one batch merge into what one machine writes."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.base.errors import InputError
from harness.cli.commands import main
from harness.results.writer import FILES
from harness.run.shards import MAX_SHARDS, Shard, assign, parse_shard
from tests.paths import SHIPPED

# Short and long ones, so that the slices differ in size and balance matters.
CHOSEN = ("correct-then-forget", "two-sessions", "summary-overflow", "constraint-eviction", "stale-premise")

# What differs between two runs of the same batch: when they ran and how long calls took.
TIMES = re.compile(r'"(started_at|ended_at|recorded_at|latency_ms)": ("[^"]*"|[0-9.e-]+|null)')
RESUMED = re.compile(r'"resumed_at": \[[^\]]*\]')
# Digests of records that hold times (harness.results.digests), and a merge's own: masked too.
DIGESTS = re.compile(r'"(sha256|bytes)": ("[0-9a-f]{64}"|[0-9]+)')


@pytest.mark.parametrize(("text", "shard"), [("1/3", Shard(1, 3)), ("3/3", Shard(3, 3)), (" 2 / 5 ", Shard(2, 5))])
def test_a_shard_is_k_of_n(text: str, shard: Shard) -> None:
    assert parse_shard(text) == shard


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("0/3", "numbered from 1"),
        ("4/3", "does not exist"),
        ("1/0", "from 1 to"),
        ("2", "expected K/N"),
        ("a/b", "K/N"),
    ],
)
def test_a_bad_shard_says_what_to_give(text: str, says: str) -> None:
    with pytest.raises(InputError, match=says):
        parse_shard(text)


def test_the_cli_refuses_a_bad_shard_with_one_line_and_status_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", str(SHIPPED / "two-sessions.yaml"), "--shard", "0/3", "--quiet"])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "numbered from 1" in result.output


def test_slices_are_balanced_by_work_and_cover_every_item_once() -> None:
    works = [100, 1, 1, 1, 50, 50, 2, 3, 40, 60]
    owner = assign(works, 3)
    assert owner == assign(works, 3)  # a pure function of the works
    loads = [sum(w for w, k in zip(works, owner) if k == shard) for shard in (1, 2, 3)]
    assert len(owner) == len(works) and set(owner) == {1, 2, 3}
    assert loads == [103, 103, 102]  # round robin in plan order would give 163, 54, 91


def test_more_shards_than_items_leaves_some_empty() -> None:
    assert sorted(assign([5, 3], 4)) == [1, 2]


def run(root: Path, run_id: str, *options: str) -> Path:
    files = [str(root / f"{name}.yaml") for name in CHOSEN]
    args = ["run", *files, "--out", str(root / "results"), "--reports", str(root / "reports"), "--run-id", run_id]
    result = CliRunner().invoke(main, [*args, "--quiet", *options])
    assert result.exit_code == 0, result.output
    return root / "results" / run_id


def merge(root: Path, out: str, *shards: Path, options: tuple[str, ...] = ()) -> tuple[int, str]:
    args = ["merge", str(root / "merged" / out), *map(str, shards), "--reports", str(root / "merged-reports")]
    result = CliRunner().invoke(main, [*args, *options])
    return result.exit_code, result.output


def masked(path: Path) -> object:
    """The file with its times replaced by T (JSON fields, or the `latency_ms` column)."""
    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
        at = rows[0].index("latency_ms") if "latency_ms" in rows[0] else -1
        return [["T" if i == at else cell for i, cell in enumerate(row)] for row in rows]
    text = TIMES.sub(r'"\1": "T"', path.read_text(encoding="utf-8"))
    return DIGESTS.sub(r'"\1": "D"', RESUMED.sub('"resumed_at": []', text))


# The batch run whole and in three slices: every test that merges or reads them is marked slow.
@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Path]]:
    """The same batch run whole, and as 3 shards (the second with concurrency 2)."""
    root = tmp_path_factory.mktemp("shards")
    for name in CHOSEN:
        shutil.copy(SHIPPED / f"{name}.yaml", root)
    whole = run(root, "batch")
    shards = [run(root, f"s{k}", "--shard", f"{k}/3", *(["--concurrency", "2"] if k == 2 else [])) for k in (1, 2, 3)]
    return root, whole, shards


@pytest.mark.slow
def test_three_shards_merge_into_the_whole_batch_byte_for_byte_apart_from_times(
    batch: tuple[Path, Path, list[Path]],
) -> None:
    root, whole, shards = batch
    code, output = merge(root, "batch", *reversed(shards))  # any order of folders
    assert code == 0, output
    merged = root / "merged" / "batch"
    assert sorted(p.name for p in merged.iterdir() if p.name != ".lock") == sorted(FILES)
    for name in FILES:
        if name == "manifest.json":
            continue
        assert (merged / name).read_text().count("\n") > 1, name  # not vacuous: records were merged
        assert masked(merged / name) == masked(whole / name), name
    ours, theirs = (json.loads(str(masked(d / "manifest.json"))) for d in (merged, whole))
    assert ours.pop("shard")["count"] == 3 and theirs.pop("shard") is None
    # the rate limits record the shards the batch's limits were split over (harness.models.ratelimit)
    limits = [m["model_options"].pop("rate_limits") for m in (ours, theirs)]
    assert [limit.pop("shards") for limit in limits] == [3, 1] and limits[0] == limits[1]
    split = {"shard", "model_options"}  # model_options' digest covers the rate limits' shards
    settings = [{k: v for k, v in m.pop("settings_sha256").items() if k not in split} for m in (ours, theirs)]
    assert settings[0] == settings[1]  # every setting's digest but the shard's
    assert ours == theirs
    report, reference = root / "merged-reports" / "batch.md", root / "reports" / "batch.md"
    times = re.compile(r"\| (started|ended) \(UTC\) \| [^|]* \|")
    assert times.sub("", report.read_text()) == times.sub("", reference.read_text())


@pytest.mark.slow
def test_each_shard_runs_a_slice_and_records_it(batch: tuple[Path, Path, list[Path]]) -> None:
    _, whole, shards = batch
    counts = [json.loads((d / "manifest.json").read_text())["conversations"]["total"] for d in shards]
    assert sum(counts) == json.loads((whole / "manifest.json").read_text())["conversations"]["total"]
    assert all(counts)
    assert [json.loads((d / "manifest.json").read_text())["shard"] for d in shards] == [
        {"index": k, "count": 3} for k in (1, 2, 3)
    ]
    assert not (shards[0].parent.parent / "reports" / "s1.md").exists()  # a slice's report waits for the merge


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pick", "says"),
    [
        (lambda s, w: [s[0], s[1]], "3/3 missing"),
        (lambda s, w: [s[0], s[1], s[1], s[2]], "given twice"),
        (lambda s, w: [s[0], s[1], w], "not a shard"),
    ],
)
def test_merge_refuses_what_is_not_every_shard_once(batch: tuple[Path, Path, list[Path]], pick, says: str) -> None:
    root, whole, shards = batch
    code, output = merge(root, "refused", *pick(shards, whole))
    assert code == 2 and says in output
    assert not (root / "merged" / "refused").exists()  # nothing half-written


def copy_shard(shard: Path, change, into: Path) -> Path:
    """A shard as another batch would have left it: its manifest changed, and sealed anew (an
    edit without a new seal is refused before any comparison: tests/results/test_integrity.py)."""
    from harness.results.digests import settings_digests

    target = into / shard.name
    shutil.copytree(shard, target)
    data = json.loads((target / "manifest.json").read_text())
    change(data, target)
    data["settings_sha256"] = settings_digests(data)
    (target / "manifest.json").write_text(json.dumps(data))
    return target


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d, t: d["chronologies"][0].update(sha256="0" * 64), "differs at chronologies[0].sha256"),
        (lambda d, t: d["policies"].pop(), "differs at policies"),
        (lambda d, t: d.update(seed=7), "differs at seed"),
        (lambda d, t: d.update(status="interrupted"), "harness run --resume"),
        (lambda d, t: (t / "conversations.jsonl").write_text(""), "has no record in conversations.jsonl"),
    ],
)
def test_merge_refuses_shards_of_another_batch_or_incomplete(
    batch: tuple[Path, Path, list[Path]], change, says: str, tmp_path: Path
) -> None:
    root, _, shards = batch
    changed = copy_shard(shards[2], change, tmp_path)
    code, output = merge(root, "other", shards[0], shards[1], changed)
    assert code == 2 and says in output, output
    assert not (root / "merged" / "other").exists()


@pytest.mark.slow
def test_more_shards_than_conversations_merge_too(tmp_path: Path) -> None:
    shutil.copy(SHIPPED / "two-sessions.yaml", tmp_path)
    args = [str(tmp_path / "two-sessions.yaml"), "--policy", "full-history", "--out", str(tmp_path / "r"), "--quiet"]
    for k in (1, 2):
        result = CliRunner().invoke(main, ["run", *args, "--shard", f"{k}/2", "--run-id", f"s{k}"])
        assert result.exit_code == 0, result.output
    code, output = merge(tmp_path, "m", tmp_path / "r" / "s1", tmp_path / "r" / "s2")
    assert code == 0, output
    assert json.loads((tmp_path / "merged" / "m" / "manifest.json").read_text())["conversations"]["total"] == 1


@pytest.mark.slow
def test_merge_with_no_charts_writes_the_tables_without_images(batch: tuple[Path, Path, list[Path]]) -> None:
    root, whole, shards = batch
    code, output = merge(root, "tables", *shards, options=("--no-charts",))
    assert code == 0, output
    report = (root / "merged-reports" / "tables.md").read_text()
    assert "| policy |" in report and ".png" not in report
    assert not list((root / "merged-reports" / "tables").glob("*.png"))
    code, output = merge(root, "drawn", *shards)
    assert code == 0, output
    assert ".png" in (root / "merged-reports" / "drawn.md").read_text()  # the default draws them
    assert list((root / "merged-reports" / "drawn").glob("*.png"))


@pytest.mark.slow
def test_merge_never_writes_into_an_existing_folder(batch: tuple[Path, Path, list[Path]]) -> None:
    root, whole, shards = batch
    code, output = merge(root, "taken", *shards)
    assert code == 0, output
    before = (root / "merged" / "taken" / "calls.jsonl").read_bytes()
    code, output = merge(root, "taken", *shards)
    assert code == 2 and "already exists" in output
    assert (root / "merged" / "taken" / "calls.jsonl").read_bytes() == before


@pytest.mark.slow
def test_the_report_of_a_shard_says_it_is_a_slice(batch: tuple[Path, Path, list[Path]]) -> None:
    root, _, shards = batch
    result = CliRunner().invoke(main, ["report", str(shards[1]), "--reports", str(root / "slice-reports")])
    assert result.exit_code == 0, result.output
    assert "is shard 2/3 of a batch" in result.stderr and "harness merge" in result.stderr


@pytest.fixture(scope="module")
def two_shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """One chronology under one policy, run as 2 shards: a batch small enough for the default suite."""
    root = tmp_path_factory.mktemp("two-shards")
    shutil.copy(SHIPPED / "two-sessions.yaml", root / "two-sessions.yaml")
    args = ["run", str(root / "two-sessions.yaml"), "--policy", "full-history", "--policy", "last-turns"]
    args += ["--out", str(root / "results"), "--reports", str(root / "reports"), "--quiet"]
    for k in (1, 2):
        result = CliRunner().invoke(main, [*args, "--run-id", f"s{k}", "--shard", f"{k}/2"])
        assert result.exit_code == 0, result.output
    return root, [root / "results" / "s1", root / "results" / "s2"]


ODD_TYPES = {
    "index as text": (
        lambda d: d["shard"].update(index="1"),
        "shard.index should be a whole number from 1 to 2, not '1'",
    ),
    "index a list": (lambda d: d["shard"].update(index=[1]), "shard.index should be a whole number"),
    "index true": (lambda d: d["shard"].update(index=True), "shard.index should be a whole number"),
    "count 2.0": (lambda d: d["shard"].update(count=2.0), "shard.count should be a whole number from 1 to 10,000"),
    "no count": (lambda d: d["shard"].pop("count"), "shard.count should be a whole number"),
    "total as text": (lambda d: d["conversations"].update(total="1"), "conversations.total should be a whole number"),
    "no total": (lambda d: d["conversations"].pop("total"), "conversations.total is missing"),
    "repetitions": (lambda d: d["repetitions_run"].update(reference="x"), "repetitions_run.reference should be"),
    "chronology": (lambda d: d.update(chronologies=["x"]), "chronologies[0] should be an object with a name"),
    "policy": (lambda d: d["policies"][0].pop("label"), "policies[0] should be an object with a label"),
    "model": (lambda d: d.update(models=[{}]), "models[0] should be a model's name, not {}"),
    "ended": (lambda d: d.update(ended_at=None), "ended_at should be a UTC time, not None"),
    "resumed": (lambda d: d.update(resumed_at=[1]), "resumed_at[0] should be a UTC time, not 1"),
}


@pytest.mark.parametrize(("change", "says"), ODD_TYPES.values(), ids=ODD_TYPES.keys())
def test_merge_refuses_a_shard_manifest_of_odd_types_with_one_message(
    two_shards: tuple[Path, list[Path]], change, says: str, tmp_path: Path
) -> None:
    root, shards = two_shards
    changed = [copy_shard(shard, lambda d, t: change(d), tmp_path) for shard in shards]  # both alike
    result = CliRunner().invoke(main, ["merge", str(tmp_path / "merged"), *map(str, changed), "--no-charts"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {changed[0] / 'manifest.json'}: ")
    assert says in result.stderr and result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert not (tmp_path / "merged").exists()


# --- bounds: a plan is built whole, so its size is checked first ---------------------------


@pytest.fixture(scope="module")
def lone_shard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shard 1/1 of one chronology under one policy: one conversation."""
    root = tmp_path_factory.mktemp("lone")
    shutil.copy(SHIPPED / "two-sessions.yaml", root)
    args = [str(root / "two-sessions.yaml"), "--policy", "full-history", "--out", str(root / "r"), "--quiet"]
    result = CliRunner().invoke(main, ["run", *args, "--shard", "1/1", "--run-id", "s1"])
    assert result.exit_code == 0, result.output
    return root / "r" / "s1"


@pytest.mark.parametrize(
    ("claim", "says"),
    [
        ({"repetitions_run": {"reference": 2_000_000}}, "makes 2,000,000 conversations; a run holds at most 1,000,000"),
        ({"conversations": {"total": 2}}, "it claims 2 conversations of a batch of 1"),
        ({"shard": {"index": 1, "count": MAX_SHARDS + 1}}, "shard.count should be a whole number from 1 to 10,000"),
    ],
)
def test_merge_refuses_a_manifest_claiming_counts_past_the_bounds_before_building_anything(
    lone_shard: Path, tmp_path: Path, claim: dict, says: str
) -> None:
    changed = copy_shard(lone_shard, lambda data, target: data.update(claim), tmp_path)
    code, output = merge(tmp_path, "m", changed)
    assert code == 2 and says in output, output
    assert output.count("\n") == 1 and not (tmp_path / "merged").exists()


def test_a_plan_past_the_bound_is_refused_before_it_is_built(tmp_path: Path) -> None:
    shutil.copy(SHIPPED / "two-sessions.yaml", tmp_path)
    endpoint = ["--base-url", "http://127.0.0.1:9/v1", "--policy", "full-history", "--out", str(tmp_path / "r")]
    models = ["--model", "openai:a", "--model", "openai:b"]
    result = CliRunner().invoke(
        main, ["run", str(tmp_path / "two-sessions.yaml"), *endpoint, *models, "--repetitions", "600000"]
    )
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --repetitions 600000 (1 chronologies × 1 policies × (600,000 repetitions of openai:a + 600,000 "
        "repetitions of openai:b)) makes 1,200,000 conversations; a run holds at most 1,000,000 (its plan is built "
        "whole before anything runs): ask for fewer, or split the comparison into several runs\n"
    )
    result = CliRunner().invoke(main, ["run", "--repetitions", "1000000000"])  # refused before a file is read
    assert result.exit_code == 2 and "--repetitions 1000000000: a run holds at most 1,000,000" in result.stderr
    assert not (tmp_path / "r").exists()
