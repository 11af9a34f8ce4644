"""A prices file (`harness report --prices`): read like every YAML input, each problem located;
genai-prices for known names only when asked (`--known-prices`)."""

from __future__ import annotations

import sys
import types
from decimal import Decimal
from pathlib import Path

import pytest

from harness.base.errors import ChronologyError, InputError
from harness.report.known_prices import with_known
from harness.report.prices import Price, read_prices

GOOD = """\
currency: EUR
models:
  gpt-4o-mini: {input: 0.15, cached_input: 0.075, output: 0.6}
  claude: {input: 3, cached_input: 0.3, cache_write: 3.75, output: 15}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_prices_file_gives_each_models_prices_by_its_name_or_without_its_provider_prefix(tmp_path: Path) -> None:
    prices = read_prices(path := write(tmp_path, GOOD))
    assert prices.currency == "EUR"
    assert prices.of("openai:gpt-4o-mini") == Price(0.15, 0.075, None, 0.6, f"prices file {path}")
    assert prices.of("gpt-4o-mini") is prices.of("openai:gpt-4o-mini")
    assert prices.of("openai:gpt-4o-mini").write == 0.15  # no cache-write price: a write costs the input price
    assert prices.of("claude").write == 3.75
    assert prices.of("reference") is None  # not named: no price (the report says `no price`, never 0)


def test_every_problem_of_a_bad_prices_file_is_located_at_its_line_and_field(tmp_path: Path) -> None:
    text = "models:\n  m:\n    input: -1\n    cached: 2\n    output: lots\n"
    with pytest.raises(ChronologyError) as found:
        read_prices(path := write(tmp_path, text))
    assert str(found.value).splitlines() == [
        f"{path}:2: models.m.cached_input: missing; give the price per million tokens",
        f"{path}:3: models.m.input: -1 is negative; give a price per million tokens, 0 or more",
        f"{path}:4: models.m.cached: unknown field 'cached'; allowed: input, cached_input, cache_write, output",
        f"{path}:5: models.m.output: input should be a valid number, unable to parse string as a number, found a string",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n- b\n", "expected a mapping (currency:, models:); found a list"),
        ("models: {}\n", "models: empty; name at least one model and its prices"),
        (
            "models:\n  m: {input: 1, cached_input: 1, output: 1}\n  m: {input: 2, cached_input: 1, output: 1}\n",
            "duplicate key 'm'",
        ),
        ("models: [\n", "invalid YAML"),
    ],
    ids=["not-a-mapping", "no-model", "duplicate", "invalid-yaml"],
)
def test_a_prices_file_that_is_not_one_is_refused_with_what_to_do(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ChronologyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_prices(write(tmp_path, text))


def test_a_missing_prices_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ChronologyError, match="no such file; give a YAML prices file"):
        read_prices(tmp_path / "none.yaml")


def fake_genai_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in for the package: 1 per million input, 0.1 cached read, 1.25 write, 4 output."""
    module = types.ModuleType("genai_prices")

    def calc_price(usage: dict, name: str) -> object:
        if name != "gpt-4o":
            raise LookupError(f"Unable to find provider with model matching {name!r}")
        read, write = usage.get("cache_read_tokens", 0), usage.get("cache_write_tokens", 0)
        rest = usage.get("input_tokens", 0) - read - write
        total = (rest * 1 + read * Decimal("0.1") + write * Decimal("1.25") + usage.get("output_tokens", 0) * 4) / 10**6
        return types.SimpleNamespace(total_price=Decimal(total))

    module.calc_price, module.Usage, module.__version__ = calc_price, dict, "0.2.3"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "genai_prices", module)


def test_known_prices_come_from_genai_prices_per_million_with_its_version(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_genai_prices(monkeypatch)
    prices = with_known(None)
    assert prices.sources == ("genai-prices 0.2.3",) and prices.currency == "USD"
    assert prices.of("openai:gpt-4o") == pytest.approx(Price(1.0, 0.1, 1.25, 4.0, "genai-prices 0.2.3"))
    assert prices.of("unknown-model") is None


def test_a_files_prices_come_first_and_the_package_prices_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_genai_prices(monkeypatch)
    prices = with_known(read_prices(write(tmp_path, "models:\n  gpt-4o: {input: 9, cached_input: 9, output: 9}\n")))
    assert prices.of("gpt-4o").input == 9 and len(prices.sources) == 2
    with pytest.raises(InputError, match="USD prices and the prices file EUR"):
        with_known(read_prices(write(tmp_path, GOOD)))


def test_known_prices_without_the_package_say_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # import fails, as when not installed
    with pytest.raises(InputError, match=r"pip install 'context-policy-harness\[prices\]'"):
        with_known(None)
