"""`reference` against `reference:lossy:recency=4,seed=1` on the shipped library: the comparison
finds exactly the flips the lossy model's recorded drops (calls.jsonl `degraded`) predict.

The prediction, from the lossy run's calls.jsonl alone (each answer's `degraded` entries and its
reply) and the `reference` run's probes.csv:
- **every predicted flip is found** — an answer at a probe that ignored a prohibition as too old
  (a `recency` entry, `what: prohibition`; recorded only where the refusal was lost, so its reply
  breaks the prohibition) turns that prohibition's check at that probe from passed to failed,
  where it passed under `reference`; and one that ignored a declaration as too old (`what:
  declaration`) holding a probe's expected value (`expect: {value: ...}`, such as an id read only
  in a tool result) turns that expectation from met to not met;
- **no flip is unpredicted** — every flip is passed→failed and is either one of those, or a check
  whose request view changed, in a conversation whose `degraded` entries begin before the probe
  (an answer changed at an earlier turn is in the history later views are made of: a token
  budget or a retrieval index sees other text).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.chronology import Prohibition
from harness.chronology.loading import load_chronology
from harness.cli.commands import main
from harness.run.checks import honoured
from tests.paths import SHIPPED

LOSSY = "reference:lossy:recency=4,seed=1"
LIBRARY = SHIPPED / "library.txt"


def harness(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("lossy")
    made = []
    for run_id, model in (("reference", "reference"), ("lossy", LOSSY)):
        result = harness(
            "run", LIBRARY, "--model", model, "--run-id", run_id, "--out", root / "results",
            "--reports", root / "reports", "--no-charts", "--quiet",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        made.append(root / "results" / run_id)
    return made[0], made[1]


def probe_rows(directory: Path) -> dict[tuple, dict[str, str]]:
    with (directory / "probes.csv").open(encoding="utf-8", newline="") as handle:
        return {(r["chronology"], r["policy"], r["turn"], r["check"], r["subject"]): r for r in csv.DictReader(handle)}


def degraded(directory: Path) -> list[dict]:
    calls = [json.loads(line) for line in (directory / "calls.jsonl").read_text(encoding="utf-8").splitlines()]
    return [c for c in calls if c.get("degraded")]


def expected_values(chronology: str, turn: int) -> list[str]:
    """The `value` expectations of the probe at `turn` of a shipped chronology."""
    found = load_chronology(SHIPPED / f"{chronology}.yaml").user_turns
    return [e.text for t in found if t.number == turn for e in t.expect if e.kind == "value"]


def stated(chronology: str, text: str) -> list[Prohibition]:
    """The prohibitions of a shipped chronology that a degraded entry's text states."""
    return [p for p in load_chronology(SHIPPED / f"{chronology}.yaml").prohibitions if p.present.search(text)]


@pytest.mark.slow
def test_the_comparison_finds_exactly_the_flips_the_recorded_drops_predict(runs: tuple[Path, Path]) -> None:
    reference, lossy = runs
    before, after = probe_rows(reference), probe_rows(lossy)
    predicted = set()
    first_drop: dict[tuple[str, str], int] = {}
    for call in degraded(lossy):
        owner = (call["chronology"], call["policy"])
        first_drop[owner] = min(first_drop.get(owner, call["turn"]), call["turn"])
        for entry in call["degraded"]:
            assert entry["kind"] == "recency"  # the only degradation this model was given
            if call["kind"] == "answer" and entry["what"] == "declaration":
                for expected in expected_values(call["chronology"], call["turn"]):
                    key = (*owner, str(call["turn"]), "expect", f"value: {expected}")
                    row = before.get(key)
                    if expected in entry["text"] and row is not None and row["passed"] == "true":
                        assert expected not in call["response"], key  # the value was lost with it
                        predicted.add(key)
            if call["kind"] != "answer" or entry["what"] != "prohibition":
                continue
            for prohibition in stated(call["chronology"], entry["text"]):
                key = (*owner, str(call["turn"]), "prohibition", prohibition.id)
                row = before.get(key)
                if row is not None and row["passed"] == "true":
                    assert not honoured(prohibition, call["response"]), key  # an entry is a refusal lost
                    predicted.add(key)
    assert len(predicted) >= 10, "the library must give the lossy model something to break"

    data = json.loads(harness("compare", reference, lossy, "--format", "json").output)
    flips = {(f["chronology"], f["pair_policy"], str(f["turn_a"]), f["check"], f["subject"]): f for f in data["flips"]}
    assert predicted <= set(flips)  # no fewer
    for key, flip in flips.items():  # no more
        assert flip["direction"] == "passed→failed"
        if key not in predicted:
            assert before[key]["in_view"] != after[key]["in_view"], key
            assert first_drop[key[:2]] < int(key[2]), key


