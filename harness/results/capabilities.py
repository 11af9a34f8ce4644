"""Each model's capabilities as its run recorded them (the manifest's `model_settings`, written
from what the model states: harness.base.capabilities), so that the report knows what a model
could do from the results alone.

A run recorded before capabilities were is read by the names it recorded: `reference` was the
deterministic literal reader, `reference:lossy[:...]` the literal reader degraded on purpose, and
any other a model that samples and may judge; a `reader` it recorded is taken as recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from harness.base.capabilities import LITERAL, Capabilities
from harness.results.rows import Manifest

__all__ = ["recorded_capabilities"]

OLD_REFERENCE = Capabilities(deterministic=True, can_judge=False, reader=LITERAL)
OLD_LOSSY = Capabilities(degrades_on_purpose=True, can_judge=False, reader=LITERAL)


def recorded_capabilities(manifest: Manifest, name: str) -> Capabilities:
    """What the model `name` of this run could do, as the run recorded it."""
    settings = (manifest.model_settings or {}).get(name)
    settings = settings if isinstance(settings, Mapping) else {}
    if (recorded := Capabilities.of_record(settings)) is not None:
        return recorded
    lossy = name == "reference:lossy" or name.startswith("reference:lossy:")  # the old names (module docstring)
    old = OLD_REFERENCE if name == "reference" else OLD_LOSSY if lossy else Capabilities()
    if "reader" in settings:  # recorded before the other capabilities were
        return replace(old, reader=LITERAL if settings["reader"] == LITERAL else None)
    return old
