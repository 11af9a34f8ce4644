"""Wall time of a live batch against a loopback server with fixed latency, vs the critical path;
and the harness's time per call at 0 ms latency beside the bare HTTP round trip.

The critical path of a batch is a lower bound on its wall time: turns within a conversation
are sequential (so no batch ends before its longest conversation), and at most `concurrency`
calls are in flight (so none ends before total calls / concurrency rounds). Both counted in
calls, times the latency:

    critical path = max(calls of the longest conversation, total calls / concurrency) × latency

Conversations cannot be split, so the `schedule` column gives a schedule that exists: the
conversations (their calls as made) started longest first, each on the slot free first; for
conversations of equal length no schedule is shorter. The calls are counted from the run's own `calls.jsonl` (answers and a policy's extra calls
alike; scripted turns make none). The batch phase is `run_batch` (manifest, conversations, the
plan-order rewrite), with the tokenizer loaded beforehand. A ratio near 1.0 means the harness
adds little beyond the model's own latency; the target is within 1.10 at 1, 16 and 64.

Per-call overhead: the same batch at 0 ms latency and `--concurrency 1`, wall time over calls
made, beside N requests sent one after the other by the same client (the `openai` package with
the harness's HTTP client settings, through `OpenAIModel.complete`) and by a bare `httpx` client.

The server runs in a process of its own (`benchmarks/loopback_process.py`), with keep-alive
connections, so its work is not counted as the harness's. The harness's own time per call also bounds the wall time on this machine, whatever the
latency: the conversations' Python work shares one interpreter, so a batch takes at least
calls × (time per call at 0 ms). That `CPU floor` is printed beside the critical path: at 50 ms
and `--concurrency 64` it is the larger (64 calls in flight per 50 ms leave 0.8 ms per call).

The `bare floor` is what this machine allows any Python client: the same calls of each
conversation (counted from the run's records), one after the other within a conversation,
`concurrency` conversations at once, longest first, sent as plain httpx POSTs (one client per
thread, a one-message body) with no harness work, against the same server, right after each
batch. Both ratios are printed, wall / critical path (the target) and wall / bare floor (the
harness's own share); the bare floor / critical path says how much of the miss is the machine's.

Which reference: the critical path is a lower bound no schedule may reach (at 16, the 70
whole conversations of 10 repetitions, 9 to 18 calls each, on 16 slots need 63 calls' time, not
56); the longest-first schedule is a schedule that exists and, here, the best one. Both ratios
are printed: `ratio` (wall / critical path, the issue's target) and `wall / schedule`. Above a
concurrency of 1 the batch has `--concurrent-repetitions` (40 by default: 280 conversations,
on which the longest-first schedule reaches the critical path at 16), so that the ratio there
measures the harness, not the batch's packing; at 1, `--repetitions` (10).

The `order` column is the order in which a free slot starts the waiting conversations (`--order`,
each a row): `learned` (`harness.run.dispatch`: most expected calls first, learned from the calls
as they start), `planned` (most planned calls first, `harness.run.events.planned_calls`, fixed
before the batch starts) or `plan` (plan order). `--no-bare` leaves the bare floor out (its
columns show `-`): it takes as long as the batch, and an A/B of two variants needs only their walls.
With `--chronologies library` the table's batches run every shipped chronology but
long-conversation (2 to 11 turns each) instead of memory-drift alone, whose conversations differ
only by their policy's own calls (the time per call at 0 ms is still memory-drift's).

This machine is shared: every figure is the median of `--runs` runs (3 by default); the runs of
the variants of one concurrency (the orders) alternate, so that a change of load falls on
all of them; the ratios are computed within each run from its own figures, and the load average
(1 minute) is printed before and after each concurrency. One-time costs of a process (loading the
tokenizer, reading the installed package versions) are paid before the timings, as a CLI run
pays them once before its batch.

    python benchmarks/batch_latency.py [--latency 0.05] [--repetitions 10] [--concurrent-repetitions 40]
        [--concurrency 1 16 64] [--runs 3] [--order learned plan planned] [--no-bare]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.loopback, the scripted server
sys.path.insert(0, str(ROOT / "benchmarks"))

from loopback_process import LoopbackProcess  # noqa: E402

from harness.base.identity import RunKey  # noqa: E402
from harness.base.messages import Message  # noqa: E402
from harness.chronology import UserTurn  # noqa: E402
from harness.chronology.loading import load_chronologies  # noqa: E402
from harness.models import CallRequest  # noqa: E402
from harness.models.catalog import model_factory  # noqa: E402
from harness.models.openai import OpenAIModel  # noqa: E402
from harness.models.options import ModelOptions  # noqa: E402
from harness.policy import PolicyRegistry  # noqa: E402
from harness.policy.tokens import TokenCounter  # noqa: E402
from harness.results.reader import read_records  # noqa: E402
from harness.run import batch  # noqa: E402
from harness.run.batch import Runtime, run_batch  # noqa: E402
from harness.run.conversation import Conversation  # noqa: E402
from harness.run.dispatch import Dispatch  # noqa: E402
from harness.run.manifest import package_versions  # noqa: E402
from harness.run.spec import RunSpec  # noqa: E402

CHRONOLOGY = ROOT / "chronologies" / "memory-drift.yaml"
# `--chronologies library`: the shipped chronologies of 2 to 11 turns (long-conversation's 201
# would be the whole critical path), a batch whose conversations differ in length.
LIBRARY = sorted(p for p in (ROOT / "chronologies").glob("*.yaml") if p.stem != "long-conversation")


def scheduled(calls: list[int], concurrency: int) -> int:
    """Calls on the busiest of `concurrency` slots when conversations of `calls` each are started
    longest first, each on the slot free first: a schedule that exists, for conversations cannot be
    split (the critical path assumes they can: 70 equal conversations on 16 slots take 5 rounds,
    not 70 / 16 = 4.4)."""
    slots = [0] * concurrency
    for n in sorted(calls, reverse=True):
        slots[slots.index(min(slots))] += n
    return max(slots)


class PlanOrder(Dispatch):
    """`--order plan`: the conversations started in plan order."""

    @classmethod
    def of(cls, todo: Sequence[Conversation], planned: Sequence[int]) -> Dispatch:
        return Dispatch.in_order(todo)


class PlannedOrder(Dispatch):
    """`--order planned`: most planned calls first (plan order among equals), fixed before the start."""

    @classmethod
    def of(cls, todo: Sequence[Conversation], planned: Sequence[int]) -> Dispatch:
        return Dispatch(todo, planned, [None] * len(todo), learns=False)


ORDERS = {"learned": Dispatch, "plan": PlanOrder, "planned": PlannedOrder}


@contextmanager
def start_order(name: str) -> Iterator[None]:
    """The batches run meanwhile start their conversations in the order `name` (`ORDERS`): the
    batch's `Dispatch` (which `harness.run.batch.start_order` asks) is replaced meanwhile."""
    assert batch.Dispatch is Dispatch, "harness.run.batch no longer orders its conversations by Dispatch.of"
    batch.Dispatch = ORDERS[name]  # type: ignore[misc]
    try:
        yield
    finally:
        batch.Dispatch = Dispatch  # type: ignore[misc]


