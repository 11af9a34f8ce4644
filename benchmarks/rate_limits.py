"""`--max-rpm` honoured whatever `--concurrency`: the most requests an endpoint received in any minute.

A real `harness run` (a child process) against a loopback server that answers every request
after a fixed latency and notes when each one arrived. The batch is memory-drift under
full-history, `--answer-every-turn`, `--repetitions 15`: 135 answer calls. Run twice at
`--concurrency 8`: with `--max-rpm 60`, then with no limit for contrast. Prints, for each, the
requests, the wall time, the most requests that arrived within any 60 seconds (wherever that
span starts; counted at the server, which is what a provider counts) and its ratio to the limit,
and what calls.jsonl says of the waits. The limited run takes a little over two minutes (135
requests at 60 per minute: three windows).

    python benchmarks/rate_limits.py [--latency 0.2] [--rpm 60] [--concurrency 8] [--repetitions 15]
"""

from __future__ import annotations

import argparse
import bisect
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.loopback, the scripted server

from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion  # noqa: E402

MINUTE = 60.0


def timed_server(latency: float) -> tuple[ScriptedServer, list[float]]:
    """A started server answering each request after `latency` seconds, and the list it appends
    each request's arrival time to (monotonic seconds, taken as the request arrives)."""
    server, arrivals, lock = ScriptedServer(), [], threading.Lock()

    def answer(request: Recorded) -> Reply:
        with lock:
            arrivals.append(time.monotonic())
        return Reply(body=chat_completion("ok", usage={"prompt_tokens": 50, "completion_tokens": 1}), delay=latency)

    server.default = answer
    return server.start(), arrivals


def most_in_a_minute(arrivals: list[float]) -> int:
    """The most arrivals within any span of 60 seconds (half-open: [t, t + 60)), wherever it starts."""
    times = sorted(arrivals)
    return max((bisect.bisect_left(times, t + MINUTE) - i for i, t in enumerate(times)), default=0)


def run(out: Path, run_id: str, url: str, concurrency: int, repetitions: int, *limit: str) -> float:
    """Seconds one `harness run` takes; it must succeed."""
    args = [
        sys.executable,
        "-m",
        "harness",
        "run",
        str(ROOT / "chronologies" / "memory-drift.yaml"),
        *("--policy", "full-history", "--model", "openai:bench", "--base-url", url),
        *("--answer-every-turn", "--no-cache", "--no-charts", "--quiet"),
        *("--repetitions", str(repetitions), "--concurrency", str(concurrency), *limit),
        *("--out", str(out), "--reports", str(out / "reports"), "--run-id", run_id),
    ]
    started = time.perf_counter()
    subprocess.run(args, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def waits(out: Path, run_id: str) -> tuple[int, float]:
    """The waits calls.jsonl records for the run: how many, and seconds in all."""
    calls = [json.loads(line) for line in (out / run_id / "calls.jsonl").read_text().splitlines()]
    return sum(c["waits"] or 0 for c in calls), sum(c["waited_ms"] or 0 for c in calls) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per request")
    parser.add_argument("--rpm", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repetitions", type=int, default=15, help="of memory-drift's 9 turns: 15 make 135 requests")
    args = parser.parse_args()
    exceeded = False
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        for run_id, limit in (("limited", ("--max-rpm", str(args.rpm))), ("unlimited", ())):
            server, arrivals = timed_server(args.latency)
            try:
                wall = run(out, run_id, server.base_url, args.concurrency, args.repetitions, *limit)
            finally:
                server.stop()
            most = most_in_a_minute(arrivals)
            count, seconds = waits(out, run_id)
            said = f"--max-rpm {args.rpm}" if limit else "no limit"
            print(
                f"{said}, --concurrency {args.concurrency}, {args.latency:g} s per request: {len(arrivals)} requests "
                f"in {wall:.1f} s; most in any 60 s: {most} ({most / args.rpm:.2f}× {args.rpm}); "
                f"calls.jsonl: waited {count} times, {seconds:.1f} s in all"
            )
            exceeded |= bool(limit) and most > args.rpm
    if exceeded:
        sys.exit(f"the limited run sent more than {args.rpm} requests within a minute")


if __name__ == "__main__":
    main()
