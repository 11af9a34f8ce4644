"""docs/architecture.md and the import-linter contracts say the same: each "the only module that
imports X" of the page is a contract of pyproject.toml, and each such contract is on the page."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]

# In a wing's row: `module` (... the only module that imports `package` ...), packages split by "/".
ROW = re.compile(r"^\| `(\w+)` \|(.*)$", re.MULTILINE)
HOME = re.compile(r"`(\w+)` \([^()]*?the only module that imports ([\w`/-]+)")
NEVER = re.compile(r"it never imports ((?:`\w+`(?:, | or )?)+)")  # in a wing's row: the wings it does not


def homes_on_the_page() -> set[tuple[str, str]]:
    """(module, package as imported) for every "the only module that imports" of the wings' table."""
    found = set()
    for wing, row in ROW.findall(PAGE):
        for module, packages in HOME.findall(row):
            for package in packages.strip("`").split("/"):
                found.add((f"harness.{wing}.{module}", package.strip("`").replace("-", "_")))
    return found


def homes_in_contracts() -> set[tuple[str, str]]:
    """(module, package) for every forbidden contract that lets exactly one module import a package."""
    found = set()
    for contract in CONTRACTS:
        ignored = contract.get("ignore_imports", [])
        if contract["type"] == "forbidden" and len(ignored) == 1:
            module, package = (side.strip() for side in ignored[0].split("->"))
            assert contract["forbidden_modules"] == [package], contract["name"]
            assert contract["source_modules"] == ["harness", "policies"], contract["name"]
            found.add((module, package))
    return found


def test_the_page_names_the_one_home_of_several_packages() -> None:
    assert {("harness.models.openai", "openai"), ("harness.report.charts", "matplotlib")} <= homes_on_the_page()


def test_each_only_module_that_imports_a_package_is_a_contract_and_each_contract_is_on_the_page() -> None:
    assert homes_on_the_page() == homes_in_contracts()


def nevers_on_the_page() -> dict[str, set[str]]:
    """Wing -> the wings its row says it "never imports"."""
    found = {}
    for wing, row in ROW.findall(PAGE):
        if said := NEVER.search(row):
            found[f"harness.{wing}"] = {f"harness.{name}" for name in re.findall(r"`(\w+)`", said.group(1))}
    return found


def test_each_wing_that_never_imports_others_is_a_contract() -> None:
    nevers = nevers_on_the_page()
    assert {"harness.report", "harness.results"} <= nevers.keys()
    contracts = {
        c["source_modules"][0]: set(c["forbidden_modules"])
        for c in CONTRACTS
        if c["type"] == "forbidden" and len(c["source_modules"]) == 1
    }
    assert {wing: contracts.get(wing) for wing in nevers} == nevers
