"""Linear replay: time and bytes on disk per turn at two conversation lengths, per policy, with ratios.

Generates a long chronology at each length with scripts/long_conversation.py (in a temporary
folder, never committed), replays it under each policy alone with the `reference` model (no
report), and prints per policy: CPU seconds per turn at both lengths and their ratio, wall
seconds per turn, bytes on disk per turn and their ratio, and PASS/FAIL against the targets of
issue 11 (time per turn within 1.5x, bytes per turn within 1.2x, from one run).

    python benchmarks/results_growth.py                        # 1,000 and 10,000 turns, every policy
    python benchmarks/results_growth.py --turns 300 3000 --policy full-history
    python benchmarks/results_growth.py --files                # also bytes per turn, file by file
    python benchmarks/results_growth.py --turns 300 1200 --probe-every 50   # probes proportional to length

Every policy runs by default: the plain run's comparison and the `deployed` set. Time is CPU
time of the process (all threads), which other work on a shared machine disturbs less than
wall time; both are printed. Scripted turns are not sent to the model, so the replay itself
is measured; the probes (the reference model answering from the whole view) all fall in the
first 201 turns, unless `--probe-every N` puts one every N turns, so that the checks' work grows
with the length too (each probe's checks, and the reference model's reading of the whole view,
cost what the view holds: for full history the time per turn then grows with the view). With `--live` every turn is answered: the reference model then reads the
whole view at every turn, which for full-history grows with the history by its nature.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from harness.chronology import Chronology, safe_yaml
from harness.chronology.loading import load_chronology
from harness.policy import PolicyRegistry, PolicySpec
from harness.policy.tokens import TokenCounter
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec

ROOT = Path(__file__).resolve().parent.parent


TIME_TARGET, BYTES_TARGET = 1.5, 1.2  # issue 11: per-turn ratios, long over short


@dataclass(frozen=True)
class Measure:
    """One replay: its length, its CPU and wall time and the bytes of each results file."""

    turns: int
    cpu: float
    wall: float
    sizes: dict[str, int]

    @property
    def bytes_per_turn(self) -> float:
        return sum(self.sizes.values()) / self.turns

    @property
    def ms_per_turn(self) -> float:
        return self.cpu * 1000 / self.turns

    @property
    def wall_ms_per_turn(self) -> float:
        return self.wall * 1000 / self.turns


def generator() -> ModuleType:
    """scripts/long_conversation.py, loaded as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("long_conversation", ROOT / "scripts" / "long_conversation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_chronology(
    folder: Path, turns: int, probe_every: int | None = None, correct_every: int | None = None
) -> Path:
    """A long conversation of `turns` turns, as the script writes it for its own length; with
    `probe_every`, a probe every that many turns instead of the script's doubling ages; with
    `correct_every`, a correction of the version every that many turns (the stale values, which
    every probe checks, then grow with the length too)."""
    script = generator()
    script.TURNS = turns  # render() reads the length from this module constant
    if probe_every:
        script.PROBE_AGES = tuple(range(probe_every, turns, probe_every))
    if correct_every:
        probes = {age + 1 for age in script.PROBE_AGES}
        corrections = {n: f"version=12.{n}" for n in range(correct_every, turns, correct_every) if n not in probes}
        script.DECLARATIONS = {**corrections, **script.DECLARATIONS}
    path = folder / f"long-{turns}.yaml"
    path.write_text(script.render(), encoding="utf-8", newline="\n")
    return path


def measure(folder: Path, chronology: Chronology, spec: PolicySpec, registry: PolicyRegistry, live: bool) -> Measure:
    """Replay one chronology under one policy; its results go to a folder removed afterwards."""
    turns = len(chronology.turns)
    plan = RunSpec([chronology], [spec], ["reference"], live=live)
    directory = folder / f"results-{turns}"
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    run_batch(plan, directory, f"growth-{turns}", Runtime(registry))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sizes = {p.name: p.stat().st_size for p in sorted(directory.iterdir())}
    shutil.rmtree(directory)
    return Measure(turns, cpu, wall, sizes)


