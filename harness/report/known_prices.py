"""Prices of known model names from the `genai-prices` package (`--known-prices`; the optional
extra `prices`): the only module that imports it, and only when asked.

The package ships its price data; nothing is fetched (its auto-update is never started). A
price per million tokens is read by pricing a thousand tokens of each kind and scaling: a
thousand stays below the long-context tiers some models bill above 128k or 200k tokens, so the
price is the base one. Prices are in US dollars, as the package gives them. A name the package
does not know has no price (`no price`, never 0).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace

from harness.base.errors import InputError
from harness.report.prices import Price, PriceList

SAMPLE = 1000  # tokens priced per kind (see the docstring)
CURRENCY = "USD"


def known_prices() -> tuple[Callable[[str], Price | None], str]:
    """(name -> Price or None, `genai-prices VERSION`); InputError when the package is missing."""
    try:
        import genai_prices
    except ImportError:
        raise InputError(
            "--known-prices needs the genai-prices package: pip install 'context-policy-harness[prices]' "
            "(or give every model's prices with --prices FILE)"
        ) from None
    source = f"genai-prices {genai_prices.__version__}"

    @functools.cache
    def lookup(name: str) -> Price | None:
        def per_million(**tokens: int) -> float:
            found = genai_prices.calc_price(genai_prices.Usage(**tokens), name)
            return float(found.total_price) * (1_000_000 / SAMPLE)

        try:
            input_price = per_million(input_tokens=SAMPLE)
            return Price(
                input_price,
                per_million(input_tokens=SAMPLE, cache_read_tokens=SAMPLE),
                per_million(input_tokens=SAMPLE, cache_write_tokens=SAMPLE),
                per_million(output_tokens=SAMPLE),
                source,
            )
        except (LookupError, ValueError):  # a name it does not know, or a kind it does not price
            return None

    return lookup, source


def with_known(prices: PriceList | None) -> PriceList:
    """`prices` (a file's, or none) with the package's prices for every name the file does not give."""
    lookup, source = known_prices()
    if prices is None:
        return PriceList(CURRENCY, {}, (source,), lookup)
    if prices.currency != CURRENCY:
        raise InputError(
            f"--known-prices gives {CURRENCY} prices and the prices file {prices.currency}: "
            "give every model's prices in the file, or the file's in USD"
        )
    return replace(prices, sources=(*prices.sources, source), lookup=lookup)
