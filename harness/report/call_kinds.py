"""Cost by call kind: the calls and tokens of each policy per call kind (answer, summarizer,
writer, judge, ...), one row per (policy, kind), placed under the policies' side-by-side table,
whose one cost column totals them.

Over the calls sent in this run (calls.jsonl; a call served from the response cache sent no
request and is counted apart, on its own row): estimate (characters/4), tiktoken (local count)
and provider-reported figures kept apart; a summed figure is unknown unless every call has it
(never 0), and a provider-reported sum says how many of the calls reported it. Retries as the
token figures count them (`harness.report.totals.retries`). The same figures are columns
of `policies.csv`; money by kind, given prices, is in the cost section (`cost_section`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from harness.report.markdown import table
from harness.report.token_figures import CALL_KINDS, reported_words
from harness.report.totals import REPORTED, RETRIES, KindFigures
from harness.results.rows import CALL

JUDGE = "judge"  # the judge's calls measure the run: never part of a policy's own cost
COUNTERS = ((CALL.tiktoken_tokens, "tiktoken"), (CALL.estimate_tokens, "estimate"))  # preferred first


def known_sum(figures: KindFigures, name: str) -> int | None:
    """A summed field's total, None (unknown) unless every call has a value."""
    return figures.sums[name] if figures.known[name] == figures.calls else None


def kinds_of(kinds: Iterable[Mapping[str, KindFigures]]) -> list[str]:
    """The call kinds any policy has: the usual ones in order, then any other a policy names."""
    seen = {k for found in kinds for k in found}
    return [k for k in CALL_KINDS if k in seen] + sorted(seen - set(CALL_KINDS))


def reported_text(figures: KindFigures, name: str) -> str:
    """A provider-reported total with how many calls reported it, as the token figures word it:
    where some did not, the total is unknown and the sum over those that did is named as such."""
    summed = figures.sums[name]
    return reported_words(str(summed), summed, figures.known[name], figures.calls, figures.invalid[name])


def own_tokens(kinds: Mapping[str, KindFigures]) -> str:
    """The side-by-side table's cost cell without prices: the prompt tokens of the policy's own
    calls (not the judge's), by the first counter every one of them has, named; else unknown."""
    own = [f for kind, f in kinds.items() if kind != JUDGE and f.calls]
    if not own:
        return "no call"
    for name, label in COUNTERS:
        values = [known_sum(f, name) for f in own]
        if all(v is not None for v in values):
            return f"{sum(v for v in values if v is not None)} ({label})"
    return "unknown (no counter for every call)"


def kind_row(header: str, kind: str, figures: KindFigures) -> list[str]:
    sums = [known_sum(figures, name) for name in (RETRIES, CALL.estimate_tokens, CALL.tiktoken_tokens)]
    return [
        header,
        kind,
        str(figures.calls),
        *("unknown" if t is None else str(t) for t in sums),
        *(reported_text(figures, name) for name in REPORTED),
    ]


HEADER = [
    "policy",
    "call kind",
    "calls sent",
    "retries",
    "estimate tokens",
    "tiktoken tokens",
    "provider-reported prompt tokens",
    "provider-reported completion tokens",
]


def by_call_kind(rows: Iterable[tuple[str, Mapping[str, KindFigures], int]]) -> list[str]:
    """The table's markdown: per (policy header, its kinds, its calls from the response cache),
    a row per kind with calls, and one for the calls served from the cache when there were any."""
    body: list[list[str]] = []
    for header, kinds, cached in rows:
        body += [kind_row(header, k, kinds[k]) for k in kinds_of([kinds]) if kinds[k].calls]
        if cached:
            body.append([header, "served from the response cache", str(cached), "", "", "", "", ""])
    if not body:
        return []
    return [
        "### Cost by call kind",
        "",
        "The calls each policy sent in this run, per call kind (the judge's apart: they measure the run), and the "
        "prompt tokens of their requests: estimate (characters/4), tiktoken (local count) and provider-reported "
        "figures kept apart; a figure is unknown unless every call has it (never 0), and a provider-reported sum "
        "says how many of the calls reported it. Retries are the requests beyond each call's first; calls served "
        "from the response cache sent no request and are counted on their own row.",
        "",
        table(HEADER, body),
        "",
    ]
