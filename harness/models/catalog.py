"""Model names on the command line, and the models they open.

`reference` is built in, and so is `reference:lossy[:k=v,...]`, the same reader degraded on
purpose (harness.models.lossy); `openai:NAME` is any OpenAI-compatible endpoint; `anthropic:NAME`
Anthropic's Messages API (harness.models.anthropic); `local` starts
the optional local model server and talks to it through the same OpenAI path. Modules that need
an extra (openai client, llama.cpp server) are imported only when such a model is asked for.
"""

from __future__ import annotations

import os
import re
from contextlib import ExitStack
from typing import Any

from harness.base.capabilities import Capabilities
from harness.base.errors import InputError
from harness.base.text import excerpt, shown
from harness.models import PROVIDER, RESERVED_ROLES, Model
from harness.models.endpoint import check_base_url, check_key, check_key_text, check_key_variable
from harness.models.lossy import LossyModel, is_lossy, parse_lossy
from harness.models.options import ModelFactory, ModelOptions
from harness.models.ratelimit import Pacer, Pacers
from harness.models.reference import ReferenceModel
from harness.models.servers import Balancer, spread

MODEL_NAME = re.compile(r"^(reference(?::lossy(?::\S*)?)?|local|openai:\S+|anthropic:\S+)$")
# A 135M model reads about 190 prompt tokens/s here: a call may take a while (the manifest's
# `model_settings` records the timeout each model ran with).
LOCAL_TIMEOUT = 120.0
ANTHROPIC = "anthropic:"  # the prefix of a Messages API model
ANTHROPIC_KEY_ENV = (
    "ANTHROPIC_API_KEY"  # its key's variable unless --api-key-env names another (harness.models.anthropic)
)
LOCAL_KEY_ENV = "OPENAI_API_KEY"  # `local` is reached as openai:, with the default variable's key if it is set


def check_model_name(name: str, option: str = "--model") -> None:
    """Raise InputError unless `name` is a model name the harness knows how to open."""
    if not MODEL_NAME.match(name):
        raise InputError(
            f"{option} {excerpt(name)}: unknown model; use reference, reference:lossy[:k=v,...], openai:NAME (any "
            "OpenAI-compatible endpoint, with --base-url), anthropic:NAME (the Anthropic Messages API) or local "
            "(the optional extra)"
        )
    if is_lossy(name):
        parse_lossy(name, option)


def check_model_names(names: tuple[str, ...]) -> None:
    """Every `--model` known, and each named once: two runs under one label would mix their results."""
    seen: set[str] = set()
    for name in names:
        check_model_name(name)
        if name in seen:
            raise InputError(
                f"--model {excerpt(name)} is given twice; results would mix both under one label: give it once"
            )
        seen.add(name)


def model_roles(pairs: tuple[str, ...], aliases: dict[str, str | None]) -> dict[str, str]:
    """`--model-role ROLE=MODEL` options (and their aliases, e.g. `--summarizer-model`) as role -> model.

    Each role is mapped once; `answer` and `judge` have their own options (`--model`, `--judge`).
    """
    given: dict[str, tuple[str, str]] = {}  # role -> (the option as written, model)
    options = [(f"--model-role {excerpt(pair)}", pair) for pair in pairs]
    options += [(f"--{role}-model {excerpt(model)}", f"{role}={model}") for role, model in aliases.items() if model]
    for option, pair in options:
        role, eq, model = (part.strip() for part in pair.partition("="))
        if not eq or not role or not model:
            raise InputError(f"{option}: expected ROLE=MODEL, e.g. --model-role summarizer=openai:gpt-4o-mini")
        if role in RESERVED_ROLES:
            raise InputError(
                f"{option}: {excerpt(role)} is not a policy's role; use --{'model' if role == 'answer' else role}"
            )
        if not MODEL_NAME.match(model):
            raise InputError(
                f"{option}: unknown model {shown(model)}; use reference, reference:lossy, openai:NAME, anthropic:NAME or local"
            )
        if is_lossy(model):
            parse_lossy(model, option)
        if role in given:
            raise InputError(f"{given[role][0]} and {option} both map the role {excerpt(role)}: give it once")
        given[role] = (option, model)
    return {role: model for role, (_, model) in given.items()}


def check_keys(names: tuple[str, ...], options: ModelOptions) -> None:
    """Raise InputError, before anything runs, when an `openai:` model needs a key that is not set,
    or a key that would be sent cannot be (a line feed, a zero-width space), or a base URL holds it."""
    check_key_variable(options.api_key_env)
    for name in (*names, *options.roles.values(), options.judge):
        if name and name.startswith("openai:"):
            for url in options.base_urls or (options.base_url,):
                check_key(name, options.api_key_env, url)
        elif name and name.startswith(ANTHROPIC):
            for url in options.base_urls or (options.base_url,):
                check_key(name, anthropic_key_env(options), url, "the Anthropic API", None)
        elif name == "local" and os.environ.get(LOCAL_KEY_ENV):
            check_key_text(LOCAL_KEY_ENV, os.environ[LOCAL_KEY_ENV])


