"""The report: what a reader can rely on, checked on small runs made in-process."""

from __future__ import annotations

import itertools
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.base.errors import InputError, ModelError
from harness.base.temporaries import PREFIX
from harness.chronology import Chronology, Forget, WriterCandidate
from harness.cli.commands import main
from harness.models import CallRequest, Completion, Usage
from harness.models.options import ModelOptions
from harness.models.reference import ReferenceModel
from harness.report.charts import VERSION
from harness.report.charts_plan import chart_plan
from harness.report.comparison import compare
from harness.report.document import build_report, write_report
from harness.report.header import CHARTS_NOTE
from harness.report.markdown import cell
from harness.results.reader import read_records
from harness.results.tables import Results, load_results
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec
from tests.conftest import NO_RESTART, builtin_registry, chronology, user
from tests.hostile_text import ESCAPES, MARKUP, hostile_run, obeyed
from tests.paths import ROOT, SHIPPED
from tests.report_text import pages_of, whole_report
from tests.scripted import ScriptedModel, serving

REGISTRY = builtin_registry()
ORDER = ["retained-reduction", "full-history", "summary", "last-turns:turns=1", "bounded-facts"]


def run_into(
    directory: Path,
    chronologies: Sequence[Chronology],
    policies: Sequence[str],
    model=None,
    repetitions: int = 1,
    run_id: str = "t",
    live: bool = False,
    encoding: str = "cl100k_base",
) -> Results:
    """A finished run in `directory`, made in-process with any model object."""
    name = getattr(model, "name", "reference")
    plan = RunSpec(
        chronologies, [REGISTRY.parse(p) for p in policies], [name], repetitions, live=live, encoding=encoding
    )
    run_batch(plan, directory, run_id, Runtime(REGISTRY, factory=lambda _name, _stack: model or ReferenceModel()))
    return load_results(directory)


RESTART = chronology(
    user(1, "constraint=never restart production; module=Billing", assistant="Understood."),
    user(2, "module=Reporting", assistant="Noted."),
    user(3, "Can I restart production now?", probe="restart"),
    prohibitions=(NO_RESTART,),
)

HOSTILE_TEXT = "a | b `code` <script>alert(1)</script> **x** [y](z)\nsecond line"
HOSTILE = Chronology(
    path="odd|name.yaml",
    sha256="1" * 64,
    title="Title | with `ticks` <b>html</b>\nand a newline",
    description="",
    system="SYS | `s`",
    sessions=("main",),
    prohibitions=(NO_RESTART,),
    name="odd name|`x`",
    turns=(
        user(1, f"constraint=never restart it | `now`; symptom={HOSTILE_TEXT.splitlines()[0]}", assistant="ok | `z`"),
        user(
            2,
            "symptom=fixed",
            assistant=HOSTILE_TEXT,
            writer=(WriterCandidate("database", "Billing | `q`", "module=Billing"),),
        ),
        user(3, f"Can I restart? {HOSTILE_TEXT}", probe="p | `1`"),
        Forget(number=4, line=4, key="symptom"),
        user(5, "Can I restart now <i>please</i>?", probe="after"),
    ),
)


@pytest.fixture(scope="module")
def restart(tmp_path_factory: pytest.TempPathFactory) -> Results:
    return run_into(tmp_path_factory.mktemp("restart"), [RESTART], ORDER)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Results:
    return run_into(tmp_path_factory.mktemp("hostile"), [HOSTILE], ORDER)


# Each run's report made once for the tests that only read it (same results, same bytes:
# `test_same_results_same_bytes`): a third of a CPU second each time saved.
@pytest.fixture(scope="module")
def restart_report(restart: Results) -> str:
    return build_report(restart)


@pytest.fixture(scope="module")
def hostile_report(hostile: Results) -> str:
    return build_report(hostile)


@pytest.fixture(scope="module")
def restart_whole(restart: Results) -> str:
    return whole_report(restart)


def tables(markdown: str) -> list[list[str]]:
    """Every table of a markdown text, as its lines."""
    found, current = [], []
    for line in markdown.splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            found, current = found + [current], []
    return found


def cells(row: str) -> list[str]:
    """A table row split on its unescaped pipes (GitHub treats `\\|` as text)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]


def table_under(markdown: str, heading: str, n: int = 0) -> list[list[str]]:
    """The n-th table after a heading line, as rows of cells (header and rule included)."""
    after = markdown.split(f"\n{heading}\n", 1)[1]
    return [cells(row) for row in tables(after)[n]]


SECTIONS = [
    "## At a glance",
    "## What ran",
    "## Caveats",
    "## Prohibition survival by age",
    "## mem",
    "### Prohibition survival",
    "### Drift: stale and forgotten values",
    "### Where each loss happened",
    "### Answers at probes",
    "### Policy stops and errors",
    "### Fact-store timeline",
    "### Sizes per turn",
    "### Token figures",
]
ON_PAGE = [
    "### Where each loss happened",
    "### Answers at probes",
    "### Fact-store timeline",
    "### Sizes per turn",
    "### Token figures",
]


IN_REPORT = [s for s in SECTIONS if s not in ON_PAGE]


def test_every_section_is_present_in_order(restart: Results) -> None:
    """The report holds the run's sections and, per chronology, what was kept and lost; the
    chronology's page beside it holds every section of the chronology, in the same order."""
    report = build_report(restart, charts=False)  # the sections' headings: no chart is read
    positions = [report.index(f"\n{s}\n") for s in IN_REPORT]
    assert positions == sorted(positions)
    assert not any(f"\n{s}\n" in report for s in ON_PAGE)
    [page] = pages_of(restart, charts=False).values()
    positions = [page.index(f"\n{s}\n") for s in SECTIONS[SECTIONS.index("## mem") :]]
    assert positions == sorted(positions)
    assert "[its page](t/chronology-mem.md)" in report and "[t](../t.md)" in page


