"""The public API fits on one screen and exports exactly what it names."""

from __future__ import annotations

import harness


def test_all_matches_the_public_names() -> None:
    public = {name for name in vars(harness) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(harness, name)).__name__ == "module"}
    assert set(harness.__all__) == public - modules

