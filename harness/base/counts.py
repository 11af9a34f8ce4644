"""What counts as a token count: the rule the model seam applies to a provider's usage as it
arrives, and the report to the same count read back from results (below both, so neither
imports the other)."""

from __future__ import annotations

import math

__all__ = ["MAX_TOKENS", "is_token_count", "recorded_count"]

MAX_TOKENS = 10**9  # a billion tokens in one call is far beyond any context window


def is_token_count(value: object) -> bool:
    """True for an integer (not a bool) from 0 to MAX_TOKENS."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS


def recorded_count(value: object) -> int | None:
    """A token count read back from results (pandas may give 12.0 for 12); None unless valid.

    Results written before usage was checked can hold negative or huge counts: they count as
    unknown, like today's invalid ones.
    """
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and is_token_count(value) else None
