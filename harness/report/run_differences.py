"""What differed between two runs, from their manifests: the settings a reader needs to know
before reading any flip (models, sampling, policies and their parameters, chronology files,
repetitions, versions). Each field is compared as recorded; a field one manifest lacks reads
`not recorded`, never as a default."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from harness.results.rows import Manifest

# Manifest fields compared, in the order shown, with what each is.
COMPARED = (
    ("models", "answering models"),
    ("model_settings", "each model's settings as it ran"),
    ("model_options", "how models are reached, and sampling (temperature, top_p, max_tokens)"),
    ("seed", "seed passed to models that take one"),
    ("live", "the model answered every turn"),
    ("repetitions", "repetitions requested"),
    ("repetitions_run", "repetitions run per model"),
    ("samples", "policies' answers: one draw or independent ones"),
    ("policies", "policies with their parameters"),
    ("tokenizer", "local tokenizer"),
    ("harness_version", "harness version"),
    ("python", "Python version"),
    ("packages", "package versions"),
)


@dataclass(frozen=True)
class Difference:
    """One manifest field: its value in each run, as compact JSON text."""

    field: str
    what: str
    a: str
    b: str


def shown(value: Any) -> str:
    """A manifest value as compact JSON text (None: `not recorded`)."""
    if value is None:
        return "not recorded"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def differences(a: Manifest, b: Manifest) -> tuple[list[Difference], list[str]]:
    """(the compared fields that differ, the names of those that agree)."""
    differ, same = [], []
    for name, what in COMPARED:
        left, right = getattr(a, name, None), getattr(b, name, None)
        if left == right:
            same.append(name)
        elif isinstance(left, dict) and isinstance(right, dict):
            differ += [
                Difference(f"{name}.{key}", what, shown(left.get(key)), shown(right.get(key)))
                for key in sorted(set(left) | set(right), key=str)
                if left.get(key) != right.get(key)
            ]
        else:
            differ.append(Difference(name, what, shown(left), shown(right)))
    return differ, same
