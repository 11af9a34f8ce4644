"""Bounds on what an import builds, as the input grows (issue 37): the time to name LongMemEval
sessions whose ids repeat, and the peak memory of reading a file without line breaks.

Prints, within one run: the time to name N and 10·N repeats of one session id (linear: about 10×;
the naming that retried every suffix against every name took 8.4× for 2×, cubic), and the peak
memory (tracemalloc) of reading a file with no line break of SMALL and LARGE MB until it is
refused (flat: about 1.0×, the per-record bound, where it was twice the file's size).

    python benchmarks/import_bounds.py [--repeats 2000] [--mb 64 256]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path

from harness.importing.longmemeval import _session_names
from harness.importing.source import MAX_RECORD_CHARS, ImportRefused, json_records, read_source


def naming_seconds(repeats: int) -> float:
    started = time.perf_counter()
    names = _session_names(["s"] * repeats)
    assert len(set(names)) == repeats
    return time.perf_counter() - started


def refusal_peak(folder: Path, megabytes: int) -> int:
    """Peak bytes traced while a file of `megabytes` MB without a line break is read to its refusal."""
    path = folder / f"line-{megabytes}.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write('{"messages": [{"role": "user", "content": "')
        for _ in range(megabytes):
            handle.write("x" * (1 << 20))
    source = read_source(path)
    tracemalloc.start()
    try:
        list(json_records(source))
        raise SystemExit(f"{path}: not refused")
    except ImportRefused:
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--mb", type=int, nargs=2, default=[64, 256], metavar=("SMALL", "LARGE"))
    args = parser.parse_args()
    small, large = naming_seconds(args.repeats), naming_seconds(10 * args.repeats)
    print(
        f"session names, {args.repeats:,} → {10 * args.repeats:,} repeats of one id: "
        f"{small * 1000:.1f} → {large * 1000:.1f} ms, {large / small:.1f}× (linear: about 10×)"
    )
    with tempfile.TemporaryDirectory() as folder:
        peaks = [refusal_peak(Path(folder), mb) for mb in args.mb]
    print(
        f"a line without a break, {args.mb[0]} → {args.mb[1]} MB, refused at {MAX_RECORD_CHARS:,} characters: "
        f"peak {peaks[0] / 2**20:.0f} → {peaks[1] / 2**20:.0f} MiB, {peaks[1] / peaks[0]:.2f}× (flat: about 1.0×)"
    )


if __name__ == "__main__":
    main()
