"""Peak memory of `harness run` (batch and report phases) as the batch grows 10×, and across `--concurrency`.

Each measurement is one `harness run` in a child process of its own; its peak resident set
size is the `ru_maxrss` that `os.wait4` returns for that child (the largest of it and the
processes it waited for, such as the report's chart workers); beside it, the peak of every
process's proportional set size summed, sampled every 50 ms (`tree_memory.py`: forked workers
share most of their pages with the parent, so this is the memory the whole run holds). Two
figures, with their ratios:

- size: the `reference` model over every chronology in chronologies/, copied `--copies` times
  (names suffixed), against the same batch copied 10× as often: the whole `harness run`, and
  apart, its batch phase (`run_batch` in a child) and its report (`harness report`);
- concurrency: a `--live` batch (every chronology, every policy, `--repetitions`) against a
  loopback OpenAI-compatible server (its own process; `--latency`, default 0: at once), at
  `--concurrency` 1, 4 and 64.

Flat memory: every ratio within 1.10. `--no-charts` measures without the report's charts.

    python benchmarks/peak_memory.py [--copies 1] [--repetitions 1] [--concurrency 1 4 64] [--no-charts]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import tree_memory  # noqa: E402
from loopback_process import LoopbackProcess  # noqa: E402

HARNESS = [sys.executable, "-m", "harness"]


@dataclass(frozen=True)
class Peak:
    """One `harness run`: its wall time, its peak resident set size (the largest process's), and
    the peak of every process's PSS summed (sampled; None without /proc)."""

    seconds: float
    rss_mb: float
    tree_mb: float | None = None


# The batch phase alone, in a child: every chronology of a folder, every default policy, `reference`.
BATCH_ONLY = """
import sys
from pathlib import Path
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec
from harness.chronology.loading import discover, load_chronologies
from harness.policy import PolicyRegistry
registry = PolicyRegistry.installed()
plan = RunSpec(load_chronologies(discover([Path(sys.argv[1])])), registry.default_specs(), ["reference"])
run_batch(plan, Path(sys.argv[2]), "batch", Runtime(registry))
"""


def peak_of(argv: list[str], cwd: Path) -> Peak:
    """Run `argv` as a child and return its wall time and peak RSS (ru_maxrss, KiB on Linux)."""
    env = {**os.environ, "OPENAI_API_KEY": "unused"}
    started = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    with tree_memory.TreeSampler(child.pid) as sampler:
        errors = child.stderr.read()  # read before waiting: a full pipe would block the child
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({child.returncode}):\n{errors.decode(errors='replace')}")
    return Peak(seconds, usage.ru_maxrss / 1024, sampler.peak / 2**20 if sampler.peak is not None else None)


def copied_chronologies(folder: Path, copies: int) -> Path:
    """Every chronology of chronologies/, `copies` times over, in `folder` (each copy its own name)."""
    folder.mkdir(parents=True)
    for source in sorted((ROOT / "chronologies").glob("*.yaml")):
        for n in range(1, copies + 1):
            shutil.copyfile(source, folder / f"{source.stem}-{n:03d}.yaml")
    return folder


def run_argv(chronologies: Path, work: Path, name: str, charts: bool, extra: list[str]) -> list[str]:
    return [
        *HARNESS,
        "run",
        str(chronologies),
        "--quiet",
        "--no-cache",
        "--out",
        str(work / "results"),
        "--reports",
        str(work / "reports"),
        "--run-id",
        name,
        *([] if charts else ["--no-charts"]),
        *extra,
    ]


def ratio_line(label: str, peaks: dict[str, Peak]) -> list[str]:
    lines = [f"{label}:"]
    for name, p in peaks.items():
        tree = f"{p.tree_mb:>9.1f} MB every process's PSS summed" if p.tree_mb is not None else ""
        lines.append(f"  {name:<28}{p.rss_mb:>9.1f} MB peak RSS{tree}{p.seconds:>8.1f} s")
    lines.append(ratio(" ratio highest/lowest, peak RSS:", [p.rss_mb for p in peaks.values()]))
    if all(p.tree_mb is not None for p in peaks.values()):
        lines.append(ratio(" the same, summed PSS (sampled):", [p.tree_mb or 0.0 for p in peaks.values()]))
    return lines


def ratio(label: str, figures: list[float]) -> str:
    highest, lowest = max(figures), min(figures)
    verdict = "flat (within 1.10)" if highest / lowest <= 1.10 else "NOT flat (above 1.10)"
    return f" {label} {highest / lowest:.3f}  {verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=1, help="copies of every chronology in the small batch")
    parser.add_argument("--repetitions", type=int, default=1, help="repetitions of the live batch")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 64])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request of the loopback server")
    parser.add_argument("--no-charts", dest="charts", action="store_false", help="reports without charts")
    parser.add_argument("--skip-size", action="store_true", help="only the concurrency figure")
    parser.add_argument("--skip-concurrency", action="store_true", help="only the size figure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="peak-memory-") as tmp:
        work = Path(tmp)
        small = copied_chronologies(work / "small", args.copies)
        if not args.skip_size:
            large = copied_chronologies(work / "large", args.copies * 10)
            runs: dict[str, Peak] = {}
            batches: dict[str, Peak] = {}
            reports: dict[str, Peak] = {}
            for folder in (small, large):
                files = len(list(folder.glob("*.yaml")))
                label, name = f"{files} chronology files", f"size-{files}"
                runs[label] = peak_of(run_argv(folder, work, name, args.charts, []), ROOT)
                batches[label] = peak_of(
                    [sys.executable, "-c", BATCH_ONLY, str(folder), str(work / f"b-{files}")], ROOT
                )
                argv = [*HARNESS, "report", str(work / "results" / name), "--reports", str(work / "again")]
                reports[label] = peak_of([*argv, *([] if args.charts else ["--no-charts"])], ROOT)
            print("\n".join(ratio_line("reference model, batch grown 10×: harness run (batch and report)", runs)))
            print("\n".join(ratio_line("  its batch phase alone (run_batch)", batches)))
            print("\n".join(ratio_line("  its report alone (harness report)", reports)))
        if not args.skip_concurrency:
            with LoopbackProcess(args.latency) as server:
                live = ["--live", "--model", "openai:bench", "--base-url", server.base_url]
                live += ["--repetitions", str(args.repetitions)]
                peaks = {}
                for concurrency in args.concurrency:
                    argv = run_argv(small, work, f"live-{concurrency}", args.charts, live)
                    peaks[f"--concurrency {concurrency}"] = peak_of([*argv, "--concurrency", str(concurrency)], ROOT)
                print("\n".join(ratio_line("live batch against a loopback server, same batch (run and report)", peaks)))
                served, most = server.stats()
                print(f"  requests served: {served}; most in flight at once: {most}")


if __name__ == "__main__":
    main()
