"""SIGKILL `harness run` at random points (at least --kills times), `--resume` it, and check the
results equal an uninterrupted run's, latencies and wall-clock times aside.

Prints the kills that hit a live process, the manifest statuses they left, and how long the
uninterrupted run and the final resumes took. Exits 1 on the first difference.

    python benchmarks/kill_resume.py [--kills 25] [--seed 2026]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.killing and tests.conftest

from tests.conftest import assert_same_results  # noqa: E402
from tests.killing import kill_resume_loop  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=25)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        loop, pairs = kill_resume_loop(Path(scratch), args.kills, args.seed)
        for whole, resumed in pairs:
            try:
                assert_same_results(whole, resumed)
            except AssertionError as exc:
                print(f"{resumed.name}: differs from the uninterrupted run\n{exc}")
                return 1
    if loop.mismatches:
        print("a resume took records a kill left for changed ones:\n" + "\n".join(loop.mismatches))
        return 1
    print(f"{loop.kills} kills over {loop.cycles} runs; every resumed run equals the uninterrupted one")
    print(f"manifest status after a kill: {', '.join(sorted(loop.statuses_seen))}")
    print(
        f"uninterrupted run (lock to exit): {loop.uninterrupted_s:.2f} s; last process of each run "
        f"(start to exit): median {statistics.median(loop.last_process_s):.2f} s, "
        f"max {max(loop.last_process_s):.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
