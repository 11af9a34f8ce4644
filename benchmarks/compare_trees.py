"""A/B wall time of a `--live` batch through two checkouts' `harness run`, against one loopback server:
what a change of the code costs or buys, end to end, measured within one session.

    git worktree add /tmp/before <commit> && (cd /tmp/before && python3 -m venv .venv && .venv/bin/pip install -e .)
    python benchmarks/compare_trees.py --trees /tmp/before . --latency 0.5 --concurrency 16 --repetitions 10 --runs 3

Each run: `harness run chronologies/memory-drift.yaml --live --model openai:m --base-url URL
--concurrency C --repetitions R --no-cache --no-charts --quiet` with the tree's own venv, cwd the
tree; wall time of the whole command (batch and its tables-only report). Trees alternate within
each round, so that a change of load falls on both. Prints per tree the walls, their median, and
the ratio to the first tree's median.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for benchmarks.loopback_process
from benchmarks.loopback_process import LoopbackProcess  # noqa: E402


def one(tree: Path, url: str, args: argparse.Namespace, out: Path) -> float:
    command = [
        str(tree / ".venv/bin/harness"),
        "run",
        "chronologies/memory-drift.yaml",
        "--live",
        "--model",
        "openai:m",
        "--base-url",
        url,
        "--concurrency",
        str(args.concurrency),
        "--repetitions",
        str(args.repetitions),
        "--no-cache",
        "--no-charts",
        "--quiet",
        "--out",
        str(out / "results"),
        "--reports",
        str(out / "reports"),
    ]
    env = {**os.environ, "OPENAI_API_KEY": "x"}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{tree}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", type=Path, required=True, help="checkouts, each with its .venv")
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    args.trees = [t.resolve() for t in args.trees]
    walls: dict[Path, list[float]] = {t: [] for t in args.trees}
    with LoopbackProcess(latency=args.latency) as server:
        for _ in range(args.runs):
            for tree in args.trees:
                scratch = Path(tempfile.mkdtemp())
                try:
                    walls[tree].append(one(tree, server.base_url, args, scratch))
                finally:
                    shutil.rmtree(scratch)
    base = statistics.median(walls[args.trees[0]])
    print(
        f"latency {args.latency}s concurrency {args.concurrency} repetitions {args.repetitions}; load {os.getloadavg()[0]:.1f}"
    )
    for tree, found in walls.items():
        median = statistics.median(found)
        print(f"  {tree}: {' '.join(f'{w:.2f}' for w in found)}  median {median:.2f}s  ratio {median / base:.3f}")


if __name__ == "__main__":
    main()