def timed_batch(
    base_url: str,
    concurrency: int,
    repetitions: int,
    directory: Path,
    chronologies: Sequence[Path] = (CHRONOLOGY,),
) -> float:
    """Seconds of `run_batch` for `chronologies` (memory-drift) × every default policy ×
    `repetitions`, live against `base_url`, written into `directory` (the batch
    benchmarks/inspect_compare.py sends through Inspect too, so both send the same requests)."""
    registry = PolicyRegistry.installed()
    options = ModelOptions(base_url=base_url)
    plan = RunSpec(
        load_chronologies(chronologies),
        registry.default_specs(),
        ["openai:bench"],
        repetitions,
        concurrency,
        live=True,
        options=options,
    )
    started = time.perf_counter()
    run_batch(plan, directory, directory.name, Runtime(registry, factory=model_factory(options, 0)))
    return time.perf_counter() - started


def one_batch(
    server: LoopbackProcess,
    concurrency: int,
    repetitions: int,
    latency: float,
    chronologies: Sequence[Path] = (CHRONOLOGY,),
) -> tuple[float, float, int, float, list[int]]:
    """(wall time of the batch phase, critical path, calls made, longest-first schedule, calls of
    each conversation)."""
    with tempfile.TemporaryDirectory() as out:
        wall = timed_batch(server.base_url, concurrency, repetitions, Path(out) / "b", chronologies)
        calls = Counter(RunKey.of(r) for r in read_records(Path(out) / "b" / "calls.jsonl"))
    total = sum(calls.values())
    bound = max(max(calls.values()), total / concurrency) * latency
    return wall, bound, total, scheduled(list(calls.values()), concurrency) * latency, list(calls.values())


