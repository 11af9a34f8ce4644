"""A conversation's identity, declared once: (chronology, policy, model, repetition), the four
fields every record of a run starts with and the key every reader groups its records by."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


class RunKey(NamedTuple):
    """One conversation of a run: a chronology under a policy and a model, at a repetition."""

    chronology: str
    policy: str
    model: str
    repetition: int

    def __str__(self) -> str:
        """As messages name a conversation: `chronology · policy · model · repetition`."""
        return " · ".join(map(str, self))

    @classmethod
    def typed(cls, chronology: Any, policy: Any, model: Any, repetition: Any) -> RunKey:
        """The names as text and the repetition a whole number (ValueError, TypeError when it is none)."""
        return cls(str(chronology), str(policy), str(model), int(repetition))

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> RunKey:
        """The conversation a record belongs to, read as `typed` (KeyError when a field is missing)."""
        return cls.typed(*(record[name] for name in IDENTITY))

    @classmethod
    def held(cls, record: Mapping[str, Any]) -> RunKey:
        """The identity a record holds, unchecked (None for a missing field): to tally what is
        written, and to name a record whose identity may be damaged."""
        return cls._make(map(record.get, IDENTITY))

    @classmethod
    def written(cls, value: Any) -> RunKey | None:
        """A parsed record's identity as the writer writes it (three names and a whole-number
        repetition); None for anything else (no record, a field missing or of another type)."""
        key = cls.held(value) if isinstance(value, dict) else None
        if key is None or not all(isinstance(name, str) for name in key[:3]) or type(key.repetition) is not int:
            return None
        return key


IDENTITY: tuple[str, ...] = RunKey._fields  # the identity's fields, in the order records hold them
