"""`harness compare RUN_A RUN_B`: a paired comparison of two runs, built from their results
alone (no model calls), and the gate a CI job applies to it.

The parts, one job each: `pairing` (which check of A is which of B, and why some have no
partner), `mcnemar` (the exact test and pass rates), `compare_tokens` (token figures by call
kind), `run_differences` (the manifests side by side), `gate` (`--fail-on`), and
`compare_markdown` and `compare_render` (markdown, CSV, JSON). Nothing here names a winner: it states differences and
their uncertainty.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from harness.base.errors import InputError
from harness.report.compare_tokens import TokenRow, token_rows
from harness.report.document import check_whole
from harness.report.mcnemar import Paired, paired
from harness.report.pairing import ITEM, Pairing, pair_runs
from harness.report.run_differences import Difference, differences
from harness.results.damage import CHECKS, naming_damage
from harness.results.rows import PROBE
from harness.results.spans import view_reader
from harness.results.tables import load_results
from harness.results.writer import RUN_ID

ALL_CHECKS = "all checks"  # the kind of a policy's row over every check kind
PASSED_TO_FAILED, FAILED_TO_PASSED = "passed→failed", "failed→passed"


@dataclass(eq=False)
class PairedComparison:
    """Two runs compared check by check; `paths` as the user gave them (for `harness show`)."""

    pairing: Pairing
    paths: tuple[Path, Path]
    notes: list[str] = field(default_factory=list)  # runs taken unverified, shards

    @cached_property
    def known(self) -> pd.DataFrame:
        """The pairs whose outcome is known in both runs (passed true or false)."""
        pairs = self.pairing.pairs
        return pairs[pairs["passed_a"].notna() & pairs["passed_b"].notna()]

    @cached_property
    def flips(self) -> pd.DataFrame:
        """The known pairs whose outcome differs, with their `direction`; passed→failed first."""
        known = self.known
        flips = known[known["passed_a"].astype(bool) != known["passed_b"].astype(bool)].copy()
        flips["direction"] = [PASSED_TO_FAILED if passed else FAILED_TO_PASSED for passed in flips["passed_a"]]
        return flips.sort_values("direction", key=lambda d: d == FAILED_TO_PASSED, kind="stable")

    @cached_property
    def half_known(self) -> pd.DataFrame:
        """Pairs whose outcome is known in one run only (not asked, or the policy stopped first)."""
        pairs = self.pairing.pairs
        return pairs[pairs["passed_a"].isna() != pairs["passed_b"].isna()]

    @property
    def passed_to_failed(self) -> int:
        return int((self.flips["direction"] == PASSED_TO_FAILED).sum())

    @property
    def failed_to_passed(self) -> int:
        return int((self.flips["direction"] == FAILED_TO_PASSED).sum())

    @cached_property
    def statistics(self) -> dict[tuple[str, str], Paired]:
        """(policy pair, check kind or ALL_CHECKS) -> its counts, in A's policy order, kinds as checked."""
        known = self.known
        found: dict[tuple[str, str], Paired] = {}
        for a_label in self.pairing.policy_pairs:
            label = self.pairing.pair_label(a_label)
            rows = known[known["pair_policy"] == label]
            if rows.empty:
                continue
            found[(label, ALL_CHECKS)] = paired(items(rows))
            seen = set(rows[PROBE.check])
            for kind in [k for k in CHECKS if k in seen] + sorted(seen - set(CHECKS)):
                found[(label, str(kind))] = paired(items(rows[rows[PROBE.check] == kind]))
        return found

    @property
    def per_policy(self) -> dict[str, Paired]:
        return {policy: counts for (policy, kind), counts in self.statistics.items() if kind == ALL_CHECKS}

    @cached_property
    def tokens(self) -> list[TokenRow]:
        return token_rows(self.pairing)

    @cached_property
    def differences(self) -> tuple[list[Difference], list[str]]:
        return differences(self.pairing.a.manifest, self.pairing.b.manifest)

    @property
    def run_ids(self) -> tuple[str, str]:
        return self.pairing.a.run_id, self.pairing.b.run_id

    def show_command(self, side: str, row: Any) -> list[str]:
        """The `harness show` arguments that print one side's view at a pair's probe."""
        results = self.pairing.a if side == "a" else self.pairing.b
        args = ["harness", "show", str(self.paths[0 if side == "a" else 1])]
        args += ["--chronology", str(row[PROBE.chronology]), "--turn", str(row[f"turn_{side}"])]
        args += ["--policy", str(row[f"policy_{side}"])]
        if len(results.manifest.models) > 1:
            args += ["--model", str(row[f"model_{side}"])]
        if int(row[PROBE.repetition]) != 1:
            args += ["--repetition", str(row[PROBE.repetition])]
        return args


def items(rows: pd.DataFrame) -> list[list[tuple[bool, bool]]]:
    """The known pairs grouped into items (a check across its repetitions)."""
    groups = rows.groupby(list(ITEM), sort=False, dropna=False)
    a, b = rows["passed_a"].astype(bool).to_numpy(), rows["passed_b"].astype(bool).to_numpy()
    return [[(bool(a[i]), bool(b[i])) for i in positions] for positions in groups.indices.values()]


@naming_damage  # a record the readers cannot use: one message naming its file, line and field
def compare_runs(first: Path, second: Path, notify: Callable[[str], None] | None = None) -> PairedComparison:
    """Load, check and pair two runs; refuse a run whose records were changed (as `harness report`)."""
    runs = [load_results(d, view_reader) for d in (first, second)]
    for results in runs:
        check_whole(results, notify)
        if not RUN_ID.fullmatch(results.run_id):
            raise InputError(f"{results.directory}: run id {results.run_id!r} cannot name a file; restore the manifest")
    comparison = PairedComparison(pair_runs(*runs), (first, second))
    comparison.pairing.pairs  # noqa: B018  read now, inside naming_damage: damage is named here
    return comparison


def file_name(comparison: PairedComparison, extension: str) -> str:
    """`paired-<A>-vs-<B>.<md|csv|json>`: the file `--reports DIR` writes."""
    a, b = comparison.run_ids
    return f"paired-{a}-vs-{b}.{extension}"