def bare_floor(server: LoopbackProcess, calls: list[int], concurrency: int) -> float:
    """Seconds to make the same calls with the same dependency structure with no harness work: a
    conversation of n calls is n POSTs one after the other, `concurrency` conversations at once,
    longest first, on threads with a plain httpx client each (one pool shared by all looks over
    every connection for each request) and a one-message body. What this machine allows a Python
    client at that concurrency, against the same server."""
    import httpx2 as httpx  # the transport the openai package uses

    body = {"model": "bench", "messages": [{"role": "user", "content": "Hello?"}]}
    own, opened, everyone = threading.local(), [], threading.Barrier(concurrency)

    def conversation(n: int) -> None:
        for _ in range(n):
            own.client.post("/chat/completions", json=body).raise_for_status()

    def connect() -> None:
        own.client = httpx.Client(base_url=server.base_url, trust_env=False)
        opened.append(own.client)
        conversation(1)
        everyone.wait()  # so that each of the `concurrency` threads connects once

    with ThreadPoolExecutor(concurrency) as pool:
        for future in [pool.submit(connect) for _ in range(concurrency)]:  # outside the timing
            future.result()
        started = time.perf_counter()
        list(pool.map(conversation, sorted(calls, reverse=True)))
        seconds = time.perf_counter() - started
    for client in opened:
        client.close()
    return seconds


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
    parser.add_argument(
        "--repetitions", type=int, default=10, help="of memory-drift × every default policy, at concurrency 1"
    )
    parser.add_argument(
        "--concurrent-repetitions", type=int, default=40, help="the same, at a concurrency above 1 (see above)"
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is shown")
    parser.add_argument("--requests", type=int, default=300, help="requests timed for the round trip")
    parser.add_argument(
        "--order", nargs="+", default=["learned"], choices=sorted(ORDERS), help="start orders, each a row (see above)"
    )
    parser.add_argument("--no-bare", action="store_true", help="leave the bare floor out")
    parser.add_argument(
        "--chronologies",
        choices=["memory-drift", "library"],
        default="memory-drift",
        help="of the table's batches (see above)",
    )
    args = parser.parse_args()
    args.chronologies = LIBRARY if args.chronologies == "library" else [CHRONOLOGY]
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    TokenCounter()  # load the encoding once, outside every timing
    package_versions()  # read once per process, as a CLI run reads them once (~60 ms)
    with LoopbackProcess(args.latency) as server:
        harness_ms, client_ms, bare_ms = overhead(server, args)
        server.set_latency(args.latency)
        print(
            f"\nlatency {args.latency * 1000:.0f} ms per request; {len(args.chronologies)} chronologies "
            f"({', '.join(p.stem for p in args.chronologies)}) × every default policy × {args.repetitions} "
            f"repetitions at concurrency 1, × {args.concurrent_repetitions} above; medians of {args.runs} runs (2 shared cores)"
        )
        print(
            f"{'concurrency':>11}  {'order':>7}  {'calls':>5}  {'wall s':>7}  {'critical path s':>15}"
            f"  {'ratio':>5}  (each run)  {'schedule s':>10}  {'wall / schedule':>15}  {'bare floor s':>12}"
            f"  {'wall / bare':>11}  {'CPU floor s':>11}"
        )
        for concurrency in args.concurrency:
            orders = args.order if concurrency > 1 else ["plan"]  # one at a time: plan order, whatever the order
            print(f"{'':>11}  load average before: {os.getloadavg()[0]:.2f}")
            measured = alternated(server, args, concurrency, orders)
            for order, (runs, floors, seen) in zip(orders, measured):
                row(concurrency, order, runs, floors, seen, harness_ms)
            print(f"{'':>11}  load average after: {os.getloadavg()[0]:.2f}")


Run = tuple[float, float, int, float, list[int]]


def ratio(part: float, whole: float) -> float:
    """`part / whole`; nan when `whole` is 0 (at 0 ms latency the critical path and the schedule are 0)."""
    return part / whole if whole else float("nan")


def alternated(
    server: LoopbackProcess, args: argparse.Namespace, concurrency: int, orders: list[str]
) -> list[tuple[list[Run], list[float], list[int]]]:
    """`--runs` batches of each start order at `concurrency`, the orders taking turns; each batch
    followed by its bare floor unless `--no-bare`. For each order: its runs, bare floors and most
    requests in flight."""
    measured: list[tuple[list[Run], list[float], list[int]]] = [([], [], []) for _ in orders]
    repetitions = args.repetitions if concurrency == 1 else args.concurrent_repetitions
    for _ in range(args.runs):
        for order, (runs, floors, seen) in zip(orders, measured):
            with start_order(order):
                runs.append(one_batch(server, concurrency, repetitions, args.latency, args.chronologies))
            seen.append(server.stats()[1])
            if not args.no_bare:
                floors.append(bare_floor(server, runs[-1][4], concurrency))
                server.stats()
    return measured


def row(
    concurrency: int,
    order: str,
    runs: list[Run],
    floors: list[float],
    seen: list[int],
    harness_ms: float,
) -> None:
    """One line of the table: the medians of one variant's runs."""
    ratios = [ratio(r[0], r[1]) for r in runs]
    wall, bound = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
    floor = runs[0][2] * harness_ms / 1000
    each = " ".join(f"{r:.3f}" for r in ratios)
    bare = f"{statistics.median(floors):>12.2f}" if floors else f"{'-':>12}"
    over_bare = f"{statistics.median(r[0] / f for r, f in zip(runs, floors)):>11.2f}" if floors else f"{'-':>11}"
    print(
        f"{concurrency:>11}  {order:>7}  {runs[0][2]:>5}  {wall:>7.2f}  {bound:>15.2f}  "
        f"{statistics.median(ratios):>5.3f}  ({each})  {runs[0][3]:>10.2f}  "
        f"{statistics.median(ratio(r[0], r[3]) for r in runs):>15.3f}  {bare}  {over_bare}  {floor:>11.2f}"
    )
    floor_ratio = f"{statistics.median(ratio(f, r[1]) for r, f in zip(runs, floors)):.2f}" if floors else "-"
    print(
        f"{'':>11}  bare floor / critical path: {floor_ratio}; "
        f"schedule / critical path: {ratio(runs[0][3], runs[0][1]):.2f}; "
        f"most requests in flight at once, seen by the server: {max(seen)}"
    )


def overhead(server: LoopbackProcess, args: argparse.Namespace) -> tuple[float, float, float]:
    """Milliseconds per call at 0 ms latency, one at a time: the harness's (batch wall / calls),
    `OpenAIModel.complete`'s and a bare httpx POST's (medians of `args.runs`)."""
    server.set_latency(0.0)
    per_call, client, bare = [], [], []
    for _ in range(args.runs):
        wall, _, calls, _, _ = one_batch(server, 1, args.repetitions, 0.0)
        per_call.append(wall / calls)
        c, b = round_trips(server, args.requests)
        client.append(c)
        bare.append(b)
    harness_ms, client_ms, bare_ms = (statistics.median(v) * 1000 for v in (per_call, client, bare))
    print(f"at 0 ms latency, one call at a time (medians of {args.runs}):")
    print(f"  harness, per call (batch wall / calls): {harness_ms:6.2f} ms")
    print(f"  OpenAIModel.complete, per request:      {client_ms:6.2f} ms")
    print(f"  bare httpx POST, per request:           {bare_ms:6.2f} ms")
    print(
        f"  harness per call / client round trip: {harness_ms / client_ms:.2f}x "
        f"(harness's own work per call: {harness_ms - client_ms:.2f} ms); "
        f"client round trip / bare HTTP: {client_ms / bare_ms:.2f}x"
    )
    return harness_ms, client_ms, bare_ms


if __name__ == "__main__":
    main()
