"""The record types of the results files, each field documented once (results/README.md says
the same for readers): a `turns.csv` row, a `probes.csv` row, a `residue.csv` row, a `calls.jsonl`
record and `manifest.json`.

Field order is column (or key) order: `TURN_COLUMNS`, `PROBE_COLUMNS` and `RESIDUE_COLUMNS` follow from the
fields, and so do the column types `harness.results.tables` reads back (`BOOL_COLUMNS`, `INT_COLUMNS`).
None is unknown: written blank in a CSV file (never 0), null in JSON. `TURN`, `PROBE` and `CALL`
name the columns for the reading side (`PROBE.passed == "passed"`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

# 2: views.jsonl holds references into messages.jsonl (harness/results/views.py);
# 3: the folder records digests of itself (harness/results/digests.py). Version 2 still reads,
# unverified; 4: residue.csv, what each policy still keeps of a corrected or forgotten value
# (a version-3 run reads with its residue not recorded).
FORMAT_VERSION = 4
READABLE_VERSIONS = (2, 3, 4)
DIGESTS_FROM = 3  # the first version whose runs record their digests
RESIDUE_FROM = 4  # the first version whose runs record residue.csv

# Words the files hold that readers test for (results/README.md).
NOT_ASKED = "not asked"  # probes.csv `note` of a prohibition the probe's question does not ask about
# probes.csv `note` of an asked prohibition whose answer refused although the prohibition was not in
# the view: the refusal is not counted as honouring it (another prohibition, or chance, refused)
REFUSED_NOT_IN_VIEW = "refused, not in view"
# probes.csv `note` of a check whose request view held an opaque compaction item (origin `opaque`)
# and no other message stating its subject: `in_view` is unknown, and only the answer is checked
OPAQUE_VIEW = "in view unknown: opaque compaction item"
# probes.csv `note` of a check whose subject only messages in dispute state: the provider's report of
# its own context edits (Anthropic's `applied_edits`) differs from what the policy predicted it would
# clear, so whether they reached the model is unknown, and only the answer is checked
DISPUTED_VIEW = "in view unknown: the provider's edits differ from the prediction"
UNKNOWN_VIEW = (OPAQUE_VIEW, DISPUTED_VIEW)  # the notes of a check whose `in_view` is unknown
NEEDS_JUDGE = "needs --judge"  # probes.csv `note` of a rubric expectation in a run without a judge: not measured
EXPECT = "expect"  # probes.csv `check` of an expectation; its subject is `KIND: TEXT`, or `abstain`
JUDGED_EXPECT = ("rubric",)  # kinds the --judge model decides
JUDGE_UNUSABLE = "unusable judge reply"  # how `judge_note` starts when the judge's reply gave no verdict
JUDGE_FAILED = "judge call failed"  # how `judge_note` starts when the judge call itself failed
# The benchmarks' own judge prompts, by the names a manifest's `judge_prompts` records
# (harness.run.judge_prompts asks through them; the report reads each benchmark's scores by them).
LONGMEMEVAL_PROMPTS = ("longmemeval", "longmemeval-abstention")  # a question; an abstention item
MULTICHALLENGE_PROMPTS = ("multichallenge",)


def expect_kind(subject: str) -> str:
    """The kind of an expectation from its probes.csv subject (`value: Lisbon` -> `value`)."""
    return subject.split(":", 1)[0]


@dataclass(frozen=True)
class Identity:
    """The conversation a record belongs to; the first fields of every record."""

    chronology: str  # the chronology's name (its file stem)
    policy: str  # the policy's label: its name, plus the parameters that differ from the defaults
    model: str  # the answering model
    repetition: int  # 1-based

    def as_record(self) -> dict[str, Any]:
        """The fields by name, in order: a CSV row's cells or a JSON record."""
        return _flat(self)


