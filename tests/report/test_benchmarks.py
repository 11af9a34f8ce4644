"""*Benchmark scores*: LongMemEval's and MultiChallenge's own figures per policy, from verdicts the
judge gave through the benchmarks' own prompts (a loopback judge here), `needs --judge` without
one; the same figures in `benchmarks.csv` beside the report; MRCR and LoCoMo scored from the
answers with no judge."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.report.benchmarks import CSV_NAME, HEADING, cell
from harness.run.judge_prompts import LONGMEMEVAL, LONGMEMEVAL_ABSTENTION, MULTICHALLENGE
from tests.importing.goldens import FIXTURES
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion

pytestmark = pytest.mark.slow  # two runs and two reports, through the command line


def judged(request: Recorded) -> Reply:
    """LongMemEval's prompts: `yes` to the abstention prompt only (the reference model says nothing in
    its context answers); MultiChallenge's: a reasoned YES. Anything else: an answer."""
    prompt = (request.body or {}).get("messages", [{}])[-1].get("content", "")
    if "Model Response:" in prompt:
        text = "Yes, it does." if "identify the question as unanswerable?" in prompt else "No."
    elif "<CRITERIA>" in prompt:
        text = '{"reasoning": "fine", "verdict": "YES"}'
    else:
        text = "I do not know."
    return Reply(body=chat_completion(text))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("bench")
    with pytest.MonkeyPatch.context() as patch, ScriptedServer() as server:
        patch.chdir(root)
        patch.setenv("OPENAI_API_KEY", "sk-test")
        server.default = judged
        runner = CliRunner()
        for args in (
            ["import", "longmemeval", str(FIXTURES / "longmemeval_oracle.json"), "--out", "chronologies"],
            ["import", "multichallenge", str(FIXTURES / "benchmark_questions.jsonl"), "--out", "chronologies"],
            ["run", "--run-id", "off", "--quiet", "--policy", "full-history", "--policy", "last-turns:turns=1"]
            + ["--policy", "summary:max_chars=1"],  # a summary of one character: stops at its first summary
            ["run", "--run-id", "judged", "--quiet", "--no-cache", "--policy", "full-history"]
            + ["--policy", "last-turns:turns=1", "--judge", "openai:j", "--base-url", server.base_url],
            ["report", "results/off", "--no-charts"],
            ["report", "results/judged", "--no-charts"],
        ):
            args += ["--accept-licence", "x"] if args[:2] == ["import", "multichallenge"] else []
            result = runner.invoke(main, args)
            assert result.exit_code == 0, result.output
        yield root


def table_rows(markdown: str, dataset: str) -> dict[str, list[str]]:
    part = markdown[markdown.index(f"## {HEADING}") :]
    part = part[part.index(f"### {dataset}") :]
    shown = part[: (part.find("\n#", 4) + 1) or None]
    cells = [line.strip("| ").split(" | ") for line in shown.splitlines() if line.startswith("| ")][1:]
    return {row[0]: row[1:] for row in cells}


def test_a_run_without_a_judge_says_each_judged_score_needs_one(project: Path) -> None:
    markdown = (project / "reports" / "off.md").read_text()
    # a summary of one character stops before any probe of these items: none reached, not "needs --judge"
    assert table_rows(markdown, "longmemeval_oracle") == {
        "overall accuracy": ["needs --judge"] * 2 + ["no probe reached"]
    }
    assert table_rows(markdown, "multichallenge") == {"axis average": ["needs --judge"] * 2 + ["no probe reached"]}


def test_longmemeval_s_figures_come_from_its_judge_prompts_verdicts(project: Path) -> None:
    rows = table_rows((project / "reports" / "judged.md").read_text(), "longmemeval_oracle")
    # the reference model abstains everywhere: only the abstention item (a single-session-user one) is met
    assert rows["accuracy · single-session-user"] == ["1.000 (1/1)"] * 2
    assert rows["accuracy · knowledge-update"] == rows["accuracy · single-session-preference"] == ["0.000 (0/1)"] * 2
    assert rows["overall accuracy"] == ["0.333 (1/3)"] * 2
    assert rows["task-averaged accuracy"] == ["0.333"] * 2
    assert rows["abstention accuracy · \\_abs"] == ["1.000 (1/1)"] * 2


def test_multichallenge_s_axis_average_is_the_mean_of_its_axes(project: Path) -> None:
    rows = table_rows((project / "reports" / "judged.md").read_text(), "multichallenge")
    # the judge says YES to both; the peanut item passes on NO, the retention item on YES
    assert rows["pass rate · INFERENCE\\_MEMORY"] == ["0.0% (0/1)"] * 2
    assert rows["pass rate · INSTRUCTION\\_RETENTION"] == ["100.0% (1/1)"] * 2
    assert rows["axis average"] == ["50.0%"] * 2


