"""Wall time of one attempt against a loopback server that drips its reply a byte at a time.

`--timeout` is a total deadline per attempt (harness/models/deadline.py): the attempt should end at
the deadline whatever the drip. With `--compare`, the same request is also sent through a
plain httpx2 client with the same timeout, which bounds each read only (what the openai client
did before): it takes as long as the whole drip (about 63 s with the defaults).

    python benchmarks/drip_deadline.py [--timeout 2] [--drip 0.25] [--head] [--compare]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.loopback, the scripted server

import httpx2  # noqa: E402

from harness.base.errors import ModelError  # noqa: E402
from harness.base.messages import Message  # noqa: E402
from harness.chronology import UserTurn  # noqa: E402
from harness.models import CallRequest  # noqa: E402
from harness.models.openai import OpenAIModel  # noqa: E402
from tests.loopback import Reply, ScriptedServer, chat_completion  # noqa: E402

REQUEST = CallRequest("answer", (Message("user", "hello"),), UserTurn(number=1, line=1, user="hello", session="main"))


def harness_attempt(base_url: str, timeout: float) -> tuple[float, str]:
    """One attempt through the harness's openai path (no retry)."""
    with OpenAIModel("m", base_url=base_url, timeout=timeout, max_retries=0) as model:
        started = time.monotonic()
        try:
            outcome = f"answered {model.complete(REQUEST).text!r}"
        except ModelError as error:
            outcome = str(error)
        return time.monotonic() - started, outcome


def per_read_attempt(base_url: str, timeout: float) -> tuple[float, str]:
    """The same request through a plain httpx2 client: its timeout bounds each read, not the request."""
    with httpx2.Client(timeout=timeout, trust_env=False) as client:
        started = time.monotonic()
        try:
            response = client.post(f"{base_url}/chat/completions", json={"model": "m", "messages": []})
            outcome = f"answered after the whole drip (HTTP {response.status_code}, {len(response.content)} bytes)"
        except httpx2.TimeoutException as error:
            outcome = f"timed out ({type(error).__name__})"
        return time.monotonic() - started, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--drip", type=float, default=0.25, help="seconds between two bytes")
    parser.add_argument("--head", action="store_true", help="drip the status line and headers too")
    parser.add_argument("--compare", action="store_true", help="also time a per-read timeout (slow)")
    args = parser.parse_args()
    with ScriptedServer() as server:
        server.default = Reply(body=chat_completion("hello"), drip=args.drip, drip_head=args.head)
        runs = [("harness (deadline)", harness_attempt)]
        if args.compare:
            runs.append(("per-read timeout", per_read_attempt))
        for label, attempt in runs:
            seconds, outcome = attempt(server.base_url, args.timeout)
            print(f"{label}: {seconds:.1f} s with --timeout {args.timeout:g}, a byte every {args.drip:g} s; {outcome}")


if __name__ == "__main__":
    main()
