"""Loading `expect:`, `evidence:` and `source:` (decision 0001): the records a good file becomes,
and where and how each mistake is reported."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.base.errors import ChronologyError, Problem
from harness.chronology import Expectation, Source, load_chronology
from harness.chronology.loading import chronology_schema
from tests.paths import ROOT

SHA = "ab" * 32
EXAMPLE = f"""\
title: Where do I live
source: {{dataset: longmemeval_s, item_id: "e47becba", sha256: "{SHA}", licence: MIT}}
turns:
  - user: I moved to Lisbon last spring.
    evidence: [where-live, still-there]
  - user: Where do I live now?
    probe: where-live
    expect:
      - value: Lisbon
      - not: "(?i)porto"
      - pattern: "(?i)lisbo[an]"
      - abstain: true
      - rubric: The answer names Lisbon as where the user lives.
      - rubric: The answer is one sentence.
        pass: "NO"
  - user: And still?
    probe: still-there
    expect: {{value: Lisbon}}
"""


def write(folder: Path, text: str) -> Path:
    path = folder / "x.yaml"
    path.write_text(text)
    return path


def problems_of(path: Path) -> list[Problem]:
    with pytest.raises(ChronologyError) as caught:
        load_chronology(path)
    return caught.value.problems


def test_expectations_evidence_and_source_load_into_records(tmp_path: Path) -> None:
    chronology = load_chronology(write(tmp_path, EXAMPLE))
    assert chronology.source == Source("longmemeval_s", "e47becba", SHA, "MIT")
    first, probe, again = chronology.user_turns
    assert first.evidence == ("where-live", "still-there") and probe.evidence == ()
    assert [(e.kind, e.text, e.passes, e.judged) for e in probe.expect] == [
        ("value", "Lisbon", "YES", False),
        ("not", "(?i)porto", "YES", False),
        ("pattern", "(?i)lisbo[an]", "YES", False),
        ("abstain", "true", "YES", False),
        ("rubric", "The answer names Lisbon as where the user lives.", "YES", True),
        ("rubric", "The answer is one sentence.", "NO", True),
    ]
    assert probe.expect[1].pattern is not None and probe.expect[1].pattern.search("I left PORTO")
    assert again.expect == (Expectation("value", "Lisbon"),)


def test_a_source_may_name_the_items_category_in_its_benchmark(tmp_path: Path) -> None:
    text = EXAMPLE.replace("licence: MIT}", "licence: MIT, category: knowledge-update}")
    chronology = load_chronology(write(tmp_path, text))
    assert chronology.source == Source("longmemeval_s", "e47becba", SHA, "MIT", "knowledge-update")
    assert chronology_schema()["$defs"]["SourceSpec"]["properties"]["category"]["type"] == "string"


def test_an_expectation_is_named_by_its_kind_and_text() -> None:
    assert Expectation("value", "Lisbon").subject == "value: Lisbon"
    assert Expectation("abstain", "true").subject == "abstain"
    assert Expectation("rubric", "Says Lisbon").subject == "rubric: Says Lisbon"


def test_without_them_a_chronology_has_no_source_and_its_turns_no_expectations(tmp_path: Path) -> None:
    chronology = load_chronology(write(tmp_path, "title: t\nturns:\n  - user: a\n    probe: p\n"))
    assert chronology.source is None
    assert [(t.expect, t.evidence) for t in chronology.user_turns] == [((), ())]


PROBE = "title: t\nturns:\n  - user: a\n    probe: p\n"  # the probe's fields go on line 5
BAD = [  # id, file, line, field, message (a substring of it)
    (
        "expect-off-a-probe",
        "title: t\nturns:\n  - user: a\n    expect: {value: x}\n",
        4,
        "turns[0].expect",
        "expect: says what a probe's answer must meet; add probe: or remove expect:",
    ),
    (
        "two-kinds-in-one-mapping",
        PROBE + "    expect: {value: x, not: y}\n",
        5,
        "turns[0].expect",
        "an expectation has one kind, this one value and not; make each an entry of a list",
    ),
    (
        "no-kind",
        PROBE + "    expect:\n      - pass: 'YES'\n",
        6,
        "turns[0].expect[0]",
        "an expectation needs one of value, pattern, not, abstain, rubric",
    ),
    (
        "pass-without-rubric",
        PROBE + "    expect:\n      - value: x\n        pass: 'YES'\n",
        7,
        "turns[0].expect[0].pass",
        "pass: is the judge's verdict for a rubric:; remove it or add rubric:",
    ),
    (
        "unknown-kind",
        PROBE + "    expect: {contains: x}\n",
        5,
        "turns[0].expect.contains",
        "unknown field 'contains'; allowed: value, pattern, not, abstain, rubric, pass",
    ),
    (
        "abstain-false",
        PROBE + "    expect: {abstain: false}\n",
        5,
        "turns[0].expect.abstain",
        "abstain takes only true; found False: write abstain: true, or remove it",
    ),
    (
        "bad-regex",
        PROBE + "    expect:\n      - not: '(porto'\n",
        6,
        "turns[0].expect[0].not",
        "RE2 cannot run it (missing ): (porto)",
    ),
    (
        "pass-unquoted",
        PROBE + "    expect: {rubric: r, pass: YES}\n",
        5,
        "turns[0].expect.pass",
        'pass takes "YES" or "NO", the judge\'s answer to the rubric that meets it (quote it: YAML reads',
    ),
    (
        "pass-another-word",
        PROBE + "    expect: {rubric: r, pass: CORRECT}\n",
        5,
        "turns[0].expect.pass",
        'takes "YES" or "NO"',
    ),
    ("empty-value", PROBE + '    expect: {value: ""}\n', 5, "turns[0].expect.value", "empty text"),
    ("empty-list", PROBE + "    expect: []\n", 5, "turns[0].expect", "empty list"),
    (
        "too-many",
        PROBE + "    expect:\n" + "".join(f"      - value: v{i}\n" for i in range(21)),
        5,
        "turns[0].expect",
        "21 expectations on one probe, more than 20; keep those that matter, or ask the rest at another probe",
    ),
    (
        "value-a-number",
        PROBE + "    expect: {value: 3.10}\n",
        5,
        "turns[0].expect.value",
        "expected a string; quote it (YAML reads 3.10",
    ),
    (
        "twice-on-a-probe",
        PROBE + "    expect:\n      - value: x\n      - value: x\n",
        7,
        "turns[0].expect[1]",
        "the same expectation twice on this probe; write it once",
    ),
    (
        "evidence-for-no-such-probe",
        "title: t\nturns:\n  - user: a\n    evidence: [q]\n  - user: b\n    probe: p\n",
        4,
        "turns[0].evidence[0]",
        "no probe 'q' in this file (probes: p); evidence: names probes of this file",
    ),
    (
        "evidence-without-probes",
        "title: t\nturns:\n  - user: a\n    evidence: [q]\n",
        4,
        "turns[0].evidence[0]",
        "no probe 'q' in this file (it has none)",
    ),
    (
        "evidence-twice",
        PROBE + "    evidence: [p, p]\n",
        5,
        "turns[0].evidence[1]",
        "probe 'p' is named twice; name each once",
    ),
    (
        "evidence-after-its-probe",
        PROBE + "  - user: b\n    evidence: [p]\n",
        6,
        "turns[1].evidence[0]",
        "probe 'p' is asked before this message (turns[0]); evidence comes first",
    ),
    ("evidence-empty", PROBE + "    evidence: []\n", 5, "turns[0].evidence", "empty list"),
    (
        "evidence-on-a-forget",
        "title: t\nturns:\n  - forget: all\n    evidence: [p]\n  - user: a\n    probe: p\n",
        3,
        "turns[0]",
        "only the field forget",
    ),
    (
        "source-without-licence",
        f'source: {{dataset: d, item_id: "1", sha256: "{SHA}"}}\n' + PROBE,
        1,
        "source.licence",
        "missing required field 'licence'",
    ),
    (
        "source-item-id-a-number",
        f'source: {{dataset: d, item_id: 7, sha256: "{SHA}", licence: MIT}}\n' + PROBE,
        1,
        "source.item_id",
        "expected a string; quote it (YAML reads 7",
    ),
    (
        "source-bad-sha256",
        "source: {dataset: d, item_id: '1', sha256: ABC, licence: MIT}\n" + PROBE,
        1,
        "source.sha256",
        "'ABC' is not valid: it must match ^[0-9a-f]{64}$",
    ),
    (
        "source-category-a-number",
        f'source: {{dataset: d, item_id: "1", sha256: "{SHA}", licence: MIT, category: 3}}\n' + PROBE,
        1,
        "source.category",
        "expected a string; quote it (YAML reads 3",
    ),
    (
        "source-category-a-list",
        f'source: {{dataset: d, item_id: "1", sha256: "{SHA}", licence: MIT, category: [a]}}\n' + PROBE,
        1,
        "source.category",
        "expected a string",
    ),
    (
        "source-unknown-field",
        f'source: {{dataset: d, item_id: "1", sha256: "{SHA}", licence: MIT, url: x}}\n' + PROBE,
        1,
        "source.url",
        "unknown field 'url'; allowed: dataset, item_id, sha256, licence, category",
    ),
]


@pytest.mark.parametrize(("text", "line", "field", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_each_mistake_gets_one_problem_with_its_line_and_field(
    tmp_path: Path, text: str, line: int | None, field: str, message: str
) -> None:
    [problem] = problems_of(write(tmp_path, text))
    assert (problem.line, problem.field) == (line, field)
    assert message in problem.message


def test_the_schema_takes_one_expectation_or_a_list_each_of_one_kind() -> None:
    definitions = chronology_schema()["$defs"]
    expect = definitions["TurnSpec"]["properties"]["expect"]
    assert expect["anyOf"][0] == {"$ref": "#/$defs/ExpectSpec"} and expect["anyOf"][1]["type"] == "array"
    spec = definitions["ExpectSpec"]
    assert list(spec["properties"]) == ["value", "pattern", "not", "abstain", "rubric", "pass"]
    assert spec["oneOf"] == [{"required": [kind]} for kind in ("value", "pattern", "not", "abstain", "rubric")]
    assert spec["dependentRequired"] == {"pass": ["rubric"]}
    assert chronology_schema()["properties"]["source"]["$ref"] == "#/$defs/SourceSpec"


def test_the_guides_example_loads(tmp_path: Path) -> None:
    """docs/chronologies.md, "Probes that expect an answer": its example is a valid file."""
    guide = (ROOT / "docs" / "chronologies.md").read_text(encoding="utf-8")
    section = guide.split("## Probes that expect an answer", 1)[1]
    example = re.search(r"```yaml\n(.*?)```", section, flags=re.DOTALL)
    assert example is not None
    chronology = load_chronology(write(tmp_path, example.group(1)))
    [evidence, probe] = chronology.user_turns
    assert evidence.evidence == (probe.probe,) and [e.kind for e in probe.expect] == ["value", "not", "rubric"]


AGENT = """\
title: t
turns:
  - user: Fix it.
    steps:
      - tool_calls: [{id: c1, name: apply_patch}]
        results:
          - id: c1
            content: file=billing/rounding.py
            evidence: [EVIDENCE]
    assistant: Done.
  - user: Which file did you change?
    probe: changed
"""


def test_a_tool_result_may_be_marked_as_evidence(tmp_path: Path) -> None:
    chronology = load_chronology(write(tmp_path, AGENT.replace("EVIDENCE", "changed")))
    (result,) = chronology.user_turns[0].steps[0].results
    assert result.evidence == ("changed",) and chronology.user_turns[0].evidence == ()


def test_a_tool_results_evidence_naming_no_probe_is_reported_at_its_place(tmp_path: Path) -> None:
    (problem,) = problems_of(write(tmp_path, AGENT.replace("EVIDENCE", "nosuch")))
    assert (problem.line, problem.field) == (9, "turns[0].steps[0].results[0].evidence[0]")
    assert "no probe 'nosuch' in this file (probes: changed)" in problem.message
