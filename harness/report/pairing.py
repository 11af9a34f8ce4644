"""Pairing the checks of two runs: each check of run A with the same check of run B, on
(chronology, policy, probe, check, subject, repetition) (SPEC §10) from `probes.csv`. When
chronologies, policies, models and repetitions count as the same is in docs/comparing.md, "How
checks are paired"; in short, a changed chronology file pairs nothing, a deterministic model's one
repetition pairs with every repetition of the other run, and an incomplete run pairs only the
conversations it finished.

Every check of one run that has no partner in the other is kept, with the reason: chronology
changed, chronology missing, policy missing, model missing, repetition missing, or check
missing (the same chronology file, checked otherwise: another harness version). Nothing is
dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import pandas as pd

from harness.base.errors import InputError
from harness.base.identity import IDENTITY, RunKey
from harness.base.text import visible
from harness.results.rows import PROBE
from harness.results.tables import Results

SIDES = ("a", "b")
# The columns of a probes.csv row kept per side, with the side's suffix (`passed_a`, `passed_b`).
PER_SIDE = (
    PROBE.policy,
    PROBE.model,
    PROBE.turn,
    PROBE.status,
    PROBE.passed,
    PROBE.in_view,
    PROBE.in_answer,
    PROBE.cause,
    PROBE.lost_at,
    PROBE.note,
)
# The pair's own columns: `policy` is the pairing label (the A label; both when they differ).
KEY = (PROBE.chronology, "pair_policy", "pair_model", PROBE.repetition, PROBE.probe, PROBE.check, PROBE.subject, "nth")
ITEM = tuple(k for k in KEY if k != PROBE.repetition)  # a check across its repetitions
CONVERSATION = ITEM[:3]  # chronology, policy pair, model pair: the unit of the test (harness.report.mcnemar)
RUN_REPETITION = "run_repetition"  # a side's own repetition (`run_repetition_a`): the key's may be the other run's

CHRONOLOGY_CHANGED = "chronology changed (sha256 differs), not paired"
CHRONOLOGY_MISSING = "chronology not in the other run"
POLICY_MISSING = "policy not in the other run"
MODEL_MISSING = "model not in the other run"
REPETITION_MISSING = "repetition not in the other run"
UNFINISHED = "conversation not finished in the other run (an incomplete run)"
CHECK_MISSING = "check not in the other run (same chronology file)"


@dataclass(frozen=True)
class ChronologyPair:
    """One chronology name of either run, with its sha256 in each (None: not in that run)."""

    name: str
    sha256_a: str | None
    sha256_b: str | None

    @property
    def paired(self) -> bool:
        return self.sha256_a is not None and self.sha256_a == self.sha256_b

    @property
    def status(self) -> str:
        if self.sha256_a is None or self.sha256_b is None:
            return f"only in run {'B' if self.sha256_a is None else 'A'}"
        return "same file" if self.paired else "changed: not paired"


@dataclass(eq=False)
class Pairing:
    """Two runs' checks, paired (`pairs`) or found in one run only (`unpaired`)."""

    a: Results
    b: Results
    policy_pairs: dict[str, str]  # A label -> B label, in A's declared order
    model_keyed: bool  # the model is part of the pair (both runs ran the same models)
    # Per side (A, B), the conversations it finished when it is incomplete; None: it completed.
    finished: tuple[frozenset[RunKey] | None, frozenset[RunKey] | None] = (None, None)

    @cached_property
    def chronologies(self) -> list[ChronologyPair]:
        """Every chronology of either run, A's order first."""
        a = {c["name"]: c.get("sha256") for c in self.a.manifest.chronologies}
        b = {c["name"]: c.get("sha256") for c in self.b.manifest.chronologies}
        names = list(dict.fromkeys([*a, *b]))
        return [ChronologyPair(n, a.get(n), b.get(n)) for n in names]

    def pair_label(self, a_label: str) -> str:
        """A policy pair's name: its label, or `A label → B label` when the parameters differ."""
        b_label = self.policy_pairs[a_label]
        return a_label if a_label == b_label else f"{a_label} → {b_label}"

    @cached_property
    def _merged(self) -> pd.DataFrame:
        paired = {c.name for c in self.chronologies if c.paired}
        sides = [keyed(self, side, paired) for side in SIDES]
        return sides[0].merge(sides[1], on=list(KEY), how="outer", suffixes=("_a", "_b"), indicator=True, sort=False)

    @cached_property
    def pairs(self) -> pd.DataFrame:
        """One row per paired check and repetition: the key, then each side's cells (`passed_a`, ...)."""
        merged = self._merged
        return merged[merged["_merge"] == "both"].drop(columns="_merge").reset_index(drop=True)

    @cached_property
    def unpaired(self) -> pd.DataFrame:
        """Each check of one run without a partner: `run` (A or B), its own cells, and `reason`."""
        parts = []
        for side, where in (("a", "left_only"), ("b", "right_only")):
            rows = self._merged[self._merged["_merge"] == where]
            # A deterministic run's copy for a repetition its partner lacks is no check of its own.
            rows = rows[rows[PROBE.repetition] == rows[f"{RUN_REPETITION}_{side}"]]
            frame = pd.DataFrame(
                {
                    "run": side.upper(),
                    PROBE.chronology: rows[PROBE.chronology],
                    PROBE.policy: rows[f"{PROBE.policy}_{side}"],
                    PROBE.model: rows[f"{PROBE.model}_{side}"],
                    PROBE.repetition: rows[f"{RUN_REPETITION}_{side}"],
                    PROBE.probe: rows[PROBE.probe],
                    PROBE.check: rows[PROBE.check],
                    PROBE.subject: rows[PROBE.subject],
                }
            )
            frame["reason"] = self._reasons(frame, side, self.b if side == "a" else self.a)
            parts.append(frame)
        return pd.concat(parts, ignore_index=True)

    def _reasons(self, frame: pd.DataFrame, own_side: str, other: Results) -> list[str]:
        status = {c.name: c for c in self.chronologies}
        partners = self.policy_pairs if own_side == "a" else {b: a for a, b in self.policy_pairs.items()}
        other_models = set(other.manifest.models)
        other_reps = conversations(other)
        other_finished = self.finished[1 if own_side == "a" else 0]
        reasons = []
        for chronology, policy, model, repetition in zip(*(frame[name] for name in IDENTITY), strict=True):
            found = status[chronology]
            if found.sha256_a is None or found.sha256_b is None:
                reasons.append(CHRONOLOGY_MISSING)
            elif not found.paired:
                reasons.append(CHRONOLOGY_CHANGED)
            elif policy not in partners:
                reasons.append(POLICY_MISSING)
            elif self.model_keyed and model not in other_models:
                reasons.append(MODEL_MISSING)
            # An incomplete run that finished no repetition of this conversation (of any model
            # when models do not pair).
            elif other_finished is not None and not any(
                k[:2] == (chronology, partners[policy]) and (not self.model_keyed or k[2] == model)
                for k in other_finished
            ):
                reasons.append(UNFINISHED)
            else:
                key = (chronology, partners[policy], model if self.model_keyed else None)
                reps = other_reps.get(key, set())
                reasons.append(REPETITION_MISSING if int(repetition) not in reps else CHECK_MISSING)
        return reasons


