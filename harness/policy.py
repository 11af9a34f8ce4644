"""The policy contract, policy specs (`last-turns:turns=5`) and the plug-in registry.

A policy decides what a model sees at each turn (the request view) and what it keeps between
turns (the retained state). Policies are discovered through the `harness.policies`
entry-point group, so a third party adds one with `pip install` and no edit to the harness.
Nothing is registered at import time: `PolicyRegistry.installed()` reads the entry points
each time it is called, and tests build a registry from a plain mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, ClassVar, Literal, Protocol

from harness.chronology import Forget, UserTurn
from harness.errors import InputError
from harness.messages import Message
from harness.models import CallRequest

ENTRY_POINT_GROUP = "harness.policies"

# The comparison a plain `harness run` makes: the built-in policies, bounded facts in both
# injection modes. Other installed policies follow, by name.
DEFAULT_SPECS = (
    "full-history",
    "last-turns",
    "summary",
    "bounded-facts",
    "bounded-facts:mode=provider",
    "request-compaction",
    "retained-reduction",
)


@dataclass(frozen=True)
class Param:
    """One policy parameter: its default fixes its type (int or str)."""

    name: str
    default: int | str
    description: str
    choices: tuple[str, ...] = ()
    minimum: int | None = None

    def parse(self, text: str) -> int | str:
        """Convert a CLI value, or raise ValueError saying what is expected."""
        if isinstance(self.default, int):
            value = int(text)
            if self.minimum is not None and value < self.minimum:
                raise ValueError(f"must be at least {self.minimum}")
            return value
        if self.choices and text not in self.choices:
            raise ValueError(f"must be one of {', '.join(self.choices)}")
        return text


# Why something left the retained state (docs/chronologies.md, "Where it was lost"); the checks
# add `window`, `other-session`, `stopped`, `error` and `untraced` for what no drop explains.
Cause = Literal["reduction", "summary", "eviction", "not-stored", "forget"]


@dataclass(frozen=True)
class Drop:
    """Something the retained state dropped at a turn, why in words, and the cause category."""

    text: str
    why: str  # e.g. "evicted from the fact store by new key version at turn 6"
    cause: Cause


@dataclass
class Outcome:
    """What a policy reports after a turn or a forget."""

    stop: str | None = None  # a reason (e.g. `summary_too_long:812`): the replay stops here
    # What the retained state dropped at this turn, so the checks can say where and why a
    # prohibition or value was lost.
    dropped: list[Drop] = field(default_factory=list)
    facts: dict[str, Any] | None = None  # for fact policies: the facts.jsonl payload of this turn


class AuxCalls(Protocol):
    """Model calls a policy may make besides the answer, during `after_answer`.

    `call(role, messages, schema=None, reference=None)` sends `messages` to the model the user
    mapped to `role` (`--model-role ROLE=MODEL`; the answering model by default) and returns its
    text; the runner records the call in `calls.jsonl` with `kind` = role. With a `schema` (a
    JSON Schema), the model is asked for structured output. `reference` is the policy's
    deterministic stand-in, `(CallRequest) -> str`, which the offline `reference` model replies
    with (a chronology's scripted output for the role, if any, comes first). A failed call
    raises `ModelError`; a policy that lets it through stops its replay at that turn.
    """

    def call(self, role: str, messages: Sequence[Message], schema: Mapping[str, Any] | None = None,
             reference: Callable[[CallRequest], str] | None = None) -> str: ...  # fmt: skip


class Policy(Protocol):
    """One conversation's context policy. Created per conversation, never shared."""

    def view(self, turn: UserTurn) -> list[Message]:
        """The request view for this user turn: exactly the messages sent to the model."""
        ...

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        """Take in a completed exchange (the answer is the model's, or the scripted reply)."""
        ...

    def forget(self, event: Forget) -> Outcome:
        """Apply a `forget` event of the chronology."""
        ...

    def retained(self) -> list[Message]:
        """The retained state after the last turn, as messages (for sizes and checks)."""
        ...


class PolicyFactory(Protocol):
    """What an entry point names: a class with a name, a description and parameters."""

    name: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[tuple[Param, ...]]

    def __call__(self, system: Message | None, **params: Any) -> Policy: ...


@dataclass(frozen=True)
class PolicySpec:
    """A policy with its parameters, as named on the command line and in results."""

    name: str
    params: Mapping[str, int | str] = field(default_factory=dict)
    defaults: Mapping[str, int | str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """`name`, plus `:k=v,...` for parameters that differ from the defaults."""
        changed = [f"{k}={v}" for k, v in self.params.items() if self.defaults.get(k) != v]
        return f"{self.name}:{','.join(changed)}" if changed else self.name

    def as_record(self) -> dict[str, Any]:
        return {"label": self.label, "name": self.name, "params": dict(self.params)}


class PolicyRegistry:
    """Installed policies by name; `broken` holds entry points that failed to load."""

    def __init__(self, factories: Mapping[str, PolicyFactory], broken: Mapping[str, str] | None = None):
        self.factories = dict(factories)
        self.broken = dict(broken or {})

    @classmethod
    def installed(cls) -> PolicyRegistry:
        """Read the `harness.policies` entry points now (no caching, no import side effects)."""
        factories: dict[str, PolicyFactory] = {}
        broken: dict[str, str] = {}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                factories[ep.name] = ep.load()
            except Exception as exc:  # a broken plug-in must not hide the others
                broken[ep.name] = f"{type(exc).__name__}: {exc}"
        return cls(factories, broken)

    def default_specs(self) -> list[PolicySpec]:
        """Every installed policy: the built-in comparison first, then the others by name."""
        specs = [self.parse(s) for s in DEFAULT_SPECS if s.split(":")[0] in self.factories]
        builtin = {s.split(":")[0] for s in DEFAULT_SPECS}
        specs += [self.parse(n) for n in sorted(self.factories) if n not in builtin]
        return specs

    def parse(self, text: str) -> PolicySpec:
        """Parse `name` or `name:key=value,key=value`; raise InputError saying what to fix."""
        name, _, rest = text.partition(":")
        factory = self.factories.get(name.strip())
        if factory is None:
            known = ", ".join(sorted(self.factories)) or "none"
            raise InputError(f"--policy {text}: unknown policy '{name}'; installed: {known} (see `harness policies`)")
        declared = {p.name: p for p in factory.params}
        values = {p.name: p.default for p in factory.params}
        for item in filter(None, (s.strip() for s in rest.split(","))):
            key, eq, raw = item.partition("=")
            if key not in declared or not eq:
                allowed = ", ".join(declared) or "none"
                raise InputError(f"--policy {text}: unknown parameter '{item}'; {name} takes: {allowed}")
            try:
                values[key] = declared[key].parse(raw.strip())
            except ValueError as exc:
                raise InputError(f"--policy {text}: {key}: {exc}") from None
        return PolicySpec(factory.name, values, {p.name: p.default for p in factory.params})

    def parse_all(self, texts: Iterable[str]) -> list[PolicySpec]:
        """Parse every `--policy`; two that name the same policy and parameters are refused."""
        specs: dict[str, tuple[str, PolicySpec]] = {}
        for text in texts:
            spec = self.parse(text)
            if spec.label in specs:
                first = specs[spec.label][0]
                raise InputError(f"--policy {first} and --policy {text} are the same policy ({spec.label}); "
                                 "results would mix them under one label: give each once")  # fmt: skip
            specs[spec.label] = (text, spec)
        return [spec for _, spec in specs.values()]

    def create(self, spec: PolicySpec, system: Message | None) -> Policy:
        """A fresh policy instance for one conversation."""
        return self.factories[spec.name](system, **dict(spec.params))
