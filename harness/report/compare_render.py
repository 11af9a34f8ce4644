"""`harness compare`'s output: markdown (the default, harness.report.compare_markdown), CSV (one row
per check of either run) or JSON (every section as data)."""

from __future__ import annotations

import io
import json
import shlex
from typing import Any

import pandas as pd

from harness.report.compare import ALL_CHECKS, PairedComparison
from harness.report.compare_markdown import markdown, summary_line
from harness.report.compare_tokens import sums_frame
from harness.report.mcnemar import METHOD, Rates
from harness.results.rows import PROBE

FORMATS = ("md", "csv", "json")


def render(comparison: PairedComparison, form: str) -> str:
    """The comparison in one of `FORMATS`."""
    return {"md": markdown, "csv": csv_text, "json": json_text}[form](comparison)


CSV_COLUMNS = (
    "outcome",
    PROBE.chronology,
    "policy_a",
    "policy_b",
    "model_a",
    "model_b",
    PROBE.repetition,
    PROBE.probe,
    PROBE.check,
    PROBE.subject,
    "passed_a",
    "passed_b",
    "cause_a",
    "lost_at_a",
    "cause_b",
    "lost_at_b",
    "reason",
)


def every_check(c: PairedComparison) -> pd.DataFrame:
    """One row per check of either run: paired (with its `outcome`) or in one run only (`reason`)."""
    pairs = c.pairing.pairs.copy()
    a, b = pairs["passed_a"], pairs["passed_b"]
    pairs["outcome"] = [pair_outcome(x, y) for x, y in zip(a, b, strict=True)]
    pairs["reason"] = None
    unpaired = c.pairing.unpaired
    alone = pd.DataFrame(
        {
            "outcome": "in run " + unpaired["run"] + " only",
            PROBE.chronology: unpaired[PROBE.chronology],
            PROBE.repetition: unpaired[PROBE.repetition],
            PROBE.probe: unpaired[PROBE.probe],
            PROBE.check: unpaired[PROBE.check],
            PROBE.subject: unpaired[PROBE.subject],
            "reason": unpaired["reason"],
        }
    )
    for side in ("a", "b"):
        mine = unpaired["run"] == side.upper()
        alone[f"policy_{side}"] = unpaired[PROBE.policy].where(mine)
        alone[f"model_{side}"] = unpaired[PROBE.model].where(mine)
    return pd.concat([pairs, alone], ignore_index=True).reindex(columns=list(CSV_COLUMNS))


def pair_outcome(a: Any, b: Any) -> str:
    words = {True: "passed", False: "failed"}
    left = "no outcome" if pd.isna(a) else words[bool(a)]
    right = "no outcome" if pd.isna(b) else words[bool(b)]
    return left if left == right else f"{left}→{right}"


def csv_text(c: PairedComparison) -> str:
    out = io.StringIO()
    every_check(c).to_csv(out, index=False, lineterminator="\n")
    return out.getvalue()


def plain(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: missing values as null, numpy scalars as Python ones."""
    return json.loads(frame.to_json(orient="records", force_ascii=False))


def rates_record(r: Rates) -> dict[str, Any]:
    return {
        "pairs_passed": r.passed,
        "pairs": r.pairs,
        "pass_at_1": r.pass_at_1,
        "items_passed_every_repetition": r.items_passed,
        "items": r.items,
        "pass_power_k": r.pass_power_k,
    }


def json_text(c: PairedComparison) -> str:
    differ, same = c.differences
    flips = c.flips.copy()
    flips["show_a"] = [shlex.join(c.show_command("a", r)) for r in flips.to_dict("records")]
    flips["show_b"] = [shlex.join(c.show_command("b", r)) for r in flips.to_dict("records")]
    statistics = [
        {
            "policy": policy,
            "check_kind": kind,
            "pairs": s.pairs,
            "pairs_passed_to_failed": s.passed_to_failed,
            "pairs_failed_to_passed": s.failed_to_passed,
            "items": s.items,
            "items_passed_to_failed": s.items_passed_to_failed,
            "items_failed_to_passed": s.items_failed_to_passed,
            "conversations": s.conversations,
            "conversations_lower_in_b": s.conversations_lower,
            "conversations_higher_in_b": s.conversations_higher,
            "sign_test_p_conversations": s.p_value,
            "holm_adjusted_p": c.adjusted[(policy, kind)],
            "a": rates_record(s.a),
            "b": rates_record(s.b),
        }
        for (policy, kind), s in c.statistics.items()
    ]
    unpaired = c.pairing.unpaired.groupby(["run", PROBE.chronology, PROBE.policy, "reason"], sort=False)
    data = {
        "runs": {
            "a": {"path": str(c.paths[0]), "run_id": c.run_ids[0]},
            "b": {"path": str(c.paths[1]), "run_id": c.run_ids[1]},
        },
        "summary": summary_line(c),
        "method": METHOD,
        "tests": len(c.statistics),
        "passed_to_failed": c.passed_to_failed,
        "failed_to_passed": c.failed_to_passed,
        "differences": [{"field": d.field, "what": d.what, "a": d.a, "b": d.b} for d in differ],
        "same": same,
        "chronologies": [
            {"name": x.name, "sha256_a": x.sha256_a, "sha256_b": x.sha256_b, "paired": x.paired}
            for x in c.pairing.chronologies
        ],
        "policies": [{"a": a, "b": b} for a, b in c.pairing.policy_pairs.items()],
        "flips": plain(flips.drop(columns=["nth", "pair_model"])),
        "outcome_in_one_run_only": plain(c.half_known.drop(columns=["nth", "pair_model"])),
        "statistics": statistics,
        "all_checks_kind": ALL_CHECKS,
        "tokens": plain(sums_frame(c.tokens)),
        "checks_in_one_run_only": [
            {"run": k[0], "chronology": k[1], "policy": k[2], "reason": k[3], "checks": len(rows)}
            for k, rows in unpaired
        ],
        "notes": c.notes,
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
