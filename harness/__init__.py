"""Replay fixed conversations under context policies and show what each one loses."""

from harness.base.errors import ChronologyError, HarnessError, InputError, ModelError
from harness.base.messages import Message
from harness.chronology import Chronology, Forget, Prohibition, UserTurn
from harness.chronology.loading import load_chronologies, load_chronology
from harness.policy import Outcome, Param, Policy, PolicyRegistry, PolicySpec

__all__ = [
    "Chronology",
    "ChronologyError",
    "Forget",
    "HarnessError",
    "InputError",
    "Message",
    "ModelError",
    "Outcome",
    "Param",
    "Policy",
    "PolicyRegistry",
    "PolicySpec",
    "Prohibition",
    "Results",
    "UserTurn",
    "load_chronologies",
    "load_chronology",
    "load_results",
]


def __getattr__(name: str) -> object:
    """`Results` and `load_results` bring pandas with them: imported on first use, so that
    `harness --help` and `harness validate` start without it."""
    if name in ("Results", "load_results"):
        from harness.results import tables as results

        return getattr(results, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
