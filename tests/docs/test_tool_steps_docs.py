"""What docs/chronologies.md promises of tool steps: its example is a valid chronology, and the
field table names exactly the fields the format has."""

from __future__ import annotations

import re
from pathlib import Path

from harness.chronology import load_chronology
from harness.chronology.schema import StepSpec, ToolCallSpec, ToolResultSpec
from tests.paths import ROOT

PAGE = (ROOT / "docs" / "chronologies.md").read_text(encoding="utf-8")
SECTION = PAGE.split("## Tool steps: agent traces", 1)[1].split("\n## ", 1)[0]


def test_the_example_loads_as_the_section_describes_it(tmp_path: Path) -> None:
    example = re.search(r"```yaml\n(.*?)```", SECTION, flags=re.DOTALL).group(1)
    path = tmp_path / "agent.yaml"
    path.write_text("title: The docs' example\n" + example, encoding="utf-8")
    (turn,) = load_chronology(path).user_turns
    (step,) = turn.steps
    assert step.tool_calls[0].arguments == '{"path": "reporting/export.py"}'
    assert (step.results[0].id, step.results[0].error) == ("call_1", False)


def test_the_field_table_names_every_field_of_a_step() -> None:
    named = set(re.findall(r"^\| `([a-z_.\[\]]+)` \|", SECTION, flags=re.MULTILINE))
    fields = set(StepSpec.model_fields)
    fields |= {f"tool_calls[].{name}" for name in ToolCallSpec.model_fields}
    fields |= {f"results[].{name}" for name in ToolResultSpec.model_fields}
    assert named == fields