def conversations(results: Results) -> dict[tuple, set[int]]:
    """(chronology, policy, model) -> the repetitions a run's probes.csv holds; also keyed with
    model None (any model)."""
    found: dict[tuple, set[int]] = {}
    for keys in ([PROBE.chronology, PROBE.policy, PROBE.model], [PROBE.chronology, PROBE.policy]):
        for key, repetitions in results.probes.groupby(keys, observed=True)[PROBE.repetition].unique().items():
            found[(*key, None)[:3]] = {int(r) for r in repetitions}
    return found


def keyed(pairing: Pairing, side: str, paired: set[str]) -> pd.DataFrame:
    """One run's probes.csv rows with the pair's key: chronologies not paired keep their rows
    (they show as unpaired), under a key no row of the other run has."""
    results, other = (pairing.a, pairing.b) if side == "a" else (pairing.b, pairing.a)
    probes = finished_rows(results.probes, pairing.finished[SIDES.index(side)])
    frame = probes[[PROBE.chronology, PROBE.repetition, PROBE.probe, PROBE.check, PROBE.subject, *PER_SIDE]].copy()
    frame[RUN_REPETITION] = frame[PROBE.repetition]
    frame = once_for_each(frame, results, other, pairing.model_keyed)
    if side == "a":
        labels = {a: pairing.pair_label(a) for a in pairing.policy_pairs}
    else:
        labels = {b: pairing.pair_label(a) for a, b in pairing.policy_pairs.items()}
    frame["pair_policy"] = [labels.get(p, f"{side}:{p}") for p in frame[PROBE.policy]]
    frame["pair_model"] = frame[PROBE.model] if pairing.model_keyed else ""
    unpaired = ~frame[PROBE.chronology].isin(paired)
    frame.loc[unpaired, "pair_policy"] = side + ":" + frame.loc[unpaired, PROBE.policy].astype(str)
    frame["nth"] = frame.groupby(list(KEY[:-1]), sort=False, dropna=False).cumcount()
    columns = {c: f"{c}_{side}" for c in (*PER_SIDE, RUN_REPETITION)}
    return frame.rename(columns=columns)


