"""Results on disk and replay time per turn, at two conversation lengths, with their ratios.

Generates two long chronologies with scripts/long_conversation.py (in a temporary folder, never
committed), replays each under the chosen policies with the `reference` model (no report), and
prints bytes on disk per turn, file by file, and replay time per turn. Linear results give a
bytes-per-turn ratio near 1 however far apart the two lengths are.

    python benchmarks/results_growth.py                      # 300 and 3,000 turns, every policy
    python benchmarks/results_growth.py --turns 1000 10000 --policy full-history

The default sizes run in about a minute and a half on 2 shared cores. 1,000 and 10,000 turns
take far longer: full history alone took 13.5 minutes here, because the replay itself (not the
results) still does work proportional to the whole view at every turn (token counts, retained
sizes, the checks' trace), so its time per turn grows with the length while bytes per turn stay flat.
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from harness.batch import BatchPlan, run_batch
from harness.loading import load_chronology
from harness.policy import PolicyRegistry
from harness.tokens import TokenCounter

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Measure:
    """One replay: its length, its wall time and the bytes of each results file."""

    turns: int
    seconds: float
    sizes: dict[str, int]

    @property
    def bytes_per_turn(self) -> float:
        return sum(self.sizes.values()) / self.turns

    @property
    def ms_per_turn(self) -> float:
        return self.seconds * 1000 / self.turns


def generator() -> ModuleType:
    """scripts/long_conversation.py, loaded as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("long_conversation", ROOT / "scripts" / "long_conversation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_chronology(folder: Path, turns: int) -> Path:
    """A long conversation of `turns` turns, as the script writes it for its own length."""
    script = generator()
    script.TURNS = turns  # render() reads the length from this module constant
    path = folder / f"long-{turns}.yaml"
    path.write_text(script.render(), encoding="utf-8", newline="\n")
    return path


def measure(folder: Path, turns: int, policies: list[str], live: bool) -> Measure:
    registry = PolicyRegistry.installed()
    specs = [registry.parse(p) for p in policies] or registry.default_specs()
    plan = BatchPlan([load_chronology(write_chronology(folder, turns))], specs, ["reference"], live=live)
    directory = folder / f"results-{turns}"
    started = time.perf_counter()
    run_batch(plan, directory, f"growth-{turns}", registry)
    seconds = time.perf_counter() - started
    return Measure(turns, seconds, {p.name: p.stat().st_size for p in sorted(directory.iterdir())})


def table(small: Measure, large: Measure) -> list[str]:
    """Bytes per turn of each file and in total, and time per turn, at both sizes, with ratios."""
    rows = [f"{'':22}{small.turns:>12,} turns{large.turns:>12,} turns{'ratio':>9}"]
    for name in sorted(set(small.sizes) | set(large.sizes)):
        a, b = small.sizes.get(name, 0) / small.turns, large.sizes.get(name, 0) / large.turns
        rows.append(f"{name:22}{a:>12,.0f} B/turn{b:>10,.0f} B/turn{b / a if a else float('nan'):>8.2f}x")
    a, b = small.bytes_per_turn, large.bytes_per_turn
    rows.append(f"{'all files':22}{a:>12,.0f} B/turn{b:>10,.0f} B/turn{b / a:>8.2f}x")
    a, b = small.ms_per_turn, large.ms_per_turn
    rows.append(f"{'replay time':22}{a:>12.2f} ms/turn{b:>9.2f} ms/turn{b / a:>8.2f}x")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs=2, default=[300, 3000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--policy", action="append", default=[], help="policy spec (repeatable; default: all)")
    parser.add_argument("--live", action="store_true", help="the model answers every turn (an answer call per turn)")
    args = parser.parse_args()
    TokenCounter()  # load the encoding once, outside both timings
    with tempfile.TemporaryDirectory(prefix="results-growth-") as tmp:
        small, large = (measure(Path(tmp), n, args.policy, args.live) for n in args.turns)
        policies = ", ".join(args.policy) or "every installed policy"
        print(f"results on disk per turn, {policies}, reference model{', live' if args.live else ''}:")
        print("\n".join(table(small, large)))
        print(f"wall time: {small.seconds:.1f} s and {large.seconds:.1f} s")


if __name__ == "__main__":
    main()
