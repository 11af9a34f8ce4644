"""docs/chronologies.md's worked example, run as written on a copy of the repository: a user
who follows it ends with a green test suite (issue 10)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from tests.paths import ROOT

pytestmark = pytest.mark.slow  # runs pytest in a subprocess

GUIDE = (ROOT / "docs" / "chronologies.md").read_text(encoding="utf-8")
WALKTHROUGH = GUIDE.split("## A worked example", 1)[1].split("\n## ", 1)[0]
COPIED = (
    "harness",
    "policies",
    "chronologies",
    "docs",
    "schema",
    "tests",
    "scripts",
    "reports/example",
    "pyproject.toml",
    "README.md",
    "results/README.md",
    "reports/README.md",
)


def commands() -> list[list[str]]:
    """Every `$ harness ...` line of the walk-through's console blocks, in order."""
    return [shlex.split(line[2:]) for line in re.findall(r"^\$ harness .*$", WALKTHROUGH, flags=re.MULTILINE)]


def step_three_edit() -> str:
    """The YAML the guide asks to add in step 3."""
    return re.search(r"\*\*3\. Edit it\.\*\*.*?```yaml\n(.*?)```", WALKTHROUGH, flags=re.DOTALL).group(1)


@pytest.fixture
def copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in COPIED:
        source, target = ROOT / name, tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_following_the_guide_ends_with_a_green_suite(copy: Path) -> None:
    steps = commands()
    assert [s[1] for s in steps] == ["new", "validate", "validate", "run", "show", "show"]
    created = copy / "chronologies" / "restart-after-patch.yaml"
    outputs = []
    for number, args in enumerate(steps):
        if args[1] == "validate" and number == 1:  # step 3: the edit, then step 4's failing validation
            created.write_text(created.read_text(encoding="utf-8") + step_three_edit(), encoding="utf-8")
        if args[1] == "validate" and number == 2:  # step 4's fix: the new probe gets its own id
            text = created.read_text(encoding="utf-8")
            created.write_text(text[::-1].replace("probe: restart"[::-1], "probe: database"[::-1], 1)[::-1])
        result = CliRunner().invoke(main, args[1:])
        assert result.exit_code == (2 if number == 1 else 0), (args, result.output)
        outputs.append(result.output)
    assert "duplicate probe id 'restart'" in outputs[1]
    assert "ok: chronologies/restart-after-patch.yaml (7 turns, 2 probes)" in outputs[2]
    assert (copy / "reports" / "first-try.md").is_file()
    suite = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/library/test_library.py",
        "tests/chronology/test_authoring.py",
        "tests/report/test_report.py",
        "-k",
        "library or guide or schema or example or scaffold",
    ]
    done = subprocess.run(suite, cwd=copy, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
