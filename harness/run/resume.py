"""`harness run --resume DIR` finishes a run as it started: the manifest holds its settings,
and the records of its finished conversations are kept only where they are as written.

An option given beside `--resume` that disagrees with the manifest is refused, not ignored:
a user who types `--resume r --policy nosuch` (or `--seed 3`) would otherwise believe it
applied. An option that repeats the manifest's value is harmless and accepted.

The finished conversations a resume keeps (`kept_conversations`) are those whose records match
the digests recorded when they finished (harness.results.integrity). One that does not is run
again, and a line that is no record is left out, each said in a notice; what no rerun repairs
(a conversation the manifest does not plan, a file changed outside any conversation's records)
is refused. A run of format version 2 recorded no digests: its finished conversations are kept
unverified, but one the manifest does not plan is refused all the same (a manifest edited to
another model would otherwise drop and redo every finished conversation).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from harness.base.errors import InputError
from harness.base.identity import RunKey
from harness.policy import PolicyRegistry
from harness.results.integrity import Verdict, check
from harness.results.reader import each_record
from harness.results.rows import Manifest
from harness.run.options import SETTING, SETTINGS, resolved

# Each `harness run` parameter a manifest records, with the option's name and its recorded value:
# every setting (harness.run.options.SETTINGS), and where the run's folder is and what made it.
RECORDED: dict[str, tuple[str, Callable[[Manifest, Path], Any]]] = {s.name: (s.label, s.recorded) for s in SETTINGS}
RECORDED |= {
    "out": ("--out", lambda m, d: resolved(d.parent)),
    "run_id": ("--run-id", lambda m, d: m.run_id),
    "batch": ("--batch", lambda m, d: m.batch["sha256"] if m.batch else None),
}

# What a resume may be given freely: it changes no setting of the run.
FREE = frozenset({"resume", "quiet", "reports", "charts"})  # the results do not depend on them


def as_given(name: str, value: Any, registry: PolicyRegistry) -> Any:
    """An option's value in the form the manifest records it."""
    if name in SETTING:
        return SETTING[name].given(value, registry)
    if name == "batch":
        return file_sha256(value)
    return resolved(value) if name == "out" else value


def file_sha256(path: Path) -> str:
    """The sha256 of a batch file as given beside --resume (the manifest records the file's)."""
    from harness.run.batchfile import read_batch_bytes

    return hashlib.sha256(read_batch_bytes(Path(path))).hexdigest()


def shown(value: Any) -> str:
    """A value as the message quotes it."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict):  # roles, caps
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none"
    return "none" if value is None else str(value)


def refuse_conflicts(directory: Path, manifest: Manifest, given: dict[str, Any], registry: PolicyRegistry) -> None:
    """Raise an InputError listing every given option that disagrees with the run's manifest."""
    conflicts = []
    for name, value in given.items():
        if name in FREE:
            continue
        if name not in RECORDED:  # a setting this check cannot compare: never silently ignored
            conflicts.append(f"--{name.replace('_', '-')} (not compared with the manifest)")
            continue
        option, recorded = RECORDED[name]
        try:
            ours = recorded(manifest, directory)
        except (KeyError, TypeError, AttributeError) as exc:
            raise InputError(
                f"{directory / 'manifest.json'}: the manifest is damaged ({type(exc).__name__}: "
                f"{exc}); restore it, or start a new run"
            ) from None
        if as_given(name, value, registry) != ours:
            conflicts.append(f"{option} {shown(value)} (the run has {shown(ours)})")
    if conflicts:
        raise InputError(
            f"--resume {directory}: {'; '.join(conflicts)}: a resume finishes the run with the "
            "settings it started with; drop these options, or start a new run"
        )


CHANGED = "the results were changed after the harness wrote them"


def kept_conversations(
    directory: Path, recorded: Manifest, plan: Collection[RunKey], notify: Callable[[str], None]
) -> set[RunKey]:
    """The finished conversations of `directory` a resume keeps: those whose records match their
    digests. A repair (a conversation run again, a line left out) is told to `notify`; what no
    rerun repairs raises an InputError naming the file, the conversation and what differs."""
    verdict = check(directory, recorded, plan)
    if verdict.unverified:
        return unverified_conversations(directory, plan)
    if verdict.refused:
        raise InputError(
            f"--resume {directory}: {verdict.summary(verdict.refused)}: {CHANGED}; "
            "restore the folder from a copy, or start a new run"
        )
    if verdict.mismatches:
        notify(repair_notice(directory, verdict))
    return set(verdict.finished)


def repair_notice(directory: Path, verdict: Verdict) -> str:
    """What a resume repairs, in one line."""
    done = []
    if verdict.damaged:
        count = len(verdict.damaged)
        done.append(
            f"{count} conversation{'s' if count > 1 else ''} whose records do not match run{'' if count > 1 else 's'} again"
        )
    if any(m.key is None for m in verdict.mismatches):
        done.append("what is no record is left out")
    return f"--resume {directory}: {verdict.summary()}: {CHANGED}; {' and '.join(done)}"


def unverified_conversations(directory: Path, plan: Collection[RunKey]) -> set[RunKey]:
    """The finished conversations of a run that recorded no digests (format version 2), each
    one the manifest plans."""
    finished = {RunKey.of(r) for r in each_record(directory / "conversations.jsonl")}
    outside = sorted(k for k in finished if k not in plan)
    if outside:
        raise InputError(
            f"--resume {directory}: conversations.jsonl records conversation {outside[0]}, which the "
            f"manifest does not plan ({len(outside)} such): the manifest or the records were changed after the "
            "harness wrote them; restore the folder from a copy, or start a new run"
        )
    return finished
