"""Chronology patterns: RE2 runs what the shipped chronologies use, in time linear in the text,
and refuses what it cannot run with what to write instead."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.chronology.patterns import MAX_PROGRAM_SIZE, Pattern, PatternError, compile_pattern
from harness.cli.commands import main
from harness.results.tables import load_results

SHIPPED = r"(?i)\bnever\b[^.;\n]*\brestart"

MATCHES = [  # pattern, text, matches
    (SHIPPED, "Constraint: NEVER restart production.", True),
    (SHIPPED, "never. restart", False),  # [^.;\n]* stops at the sentence end
    (SHIPPED, "never\nrestart", False),
    (SHIPPED, "nevermore restart", False),  # \b
    (r"(?i)^\s*yes\b", "  Yes — nothing forbids it.", True),
    (r"(?i)^\s*yes\b", "I say yes", False),  # ^ is the start of the text
    (r"(?m)^yes", "no\nyes", True),  # (?m): ^ at every line
    (r"(?i)\b(never|no|do not|don't)\b[^.;\n]*\bdelet", "Don't delete the audit tables", True),
    (r"(?i:never) Restart", "NEVER Restart", True),  # flags may be scoped, anywhere
    (r"(?i)été", "ÉTÉ", True),  # case folding is Unicode
    (r"\bété\b", "un été", False),  # \b and \w are ASCII: write the text, or \pL
    (r"\pL+é", "été", True),
    (r"done$", "done\n", False),  # $ is the end of the text, not before a final newline
    (r"(?P<verb>restart)", "restart", True),
]


@pytest.mark.parametrize(("pattern", "text", "expected"), MATCHES)
def test_re2_runs_what_chronologies_use(pattern: str, text: str, expected: bool) -> None:
    assert compile_pattern(pattern).search(text) is expected


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("(a+)+$", "a" * 100_000 + "!"),
        ("(x+x+)+y", "x" * 100_000),
        ("(a|aa)+$", "a" * 100_000 + "!"),
        (r"(\w+\s?)+$", "w " * 50_000 + "!"),
    ],
)
def test_patterns_that_backtrack_elsewhere_match_in_linear_time(pattern: str, text: str) -> None:
    # CPU time, which a loaded machine does not inflate as it does wall time; RE2 takes milliseconds,
    # a backtracking engine years on these texts: a bound of seconds tells them apart.
    started = time.process_time()
    assert compile_pattern(pattern).search(text) is False
    assert time.process_time() - started < 5.0


def test_a_pattern_is_known_by_its_text() -> None:
    assert compile_pattern("a") == Pattern("a", compile_pattern("a")._compiled)
    assert compile_pattern("a") != compile_pattern("b") and compile_pattern("a").pattern == "a"


def test_a_text_with_half_a_character_is_searched_not_refused() -> None:
    assert compile_pattern("answer").search("an answer \ud800 with a lone surrogate") is True


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        (
            r"(a)\1",
            "RE2 cannot run it (invalid escape sequence: \\1); backreferences (\\1 ...) are not supported; "
            "repeat the group's text instead",
        ),
        (
            "x(?=y)",
            "RE2 cannot run it (invalid perl operator: (?=); lookahead (?=...) is not supported; match the text itself",
        ),
        ("a{4294967296}", "the repetition {4294967296} counts beyond 1000; use + or * (or {1,1000}) instead"),
        ("(.*a){200}", f"instructions, more than {MAX_PROGRAM_SIZE}, and could take seconds per answer"),
        ("\ud800", "it holds half a character"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_with_what_to_write_instead(pattern: str, says: str) -> None:
    with pytest.raises(PatternError) as caught:
        compile_pattern(pattern)
    assert says in str(caught.value)


@pytest.mark.parametrize("pattern", ["[{99999}]", r"\{99999}", r"[\]{5000}]"])
def test_braces_that_are_text_are_not_counts(pattern: str) -> None:
    assert compile_pattern(pattern).pattern == pattern


CATASTROPHIC = """\
title: A pattern that backtracks
prohibitions:
  no-restart:
    present: '(?i)\\bnever\\b[^.;\\n]*\\brestart'
    violated_by: '(x+x+)+y'
    required: '(x+x+)+y'
turns:
  - user: never restart production {xs}
    assistant: Noted.
  - user: Can I restart production?
    probe: restart
"""


@pytest.mark.slow
def test_a_run_whose_answers_meet_a_backtracking_pattern_finishes(project: Path) -> None:
    # The reference model quotes the prohibition, 30,000 x's included, to both patterns.
    (project / "chronologies" / "slow.yaml").write_text(CATASTROPHIC.format(xs="x" * 30_000))
    started = time.process_time()  # CPU time (the run is in process): load on the machine does not count
    result = CliRunner().invoke(main, ["run", "--run-id", "r", "--quiet", "--policy", "full-history"])
    assert result.exit_code == 0, result.output
    assert time.process_time() - started < 30  # about 1 s; backtracking over the 30,000 x's would not end
    rows = load_results(project / "results" / "r").probes.query("check == 'prohibition'")
    assert list(rows.in_answer.astype(bool)) == [False]  # refuses, but without the required y: not honoured
