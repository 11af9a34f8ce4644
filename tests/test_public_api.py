"""The public API fits on one screen and exports exactly what it names."""

from __future__ import annotations

import harness

LAZY = {"Results", "load_results"}  # pandas comes with them: resolved on first use (PEP 562)


def test_all_matches_the_public_names() -> None:
    public = {name for name in vars(harness) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(harness, name)).__name__ == "module"}
    assert set(harness.__all__) == (public - modules) | LAZY
    assert all(callable(getattr(harness, name)) for name in LAZY)


def test_the_command_line_starts_without_pandas_or_matplotlib() -> None:
    """Issue 11, fast start: `harness --help` and `harness validate` need neither."""
    import subprocess
    import sys

    probe = "import sys, harness.cli.commands; print(sorted(m for m in ('pandas', 'matplotlib') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip() == "[]"