@dataclass(frozen=True)
class TurnRow(Identity):
    """One turns.csv line: one turn of one conversation, forget events included."""

    turn: int  # position in the chronology's `turns:` (forget entries count)
    session: str  # the turn's business session (a forget: the first session)
    status: str  # answered | scripted | stopped | error | forget
    stop_reason: str | None  # why the policy stopped
    error: str | None  # the failed answer call's error
    view_messages: int | None  # messages of the request view; None: no view at this turn
    view_chars: int | None  # characters of that view
    estimate_tokens: int | None  # characters/4 of that view, rounded up
    tiktoken_tokens: int | None  # local tokenizer count of that view
    reported_prompt_tokens: int | None  # the answer call's provider-reported usage
    reported_completion_tokens: int | None
    latency_ms: float | None  # the answer call's wall time, retries included
    retained_messages: int  # size of the retained state after the turn, system excluded
    retained_chars: int
    aux_calls: int  # the policy's extra calls after this turn's answer (summarizer, writer, ...)
    aux_chars: int  # their request sizes, summed
    aux_estimate_tokens: int
    aux_tiktoken_tokens: int | None  # None if any is unknown
    aux_reported_calls: int  # how many of them reported usage
    aux_reported_prompt_tokens: int | None  # their reported usage, summed; None unless every one reported
    aux_reported_completion_tokens: int | None
    policy_note: str | None  # what the policy says about this turn (`Outcome.note`)
    # Split tool groups, a missing system message, a user message altered or removed without a
    # recorded drop, in the view or the retained state (harness.run.groups); None: none. Results
    # written before the column existed lack it (unknown, not none).
    group_violations: str | None
    # What counted the policy's token trigger at this turn (harness.policy.counters): `tiktoken`,
    # `estimate` or `provider`; None: the policy has no token trigger (or results written before
    # the columns existed). `trigger_tokens` is the count it saw, None when `trigger_status` is
    # `unknown` (the provider reported nothing to count from) or `unavailable` (no tiktoken
    # encoding offline): the trigger then did not fire.
    trigger_counter: str | None = None
    trigger_tokens: int | None = None
    trigger_status: str | None = None  # counted | unknown | unavailable


@dataclass(frozen=True)
class ProbeCells:
    """The cells of one check at a probe (harness.run.checks), without the conversation's columns."""

    status: str  # measured, or stopped / error when the policy never reached the probe
    check: str  # prohibition | current | stale | forgotten | expect
    subject: str  # the prohibition's id, key=value, or the expectation (`value: Lisbon`, `abstain`)
    in_view: bool | None  # in the request view (an expectation: every evidence message); None: not asked, no evidence
    in_answer: bool | None  # honoured (a prohibition), present (a value), met (an offline expectation); None: not asked
    in_retained: bool | None  # the same test on the retained state after the turn
    age: int | None  # turns since the subject's origin (an expectation: its first evidence); None: no evidence
    lost_at: str | None  # where it left the view, in words; for an unmeasured row, why
    cause: str | None  # the loss's category (window, summary, eviction, stopped, ...)
    passed: bool | None  # the check's expectation met; None: not asked, or not measured
    note: str | None = None  # `not asked` (the probe's `asks:` leaves the prohibition out), `needs --judge`, ...
    judged_in_view: bool | None = None  # with --judge: the judge model's verdicts
    judged_in_answer: bool | None = None
    judge_note: str | None = None  # the judge's verdict word, or why there is none


@dataclass(frozen=True)
class ProbeRow(Identity):
    """One probes.csv line: the conversation's columns, then the check's cells."""

    turn: int
    probe: str  # the probe's id
    session: str
    cells: ProbeCells

    def as_record(self) -> dict[str, Any]:
        return {**_flat(self, exclude="cells"), **_flat(self.cells)}


# residue.csv `change`: the value is found in `where` from this turn on; is no longer there (at a
# turn, or at a `forget`, which clears histories by the seed's rule); or is the key's current value
# again (declared anew), so what is kept is no longer residue.
RESIDUE_KEPT, RESIDUE_GONE, RESIDUE_CLEARED, RESIDUE_CURRENT = "kept", "gone", "cleared by a forget", "current again"
# residue.csv `where` for outside text (a tool's result, a tool call, a recorded reply) written from
# the turn that made the value old on, which repeats it: `re-entered from the tool result at turn 5`.
# The value came back from that text; no place of the policy's memory kept it.
RESIDUE_REENTERED = "re-entered from"


@dataclass(frozen=True)
class ResidueRow(Identity):
    """One residue.csv line: a corrected (stale) or forgotten value that a policy's retained state
    starts or stops holding in one place (harness.run.residue). A value kept until the end has a
    `kept` row and no later one."""

    turn: int  # the turn after which the retained state was read (forget entries count)
    session: str  # the turn's business session (a forget: the first session)
    subject: str  # key=value
    check: str  # stale (a correction replaced it) | forgotten (a forget removed it)
    since: int  # the turn of that correction or forget
    where: str  # history | summary | fact store | index (a policy's own name for its history)
    change: str  # kept | gone | cleared by a forget | current again


