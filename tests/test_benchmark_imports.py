"""Every name a benchmark script (`benchmarks/*.py`) imports from the harness exists: the scripts
are not run by the suite, so a name moved or deleted would break them unseen."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests.paths import ROOT

SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


def harness_imports(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of each `from harness... import name` / `from policies... import name`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("harness", "policies"):
            found += [(node.lineno, str(node.module), alias.name) for alias in node.names]
    return found


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_benchmark_imports_only_names_the_harness_has(script: Path) -> None:
    missing = []
    for line, module, name in harness_imports(script):
        if not hasattr(importlib.import_module(module), name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{script.name}:{line}: {module} has no {name}")
    assert not missing
