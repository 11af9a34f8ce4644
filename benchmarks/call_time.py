"""Where a run's time went: its calls by kind, from its results alone.

    python benchmarks/call_time.py results/<run-id>

Per call kind (answer, summarizer, writer, judge): calls, how many were served from the cache or
shared in flight (no request of their own), failed calls, calls cut by their token cap
(`finish_reason: length`), the time spent in live calls (the sum of their latencies; with one
slot the server answers one at a time, so this is the run's model time), and the
provider-reported prompt and completion tokens of the live calls (with how many reported).
Then the run's wall time from its manifest. Used to measure the `--model local` run of
benchmarks/README.md; it reads any run's results.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.base.counts import recorded_count
from harness.results.tables import load_results


def seconds_between(start: str, end: str) -> float:
    parse = "%Y-%m-%dT%H:%M:%SZ"
    return (datetime.strptime(end, parse) - datetime.strptime(start, parse)).total_seconds()


def valid_counts(values: Any) -> list[int | None]:
    """Each provider-reported count as the report judges it (`recorded_count`): None unless valid."""
    return [recorded_count(v) for v in values.tolist()]


def reported_sum(values: Any) -> str:
    """The sum of provider-reported counts when every call reported a valid one, as the report
    sums them; "unknown" otherwise (a partial sum would pass for a total)."""
    counts = valid_counts(values)
    return str(sum(c for c in counts if c is not None)) if counts and None not in counts else "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    args = parser.parse_args()
    results = load_results(args.results)
    calls, manifest = results.calls, results.manifest
    # Token columns: as the provider reported them, summed over the live calls when every one
    # reported a valid count; "unknown" otherwise (never 0, never a partial sum).
    header = (
        f"{'kind':<11}{'calls':>6}{'cached':>7}{'failed':>7}{'cut':>5}{'live s':>9}"
        f"{'reported prompt':>16}{'reported compl.':>16}"
    )
    print(header)
    for kind, rows in calls.groupby("kind", sort=False):
        live = rows[~rows.cached.astype(bool)]
        prompt, completion = (
            sum(c is not None for c in valid_counts(live[f"reported_{part}_tokens"]))
            for part in ("prompt", "completion")
        )
        print(
            f"{kind:<11}{len(rows):>6}{int(rows.cached.sum()):>7}{int(rows.error.notna().sum()):>7}"
            f"{int((rows.finish_reason == 'length').sum()):>5}{live.latency_ms.sum() / 1000:>9.1f}"
            f"{reported_sum(live.reported_prompt_tokens):>16}{reported_sum(live.reported_completion_tokens):>16}"
            f"  ({prompt} and {completion} of {len(live)} live calls reported a valid prompt and completion count)"
        )
    live = calls[~calls.cached.astype(bool)]
    print(f"all: {len(calls)} calls, {len(live)} live, {live.latency_ms.sum() / 1000:.1f} s in live calls")
    if manifest.ended_at:
        print(
            f"wall time (manifest started_at to ended_at, whole seconds): {seconds_between(manifest.started_at, manifest.ended_at):.0f} s"
        )


if __name__ == "__main__":
    main()
