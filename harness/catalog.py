"""Model names on the command line, and the models they open.

`reference` is built in; `openai:NAME` is any OpenAI-compatible endpoint; `local` starts the
optional local model server and talks to it through the same OpenAI path. Modules that need
an extra (openai client, llama.cpp server) are imported only when such a model is asked for.
"""

from __future__ import annotations

import re
from contextlib import ExitStack

from harness.batch import ModelFactory, ModelOptions
from harness.errors import InputError
from harness.models import Model
from harness.reference import ReferenceModel

MODEL_NAME = re.compile(r"^(reference|local|openai:\S+)$")
LOCAL_MODEL = "SmolLM2-135M-Instruct"


def check_model_name(name: str, option: str = "--model") -> None:
    """Raise InputError unless `name` is a model name the harness knows how to open."""
    if not MODEL_NAME.match(name):
        raise InputError(f"{option} {name}: unknown model; use reference, openai:NAME (any "
                         "OpenAI-compatible endpoint, with --base-url) or local (the optional extra)")  # fmt: skip


def model_factory(options: ModelOptions, seed: int) -> ModelFactory:
    """A factory opening each named model once; resources close with the batch's ExitStack."""

    def make(name: str, stack: ExitStack) -> Model:
        check_model_name(name)
        if name == "reference":
            return ReferenceModel()
        base_url = options.base_url
        model_name = name.removeprefix("openai:")
        if name == "local":
            from harness.local import local_server

            base_url, model_name = stack.enter_context(local_server()), LOCAL_MODEL
        from harness.openai_model import OpenAIModel

        model = OpenAIModel(model_name, base_url=base_url, api_key_env=options.api_key_env,
                            timeout=options.timeout, max_retries=options.max_retries, seed=seed)  # fmt: skip
        stack.callback(model.close)
        return model

    return make
