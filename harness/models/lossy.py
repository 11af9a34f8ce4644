"""`reference:lossy`: the offline `reference` reader, degraded on purpose, seeded and deterministic.

It fails the way real models do, so the harness can be tried, and comparisons tested, without a
server; like `reference`, it qualifies no model. Named `reference:lossy` (the defaults below) or
`reference:lossy:k=v,k=v` (only the degradations named; the others are off):

- `summary_drop=P`: a `summarizer` call's reply (the reference summary) loses each clause that
  holds a declaration or a prohibition (a negation), with probability P.
- `writer_miss=P`: a `writer` call's reply (the reference fact writer's candidates) omits each
  declaration with probability P, so the fact store never admits it.
- `recency=N`: an answer ignores every message of its view from a turn more than N turns before
  the current one (a message with no turn, the system message, a summary, a facts block, is
  always read; so is the current message).
- `stale=P`: an answer naming a key whose value was corrected within what it reads gives the
  previous value instead of the latest, with probability P per key.
- `seed=S`: the seed of every draw; default the run's `--seed`.

Each decision is a draw of its own, `chance(...)`: a SHA-256 of the seed plus the call's draw
(`CallRequest.draw`: the repetition's index, plus the policy's part when samples are independent
per policy, `harness.run.calls.draw_of`), the call's role, its turn, and what is decided (the
clause, the declaration, the key, with its occurrence in the reply). Never a shared random state:
the same run gives the same draws whatever the order of its calls or `--concurrency`, and
repetition k (1-based) draws with seed + k - 1, as a seed-honouring endpoint does.

What each reply lost is in `Completion.degraded` (calls.jsonl `degraded`): one entry per
clause dropped, declaration omitted, item ignored or value replaced. An answer's recency entry
is written only where ignoring changed the answer: a permission request answered Yes where the
whole view holds a clause that forbids it, or a key whose latest value went unread. A
chronology's scripted output (`summary:`, `writer:`) is the chronology's, and is never
degraded; roles other than the summarizer and the writer get the reference model's reply
unchanged. Like `reference`, it has no `cache_identity`: its replies are never cached (nor
shared in flight), so no entry of the response cache is shared between `reference` and any
`reference:lossy` spec.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.base import json_bounded
from harness.base.capabilities import LITERAL, Capabilities
from harness.base.errors import InputError
from harness.base.messages import Message
from harness.base.params import Param
from harness.chronology.declarations import parse_declarations
from harness.chronology.questions import clauses, permission_request, question
from harness.models import CallRequest, Completion
from harness.models.reference import (
    NEGATION_RE,
    NOTED,
    NOTHING,
    YES,
    ReferenceModel,
    declaration_history,
    key_answer,
    last_user_index,
    mentioned_keys,
    own_text,
    prohibition_at,
)

PREFIX = "reference:lossy"
SUMMARIZER, WRITER = "summarizer", "writer"  # the roles the built-in policies give these calls

# The recency beyond which nothing changes: more turns than any chronology holds
# (harness.policy.contract.MAX_TURNS, which this wing cannot import).
MAX_RECENCY = 100_000

# Each parameter's default is what `reference:lossy` alone means; a spec naming parameters
# turns on only those. `seed` defaults to the run's `--seed`, whatever is named.
PARAMS = (
    Param(
        "summary_drop",
        0.3,
        "probability that the summarizer drops each declaration or prohibition clause",
        minimum=0.0,
        maximum=1.0,
    ),
    Param("writer_miss", 0.2, "probability that the fact writer omits each declaration", minimum=0.0, maximum=1.0),
    Param(
        "recency",
        6,
        "the answer ignores messages of a turn more than this many turns before the current one",
        minimum=0,
        maximum=MAX_RECENCY,
    ),
    Param("stale", 0.1, "probability that an answer gives a corrected key's previous value", minimum=0.0, maximum=1.0),
    Param("seed", 0, "the seed of every draw (default: the run's --seed)", minimum=0),
)
PARAM_NAMES = tuple(p.name for p in PARAMS)


@dataclass(frozen=True)
class LossySpec:
    """The degradations a `reference:lossy` name asks for; off unless named (or the defaults)."""

    summary_drop: float = 0.0
    writer_miss: float = 0.0
    recency: int | None = None  # None: the answer reads its whole view
    stale: float = 0.0
    seed: int | None = None  # None: the run's --seed

    def as_record(self, seed: int) -> dict[str, Any]:
        """The parameters as the model runs with them (`seed`: the resolved one)."""
        return {
            "summary_drop": self.summary_drop,
            "writer_miss": self.writer_miss,
            "recency": self.recency,
            "stale": self.stale,
            "seed": seed,
        }


def is_lossy(name: str) -> bool:
    """Whether a model name asks for the lossy reference model."""
    return name == PREFIX or name.startswith(f"{PREFIX}:")


def parse_lossy(name: str, option: str = "--model") -> LossySpec:
    """`reference:lossy` or `reference:lossy:k=v,...` as a spec; raise InputError saying what to
    fix, starting with the option as given (`option` and the name: `--model reference:lossy:...`;
    an option that already holds the name, such as `--model-role writer=reference:lossy:...`, alone)."""
    given = option if option.endswith(name) else f"{option} {name}"
    shown = given if len(given) <= 100 else f"{given[:97]}..."  # a value may be thousands of digits
    rest = name.removeprefix(PREFIX)
    if rest == "":
        return LossySpec(**{p.name: p.default for p in PARAMS if p.name != "seed"})
    items = [s.strip() for s in rest.removeprefix(":").split(",")]
    if not rest.startswith(":") or not any(items):
        raise InputError(
            f"{shown}: give parameters after `{PREFIX}:`, e.g. {PREFIX}:recency=4,seed=1, "
            f"or none for the defaults; {PREFIX} takes: {', '.join(PARAM_NAMES)}"
        )
    declared = {p.name: p for p in PARAMS}
    values: dict[str, Any] = {}
    for item in items:
        key, eq, raw = (part.strip() for part in item.partition("="))
        if key not in declared or not eq:
            raise InputError(f"{shown}: unknown parameter {item[:60]!r}; {PREFIX} takes: {', '.join(PARAM_NAMES)}")
        if key in values:
            raise InputError(f"{shown}: {key} is given twice: give it once")
        try:
            values[key] = declared[key].parse(raw)
        except ValueError as exc:
            raise InputError(f"{shown}: {key}: {exc}") from None
    return LossySpec(**{k: float(v) if isinstance(declared[k].default, float) else v for k, v in values.items()})


def chance(seed: int, draw: int, role: str, turn: int, *what: object) -> float:
    """A number in [0, 1) drawn from what is decided alone: the same arguments give the same
    number in any order of calls, in any thread. A degradation of probability P happens when
    it is below P (so P = 1 always, P = 0 never)."""
    text = json.dumps([seed + draw, role, turn, *what], ensure_ascii=False)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


class LossyModel:
    """The reference reader with seeded degradations; deterministic, offline, qualifying no model."""

    # The reference reader, degraded: it cannot answer what it cannot read either; its
    # repetitions draw with seeds of their own, so they are not one answer repeated.
    capabilities = Capabilities(degrades_on_purpose=True, can_judge=False, reader=LITERAL)

    def __init__(self, name: str, spec: LossySpec, run_seed: int) -> None:
        self.name = name  # as named on the command line: the calls' `call_model`
        self.spec = spec
        self.seed = spec.seed if spec.seed is not None else run_seed
        self.seed_from = "the model's name" if spec.seed is not None else "--seed"
        self.reference = ReferenceModel()

    def describe(self) -> dict[str, Any]:
        """The model's settings as it runs, for the manifest's `model_settings`."""
        return {
            "name": self.name,
            "model": PREFIX,
            "parameters": self.spec.as_record(self.seed),
            "seed_from": self.seed_from,
        }

    def complete(self, request: CallRequest) -> Completion:
        """The reference model's reply, degraded; `degraded` lists what was lost (maybe nothing)."""
        if request.kind == "answer":
            text, lost = self.answer(request)
            return Completion(text=text, degraded=tuple(lost))
        completion = self.reference.complete(request)
        if completion.scripted:
            return replace(completion, degraded=())
        if request.kind == SUMMARIZER and self.spec.summary_drop > 0:
            text, lost = self.summary(request, completion.text)
        elif request.kind == WRITER and self.spec.writer_miss > 0:
            text, lost = self.writer(request, completion.text)
        else:
            text, lost = completion.text, []
        return replace(completion, text=text, degraded=tuple(lost))

    def _happens(self, p: float, request: CallRequest, *what: object) -> bool:
        return p > 0 and chance(self.seed, request.draw, request.kind, request.turn.number, *what) < p

    # --- summarizer ---------------------------------------------------------------------------

    def summary(self, request: CallRequest, text: str) -> tuple[str, list[dict[str, Any]]]:
        """The summary without the clauses drawn to drop, line by line; a line left with no
        word is left out."""
        keys = request.turn.keys
        seen: dict[tuple[str, str], int] = {}  # occurrences so far: a repeated clause is drawn anew
        lost: list[dict[str, Any]] = []
        lines = []
        for line in text.split("\n"):
            kept, at = [], 0
            for clause in clauses(line):
                what, key = _clause_kind(clause.text, keys)
                if what is None:
                    continue
                n = seen[(what, clause.text)] = seen.get((what, clause.text), 0) + 1
                if self._happens(self.spec.summary_drop, request, what, clause.text, n):
                    kept.append(line[at : clause.start])
                    at = _after_clause(line, clause.end)
                    lost.append(_entry("summary_drop", what, key, clause.text, None))
            if not kept:
                lines.append(line)
                continue
            rebuilt = "".join([*kept, line[at:]]).strip().rstrip(";").rstrip()
            if any(c.isalnum() for c in rebuilt):
                lines.append(rebuilt)
        return "\n".join(lines), lost

    # --- writer -------------------------------------------------------------------------------

    def writer(self, request: CallRequest, text: str) -> tuple[str, list[dict[str, Any]]]:
        """The writer's JSON reply without the candidates drawn to omit; a reply of another
        shape is left as it is (nothing to omit)."""
        try:
            reply = json_bounded.loads(text, what="the writer's reply")
        except json.JSONDecodeError:  # a plug-in's stand-in may send anything
            return text, []
        if not isinstance(reply, dict) or not isinstance(reply.get("facts"), list):
            return text, []
        seen: dict[tuple[str, str], int] = {}
        kept, lost = [], []
        for item in reply["facts"]:
            key, value = (item.get("key"), item.get("value")) if isinstance(item, dict) else (None, None)
            if not isinstance(key, str) or not isinstance(value, str):
                kept.append(item)  # no declaration: admission refuses it as it is
                continue
            n = seen[(key, value)] = seen.get((key, value), 0) + 1
            if self._happens(self.spec.writer_miss, request, "declaration", key, value, n):
                lost.append(_entry("writer_miss", "declaration", key, f"{key}={value}", request.turn.number))
            else:
                kept.append(item)
        if not lost:
            return text, []
        return json.dumps({**reply, "facts": kept}, ensure_ascii=False), lost

    # --- answer -------------------------------------------------------------------------------

    def answer(self, request: CallRequest) -> tuple[str, list[dict[str, Any]]]:
        """The reference reader's answer from the messages it reads (recency), with a stale
        value where drawn; entries for what that changed."""
        messages, keys = request.messages, request.turn.keys
        current = last_user_index(messages)
        if current is None:
            return NOTHING, []
        read = [i for i, m in enumerate(messages) if i == current or not self._too_old(m, request.turn.number)]
        seen = [messages[i] for i in read]
        offset, own = own_text(messages[current])
        permission = permission_request(own)
        if permission is not None:
            asked = (offset + permission.sentence.start, offset + permission.sentence.end)
            full = prohibition_at(messages, permission.verb, current, asked)
            found = prohibition_at(seen, permission.verb, read.index(current), asked)
            lost = []
            if full is not None and found is None:  # the refusal is lost (another clause it reads still refuses)
                key = _clause_kind(full[1], request.turn.keys)[1]
                lost.append(_entry("recency", "prohibition", key, full[1], messages[full[0]].turn))
            return (YES if found is None else f'No — "{found[1]}"'), lost
        asked_about = question(own)
        if asked_about is None:
            return NOTED, []
        return self._key_answer(request, asked_about.text, messages, read, keys)

    def _too_old(self, message: Message, now: int) -> bool:
        recency = self.spec.recency
        return recency is not None and message.turn is not None and message.turn < now - recency

    def _key_answer(
        self,
        request: CallRequest,
        asked: str,
        messages: Sequence[Message],
        read: list[int],
        keys: Collection[str],
    ) -> tuple[str, list[dict[str, Any]]]:
        full = declaration_history(messages, keys)
        stated = {
            k: [(read[i], v) for i, v in s] for k, s in declaration_history([messages[i] for i in read], keys).items()
        }
        named = mentioned_keys(asked, keys) or list(full)
        lost: list[dict[str, Any]] = []
        declared = {k: s[-1][1] for k, s in stated.items()}
        for key in named:
            if key in full and declared.get(key) != full[key][-1][1]:  # its latest value went unread
                index, value = full[key][-1]
                lost.append(_entry("recency", "declaration", key, f"{key}={value}", messages[index].turn))
            if key not in stated:
                continue
            latest = stated[key][-1][1]
            older = next(((i, v) for i, v in reversed(stated[key]) if v != latest), None)
            if older is not None and self._happens(self.spec.stale, request, "stale", key):
                declared[key] = older[1]
                entry = _entry("stale", "declaration", key, f"{key}={older[1]}", messages[older[0]].turn)
                lost.append({**entry, "replaced": f"{key}={latest}"})
        return key_answer(asked, declared, keys), lost


