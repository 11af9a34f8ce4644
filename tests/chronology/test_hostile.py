"""Hostile chronologies: each one ends `harness validate` and `harness run` with one located
message and exit status 2, quickly, with no traceback and nothing written.

The corpus is generated here (large cases in code); a case is (id, file content or a builder,
the line the message names or None, the field, a fragment of the message).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.base.files import MAX_FILE_BYTES
from harness.chronology.declarations import MAX_VALUE_CHARS
from harness.chronology.patterns import MAX_LENGTH, MAX_NESTING
from harness.chronology.safe_yaml import MAX_DEPTH, MAX_VALUES
from harness.cli.commands import main

FILE = "chronologies/hostile.yaml"
TURNS = "turns:\n  - user: never restart production\n"


@dataclass(frozen=True)
class Case:
    id: str
    make: Callable[[Path], str]  # writes the input under the project folder, returns the path to give
    line: int | None
    field: str
    message: str


def text(body: str | bytes) -> Callable[[Path], str]:
    def make(root: Path) -> str:
        path = root / FILE
        path.write_bytes(body.encode() if isinstance(body, str) else body)
        return FILE

    return make


def prohibition(field: str, pattern: str) -> str:
    """A chronology whose prohibition `p` has `pattern` in `field` (lines 4-6), the others valid."""
    fields = {"present": "never", "violated_by": "(?i)^yes", "required": "(?i)^no"} | {field: pattern}
    return "title: t\nprohibitions:\n  p:\n" + "".join(f"    {name}: '{value}'\n" for name, value in fields.items())


def pattern_line(field: str) -> int:
    return 4 + ["present", "violated_by", "required"].index(field)


# Patterns RE2 cannot run, or that would run too long: what each message must say.
REFUSED_PATTERNS = [
    ("backreference", r"(never) \1", "backreferences (\\1 ...) are not supported"),
    ("named-backreference", r"(?P<w>never) (?P=w)", "named backreferences"),
    ("lookahead", r"never(?= restart)", "lookahead (?=...) is not supported"),
    ("negative-lookahead", r"never(?!x)", "negative lookahead"),
    ("lookbehind", r"(?<=never )restart", "lookbehind (?<=...) is not supported"),
    ("negative-lookbehind", r"(?<!not )restart", "negative lookbehind"),
    ("atomic-group", r"(?>never)", "atomic groups"),
    ("possessive", r"never*+", "possessive"),
    ("conditional", r"(n)?(?(1)ever|x)", "conditionals"),
    ("verbose-flag", r"(?x) never", "the flags RE2 knows are i, m, s and U"),
    ("ascii-flag", r"(?a)never", "the flags RE2 knows are i, m, s and U"),
    ("huge-count", "a{4294967296}", "the repetition {4294967296} counts beyond 1000"),
    ("count-1001", "a{1001}", "the repetition {1001} counts beyond 1000"),
    ("count-range", "a{1,100000}", "counts beyond 1000"),
    ("nested-counts", "(?:a{1000}){1000}", "nested counts multiply"),
    ("1200-nested-groups", "(" * 1200 + "never" + ")" * 1200, f"more than {MAX_LENGTH}; a pattern should recognise"),
    (
        "101-nested-groups",
        "(" * (MAX_NESTING + 1) + "never" + ")" * (MAX_NESTING + 1),
        f"nest more than {MAX_NESTING} deep",
    ),
    ("too-long", "never" + "x" * MAX_LENGTH, f"more than {MAX_LENGTH}"),
    ("too-large-program", "(.*a){200}", "instructions, more than 2000"),
    ("unicode-classes-counted", r"\pL{1,50}", "instructions, more than 2000"),
    ("unclosed-group", "(never", "a group is not closed"),
    ("unclosed-class", "[never", "a character class is not closed"),
    ("stray-paren", "never)", "a ) closes no group"),
    ("unknown-escape", r"\q", "escape only punctuation"),
    ("python-end-of-text", r"never\Z", "write \\z (end of text) instead of \\Z"),
    ("nothing-to-repeat", "*never", "*, + and ? repeat what comes before them"),
    ("trailing-backslash", "never\\", "the pattern ends with a lone \\"),
    ("backward-range", "[z-a]", "a range runs from low to high"),
    ("counting-down", "a{2,1}", "the repetition {2,1} counts down"),
]
PATTERN_CASES = [
    Case(
        f"{field}-{name}",
        text(prohibition(field, pattern.replace("'", "''")) + TURNS),
        pattern_line(field),
        f"prohibitions.p.{field}",
        message,
    )
    for field in ("present", "violated_by", "required")
    for name, pattern, message in REFUSED_PATTERNS
]

# Catastrophic for a backtracking engine against this user message; linear on RE2, and never matched.
BACKTRACKING = ["(a+)+$", "(a|aa)+$", "(a|a)*b", "(.*a){20}b", r"(\w+\s?)+$", "(x+x+)+y", "^(a+)+b"]
NEVER_STATED = [
    Case(
        f"backtracking-{i}",
        text(prohibition("present", p) + "turns:\n  - user: " + "a" * 30_000 + "!\n"),
        4,
        "prohibitions.p.present",
        "is never stated",
    )
    for i, p in enumerate(BACKTRACKING)
]


def laughs(item: str, levels: int = 7) -> str:
    """Billion laughs: each level lists the previous one ten times."""
    lines = [f"l0: &l0 {item}"]
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, levels + 1)]
    return "title: t\n" + "\n".join(lines) + "\n" + TURNS


def chain(levels: int) -> str:
    """Each anchor wraps the previous one in a list: nesting grows through aliases alone."""
    lines = ["c0: &c0 x"] + [f"c{n}: &c{n} [*c{n - 1}]" for n in range(1, levels + 1)]
    return "title: t\n" + "\n".join(lines) + "\n" + TURNS


def merge_laughs(levels: int = 7) -> str:
    lines = ["m0: &m0 {a: x, b: y}"]
    lines += [f"m{n}: &m{n} {{<<: [{', '.join([f'*m{n - 1}'] * 10)}]}}" for n in range(1, levels + 1)]
    return "title: t\n" + "\n".join(lines) + "\n" + TURNS


DEPTH = f"nest more than {MAX_DEPTH} deep"
EXPANDS = f"aliases expand this value to more than {MAX_VALUES:,} keys and values"
STRUCTURE_CASES = [
    Case(
        "flow-sequences-5000-deep", text("title: t\nturns: " + "[" * 5000 + "]" * 5000 + "\n"), 2, "", "nesting depth"
    ),
    Case(
        "flow-mappings-5000-deep", text("title: t\nx: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n" + TURNS), 2, "", DEPTH
    ),
    Case("block-sequences-5000-deep", text("title: t\nx:\n" + "- " * 5000 + "x\n" + TURNS), 3, "", DEPTH),
    Case(
        "block-mappings-1000-deep",
        text("title: t\n" + "".join(" " * i + f"k{i}:\n" for i in range(1000)) + TURNS),
        MAX_DEPTH + 1,
        "",
        DEPTH,
    ),
    Case("one-level-too-deep", text("title: t\nx: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n" + TURNS), 2, "", DEPTH),
    Case("nesting-through-aliases", text(chain(MAX_DEPTH + 5)), MAX_DEPTH + 2, "", DEPTH),
    Case("billion-laughs", text(laughs("x")), 7, "", EXPANDS),
    Case("billion-laughs-of-mappings", text(laughs("{k: v}")), 7, "", EXPANDS),
    Case("billion-laughs-by-merge-keys", text(merge_laughs()), 6, "", EXPANDS),
    Case(
        "aliased-strings-to-exhaustion",
        text(laughs("x" * 10_000, levels=3)),
        5,
        "",
        f"aliases expand this value to more than {MAX_FILE_BYTES:,} characters",
    ),
    Case(
        "aliased-strings-as-messages",
        text("title: t\nm: &m " + "x" * 50_000 + "\nturns:\n" + "  - user: *m\n" * 30),
        4,
        "",
        "characters",
    ),
    Case("recursive-sequence", text("title: t\nturns: &a [*a]\n"), 2, "", "the alias *a is inside the value it names"),
    Case("recursive-mapping", text("title: t\nx: &a {k: *a}\n" + TURNS), 2, "", "the alias *a is inside"),
    Case(
        "too-many-values",
        text("title: t\nx: [" + "1," * (MAX_VALUES + 10) + "]\n" + TURNS),
        2,
        "",
        f"more than {MAX_VALUES:,} keys and values",
    ),
    Case("undefined-alias", text("title: t\nx: *nowhere\n" + TURNS), 2, "", "invalid YAML: found undefined alias"),
    Case("duplicate-anchor", text("title: &a t\nx: &a u\n" + TURNS), 2, "", "found duplicate anchor 'a'"),
    Case("two-documents", text("title: t\n" + TURNS + "---\ntitle: u\n"), 4, "", "invalid YAML"),
    Case("tab-indentation", text("title: t\nturns:\n\t- user: a\n"), 3, "", "invalid YAML"),
    Case("unhashable-key", text("title: t\n? [a, b]\n: c\n" + TURNS), 2, "", "invalid YAML: found unhashable key"),
    Case(
        "python-object-tag",
        text("title: !!python/object/apply:os.system [ls]\n" + TURNS),
        1,
        "",
        "invalid YAML: could not determine a constructor",
    ),
]

NUMBER = "as a number, longer than any a chronology uses; quote it if it is text"
SCALAR_CASES = [
    Case("5000-digit-number-as-title", text("title: " + "9" * 5000 + "\n" + TURNS), 1, "", NUMBER),
    Case("5000-digit-number-as-message", text("title: t\nturns:\n  - user: " + "9" * 5000 + "\n"), 3, "", NUMBER),
    Case("5000-digit-negative-number", text("title: t\nturns:\n  - user: -" + "9" * 5000 + "\n"), 3, "", NUMBER),
    Case("5000-digit-hex-number", text("title: t\nturns:\n  - user: 0x" + "f" * 5000 + "\n"), 3, "", NUMBER),
    Case("5000-digit-number-as-key", text("title: t\n? " + "9" * 5000 + "\n: x\n" + TURNS), 2, "", NUMBER),
    Case("huge-sexagesimal-number", text("title: t\nturns:\n  - user: 1" + ":59" * 3000 + "\n"), 3, "", NUMBER),
    Case(
        "no-such-date",
        text("title: t\nturns:\n  - user: 2024-02-30\n"),
        3,
        "",
        "YAML reads '2024-02-30' as a date and cannot build it (day is out of range for month)",
    ),
    Case("no-such-hour", text("title: 2024-01-01T25:00:00\n" + TURNS), 1, "", "as a date and cannot build it"),
    Case("tagged-not-an-int", text("title: !!int abc\n" + TURNS), 1, "", "YAML reads 'abc' as a number"),
    Case("tagged-not-a-bool", text("title: !!bool maybe\n" + TURNS), 1, "", "YAML reads 'maybe' as a boolean"),
    Case("tagged-not-a-date", text("title: !!timestamp soon\n" + TURNS), 1, "", "not a form YAML knows"),
    Case("escaped-lone-surrogate", text('title: "\\ud800"\n' + TURNS), 1, "", "invalid YAML"),
    Case(
        "megabyte-declared-value",
        text("title: t\nturns:\n  - user: module=" + "module=" * 140_000 + "\n"),
        3,
        "turns[0].user",
        f"module= declares a value of 980,000 characters; a value is at most {MAX_VALUE_CHARS} characters",
    ),
    Case(
        "long-value-in-sets",
        text("title: t\nturns:\n  - user: hi\n    sets:\n      module: " + "x" * 300 + "\n"),
        5,
        "turns[0].sets.module",
        "a value of 300 characters; a value is at most 256 characters, as the fact store admits",
    ),
]


def fifo(root: Path) -> str:
    os.mkfifo(root / FILE)
    return FILE


def fifo_in_folder(root: Path) -> str:
    os.mkfifo(root / FILE)
    return "chronologies"


def link_to(target: str) -> Callable[[Path], str]:
    def make(root: Path) -> str:
        (root / FILE).symlink_to(target)
        return FILE

    return make


def given(path: str) -> Callable[[Path], str]:
    return lambda root: path


OVERSIZED = "title: t\n" + TURNS + "# " + "x" * MAX_FILE_BYTES + "\n"
FILE_CASES = [
    Case("fifo", fifo, None, "", "a named pipe (FIFO), not a regular file"),
    Case("fifo-in-a-folder", fifo_in_folder, None, "", "a named pipe (FIFO), not a regular file"),
    Case("dev-zero", given("/dev/zero"), None, "", "a character device, not a regular file"),
    Case("dev-null", given("/dev/null"), None, "", "a character device, not a regular file"),
    Case("link-to-dev-zero", link_to("/dev/zero"), None, "", "a character device, not a regular file"),
    Case("dangling-link", link_to("/nowhere/at/all.yaml"), None, "", "no such file or directory"),
    Case("over-the-size-limit", text(OVERSIZED), None, "", f"larger than {MAX_FILE_BYTES:,} bytes"),
    Case("not-utf8", text(b"title: t\nturns:\n  - user: caf\xe9\n"), 3, "", "not UTF-8 text"),
    Case("utf16", text("title: t\n".encode("utf-16")), 1, "", "not UTF-8 text"),
    Case("nul-byte", text(b"title: t\x00\n" + TURNS.encode()), 1, "", "invalid YAML"),
    Case("control-character", text("title: t\x07\n" + TURNS), 1, "", "invalid YAML"),
    Case("empty", text(""), None, "", "the file is empty"),
    Case("only-comments", text("# nothing\n# here\n"), None, "", "the file is empty"),
    Case("random-bytes", text(bytes(range(256)) * 4), 2, "", "not UTF-8 text"),
    Case("top-level-scalar", text("just words\n"), 1, "", "the top level must be a mapping"),
    Case("top-level-null", text("~\n"), 1, "", "the top level must be a mapping"),
    Case(
        "thousands-of-prohibitions",
        text(
            "title: t\nprohibitions:\n"
            + "".join(f"  p{i}: {{present: 'never{i}x', violated_by: y}}\n" for i in range(5000))
            + "turns:\n"
            + "".join(f"  - user: x{i}\n" for i in range(5000))
        ),
        2,
        "prohibitions",
        "5000 prohibitions, more than 30",
    ),
    Case(
        "thousands-of-sessions",
        text("title: t\nsessions: [" + ", ".join(f"s{i}" for i in range(40_000)) + "]\n" + TURNS),
        2,
        "sessions",
        "40000 sessions, more than 100",
    ),
]

# Ids and names become rows of every results file and the report's rows: bounded as a run id is.
TOO_LONG = "characters): more than 100 characters; an id or a name is repeated in every results row"
ID_CASES = [
    Case("probe-id-500000", text("title: t\n" + TURNS + "  - user: what?\n    probe: " + "q" * 500_000 + "\n"), 5, "turns[1].probe", f"(500,000 {TOO_LONG}"),
    Case("session-name-101", text("title: t\nsessions: [main, " + "s" * 101 + "]\n" + TURNS), 2, "sessions[1]", f"(101 {TOO_LONG}"),
    Case("key-101", text("title: t\nkeys: [budget, " + "k" * 101 + "]\n" + TURNS), 2, "keys[1]", f"(101 {TOO_LONG}"),
    Case(
        "prohibition-id-101",
        text("title: t\nprohibitions:\n  " + "p" * 101 + ":\n    present: never\n    violated_by: '(?i)^yes'\n" + TURNS),
        3,
        "prohibitions.'pppppppppppppppppppp'... (101 characters)",
        f"(101 {TOO_LONG}",
    ),
]  # fmt: skip

CORPUS = PATTERN_CASES + NEVER_STATED + STRUCTURE_CASES + SCALAR_CASES + FILE_CASES + ID_CASES


def test_the_corpus_holds_at_least_100_cases_with_distinct_ids() -> None:
    assert len(CORPUS) >= 100 and len({c.id for c in CORPUS}) == len(CORPUS)


def location(case: Case, path: str) -> str:
    where = f"{path}:{case.line}" if case.line else path
    return f"{where}: {case.field}: " if case.field else f"{where}: "


# The cases that build a file at the loader's limits: a second or more of CPU each, so slow.
HEAVY = {"thousands-of-prohibitions", "too-many-values", "thousands-of-sessions"}


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id, marks=[pytest.mark.slow] if c.id in HEAVY else []) for c in CORPUS]
)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_hostile_chronology_exits_2_with_one_located_message_and_writes_nothing(
    project: Path, case: Case, command: str
) -> None:
    path = case.make(project)
    shown = FILE if path == "chronologies" else path
    started = time.process_time()  # CPU time (in process): a loaded machine does not stretch it as it does wall time
    result = CliRunner().invoke(main, [command, path])
    elapsed = time.process_time() - started
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    [message] = result.stderr.splitlines()  # one message, no traceback
    assert message.startswith(f"error: {location(case, shown)}"), message
    assert case.message in message
    assert result.stdout == ""
    assert sorted(p.name for p in project.iterdir()) == ["chronologies"]  # no results/, reports/, cache
    assert elapsed < 10, f"{case.id}: {elapsed:.1f} s of CPU"


def test_hostile_entries_beside_a_good_chronology_stop_the_whole_run(project: Path) -> None:
    (project / "chronologies" / "good.yaml").write_text("title: t\n" + TURNS)
    os.mkfifo(project / "chronologies" / "pipe.yaml")
    (project / "chronologies" / "zero.yml").symlink_to("/dev/zero")
    (project / "chronologies" / "loop.yaml").symlink_to(project / "chronologies" / "loop.yaml")
    result = CliRunner().invoke(main, ["run"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: chronologies/loop.yaml: cannot read it: Too many levels of symbolic links",
        "chronologies/pipe.yaml: a named pipe (FIFO), not a regular file; give a .yaml file",
        "chronologies/zero.yml: a character device, not a regular file; give a .yaml file",
    ]
    assert sorted(p.name for p in project.iterdir()) == ["chronologies"]


def test_a_file_with_hundreds_of_problems_shows_the_first_50_and_counts_the_rest(project: Path) -> None:
    (project / FILE).write_text("title: t\n" + TURNS + "".join(f"k{i}: 1\n" for i in range(900)))
    result = CliRunner().invoke(main, ["validate", FILE])
    lines = result.stderr.splitlines()
    assert result.exit_code == 2 and len(lines) == 51
    assert lines[0].startswith(f"error: {FILE}:4: k0: unknown field 'k0'") and lines[49].startswith(f"{FILE}:53: k49:")
    assert lines[50] == f"{FILE}: and 850 more problems; fix these first, then validate again"
