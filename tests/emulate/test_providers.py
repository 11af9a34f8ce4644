"""The registry of emulated providers and the `harness emulate` command in process: the choice it
offers, and bad options refused before anything is served."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner

from harness.base.errors import InputError
from harness.cli.commands import main
from harness.emulate.anthropic import AnthropicEmulator
from harness.emulate.openai import OpenAIEmulator
from harness.emulate.providers import PROVIDERS, open_emulator


def test_the_command_offers_exactly_the_registered_providers() -> None:
    [provider] = [p for p in main.commands["emulate"].params if p.name == "provider"]
    assert list(provider.type.choices) == sorted(PROVIDERS)  # type: ignore[attr-defined]


def test_a_provider_opens_with_the_given_model_window_and_faults() -> None:
    emulator = open_emulator("openai", "reference:lossy", faults=["rate-limit:1"], seed=3, context_window=500)
    assert isinstance(emulator, OpenAIEmulator) and emulator.base_path == "/v1"
    assert emulator.model.name == "reference:lossy" and emulator.context_window == 500
    assert [f.name for f in emulator.faults] == ["rate-limit"]


def test_the_anthropic_emulator_answers_every_request_with_the_served_model_and_its_faults() -> None:
    emulator = open_emulator("anthropic", "reference:lossy", faults=["rate-limit:2", "failed-compaction"], seed=3)
    assert isinstance(emulator, AnthropicEmulator) and emulator.base_path == ""
    assert emulator.fixed is not None and emulator.fixed.name == "reference:lossy"
    assert emulator.faults.rate_limited == 2 and emulator.faults.failed_compaction
    assert emulator._model("claude-sonnet-4-5") is emulator.fixed  # a real model's name, answered offline


def test_a_model_that_needs_a_server_is_refused() -> None:
    with pytest.raises(InputError, match="not an offline model"):
        open_emulator("openai", "openai:gpt-5.4")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["emulate", "openai", "--fault", "nope"], "unknown fault"),
        (["emulate", "openai", "--model", "local"], "not an offline model"),
        (["emulate", "mistral"], "Invalid value for '{anthropic|openai}'"),
        (["emulate", "anthropic", "--fault", "nope"], "not a fault of the Anthropic emulator"),
        (["emulate", "anthropic", "--fault", "failed-compaction:2"], "is a switch and takes no :N"),
        (["emulate", "anthropic", "--context-window", "500"], "the Anthropic emulator declares none"),
        (["emulate", "anthropic", "--model", "openai:x"], "not an offline model"),
    ],
)
def test_bad_options_exit_2_with_one_message_before_serving(args: list[str], said: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and said in result.output + (result.stderr or "")


def test_a_port_in_use_is_refused_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["emulate", "openai", "--port", str(port)])
    assert result.exit_code == 2
    assert f"--port {port}: cannot serve on 127.0.0.1:{port}" in result.output + (result.stderr or "")
