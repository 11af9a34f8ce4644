"""The report's cost figures from a run against a provider on 127.0.0.1 that reports its prompt
cache: the cacheable prefix beside the reported cached tokens, and with `--prices` the three
costs per policy in the report and policies.csv."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.report.charts import draw
from harness.report.charts_plan import cost_chart
from harness.report.comparison import compare
from harness.report.policies import policies_csv
from harness.report.prices import read_prices
from harness.results.tables import load_results
from tests.loopback import ScriptedServer
from tests.run.test_prefix import CACHED, provider, run_policies

PRICES = "models:\n  m: {input: 1, cached_input: 0.1, cache_write: 1.25, output: 2}\n"
# each call reports 20 prompt tokens (8 read from the cache, 3 written to it) and 2 completion tokens
PER_CALL = (8 * 0.1 + 3 * 1.25 + 9 * 1 + 2 * 2) / 1e6


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[dict]]]:
    root = tmp_path_factory.mktemp("costs")
    with ScriptedServer() as server, pytest.MonkeyPatch.context() as monkeypatch:
        server.default = provider(CACHED)
        records = run_policies(server, root, monkeypatch, "full-history", "summary")
    yield root / "results" / "r", records


def report(run: Path, tmp_path: Path, *options: str) -> tuple[int, str, Path]:
    result = CliRunner().invoke(main, ["report", str(run), "--reports", str(tmp_path), "--no-charts", *options])
    return result.exit_code, result.output, tmp_path


@pytest.mark.slow
def test_a_prices_file_gives_each_policy_three_costs_apart(run: tuple[Path, list[dict]], tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PRICES)
    status, output, reports = report(run[0], tmp_path / "reports", "--prices", str(tmp_path / "p.yaml"))
    assert status == 0, output
    rows = {r["policy"]: r for r in csv.DictReader((reports / "r" / "policies.csv").read_text().splitlines())}
    for policy, row in rows.items():
        calls = [r for r in run[1] if r["policy"] == policy and r["kind"] != "judge"]
        assert float(row["cost_reported"]) == pytest.approx(len(calls) * PER_CALL, abs=1e-6)
        assert float(row["cost_uncached"]) == pytest.approx(len(calls) * (20 + 2 * 2) / 1e6, abs=1e-6)
        assert row["cost_prefix_cached"] and row["cost_currency"] == "USD"
    assert (
        rows["full-history"]["cost_basis"]
        == "input: provider-reported; output: provider-reported; prefix: tiktoken count"
    )
    text = (reports / "r.md").read_text()
    assert "## Cost and the prompt cache" in text and "cost from provider-reported cache counts" in text


def test_the_prefix_and_the_reported_cached_tokens_are_shown_side_by_side(
    run: tuple[Path, list[dict]], tmp_path: Path
) -> None:
    status, output, reports = report(run[0], tmp_path)
    assert status == 0, output
    text = (reports / "r.md").read_text()
    answers = [r for r in run[1] if r["policy"] == "full-history"]
    prefix = sum(r["prefix_tiktoken_tokens"] for r in answers)
    assert f"| full-history | {sum(r['tiktoken_tokens'] for r in answers)} (tiktoken) | {prefix} (" in text
    assert f"| {8 * len(answers)} |" in text  # the provider's cached tokens, beside it
    assert "No prices given" in text


def test_a_model_without_a_price_costs_no_price_never_0(run: tuple[Path, list[dict]], tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("models:\n  other: {input: 1, cached_input: 0.1, output: 2}\n")
    status, output, reports = report(run[0], tmp_path / "reports", "--prices", str(tmp_path / "p.yaml"))
    assert status == 0, output
    rows = list(csv.DictReader((reports / "r" / "policies.csv").read_text().splitlines()))
    assert {(r["cost_uncached"], r["cost_reported"]) for r in rows} == {("", "")}
    assert "no price for openai:m" in (reports / "r.md").read_text()


def test_a_bad_prices_file_stops_the_report_before_anything_is_written(
    run: tuple[Path, list[dict]], tmp_path: Path
) -> None:
    (tmp_path / "p.yaml").write_text("models:\n  m: {input: 1, output: 2}\n")
    status, output, reports = report(run[0], tmp_path / "reports", "--prices", str(tmp_path / "p.yaml"))
    assert status == 2 and f"{tmp_path / 'p.yaml'}:2: models.m.cached_input: missing" in output
    assert not reports.exists()


def test_the_sizes_section_shows_where_a_policy_broke_its_prefix(run: tuple[Path, list[dict]], tmp_path: Path) -> None:
    status, output, reports = report(run[0], tmp_path)
    assert status == 0, output
    text = (reports / "r" / "chronology-memory-drift.md").read_text()  # the chronology's page holds its sizes
    turns = [r["turn"] for r in run[1] if r["policy"] == "summary" and r["kind"] == "answer"]
    assert "**Where the cacheable prefix broke**" in text and "- full-history: never" in text
    assert f"- summary: {', '.join(str(t) for t in turns[1:])}\n" in text  # each answer after the first


def test_the_cost_chart_has_a_point_per_policy_at_its_cost_with_the_prefix_cached_beside_it(
    run: tuple[Path, list[dict]], tmp_path: Path
) -> None:
    (tmp_path / "p.yaml").write_text(PRICES)
    results = load_results(run[0])
    priced = cost_chart(compare([results], read_prices(tmp_path / "p.yaml")))
    assert priced is not None and [p.label for p in priced.points] == ["full-history", "summary"]
    rows = {
        r["policy"]: r
        for r in csv.DictReader(policies_csv(compare([results], read_prices(tmp_path / "p.yaml"))).splitlines())
    }
    for point in priced.points:
        assert (point.x, point.x_also) == pytest.approx(
            (float(rows[point.label]["cost_uncached"]), float(rows[point.label]["cost_prefix_cached"])), abs=1e-6
        )
        assert point.low <= point.y <= point.high
    tokens = cost_chart(compare([results]))  # no prices: input tokens, the uncached part hollow
    assert tokens is not None and "input tokens" in tokens.xlabel
    assert all(p.x_also is not None and p.x_also <= p.x for p in tokens.points)
    assert draw(priced, tmp_path / "cost.png").read_bytes().startswith(b"\x89PNG")
