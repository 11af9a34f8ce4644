"""Typed, immutable records of a chronology: the fixed conversation a run replays.

Loading and validating YAML into these records lives in `harness.chronology.loading`; everything past
that edge passes these objects, never raw YAML.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.base.errors import Problem
from harness.base.messages import ToolCall
from harness.chronology.declarations import ALLOWED_KEYS
from harness.chronology.patterns import Pattern
from harness.chronology.writer import Candidate, reference_writer_output

# A scripted writer output item is a writer candidate like any other: fields may be missing
# (None), to reproduce a rejection.
WriterCandidate = Candidate


@dataclass(frozen=True)
class Prohibition:
    """A prohibition the checks follow: recognised by `present`, broken by `violated_by`."""

    id: str
    present: Pattern
    violated_by: Pattern
    required: Pattern | None = None
    description: str | None = None


ExpectKind = Literal["value", "pattern", "not", "abstain", "rubric"]
JUDGED_KINDS: tuple[ExpectKind, ...] = ("rubric",)  # judged by the --judge model
DEFAULT_PASS = "YES"  # a rubric's passing verdict when `pass:` is not given


@dataclass(frozen=True)
class Expectation:
    """One `expect:` entry of a probe: what its answer must meet (decision 0001)."""

    kind: ExpectKind
    text: str  # the value, the pattern's text or the rubric; "true" for abstain
    pattern: Pattern | None = None  # compiled, for `pattern` and `not`
    passes: str = DEFAULT_PASS  # a rubric's passing verdict (`pass:`)

    @property
    def subject(self) -> str:
        """How probes.csv names it: `value: Lisbon`, `not: (?i)porto`, `abstain`, `rubric: ...`."""
        return "abstain" if self.kind == "abstain" else f"{self.kind}: {self.text}"

    @property
    def judged(self) -> bool:
        return self.kind in JUDGED_KINDS


@dataclass(frozen=True)
class Reference:
    """A benchmark's reference answer to a probe (`reference:`), for the benchmark's own metric;
    the harness's checks never read it (they read `expect:`)."""

    answer: str
    prefix: str | None = None  # text the answer must start with (MRCR's random string)


@dataclass(frozen=True)
class Source:
    """Where an imported chronology came from (`source:`)."""

    dataset: str
    item_id: str
    sha256: str  # of the input file
    licence: str
    category: str | None = None  # the item's category in its benchmark, when it has one


@dataclass(frozen=True)
class ToolResult:
    """A tool's result, answering the call with the same id; `error`: the tool failed and
    `content` is its error text."""

    id: str
    content: str
    error: bool = False
    evidence: tuple[str, ...] = ()  # probe ids whose answer this result holds (`evidence:` on a result)


@dataclass(frozen=True)
class Step:
    """One group of an agent's work before its reply: an assistant message carrying
    `tool_calls`, then the tool messages answering them, one per call, in the calls' order.
    The replay does not execute tools: a step is a recorded fact of the conversation."""

    tool_calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]


@dataclass(frozen=True)
class UserTurn:
    """A user message, with what the chronology scripts for it."""

    number: int  # 1-based position in `turns:` (forget entries count too)
    line: int  # line of the entry in the YAML file
    user: str
    session: str
    assistant: str | None = None  # scripted reply: kept as the answer in fixed replay
    probe: str | None = None  # probe id: the checks run on this turn
    asks: tuple[str, ...] | None = None  # prohibitions the probe's question asks about; None: all in force
    summary: str | None = None  # scripted summarizer output after this exchange ("" is a real, empty summary)
    writer: tuple[WriterCandidate, ...] | None = None  # scripted writer output for this message
    sets: tuple[tuple[str, str], ...] = ()  # (key, value) the checks take as declared, beside the user's words
    # The chronology's key set (`keys:`): what a `key=value` segment of this turn, or of a view
    # sent at this turn, declares. Every reader past the chronology (the reference model, the
    # fact store) takes it from here: `parse_declarations(text, turn.keys)`.
    keys: tuple[str, ...] = ALLOWED_KEYS
    expect: tuple[Expectation, ...] = ()  # on a probe: what its answer must meet
    category: str | None = None  # on a probe: its category, where an item's questions have several
    reference: Reference | None = None  # on a probe: the benchmark's reference answer
    evidence: tuple[str, ...] = ()  # probe ids this message holds the answer for
    # What the agent did before its reply, in order (`steps:`); the history after the turn holds
    # the user message, each step's messages, then the reply (`harness.policy.history`).
    steps: tuple[Step, ...] = ()
    # A system message the turn adds mid-conversation (`system:`), sent right after the user
    # message, so it stays with its turn wherever a policy keeps or drops whole turns.
    system: str | None = None
    pin: bool = False  # the user message is pinned (`pin: true`): copied into every later view under pin=true
    pin_system: bool = False  # the turn's system message is pinned (`system: {text, pin: true}`)

    @property
    def statements(self) -> tuple[str, ...]:
        """What the turn states, in the order it is sent: the user's message, then its system message."""
        return (self.user,) if self.system is None else (self.user, self.system)

    def scripted_reply(self, role: str) -> str | None:
        """The reply this turn scripts for a call of `role`, as a model would write it; None: none.

        The format scripts two roles: `summary:` is the `summarizer`'s text verbatim ("" included),
        `writer:` the `writer`'s candidates, written as its JSON reply. Only the offline
        `reference` model replays them.
        """
        if role == "summarizer":
            return self.summary
        if role == "writer" and self.writer is not None:
            return reference_writer_output(self.user, self.writer, self.keys)
        return None


@dataclass(frozen=True)
class Forget:
    """`forget: KEY` removes one fact; `forget: all` removes every fact. Both reset histories."""

    number: int
    line: int
    key: str | None  # None means all


Turn = UserTurn | Forget


@dataclass(frozen=True)
class Chronology:
    """A whole chronology file, validated."""

    path: str
    sha256: str
    title: str
    description: str
    system: str | None
    sessions: tuple[str, ...]
    prohibitions: tuple[Prohibition, ...]
    turns: tuple[Turn, ...]
    name: str = field(default="")  # file stem, the chronology's id in results
    warnings: tuple[Problem, ...] = ()  # what `harness validate` warns about; the file is valid
    keys: tuple[str, ...] = ALLOWED_KEYS  # the fact keys a `key=value` segment may declare (`keys:`)
    source: Source | None = None  # where an imported chronology came from

    def __post_init__(self) -> None:
        # Each turn carries the key set to the readers that see only the turn; one set per file.
        for turn in self.user_turns:
            if turn.keys != self.keys:
                raise ValueError(f"turn {turn.number} reads keys {turn.keys}, the chronology {self.keys}")

    @property
    def user_turns(self) -> tuple[UserTurn, ...]:
        return tuple(t for t in self.turns if isinstance(t, UserTurn))

    @property
    def probes(self) -> tuple[UserTurn, ...]:
        return tuple(t for t in self.user_turns if t.probe is not None)
