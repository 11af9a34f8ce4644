"""The report's cost section: per policy, how much of its input a prompt cache could serve (the
cacheable prefix) beside what the provider says it served, and, given prices (`--prices`), its
calls' cost three ways (harness.report.pricing) by call kind in one table. The same three costs
are columns of `policies.csv`; the first (without a cache) is the side-by-side table's cost column.

A policy's own cost is that of its answers and its own extra calls (summarizer, writer, ...):
the judge's calls measure the run and are priced apart, in the by-kind table only.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.report.chart_data import Chart
from harness.report.chart_names import COST_CHART, chart_link
from harness.report.comparison import Column, Comparison
from harness.report.costs import CostSums, Group
from harness.report.markdown import table
from harness.report.prices import PriceList
from harness.report.pricing import WAYS, Cost, Costs, priced, total

JUDGE = "judge"
WAY_WORDS = {
    "uncached": "cost without a cache",
    "prefix_cached": "cost with the cacheable prefix cached (estimate)",
    "reported": "cost from provider-reported cache counts",
}


def groups_of(column: Column) -> dict[Group, CostSums]:
    """(kind, call model) -> the sums of one column's priced calls, over the whole run."""
    return column.tables.run_totals().costs.get((column.policy, column.model), {})


def kind_costs(column: Column, prices: PriceList) -> dict[str, Costs]:
    """kind -> the three costs of a column's calls of that kind (every model that made them)."""
    found: dict[str, list[Costs]] = {}
    for (kind, model), sums in groups_of(column).items():
        found.setdefault(kind, []).append(priced(sums, prices.of(model), model))
    return {kind: total(costs) for kind, costs in found.items()}


def policy_costs(column: Column, prices: PriceList) -> Costs:
    """The policy's own cost: its calls but the judge's."""
    return total(c for kind, c in kind_costs(column, prices).items() if kind != JUDGE)


def money(cost: Cost, currency: str = "") -> str:
    """An amount (with its currency, when given), or why there is none (never 0 for unknown)."""
    if cost.amount is None:
        return cost.why
    amount = f"{cost.amount:.2f}" if cost.amount >= 1 else f"{cost.amount:.6f}"
    return f"{amount} {currency}" if currency else amount


def basis_text(costs: Costs) -> str:
    return "; ".join(sorted(costs.basis)) or "none"


def prefix_figures(column: Column) -> tuple[int, int | None, str] | None:
    """(input tokens, the cacheable prefix among them (None: not recorded), how they were
    counted) over the policy's own calls: tiktoken counts where every call has one, else the
    estimate; None when it made no model call."""
    sums = [s for (kind, _), s in groups_of(column).items() if kind != JUDGE]
    if not sums:
        return None
    local = all(s.whole("tiktoken") is not None and s.whole("prefix_tiktoken") is not None for s in sums)
    field = "tiktoken" if local else "estimate"
    prefixes = [s.whole(f"prefix_{field}") for s in sums]
    shared = None if any(p is None for p in prefixes) else sum(p for p in prefixes if p is not None)
    return sum(s.sums[field] for s in sums), shared, field


def prefix_cells(column: Column) -> list[str]:
    """Input tokens, the cacheable prefix's share of them, and the provider's cached count, over
    the policy's own calls."""
    figures = prefix_figures(column)
    if figures is None:
        return ["no model call", "", ""]
    whole, shared, words = figures
    if shared is None:
        prefix = "not recorded (a run before it)"
    else:
        prefix = f"{shared} ({shared / whole:.0%})" if whole else "0"
    sums = [s for (kind, _), s in groups_of(column).items() if kind != JUDGE]
    calls, known = sum(s.calls for s in sums), sum(s.known["cache_read"] for s in sums)
    if known == calls:
        cached = str(sum(s.sums["cache_read"] for s in sums))
    else:
        cached = f"unknown ({known} of {calls} calls reported it)"
    return [f"{whole} ({words})", prefix, cached]


def cost_section(cmp: Comparison, prices: PriceList | None, charts: Mapping[str, Chart] | None = None) -> list[str]:
    """The section's markdown; its chart linked when drawn (in `charts`)."""
    if not cmp.columns:
        return []
    lines = [
        "## Cost and the prompt cache",
        "",
        "A provider serves the unchanged start of a request from its prompt cache at a fraction of the input "
        "price. The **cacheable prefix** of a call is the part identical to the conversation's previous request "
        "of its kind and session to the same model (an estimate: it ignores the provider's minimum cacheable "
        "length and expiry); a policy that rewrites the head of its view breaks it. Beside it, the prompt tokens "
        "the provider reported as served from its cache, unknown where a call did not report them (never "
        "filled from the estimate). Over each policy's answers and its own extra calls (not the judge's), "
        "calls served from the response cache included, scripted outputs and failed calls left out.",
        "",
        table(
            ["policy", "input tokens", "cacheable prefix", "provider-reported cached tokens"],
            [[c.header, *prefix_cells(c)] for c in cmp.columns],
        ),
        "",
    ]
    lines += chart_link(cmp, charts or {}, COST_CHART)
    if prices is None:
        return [*lines, "No prices given: `harness report --prices FILE` prices these calls.", ""]
    kinds = sorted({kind for c in cmp.columns for kind, _ in groups_of(c)}, key=_kind_order)
    body = []
    for column in cmp.columns:
        found = kind_costs(column, prices)
        cells = [_kind_cell(found.get(kind)) for kind in kinds]
        body.append([column.header, *cells, basis_text(total(found.values()))])
    return [
        *lines,
        f"Cost by call kind, in {prices.currency}, each cell as: "
        + " · ".join(WAY_WORDS[w] for w in WAYS)
        + f". Prices per million tokens from {' and '.join(prices.sources)}. "
        "Input tokens are provider-reported where every call of a group reported them, else the local "
        "tiktoken count, else the characters/4 estimate; output tokens provider-reported, else the reply's "
        "characters/4: the last column says which were used. A model without a price gives `no price`, "
        "never 0.",
        "",
        table(["policy", *kinds, "tokens priced"], body),
        "",
    ]


def _kind_cell(costs: Costs | None) -> str:
    if costs is None:
        return "no call"
    return " · ".join(money(costs.of(way)) for way in WAYS)


def _kind_order(kind: str) -> tuple[int, str]:
    order = ("answer", "summarizer", "writer", "compaction", JUDGE)
    return (order.index(kind) if kind in order else len(order) - 1, kind)
