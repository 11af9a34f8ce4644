"""A named parameter given on the command line as `name=value` (a policy's, `last-turns:turns=5`,
or the lossy reference model's, `reference:lossy:recency=4`): its default fixes its type, and a
value is converted and bounded here, or refused with a ValueError saying what is expected."""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.base.text import shown

# The largest whole number a parameter may hold when it declares no maximum: what fits
# in 64 bits, so that slicing, numpy and C code take it (a larger one raised there, as a traceback).
INT_LIMIT = 2**63 - 1
MAX_NUMBER_CHARS = 40  # a number written longer than this is refused before Python converts it


@dataclass(frozen=True)
class Param:
    """One parameter (a policy's, a model's): its default fixes its type (int, float or str). A number is kept
    within `minimum` and `maximum`; an int without a maximum within INT_LIMIT."""

    name: str
    default: int | float | str
    description: str
    choices: tuple[str, ...] = ()
    minimum: int | float | None = None
    maximum: int | float | None = None

    def parse(self, text: str) -> int | float | str:
        """Convert a CLI value, or raise ValueError saying what is expected."""
        if isinstance(self.default, (int, float)):
            value = self._number(text.strip())
            if self.minimum is not None and value < self.minimum:
                raise ValueError(f"must be at least {self.minimum}")
            if self.upper is not None and value > self.upper:
                raise ValueError(f"must be at most {self.upper:,}")
            return value
        if self.choices and text not in self.choices:
            raise ValueError(f"must be one of {', '.join(self.choices)}")
        return text

    @property
    def upper(self) -> int | float | None:
        """The largest value taken: the declared maximum, else INT_LIMIT for an int."""
        if self.maximum is not None:
            return self.maximum
        return INT_LIMIT if isinstance(self.default, int) else None

    def _number(self, text: str) -> int | float:
        whole = isinstance(self.default, int)
        kind = "a whole number" if whole else "a number"
        if len(text) > MAX_NUMBER_CHARS:
            raise ValueError(f"is {len(text)} characters long; give {kind} of at most {MAX_NUMBER_CHARS}")
        try:
            value = int(text) if whole else float(text)
        except ValueError:
            raise ValueError(f"{shown(text)} is not {kind}") from None
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value
