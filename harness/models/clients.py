"""What the endpoint models (`harness.models.openai`, `harness.models.anthropic`) share: their
clients, each thread's own, opened at its first call, and every one closed with the model; each
request paced and retried; a failed call described.

One pool per thread, not one shared by all: a pool looks over all its connections for every
request (polling each idle socket), so one pool shared by 64 conversations cost more CPU per call
than the harness's own work (benchmarks/batch_latency.py). Each thread has one call in flight at a
time, so it holds as many connections as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar

from harness.base.errors import ModelError
from harness.base.messages import total_chars
from harness.models import CallRequest
from harness.models.ratelimit import Paced, Pacer, Tally, admission_tokens
from harness.models.redaction import Redactor
from harness.models.retry import AttemptFailed, Retries


class _Client(Protocol):
    def is_closed(self) -> bool: ...

    def close(self) -> None: ...


C = TypeVar("C", bound=_Client)
R = TypeVar("R")


class EndpointModel(Generic[C]):
    """Base of an endpoint model: its clients, one per thread (`_thread_client`), closed with it;
    its requests paced and retried (`_paced`, `_sent`); its failures described alike (`_error`)."""

    name: str
    pacer: Pacer | None  # rate limits and AIMD shared by every client of this model (None: unpaced)
    _retries: Retries
    _redactor: Redactor  # applied to all the endpoint sends back, and to every error

    def __init__(self, open_client: Callable[[], C]) -> None:
        self._open_client = open_client
        self._lock = threading.Lock()
        self._own = threading.local()  # `client`: this thread's client
        self._opened: list[C] = []  # every thread's, closed with the model
        self._closed = False

    def _thread_client(self) -> C:
        """The calling thread's client, opened at its first call (under the same deadline)."""
        client = getattr(self._own, "client", None)
        if client is None or client.is_closed():
            with self._lock:  # under the lock: a client opened while `close` runs is closed with the rest
                if self._closed:
                    raise AttemptFailed("not sent: the model was closed (the run is stopping)")
                client = self._open_client()
                self._opened.append(client)
            self._own.client = client
        return client

    def close(self) -> None:
        """Close every thread's client (idempotent)."""
        with self._lock:
            self._closed = True  # a thread's later call is refused, not sent on a closed client
            opened, self._opened = self._opened, []
        for client in opened:
            client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _paced(self, request: CallRequest, params: Mapping[str, Any]) -> AbstractContextManager[Tally]:
        """While a call is made: the tally of what pacing did to it (None in it when unpaced); each
        request counted for the input's estimate plus the cap sent (`admission_tokens`)."""
        if self.pacer is None:
            return nullcontext(Tally(paced=None))
        cap = params.get("max_tokens", params.get("max_output_tokens"))
        return self.pacer.call(admission_tokens(total_chars(request.messages), cap))

    def _sent(self, attempt: Callable[[], R], notes: list[str], final: frozenset[int] = frozenset()) -> tuple[R, int]:
        """Attempt until success, a final failure, or `max_retries` retries; return (result, attempts).
        Each attempt is a request: paced on its own (a retry counts against the limit too)."""
        pacer = self.pacer
        return self._retries.run(attempt if pacer is None else lambda: pacer.send(attempt), notes, final)

    def _error(
        self, message: str, attempts: int, notes: list[str], refusals: int = 0, paced: Paced | None = None
    ) -> ModelError:
        """A failed call, safe to record: the model's name, why, the requests made and what the figures do not show."""
        noun = "attempt" if attempts == 1 else "attempts"
        said = "".join(f"; {note}" for note in notes)
        text = self._redactor.text(f"{self.name}: {message} ({attempts} {noun}{said})")
        return ModelError(text, attempts, refusals, paced)