@pytest.mark.slow
def test_each_flip_is_listed_with_both_causes_and_the_gate_fails(runs: tuple[Path, Path]) -> None:
    reference, lossy = runs
    result = harness("compare", reference, lossy, "--fail-on", "failed>=1")
    assert result.exit_code == 1
    assert result.stderr.startswith("gate failed: ") and result.stderr.count("\n") == 1
    flips = [line for line in result.output.splitlines() if line.startswith("| passed→failed |")]
    assert len(flips) == json.loads(harness("compare", reference, lossy, "--format", "json").output)["passed_to_failed"]
    for line in flips:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 15 and cells[13].startswith("`harness show ") and cells[14].startswith("`harness show ")
    window = next(line for line in flips if "| window |" in line)  # a cause in B beside none in A
    assert "left the request window" in window
    broken = [line for line in flips if "| prohibition |" in line and "| yes · yes |  |  | yes · no |  |  |" in line]
    assert broken  # in view in both runs; honoured by A's answer, not by B's


@pytest.mark.slow
def test_the_test_counts_conversations_per_policy(runs: tuple[Path, Path]) -> None:
    """Answers blind past 4 turns lose checks in some conversations of full-history, all one way:
    the sign test over conversations gives 2 · (1/2)^n for n conversations lower in B, however many
    checks each lost; Holm's correction multiplies the smallest by the number of rows."""
    reference, lossy = runs
    data = json.loads(harness("compare", reference, lossy, "--format", "json").output)
    per_policy = {s["policy"]: s for s in data["statistics"] if s["check_kind"] == "all checks"}
    assert list(per_policy)[:2] == ["full-history", "last-turns"]  # every policy, in the run's order
    full = per_policy["full-history"]
    n = full["conversations_lower_in_b"]
    assert 0 < n < full["items_passed_to_failed"] and full["conversations_higher_in_b"] == 0
    assert full["conversations"] == len(data["chronologies"])  # one unit per chronology
    assert full["sign_test_p_conversations"] == pytest.approx(min(1.0, 2 / 2**n))
    smallest = min(s["sign_test_p_conversations"] for s in data["statistics"])
    assert min(s["holm_adjusted_p"] for s in data["statistics"]) == pytest.approx(min(1.0, data["tests"] * smallest))
    assert per_policy["last-turns"]["sign_test_p_conversations"] == 1.0  # a 3-turn window: nothing older to ignore


@pytest.mark.slow
def test_a_deterministic_runs_one_repetition_pairs_with_every_repetition_of_the_other(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    """`reference` runs once whatever --repetitions says (its manifest: `repetitions_run`, `samples`);
    its one repetition stands for each of the seeded lossy model's three, either way round."""
    reference, _ = runs
    result = harness(
        "run", SHIPPED / "constraint-eviction.yaml", "--model", LOSSY, "--repetitions", "3", "--run-id", "thrice",
        "--out", tmp_path, "--reports", tmp_path / "reports", "--no-charts", "--quiet", "--policy", "full-history",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    checks = sum(1 for k in probe_rows(reference) if k[:2] == ("constraint-eviction", "full-history"))
    for a, b in ((reference, tmp_path / "thrice"), (tmp_path / "thrice", reference)):
        data = json.loads(harness("compare", a, b, "--format", "json").output)
        alone = {(x["run"], x["chronology"], x["policy"]): x["reason"] for x in data["checks_in_one_run_only"]}
        assert not any(key[1:] == ("constraint-eviction", "full-history") for key in alone)
        assert ("A" if a == reference else "B", "two-sessions", "full-history") in alone  # not in the lossy run
        [row] = [s for s in data["statistics"] if (s["policy"], s["check_kind"]) == ("full-history", "all checks")]
        assert row["pairs"] == 3 * checks and row["conversations"] == 1
        [answers] = [t for t in data["tokens"] if (t["policy"], t["kind"]) == ("full-history", "answer")]
        assert answers["calls_a"] == answers["calls_b"] > 0  # the one repetition counted once per pair
    flips = json.loads(harness("compare", reference, tmp_path / "thrice", "--format", "json").output)["flips"]
    assert {f["repetition"] for f in flips} == {1, 2, 3}  # recency=4 with each repetition's seed
    assert all(f["run_repetition_a"] == 1 and "--repetition" not in f["show_a"] for f in flips)
    assert all(f["show_b"].endswith(f"--repetition {f['repetition']}") for f in flips if f["repetition"] != 1)
