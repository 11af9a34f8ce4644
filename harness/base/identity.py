"""A conversation's identity, declared once: (chronology, policy, model, repetition), the first
fields of every record of a run and the key its readers group records by."""

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
        """Names as text, the repetition a whole number (ValueError or TypeError when it is none)."""
        return cls(str(chronology), str(policy), str(model), int(repetition))

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> RunKey:
        """A record's conversation, read as `typed` (KeyError when a field is missing)."""
        return cls.typed(*(record[name] for name in IDENTITY))

    @classmethod
    def held(cls, record: Mapping[str, Any]) -> RunKey:
        """A record's identity as it holds it, unchecked (None where missing): to tally what is
        written, and to name a record whose identity may be damaged."""
        return cls._make(map(record.get, IDENTITY))

    @classmethod
    def written(cls, value: Any) -> RunKey | None:
        """A parsed record's identity only as the writer writes it (three names, a whole-number
        repetition); None for anything else."""
        key = cls.held(value) if isinstance(value, dict) else None
        ok = key is not None and all(isinstance(name, str) for name in key[:3]) and type(key[3]) is int
        return key if ok else None


IDENTITY: tuple[str, ...] = RunKey._fields  # the identity's fields, in the order records hold them
