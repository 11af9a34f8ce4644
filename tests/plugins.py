"""Installing a policy plug-in from a temporary folder, as `pip install` would register it.

A `*.dist-info` folder with `METADATA` and `entry_points.txt` on `sys.path` is all that
`importlib.metadata` needs to list the plug-in's entry points; the module sits beside it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def install_plugin(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    source: str,
    entry_points: str,
    distribution: str = "example-policy",
) -> None:
    """Write `module`.py and a distribution registering `entry_points` (entry_points.txt text) in `root`,
    and put `root` on `sys.path` for this test only."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(source, encoding="utf-8")
    info = root / f"{distribution.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))  # also invalidates the import caches
    monkeypatch.delitem(sys.modules, module, raising=False)
