"""Several `--base-url` values for one model: conversations spread over several model servers.

Each conversation runs on one server from its first request to its last (a server's prompt cache
then serves the conversation's growing prefix), and takes the server with the fewest
conversations running on it when it makes its first request (the lowest-numbered among equals):
whichever is free, so a long conversation does not hold back the others. The choice depends on
timing, not on the plan, so the records say which server served each conversation
(`conversations.jsonl`'s `server`); every other field is as one server would have made it,
provided the servers serve the same model: before the batch starts, each server's `/v1/models`
is read, and servers that list different weights are refused (`check_one_model`). The response cache is keyed by the whole group
of servers, so a cached response is reused whichever server made it.

A conversation's scope (`conversation_scope`) is held by the thread that runs it (turns are
sequential), in a context variable; a call outside any scope takes the least-busy server for
that call alone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from harness.base.errors import InputError
from harness.models import CallRequest, Completion, Model
from harness.models.served import listed_entries, listing_digest

__all__ = ["Balancer", "Scope", "SpreadModel", "check_one_model", "conversation_scope"]


class Balancer:
    """Counts what runs on each server and hands out the least busy (thread-safe)."""

    def __init__(self, urls: Sequence[str]) -> None:
        self.urls = tuple(urls)
        self._busy = [0] * len(self.urls)
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            index = min(range(len(self.urls)), key=lambda i: (self._busy[i], i))
            self._busy[index] += 1
            return index

    def give_back(self, index: int) -> None:
        with self._lock:
            self._busy[index] -= 1


class Scope:
    """One conversation's server per balancer, taken at its first request, given back at its end."""

    def __init__(self) -> None:
        self._taken: dict[int, tuple[Balancer, int]] = {}  # by id(balancer)

    def server_of(self, balancer: Balancer) -> int:
        if id(balancer) not in self._taken:
            self._taken[id(balancer)] = (balancer, balancer.take())
        return self._taken[id(balancer)][1]

    @property
    def server(self) -> str | None:
        """The base URL that served this conversation; None when no spread model made a request."""
        urls = sorted({b.urls[i] for b, i in self._taken.values()})
        return ", ".join(urls) if urls else None

    def close(self) -> None:
        for balancer, index in self._taken.values():
            balancer.give_back(index)


_current: ContextVar[Scope | None] = ContextVar("harness_conversation_scope", default=None)


@contextmanager
def conversation_scope() -> Iterator[Scope]:
    """The scope of the conversation run inside the block, in this thread."""
    scope = Scope()
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)
        scope.close()


class SpreadModel:
    """One model served by several servers (`models[i]` at `urls[i]`), behind the Model protocol."""

    def __init__(self, models: Sequence[Any], balancer: Balancer, listing: str | None) -> None:
        assert len(models) == len(balancer.urls) > 0
        self.models, self.balancer = list(models), balancer
        self.name: str = models[0].name
        self._listing = listing  # the first server's, read by `check_one_model`

    def complete(self, request: CallRequest) -> Completion:
        scope = _current.get()
        if scope is not None:
            return self.models[scope.server_of(self.balancer)].complete(request)
        index = self.balancer.take()
        try:
            return self.models[index].complete(request)
        finally:
            self.balancer.give_back(index)

    def describe(self) -> dict[str, Any]:
        """The first server's settings, with every server's URL in `base_urls`."""
        return {**self.models[0].describe(), "base_urls": [m.describe()["base_url"] for m in self.models]}

    @property
    def cache_identity(self) -> dict[str, Any]:
        """The first server's identity with the whole group as the endpoint: a response is reused
        whichever server of the group made it."""
        endpoints = sorted(str(m.cache_identity["endpoint"]) for m in self.models)
        return {**self.models[0].cache_identity, "endpoint": ", ".join(endpoints)}

    def listing(self) -> str | None:
        """What the first server lists (`harness.models.served`), as read when the servers were checked:
        one probe per run, as with one server."""
        return self._listing

    def close(self) -> None:
        for model in self.models:
            model.close()


def spread(models: Sequence[Model], balancer: Balancer) -> Model:
    """One model for the given servers: the model itself when there is only one; several are
    checked to serve one model first (`check_one_model`)."""
    if len(models) == 1:
        return models[0]
    return SpreadModel(models, balancer, check_one_model(models, balancer.urls))


def check_one_model(models: Sequence[Any], urls: Sequence[str]) -> str | None:
    """Raise InputError when the servers of one spread model list different weights; else the
    first server's listing digest (`harness.models.served`; None when it lists nothing usable).

    A spread batch's records are those one server would have made only if every server serves
    the same model. Each server's `/v1/models` is read once (`listed()`, never retried); a server
    that lists nothing usable, or does not answer, cannot be compared and is let be: each call
    still records the `model` its response named.
    """
    listed: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    digests = []
    for url, model in zip(urls, models, strict=True):
        body = model.listed() if hasattr(model, "listed") else None
        entries = listed_entries(body, model.model)
        digests.append(digest := listing_digest(body, model.model))
        if entries is not None and digest is not None:
            listed[url] = (digest, entries)
    if len({digest for digest, _ in listed.values()}) > 1:
        said = "; ".join(
            f"{url} lists {', '.join(str(e.get('id')) for e in entries)} (listing {digest[:12]})"
            for url, (digest, entries) in listed.items()
        )
        raise InputError(
            f"--base-url: the servers do not serve the same model for {models[0].name}: {said}. "
            "Spread a model only over servers that serve the same weights, or compare the models in separate runs"
        )
    return digests[0]