@dataclass(frozen=True)
class CallRecord(Identity):
    """One calls.jsonl record: one model call (answer, judge, or a policy's extra call)."""

    session: str
    turn: int
    kind: str  # the call's role: answer, judge, or a policy's own (summarizer, writer, ...)
    call_model: str | None  # the model that answered; None for a scripted output
    scripted: bool  # the chronology's scripted output, not a model's
    messages: list[dict[str, Any]] | None  # the request; None for an answer (see messages_from)
    messages_from: str | None  # views.jsonl for an answer: its request is that turn's view
    response: str | None  # the reply as the conversation kept it; None when the call failed
    response_chars: int | None  # its length as the model returned it, before any cut
    truncated: bool  # an answer cut to MAX_ANSWER_CHARS
    chars: int  # the request's size
    estimate_tokens: int
    tiktoken_tokens: int | None
    tiktoken_encoding: str | None  # the local tokenizer's encoding
    reported_prompt_tokens: int | None  # provider-reported usage; None when absent or invalid
    reported_completion_tokens: int | None
    invalid_reported_usage: dict[str, str] | None  # usage that is no token count, raw per field
    latency_ms: float | None  # wall time, retries included; None for a scripted output
    attempts: int  # requests made (0: cached or scripted)
    cached: bool  # no request of its own: from the cache, or shared with a call in flight
    shared: bool  # took the response or error of an identical call in flight
    error: str | None  # the error that survived the retries
    notes: list[str]  # what the figures do not show
    format_refusals: int  # of attempts: structured-output forms the endpoint refused
    structured_output: str | None  # json_schema | json_object; None when none was asked for
    response_model: str | None  # the model the response named
    system_fingerprint: str | None
    finish_reason: str | None  # stop, or length when the token cap cut the reply
    response_id: str | None
    # What the model dropped, ignored or replaced on purpose (`reference:lossy`), one object per
    # degradation; None for every other model (absent from runs before it: read as None).
    degraded: list[dict[str, Any]] | None = None
    # What rate limits and 429s did to the call (harness.models.ratelimit); None for a call that sent
    # no request of its own through them (an offline model, a cached or shared reply; runs before them).
    waits: int | None = None  # requests of the call held back before being sent (--max-rpm/--max-tpm, or after 429s)
    waited_ms: int | None = None  # milliseconds they were held back, in all
    http_429: int | None = None  # answers HTTP 429 (Too Many Requests), each retried as the retries allow
    concurrency_low: int | None = (
        None  # the fewest calls in flight to the model allowed while it ran; None: never lowered
    )
    # The cacheable prefix (harness.run.prefix): the leading messages identical to the latest
    # earlier request of the conversation to the same model, kind and session (0: none, or the
    # first such request), their characters and local tokens (None: encoding unavailable). An
    # estimate of what a prompt cache could serve. Absent from runs before it: read as None.
    prefix_messages: int | None = None
    prefix_chars: int | None = None
    prefix_tiktoken_tokens: int | None = None
    # The provider's prompt-cache counts, part of reported_prompt_tokens: tokens read from its
    # cache, and written to it; None when it did not report them (never filled from the prefix).
    reported_cached_tokens: int | None = None
    reported_cache_write_tokens: int | None = None
    # The Responses API route the request took (`responses`, `responses/compact`: a provider
    # policy's calls to an `openai:NAME` endpoint); None: chat completions, or no endpoint.
    api: str | None = None


def _flat(record: Any, exclude: str = "") -> dict[str, Any]:
    """The fields of `record` by name, in order (values as they are, unlike `asdict`)."""
    return {name: getattr(record, name) for name in _field_names(type(record), exclude)}


@functools.cache
def _field_names(kind: type, exclude: str) -> tuple[str, ...]:
    """The field names of a record type, in order, but `exclude`: worked out once per type (every
    row written asked `fields` again, a tenth of the cost of writing it)."""
    return tuple(f.name for f in fields(kind) if f.name != exclude)


def _columns(kind: type, annotation: str) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind) if str(f.type).startswith(annotation))


TURN_COLUMNS = tuple(f.name for f in fields(TurnRow))
PROBE_COLUMNS = tuple(f.name for f in fields(ProbeRow) if f.name != "cells") + tuple(f.name for f in fields(ProbeCells))
RESIDUE_COLUMNS = tuple(f.name for f in fields(ResidueRow))

