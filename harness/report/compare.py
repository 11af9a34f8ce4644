"""`harness compare RUN_A RUN_B`: a paired comparison of two runs, built from their results
alone (no model calls), and the gate a CI job applies to it.

The parts, one job each: `completeness` (a run that did not complete: refused, or what it is
missing), `pairing` (which check of A is which of B, and why some have no partner), `mcnemar`
(the sign test over conversations, Holm's correction, pass rates), `compare_tokens` (token figures
by call kind), `run_differences` (the manifests side by side), `gate` (`--fail-on`), and
`compare_markdown` and `compare_render` (markdown, CSV, JSON). Nothing here names a winner: it
states differences and their uncertainty.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from harness.base.errors import InputError
from harness.base.text import path_shown, shown
from harness.report import controls
from harness.report.compare_tokens import TokenRow, token_rows
from harness.report.completeness import check_complete
from harness.report.document import check_whole
from harness.report.mcnemar import Conversation, Paired, holm, paired
from harness.report.names import paired_stem
from harness.report.pairing import CONVERSATION, ITEM, RUN_REPETITION, SIDES, Pairing, pair_runs
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
    def passable_flips(self) -> tuple[int, int] | None:
        """Of the flips of every policy but the control, how many passed, in the run where they
        passed, a check the control `none` of that run passed too (harness.report.controls), and
        how many flips those policies have; None unless both runs ran the control."""
        sides = [controls.passable_checks(r.probes, r.manifest) for r in (self.pairing.a, self.pairing.b)]
        if any(found is None for found in sides):
            return None
        count = 0
        for side, found, direction in zip(SIDES, sides, (PASSED_TO_FAILED, FAILED_TO_PASSED), strict=True):
            flips = self.flips[self.flips["direction"] == direction]
            own = {PROBE.policy: f"{PROBE.policy}_{side}", PROBE.model: f"{PROBE.model}_{side}"}
            own[PROBE.repetition] = f"{RUN_REPETITION}_{side}"  # the side's own repetition, as its probes.csv has it
            keys = [*controls.KEY, PROBE.policy]
            mine = pd.DataFrame({k: flips[own.get(k, k)].astype(object) for k in keys})
            mine["nth"] = flips["nth"].to_numpy(dtype="int64")
            assert found is not None
            hits = mine.merge(found.assign(hit=True), on=[*keys, "nth"], how="left")
            count += int(hits["hit"].astype("boolean").fillna(False).sum())
        labels = set(controls.control_labels(self.pairing.a.manifest))
        return count, int((~self.flips[f"{PROBE.policy}_a"].astype(object).isin(labels)).sum())

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
            found[(label, ALL_CHECKS)] = paired(conversations(rows))
            seen = set(rows[PROBE.check])
            for kind in [k for k in CHECKS if k in seen] + sorted(seen - set(CHECKS)):
                found[(label, str(kind))] = paired(conversations(rows[rows[PROBE.check] == kind]))
        return found

    @cached_property
    def adjusted(self) -> dict[tuple[str, str], float]:
        """Each row's p-value adjusted by Holm's correction over every row of `statistics`: the
        tests `--fail-on p<X` reads."""
        keys = list(self.statistics)
        return dict(zip(keys, holm([self.statistics[k].p_value for k in keys]), strict=True))

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
        own = int(row[f"{RUN_REPETITION}_{side}"])  # a deterministic run's one repetition pairs with each
        if own != 1:
            args += ["--repetition", str(own)]
        return args


def conversations(rows: pd.DataFrame) -> list[Conversation]:
    """The known pairs grouped into conversations (the test's units), each into its items (a check
    across its repetitions)."""
    a, b = rows["passed_a"].astype(bool).to_numpy(), rows["passed_b"].astype(bool).to_numpy()
    found: dict[tuple, list[list[tuple[bool, bool]]]] = {}
    for key, positions in rows.reset_index(drop=True).groupby(list(ITEM), sort=False, dropna=False).indices.items():
        conversation = key[: len(CONVERSATION)]  # ITEM begins with the conversation's key
        found.setdefault(conversation, []).append([(bool(a[i]), bool(b[i])) for i in positions])
    return list(found.values())


@naming_damage  # a record the readers cannot use: one message naming its file, line and field
def compare_runs(
    first: Path, second: Path, notify: Callable[[str], None] | None = None, allow_incomplete: bool = False
) -> PairedComparison:
    """Load, check and pair two runs; refuse a run whose records were changed (as `harness report`),
    and one that did not complete unless `allow_incomplete` (then its note goes to `notify` and the
    comparison, and only its finished conversations are paired)."""
    check_two_folders(first, second)
    runs = [load_results(d, view_reader) for d in (first, second)]
    incomplete = [check_complete(results, allow_incomplete) for results in runs]
    for results in runs:
        check_whole(results, notify)
        if not RUN_ID.fullmatch(results.run_id):
            raise InputError(
                f"{results.directory}: run id {shown(results.run_id)} cannot name a file; restore the manifest"
            )
    finished = tuple(None if found is None else found.finished for found in incomplete)
    comparison = PairedComparison(pair_runs(*runs, finished), (first, second))
    for found in incomplete:
        if found is not None:
            comparison.notes.append(found.note())
            if notify:
                notify(found.note())
    comparison.pairing.pairs  # noqa: B018  read now, inside naming_damage: damage is named here
    return comparison


def check_two_folders(first: Path, second: Path) -> None:
    """Refuse one folder given as both runs (also through a link or another spelling of its
    path): every check would pair with itself, so "no flips" would say nothing. Two folders
    holding the same run (a copy) or the same run id are compared: two runs of one set-up are
    how an A/A check measures what changes by chance."""
    try:
        same = first.samefile(second)
    except OSError:  # a folder that cannot be read is named by `load_results`
        return
    if same:
        raise InputError(
            f"{path_shown(first)} and {path_shown(second)} are the same folder: a run compared with itself pairs "
            "each check with itself; give two runs (for an A/A check, two runs of the same settings)"
        )


def file_name(comparison: PairedComparison, extension: str) -> str:
    """`paired-<A>+<B>.<md|csv|json>`: the file `--reports DIR` writes (harness.report.names)."""
    return f"{paired_stem(*comparison.run_ids)}.{extension}"
