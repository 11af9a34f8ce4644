"""*Benchmark scores*: LongMemEval's and MultiChallenge's own figures per policy, from verdicts the
judge gave through the benchmarks' own prompts (a loopback judge here), `needs --judge` without
one; the same figures in `benchmarks.csv` beside the report; MRCR and LoCoMo scored from the
answers with no judge."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.chronology.loading import load_chronologies
from harness.cli.commands import main
from harness.importing.formats import ImportOptions, import_file
from harness.models import CallRequest
from harness.report.benchmarks import CSV_NAME, HEADING, OLDER, cell
from harness.report.document import write_report
from harness.results.digests import settings_digests
from harness.run.batch import Runtime, run_batch
from harness.run.judge_prompts import LONGMEMEVAL, LONGMEMEVAL_ABSTENTION, MULTICHALLENGE
from harness.run.spec import RunSpec
from tests.conftest import builtin_registry
from tests.importing.goldens import FIXTURES
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion
from tests.scripted import ScriptedModel, serving


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


SLOW = pytest.mark.slow  # the tests of `project`: two runs and two reports, through the command line


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
            + ["--policy", "summary:max_chars=1", "--summarizer-model", "openai:s", "--base-url", server.base_url]
            + ["--no-cache"],  # a summarizer answering `I do not know.` over a cap of 1: stops at its first summary
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


@SLOW
def test_a_run_without_a_judge_says_each_judged_score_needs_one(project: Path) -> None:
    markdown = (project / "reports" / "off.md").read_text()
    # a summary of one character stops before any probe of these items: none reached, not "needs --judge"
    # every figure the benchmark reports has its row, so a reader sees what a judge would give
    longmemeval, multichallenge = table_rows(markdown, "longmemeval_oracle"), table_rows(markdown, "multichallenge")
    assert "overall accuracy" in longmemeval and "task-averaged accuracy" in longmemeval
    assert "abstention accuracy · \\_abs" in longmemeval and "accuracy · knowledge-update" in longmemeval
    assert "axis average" in multichallenge and any(row.startswith("pass rate · ") for row in multichallenge)
    for row in [*longmemeval.values(), *multichallenge.values()]:
        assert row == ["needs --judge"] * 2 + ["no probe reached"]


@SLOW
def test_longmemeval_s_figures_come_from_its_judge_prompts_verdicts(project: Path) -> None:
    rows = table_rows((project / "reports" / "judged.md").read_text(), "longmemeval_oracle")
    # the reference model abstains everywhere: only the abstention item (a single-session-user one) is met
    assert rows["accuracy · single-session-user"] == ["1.000 (1/1)"] * 2
    assert rows["accuracy · knowledge-update"] == rows["accuracy · single-session-preference"] == ["0.000 (0/1)"] * 2
    assert rows["overall accuracy"] == ["0.333 (1/3)"] * 2
    assert rows["task-averaged accuracy"] == ["0.333"] * 2
    assert rows["abstention accuracy · \\_abs"] == ["1.000 (1/1)"] * 2


@SLOW
def test_multichallenge_s_axis_average_is_the_mean_of_its_axes(project: Path) -> None:
    rows = table_rows((project / "reports" / "judged.md").read_text(), "multichallenge")
    # the judge says YES to both; the peanut item passes on NO, the retention item on YES
    assert rows["pass rate · INFERENCE\\_MEMORY"] == ["0.0% (0/1)"] * 2
    assert rows["pass rate · INSTRUCTION\\_RETENTION"] == ["100.0% (1/1)"] * 2
    assert rows["axis average"] == ["50.0%"] * 2


@SLOW
def test_the_figures_are_a_csv_beside_the_report(project: Path) -> None:
    with open(project / "reports" / "judged" / CSV_NAME, newline="") as handle:
        rows = list(csv.DictReader(handle))
    overall = [r for r in rows if r["metric"] == "overall accuracy"]
    assert [(r["policy"], r["value"], r["k"], r["n"]) for r in overall] == [
        ("full-history", str(1 / 3), "1", "3"),
        ("last-turns:turns=1", str(1 / 3), "1", "3"),
    ]


@SLOW
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


# --- MRCR and LoCoMo, scored from the answers with no judge -----------------------------------------

# What the scripted model answers at each probe of the fixtures, and the score it gets, by hand.
ANSWERS = {
    # LoCoMo category 2 (reference `3 March 2023`): 3 of its 7 stemmed words match all 3 of the
    # reference's: precision 3/7, recall 1, F1 = 2·(3/7)/(10/7) = 0.6
    "When did Ana adopt her dog?": "She adopted it on 3 March 2023.",
    # category 1 (`Nurse, Porto`), per comma-separated sub-answer: `nurse` found whole (`A` is
    # dropped), `Porto` not: (1 + 0) / 2 = 0.5
    "What does Ben do for work and where?": "A nurse, in Lisbon",
    # category 5, adversarial: the answer says `not mentioned`: 1
    "What breed is Ben's cat?": "Not mentioned in the conversation.",
    # MRCR, 2 needles: the prefix and the reference answer exactly: 1.0
    "Prepend aYooSG8CQg": "aYooSG8CQgA tapir dreams beneath the moon,\nof rivers warm and fruit in June.",
    # 4 needles: the reference answer without its prefix: 0
    "Prepend Zq7.Xk2": "Tick by tock I count your day.",
}


def scripted(request: CallRequest) -> str:
    asked = request.messages[-1].content
    return next((answer for start, answer in ANSWERS.items() if asked.startswith(start)), "Noted.")


@pytest.fixture(scope="module")
def answered_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The LoCoMo and MRCR fixtures imported by the importers, replayed in process under the
    reference model and a scripted one that answers ANSWERS."""
    root = tmp_path_factory.mktemp("answered")
    folder = root / "chronologies"
    import_file("locomo", FIXTURES / "locomo_sample.json", folder, ImportOptions(accept_licence="CC BY-NC 4.0"))
    import_file("mrcr", FIXTURES / "needles.jsonl", folder, ImportOptions())
    registry = builtin_registry()
    plan = RunSpec(
        load_chronologies(sorted(folder.glob("*.yaml"))), [registry.parse("full-history")], ["reference", "scripted"]
    )
    run_batch(plan, root / "r", "r", Runtime(registry, factory=serving(ScriptedModel("scripted", scripted))))
    return root / "r"


