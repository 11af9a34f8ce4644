"""How models are reached (`ModelOptions`, recorded in the manifest) and what opens a model by
its name (`ModelFactory`; `harness.models.catalog` makes one from the options)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from harness.models import CallKind, Model
from harness.models.local import LocalOptions
from harness.models.ratelimit import RateLimits
from harness.models.sampling import Sampling

ModelFactory = Callable[[str, ExitStack], Model]

# The most bytes (decoded) read from one response of an endpoint, unless `--max-response-bytes`
# says otherwise: a chat completion of 100,000 tokens takes under 1 MB; past the cap the call
# fails (`harness.models.deadline`), so an endpoint cannot fill the memory.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Models:
    """Which model makes which kind of call: the answer, each mapped role, the judge."""

    answer: Model
    roles: Mapping[str, Model] = field(default_factory=dict)  # a role not mapped: the answering model
    judge: Model | None = None  # None: no judged checks

    @classmethod
    def single(cls, model: Model) -> Models:
        return cls(model)

    def for_kind(self, kind: CallKind) -> Model:
        if kind == "judge":
            assert self.judge is not None, "no model for judge calls"
            return self.judge
        return self.answer if kind == "answer" else self.roles.get(kind, self.answer)


@dataclass(frozen=True)
class ModelOptions:
    """How models are reached; recorded in the manifest (the key's variable name, never its value)."""

    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_retries: int = 4
    roles: Mapping[str, str] = field(default_factory=dict)  # role -> model name; a role not here: the answering model
    judge: str | None = None  # None: no judged checks
    sampling: Sampling = field(default_factory=Sampling)
    local: LocalOptions = field(default_factory=LocalOptions)
    # Every --base-url, in order (`base_url` is the first): several spread conversations over
    # several servers of the same model (harness.models.servers).
    base_urls: tuple[str, ...] = ()
    max_response_bytes: int = MAX_RESPONSE_BYTES  # decoded bytes read from one response, at most
    rate_limits: RateLimits = field(default_factory=RateLimits)  # --max-rpm, --max-tpm and the shards sharing them

    def as_record(self) -> dict[str, Any]:
        # `summarizer_model` and `writer_model` repeat two roles for readers of earlier runs.
        return {
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "max_response_bytes": self.max_response_bytes,
            "summarizer_model": self.roles.get("summarizer"),
            "writer_model": self.roles.get("writer"),
            "judge_model": self.judge,
            "model_roles": dict(sorted(self.roles.items())),
            "sampling": self.sampling.as_record(),
            "local": self.local.as_record(),
            "base_urls": list(self.base_urls or ([self.base_url] if self.base_url else [])),
            "rate_limits": self.rate_limits.as_record(),
        }
