"""`harness --help` starts without the heavy libraries: each is imported where it is used.

Not timed (benchmarks/start_time.py measures); this only holds the imports in place, so that a
new top-level import of one of them fails here instead of slowing every command down.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pandas", "matplotlib", "openai", "tiktoken", "scipy", "bm25s", "numpy", "pydantic", "httpx")


def imported_by(statement: str) -> set[str]:
    """The top-level packages among HEAVY that `statement` imports, run in a fresh interpreter."""
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1])) & set(HEAVY)


def test_the_command_line_module_imports_no_heavy_library() -> None:
    assert imported_by("import harness.cli.commands") == set()


def test_loading_a_chronology_needs_only_its_validator_pydantic() -> None:
    found = imported_by(
        "from harness.chronology.loading import load_chronology; load_chronology('chronologies/memory-drift.yaml')"
    )
    assert found == {"pydantic"}
