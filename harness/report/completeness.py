"""Whether a run is whole enough to compare: `harness compare` refuses a run that did not complete
(interrupted, failed, killed, or still being written) unless `--allow-incomplete` is given, and then
says what is missing.

What a run's state is read from, all written by the run itself:
- the manifest's `status` (`complete`, or `running`, `interrupted`, `failed`: harness.run.batch)
  and its planned conversations (`conversations.total`);
- `conversations.jsonl`, one record per finished conversation (harness.results.integrity);
- the lock (harness.base.locking), held by the process writing the run: a `running` run whose
  lock is held is still being written; one whose lock is free was killed.

The conversations a run planned follow from its manifest as the run planned them
(harness.results.plan `plan_order`); a shard's slice of them is not recomputed (its count is given).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.base.errors import InputError
from harness.base.identity import RunKey
from harness.results.integrity import finished_keys
from harness.results.plan import plan_order
from harness.results.tables import Results

SHOWN = 5  # missing conversations named one by one in the note; the rest are counted


@dataclass(frozen=True)
class Incomplete:
    """A run that did not complete: why, and which conversations it finished."""

    directory: Path
    why: str  # in words: `interrupted`, `still being written by ...`
    planned: int | None  # conversations planned (None: not recorded)
    finished: frozenset[RunKey]
    missing: tuple[RunKey, ...]  # planned and not finished, in plan order (empty when the plan is not known)
    writing: bool  # its lock is held: a process is writing it now

    def counts(self) -> str:
        return (
            f"{len(self.finished)} of {self.planned if self.planned is not None else 'unknown'} conversations finished"
        )

    def refusal(self) -> str:
        """The one line `harness compare` refuses the run with."""
        todo = "wait for it to end" if self.writing else f"finish it with `harness run --resume {self.directory}`"
        return (
            f"{self.directory}: the run is {self.why} ({self.counts()}); {todo}, or give --allow-incomplete to "
            "compare the conversations it finished"
        )

    def note(self) -> str:
        """What `--allow-incomplete` says of the run: what is missing, and what that does to the comparison."""
        if self.missing:
            named = ", ".join(map(str, self.missing[:SHOWN]))
            more = f" and {len(self.missing) - SHOWN} more" if len(self.missing) > SHOWN else ""
            missing = f"; not finished: {named}{more}"
        else:
            missing = ""
        return (
            f"note: {self.directory} is {self.why}: {self.counts()}{missing}. Only finished conversations are "
            "compared; the other run's checks of the others are under *Checks in one run only* (conversation not "
            "finished in the other run)."
        )


def incompleteness(results: Results) -> Incomplete | None:
    """None for a complete run; otherwise what is incomplete about it."""
    manifest = results.manifest
    if manifest.status == "complete":
        return None
    holder = results.writer
    if holder is not None:
        why = f"still being written by {holder}"
    elif manifest.status == "running":
        why = "not complete: its process ended while it was running (killed)"
    elif manifest.status == "failed":
        why = f"failed ({manifest.error or 'no reason recorded'})"
    else:
        why = str(manifest.status or "of no recorded status")
    finished = frozenset(finished_keys(results.directory))
    return Incomplete(
        results.directory,
        why,
        manifest.conversations.get("total"),
        finished,
        missing(results, finished),
        holder is not None,
    )


def missing(results: Results, finished: frozenset[RunKey]) -> tuple[RunKey, ...]:
    """The planned conversations not finished; none named for a shard (its slice is not recomputed)."""
    m = results.manifest
    if m.shard is not None:
        return ()
    runs = m.repetitions_run
    plan = plan_order(m.chronology_names, m.models, lambda model: int(runs.get(model, m.repetitions)), m.policy_labels)
    return tuple(key for key in map(RunKey._make, plan) if key not in finished)


def check_complete(results: Results, allow_incomplete: bool) -> Incomplete | None:
    """Refuse an incomplete run (an InputError, one line) unless allowed; give it when allowed."""
    found = incompleteness(results)
    if found is not None and not allow_incomplete:
        raise InputError(found.refusal())
    return found
