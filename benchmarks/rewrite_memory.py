"""The plan-order rewrite's memory as a batch grows (`harness.results.order.rewrite_records`,
what a concurrent or resumed batch does when it ends): its peak of Python allocations
(tracemalloc) over each of two batch sizes, with the records written one conversation at a time
(`--concurrency 1`) and, the worst case, two conversations' records alternating one by one.

The records are `results_store_sqlite.py`'s synthetic ones (the shipped library's proportions,
the real `ResultsWriter`), so this measures the rewrite alone at sizes that take seconds.

    python benchmarks/rewrite_memory.py                    # 20,000 and 200,000 probe rows
    python benchmarks/rewrite_memory.py --rows 50000 500000

No timed assertion: it prints the peaks, the bytes per record and the ratio large / small.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import results_store_sqlite as store  # noqa: E402  (the generator beside this script)

from harness.results.order import rewrite_records  # noqa: E402


def write(folder: Path, keys: list[store.Key], interleaved: bool) -> None:
    """The batch's records, one conversation after another or two conversations' alternating."""
    from harness.results.writer import ResultsWriter

    with ResultsWriter(folder) as writer:
        act = {"call": writer.call, "probe": writer.probe, "turn": writer.turn}
        pairs = itertools.zip_longest(keys[0::2], keys[1::2]) if interleaved else ((k,) for k in keys)
        for n, pair in enumerate(pairs):
            made = [store.conversation(key, n) for key in pair if key]
            streams = [store.records_in_writing_order(*m[:3]) for m in made]
            for kind, record in itertools.chain.from_iterable(itertools.zip_longest(*streams, fillvalue=(None, None))):
                if kind:
                    act[kind](record)
            for m in made:
                writer.finished(m[3])


def measured(rows: int, interleaved: bool) -> dict[str, float]:
    """Write a batch of `rows` probe rows, then rewrite it in plan order under tracemalloc: the
    peak above what was allocated before, and the records rewritten."""
    keys = store.plan(rows)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        write(folder, keys, interleaved)
        records = sum(
            sum(1 for _ in (folder / name).open("rb")) - name.endswith(".csv")
            for name in ("probes.csv", "turns.csv", "calls.jsonl")
        )
        order = {k: n for n, k in enumerate(keys)}
        tracemalloc.start()
        before, _ = tracemalloc.get_traced_memory()
        started = time.process_time()
        rewrite_records(folder, order)
        seconds = time.process_time() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return {"records": records, "peak_mb": (peak - before) / 1e6, "cpu_s": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs=2, default=[20_000, 200_000], metavar=("SMALL", "LARGE"))
    args = parser.parse_args()
    for interleaved in (False, True):
        small, large = (measured(rows, interleaved) for rows in args.rows)
        for rows, m in zip(args.rows, (small, large), strict=True):
            print(
                f"{'interleaved' if interleaved else 'one at a time'}, {rows:,} probe rows ({m['records']:,} records): peak {m['peak_mb']:.1f} MB "
                f"({m['peak_mb'] * 1e6 / m['records']:.0f} bytes per record), {m['cpu_s']:.1f} CPU s under tracemalloc"
            )
        print(
            f"  large / small: peak {large['peak_mb'] / small['peak_mb']:.2f}x for {large['records'] / small['records']:.1f}x the records"
        )


if __name__ == "__main__":
    main()
