"""The unit of work of a batch: one chronology under one policy, model and repetition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.chronology import Chronology
from harness.policy import PolicySpec


@dataclass(frozen=True)
class Conversation:
    """The unit of work: independent of every other, so it can run anywhere, in any order."""

    chronology: Chronology
    policy: PolicySpec
    model: str
    repetition: int

    def identity(self) -> dict[str, Any]:
        return {
            "chronology": self.chronology.name,
            "policy": self.policy.label,
            "model": self.model,
            "repetition": self.repetition,
        }
