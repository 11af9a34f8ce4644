"""SIGKILL a `harness run` at random points, `--resume` it, and compare with an uninterrupted run.

Used by `tests/run/test_kill_resume.py` (a short loop in the default suite, a long one behind a
marker) and by `benchmarks/kill_resume.py`. Every process is a real `harness run` in a process
of its own (tests/spawn.py) on the reference model, so a kill can land anywhere: between two
records, inside a write, during the final rewrite of the records, between a `complete` manifest
and the report.

A kill is aimed only once the process holds the results directory (its pid is in the lock
file): a kill before that leaves nothing to resume and tests nothing. Each cycle starts a
fresh run, kills it and its resumes until it completes or has taken its share of kills, then
resumes it without a kill and checks the results against the uninterrupted run.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.paths import SHIPPED
from tests.spawn import Harness, spawn_harness

CHANGED = "changed after the harness wrote"  # how a refusal or a repair of changed records reads
FILES = ("memory-drift.yaml", "correct-then-forget.yaml", "two-sessions.yaml")
ARGS = ["--quiet", "--concurrency", "2"]


@dataclass
class Loop:
    """What a kill/resume loop did: kills that hit a live process, and the timings measured."""

    kills: int = 0
    cycles: int = 0
    uninterrupted_s: float = 0.0  # locked to exit, in the uninterrupted run
    window: float = 0.0  # kills land within this many seconds of the lock (adapted as they land or miss)
    last_process_s: list[float] = field(default_factory=list)  # start to exit of each cycle's last process
    statuses_seen: set[str] = field(default_factory=set)  # manifest statuses found after kills
    # What any process said about records that do not match their digests: a kill leaves none
    # (the record it cuts short is its unfinished conversation's last), so this stays empty.
    mismatches: list[str] = field(default_factory=list)

    def heard(self, stderr: str) -> None:
        self.mismatches += [line for line in stderr.splitlines() if CHANGED in line]


def prepare(root: Path) -> Path:
    """A scratch project in `root` with a few shipped chronologies."""
    (root / "chronologies").mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copy(SHIPPED / name, root / "chronologies" / name)
    return root


def harness(root: Path, *args: str) -> Harness:
    return spawn_harness("run", *args, cwd=root)


def held_by(directory: Path, process: Harness, timeout: float = 60) -> float | None:
    """Wait until `process` holds `directory`'s lock; when, or None if it ended first."""
    deadline = time.monotonic() + timeout
    lock = directory / ".lock"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return None
        try:
            if json.loads(lock.read_text() or "{}").get("pid") == process.pid:
                return time.monotonic()
        except (OSError, ValueError):
            pass
        time.sleep(0.005)
    raise AssertionError(f"process {process.pid} never locked {directory}")


def uninterrupted(root: Path, loop: Loop) -> Path:
    directory = root / "results" / "whole"
    process = harness(root, *ARGS, "--run-id", "whole")
    locked = held_by(directory, process)
    process.finished(timeout=300)
    assert locked is not None
    loop.uninterrupted_s = loop.window = time.monotonic() - locked
    return directory


def cycle(root: Path, number: int, kills: int, rng: random.Random, loop: Loop) -> Path:
    """One fresh run, killed up to `kills` times, then resumed to the end; its directory.

    The kill lands at a uniform moment within `loop.window` seconds of the lock; the window
    shrinks after a miss (the process had ended) and grows after a hit, so kills keep landing
    while the machine's speed varies.
    """
    run_id = f"cut{number}"
    directory = root / "results" / run_id
    process, spawned = harness(root, *ARGS, "--run-id", run_id), time.monotonic()
    for _ in range(kills):
        locked = held_by(directory, process)
        if locked is not None:
            time.sleep(rng.uniform(0, loop.window))
        if process.poll() is not None:  # it finished before the aimed moment
            loop.window *= 0.7
            break
        process.send_signal(signal.SIGKILL)
        loop.heard(process.outcome(timeout=30)[1])
        loop.kills += 1
        loop.window *= 1.1
        if not (directory / "manifest.json").exists():  # killed before it recorded anything: start again
            loop.statuses_seen.add("no manifest")
            shutil.rmtree(directory)
            process, spawned = harness(root, *ARGS, "--run-id", run_id), time.monotonic()
            continue
        loop.statuses_seen.add(json.loads((directory / "manifest.json").read_text())["status"])
        process, spawned = harness(root, "--quiet", "--resume", f"results/{run_id}"), time.monotonic()
    loop.heard(process.finished(timeout=300))
    loop.last_process_s.append(time.monotonic() - spawned)
    loop.cycles += 1
    return directory


def kill_resume_loop(root: Path, kills: int, seed: int, per_cycle: int = 4) -> tuple[Loop, list[tuple[Path, Path]]]:
    """At least `kills` SIGKILLs that hit a live process; pairs (uninterrupted, resumed) to compare."""
    prepare(root)
    rng, loop = random.Random(seed), Loop()
    whole = uninterrupted(root, loop)
    pairs = []
    while loop.kills < kills:
        pairs.append((whole, cycle(root, loop.cycles + 1, min(per_cycle, kills - loop.kills), rng, loop)))
    return loop, pairs