# How the reading side types the columns (`from __future__ import annotations` keeps each
# annotation as its text).
BOOL_COLUMNS = tuple(dict.fromkeys(_columns(TurnRow, "bool") + _columns(ProbeCells, "bool")))
INT_COLUMNS = tuple(
    dict.fromkeys(
        _columns(TurnRow, "int") + _columns(ProbeRow, "int") + _columns(ProbeCells, "int") + _columns(ResidueRow, "int")
    )
)
FLOAT_COLUMNS = tuple(dict.fromkeys(_columns(TurnRow, "float")))


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """manifest.json: what ran, written first (status running) and rewritten whole as the run
    goes on (`harness.run.batch` replaces it: the type is frozen). Field order is key order.

    Every manifest has `format_version`, `run_id`, `policies`, `repetitions` and `live`; the other fields default to
    what a manifest without them means (None: not recorded), so a manifest written by an earlier
    harness of the same FORMAT_VERSION still reads. `harness.results.reader.read_manifest` checks each
    present field against its annotation here.
    """

    format_version: int  # version of the file layout (FORMAT_VERSION)
    run_id: str  # the folder's name
    status: str | None = None  # running | complete | interrupted | failed
    started_at: str | None = None  # UTC
    ended_at: str | None = None  # UTC; None while running
    resumed_at: list[str] = field(default_factory=list)  # UTC time of each --resume
    harness_version: str | None = None  # this package's version
    python: str | None = None  # the interpreter's version
    platform: str | None = None  # the OS family
    packages: dict[str, str | None] = field(default_factory=dict)  # versions of the packages the results depend on
    chronologies: list[dict[str, Any]] = field(default_factory=list)  # name, path, sha256, title, description
    policies: list[dict[str, Any]]  # each policy's label, name and params
    models: list[str] = field(default_factory=list)  # the answering models, as named on the command line
    model_options: dict[str, Any] = field(default_factory=dict)  # how models are reached, as asked (no key's value)
    repetitions: int  # repetitions requested (no default: a resume must not guess it)
    repetitions_run: dict[str, int] = field(default_factory=dict)  # per model: 1 for a deterministic model
    seed: int | None = None  # passed to models that take one
    live: bool  # the model answered every turn (scripted replies ignored); no default, as repetitions
    concurrency: int | None = None  # conversations run at once
    cache_dir: str | None = None  # the response cache's folder; None: --no-cache
    tokenizer: dict[str, Any] = field(default_factory=dict)  # the local tokenizer's encoding, and whether available
    conversations: dict[str, int] = field(default_factory=dict)  # total planned, then a count per final status
    # Where the run sits in a larger batch:
    shard: dict[str, Any] | None = None  # --shard K/N: index and count; merged: count and merged_from; None: whole
    batch: dict[str, Any] | None = None  # --batch FILE: its path, sha256 and parsed content; None: options only
    independent_samples: bool = False  # --independent-samples: no two policies share a cached response
    samples: str | None = None  # whether policies' answers are one draw or independent ones; None: not recorded
    model_settings: dict[str, Any] | None = None  # each model's settings as it ran; None until the models are open
    error: str | None = None  # why a failed run stopped
    # Digests (harness.results.digests), None in runs before format version 3:
    settings_sha256: dict[str, str] | None = None  # SHA-256 of each setting, sealed when the run starts
    files: dict[str, Any] | None = None  # a complete run's record files: size and SHA-256 of each
    # With --judge: name -> SHA-256 of each prompt the chronologies' rubrics are judged through
    # (harness.run.judge_prompts: the harness's own, or an imported item's benchmark's); None: no
    # judge, or a run before benchmarks' prompts were used (every rubric asked the harness's way).
    judge_prompts: dict[str, str] | None = None

    def as_record(self) -> dict[str, Any]:
        return _flat(self)

    @property
    def policy_labels(self) -> list[str]:
        """Policy labels in the order the run declared them."""
        return [p["label"] for p in self.policies]

    @property
    def chronology_names(self) -> list[str]:
        return [c["name"] for c in self.chronologies]


class Names:
    """The field names of record types as attributes, each equal to its name: `PROBE.passed ==
    "passed"`. The report reads rows through these, so a misspelt or renamed field fails at
    first use (AttributeError) instead of silently reading nothing."""

    def __init__(self, *kinds: type) -> None:
        names = [f.name for kind in kinds for f in fields(kind) if f.name != "cells"]
        object.__setattr__(self, "_names", tuple(dict.fromkeys(names)))
        for name in self._names:
            object.__setattr__(self, name, name)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{name}: the names of a record type are fixed")

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names


TURN = Names(TurnRow)  # turns.csv columns
PROBE = Names(ProbeRow, ProbeCells)  # probes.csv columns
RESIDUE = Names(ResidueRow)  # residue.csv columns
CALL = Names(CallRecord)  # calls.jsonl keys
