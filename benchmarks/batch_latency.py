"""Wall time of a live batch against a loopback server with fixed latency, vs the critical path.

The lower bound for a batch is max(longest conversation, total calls / concurrency) × latency:
turns within a conversation are sequential, conversations run in parallel up to the bound.
A ratio near 1.0 means the harness adds little beyond the model's own latency.

    python benchmarks/batch_latency.py [--latency 0.05] [--repetitions 2] [--concurrency 1 2 4 8]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.loopback, the scripted server

from harness.batch import BatchPlan, ModelOptions, run_batch  # noqa: E402
from harness.loading import load_chronologies  # noqa: E402
from harness.models.catalog import model_factory  # noqa: E402
from harness.policy import PolicyRegistry  # noqa: E402
from harness.records import read_records  # noqa: E402
from tests.loopback import Reply, ScriptedServer, chat_completion  # noqa: E402


def reply(latency: float):
    def answer(request) -> Reply:
        if "response_format" in (request.body or {}):
            return Reply(body=chat_completion('{"facts": []}'), delay=latency)
        return Reply(body=chat_completion("No."), delay=latency)

    return answer


def one_batch(server: ScriptedServer, concurrency: int, repetitions: int, latency: float) -> tuple[float, float]:
    registry = PolicyRegistry.installed()
    chronologies = load_chronologies([ROOT / "chronologies" / "memory-drift.yaml"])
    options = ModelOptions(base_url=server.base_url)
    plan = BatchPlan(
        chronologies, registry.default_specs(), ["openai:bench"], repetitions, concurrency, live=True, options=options
    )
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        run_batch(plan, Path(out) / "b", "b", registry, factory=model_factory(options, 0))
        wall = time.perf_counter() - started
        calls = {}
        for record in read_records(Path(out) / "b" / "calls.jsonl"):
            key = (record["policy"], record["repetition"])
            calls[key] = calls.get(key, 0) + 1
    bound = max(max(calls.values()), sum(calls.values()) / concurrency) * latency
    return wall, bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    print(
        f"latency {args.latency * 1000:.0f} ms per request, memory-drift × 7 policies × {args.repetitions} repetitions"
    )
    print(f"{'concurrency':>11}  {'wall s':>7}  {'critical path s':>15}  {'ratio':>5}")
    with ScriptedServer() as server:
        server.default = reply(args.latency)
        for concurrency in args.concurrency:
            wall, bound = one_batch(server, concurrency, args.repetitions, args.latency)
            print(f"{concurrency:>11}  {wall:>7.2f}  {bound:>15.2f}  {wall / bound:>5.2f}")
        print(f"max requests in flight seen by the server: {server.max_in_flight}")


if __name__ == "__main__":
    main()
