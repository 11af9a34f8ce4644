"""Three costs kept apart (harness.report.pricing): without a cache, with the cacheable prefix
cached (an estimate), from the provider's own cache counts; each says what it priced."""

from __future__ import annotations

import pytest

from harness.report.costs import FIELDS, CostSums
from harness.report.prices import Price
from harness.report.pricing import Cost, priced, total

PRICE = Price(input=1.0, cached_input=0.1, cache_write=1.25, output=2.0, source="test")
SUMS = {
    "prompt": 40,
    "completion": 4,
    "cache_read": 16,
    "cache_write": 6,
    "tiktoken": 38,
    "estimate": 30,
    "prefix_tiktoken": 20,
    "prefix_estimate": 15,
    "reply_estimate": 5,
}


def sums(calls: int = 2, known: dict[str, int] | None = None) -> CostSums:
    return CostSums(calls, dict(SUMS), {f: calls for f in FIELDS} | (known or {}))


def test_every_call_reporting_gives_three_costs_from_the_reported_tokens() -> None:
    costs = priced(sums(), PRICE, "m")
    assert costs.uncached.amount == pytest.approx((40 * 1 + 4 * 2) / 1e6)
    # the prefix (20 local tokens) at the cached price, the rest written to the cache
    assert costs.prefix_cached.amount == pytest.approx((20 * 0.1 + 20 * 1.25 + 4 * 2) / 1e6)
    # 16 read, 6 written, 18 uncached of 40 reported
    assert costs.reported.amount == pytest.approx((16 * 0.1 + 6 * 1.25 + 18 * 1 + 4 * 2) / 1e6)
    assert costs.basis == {"input: provider-reported", "output: provider-reported", "prefix: tiktoken count"}


def test_where_a_call_did_not_report_the_cost_falls_back_and_says_so_and_the_reported_one_is_unknown() -> None:
    costs = priced(sums(known={"prompt": 1, "completion": 1, "cache_read": 1}), PRICE, "m")
    assert costs.uncached.amount == pytest.approx((38 * 1 + 5 * 2) / 1e6)  # tiktoken in, reply characters/4 out
    assert costs.basis >= {"input: tiktoken count", "output: estimate (reply characters/4)"}
    assert costs.reported == Cost(None, "cache counts reported by 1 of 2 calls")


def test_cache_writes_not_reported_are_billed_as_input_and_the_basis_says_how_many() -> None:
    found = CostSums(2, dict(SUMS, cache_write=0), {f: 2 for f in FIELDS} | {"cache_write": 0})
    costs = priced(found, PRICE, "m")
    assert costs.reported.amount == pytest.approx((16 * 0.1 + 24 * 1 + 4 * 2) / 1e6)
    assert "cache writes not reported by 2 of 2 calls: billed as input" in costs.basis


def test_a_model_without_a_price_has_no_cost_never_0_and_neither_has_a_total_with_it() -> None:
    costs = priced(sums(), None, "reference")
    assert {costs.uncached, costs.prefix_cached, costs.reported} == {Cost(None, "no price for reference")}
    assert total([priced(sums(), PRICE, "m"), costs]).uncached == Cost(None, "no price for reference")


def test_a_run_before_the_prefix_was_recorded_has_no_estimate_but_its_other_costs() -> None:
    costs = priced(sums(known={"prefix_tiktoken": 0, "prefix_estimate": 0}), PRICE, "m")
    assert costs.prefix_cached == Cost(None, "cacheable prefix not recorded (a run before it)")
    assert costs.uncached.amount is not None
