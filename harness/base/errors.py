"""The harness's error tree.

HarnessError                 anything the CLI reports as one line and exit status: 1
├── RunFailed                a fault after records exist; they are kept, the run resumable: 1
├── ConversationsFailed      the run (or a rejudge) finished, but some conversations (calls) failed: 3
├── InputError               bad user input (chronology, option, results dir): exit 2
│   ├── ChronologyError      one or more problems, each with file, line and field
│   ├── RunInUse             another process holds the results directory: exit 2
│   └── RunComplete          `--resume` of a run that has nothing left to run
└── ModelError               a model call failed after its retries; recorded, not fatal
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.base.text import path_shown


class HarnessError(Exception):
    """Base of every error the harness reports to a user."""

    exit_code = 1


class RunFailed(HarnessError):
    """A run or resume stopped by a fault once its records existed; the manifest says so."""


class ConversationsFailed(HarnessError):
    """Every conversation ran, results and report are written, but some ended in errors."""

    exit_code = 3


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


class RunInUse(InputError):
    """Another process runs or resumes this results directory; the message names it."""


class RunComplete(InputError):
    """`--resume` of a complete run: the CLI then only finishes its report."""


class ModelError(HarnessError):
    """A model call failed; the message is safe to record (it never holds a secret)."""

    def __init__(self, message: str, attempts: int = 1, format_refusals: int = 0, paced: object | None = None):
        super().__init__(message)
        self.attempts = attempts
        self.format_refusals = format_refusals  # of `attempts`: refused structured-output forms, not retries
        self.paced = paced  # what rate limits did to the call (harness.models.ratelimit.Paced); None: not paced


def os_error_text(exc: OSError) -> str:
    """An OSError as one line: `results/t/calls.jsonl: No space left on device`."""
    reason = exc.strerror or str(exc)  # str(exc) quotes the path whole: only without a strerror
    return f"{path_shown(exc.filename)}: {reason}" if exc.filename else reason