def _clause_kind(text: str, keys: Collection[str]) -> tuple[str | None, str | None]:
    """What the summarizer may drop: `("prohibition", key)` for a clause holding a negation,
    `("declaration", key)` for one declaring a key, else `(None, None)`; `key` is the key the
    clause declares (None when it declares none)."""
    declared = next(iter(parse_declarations(text, keys)), None)
    if NEGATION_RE.search(text):
        return "prohibition", declared
    return ("declaration", declared) if declared else (None, None)


def _after_clause(line: str, end: int) -> int:
    """Where the text after a dropped clause starts: past a `;` that closed it, and white space."""
    at = end
    while at < len(line) and line[at].isspace():
        at += 1
    if at < len(line) and line[at] == ";":
        at += 1
        while at < len(line) and line[at].isspace():
            at += 1
    return at


def _entry(kind: str, what: str, key: str | None, text: str, from_turn: int | None) -> dict[str, Any]:
    """One `degraded` entry: the degradation, what it took (a declaration or a prohibition), the
    key (None for a prohibition), the text lost (the clause, or `key=value`), and the turn of
    the message it came from (None when the model cannot tell: a summary merges turns)."""
    return {"kind": kind, "what": what, "key": key, "text": text, "from_turn": from_turn}


def as_entries(degraded: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """A completion's `degraded` as calls.jsonl writes it: a list, or None for a model that
    degrades nothing on purpose."""
    return None if degraded is None else [dict(entry) for entry in degraded]