def finished_rows(probes: pd.DataFrame, finished: frozenset[RunKey] | None) -> pd.DataFrame:
    """The probes.csv rows of the conversations an incomplete run finished (all rows of a complete
    run): an unfinished conversation's rows stop wherever it was cut."""
    if finished is None:
        return probes
    keys = zip(*(probes[name] for name in IDENTITY), strict=True)
    return probes[[(c, p, m, int(r)) in finished for c, p, m, r in keys]]


def deterministic(results: Results, model: str) -> bool:
    """Whether a run recorded `model` as deterministic: it ran it once though more repetitions were
    asked (`repetitions_run`, as harness.run.spec decides), or ran one repetition of a run whose
    `samples` says nothing was drawn (every model deterministic). A run of one repetition that
    records neither (a model beside a sampled role, an older manifest) is not taken as deterministic."""
    m = results.manifest
    if m.repetitions_run.get(model) != 1:
        return False
    return m.repetitions > 1 or (m.samples or "").startswith("none drawn")


def once_for_each(frame: pd.DataFrame, results: Results, other: Results, model_keyed: bool) -> pd.DataFrame:
    """A deterministic model's rows, once per repetition its partner ran in the other run (its one
    repetition stands for each of them); other rows as they are. The rows keep their own
    repetition in `RUN_REPETITION`."""
    copies = []
    for model in results.manifest.models:
        partner = model if model_keyed else other.manifest.models[0]
        if not deterministic(results, model) or deterministic(other, partner):
            continue
        mine = frame[frame[PROBE.model] == model]
        runs = other.manifest.repetitions_run.get(partner, other.manifest.repetitions)
        copies += [mine.assign(**{PROBE.repetition: r}) for r in range(2, runs + 1)]
    return pd.concat([frame, *copies], ignore_index=True) if copies else frame


def pair_policies(a: Results, b: Results) -> dict[str, str]:
    """A label -> B label: the same label, else the one unpaired label of the same policy name."""
    names_a = {p["label"]: p.get("name", p["label"]) for p in a.manifest.policies}
    names_b = {p["label"]: p.get("name", p["label"]) for p in b.manifest.policies}
    pairs = {label: label for label in names_a if label in names_b}
    left_a = [label for label in names_a if label not in pairs]
    left_b = [label for label in names_b if label not in names_a]
    for label in left_a:
        same = [other for other in left_b if names_b[other] == names_a[label]]
        if len(same) == 1 and sum(names_a[x] == names_a[label] for x in left_a) == 1:
            pairs[label] = same[0]
    return {label: pairs[label] for label in names_a if label in pairs}


def pair_runs(a: Results, b: Results, finished: tuple[frozenset[RunKey] | None, ...] = (None, None)) -> Pairing:
    """The pairing of two runs; an InputError when their models cannot be paired. `finished`: per
    run, the conversations an incomplete run finished (None: the run completed)."""
    models_a, models_b = list(a.manifest.models), list(b.manifest.models)
    keyed_by_model = sorted(models_a) == sorted(models_b)
    if not keyed_by_model and (len(models_a) != 1 or len(models_b) != 1):
        raise InputError(
            f"{a.directory} ran {', '.join(map(visible, models_a))} and {b.directory} ran "
            f"{', '.join(map(visible, models_b))}: runs of different models pair only when each ran one "
            "model; compare runs of one model each (harness run --model NAME)"
        )
    return Pairing(a, b, pair_policies(a, b), keyed_by_model, (finished[0], finished[1]))
