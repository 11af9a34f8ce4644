"""The user docs keep their shape: a README that fits on a screen or two, and an architecture
page that names every wing of harness/."""

from __future__ import annotations

from tests.paths import ROOT


def test_the_readme_fits_in_300_lines() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 300


def test_the_architecture_page_names_every_wing() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    wings = sorted(p.name for p in (ROOT / "harness").iterdir() if (p / "__init__.py").is_file())
    assert [w for w in wings if f"`{w}`" not in page] == []
