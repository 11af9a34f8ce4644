"""The README's table of commands names exactly the options each command takes, and every
option says what it is for (`harness COMMAND --help`)."""

from __future__ import annotations

import re

import click
import pytest

from harness.cli.commands import main
from tests.paths import ROOT

README_PATH = ROOT / "README.md"
README = README_PATH.read_text(encoding="utf-8")


def row(command: str) -> str:
    [found] = [line for line in README.splitlines() if line.startswith(f"| `harness {command}")]
    return found


def options(command: str) -> list[click.Option]:
    return [p for p in main.commands[command].params if isinstance(p, click.Option)]


@pytest.mark.parametrize("command", sorted(main.commands))
def test_the_readme_row_of_each_command_names_exactly_its_options(command: str) -> None:
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", row(command)))
    known = {o for p in options(command) for o in p.opts + p.secondary_opts if o.startswith("--")}
    assert named <= known, f"the README names options {command} does not take: {sorted(named - known)}"
    missing = [p.opts[0] for p in options(command) if not named & set(p.opts + p.secondary_opts)]
    assert not missing, f"the README's row of {command} leaves out {missing}"


@pytest.mark.parametrize("command", sorted(main.commands))
def test_every_option_has_help_text(command: str) -> None:
    assert [p.opts[0] for p in options(command) if not p.help] == []


def test_the_readme_states_the_python_version_and_starts_with_a_virtual_environment() -> None:
    """Issue 10: the first commands must work on a fresh machine, in a fresh environment."""
    requires = re.search(r'requires-python = ">=(\d+\.\d+)"', (README_PATH.parent / "pyproject.toml").read_text())
    assert requires is not None and f"Python {requires.group(1)} or newer" in README
    first_block = README.split("```sh\n", 1)[1].split("```", 1)[0]
    assert first_block.strip() == "python3 -m venv .venv && . .venv/bin/activate"
