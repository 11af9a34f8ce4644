"""Which model answered: a stored response is served only by the model that answers live.

A cache keyed by the URL and the requested name serves old answers when the weights behind
that URL change (llama.cpp's server ignores the name). So every stored response carries the
identity of what answered it (`ServedBy`): the response's `model` and `system_fingerprint`,
and a digest of the endpoint's `/v1/models` listing (its stable fields; llama.cpp's lists the
weights' size and parameter count, vLLM the weights' path). Per run, the endpoint's listing
(probed once, when the cache is on) and then the first live response of each model say what
answers now (`LiveModels`); a stored response whose identity differs is refused and asked
again, with a note on the call. An endpoint that lists nothing is asked live once per run
before anything stored is served: only its reply says which model answers.

The listing names the model asked for, not what it resolves to: an alias (`gpt-x`, answered as
`gpt-x-2025-01-01`) can move to other weights while `/v1/models` stays the same. So a stored
response that named another model than the one asked for (`ServedBy.model`, the response's
`model`) is served only once a live response of this run has said what the alias answers as
now; until then it is asked live like an endpoint that lists nothing. A response that named the
model asked for (llama.cpp and vLLM answer with the name they were asked) says nothing more than
the listing does, which then decides as before.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Hashable
from dataclasses import asdict, dataclass
from typing import Any

from harness.models import Completion

# The fields of a `/v1/models` entry that describe the weights; `created` (llama.cpp: the time
# of the request) and the like would change every time.
LISTING_FIELDS = ("id", "owned_by", "root", "parent", "meta")


@dataclass(frozen=True)
class ServedBy:
    """What answered a call, as the endpoint described it (None: it did not say)."""

    model: str | None = None
    fingerprint: str | None = None
    listing: str | None = None  # sha256 of the endpoint's /v1/models entries; None when it lists none

    @classmethod
    def of(cls, completion: Completion, listing: str | None) -> ServedBy:
        return cls(completion.response_model, completion.fingerprint, listing)

    def as_record(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        return (
            f"model {self.model or 'unnamed'}, fingerprint {self.fingerprint or 'none'}, "
            f"listing {self.listing[:12] if self.listing else 'none'}"
        )


def listing_digest(body: object, requested: str) -> str | None:
    """The digest of a `/v1/models` body's stable fields: of the entry named `requested` if there
    is one (OpenAI lists every model it offers), else of every entry (llama.cpp lists its weights'
    file, whatever name is asked); None when the body is not a model list."""
    entries = listed_entries(body, requested)
    if entries is None:
        return None
    stable = sorted(json.dumps({k: e.get(k) for k in LISTING_FIELDS}, sort_keys=True) for e in entries)
    return hashlib.sha256("\n".join(stable).encode()).hexdigest()


def listed_entries(body: object, requested: str) -> list[dict[str, Any]] | None:
    """The entries of a `/v1/models` body that `listing_digest` reads; None when it is not a model list."""
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        return None
    return [e for e in entries if e.get("id") == requested] or entries


class LiveModels:
    """Per run: what each model's endpoint answers as, learned from its first live response."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[Hashable, ServedBy] = {}
        self._listings: dict[Hashable, str | None] = {}

    def listing(self, scope: Hashable, probe: Callable[[], str | None]) -> str | None:
        """The endpoint's listing digest, probed once per scope."""
        with self._lock:
            if scope not in self._listings:
                self._listings[scope] = probe()
            return self._listings[scope]

    def learn(self, scope: Hashable, served: ServedBy) -> None:
        """Record what answered live; the first live response of a scope sets it for the run."""
        with self._lock:
            self._live.setdefault(scope, served)

    def verdict(
        self, scope: Hashable, stored: ServedBy | None, listing: str | None, asked: str | None = None
    ) -> str | None:
        """None: serve the stored response; `unknown`: nothing says what answers now (ask live);
        else why it is refused. Before any live response of the run, the endpoint's listing
        decides (when it offers one), unless the stored response named another model than
        `asked` (an alias, which may have moved: ask live); after, the whole identity."""
        with self._lock:
            live = self._live.get(scope)
        if live is None and (listing is None or resolved_alias(stored, asked)):
            return "unknown"
        if live is None:
            if stored is not None and stored.listing == listing:
                return None
            assert listing is not None
            return refusal(stored, f"its /v1/models listing is now {listing[:12]}")
        return None if stored == live else refusal(stored, f"the endpoint now answers as {live.describe()}")

    def moved(self, scope: Hashable, stored: ServedBy | None) -> str | None:
        """After a live call made because nothing said what answers (`unknown`): why the stored
        response it replaced would have been refused (another model answers now), or None."""
        with self._lock:
            live = self._live.get(scope)
        if live is None or stored is None or stored.model == live.model:
            return None
        return refusal(stored, f"the endpoint now answers as {live.describe()}")


def resolved_alias(stored: ServedBy | None, asked: str | None) -> bool:
    """Whether a stored response named another model than the one asked for: the name asked
    was an alias, resolved by the endpoint, and may resolve elsewhere now."""
    return stored is not None and stored.model is not None and asked is not None and stored.model != asked


def refusal(stored: ServedBy | None, now: str) -> str:
    """The note of a stored response refused: what made it, and what answers now."""
    what = stored.describe() if stored else "an unrecorded model"
    return f"cached response not served: it came from {what}; {now}"
