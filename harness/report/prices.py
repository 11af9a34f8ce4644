"""Prices per million tokens, for the report's cost figures: `--prices FILE`, a YAML file whose
shape docs/reports.md ("Cost") shows (`currency`, and per model `input`, `cached_input`,
optional `cache_write`, `output`).

The file is read like every YAML input of the harness (a regular UTF-8 file within the size
limit, composed within limits by `harness.chronology.safe_yaml`), then checked by a strict
pydantic model: every problem at once as `file:line: field: message`, exit status 2, before
any report is written. A model the file does not name has no price (its cost is `no price`,
never 0), unless `--known-prices` looks it up in the `genai-prices` package
(harness.report.known_prices).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.base.errors import ChronologyError, Problem
from harness.base.files import FileRefused, read_regular_file
from harness.chronology.safe_yaml import YamlRefused, compose, shown
from harness.chronology.validation import Problems, Tree, kind_of, yaml_problem

PerMillion = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class ModelPriceSpec(BaseModel):
    """One model's prices per million tokens."""

    model_config = ConfigDict(extra="forbid", strict=False)

    input: PerMillion
    cached_input: PerMillion
    cache_write: PerMillion | None = None
    output: PerMillion


class PricesSpec(BaseModel):
    """A prices file."""

    model_config = ConfigDict(extra="forbid")

    currency: Annotated[str, Field(min_length=1, max_length=12)] = "USD"
    models: dict[str, ModelPriceSpec] = Field(min_length=1)


@dataclass(frozen=True)
class Price:
    """One model's prices per million tokens, and where they come from."""

    input: float
    cached_input: float
    cache_write: float | None  # None: a cache write costs the input price
    output: float
    source: str  # the prices file's path, or `genai-prices VERSION`

    @property
    def write(self) -> float:
        """What a token written to the prompt cache costs per million."""
        return self.input if self.cache_write is None else self.cache_write


@dataclass(frozen=True)
class PriceList:
    """The prices a report uses: the file's, then (with `--known-prices`) the package's."""

    currency: str
    models: dict[str, Price]
    sources: tuple[str, ...]  # what was asked: the file, `genai-prices VERSION`
    lookup: Callable[[str], Price | None] | None = None  # prices of names the file does not give

    def of(self, model: str) -> Price | None:
        """The price of a call model: by its name, or its name without the provider prefix."""
        for name in (model, model.split(":", 1)[-1]):
            if name in self.models:
                return self.models[name]
        return self.lookup(model.split(":", 1)[-1]) if self.lookup is not None else None


def read_prices(path: Path) -> PriceList:
    """The prices file at `path`; a ChronologyError (exit 2) listing every problem, located."""
    try:
        data = read_regular_file(str(path))
    except FileNotFoundError:
        raise _problem(path, "no such file; give a YAML prices file (see docs/reports.md#cost)") from None
    except (FileRefused, OSError) as exc:
        raise _problem(path, str(exc) if isinstance(exc, FileRefused) else f"cannot read it: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _problem(path, "not UTF-8 text; save it as UTF-8", data[: exc.start].count(b"\n") + 1) from None
    try:
        root, value = compose(text)
    except YamlRefused as exc:
        raise _problem(path, exc.message, exc.line) from None
    except yaml.YAMLError as exc:
        raise ChronologyError([yaml_problem(str(path), text, exc)]) from None
    if root is None or not isinstance(value, dict):
        found = "nothing" if root is None else kind_of(value)
        raise _problem(path, f"expected a mapping (currency:, models:); found {found}")
    problems = Problems(str(path), Tree.of(root))
    for loc, line in problems.tree.duplicates:
        problems.add(loc, f"duplicate key {shown(str(loc[-1]))}; each may appear once", line)
    problems.raise_if_any()
    try:
        spec = PricesSpec.model_validate(value)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            problems.add(tuple(error["loc"]), _message(error))
        problems.raise_if_any()
        raise  # unreachable: every error was added
    source = f"prices file {path}"
    models = {name: Price(**p.model_dump(), source=source) for name, p in spec.models.items()}
    return PriceList(spec.currency, models, (source,))


def _message(error: Any) -> str:
    """A pydantic error as what to fix."""
    kind, value, last = error["type"], error.get("input"), error["loc"][-1] if error["loc"] else ""
    if kind == "missing":
        return "missing; give the price per million tokens" if last != "models" else "missing; name each model's prices"
    if kind == "extra_forbidden":
        fields = PricesSpec.model_fields if len(error["loc"]) == 1 else ModelPriceSpec.model_fields
        return f"unknown field {shown(str(last))}; allowed: {', '.join(fields)}"
    if kind == "too_short":
        return "empty; name at least one model and its prices"
    if kind == "greater_than_equal":
        return f"{shown(value)} is negative; give a price per million tokens, 0 or more"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"{error['msg'].lower()}, found {kind_of(value)}"
    return str(error["msg"])


def _problem(path: Path, message: str, line: int | None = None) -> ChronologyError:
    return ChronologyError([Problem(str(path), line, "", message)])