def model_factory(options: ModelOptions, seed: int) -> ModelFactory:
    """A factory opening each named model once; resources close with the batch's ExitStack.

    The base URLs are checked here, before the batch writes anything: the manifest records them.
    Several base URLs give each `openai:` model one client per server, spread over them by
    conversation (harness.models.servers).
    """
    urls = options.base_urls or (options.base_url,)
    for url in urls:
        check_base_url(url)
    if len(set(urls)) < len(urls):
        raise InputError("--base-url: the same URL is given twice; give each server once")
    balancer = Balancer([str(url) for url in urls])
    # One pacer per model name, whatever its role and server: a provider limits each model
    # (harness.models.ratelimit); the offline models call nothing and are never paced.
    pacers = Pacers(options.rate_limits)

    def make(name: str, stack: ExitStack) -> Model:
        check_model_name(name)
        if name == "local":
            return open_local(options, seed, stack, pacers.of(name))
        if name.startswith(ANTHROPIC):
            return spread([open_anthropic(name, url, options, stack, pacers.of(name)) for url in urls], balancer)
        if name.startswith("openai:"):
            return spread([open_openai(name, url, options, seed, stack, pacers.of(name)) for url in urls], balancer)
        return offline_model(name, seed)

    return make


def capabilities_named(name: str) -> Capabilities:
    """What the model `name` opens would state (`capabilities`), known before it is opened: the
    run's plan and its checks need it before any model is."""
    if name == "reference":
        return ReferenceModel.capabilities
    return LossyModel.capabilities if is_lossy(name) else PROVIDER


def offline_model(name: str, seed: int = 0) -> Model:
    """`reference` or `reference:lossy[...]` (seeded by `seed`), the models an emulated provider
    answers with; InputError for any other name."""
    check_model_name(name)
    if name == "reference":
        return ReferenceModel()
    if is_lossy(name):
        return LossyModel(name, parse_lossy(name), seed)
    raise InputError(f"{excerpt(name)}: not an offline model; use reference or reference:lossy[:k=v,...]")


def open_openai(
    name: str, base_url: str | None, options: ModelOptions, seed: int, stack: ExitStack, pacer: Pacer | None = None
) -> Model:
    """An `openai:NAME` model at one base URL, closed with `stack`, its requests sent through `pacer`."""
    from harness.models.openai import OpenAIModel

    model = OpenAIModel(
        name.removeprefix("openai:"),
        base_url=base_url,
        api_key_env=options.api_key_env,
        seed=seed,
        **endpoint_settings(options, pacer),
    )
    stack.callback(model.close)
    return model


def endpoint_settings(options: ModelOptions, pacer: Pacer | None) -> dict[str, Any]:
    """What an endpoint model takes of the run's options (its timeout, retries, sampling and size
    cap), and the pacer its requests go through."""
    s = options.sampling
    return {
        "timeout": options.timeout,
        "max_retries": options.max_retries,
        "temperature": s.temperature,
        "top_p": s.top_p,
        "max_tokens": s.max_tokens,
        "max_response_bytes": options.max_response_bytes,
        "pacer": pacer,
    }


def anthropic_key_env(options: ModelOptions) -> str:
    """The variable holding an `anthropic:` model's key: `--api-key-env`'s, unless the run kept
    its default (OPENAI_API_KEY, which never holds an Anthropic key): then ANTHROPIC_API_KEY."""
    return ANTHROPIC_KEY_ENV if options.api_key_env == ModelOptions.api_key_env else options.api_key_env


def open_anthropic(
    name: str, base_url: str | None, options: ModelOptions, stack: ExitStack, pacer: Pacer | None = None
) -> Model:
    """An `anthropic:NAME` model at one base URL (None: the Anthropic API), closed with `stack`,
    its requests sent through `pacer`. The API takes no seed."""
    try:
        from harness.models.anthropic import AnthropicModel
    except ImportError:
        raise InputError(
            f"--model {excerpt(name)}: the anthropic package is not installed; install the optional extra: "
            "pip install 'context-policy-harness[anthropic]'"
        ) from None

    model = AnthropicModel(
        name.removeprefix(ANTHROPIC),
        base_url=base_url,
        api_key_env=anthropic_key_env(options),
        **endpoint_settings(options, pacer),
    )
    stack.callback(model.close)
    return model


def open_local(options: ModelOptions, seed: int, stack: ExitStack, pacer: Pacer | None = None) -> Model:
    """Start the optional local server (stopped with `stack`) and talk to it as openai:, its requests
    sent through `pacer`."""
    from harness.models.local import (
        MODEL_ALIAS,
        PROMPT_CACHE_BYTES,
        SERVER_SLOTS,
        file_sha256,
        local_server,
        server_version,
    )
    from harness.models.openai import OpenAIModel

    weights = options.local.weights()
    served = {
        **options.local.as_record(),  # as given; then what they resolved to
        "model_file": str(weights),  # the default file's path too, not null
        "sha256": file_sha256(weights),
        "n_threads": options.local.threads(),
        "prompt_cache_bytes": PROMPT_CACHE_BYTES,
        "server": "llama-cpp-python",
        "server_version": server_version(),
        "slots": SERVER_SLOTS,  # one request at a time: --concurrency gains nothing (harness.models.slots)
    }
    base_url = stack.enter_context(local_server(options=options.local))
    # The port changes every run, so the cache key names "local" and the weights' sha256 instead.
    model = OpenAIModel(
        MODEL_ALIAS,
        base_url=base_url,
        seed=seed,
        endpoint=f"local:{served['sha256']}",
        server=served,
        **{**endpoint_settings(options, pacer), "timeout": max(options.timeout, LOCAL_TIMEOUT)},
    )
    stack.callback(model.close)
    return model