def test_policies_follow_the_declared_order_in_columns_and_rows(restart_whole: str) -> None:
    checked = 0
    for table in tables(restart_whole):
        header = cells(table[0])
        if set(ORDER) <= set(header):  # policies as columns
            assert [h for h in header if h in ORDER] == ORDER
            checked += 1
        elif header[0] in ("policy", "policy (declared order)"):  # policies as rows
            named = [row[0] for row in map(cells, table[2:])]
            assert sorted(set(named), key=named.index) == [p for p in ORDER if p in named]
            checked += 1
    assert checked >= 8


def test_what_ran_names_hashes_parameters_models_and_versions(restart_report: str) -> None:
    report = restart_report
    assert "0" * 64 in report and "| last-turns:turns=1 | turns=1, pin=false |" in report
    assert [row[0] for row in table_under(report, "## What ran", 2)[2:]] == ORDER
    ran = dict(table_under(report, "## What ran")[2:])
    assert ran["models"] == "reference" and ran["repetitions"] == "1" and ran["harness version"]


def test_the_caveats_say_reference_qualifies_no_model_and_tokens_are_not_billed(restart_report: str) -> None:
    caveats = restart_report.split("## Caveats")[1].split("\n## ")[0]
    assert "qualifies no model" in caveats and "is billed tokens or cost" in caveats
    assert re.search(r"0 of \d+ model calls reported it", caveats)


@pytest.mark.parametrize("report", ["restart_report", "hostile_report"])
def test_every_table_row_has_as_many_cells_as_its_header(report: str, request: pytest.FixtureRequest) -> None:
    for table in tables(request.getfixturevalue(report)):
        assert {len(cells(row)) for row in table} == {len(cells(table[0]))}, table[0]


def test_hostile_chronology_text_stays_data(hostile: Results) -> None:
    report = whole_report(hostile)
    for raw in ("<script", "<b>", "<i>", "`code`", "`now`", "[y](z)", "**x**"):
        assert raw not in report
    assert (
        "\n## odd name\\|&#96;x&#96;\n\n*Title \\| with &#96;ticks&#96; &lt;b&gt;html&lt;/b&gt; and a newline*\n"
        in report
    )
    timeline = table_under(report, "### Fact-store timeline")
    assert timeline[2][2].startswith("constraint=never restart it \\| &#96;now&#96; (turn 1); symptom=a \\| b")
    assert timeline[3][1:3] == [
        "rejected (scripted writer output)",
        "candidate 1 (database): evidence is not quoted from the user message: "
        "'module=Billing'; previous facts kept; no fallback applied",
    ]


@pytest.mark.slow
def test_no_ranking_words(restart: Results, hostile: Results) -> None:
    for results in (restart, hostile):
        assert not re.search(r"\b(best|winners?|rank\w*|better|worse)\b", whole_report(results), re.IGNORECASE)


@pytest.mark.slow
def test_same_results_same_bytes(restart: Results, tmp_path: Path) -> None:
    first = write_report([restart.directory], tmp_path / "a")
    second = write_report([restart.directory], tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    for png in sorted((tmp_path / "a" / "t").glob("*.png")):
        assert png.read_bytes() == (tmp_path / "b" / "t" / png.name).read_bytes()


@pytest.mark.slow
def test_charts_are_written_and_linked_relatively(hostile: Results, tmp_path: Path) -> None:
    path = write_report([hostile.directory], tmp_path)
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", path.read_text())
    # the cost chart, the policies' measures, survival by age
    assert len(links) == 3 and all(not link.startswith("/") for link in links)
    [page] = (tmp_path / "t").glob("chronology-*.md")
    beside = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text())
    assert len(beside) == 2 and all("/" not in link for link in beside)  # the chronology's two size charts
    for found in [path.parent / link for link in links] + [page.parent / link for link in beside]:
        assert found.is_file() and found.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    written = sorted(p.name for p in (tmp_path / "t").iterdir())
    # the charts, the CSV and the chronology's page
    assert written == sorted([Path(link).name for link in links + beside] + ["policies.csv", page.name])


@pytest.mark.slow
def test_a_rebuild_removes_charts_the_report_no_longer_has(restart: Results, tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "9-gone-view-size.png").write_bytes(b"old")
    (tmp_path / "t" / "policies.csv").write_text("policy,model,run_id,x\n")  # as every earlier build left it
    write_report([restart.directory], tmp_path)
    assert not (tmp_path / "t" / "9-gone-view-size.png").exists()


@pytest.mark.slow
def test_a_report_whose_charts_fail_leaves_the_previous_report_whole(
    restart: Results, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = write_report([restart.directory], tmp_path).read_bytes()

    def fails(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("harness.report.document.write_charts", fails)
    with pytest.raises(OSError, match="disk full"):
        write_report([restart.directory], tmp_path)
    assert (tmp_path / "t.md").read_bytes() == before  # not half-written, not replaced
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["index.md", "t.md"]  # no temporary left


@pytest.mark.slow
def test_the_report_is_the_same_text_streamed_to_a_file_or_made_in_memory(hostile: Results, tmp_path: Path) -> None:
    path = write_report([hostile.directory], tmp_path)
    assert path.read_text(encoding="utf-8") == build_report(hostile)
    assert not path.read_text().endswith("\n\n")
    pages = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "t").glob("*.md")}
    assert pages == pages_of(hostile) and all(p.endswith("\n") and not p.endswith("\n\n") for p in pages.values())


