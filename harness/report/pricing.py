"""What calls cost, three ways kept apart (without a cache, with the cacheable prefix cached, from
provider-reported cache counts: docs/reports.md, "Cost"), from their token sums
(harness.report.costs) and a price list (harness.report.prices).

Each group of calls is priced on one kind of figure, the best every call of it has (reported,
else tiktoken, else characters/4), and each cost says which (`basis`): figures of different
kinds are never mixed silently. A model without a price gives `no price`, never 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.report.costs import CostSums
from harness.report.prices import Price

MILLION = 1_000_000
WAYS = ("uncached", "prefix_cached", "reported")  # the three costs, in table order


@dataclass(frozen=True)
class Cost:
    """One way of pricing some calls: an amount, or None and why it is not one."""

    amount: float | None
    why: str = ""  # when there is no amount: why

    def plus(self, other: Cost) -> Cost:
        if self.amount is None:
            return self
        if other.amount is None:
            return other
        return Cost(self.amount + other.amount)


@dataclass(frozen=True)
class Costs:
    """The three costs of some calls, and the token figures they were priced from."""

    uncached: Cost
    prefix_cached: Cost
    reported: Cost
    basis: frozenset[str]  # e.g. `input: tiktoken count`, `output: estimate (reply characters/4)`

    def plus(self, other: Costs) -> Costs:
        return Costs(
            self.uncached.plus(other.uncached),
            self.prefix_cached.plus(other.prefix_cached),
            self.reported.plus(other.reported),
            self.basis | other.basis,
        )

    def of(self, way: str) -> Cost:
        return getattr(self, way)


NOTHING = Costs(Cost(0.0), Cost(0.0), Cost(0.0), frozenset())


def total(costs: Iterable[Costs]) -> Costs:
    """The costs of several groups together: unknown when any one's is."""
    found = NOTHING
    for one in costs:
        found = found.plus(one)
    return found


def priced(sums: CostSums, price: Price | None, model: str) -> Costs:
    """The three costs of one group of calls (one kind, one model)."""
    if price is None:
        none = Cost(None, f"no price for {model}")
        return Costs(none, none, none, frozenset())
    (input_tokens, input_basis), output = _input(sums), _output(sums)
    if output is None:
        unknown = Cost(None, "output tokens unknown")
        return Costs(unknown, unknown, unknown, frozenset({input_basis}))
    output_tokens, output_basis = output
    out = output_tokens * price.output
    basis = {input_basis, output_basis}
    uncached = Cost((input_tokens * price.input + out) / MILLION)
    prefix = _prefix(sums, input_basis)
    if prefix is None:
        estimate = Cost(None, "cacheable prefix not recorded (a run before it)")
    else:
        cached = min(prefix[0], input_tokens)
        basis.add(f"prefix: {prefix[1]}")
        estimate = Cost((cached * price.cached_input + (input_tokens - cached) * price.write + out) / MILLION)
    reported, note = _reported(sums, price)
    if note:
        basis.add(note)
    return Costs(uncached, estimate, reported, frozenset(basis))


def _input(sums: CostSums) -> tuple[int, str]:
    for field, words in (("prompt", "provider-reported"), ("tiktoken", "tiktoken count"), ("estimate", "estimate")):
        value = sums.whole(field)
        if value is not None:
            return value, f"input: {words}"
    return sums.sums["estimate"], "input: estimate"  # every call has an estimate; an old record may not


def _output(sums: CostSums) -> tuple[int, str] | None:
    reported, estimate = sums.whole("completion"), sums.whole("reply_estimate")
    if reported is not None:
        return reported, "output: provider-reported"
    return None if estimate is None else (estimate, "output: estimate (reply characters/4)")


def _prefix(sums: CostSums, input_basis: str) -> tuple[int, str] | None:
    """The cacheable prefix in tokens, counted as the input is where it can be."""
    local = sums.whole("prefix_tiktoken")
    if local is not None and not input_basis.endswith("estimate"):
        return local, "tiktoken count"
    estimate = sums.whole("prefix_estimate")
    return None if estimate is None else (estimate, "estimate")


def _reported(sums: CostSums, price: Price) -> tuple[Cost, str]:
    """The cost from the provider's own counts, and a note on cache writes it did not report."""
    prompt, completion, cached = sums.whole("prompt"), sums.whole("completion"), sums.whole("cache_read")
    if prompt is None or completion is None or cached is None:
        reported = min(sums.known["prompt"], sums.known["completion"], sums.known["cache_read"])
        return Cost(None, f"cache counts reported by {reported} of {sums.calls} calls"), ""
    written = sums.sums["cache_write"]
    missing = sums.calls - sums.known["cache_write"]
    note = f"cache writes not reported by {missing} of {sums.calls} calls: billed as input" if missing else ""
    rest = max(prompt - cached - written, 0)
    amount = cached * price.cached_input + written * price.write + rest * price.input + completion * price.output
    return Cost(amount / MILLION), note
