"""Optional: the same requests through the harness and through Inspect AI, on the same loopback server.

Inspect AI (the UK AISI's eval framework) is not a dependency of the harness, and this script
installs nothing. Give it a Python that has Inspect installed, in a venv of its own:

    python -m venv /tmp/inspect && /tmp/inspect/bin/pip install inspect-ai
    python benchmarks/inspect_compare.py --inspect-python /tmp/inspect/bin/python

What it does, at each `--concurrency`:

1. runs a `--live` batch with the harness (memory-drift × every default policy ×
   `--repetitions`) against a loopback OpenAI-compatible server with a fixed `--latency`
   (benchmarks/loopback_process.py, in a process of its own), timing `run_batch`;
2. reads back every request the harness sent, conversation by conversation, in order (the
   answer calls' request views from `views.jsonl`, the policies' extra calls from `calls.jsonl`);
3. has Inspect send (its `openai` provider, chat-completions API) the same requests to the same server: one sample per conversation whose
   solver sends that conversation's requests one after the other (turns stay sequential, as in
   the harness), `max_connections` and `max_samples` set to the concurrency; times `eval()`.

It prints both wall times and their ratio (harness / Inspect; below 1: the harness is faster).
Both are timed inside their process, after imports. The requests are the same messages; a
structured-output call is sent by Inspect as a plain completion (the server answers both alike).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from batch_latency import timed_batch  # noqa: E402
from loopback_process import LoopbackProcess  # noqa: E402

from harness.base.identity import RunKey  # noqa: E402
from harness.policy.tokens import TokenCounter  # noqa: E402
from harness.results.reader import read_records  # noqa: E402
from harness.results.tables import load_results  # noqa: E402

# Run by the Inspect venv's Python: argv = requests file, base URL, concurrency, log folder.
INSPECT_RUNNER = textwrap.dedent(
    """
    import json, sys, time
    from inspect_ai import Task, eval, task
    from inspect_ai.dataset import Sample
    from inspect_ai.model import (
        ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, GenerateConfig, get_model,
    )
    from inspect_ai.solver import Generate, TaskState, solver

    KINDS = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    conversations = json.loads(open(sys.argv[1], encoding="utf-8").read())

    @solver
    def replay():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            model = get_model()
            for request in conversations[int(state.sample_id)]:
                messages = [KINDS[m["role"]](content=m["content"]) for m in request]
                await model.generate(messages, config=GenerateConfig(temperature=0.0))
            return state
        return solve

    @task
    def same_requests():
        samples = [Sample(id=str(n), input="replay") for n in range(len(conversations))]
        return Task(dataset=samples, solver=replay())

    concurrency = int(sys.argv[3])
    started = time.perf_counter()
    [log] = eval(
        same_requests(),
        model="openai/bench",
        model_base_url=sys.argv[2],
        model_args={"responses_api": False},  # chat completions, as the harness sends
        max_connections=concurrency,
        max_samples=concurrency,
        log_dir=sys.argv[4],
        display="none",
    )
    print(time.perf_counter() - started)
    """
)


def harness_batch(base_url: str, concurrency: int, repetitions: int, folder: Path) -> tuple[float, list[list]]:
    """The harness's wall time, and the requests it sent: per conversation, each request's messages."""
    directory = folder / f"harness-{concurrency}"
    wall = timed_batch(base_url, concurrency, repetitions, directory)
    results = load_results(directory)
    conversations: dict[tuple, list] = {}
    for call in read_records(directory / "calls.jsonl"):
        key = RunKey.of(call)
        messages = call["messages"]
        if messages is None:  # an answer: its request is the turn's view in views.jsonl
            messages = results.view_at(*key, call["turn"])["view"]
        conversations.setdefault(key, []).append([{"role": m["role"], "content": m["content"]} for m in messages])
    return wall, list(conversations.values())


def inspect_batch(python: str, base_url: str, concurrency: int, conversations: list[list], folder: Path) -> float:
    """Inspect's wall time for `eval()` over the same requests."""
    requests = folder / f"requests-{concurrency}.json"
    requests.write_text(json.dumps(conversations), encoding="utf-8")
    runner = folder / "inspect_runner.py"
    runner.write_text(INSPECT_RUNNER, encoding="utf-8")
    env = {**os.environ, "OPENAI_API_KEY": "unused", "INSPECT_LOG_LEVEL": "warning"}
    argv = [python, str(runner), str(requests), base_url, str(concurrency), str(folder / f"logs-{concurrency}")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=folder)
    if done.returncode != 0:
        raise SystemExit(f"Inspect failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inspect-python", required=True, help="a Python with inspect-ai installed")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    TokenCounter()  # load the encoding once, outside every timing
    print(
        f"memory-drift × every default policy × {args.repetitions} repetitions, live, latency {args.latency * 1000:.0f} ms; "
        "one run each (a shared machine: repeat for medians)"
    )
    print(f"{'concurrency':>11}  {'requests':>8}  {'harness s':>9}  {'Inspect s':>9}  {'harness / Inspect':>17}")
    with tempfile.TemporaryDirectory(prefix="inspect-compare-") as tmp, LoopbackProcess(args.latency) as server:
        for concurrency in args.concurrency:
            harness_wall, conversations = harness_batch(server.base_url, concurrency, args.repetitions, Path(tmp))
            served_harness = server.stats()[0]
            inspect_wall = inspect_batch(args.inspect_python, server.base_url, concurrency, conversations, Path(tmp))
            served_inspect = server.stats()[0]
            if served_inspect != served_harness:
                print(f"  note: the harness sent {served_harness} requests, Inspect {served_inspect}")
            print(
                f"{concurrency:>11}  {served_harness:>8}  {harness_wall:>9.2f}  {inspect_wall:>9.2f}  "
                f"{harness_wall / inspect_wall:>17.2f}"
            )


if __name__ == "__main__":
    main()
