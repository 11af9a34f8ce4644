"""The chronology wing: input and ground truth.

A chronology file becomes typed, immutable records (`types`) through one loader (`loading`:
safe YAML, validation, the JSON Schema), and everything past that edge passes those records.
The ground truth the checks measure against is derived here too: the one reader of `key=value`
declarations (`declarations`), the reference reader's question rules (`questions`), the
patterns (`patterns`) and the ledger of what is declared, corrected and forgotten at each turn
(`ledger`).
"""

from harness.chronology.loading import load_chronologies, load_chronology
from harness.chronology.types import (
    Chronology,
    Expectation,
    Forget,
    Prohibition,
    Source,
    Step,
    ToolResult,
    Turn,
    UserTurn,
    WriterCandidate,
)

__all__ = [
    "Chronology",
    "Expectation",
    "Forget",
    "Prohibition",
    "Source",
    "Step",
    "ToolResult",
    "Turn",
    "UserTurn",
    "WriterCandidate",
    "load_chronologies",
    "load_chronology",
]
