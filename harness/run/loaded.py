"""The chronologies of a batch loaded as their conversations start, and released once no
conversation needs them.

A batch plans with `Planned` records (name, path, sha256, sizes: no turns). When a conversation
starts, `Chronologies.using` loads its chronology and builds its `Ledger` (or shares them with the
conversations of the same chronology running), and refuses a file whose SHA-256 is no longer the
one planned (changed since the run started). When no conversation running needs a chronology, it
is kept among the `CACHED` most recently used (plan order runs the conversations of one chronology
one after another), the oldest dropped first: a batch holds at most one chronology per
conversation running (`--concurrency`) plus `CACHED`, however many the batch names.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from harness.base.errors import ChronologyError, InputError
from harness.base.text import visible
from harness.chronology import Chronology
from harness.chronology.ledger import Ledger
from harness.chronology.loading import load_chronology
from harness.run.conversation import Planned

__all__ = ["CACHED", "Chronologies", "ChronologyChanged", "Loaded"]

CACHED = 2  # chronologies kept loaded between conversations, beside those of conversations running


class ChronologyChanged(InputError):
    """A chronology file is not the one the run planned (exit status 2)."""


@dataclass(frozen=True)
class Loaded:
    """A chronology with the ground truth derived from it."""

    chronology: Chronology
    ledger: Ledger


class Chronologies:
    """Loads the chronologies of a batch on demand: those in use, and the `capacity` most recently
    used of the others.

    `loads` counts the files loaded; `most_alive` is the most chronologies it loaded that were
    in memory at once (held by the cache or by a conversation): what the bound above promises."""

    def __init__(self, capacity: int = CACHED) -> None:
        self.capacity = capacity
        self.loads = 0
        self.alive = 0
        self.most_alive = 0
        self._in_use: dict[tuple[str, str], tuple[Loaded, int]] = {}  # with the conversations using it
        self._kept: OrderedDict[tuple[str, str], Loaded] = OrderedDict()  # in use by none, oldest first
        self._lock = threading.Lock()
        self._counting = threading.Lock()

    @contextmanager
    def using(self, planned: Planned) -> Iterator[Loaded]:
        """The chronology `planned` names, loaded (or shared, or kept from an earlier
        conversation), for as long as a conversation runs with it."""
        key = (planned.path, planned.sha256)
        with self._lock:
            found, users = self._in_use.get(key) or (self._kept.pop(key, None), 0)
            if found is None:
                found = Loaded(chronology := self._load(planned), Ledger(chronology))
            self._in_use[key] = (found, users + 1)
        try:
            yield found
        finally:
            with self._lock:
                found, users = self._in_use.pop(key)
                if users > 1:
                    self._in_use[key] = (found, users - 1)
                else:
                    self._kept[key] = found
                    while len(self._kept) > self.capacity:
                        self._kept.popitem(last=False)
            del found

    def _load(self, planned: Planned) -> Chronology:
        shown = visible(planned.path)
        try:
            chronology = load_chronology(planned.path)
        except FileNotFoundError:
            raise ChronologyChanged(
                f"{shown}: no longer there (the run planned it); put it back, then resume the run (--resume)"
            ) from None
        except ChronologyError as exc:
            raise ChronologyChanged(
                f"{shown}: changed since the run started, and no longer loads ({exc.problems[0]}); "
                "put it back as it was, then resume the run (--resume), or start a new run"
            ) from None
        if chronology.sha256 != planned.sha256:
            raise ChronologyChanged(
                f"{shown}: changed since the run started (sha256 differs from the one planned); "
                "put it back as it was, then resume the run (--resume), or start a new run"
            )
        with self._counting:
            self.loads += 1
            self.alive += 1
            self.most_alive = max(self.most_alive, self.alive)
        weakref.finalize(chronology, self._released)
        return chronology

    def _released(self) -> None:
        with self._counting:
            self.alive -= 1
