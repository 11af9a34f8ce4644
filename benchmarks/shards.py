"""One batch over N "machines" (shards, each with its own one-slot model server), then merged.

Prints, from one run:
- the balance of the slices `--shard K/N` deals (turns of the largest slice / an even split);
- the wall time of the whole batch against one server, and of each of N shards against its own
  server, run one after another so that they do not share this machine's cores (N machines
  take as long as the slowest), with their ratio;
- the time `harness merge` takes, and whether the merged folder equals the whole batch's,
  byte for byte apart from times;
- several `--base-url`: the same batch against two one-slot servers at once (`--concurrency 2`),
  against one, and how many requests each server answered.

The servers answer every request after a fixed latency, one request at a time (like llama.cpp's
server with one slot), so model time dominates as it does on real machines.

    python benchmarks/shards.py [--latency 0.1] [--shards 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.loopback, the scripted server

from harness.chronology.loading import load_chronologies  # noqa: E402
from harness.policy import PolicyRegistry  # noqa: E402
from harness.results.writer import FILES  # noqa: E402
from harness.run.shards import assign  # noqa: E402
from harness.run.spec import RunSpec  # noqa: E402
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion  # noqa: E402

CHRONOLOGIES = ("memory-drift", "correct-then-forget", "two-sessions", "summary-overflow", "stale-premise")
TIMES = re.compile(r'"(started_at|ended_at|recorded_at|latency_ms|resumed_at)": ("[^"]*"|[0-9.e-]+|\[[^\]]*\])')


def one_slot(latency: float) -> ScriptedServer:
    """A started server answering one request at a time, each after `latency` seconds."""
    server = ScriptedServer()
    slot = threading.Lock()

    def answer(request: Recorded) -> Reply:
        with slot:
            time.sleep(latency)
        if "response_format" in (request.body or {}):
            return Reply(body=chat_completion('{"facts": []}'))
        return Reply(body=chat_completion("No."))

    server.default = answer
    return server.start()


def harness(*args: str) -> float:
    """Seconds one `harness` process takes; it must succeed."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "harness", *args], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def run_args(out: Path, run_id: str, *urls: str) -> list[str]:
    files = [str(ROOT / "chronologies" / f"{name}.yaml") for name in CHRONOLOGIES]
    servers = [x for url in urls for x in ("--base-url", url)]
    common = ["--model", "openai:bench", "--live", "--no-cache", "--quiet", "--reports", str(out / "reports")]
    return ["run", *files, *common, *servers, "--out", str(out), "--run-id", run_id]


def masked(directory: Path, name: str) -> str:
    text = (directory / name).read_text(encoding="utf-8")
    if name.endswith(".csv"):  # latency_ms is a column: mask every decimal number with a fraction
        return re.sub(r"(?<=,)\d+\.\d+(?=,)", "T", text)
    return TIMES.sub(r'"\1": T', text)


def balance(shards: int) -> None:
    registry = PolicyRegistry.installed()
    chronologies = load_chronologies([ROOT / "chronologies" / "library.txt"])
    conversations = RunSpec(chronologies, registry.default_specs(), ["reference"]).conversations()
    works = [len(c.chronology.user_turns) for c in conversations]
    print(f"slices of the shipped library ({len(works)} conversations, {sum(works)} user turns):")
    for n in sorted({2, 3, 4, 8, shards}):
        owner = assign(works, n)
        loads = [sum(w for w, k in zip(works, owner) if k == s) for s in range(1, n + 1)]
        plain = [sum(works[i::n]) for i in range(n)]  # round robin in plan order, for comparison
        print(
            f"  N={n}: largest slice {max(loads)} turns / even split {sum(works) / n:.0f} = "
            f"{max(loads) / (sum(works) / n):.2f} (longest conversation {max(works)}; round robin: "
            f"{max(plain) / (sum(works) / n):.2f})"
        )


def across_machines(out: Path, shards: int, latency: float) -> None:
    servers = [one_slot(latency) for _ in range(shards)]
    try:
        whole = harness(*run_args(out, "whole", servers[0].base_url))
        # One shard after another, each alone: on N machines they would not share this one's cores.
        each = [
            harness(*run_args(out / "shards", f"s{k}", servers[k - 1].base_url), "--shard", f"{k}/{shards}")
            for k in range(1, shards + 1)
        ]
        sharded = max(each)
        folders = [str(out / "shards" / f"s{k}") for k in range(1, shards + 1)]
        merging = harness("merge", str(out / "merged" / "whole"), *folders, "--reports", str(out / "merged-reports"))
    finally:
        for server in servers:
            server.stop()
    print(
        f"\n{len(CHRONOLOGIES)} chronologies × every default policy, --live, {latency * 1000:.0f} ms per request, one slot:"
    )
    both = sharded + merging
    print(f"  whole batch on one machine, run and report:  {whole:6.2f} s")
    print(f"  each of {shards} shards alone, no report:      {', '.join(f'{t:.2f}' for t in each)} s")
    print(f"  {shards} machines, the slowest shard:            {sharded:6.2f} s  (ratio {sharded / whole:.2f})")
    print(f"  harness merge, with the report:              {merging:6.2f} s")
    print(f"  slowest shard then merge, end to end:        {both:6.2f} s  (ratio {both / whole:.2f})")
    same = all(masked(out / "whole", n) == masked(out / "merged" / "whole", n) for n in FILES if n != "manifest.json")
    print(f"  merged records equal the whole batch's, times masked: {'yes' if same else 'NO'}")


def several_servers(out: Path, latency: float) -> None:
    a, b = one_slot(latency), one_slot(latency)
    try:
        one = harness(*run_args(out, "one", a.base_url), "--concurrency", "2")
        before = len(a.requests)
        two = harness(*run_args(out, "two", a.base_url, b.base_url), "--concurrency", "2")
    finally:
        a.stop()
        b.stop()
    served = [len(a.requests) - before, len(b.requests)]
    print("\nseveral --base-url, --concurrency 2:")
    print(f"  one one-slot server:  {one:6.2f} s")
    print(f"  two one-slot servers: {two:6.2f} s  (ratio {two / one:.2f}); requests answered: {served}")
    conversations = [json.loads(line) for line in (out / "two" / "conversations.jsonl").read_text().splitlines()]
    print(
        f"  conversations per server: {sorted(sum(c['server'] == u for c in conversations) for u in (a.base_url, b.base_url))}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per request")
    parser.add_argument("--shards", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    balance(args.shards)
    with tempfile.TemporaryDirectory() as folder:
        across_machines(Path(folder), args.shards, args.latency)
        several_servers(Path(folder), args.latency)


if __name__ == "__main__":
    main()
