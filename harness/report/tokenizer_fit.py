"""Whether the local tokenizer counts a model's tokens: per model that answered, its
provider-reported prompt tokens over the tiktoken count of the same requests, and the caveat
when that ratio is far from 1.

Both figures count the same request (tiktoken with its per-message framing), so a model whose
tokenizer and chat template match the encoding reports within a few percent of it. Outside
`LOW`–`HIGH` (a factor of 1.25 either way) the model counts its tokens another way: another
tokenizer, or a chat template that adds (or drops) many tokens. Its tiktoken figures then
still compare policies' requests with one another, but they are not its token counts.
"""

from __future__ import annotations

import pandas as pd

from harness.results.rows import CALL

LOW, HIGH = 0.8, 1.25  # symmetric: 1/1.25 = 0.8


def ratios(sums: dict[str, tuple[int, int, int]]) -> dict[str, tuple[float, int]]:
    """call_model -> (summed provider-reported prompt tokens / summed tiktoken tokens, the calls
    summed) of `prompt_sums` (of one set of calls, or several added), models sorted."""
    return {name: (reported / tiktoken, calls) for name, (reported, tiktoken, calls) in sorted(sums.items())}


def prompt_sums(calls: pd.DataFrame, usage: pd.DataFrame) -> dict[str, tuple[int, int, int]]:
    """call_model -> (summed provider-reported prompt tokens, summed tiktoken tokens, the calls
    summed), over the calls with both counts known and a tiktoken count above 0: sums, so those
    of several blocks of a run's calls add up to the run's (harness.report.totals)."""
    if calls.empty or CALL.call_model not in calls:
        return {}
    both = usage[f"known {CALL.reported_prompt_tokens}"].astype(bool) & usage[f"known {CALL.tiktoken_tokens}"].astype(
        bool
    )
    model = calls[CALL.call_model].astype(object)
    both &= model.notna() & (usage[f"sum {CALL.tiktoken_tokens}"] > 0)
    if not both.any():
        return {}
    summed = (
        pd.DataFrame(
            {
                "reported": usage.loc[both, f"sum {CALL.reported_prompt_tokens}"],
                "tiktoken": usage.loc[both, f"sum {CALL.tiktoken_tokens}"],
                "calls": 1,
            }
        )
        .groupby(model[both].astype(str), sort=True)[["reported", "tiktoken", "calls"]]
        .sum()
    )
    return {str(name): (int(r), int(t), int(n)) for name, r, t, n in summed.itertuples()}


def fit_caveats(ratios: dict[str, tuple[float, int]], encoding: str) -> list[str]:
    """A sentence per model whose ratio lies outside `LOW`–`HIGH`, saying what it means."""
    return [
        f"The provider-reported prompt tokens of {model} are {ratio:.2f}× the tiktoken ({encoding}) count of the "
        f"same requests (over {calls} calls that reported both). Outside {LOW}–{HIGH}, the local tokenizer does "
        "not count this model's tokens: the model uses another tokenizer, or its chat template adds or drops many "
        "tokens. Its tiktoken figures still compare the policies' requests with one another, but they are not its "
        "token counts; its provider-reported figures are."
        for model, (ratio, calls) in ratios.items()
        if not LOW <= ratio <= HIGH
    ]
