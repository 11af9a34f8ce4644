"""Spread over repetitions: known counts give known intervals, pass^n and unreliability."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.report.spread import interval_text, percentiles, wilson
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    # Wilson score intervals at 95%, as published tables give them (e.g. Newcombe 1998, Table I).
    [(3, 5, 0.2307, 0.8824), (0, 5, 0.0, 0.4345), (5, 5, 0.5655, 1.0), (81, 263, 0.2553, 0.3662)],
)
def test_wilson_intervals_of_known_counts(k: int, n: int, low: float, high: float) -> None:
    assert wilson(k, n) == pytest.approx((low, high), abs=1e-4)


def test_percentiles_are_the_10th_and_90th() -> None:
    assert percentiles([0.0, 0.25, 0.5, 0.75, 1.0]) == pytest.approx((0.1, 0.9))


CHRONOLOGY = """title: repeated
prohibitions:
  no-restart:
    present: '(?i)\\bnever\\b[^.;\\n]*\\brestart'
    violated_by: '(?i)^\\s*yes\\b'
turns:
  - user: constraint=never restart production
    assistant: Noted.
  - user: Can I restart production now?
    probe: restart
    asks: [no-restart]
"""


@pytest.mark.slow
def test_five_repetitions_whose_answers_vary_show_intervals_pass_n_and_spread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = itertools.cycle(["Yes, go ahead.", "No, it is forbidden.", "Yes.", "No.", "No, never."])

    def varying(_request: Recorded) -> Reply:
        return Reply(body=chat_completion(next(answers)))

    (tmp_path / "chronologies").mkdir()
    (tmp_path / "chronologies" / "repeated.yaml").write_text(CHRONOLOGY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with ScriptedServer() as server:
        server.default = varying
        args = [
            "run",
            "--model",
            "openai:m",
            "--base-url",
            server.base_url,
            "--policy",
            "full-history",
            "--repetitions",
            "5",
            "--no-cache",
            "--run-id",
            "r",
            "--quiet",
        ]
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = (tmp_path / "reports" / "r.md").read_text(encoding="utf-8").replace("\\[", "[").replace("\\]", "]")
    assert f"5/5 kept {interval_text(5, 5)} · 3/5 honoured {interval_text(3, 5)} · pass^5: no" in report
    assert "view: 5/5 [57–100%] · answer: 3/5 [23–88%] · pass^n: 0/1" in report
    # scores per repetition: the current value is always in view (1 of 1), the prohibition passes in 3
    # of 5 repetitions: scores 0.5, 1, 0.5, 1, 1 -> 10th percentile 0.5, 90th 1.0
    assert "| full-history | 5 | 50%–100% | 50 points | 1 of 1 probes |" in report
    assert (tmp_path / "reports" / "r" / "answers-by-age-intervals.png").is_file()
