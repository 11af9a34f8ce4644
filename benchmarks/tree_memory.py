"""The memory of a process and everything it forks, sampled while it runs (Linux).

`ru_maxrss` (what `getrusage` and `wait4` give) is the peak of the largest single process: a
report that forks workers (chart drawers) uses more than that. Summing each
process's RSS would count the pages the workers share with the parent once per process; the
proportional set size (PSS, `/proc/PID/smaps_rollup`) divides each shared page among the
processes that map it, so the sum over the tree is the tree's fair share of memory (pages it
shares with processes outside it, such as libraries, count in part). Sampling every `interval`
seconds can miss a peak shorter than that; the list of processes is read again every
`RESCAN` samples (a scan of /proc costs about 5 ms here, and runs beside what is timed), so a
worker younger than that is missed too. `peak_memory.py` prints the sampled sum beside
`ru_maxrss`; `report_scale.py` judges by the larger.
"""

from __future__ import annotations

import threading
from pathlib import Path

PROC = Path("/proc")
RESCAN = 5  # samples between two reads of the process list


def available() -> bool:
    """Whether this system has /proc/PID/smaps_rollup (Linux 4.14 and later)."""
    return (PROC / "self" / "smaps_rollup").exists()


def descendants(root: int) -> list[int]:
    """`root` and every process below it, from /proc (processes that end meanwhile are skipped)."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def pss_bytes(pid: int) -> int:
    """The proportional set size of one process; 0 when it has ended."""
    try:
        text = (PROC / str(pid) / "smaps_rollup").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


class TreeSampler:
    """Samples the summed PSS of `root`'s process tree on a thread until stopped, at least once;
    keeps the peak (bytes; None where /proc cannot say). `below`: the tree under `root`, without
    it (a process that only starts and waits for the measured one)."""

    def __init__(self, root: int, interval: float = 0.05, below: bool = False) -> None:
        self.root, self.interval, self.below = root, interval, below
        self.peak: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeSampler:
        if available():
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        samples, pids = 0, []
        while samples == 0 or not self._stop.is_set():
            if samples % RESCAN == 0:
                pids = descendants(self.root)[1:] if self.below else descendants(self.root)
            total = sum(pss_bytes(pid) for pid in pids)
            self.peak = max(self.peak or 0, total)
            samples += 1
            self._stop.wait(self.interval)
