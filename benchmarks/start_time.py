"""Fast start: wall time of `harness --help` and `harness validate`, against issue 11's 0.3 s.

Each command runs several times in a fresh interpreter (a subprocess, as a user types it);
the median wall time is compared with the target, and the median CPU time (user + system of
the child) is printed and compared beside it, since other work on a shared machine stretches
wall time (`python -c pass` is timed too, for scale). The commands run with bytecode caching
on, as an installed harness does: a PYTHONDONTWRITEBYTECODE in the environment would make every
run compile every module from source (about a third more CPU), so it is dropped for the children.
Then `python -X importtime` shows, per command, the imports that cost the most.

    python benchmarks/start_time.py               # 7 runs of each command
    python benchmarks/start_time.py --runs 15 --top 12
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.3  # seconds of wall time, issue 11
COMMANDS = (
    ("--help",),
    ("validate", "chronologies/memory-drift.yaml"),
    ("validate", "chronologies/library.txt"),
)
# Bytecode cached as a user's install has it (see the docstring).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def harness() -> list[str]:
    """The installed `harness` script, else the package run as a module."""
    script = shutil.which("harness") or str(Path(sys.executable).with_name("harness"))
    return [script] if Path(script).exists() else [sys.executable, "-m", "harness"]


def once(command: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of `command`; a failing command stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=CHILD_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def imports(args: tuple[str, ...], top: int) -> list[str]:
    """The most costly imports of one command: own and cumulative milliseconds, by own time."""
    env = {**CHILD_ENV, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=ROOT, capture_output=True, text=True, env=env, check=True
    )
    found = []
    for line in done.stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if match:
            own, total, indent, name = match.groups()
            found.append((int(total), int(own), len(indent), name))
    # The modules that cost the most on their own (nested imports excluded), with what they
    # bring in beside them.
    costliest = sorted(found, key=lambda f: f[1], reverse=True)[:top]
    return [
        f"    own {own / 1000:>6.1f} ms  (with its imports {total / 1000:.1f} ms)  {name}"
        for total, own, _, name in costliest
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each command (default 7)")
    parser.add_argument("--top", type=int, default=8, help="import offenders shown per command (default 8)")
    args = parser.parse_args()
    base = harness()
    print(f"median of {args.runs} fresh runs each, bytecode cached; target: under {TARGET} s wall")
    print(f"{'command':48}{'wall s':>8}{'CPU s':>8}  wall verdict (CPU alone)")
    results = []
    for command in COMMANDS:
        once([*base, *command])  # a first run warms the file cache and writes bytecode
        runs = [once([*base, *command]) for _ in range(args.runs)]
        wall, cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
        verdict = "PASS" if wall < TARGET else "FAIL"
        results.append(verdict)
        alone = "PASS" if cpu < TARGET else "FAIL"
        print(f"{'harness ' + ' '.join(command):48}{wall:>8.3f}{cpu:>8.3f}  {verdict} ({alone})", flush=True)
    print(
        f"for scale: `{Path(sys.executable).name} -c pass` takes {statistics.median(once([sys.executable, '-c', 'pass'])[0] for _ in range(args.runs)):.3f} s wall here"
    )
    for command in COMMANDS:
        print(f"\ncostliest imports of `harness {' '.join(command)}` (python -X importtime):")
        print("\n".join(imports(command, args.top)))
    print("\nPASS: every command under the target" if set(results) == {"PASS"} else "\nFAIL: see the commands above")


if __name__ == "__main__":
    main()
