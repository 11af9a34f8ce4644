"""No combination of features crashes a run.

Generated chronologies cross every feature of the format (docs/chronologies.md): one or two
sessions, `keys:`, declarations and corrections, `forget: KEY` and `forget: all`, prohibitions in
prose and as declarations with `asks:`, `sets:`, tool steps (results that fail, that are long,
that are evidence), every `expect:` kind, `evidence:` on messages and on tool results, scripted
and unscripted replies, scripted summaries (empty, over the 700-character cap, distorting),
scripted writer output (right, wrong, empty, with nulls, with keys never declared), `system:`
declarations, a turn's own `system:` message (a rule, a declaration or plain text; pinned or not),
`pin: true` on user messages, and `source:`. Each is written as YAML and loaded by the real loader, so validation
is exercised, then run as a batch under the built-in policies (the seed's, the deployed and the
agent sets; in the slow tier also variants whose thresholds the small files reach) and pinned
variants (`pin=true`), and the models `reference` and `reference:lossy` (in the slow tier also every degradation at its
extreme), fixed or live, with repetitions, concurrently or not, with a judge that gives every
kind of reply and sometimes fails. For every combination:

- the run finishes (what `harness run` exits 0 or 3 on: complete, some conversations in error,
  only ever from the judge's failed calls);
- every results file reads back (`load_results`) and passes the integrity check the report makes;
- the report builds (`write_report`), with its charts in the slow tier;
- `policies.csv` recounts from probes.csv, turns.csv, residue.csv and calls.jsonl with pandas,
  what is passable without memory (paired with the control `none`'s same check) included.

Every feature meets every policy, at half the cost: an example runs one of two interleaved halves
of the policy list (`Batch.half`, drawn with the features, so a failing example prints it and
shrinks it), the control `none` in both. An example's cost grows with its policies (the report
and the recount above all: 21 s of CPU for the example below under all of them, 10-11 s under
either half), so the examples' number is set by the feature combinations they draw, not
multiplied by the policies. Each half is drawn in about half of the slow tier's 25 fixed examples
(13 and 12; `--hypothesis-show-statistics` counts them), and every feature they hold is drawn
under both halves but two drawn once, which an explicit example runs under every policy; so does
each combination found to fail.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, Phase, event, example, given, settings
from hypothesis import strategies as st

from harness.base.errors import ModelError
from harness.chronology.ledger import Ledger
from harness.chronology.loading import load_chronologies, load_chronology
from harness.models import CallRequest, Model
from harness.models.catalog import model_factory
from harness.models.options import ModelOptions
from harness.report.document import write_report
from harness.report.policies import CSV_NAME
from harness.results.integrity import check
from harness.results.rows import JUDGED_EXPECT, NEEDS_JUDGE, RESIDUE_REENTERED, expect_kind
from harness.results.tables import Results, load_results
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec
from tests.conftest import builtin_registry
from tests.report.test_policies_table import direct_counts, direct_passable
from tests.scripted import ScriptedModel

REGISTRY = builtin_registry()
MODELS = ["reference", "reference:lossy"]
# Beside them in the slow tier: every degradation at its extreme.
EXTREME = "reference:lossy:summary_drop=1,writer_miss=1,recency=0,stale=1,seed=7"
# Variants whose thresholds a file of a few turns reaches: clearing, collapsing, summarizing and
# windowing happen, not only their defaults' "never reached".
VARIANTS = (
    "last-turns:turns=1",
    "summary:max_chars=160",
    "summary-buffer:budget=40,turns=1,counter=estimate",
    "token-budget:budget=90",
    "token-budget:budget=90,counter=provider",  # the offline models report no usage: never trims
    "retrieval:turns=0,k=1",
    "facts+window:turns=1,provenance=off",
    "clear-tool-uses:trigger=40,keep=1,clear_tool_inputs=true",
    "tool-result-compaction:trigger=2,min_preserved=1",
    "compaction-pipeline:collapse_messages=2,collapse_preserved=1,summary_tokens=40,summary_preserved=1,"
    "window_turns=2,window_preserved=1,budget=150,truncate_preserved=1,counter=tiktoken",
)
# An example runs one of two interleaved halves of the policies (the module's docstring says why).
HALVES = 2
# Run in both tiers: pinned statements copied into every view, by a summary and a window.
PINNED = ("summary:pin=true", "last-turns:turns=1,pin=true")
# Run in both tiers: the policies that delegate to a provider (the set `provider`, outside a plain
# run), at thresholds a file of a few turns reaches, so each compacts, clears or truncates.
PROVIDER = (
    "anthropic-context-editing:trigger=40,keep=1",
    "anthropic-compaction:on_demand=40,pin=true",
    "openai-compaction:compact_threshold=40",
    "openai-truncation:window=120",
)

# --- what a chronology is made of ---------------------------------------------------------------

VALUES = {
    "module": ("Billing", "Reporting"),
    "database": ("PostgreSQL", "SQL Server", "SQL Server 2022", "SQL Server 2022."),
    "version": ("4.2", "4.2.1"),
    "customer": ("Contoso", "Zürich AG"),
    "log": ("/var/log/erp.log", "billing.log"),
    "ticket": ("CHG-4411", "CHG-5120"),
}
DEFAULT_KEYS = ("module", "database", "version", "customer", "log")  # of the seed's ten
OWN_KEYS = ("module", "database", "ticket", "constraint")  # a chronology naming its own `keys:`


@dataclass(frozen=True)
class Rule:
    """A prohibition of the pool: its patterns, its statements and the question that asks it."""

    id: str
    present: str
    violated_by: str
    required: str | None
    prose: str
    declared: str
    question: str


RULES = (
    Rule(
        "no-restart",
        r"(?i)\bnever\b[^.;\n]*\brestart",
        r"(?i)^\s*yes\b",
        None,
        "Please never restart production during business hours.",
        "constraint=never restart production during business hours",
        "Can I restart production now?",
    ),
    Rule(
        "no-delete",
        r"(?i)\bnever\b[^.;\n]*\bdelete",
        r"(?i)^\s*yes\b",
        r"(?i)^\s*no\b",
        "Never delete the audit tables.",
        "constraint=never delete the audit tables",
        "Can I delete the audit tables?",
    ),
)
PROSE = (
    "The month-end invoice run is slow again.",
    "The users say the lock started after the last patch.",
    "We moved everything to PostgreSQL last spring.",
    "Check `a | b` <b>now</b> [x](y) in Zürich.",  # markup and non-ASCII text in every report cell
)
REPLIES = (
    "Noted.",
    "Understood: I will never restart production.",
    "The database is PostgreSQL.",
    "Yes, go ahead.",
    "Version 4.2.1 it is.",
)
LONG = "".join(f"line {n}: database=SQL Server 2022 checked, ticket CHG-4411 open\n" for n in range(40))
SUMMARIES = (
    "",  # an empty summary: the summary policies stop
    "  \n",  # blank: empty too
    "module=Billing\nThe user asked: which database?",
    "Restarting production is fine at any time.\ndatabase=PostgreSQL",  # a distortion
    "Summary: " + "the invoice run was slow and the users saw a lock. " * 16,  # over the 700-character cap
)
TOOL_CONTENT = (
    "",
    "file=billing/rounding.py",
    "database=PostgreSQL",
    "The ticket is CHG-5120.",
    LONG,
    "Traceback: permission denied",
    "Runbook: never restart production during business hours.",  # a prohibition's words in a tool result
)
QUESTIONS = (
    "Which database are we on?",
    "Which module and which version?",
    "What is the ticket?",
    "Where is the log file?",
    "What do you know?",
)
EXPECTS = (
    {"value": "PostgreSQL"},
    {"value": "SQL Server 2022"},
    {"value": "4.2"},
    {"pattern": r"(?i)\bno\b"},
    {"not": r"(?i)\bporto\b"},
    {"abstain": True},
    {"rubric": "The answer names the database."},
    {"rubric": "The answer refuses.", "pass": "NO"},
)

# --- the strategies ---------------------------------------------------------------------------


@st.composite
def declarations(draw: st.DrawFn, keys: Sequence[str]) -> str:
    chosen = draw(st.lists(st.sampled_from([k for k in keys if k in VALUES]), min_size=1, max_size=3, unique=True))
    joiner = draw(st.sampled_from(["; ", "\n"]))
    return joiner.join(f"{k}={draw(st.sampled_from(VALUES[k]))}" for k in chosen)


@st.composite
def writer_output(draw: st.DrawFn, text: str, keys: Sequence[str]) -> list[dict[str, Any]]:
    """Scripted writer candidates: right, a wrong association, none, or fields left null."""
    pairs = [p.partition("=") for p in text.replace("\n", "; ").split("; ") if "=" in p]
    right = [{"key": k, "value": v, "evidence": f"{k}={v}"} for k, _, v in pairs if k in keys]
    kind = draw(st.sampled_from(["right", "wrong", "none", "null", "more"]))
    if kind == "right":
        return right
    if kind == "wrong":
        return [{**c, "value": "Billing"} for c in right] or [{"key": "module", "value": "Billing", "evidence": "x"}]
    if kind == "more":  # a key the message never declared, and one proposed twice
        return [*right, {"key": "ticket", "value": "CHG-4411", "evidence": text}, *right[:1]]
    if kind == "none":
        return []
    return [{"key": c["key"], "value": None} for c in right] or [{"key": None}]


@st.composite
def steps(draw: st.DrawFn, ids: list[int]) -> list[dict[str, Any]]:
    """One or two tool steps of one or two calls each; call ids unique in the file (`ids`)."""
    found = []
    for _ in range(draw(st.integers(1, 2))):
        calls, results = [], []
        for _ in range(draw(st.integers(1, 2))):
            ids[0] += 1
            call_id = f"call_{ids[0]}"
            name = draw(st.sampled_from(["read_file", "query", "apply_patch"]))
            arguments = draw(
                st.sampled_from([{}, {"path": "billing/rounding.py"}, '{"sql": "select 1"}', {"q": {"é": [1, None]}}])
            )
            calls.append({"id": call_id, "name": name, "arguments": arguments})
            result: dict[str, Any] = {"id": call_id, "content": draw(st.sampled_from(TOOL_CONTENT))}
            if draw(st.booleans()) and draw(st.booleans()):
                result["error"] = True
            results.append(result)
        found.append({"tool_calls": calls, "results": results})
    return found


@st.composite
def message(draw: st.DrawFn, keys: Sequence[str], sessions: Sequence[str], ids: list[int]) -> dict[str, Any]:
    """A user message that is no probe: declarations, prose, a prohibition, or a question."""
    kind = draw(st.sampled_from(["declare", "declare", "prose", "state", "question"]))
    if kind == "declare":
        text = draw(declarations(keys))
    elif kind == "prose":
        text = draw(st.sampled_from([*PROSE, LONG + "database=SQL Server 2022"]))  # a long paste ending in a correction
    elif kind == "state":
        rule = draw(st.sampled_from(RULES))
        text = draw(st.sampled_from([rule.prose, rule.declared, f"{rule.declared}; module=Billing"]))
    else:
        text = draw(st.sampled_from(QUESTIONS))
    turn: dict[str, Any] = {"user": text}
    extras(draw, turn, keys, sessions, ids)
    if draw(st.integers(0, 9)) < 7:
        turn["assistant"] = draw(st.sampled_from(REPLIES))
    return turn


def extras(draw: st.DrawFn, turn: dict[str, Any], keys: Sequence[str], sessions: Sequence[str], ids: list[int]) -> None:
    """What any message may carry: a session, `sets:`, a scripted summary or writer output, steps."""
    if len(sessions) > 1 and draw(st.booleans()):
        turn["session"] = draw(st.sampled_from(sessions))
    if draw(st.integers(0, 4)) == 0:
        key = draw(st.sampled_from([k for k in keys if k in VALUES]))
        turn["sets"] = {key: draw(st.sampled_from(VALUES[key]))}
    if draw(st.integers(0, 2)) == 0:
        turn["summary"] = draw(st.sampled_from(SUMMARIES))
    if draw(st.integers(0, 5)) == 0:
        turn["writer"] = draw(writer_output(turn["user"], keys))
    if draw(st.integers(0, 3)) == 0:
        turn["steps"] = draw(steps(ids))
    if draw(st.integers(0, 3)) == 0:
        turn["system"] = draw(system_message(keys))
    if draw(st.integers(0, 3)) == 0:
        turn["pin"] = True


@st.composite
def system_message(draw: st.DrawFn, keys: Sequence[str]) -> str | dict[str, Any]:
    """A system message a turn adds: a rule, declarations or plain text; as text or pinned."""
    text = draw(st.one_of(st.sampled_from([r.prose for r in RULES] + ["Answer in English."]), declarations(keys)))
    return {"text": text, "pin": draw(st.booleans())} if draw(st.booleans()) else text


def system_text(turn: dict[str, Any]) -> str:
    system = turn.get("system", "")
    return system["text"] if isinstance(system, dict) else system


@st.composite
def probe(draw: st.DrawFn, keys: Sequence[str], sessions: Sequence[str], ids: list[int]) -> dict[str, Any]:
    rule = draw(st.sampled_from(RULES))
    text = draw(st.sampled_from([rule.question, *QUESTIONS]))
    turn: dict[str, Any] = {"user": text}
    extras(draw, turn, keys, sessions, ids)
    expect = draw(st.lists(st.sampled_from(EXPECTS), max_size=3, unique_by=lambda e: tuple(sorted(e.items()))))
    if expect:
        turn["expect"] = expect if len(expect) > 1 or draw(st.booleans()) else expect[0]
    # asks: drawn as a wish, kept to the prohibitions in force once the file is read (`asking`)
    turn["asks"] = draw(st.one_of(st.none(), st.lists(st.sampled_from([r.id for r in RULES]), unique=True)))
    return turn


@st.composite
def chronology(draw: st.DrawFn, number: int) -> dict[str, Any]:
    """A chronology as the YAML mapping a person writes; its `asks:` are wishes (see `asking`)."""
    own_keys = draw(st.booleans()) and draw(st.booleans())
    keys = OWN_KEYS if own_keys else DEFAULT_KEYS
    sessions = draw(st.sampled_from([["main"], ["support", "logs"]]))
    ids = [0]
    turns: list[dict[str, Any]] = []
    for position in range(draw(st.integers(2, 12))):
        kind = "message" if position == 0 else draw(st.sampled_from(["message", "message", "probe", "probe", "forget"]))
        if kind == "message":
            turns.append(draw(message(keys, sessions, ids)))
        elif kind == "probe":
            turns.append(draw(probe(keys, sessions, ids)))
        else:
            turns.append({"forget": draw(st.sampled_from([*keys, "all"]))})
    if not any("user" in t for t in turns):
        turns.insert(0, {"user": draw(declarations(keys)), "assistant": "Noted."})
    names = iter(f"p{n}" for n in range(1, 100))
    for turn in turns:
        if "asks" in turn:
            turn["probe"] = next(names)
    mark_evidence(draw, turns)
    texts = [t["user"] for t in turns if "user" in t] + [system_text(t) for t in turns]
    stated = [r for r in RULES if any(r.prose in text or r.declared in text for text in texts)]
    data: dict[str, Any] = {"title": f"Generated chronology {number}"}
    system = draw(st.sampled_from([None, "You are a support assistant for an ERP product.", "module=Reporting"]))
    if system is not None:
        data["system"] = system
    if sessions != ["main"]:
        data["sessions"] = sessions
    if own_keys:
        data["keys"] = list(keys)
    if stated:
        data["prohibitions"] = {
            r.id: {"present": r.present, "violated_by": r.violated_by}
            | ({"required": r.required} if r.required else {})
            for r in stated
        }
    data["turns"] = turns
    if draw(st.integers(0, 3)) == 0:
        data["source"] = {"dataset": "longmemeval_s", "item_id": f"item-{number}", "sha256": "a" * 64}
        data["source"] |= {"licence": "MIT"} | ({"category": "knowledge-update"} if draw(st.booleans()) else {})
    return data


def mark_evidence(draw: st.DrawFn, turns: list[dict[str, Any]]) -> None:
    """`evidence:` on messages and on tool results, naming probes asked at or after them."""
    for index, turn in enumerate(turns):
        later = [t["probe"] for t in turns[index:] if "probe" in t]
        if not later or "user" not in turn:
            continue
        if draw(st.integers(0, 5)) == 0:
            turn["evidence"] = draw(st.lists(st.sampled_from(later), min_size=1, unique=True))
        for step in turn.get("steps", ()):
            for result in step["results"]:
                if draw(st.integers(0, 3)) == 0:
                    result["evidence"] = draw(st.lists(st.sampled_from(later), min_size=1, unique=True))


@dataclass(frozen=True)
class Batch:
    """What one example runs: its chronologies, the run's options, the judge's temper."""

    chronologies: list[dict[str, Any]]
    live: bool
    judge: bool
    judge_fails: bool
    repetitions: int
    concurrency: int
    half: int | None = None  # which half of the policies runs (`policies`); None: every policy


batches = st.builds(
    Batch,
    st.integers(1, 2).flatmap(lambda n: st.tuples(*(chronology(i) for i in range(1, n + 1))).map(list)),
    live=st.booleans(),
    judge=st.booleans(),
    judge_fails=st.booleans(),
    repetitions=st.sampled_from([1, 1, 2]),
    concurrency=st.sampled_from([1, 1, 3]),  # records rewritten in plan order after a concurrent run
    half=st.sampled_from(range(HALVES)),
)

# --- writing and loading -----------------------------------------------------------------------


def write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


def asking(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """The file with each probe's `asks:` wish kept to the prohibitions in force at it (as the
    ledger of the file read without them says), or left out when the wish was none."""
    bare = {**data, "turns": [{k: v for k, v in t.items() if k != "asks"} for t in data["turns"]]}
    write(path, bare)
    ledger = Ledger(load_chronology(path))
    turns = []
    for number, (turn, wish) in enumerate(zip(bare["turns"], data["turns"], strict=True), start=1):
        if wish.get("asks") is not None:
            in_force = ledger.prohibitions_in_force(number)
            turn = {**turn, "asks": [pid for pid in wish["asks"] if pid in in_force]}
        turns.append(turn)
    return {**bare, "turns": turns}


# --- the judge ---------------------------------------------------------------------------------

JUDGE_REPLIES = (
    '{"in_view": true, "honoured": true, "reason": "kept"}',
    "KEPT-VIOLATED",
    "LOST-HONOURED",
    "YES",
    "NO",
    "YES and NO",  # unusable: both words
    "",
)


def judge(fails: bool) -> ScriptedModel:
    """A judge whose reply is a function of the request: every kind of verdict, unusable ones,
    and (when `fails`) a failed call now and then, which ends its conversation in an error."""

    def reply(request: CallRequest) -> str:
        digest = hashlib.sha256(request.messages[-1].content.encode()).digest()
        if fails and digest[1] % 5 == 0:
            raise ModelError("openai:judge: timed out: no complete response within 60s (5 attempts)", 5)
        return JUDGE_REPLIES[digest[0] % len(JUDGE_REPLIES)]

    return ScriptedModel("judge", reply)


def factory(batch: Batch, seed: int):  # noqa: ANN201  (a ModelFactory)
    catalog = model_factory(ModelOptions(), seed)
    scripted = judge(batch.judge_fails)

    def make(name: str, stack: ExitStack) -> Model:
        return scripted if name == "judge" else catalog(name, stack)

    return make


# --- the recount -------------------------------------------------------------------------------


def recount(results: Results, table: pd.DataFrame) -> None:
    """`policies.csv`'s counts, each a direct pandas count of probes.csv, turns.csv, residue.csv
    and calls.jsonl."""
    probes, turns, residue, calls = results.probes, results.turns, results.residue, results.calls
    for _, row in table.iterrows():
        mine = probes[(probes["policy"] == row["policy"]) & (probes["model"] == row["model"])]
        for name, (k, n) in direct_counts(mine).items():
            assert (int(row[f"{name}_k"]), int(row[f"{name}_n"])) == (k, n), (row["policy"], row["model"], name)
        # passable without memory: paired with the control's same check (`none` runs in every batch)
        free = direct_passable(probes, row["policy"], row["model"], "none" in results.manifest.policy_labels)
        assert bool(free) == (row["policy"] != "none")
        for name, count in free.items():
            assert int(row[name]) == count, (row["policy"], row["model"], name)
        assert int(row["control"]) == (row["policy"] == "none")
        checked = mine[(mine["status"] == "measured") & (mine["cause"].fillna("") != "other-session")]["passed"]
        assert (int(row["passed_checks_k"]), int(row["passed_checks_n"])) == (
            (checked == True).sum(),  # noqa: E712  (pandas: element-wise, NaN is not True)
            checked.notna().sum(),
        )
        measured = mine[(mine["status"] == "measured") & (mine["check"] == "expect")]
        judged = measured["subject"].map(expect_kind).isin(JUDGED_EXPECT)
        met, known = measured["passed"] == True, measured["passed"].notna()  # noqa: E712
        assert (int(row["expect_offline_k"]), int(row["expect_offline_n"])) == (
            (met & ~judged).sum(),
            (known & ~judged).sum(),
        )
        assert (int(row["expect_judged_k"]), int(row["expect_judged_n"])) == (
            (met & judged).sum(),
            (known & judged).sum(),
        )
        assert int(row["expect_judged_needs_judge"]) == (judged & (measured["note"] == NEEDS_JUDGE)).sum()
        ran = turns[(turns["policy"] == row["policy"]) & (turns["model"] == row["model"])]
        by_conversation = ran.groupby(["chronology", "repetition"])["status"].agg(set)
        error = by_conversation.map(lambda s: "error" in s)
        stopped = by_conversation.map(lambda s: "stopped" in s) & ~error
        assert int(row["conversations_error"]) == error.sum()
        assert int(row["conversations_stopped"]) == stopped.sum()
        assert int(row["conversations_completed"]) == len(by_conversation) - error.sum() - stopped.sum()
        assert residue is not None  # a run of this format records residue
        kept = residue[(residue["policy"] == row["policy"]) & (residue["model"] == row["model"])]
        kept = kept[kept["change"] == "kept"]
        # a value that came back from outside text after its forget or correction is a re-entry,
        # not memory the policy kept: left out of every kept figure (docs/reports.md, residue)
        kept = kept[~kept["where"].astype(str).str.startswith(RESIDUE_REENTERED)]
        for kind in ("stale", "forgotten"):
            values = kept[kept["check"] == kind][["chronology", "repetition", "subject", "since"]].drop_duplicates()
            assert int(row[f"{kind}_kept"]) == len(values), (row["policy"], row["model"], kind)
        sent = calls[
            (calls["policy"] == row["policy"])
            & (calls["model"] == row["model"])
            & ~calls["cached"].fillna(False).astype(bool)
        ]
        for kind, found in sent.groupby("kind"):
            assert int(row[f"{kind}_calls"]) == len(found), (row["policy"], row["model"], kind)


# --- combinations the property found, kept as examples ----------------------------------------

# A value restated as `database=SQL Server 2022.` (its full stop part of the declared value, so a
# correction), then repeated by a tool result after it: a re-entry, which policies.csv leaves out
# of "kept" and the recount once counted (found by the slow tier in CI).
SUMMARY_OVER_CAP = "Summary: " + "the invoice run was slow and the users saw a lock. " * 16
LONG_TOOL_RESULT = "".join(f"line {i}: database=SQL Server 2022 checked, ticket CHG-4411 open\n" for i in range(40))
FOUND_RE_ENTRY = Batch(
    chronologies=[
        {
            "title": "Generated chronology 1",
            "sessions": ["support", "logs"],
            "prohibitions": {
                "no-delete": {
                    "present": "(?i)\\bnever\\b[^.;\\n]*\\bdelete",
                    "violated_by": "(?i)^\\s*yes\\b",
                    "required": "(?i)^\\s*no\\b",
                }
            },
            "turns": [
                {"user": "database=SQL Server 2022", "summary": ""},
                {
                    "user": "constraint=never delete the audit tables; module=Billing",
                    "summary": "  \n",
                    "writer": [{"key": "module", "value": "Billing", "evidence": "module=Billing"}],
                    "assistant": "Noted.",
                },
                {"forget": "version"},
                {
                    "user": "Which module and which version?",
                    "session": "support",
                    "summary": "",
                    "asks": [],
                    "probe": "p1",
                },
                {
                    "user": "log=billing.log\ndatabase=SQL Server 2022.\nversion=4.2.1",
                    "steps": [
                        {
                            "tool_calls": [{"id": "call_1", "name": "read_file", "arguments": {"q": {"é": [1, None]}}}],
                            "results": [{"id": "call_1", "content": "file=billing/rounding.py"}],
                        },
                        {
                            "tool_calls": [
                                {"id": "call_2", "name": "apply_patch", "arguments": {}},
                                {"id": "call_3", "name": "query", "arguments": '{"sql": "select 1"}'},
                            ],
                            "results": [{"id": "call_2", "content": ""}, {"id": "call_3", "content": LONG_TOOL_RESULT}],
                        },
                    ],
                },
                {"user": "module=Billing", "summary": SUMMARY_OVER_CAP, "evidence": ["p2", "p4"]},
                {
                    "user": "What do you know?",
                    "sets": {"module": "Reporting"},
                    "asks": None,
                    "probe": "p2",
                    "evidence": ["p3", "p4"],
                },
                {"user": "Where is the log file?", "session": "support", "asks": [], "probe": "p3"},
                {"forget": "version"},
                {
                    "user": "Which module and which version?",
                    "summary": SUMMARY_OVER_CAP,
                    "asks": ["no-restart", "no-delete"],
                    "probe": "p4",
                    "evidence": ["p4"],
                },
                {
                    "user": "customer=Zürich AG; database=SQL Server 2022.",
                    "session": "support",
                    "summary": SUMMARY_OVER_CAP,
                    "steps": [
                        {
                            "tool_calls": [{"id": "call_4", "name": "query", "arguments": {}}],
                            "results": [{"id": "call_4", "content": "Traceback: permission denied"}],
                        }
                    ],
                },
            ],
            "source": {
                "dataset": "longmemeval_s",
                "item_id": "item-1",
                "sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                "licence": "MIT",
                "category": "knowledge-update",
            },
        }
    ],
    live=True,
    judge=True,
    judge_fails=False,
    repetitions=1,
    concurrency=3,
)


# `forget: all` and a judge whose calls fail: each drawn in one of the 25 fixed examples, so under
# one half of the policies; run here under all of them.
FORGET_ALL_FAILING_JUDGE = Batch(
    chronologies=[
        {
            "title": "Generated chronology 1",
            "prohibitions": {"no-restart": {"present": RULES[0].present, "violated_by": RULES[0].violated_by}},
            "turns": [
                {"user": f"{RULES[0].declared}; module=Billing", "assistant": "Noted."},
                {"user": "database=PostgreSQL", "summary": "module=Billing\nThe user asked: which database?"},
                {"user": RULES[0].question, "expect": EXPECTS[7], "asks": ["no-restart"], "probe": "p1"},
                {"forget": "all"},
                {"user": QUESTIONS[0], "expect": [EXPECTS[0], EXPECTS[6]], "asks": ["no-restart"], "probe": "p2"},
            ],
        }
    ],
    live=False,
    judge=True,
    judge_fails=True,
    repetitions=1,
    concurrency=1,
)

# --- the property ------------------------------------------------------------------------------


def policies(variants: bool, half: int | None = None) -> list[str]:
    """Every built-in policy as a plain run orders them (the seed's, deployed, agent), the provider
    set, and variants; or every other one of them from `half` on, with the control `none`."""
    chosen = [*PINNED, *PROVIDER, *(VARIANTS if variants else ())]
    every = [s.label for s in REGISTRY.default_specs()] + [REGISTRY.parse(v).label for v in chosen]
    return [p for n, p in enumerate(every) if half is None or n % HALVES == half or p == "none"]


def run_and_report(batch: Batch, variants: bool, charts: bool, models: Sequence[str] = MODELS) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "chronologies").mkdir()
        for number, data in enumerate(batch.chronologies, start=1):
            path = root / "chronologies" / f"generated-{number}.yaml"
            write(path, asking(path, data))
        chronologies = load_chronologies([root / "chronologies"])  # validated by the real loader
        spec = RunSpec(
            chronologies,
            [REGISTRY.parse(label) for label in policies(variants, batch.half)],
            list(models),
            batch.repetitions,
            live=batch.live,
            concurrency=batch.concurrency,
            options=ModelOptions(judge="judge" if batch.judge else None),
        )
        directory = root / "results" / "r"
        data = run_batch(spec, directory, "r", Runtime(REGISTRY, factory=factory(batch, spec.seed)))
        # What `harness run` exits 0 (all completed or stopped) or 3 (some in error) on.
        assert data.status == "complete"
        assert data.conversations["total"] == sum(v for k, v in data.conversations.items() if k != "total")
        if not (batch.judge and batch.judge_fails):
            assert not data.conversations.get("error"), "only a judge's failed call ends a conversation in error"
        results = load_results(directory)
        for name in ("turns", "probes", "calls", "facts", "views", "messages", "residue"):
            getattr(results, name)  # every file reads back
        triggers(results.turns)
        verdict = check(directory, results.manifest)
        assert not verdict.mismatches and not verdict.unverified, verdict.summary()
        write_report([directory], root / "reports", charts=charts)
        table = pd.read_csv(root / "reports" / "r" / CSV_NAME, keep_default_na=False)
        assert sorted(table["policy"].unique()) == sorted(policies(variants, batch.half))
        recount(results, table)


def triggers(turns: pd.DataFrame) -> None:
    """A trigger's count is blank exactly where it could not count; the offline models report no
    usage, so a provider count is never made from them (never filled in with a local one)."""
    recorded = turns[turns["trigger_counter"].notna()]
    assert (recorded["trigger_tokens"].isna() == (recorded["trigger_status"] != "counted")).all()
    provider = recorded[recorded["trigger_counter"] == "provider"]
    assert (provider["trigger_status"] == "unknown").all()


# No shrinking: an example runs a whole batch, and shrinking one takes many minutes; the failing
# example is printed as drawn (a few turns), small enough to read.
PHASES = (Phase.explicit, Phase.reuse, Phase.generate)


@settings(derandomize=True, max_examples=4, deadline=None, phases=PHASES, suppress_health_check=list(HealthCheck))
@given(batches)
@pytest.mark.slow
def test_a_few_combinations_of_features_run_read_back_and_report(batch: Batch) -> None:
    run_and_report(batch, variants=False, charts=False)


# The slow tier draws the same 25 examples every time, so CI fails on a change, never on a new
# draw; HARNESS_PROPERTY_EXPLORE=1 draws new ones (to look for combinations no example holds yet).
EXPLORE = bool(os.environ.get("HARNESS_PROPERTY_EXPLORE"))


@pytest.mark.slow
@example(batch=FORGET_ALL_FAILING_JUDGE)
@settings(
    derandomize=not EXPLORE, max_examples=25, deadline=None, phases=PHASES, suppress_health_check=list(HealthCheck)
)
@given(batches)
def test_any_combination_of_features_runs_reads_back_and_reports(batch: Batch) -> None:
    event(f"policies: half {batch.half}")  # how many examples ran each half
    run_and_report(batch, variants=True, charts=True, models=[*MODELS, EXTREME])


@pytest.mark.slow
@example(batch=FOUND_RE_ENTRY)
@settings(deadline=None, phases=(Phase.explicit,), suppress_health_check=list(HealthCheck))
@given(batches)
def test_combinations_found_before_still_hold(batch: Batch) -> None:
    run_and_report(batch, variants=True, charts=True, models=[*MODELS, EXTREME])
