"""`--fail-on p<X` is calibrated before it gates anything (SPEC §10): over A/A comparisons (one seeded
lossy model against itself under another seed: nothing changed) it trips at most as often as its
nominal level allows, and it still trips on a real change.

Each run replays the shipped library (15 chronologies) under the default policies in process, as
`harness run` does, without its report; the comparison is the one `harness compare` makes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scipy.stats import binom

from harness.chronology.loading import load_chronologies
from harness.models.catalog import model_factory
from harness.report.compare import compare_runs
from harness.report.gate import Condition, verdict
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec
from tests.conftest import builtin_registry
from tests.paths import SHIPPED

REGISTRY = builtin_registry()
LEVEL = 0.05
GATE = [Condition("p", LEVEL)]
PAIRS = 20  # A/A comparisons, of two runs each: no run is in two pairs, so the pairs are independent
# If the gate holds its level, the pairs that trip are at most binomial(PAIRS, LEVEL). Allowed: its
# 99% upper bound, binom.ppf(0.99, 20, 0.05) = 4 (P(more than 4) = 0.0026): a calibrated gate fails
# this test less than once in a hundred seeds; a test over checks (the gate before) tripped in 5 of
# 12 such pairs, far past it.
ALLOWED = int(binom.ppf(0.99, PAIRS, LEVEL))
LOSSIER = "reference:lossy:writer_miss=0.6,summary_drop=0.8,seed=1"  # misses facts and summary clauses often


def library() -> list[Path]:
    lines = (SHIPPED / "library.txt").read_text(encoding="utf-8").splitlines()
    return [SHIPPED / line.strip() for line in lines if line.strip() and not line.startswith("#")]


@pytest.fixture(scope="module")
def chronologies() -> list:
    return load_chronologies(library())


def run(chronologies: list, directory: Path, model: str, seed: int = 0) -> Path:
    """A run of the library under the default policies with `model` and `--seed` `seed`."""
    spec = RunSpec(chronologies, REGISTRY.default_specs(), [model], seed=seed)
    run_batch(spec, directory, directory.name, Runtime(REGISTRY, factory=model_factory(spec.options, spec.seed)))
    return directory


def gate(a: Path, b: Path) -> str | None:
    comparison = compare_runs(a, b)
    return verdict(GATE, comparison.passed_to_failed, comparison.statistics, comparison.adjusted)


@pytest.mark.slow  # 40 runs of the library (about two minutes on one core)
def test_a_lossy_model_against_itself_under_another_seed_trips_the_gate_at_its_nominal_rate(
    chronologies: list, tmp_path: Path
) -> None:
    tripped = []
    for pair in range(PAIRS):
        a = run(chronologies, tmp_path / f"a{pair}", "reference:lossy", seed=2 * pair + 1)
        b = run(chronologies, tmp_path / f"b{pair}", "reference:lossy", seed=2 * pair + 2)
        if (line := gate(a, b)) is not None:
            tripped.append(line)
        shutil.rmtree(a)
        shutil.rmtree(b)
    assert len(tripped) <= ALLOWED, tripped


@pytest.mark.slow  # two runs of the library
def test_it_still_trips_on_a_real_change(chronologies: list, tmp_path: Path) -> None:
    reference = run(chronologies, tmp_path / "reference", "reference")
    lossier = run(chronologies, tmp_path / "lossier", LOSSIER)
    line = gate(reference, lossier)
    assert line is not None and "more conversations lost pass share than gained it at p<0.05" in line
    assert gate(lossier, reference) is None  # the other way round, B gained: no alarm