def usage_on_answers(request: CallRequest) -> Completion:
    """The reference model's text; usage reported on answer calls only: the writer's calls report nothing."""
    completion = ReferenceModel().complete(request)
    usage = Usage(prompt_tokens=10, completion_tokens=3) if request.kind == "answer" else None
    return Completion(completion.text, usage)


def test_unknown_usage_is_shown_as_unknown_with_how_many_calls_reported(tmp_path: Path) -> None:
    partial = ScriptedModel("partial", usage_on_answers)
    results = run_into(tmp_path, [RESTART], ["full-history", "bounded-facts"], model=partial)
    report = whole_report(results)
    rows = {(r[0], r[1].split(":")[0]): r for r in table_under(report, "### Token figures")[2:]}
    assert rows[("full-history", "all")][5:] == ["10 (1 of 1 calls reported)", "3 (1 of 1 calls reported)"]
    assert rows[("bounded-facts", "all")][5] == "unknown total; 10 over the 1 of 4 calls that reported"
    assert rows[("bounded-facts", "writer")][5:] == ["unknown (0 of 3 calls reported)"] * 2
    assert rows[("bounded-facts", "answer")][5] == "10 (1 of 1 calls reported)"
    assert "Provider-reported usage: 2 of 5 model calls reported it (answer 2 of 2, writer 0 of 3)" in report


@pytest.mark.slow
def test_a_judges_verdicts_sit_beside_the_pattern_checks(restart: Results, tmp_path: Path) -> None:
    assert "as a judge model read it" not in whole_report(restart, charts=False)  # no judge, no judged table
    plan = RunSpec(
        [RESTART],
        [REGISTRY.parse("full-history"), REGISTRY.parse("last-turns:turns=1")],
        ["reference"],
        options=ModelOptions(judge="judge"),
    )
    # Reads every view as keeping the prohibition and every answer as breaking it.
    judge = ScriptedModel("judge", '{"in_view": true, "honoured": false, "reason": "a | `b`"}')
    run_batch(plan, tmp_path, "j", Runtime(REGISTRY, factory=serving(judge)))
    report = whole_report(load_results(tmp_path), charts=False)
    assert table_under(report, "### Prohibition survival")[2][3:] == ["kept · honoured", "lost · not honoured"]
    judged = table_under(report, "### Prohibition survival as a judge model read it")
    assert judged[2][3:] == ["kept · not honoured", "kept · not honoured"]
    assert "| judge | judge |" in report and "| full-history | judge: 1 |" in report


def small_judge(replies: dict[str, str | None]) -> ScriptedModel:
    """A judge as a small model serves it: by policy, a verdict word, an echoed prompt, or a failed
    call; `replies`: a word in the view -> reply (None: the call fails)."""

    def reply(request: CallRequest) -> str:
        body = request.messages[1].content
        found = next(r for word, r in replies.items() if word in body)
        if found is None:
            raise ModelError("openai:j: timed out: no complete response within 60s (5 attempts)", 5)
        return found

    return ScriptedModel("judge", reply)


def judged_run(tmp_path: Path, replies: dict[str, str | None]) -> str:
    plan = RunSpec(
        [RESTART],
        [REGISTRY.parse("full-history"), REGISTRY.parse("last-turns:turns=1")],
        ["reference"],
        options=ModelOptions(judge="judge"),
    )
    run_batch(plan, tmp_path, "j", Runtime(REGISTRY, factory=serving(small_judge(replies))))
    return build_report(load_results(tmp_path))


def test_unusable_verdicts_and_failed_judge_calls_are_counted_and_listed(tmp_path: Path) -> None:
    # full-history keeps the stating message in view; last-turns:turns=1 does not.
    echo = "Reply with exactly one word: KEPT-HONOURED, KEPT-VIOLATED, LOST-HONOURED or LOST-VIOLATED."
    report = judged_run(tmp_path, {"Understood.": echo, "": None})
    counts = table_under(report, "### Prohibition survival as a judge model read it")
    assert "The judge gave no usable verdict on this chronology." in report
    assert counts[2] == ["full-history", "1", "0", "1", "0"] and counts[3] == ["last-turns:turns=1", "1", "0", "0", "1"]
    stops = table_under(report, "### Policy stops and errors")
    assert [
        "last-turns:turns=1",
        "3",
        "judge call failed",
        "openai:j: timed out: no complete response within 60s (5 attempts)",
        "1 of 1",
    ] in stops[2:]
    assert "No policy stopped and no call failed." not in report


def test_a_failed_writer_call_is_listed_with_the_other_failed_calls(tmp_path: Path) -> None:
    """Bounded facts goes on without the writer (previous facts kept), so nothing else shows it."""
    plan = RunSpec(
        [RESTART], [REGISTRY.parse("bounded-facts")], ["reference"], options=ModelOptions(roles={"writer": "w"})
    )
    failing_writer = ScriptedModel("w", fails=ModelError("openai:w: HTTP 503 (5 attempts)", 5))  # after its retries
    run_batch(plan, tmp_path, "w", Runtime(REGISTRY, factory=serving(failing_writer)))
    report = build_report(load_results(tmp_path))
    stops = table_under(report, "### Policy stops and errors")
    failed = [row for row in stops[2:] if row[2] == "writer call failed"]
    assert failed and all(row[3] == "openai:w: HTTP 503 (5 attempts)" and row[4] == "1 of 1" for row in failed)
    writer_turns = {r["turn"] for r in read_records(tmp_path / "calls.jsonl") if r["kind"] == "writer"}
    assert sorted(int(row[1]) for row in failed) == sorted(writer_turns)
    assert "No policy stopped and no call failed." not in report


