"""Wall time of a live batch against a loopback server with fixed latency, vs the critical path;
and the harness's time per call at 0 ms latency beside the bare HTTP round trip.

The critical path of a batch is a lower bound on its wall time: turns within a conversation
are sequential (so no batch ends before its longest conversation), and at most `concurrency`
calls are in flight (so none ends before total calls / concurrency rounds). Both counted in
calls, times the latency:

    critical path = max(calls of the longest conversation, total calls / concurrency) × latency

The calls are counted from the run's own `calls.jsonl` (answers and a policy's extra calls
alike; scripted turns make none). The batch phase is `run_batch` (manifest, conversations, the
plan-order rewrite), with the tokenizer loaded beforehand. A ratio near 1.0 means the harness
adds little beyond the model's own latency; the target is within 1.10 at 1, 16 and 64.

Per-call overhead: the same batch at 0 ms latency and `--concurrency 1`, wall time over calls
made, beside N requests sent one after the other by the same client (the `openai` package with
the harness's HTTP client settings, through `OpenAIModel.complete`) and by a bare `httpx` client.

The server runs in a process of its own (`benchmarks/loopback_process.py`), with keep-alive
connections, so its work is not counted as the harness's. This machine is shared: every figure is the median of `--runs` runs (3 by default); the ratios
are computed within each run from its own figures.

    python benchmarks/batch_latency.py [--latency 0.05] [--repetitions 10] [--concurrency 1 16 64] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.loopback, the scripted server
sys.path.insert(0, str(ROOT / "benchmarks"))

from loopback_process import LoopbackProcess  # noqa: E402

from harness.batch import BatchPlan, ModelOptions, run_batch  # noqa: E402
from harness.chronology import UserTurn  # noqa: E402
from harness.loading import load_chronologies  # noqa: E402
from harness.messages import Message  # noqa: E402
from harness.models import CallRequest  # noqa: E402
from harness.models.catalog import model_factory  # noqa: E402
from harness.models.openai import OpenAIModel  # noqa: E402
from harness.policy import PolicyRegistry  # noqa: E402
from harness.records import identity_key, read_records  # noqa: E402
from harness.tokens import TokenCounter  # noqa: E402

CHRONOLOGY = ROOT / "chronologies" / "memory-drift.yaml"


def one_batch(server: LoopbackProcess, concurrency: int, repetitions: int, latency: float) -> tuple[float, float, int]:
    """(wall time of the batch phase, critical path, calls made)."""
    registry = PolicyRegistry.installed()
    options = ModelOptions(base_url=server.base_url)
    plan = BatchPlan(
        load_chronologies([CHRONOLOGY]),
        registry.default_specs(),
        ["openai:bench"],
        repetitions,
        concurrency,
        live=True,
        options=options,
    )
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        run_batch(plan, Path(out) / "b", "b", registry, factory=model_factory(options, 0))
        wall = time.perf_counter() - started
        calls = Counter(identity_key(r) for r in read_records(Path(out) / "b" / "calls.jsonl"))
    total = sum(calls.values())
    return wall, max(max(calls.values()), total / concurrency) * latency, total


def round_trips(server: LoopbackProcess, n: int) -> tuple[float, float]:
    """Seconds per request, one after the other: through `OpenAIModel.complete` (the harness's
    client: openai package, its HTTP client, retries, deadline) and through a bare httpx client."""
    import httpx2 as httpx  # the transport the openai package uses

    turn = UserTurn(1, 1, "Hello?", "main")
    request = CallRequest("answer", (Message("user", "Hello?", "current", 1, "main"),), turn)
    with OpenAIModel("bench", base_url=server.base_url) as model:
        model.complete(request)  # connect once, outside the timing
        started = time.perf_counter()
        for _ in range(n):
            model.complete(request)
        client_seconds = (time.perf_counter() - started) / n
    body = {"model": "bench", "messages": [{"role": "user", "content": "Hello?"}]}
    with httpx.Client(base_url=server.base_url, trust_env=False) as client:
        client.post("/chat/completions", json=body)
        started = time.perf_counter()
        for _ in range(n):
            client.post("/chat/completions", json=body).raise_for_status()
        bare_seconds = (time.perf_counter() - started) / n
    return client_seconds, bare_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--repetitions", type=int, default=10, help="of memory-drift × every default policy")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is shown")
    parser.add_argument("--requests", type=int, default=300, help="requests timed for the round trip")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    TokenCounter()  # load the encoding once, outside every timing
    with LoopbackProcess(args.latency) as server:
        print(
            f"latency {args.latency * 1000:.0f} ms per request; memory-drift × 7 policies × {args.repetitions} "
            f"repetitions; medians of {args.runs} runs (2 shared cores)"
        )
        print(f"{'concurrency':>11}  {'calls':>5}  {'wall s':>7}  {'critical path s':>15}  {'ratio':>5}  (each run)")
        for concurrency in args.concurrency:
            runs = [one_batch(server, concurrency, args.repetitions, args.latency) for _ in range(args.runs)]
            ratios = [wall / bound for wall, bound, _ in runs]
            wall, bound = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
            each = " ".join(f"{r:.2f}" for r in ratios)
            print(
                f"{concurrency:>11}  {runs[0][2]:>5}  {wall:>7.2f}  {bound:>15.2f}  "
                f"{statistics.median(ratios):>5.2f}  ({each})"
            )
            print(f"{'':>11}  most requests in flight at once, seen by the server: {server.stats()[1]}")

        server.set_latency(0.0)
        per_call, client, bare = [], [], []
        for _ in range(args.runs):
            wall, _, calls = one_batch(server, 1, args.repetitions, 0.0)
            per_call.append(wall / calls)
            c, b = round_trips(server, args.requests)
            client.append(c)
            bare.append(b)
        harness_ms, client_ms, bare_ms = (statistics.median(v) * 1000 for v in (per_call, client, bare))
        print("\nat 0 ms latency, one call at a time (medians):")
        print(f"  harness, per call (batch wall / calls): {harness_ms:6.2f} ms")
        print(f"  OpenAIModel.complete, per request:      {client_ms:6.2f} ms")
        print(f"  bare httpx POST, per request:           {bare_ms:6.2f} ms")
        print(
            f"  harness per call / client round trip: {harness_ms / client_ms:.2f}x; "
            f"harness's own work per call: {harness_ms - client_ms:.2f} ms"
        )


if __name__ == "__main__":
    main()
