"""The unit of work of a batch: one chronology under one policy, model and repetition; and what a
batch holds of each chronology until one of its conversations starts (`Planned`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.base.errors import Problem
from harness.base.identity import RunKey
from harness.chronology import Chronology, Source
from harness.chronology.ledger import Ledger
from harness.chronology.types import Reference
from harness.policy import PolicySpec


@dataclass(frozen=True)
class ProbeSource:
    """What a probe says of itself for its benchmark's own metric (`category:`, `reference:`):
    the manifest records it, so a report built from results alone can read it."""

    probe: str
    category: str | None
    reference: Reference | None

    def as_record(self) -> dict[str, Any]:
        reference = None if self.reference is None else {"answer": self.reference.answer}
        if reference is not None and self.reference is not None and self.reference.prefix is not None:
            reference["prefix"] = self.reference.prefix
        return {"category": self.category, "reference": reference}


@dataclass(frozen=True)
class Planned:
    """A chronology as a batch plans it: what the manifest, the plan's order, its shards and the
    progress display read, without its turns. Its turns are loaded when one of its conversations
    starts (`harness.run.loaded`), and checked to be the file planned (`sha256`)."""

    name: str
    path: str
    sha256: str
    title: str
    description: str
    warnings: tuple[Problem, ...]
    user_turns: int  # the conversation's length: shards balance it
    scripted: int  # user turns with a recorded reply: no answer call unless live
    judged: int  # judge calls at its probes, with --judge (one per expectation judged and prohibition in force)
    source: Source | None = None  # where an imported chronology came from (its `source:`)
    probe_sources: tuple[ProbeSource, ...] = ()  # its probes that name a category or a reference

    @classmethod
    def of(cls, chronology: Chronology) -> Planned:
        """What planning keeps of a loaded chronology."""
        turns = chronology.user_turns
        ledger = Ledger(chronology)
        judged = sum(
            len(ledger.prohibitions_in_force(t.number)) + sum(e.judged for e in t.expect) for t in turns if t.probe
        )
        return cls(
            chronology.name,
            chronology.path,
            chronology.sha256,
            chronology.title,
            chronology.description,
            chronology.warnings,
            len(turns),
            sum(1 for t in turns if t.assistant is not None),
            judged,
            chronology.source,
            probe_sources(chronology),
        )


def probe_sources(chronology: Chronology | Planned) -> tuple[ProbeSource, ...]:
    """The probes of a chronology, planned or loaded, that name a category or a reference answer."""
    if isinstance(chronology, Planned):
        return chronology.probe_sources
    return tuple(
        ProbeSource(t.probe, t.category, t.reference)
        for t in chronology.probes
        if t.probe is not None and (t.category is not None or t.reference is not None)
    )


def user_turns(chronology: Chronology | Planned) -> int:
    """The user turns of a chronology, planned or loaded."""
    return chronology.user_turns if isinstance(chronology, Planned) else len(chronology.user_turns)


def planned(chronology: Chronology | Planned) -> Planned:
    """`chronology` as planning sees it (a loaded one is summarized: a test or a notebook may plan
    with chronologies it loaded itself)."""
    return chronology if isinstance(chronology, Planned) else Planned.of(chronology)


@dataclass(frozen=True)
class Conversation:
    """The unit of work: independent of every other, so it can run anywhere, in any order.

    In a batch's plan `chronology` is `Planned`; the conversation that runs holds the chronology
    loaded (`harness.run.loaded`). One built with a loaded chronology runs with it as it is."""

    chronology: Chronology | Planned
    policy: PolicySpec
    model: str
    repetition: int

    @property
    def key(self) -> RunKey:
        return RunKey(self.chronology.name, self.policy.label, self.model, self.repetition)