def answer_scores(results: Path, reports: Path) -> tuple[str, list[dict[str, str]]]:
    report = write_report([results], reports, charts=False)
    with open(report.parent / report.stem / CSV_NAME, newline="") as handle:
        return report.read_text(), list(csv.DictReader(handle))


def test_locomo_f1_per_category_and_overall_come_from_the_manifest_s_probes(answered_run: Path, tmp_path) -> None:
    markdown, rows = answer_scores(answered_run, tmp_path)
    # columns: full-history under reference, under scripted; the literal reader's answers score 0
    assert table_rows(markdown, "locomo") == {
        "F1 · category 1 (multi-hop)": ["0.000 (n=1)", "0.500 (n=1)"],
        "F1 · category 2 (temporal)": ["0.000 (n=1)", "0.600 (n=1)"],
        "F1 · category 5 (adversarial)": ["0.000 (n=1)", "1.000 (n=1)"],
        "overall F1": ["0.000 (n=3)", "0.700 (n=3)"],  # the mean over every question, category 5 included
    }
    assert "Under `reference`, a literal reader" in markdown[markdown.index(f"## {HEADING}") :]  # says what 0 is
    scored = {(r["model"], r["metric"], r["group"]): float(r["value"]) for r in rows if r["dataset"] == "locomo"}
    assert scored[("scripted", "F1", "2")] == pytest.approx(0.6)
    assert scored[("scripted", "overall F1", "all")] == pytest.approx(0.7)


def test_mrcr_mean_grade_per_needle_count_needs_the_recorded_prefix(answered_run: Path, tmp_path) -> None:
    markdown, _ = answer_scores(answered_run, tmp_path)
    assert table_rows(markdown, "mrcr") == {
        "mean grade · 2 needles": ["0.000 (n=1)", "1.000 (n=1)"],  # the prefix and the answer exactly
        "mean grade · 4 needles": ["0.000 (n=1)", "0.000 (n=1)"],  # the answer without its prefix
        "mean grade": ["0.000 (n=2)", "0.500 (n=2)"],
    }


def test_a_locomo_conversation_is_one_row_of_items_by_category(answered_run: Path, tmp_path) -> None:
    markdown, _ = answer_scores(answered_run, tmp_path)
    part = markdown[markdown.index("## Items by category") : markdown.index(f"## {HEADING}")]
    labels = [row.split("](")[0].removeprefix("| [") for row in part.splitlines() if row.startswith("| [")]
    assert labels == ["locomo", "mrcr · 2 needles", "mrcr · 4 needles"]


def test_a_run_recorded_before_the_manifest_held_probes_says_so(answered_run: Path, tmp_path) -> None:
    older = tmp_path / "older"
    shutil.copytree(answered_run, older)
    manifest = json.loads((older / "manifest.json").read_text())
    for entry in manifest["chronologies"]:
        del entry["probes"]
    manifest["settings_sha256"] = settings_digests(manifest)  # as it was sealed then
    (older / "manifest.json").write_text(json.dumps(manifest))
    markdown, _ = answer_scores(older, tmp_path / "reports")
    assert table_rows(markdown, "locomo") == {"overall F1": [OLDER] * 2}
    assert table_rows(markdown, "mrcr") == {"mean grade": [OLDER] * 2}


@SLOW
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


@pytest.mark.slow
def test_export_never_writes_into_a_run_and_replaces_a_file_only_with_force(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    manifest = (project / "results/off/manifest.json").read_bytes()
    args = ["export", "results/off", "--format", "longmemeval", "--policy", "full-history", "--out"]
    into_run = CliRunner().invoke(main, [*args, "results/off/manifest.json", "--force"])
    assert into_run.exit_code == 2 and "lies in the results folder" in into_run.output
    assert (project / "results/off/manifest.json").read_bytes() == manifest
    (project / "notes.jsonl").write_text("mine\n")
    refused = CliRunner().invoke(main, [*args, "notes.jsonl"])
    assert refused.exit_code == 2 and "notes.jsonl already exists" in refused.output
    assert (project / "notes.jsonl").read_text() == "mine\n"
    assert CliRunner().invoke(main, [*args, "notes.jsonl", "--force"]).exit_code == 0


@SLOW
def test_export_refuses_a_run_whose_records_were_edited_as_report_does(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    shutil.copytree(project / "results/off", project / "results/edited")
    calls = project / "results/edited/calls.jsonl"
    calls.write_bytes(calls.read_bytes().replace(b"Nothing in my context", b"Everything in my context", 1))
    args = ["export", "results/edited", "--format", "longmemeval", "--out", "e.jsonl", "--policy", "full-history"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "changed after the harness wrote them" in result.output, result.output
    assert not (project / "e.jsonl").exists()
