"""`harness emulate openai` as a user runs it: in a process of its own, its base URL on the first
line of stdout, answering the official SDK until SIGTERM, then exit status 143."""

from __future__ import annotations

import signal
import subprocess
import sys

import openai
import pytest

from tests.emulate.openai_client import created


@pytest.mark.slow
def test_the_command_prints_its_url_answers_the_sdk_and_ends_on_sigterm() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", "emulate", "openai", "--fault", "no-usage:1"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=10)
        bare = created(client, model="gpt-5.4", input="Never restart the billing service.")
        counted = created(client, model="gpt-5.4", input="Can I restart the billing service?")
        client.close()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert bare.usage is None and counted.output_text.startswith("Yes") and counted.usage is not None
    assert process.returncode == 143, stderr
    assert "interrupted" in stderr
