"""What a model states of itself, so that no wing decides it by the model's name: each model
kind's `capabilities` (harness.models), recorded in the manifest's `model_settings` beside its
other settings, and read back by the report from the results (harness.results.models).

Below both, so the report never imports the models to know what a model could do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["LITERAL", "Capabilities"]

# `reader`: answers a permission request and a question about a declared key, nothing else; the
# harness's own reader, in process: it needs no server, and answers a policy's own calls with the
# policy's stand-in (a provider policy's: its emulator).
LITERAL = "literal"


@dataclass(frozen=True)
class Capabilities:
    """What a model can and cannot do, as the run and the report need to know it."""

    deterministic: bool = False  # every answer a function of the request alone: a repetition adds nothing
    degrades_on_purpose: bool = False  # loses what it reads by seeded draws (reference:lossy)
    can_judge: bool = True  # may answer `--judge`'s rubrics
    reader: Literal["literal"] | None = None  # a literal reader: it samples nothing and reads no question

    @property
    def offline(self) -> bool:
        """Needs no server (a literal reader): a provider policy's calls then go to its emulator."""
        return self.reader == LITERAL

    def as_record(self) -> dict[str, Any]:
        """The fields as the manifest's `model_settings` entry holds them."""
        return asdict(self)

    @classmethod
    def of_record(cls, settings: Mapping[str, Any]) -> Capabilities | None:
        """The capabilities a `model_settings` entry records; None for an entry written before
        they were recorded (only `reader` was, if anything)."""
        if not all(
            isinstance(settings.get(name), bool) for name in ("deterministic", "degrades_on_purpose", "can_judge")
        ):
            return None
        reader = LITERAL if settings.get("reader") == LITERAL else None
        return cls(settings["deterministic"], settings["degrades_on_purpose"], settings["can_judge"], reader)
