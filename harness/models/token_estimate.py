"""The characters/4 token estimate: the one home of the rule, for the harness's token figures
(`harness.policy.tokens`) and for the emulated providers' usage (`harness.emulate`), which sit
below `policy` and count with it."""

from __future__ import annotations

import math

ESTIMATE = "estimate"  # the counter's name, as a record or a response header states it


def estimate_tokens(chars: int) -> int:
    """The characters/4 estimate, rounded up. It is neither a tokenizer count nor billed tokens."""
    return math.ceil(chars / 4)
