"""One scripted model for tests: canned answers, every request recorded, failures where told.

    ScriptedModel()                                     # the reference model's answers, as "reference"
    ScriptedModel("judge", '{"in_view": true}')         # one answer to every call
    ScriptedModel("m", lambda request: ...)             # a function of the request: a text or a
                                                        # Completion (it may raise, e.g. ModelError)
    ScriptedModel("w", fails=ModelError("HTTP 503"))    # every call fails
    ScriptedModel(fails=OSError(28, "..."), from_call=6)  # calls 1-5 answered, the 6th and later fail
    ScriptedModel("openai:m", ..., cache_identity={...})  # cached, as an endpoint's model is

    model.requests                                      # every CallRequest it was sent, failed ones too
    model.calls                                         # how many

The name is the model's name in a plan and in the records (`RunSpec(..., [model.name])`), and
the name `serving(model)` gives it to a run. A model that acts at one precise moment of a call
(presses Ctrl-C, kills its process, blocks: tests/faults.py `AtCall`) stays its own class.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import Any

from harness.models import CallRequest, Completion, Model
from harness.models.options import ModelFactory
from harness.models.reference import ReferenceModel

Answer = str | Callable[[CallRequest], str | Completion] | None

REFERENCE = ReferenceModel()


class ScriptedModel:
    """A model whose answers come from `answer` (None: the reference model's); see the module."""

    def __init__(
        self,
        name: str = "reference",
        answer: Answer = None,
        *,
        fails: BaseException | None = None,
        from_call: int = 1,
        cache_identity: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.answer, self.fails, self.from_call = answer, fails, from_call
        self.cache_identity = cache_identity  # None: never cached (the harness reads it with getattr)
        self.requests: list[CallRequest] = []
        self._lock = threading.Lock()  # a batch calls one model from several threads

    @property
    def calls(self) -> int:
        return len(self.requests)

    def complete(self, request: CallRequest) -> Completion:
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
        if self.fails is not None and number >= self.from_call:
            raise self.fails
        if self.answer is None:
            return REFERENCE.complete(request)
        reply = self.answer(request) if callable(self.answer) else self.answer
        return reply if isinstance(reply, Completion) else Completion(reply)


def serving(*models: Model) -> ModelFactory:
    """A run's model factory (`run_batch(..., factory=)`): each of `models` under its name, the
    reference model under any other."""
    by_name = {model.name: model for model in models}

    def factory(name: str, stack: ExitStack) -> Model:
        return by_name.get(name) or ReferenceModel()

    return factory