def verdict(ratio: float, target: float) -> str:
    return "PASS" if ratio <= target else "FAIL"


def row(label: str, small: Measure, large: Measure) -> str:
    """One policy: ms/turn at both lengths and the ratio, bytes/turn and the ratio, verdicts."""
    time_ratio = large.ms_per_turn / small.ms_per_turn
    bytes_ratio = large.bytes_per_turn / small.bytes_per_turn
    return (
        f"{label:28}{small.ms_per_turn:>8.2f}{large.ms_per_turn:>9.2f}{time_ratio:>7.2f}x {verdict(time_ratio, TIME_TARGET)}"
        f"{small.wall_ms_per_turn:>9.2f}{large.wall_ms_per_turn:>9.2f}"
        f"{small.bytes_per_turn:>10,.0f}{large.bytes_per_turn:>10,.0f}{bytes_ratio:>7.2f}x {verdict(bytes_ratio, BYTES_TARGET)}"
    )


def files(small: Measure, large: Measure) -> list[str]:
    """Bytes per turn of each results file at both lengths, with ratios."""
    rows = []
    for name in sorted(set(small.sizes) | set(large.sizes)):
        a, b = small.sizes.get(name, 0) / small.turns, large.sizes.get(name, 0) / large.turns
        rows.append(f"    {name:24}{a:>10,.0f} B/turn{b:>10,.0f} B/turn{b / a if a else float('nan'):>7.2f}x")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs=2, default=[1000, 10000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--policy", action="append", default=[], help="policy spec or set (repeatable; default: all)")
    parser.add_argument("--live", action="store_true", help="the model answers every turn (an answer call per turn)")
    parser.add_argument("--files", action="store_true", help="also print bytes per turn file by file")
    parser.add_argument(
        "--probe-every", type=int, metavar="N", help="a probe every N turns (default: the script's ages)"
    )
    parser.add_argument("--correct-every", type=int, metavar="N", help="a correction of the version every N turns")
    args = parser.parse_args()
    registry = PolicyRegistry.installed()
    specs = registry.parse_all(args.policy or ["deployed"])  # the seed's comparison, then the deployed set
    TokenCounter()  # load the encoding once, outside every timing
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="results-growth-") as tmp:
        folder = Path(tmp)
        # A 10,000-turn chronology holds more keys and values than the loader admits from a
        # hand-written file (harness.chronology.safe_yaml.MAX_VALUES): lifted here, for the generated file only.
        safe_yaml.MAX_VALUES = max(safe_yaml.MAX_VALUES, 6 * max(args.turns))
        chronologies = [
            load_chronology(write_chronology(folder, n, args.probe_every, args.correct_every)) for n in args.turns
        ]
        small_n, large_n = args.turns
        probes = f", a probe every {args.probe_every} turns" if args.probe_every else ""
        probes += f", a correction every {args.correct_every} turns" if args.correct_every else ""
        print(
            f"replay per turn, {small_n:,} and {large_n:,} turns, reference model{', live' if args.live else ''}{probes}"
        )
        print(f"targets: time per turn within {TIME_TARGET}x, bytes per turn within {BYTES_TARGET}x (long / short)")
        print(f"{'policy':28}{'CPU ms/turn':>17}{'ratio':>7}{'':5}{'wall ms/turn':>18}{'bytes/turn':>20}{'ratio':>7}")
        failed = []
        for spec in specs:
            small, large = (measure(folder, c, spec, registry, args.live) for c in chronologies)
            print(row(spec.label, small, large), flush=True)
            if args.files:
                print("\n".join(files(small, large)))
            time_ratio = large.ms_per_turn / small.ms_per_turn
            bytes_ratio = large.bytes_per_turn / small.bytes_per_turn
            if time_ratio > TIME_TARGET or bytes_ratio > BYTES_TARGET:
                failed.append(spec.label)
    print(f"benchmark wall time: {time.perf_counter() - started:.0f} s")
    print(f"FAIL: {', '.join(failed)}" if failed else "PASS: every policy within both targets")


if __name__ == "__main__":
    main()