def test_the_judges_agreement_with_the_patterns_is_a_table_per_policy(tmp_path: Path) -> None:
    report = judged_run(tmp_path, {"": '{"verdict": "KEPT-VIOLATED"}'})
    heading = "### Prohibition survival as a judge model read it"
    agreement = table_under(report, heading, 2)
    assert agreement[0] == [
        "policy",
        "facet",
        *("both yes", "both no", "pattern yes, judge no", "pattern no, judge yes", "no verdict"),
    ]
    # full-history: pattern kept and honoured; last-turns:turns=1: pattern lost, answer not honoured.
    assert agreement[2:] == [
        ["full-history", "view", "1", "0", "0", "0", "0"],
        ["full-history", "answer", "0", "0", "1", "0", "0"],
        ["last-turns:turns=1", "view", "0", "0", "0", "1", "0"],
        ["last-turns:turns=1", "answer", "0", "1", "0", "0", "0"],
    ]


def test_an_unavailable_tokenizer_is_unknown_never_zero(tmp_path: Path) -> None:
    results = run_into(tmp_path, [RESTART], ["full-history"], encoding="no_such_encoding")
    report = whole_report(results)
    assert "unavailable: tiktoken counts unknown" in report
    assert table_under(report, "### Token figures")[2][4] == "unknown (tokenizer unavailable)"


def chatty() -> ScriptedModel:
    """Answers longer at every call, so live repetitions differ in size."""
    calls = itertools.count(1)

    def answer(request: CallRequest) -> str:
        return ("No." if "restart" in request.turn.user else "ok") + "!" * next(calls)

    return ScriptedModel("chatty", answer)


def test_repetitions_show_counts_and_spread(tmp_path: Path) -> None:
    results = run_into(tmp_path, [RESTART], ["full-history"], model=chatty(), repetitions=2, live=True)
    report = whole_report(results)
    assert (
        table_under(report, "### Prohibition survival")[2][3]
        == "2/2 kept \\[34–100%\\] · 2/2 honoured \\[34–100%\\] · pass^2: yes"
    )
    views = table_under(report, "### Sizes per turn")
    assert views[2][1] == "54" and re.fullmatch(r"\d+–\d+", views[3][1])  # turn 2 differs: min–max
    assert table_under(report, "### Token figures")[2][1] == "all: 3 per repetition ×2"
    assert "cells count across repetitions (k/n)" in report


def test_a_summary_stop_is_reported_with_its_reason(tmp_path: Path) -> None:
    stopping = chronology(
        user(1, "constraint=never restart it", assistant="ok", summary=""),
        user(2, "Can I restart?", probe="later"),
        prohibitions=(NO_RESTART,),
    )
    report = whole_report(run_into(tmp_path, [stopping], ["full-history", "summary"]))
    assert table_under(report, "### Policy stops and errors")[2] == [
        "summary",
        "1",
        "stopped",
        "summary\\_empty (scripted)",
        "1 of 1",
    ]
    assert table_under(report, "### Prohibition survival")[2][4] == "not measured (stopped)"
    assert "policy stopped at turn 1 (summary\\_empty)" in report


def test_the_fact_timeline_shows_admissions_rejections_evictions_and_forgets(tmp_path: Path) -> None:
    facts = chronology(
        user(1, "product=ERP; module=Billing; priority=high; database=SQL; customer=Contoso", assistant="ok"),
        user(2, "version=12.4", assistant="ok"),
        user(3, "module=Sales", assistant="ok", writer=(WriterCandidate("database", "Sales", "module=Sales"),)),
        Forget(number=4, line=4, key="module"),
    )
    timeline = table_under(whole_report(run_into(tmp_path, [facts], ["bounded-facts"])), "### Fact-store timeline")
    events = [(row[0], row[1]) for row in timeline[2:]]
    assert events == [
        ("1", "admitted"),
        ("2", "admitted"),
        ("2", "evicted"),
        ("3", "rejected (scripted writer output)"),
        ("4", "forget module"),
    ]
    assert "no fallback applied" in timeline[5][2]


def test_the_fact_timeline_calls_a_same_value_re_declaration_so_not_a_correction(tmp_path: Path) -> None:
    """Issue 24, item 8: `module=Billing` declared again at turn 2 replaces nothing the user changed."""
    facts = chronology(
        user(1, "module=Billing", assistant="ok"),
        user(2, "module=Billing", assistant="ok"),
        user(3, "module=Sales", assistant="ok"),
    )
    timeline = table_under(whole_report(run_into(tmp_path, [facts], ["bounded-facts"])), "### Fact-store timeline")
    assert [(row[0], row[1], row[2]) for row in timeline[2:]] == [
        ("1", "admitted", "module=Billing (turn 1)"),
        ("2", "admitted", "module=Billing (turn 2)"),
        ("2", "re-declared (same value)", "module=Billing (turn 1)"),
        ("3", "admitted", "module=Sales (turn 3)"),
        ("3", "replaced (correction)", "module=Billing (turn 2)"),
    ]


def test_a_long_chronology_gets_turn_ranges_in_size_tables(tmp_path: Path) -> None:
    long = chronology(*[user(n, f"message {n}", assistant="ok") for n in range(1, 40)], user(40, "end?", probe="end"))
    report = whole_report(run_into(tmp_path, [long], ["full-history"]))
    views = table_under(report, "### Sizes per turn")
    assert views[2][0] == "turns 1–4" and len(views) - 2 == 10
    assert "the charts show every turn" in report


def test_many_ages_are_grouped_into_ranges(tmp_path: Path) -> None:
    probes = [user(n, "Can I restart?", probe=f"p{n}") for n in range(2, 22)]
    chron = chronology(user(1, "constraint=never restart it", assistant="ok"), *probes, prohibitions=(NO_RESTART,))
    ages = table_under(build_report(run_into(tmp_path, [chron], ["full-history"])), "## Prohibition survival by age")
    assert [row[0] for row in ages[2:-1]] == [f"{a}–{a + 1}" for a in range(1, 21, 2)]
    assert ages[2][1] == "view: 2/2 · answer: 2/2"
    assert ages[-1] == ["set apart (cause: checks)", "none"]


