"""The emulated providers `harness emulate` serves, by name: adding one is one line here.

Each entry names its emulator class (or a function making one) as `module:name`, imported only when that provider is
served (so `harness --help` loads none). The class takes the offline model's name first, then
keywords: `faults` (its own switch names, `NAME[:N]`), `seed`, and `context_window` when the user
declares one (otherwise the class's default); it serves over HTTP through `handle` (the `Emulator`
protocol of harness.emulate.server) and states `base_path`, the path an SDK's `base_url` ends with.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Protocol

from harness.emulate.server import Emulator

PROVIDERS: dict[str, str] = {
    "openai": "harness.emulate.openai:OpenAIEmulator",
    "anthropic": "harness.emulate.anthropic:served",
}


class ServedEmulator(Emulator, Protocol):
    """An emulator `harness emulate` serves: `handle`, and the path its SDK's base URL ends with."""

    base_path: str


def open_emulator(
    provider: str, model: str, *, faults: Sequence[str] = (), seed: int = 0, context_window: int | None = None
) -> ServedEmulator:
    """The emulator of `provider` (a key of PROVIDERS), answering with the offline `model`;
    InputError for a model or fault it does not know."""
    module, _, name = PROVIDERS[provider].partition(":")
    cls = getattr(importlib.import_module(module), name)
    sized = {} if context_window is None else {"context_window": context_window}
    return cls(model, faults=tuple(faults), seed=seed, **sized)
