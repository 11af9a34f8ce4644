"""Replay fixed conversations under context policies and show what each one loses."""

from harness.chronology import Chronology, Forget, Prohibition, UserTurn
from harness.errors import ChronologyError, HarnessError, InputError, ModelError
from harness.loading import load_chronologies, load_chronology
from harness.messages import Message
from harness.policy import Outcome, Param, Policy, PolicyRegistry, PolicySpec
from harness.results import Results, load_results

__all__ = [
    "Chronology", "ChronologyError", "Forget", "HarnessError", "InputError", "Message", "ModelError",
    "Outcome", "Param", "Policy", "PolicyRegistry", "PolicySpec", "Prohibition", "Results", "UserTurn",
    "load_chronologies", "load_chronology", "load_results",
]  # fmt: skip