def test_survival_by_age_sets_apart_losses_that_do_not_depend_on_age(tmp_path: Path) -> None:
    """Issue 9, case 4: a forget of another key and another session counted as losses by age."""
    chron = chronology(
        user(1, "constraint=never restart it", assistant="ok"),
        user(2, "module=A", assistant="ok"),
        Forget(number=3, line=3, key="module"),
        user(4, "Can I restart?", probe="after-forget"),
        user(5, "Can I restart?", probe="other", session="logs"),
        sessions=("main", "logs"),
        prohibitions=(NO_RESTART,),
    )
    ages = table_under(build_report(run_into(tmp_path, [chron], ["full-history"])), "## Prohibition survival by age")
    assert ages[2:] == [["set apart (cause: checks)", "forget: 1, other-session: 1"]]


def test_two_runs_side_by_side(tmp_path: Path) -> None:
    one = run_into(tmp_path / "one", [RESTART], ["full-history", "last-turns:turns=1"], run_id="one")
    five = run_into(tmp_path / "five", [RESTART], ["full-history", "last-turns:turns=5"], run_id="five")
    path = write_report([one.directory, five.directory], tmp_path / "reports", charts=False)
    assert path.name == "compare-one+five.md"
    survival = table_under(path.read_text(), "### Prohibition survival")
    assert survival[0][3:] == [
        "full-history @ one",
        "full-history @ five",
        "last-turns:turns=1 @ one",
        "last-turns:turns=5 @ five",
    ]
    assert survival[2][5:] == ["lost · not honoured", "kept · honoured"]
    assert "Side by side: run one: 1 chronology × 2 policies" in path.read_text()


@pytest.mark.slow
def test_side_by_side_reports_of_different_runs_never_share_a_file(tmp_path: Path) -> None:
    """Runs `a-b` and `c`, and runs `a` and `b-c`: two reports, two files."""
    runs = {
        i: run_into(tmp_path / i, [RESTART], ["full-history"], run_id=i).directory for i in ("a-b", "c", "a", "b-c")
    }
    first = write_report([runs["a-b"], runs["c"]], tmp_path / "reports", charts=False)
    second = write_report([runs["a"], runs["b-c"]], tmp_path / "reports", charts=False)
    assert (first.name, second.name) == ("compare-a-b+c.md", "compare-a+b-c.md")
    assert "run a-b" in first.read_text() and "run b-c" in second.read_text()


@pytest.mark.parametrize("run_id", ["index", "README"])
def test_a_run_whose_id_names_the_reports_folders_own_file_is_refused(tmp_path: Path, run_id: str) -> None:
    run = run_into(tmp_path / run_id, [RESTART], ["full-history"], run_id=run_id)  # made before such ids were refused
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "README.md").write_text("shipped\n")
    with pytest.raises(InputError, match=f"run id '{run_id}' would name the reports folder's own {run_id}.md"):
        write_report([run.directory], reports, charts=False)
    assert sorted(os.listdir(reports)) == ["README.md"] and (reports / "README.md").read_text() == "shipped\n"


