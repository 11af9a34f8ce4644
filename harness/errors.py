"""The harness's error tree.

    HarnessError                 anything the CLI reports as one line and exit status
    ├── InputError               bad user input (chronology, option, results dir): exit 2
    │   └── ChronologyError      one or more problems, each with file, line and field
    └── ModelError               a model call failed after its retries; recorded, not fatal
"""

from __future__ import annotations

from dataclasses import dataclass


class HarnessError(Exception):
    """Base of every error the harness reports to a user."""

    exit_code = 1


class InputError(HarnessError):
    """The user gave something the harness cannot use; the message says what to do."""

    exit_code = 2


@dataclass(frozen=True)
class Problem:
    """One validation problem, located as precisely as the input allows."""

    path: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class ChronologyError(InputError):
    """A chronology file failed validation; `problems` lists every problem found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class ModelError(HarnessError):
    """A model call failed; the message is safe to record (it never holds a secret)."""

    def __init__(self, message: str, attempts: int = 1, format_refusals: int = 0):
        super().__init__(message)
        self.attempts = attempts
        self.format_refusals = format_refusals  # of `attempts`: refused structured-output forms, not retries