def test_the_figures_are_a_csv_beside_the_report(project: Path) -> None:
    with open(project / "reports" / "judged" / CSV_NAME, newline="") as handle:
        rows = list(csv.DictReader(handle))
    overall = [r for r in rows if r["metric"] == "overall accuracy"]
    assert [(r["policy"], r["value"], r["k"], r["n"]) for r in overall] == [
        ("full-history", str(1 / 3), "1", "3"),
        ("last-turns:turns=1", str(1 / 3), "1", "3"),
    ]


def test_the_manifest_and_the_report_name_each_benchmark_prompt_by_its_sha256(project: Path) -> None:
    recorded = json.loads((project / "results" / "judged" / "manifest.json").read_text())["judge_prompts"]
    assert recorded == {p.name: p.sha256 for p in (LONGMEMEVAL, LONGMEMEVAL_ABSTENTION, MULTICHALLENGE)}
    markdown = (project / "reports" / "judged.md").read_text()
    assert f"Judge prompt: `multichallenge` sha256 {MULTICHALLENGE.sha256}." in markdown
    assert json.loads((project / "results" / "off" / "manifest.json").read_text())["judge_prompts"] is None


@pytest.mark.parametrize(
    ("figure", "text"),
    [
        (dict(value=0.5, k=1, n=2, left_out=0, note=""), "0.500 (1/2)"),
        (dict(value=None, k=None, n=0, left_out=2, note=""), "no item scored; 2 left out"),
        (dict(value=0.25, k=None, n=4, left_out=1, note=""), "0.250 (n=4; 1 left out)"),
        (dict(value=None, k=None, n=None, left_out=0, note="needs --judge"), "needs --judge"),
    ],
)
def test_a_cell_says_what_its_number_counts_and_never_fills_an_unknown(figure: dict, text: str) -> None:
    from harness.report.benchmarks import Score

    assert cell(Score("r", "p", "m", "mrcr", "mean grade", "2", **figure)) == text


SHA = "0" * 64
MRCR = f"""\
title: An MRCR-shaped item
source: {{dataset: mrcr, item_id: "m1", sha256: "{SHA}", licence: x, category: "2"}}
turns:
  - user: "database=PostgreSQL"
    assistant: Noted.
  - user: Prepend aB3x to the poem. Which database are we on?
    probe: q
    expect:
      - pattern: "^aB3x"
      - value: aB3xA poem about Lisbon
"""
LOCOMO = f"""\
title: A LoCoMo-shaped item
source: {{dataset: locomo, item_id: "c1-q1", sha256: "{SHA}", licence: x, category: "4"}}
turns:
  - user: "database=PostgreSQL"
    assistant: Noted.
  - user: Which database are we on?
    probe: q
    expect:
      - value: database=PostgreSQL
"""


def test_mrcr_and_locomo_are_scored_from_the_answers_without_a_judge(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chronologies").mkdir()
    (tmp_path / "chronologies" / "mrcr-m1.yaml").write_text(MRCR)
    (tmp_path / "chronologies" / "locomo-c1-q1.yaml").write_text(LOCOMO)
    runner = CliRunner()
    assert runner.invoke(main, ["run", "--run-id", "r", "--quiet", "--policy", "full-history"]).exit_code == 0
    assert runner.invoke(main, ["report", "results/r", "--no-charts"]).exit_code == 0
    markdown = (tmp_path / "reports" / "r.md").read_text()
    answer = [
        line for line in (tmp_path / "results" / "r" / "calls.jsonl").read_text().splitlines() if "locomo" in line
    ]
    assert "PostgreSQL" in answer[0]  # the reference model answers the declared value
    assert table_rows(markdown, "mrcr") == {"mean grade · 2 needles": ["0.000 (n=1)"], "mean grade": ["0.000 (n=1)"]}
    locomo = table_rows(markdown, "locomo")
    assert locomo == {"F1 · category 4 (single-hop)": ["1.000 (n=1)"], "F1": ["1.000 (n=1)"]}  # the same tokens


def test_export_writes_longmemeval_s_hypothesis_file_for_one_policy(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    runner = CliRunner()
    several = runner.invoke(main, ["export", "results/off", "--format", "longmemeval", "--out", "h.jsonl"])
    assert several.exit_code == 2 and "give --policy" in several.output and not (project / "h.jsonl").exists()
    summary = [
        "export",
        "results/off",
        "--format",
        "longmemeval",
        "--out",
        "s.jsonl",
        "--policy",
        "summary:max_chars=1",
    ]
    stopped = runner.invoke(main, summary)
    assert "without an answer left out" in stopped.output, stopped.output
    args = ["export", "results/off", "--format", "longmemeval", "--out", "h.jsonl", "--policy", "full-history"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in (project / "h.jsonl").read_text().splitlines()]
    assert [(h["question_id"], h["hypothesis"]) for h in lines] == [
        (item, "Nothing in my context answers that.") for item in ("0a995998_abs", "e47becba", "pref0001")
    ]
    assert "3 hypotheses written" in result.output