@pytest.mark.slow
def test_a_file_of_the_reports_name_the_harness_did_not_write_is_replaced_only_with_force(
    restart: Results, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    mine = reports / f"{restart.run_id}.md"
    mine.write_text("# My notes on this run\n")
    args = ["report", str(restart.directory), "--reports", str(reports), "--no-charts"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2, refused.output
    assert "already exists and was not written by the harness" in refused.stderr
    assert "`harness report RESULTS... --force`" in refused.stderr
    assert mine.read_text() == "# My notes on this run\n" and sorted(os.listdir(reports)) == [mine.name]
    assert CliRunner().invoke(main, [*args, "--force"]).exit_code == 0
    assert mine.read_text().startswith("# Context-policy ")
    assert CliRunner().invoke(main, args).exit_code == 0  # the harness's own report: rebuilt as ever


@pytest.mark.slow
def test_an_index_the_harness_did_not_write_is_replaced_only_with_force(restart: Results, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "index.md").write_text("# My index\n")
    args = ["report", str(restart.directory), "--reports", str(reports), "--no-charts"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "index.md already exists and was not written by the harness" in refused.stderr
    assert sorted(os.listdir(reports)) == ["index.md"] and (reports / "index.md").read_text() == "# My index\n"
    assert CliRunner().invoke(main, [*args, "--force"]).exit_code == 0
    assert (reports / "index.md").read_text().startswith("# Reports\n")
    assert CliRunner().invoke(main, args).exit_code == 0  # now the harness's own: rewritten as ever


@pytest.mark.slow
def test_a_folder_of_the_reports_name_the_harness_did_not_write_is_left_alone_unless_forced(
    restart: Results, tmp_path: Path
) -> None:
    """A build removes the PNGs an earlier build left in the report's folder: never a user's."""
    folder = tmp_path / "reports" / restart.run_id
    folder.mkdir(parents=True)
    (folder / "photo.png").write_bytes(b"mine")
    args = ["report", str(restart.directory), "--reports", str(tmp_path / "reports"), "--no-charts"]
    refused = CliRunner().invoke(main, args)
    assert (
        refused.exit_code == 2 and "the report's folder is there and was not written by the harness" in refused.stderr
    )
    assert os.listdir(folder) == ["photo.png"] and not (tmp_path / "reports" / f"{restart.run_id}.md").exists()
    assert CliRunner().invoke(main, [*args, "--force"]).exit_code == 0
    assert CliRunner().invoke(main, args).exit_code == 0  # now the harness's own folder


def test_a_report_folder_a_killed_build_left_is_the_harness_s_own(restart: Results, tmp_path: Path) -> None:
    """A build killed before its policies.csv was in place leaves only its temporaries: the next
    build (a `--resume` writing the finished run's report) takes the folder and sweeps them."""
    folder = tmp_path / "reports" / restart.run_id
    folder.mkdir(parents=True)
    dead = folder / f"{PREFIX}{2**22 + 1}-{'0' * 16}.policies.csv.tmp"  # a pid Linux never gives
    dead.write_text("half")
    args = ["report", str(restart.directory), "--reports", str(tmp_path / "reports"), "--no-charts"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert not dead.exists() and (folder / "policies.csv").is_file()


def test_a_run_whose_report_could_not_be_written_is_refused_before_it_runs(tmp_path: Path) -> None:
    chronology = tmp_path / "c.yaml"
    chronology.write_text("title: c\nturns:\n  - user: Hello\n")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "r.md").write_text("my notes\n")
    args = ["run", str(chronology), "--run-id", "r", "--quiet", "--no-charts", "--policy", "full-history"]
    args += ["--out", str(tmp_path / "results"), "--reports", str(tmp_path / "reports")]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "r.md already exists and was not written by the harness" in refused.stderr
    assert not (tmp_path / "results" / "r").exists()  # nothing run, the id free again


def test_a_report_is_never_written_into_a_results_folder(restart: Results) -> None:
    before = sorted(p.name for p in restart.directory.iterdir())
    args = ["report", str(restart.directory), "--reports", str(restart.directory / "reports"), "--force"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "lies in the results folder" in refused.stderr
    assert sorted(p.name for p in restart.directory.iterdir()) == before


def test_a_report_whose_folder_would_be_the_results_folder_is_refused_even_with_force(tmp_path: Path) -> None:
    """`--reports` naming the results root makes `<reports>/<run-id>` (the charts, the item pages,
    policies.csv) the run's own folder: with --force the build wrote policies.csv into the run."""
    chronology = tmp_path / "c.yaml"
    chronology.write_text("title: c\nturns:\n  - user: Hello\n")
    args = ["run", str(chronology), "--run-id", "r", "--quiet", "--no-charts", "--policy", "full-history"]
    assert (
        CliRunner()
        .invoke(main, [*args, "--out", str(tmp_path / "results"), "--reports", str(tmp_path / "rep")])
        .exit_code
        == 0
    )
    run = tmp_path / "results" / "r"
    before = sorted(p.name for p in run.iterdir())
    args = ["report", str(run), "--reports", str(tmp_path / "results"), "--no-charts", "--force"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "lies in the results folder" in refused.stderr
    assert sorted(p.name for p in run.iterdir()) == before


def test_a_run_whose_report_folder_would_be_its_own_folder_is_refused_before_it_runs(tmp_path: Path) -> None:
    chronology = tmp_path / "c.yaml"
    chronology.write_text("title: c\nturns:\n  - user: Hello\n")
    args = ["run", str(chronology), "--run-id", "r", "--quiet", "--no-charts", "--policy", "full-history"]
    args += ["--out", str(tmp_path / "results"), "--reports", str(tmp_path / "results")]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "the report's folder would be the run's own folder" in refused.stderr
    assert not (tmp_path / "results" / "r").exists()  # nothing run, the id free again


def test_the_same_run_twice_is_bad_input(restart: Results, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["report", str(restart.directory), str(restart.directory), "--reports", str(tmp_path)]
    )
    assert result.exit_code == 2 and "given twice" in result.stderr


@pytest.mark.slow
def test_the_index_lists_every_report_with_its_summary(tmp_path: Path) -> None:
    one = run_into(tmp_path / "one", [RESTART], ["full-history"], run_id="one")
    two = run_into(tmp_path / "two", [RESTART], ["full-history"], run_id="two")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "notes.md").write_text("my | notes\n")
    write_report([two.directory], reports)
    write_report([one.directory, two.directory], reports)
    rows = [cells(row) for row in tables((reports / "index.md").read_text())[0][2:]]
    assert [r[0] for r in rows] == ["[compare-one+two](compare-one%2Btwo.md)", "[notes](notes.md)", "[two](two.md)"]
    assert rows[2][1].startswith("Run two: 1 chronology × 1 policy × reference × 1 repetition")
    assert rows[1][1] == "not a harness report"


@pytest.mark.slow
def test_a_report_rebuilt_from_results_equals_the_one_written_by_run(project: Path) -> None:
    (project / "chronologies" / "c.yaml").write_text(
        "title: t\nprohibitions:\n  p:\n    present: never restart\n    violated_by: '^Yes'\n"
        "turns:\n  - user: never restart it\n    assistant: ok\n  - user: Can I restart?\n    probe: q\n"
    )
    assert CliRunner().invoke(main, ["run", "--run-id", "r", "--quiet"]).exit_code == 0
    written = {p.relative_to(project): p.read_bytes() for p in (project / "reports").rglob("*") if p.is_file()}
    shutil.rmtree(project / "reports")
    assert CliRunner().invoke(main, ["report", "results/r"]).exit_code == 0
    assert {p.relative_to(project): p.read_bytes() for p in (project / "reports").rglob("*") if p.is_file()} == written


# --- the committed example ----------------------------------------------------------------------

EXAMPLE = ROOT / "reports" / "example"
REGENERATE = (
    'rm -rf reports/example && harness run chronologies/library.txt --run-id example --out "$(mktemp -d)" '
    "--reports reports/example --quiet (from the repository root)"
)


# Rows of "What ran" that change with when and where a run happened, not with what it did.
ENVIRONMENT_ROWS = ("started (UTC)", "ended (UTC)", "resumed (UTC)", "Python")


def normalised(markdown: str) -> str:
    """The run's wall-clock times, Python and matplotlib versions set aside: they differ on every run."""
    rows = tuple(f"| {cell(label)} |" for label in ENVIRONMENT_ROWS)
    return "\n".join(
        line.split(" | ")[0] + " | … |"
        if line.startswith(rows)
        else CHARTS_NOTE
        if line.startswith(CHARTS_NOTE)
        else line
        for line in markdown.splitlines()
    )


# The example regenerated: the whole library replayed, so the tests that read it are marked slow.
@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("example")
    shutil.copytree(SHIPPED, root / "chronologies")
    args = [
        "run",
        "chronologies/library.txt",
        "--run-id",
        "example",
        "--out",
        str(root / "results"),
        "--reports",
        str(root / "reports"),
        "--quiet",
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        assert CliRunner().invoke(main, args).exit_code == 0
    return root / "reports"


def files(folder: Path) -> list[Path]:
    return sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())


@pytest.mark.slow
def test_the_committed_example_has_every_file_the_code_writes(regenerated: Path) -> None:
    assert files(EXAMPLE) == files(regenerated), f"regenerate the example: {REGENERATE}"


@pytest.mark.slow
def test_the_committed_example_markdown_matches_the_code(regenerated: Path) -> None:
    for name in [p for p in files(regenerated) if p.suffix == ".md"]:
        committed, fresh = (EXAMPLE / name).read_text(), (regenerated / name).read_text()
        assert normalised(committed) == normalised(fresh), f"{name} is out of date; regenerate: {REGENERATE}"


def test_the_shipped_librarys_report_is_a_document_one_reads() -> None:
    """Issue 40: the library's report under 250 KB of markdown, each chronology's every section on
    its page beside it, linked from the report."""
    report = (EXAMPLE / "example.md").read_text(encoding="utf-8")
    assert len(report.encode()) <= 250_000
    names = [line.strip() for line in (SHIPPED / "library.txt").read_text().splitlines() if line.strip()]
    for name in (Path(n).stem for n in names if not n.startswith("#")):
        assert f"[its page](example/chronology-{name}.md)" in report
        assert (EXAMPLE / "example" / f"chronology-{name}.md").is_file()


@pytest.mark.slow
def test_the_committed_example_charts_match_byte_for_byte(regenerated: Path) -> None:
    drawn_with = [line for line in (EXAMPLE / "example.md").read_text().splitlines() if line.startswith(CHARTS_NOTE)]
    if drawn_with != [f"{CHARTS_NOTE}{VERSION}."]:
        pytest.skip(f"the example's charts say {drawn_with}; this is matplotlib {VERSION}")
    for name in [p for p in files(regenerated) if p.suffix == ".png"]:
        assert (EXAMPLE / name).read_bytes() == (regenerated / name).read_bytes(), (
            f"{name} differs (PNG bytes depend on the matplotlib version too); regenerate: {REGENERATE}"
        )


def test_at_a_glance_heads_the_report_with_each_loss_and_its_cause(restart_report: str) -> None:
    """Issue 10: the question "which policy lost which prohibition, when and why" answered first."""
    report = restart_report
    assert report.index("## At a glance") < report.index("## What ran")
    glance = {row[0]: row[1:] for row in table_under(report, "## At a glance")[2:]}
    header = table_under(report, "## At a glance")[0][1:]
    cell_of = dict(zip(header, glance["[mem](#mem)"]))
    assert cell_of["full-history"] == "nothing lost"
    assert cell_of["last-turns:turns=1"] == "1 prohibition, 1 value lost: window@3"  # the legend says what it means
    assert "`window`: left the window" in report.split("## At a glance", 1)[1].split("\n## ", 1)[0]


def test_each_loss_row_gives_the_show_command_of_its_view(restart_whole: str) -> None:
    rows = table_under(restart_whole, "### Where each loss happened")
    assert rows[0][-1] == "see the view"
    policy, turn = rows[2][0], rows[2][5].split("(turn ")[1].rstrip(")")
    assert rows[2][-1] == f"`harness show results/t --chronology mem --turn {turn} --policy {policy}`"


def test_a_chronology_section_quotes_its_description(tmp_path: Path) -> None:
    described = replace(chronology(user(1, "Hello", probe="p")), description="Nothing is lost here.")
    report = build_report(run_into(tmp_path, [described], ["full-history"]))
    assert "Expected, in its author's words: Nothing is lost here." in report


def test_size_charts_mark_probes_forgets_sessions_and_stops(tmp_path: Path) -> None:
    """Issue 10: charts that point at events; a forget is an event, not a gap or a drop to zero."""
    chron = chronology(
        user(1, "module=A", assistant="ok"),
        Forget(number=2, line=2, key="module"),
        user(3, "Hello", session="logs", assistant="ok"),
        user(4, "Can I restart?", probe="p", summary=""),
        user(5, "Can I restart?", probe="q"),
        sessions=("main", "logs"),
    )
    plan = chart_plan(compare([run_into(tmp_path, [chron], ["full-history", "summary"])]))
    view = next(chart for name, chart in plan.items() if name.endswith("view-size.png"))
    assert [(e.x, e.kind) for e in view.events] == [
        (2, "forget"),
        (3, "session"),
        (4, "session"),
        (4, "probe"),
        (5, "probe"),
    ]
    history, summary = view.series
    assert 2 not in history.x and None not in history.y  # no request at the forget: skipped, not a gap
    assert summary.stops == (4,) and history.stops == ()


def test_each_policys_answer_at_each_probe_is_in_the_report_cut_and_on_one_line(tmp_path: Path) -> None:
    """Issue 15: with a real model the answer is the result; it was only in calls.jsonl."""
    long = "No.\n" + "x" * 400
    chron = chronology(
        user(1, "constraint=never restart production", assistant="ok"),
        user(2, "Can I restart?", probe="p"),
        prohibitions=(NO_RESTART,),
    )

    verbose = ScriptedModel("verbose", lambda r: long if r.kind == "answer" else ReferenceModel().complete(r).text)
    report = whole_report(run_into(tmp_path, [chron], ["full-history"], model=verbose))
    [row] = table_under(report, "### Answers at probes")[2:]
    assert row == ["p (turn 2)", "No. " + "x" * 155 + "…"]


def test_the_block_in_view_is_shown_where_a_loss_is_put_down_to_it(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "constraint=never restart production", assistant="ok", summary="Restarts are fine."),
        user(2, "Can I restart?", probe="p"),
        prohibitions=(NO_RESTART,),
    )
    report = whole_report(run_into(tmp_path, [chron], ["full-history", "summary"]))
    rows = table_under(report, "### Answers at probes", 1)
    assert rows[0] == ["policy", "probe", "cause", "in view"]
    assert rows[2:] == [
        [
            "summary",
            "p (turn 2)",
            "summary",
            "Summary of the earlier conversation (generated and "
            "unverified: it may be wrong or incomplete): Restarts are fine.",
        ]
    ]


@pytest.mark.parametrize(
    ("status", "error", "words"),
    [
        ("running", None, "still running, or killed"),
        ("interrupted", None, "interrupted (Ctrl-C)"),
        ("failed", "disk full", "failed (disk full)"),
    ],
)
def test_an_unfinished_run_says_why_and_how_to_finish_it(status: str, error: str | None, words: str) -> None:
    from harness.report.header import status_text
    from harness.results.rows import Manifest

    manifest = Manifest(
        format_version=2,
        run_id="r",
        policies=[],
        repetitions=1,
        live=False,
        status=status,
        error=error,
        conversations={"total": 4, "complete": 1},
    )
    text = status_text(manifest)
    assert text == f"status {status}: {words}, 1 complete of 4 conversations; `harness run --resume` finishes it"


@pytest.mark.slow
def test_hostile_text_from_the_endpoint_and_the_chronology_is_inert_in_the_report(project: Path) -> None:
    """Answers, an endpoint's error, the title, the description and the file name: no escape
    sequence, no tag, no remote image gets through; each is shown as text."""
    hostile_run(project, "--charts")  # a chart titled with the name: no raw control character in a warning
    folder = project / "reports"
    report = "".join(p.read_text(encoding="utf-8") for p in [folder / "hostile.md", *(folder / "hostile").glob("*.md")])
    assert obeyed(report) == []
    for markup in ("<img", "<a ", "![](http"):
        assert markup not in report
    assert not re.search(r"(?<!\\)\]\(http", report)  # no link or image to the endpoint's address
    assert "answer \\\\x1b\\[2J\\\\x1b\\[31mred" in report  # the answer at the probe
    assert "bad request \\\\x1b\\[2J" in report  # the endpoint's reason of the failed call
    assert "## evil\\\\x1b\\]52;c;aGVsbG8=\\\\x07\\\\x1b\\[31mred\n" in report
    assert "Expected, in its author's words: Description \\\\x1b\\[2J" in report


@pytest.mark.slow
def test_the_index_copies_no_markup_from_a_file_it_did_not_write(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    forged = f"# Context-policy report: x\n\n{ESCAPES} {MARKUP} <script>alert(1)</script> **bold**\n"
    (reports / "forged.md").write_text(forged, encoding="utf-8")
    (reports / "huge.md").write_text("# Context-policy report: y\n\n" + "z" * 100_000 + "\n", encoding="utf-8")
    (reports / "name\x1b]52;c;aGk=\x07.md").write_text("notes\n", encoding="utf-8")
    one = run_into(tmp_path / "one", [RESTART], ["full-history"], run_id="one_1")
    write_report([one.directory], reports)
    index = (reports / "index.md").read_text(encoding="utf-8")
    assert obeyed(index) == []
    for markup in ("<img", "<a ", "<script", "![](http", "**bold**"):
        assert markup not in index
    rows = {cells(row)[0]: cells(row)[1] for row in tables(index)[0][2:]}
    assert rows["[one\\_1](one_1.md)"].startswith("Run one\\_1: 1 chronology × 1 policy")  # as the report says it
    assert rows["[forged](forged.md)"].startswith("\\\\x1b\\[2J\\\\x1b\\[31mred")
    assert len(rows["[huge](huge.md)"]) < 1000  # a line of a report is read, not a whole file


def test_at_a_glance_lists_another_sessions_subject_as_not_a_loss_and_a_forget_as_the_seeds_rule(
    tmp_path: Path,
) -> None:
    """Issue 25: one meaning of other-session (not a loss) everywhere; a forget's loss says it is the rule."""
    sessions = replace(
        chronology(
            user(1, "module=Billing", assistant="ok"),
            user(2, "Which module?", session="logs", probe="logs", asks=()),
            Forget(number=3, line=3, key="product"),
            user(4, "Which module?", probe="after", asks=()),
        ),
        sessions=("main", "logs"),
    )
    report = build_report(run_into(tmp_path, [sessions], ["full-history"]))
    [row] = table_under(report, "## At a glance")[2:]
    assert row[1] == "1 value lost: other session · forget@4"  # another session's: tagged, not counted as lost
    assert "`other session`: from another session (never shared: not a loss)" in report
    assert "`forget`: cleared by a forget (the seed's rule: every history and summary)" in report
    assert "not a loss: sessions never share history" in report
