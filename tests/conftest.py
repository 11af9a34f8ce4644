"""Shared fixtures: an isolated environment and small builders for chronology records."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pytest

from harness.base.messages import Message
from harness.chronology import Chronology, Forget, Prohibition, UserTurn
from harness.chronology.patterns import compile_pattern
from harness.policy import PolicyRegistry
from harness.results.rows import CallRecord, Manifest, TurnRow
from policies.anthropic_compaction import AnthropicCompaction
from policies.anthropic_context_editing import AnthropicContextEditing
from policies.bounded_facts import BoundedFacts
from policies.clear_tool_uses import ClearToolUses
from policies.compaction import RequestCompaction, RetainedReduction
from policies.compaction_pipeline import CompactionPipeline
from policies.facts_window import FactsWindow
from policies.full_history import FullHistory
from policies.last_turns import LastTurns
from policies.none import NoMemory
from policies.openai_compaction import OpenAICompaction
from policies.openai_truncation import OpenAITruncation
from policies.retrieval import Retrieval
from policies.summary import Summary
from policies.summary_buffer import SummaryBuffer
from policies.token_budget import TokenBudget
from policies.tool_result_compaction import ToolResultCompaction
from tests.paths import SHIPPED
from tests.spawn import kill_left_running

if TYPE_CHECKING:
    from harness.models import Model
    from harness.models.options import Models
    from harness.policy.tokens import TokenCounter
    from harness.run.conversation import Conversation
    from harness.run.events import Finished
    from harness.run.spec import RunSpec

pytest.register_assert_rewrite("tests.faults")  # its checks explain themselves when they fail

# The seed's comparison, in its declared order (harness/policy/registry.py SEED_SPECS): `--policy seed`.
SEED = [
    "full-history",
    "last-turns",
    "summary",
    "bounded-facts",
    "bounded-facts:mode=provider",
    "request-compaction",
    "retained-reduction",
]
# The policies people deploy (the set `deployed`), by name, as a plain run orders them.
DEPLOYED = ["facts+window", "retrieval", "summary-buffer", "token-budget"]
# The tool-result policies agents deploy (the set `agent`), by name: a plain run runs them after `deployed`.
AGENT = ["clear-tool-uses", "compaction-pipeline", "tool-result-compaction"]
# The control (the set `control`): no memory; a plain run runs it last.
CONTROL = ["none"]
# The policies that delegate to a provider (the set `provider`, with `opt_in`: never in a plain run), by name.
PROVIDER = ["anthropic-compaction", "anthropic-context-editing", "openai-compaction", "openai-truncation"]
# The plain `harness run` comparison of the built-in policies: the seed's, the deployed four, the rest by
# name, then the control.
COMPARISON = SEED + DEPLOYED + AGENT + CONTROL


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees a real API key or a user's tiktoken cache."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TIKTOKEN_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def no_harness_left_running() -> Iterator[None]:
    """A `harness` command a test spawned (tests/spawn.py) and left running is killed when it ends."""
    yield
    kill_left_running()


# The built-in policies by entry-point name, as pyproject.toml registers them (tests/policy/test_policy.py
# checks they agree). Tests build their registry from this, so plug-ins installed on the machine
# cannot leak into them.
BUILTIN_POLICIES = {
    cls.name: cls
    for cls in (
        FullHistory,
        LastTurns,
        Summary,
        BoundedFacts,
        RequestCompaction,
        RetainedReduction,
        SummaryBuffer,
        TokenBudget,
        Retrieval,
        FactsWindow,
        ClearToolUses,
        ToolResultCompaction,
        CompactionPipeline,
        NoMemory,
        AnthropicContextEditing,
        AnthropicCompaction,
        OpenAICompaction,
        OpenAITruncation,
    )
}


def builtin_registry() -> PolicyRegistry:
    """A registry of exactly the built-in policies."""
    return PolicyRegistry.from_mapping(BUILTIN_POLICIES)


def shipped_plan(**overrides: Any) -> RunSpec:
    """Two shipped chronologies under the plain comparison on the reference model (26
    conversations); `overrides` are RunSpec's (concurrency=, live=, ...)."""
    from harness.chronology.loading import load_chronologies
    from harness.run.spec import RunSpec

    chronologies = load_chronologies([SHIPPED / "correct-then-forget.yaml", SHIPPED / "memory-drift.yaml"])
    return RunSpec(chronologies, builtin_registry().default_specs(), ["reference"], **overrides)


def user(number: int, text: str, session: str = "main", **scripted: object) -> UserTurn:
    """A user turn; `scripted` takes assistant=, probe=, summary=, writer=."""
    return UserTurn(number=number, line=number, user=text, session=session, **scripted)  # type: ignore[arg-type]


def chronology(
    *turns: UserTurn | Forget,
    system: str | None = "SYS",
    sessions: tuple[str, ...] = ("main",),
    prohibitions: tuple[Prohibition, ...] = (),
) -> Chronology:
    return Chronology(
        path="mem.yaml",
        sha256="0" * 64,
        title="test",
        description="",
        system=system,
        sessions=sessions,
        prohibitions=prohibitions,
        turns=turns,
        name="mem",
    )


NO_RESTART = Prohibition(
    id="no-restart",
    present=compile_pattern(r"(?i)\bnever\b[^.;\n]*\brestart"),
    violated_by=compile_pattern(r"(?i)^\s*yes\b"),
)


IDENTITY = {"chronology": "c", "policy": "p", "model": "m", "repetition": 1}


def turn_row(**cells: object) -> TurnRow:
    """A turns.csv row of conversation c/p/m/1: the `cells` given, every other one unknown."""
    return TurnRow(**{**dict.fromkeys(f.name for f in fields(TurnRow)), **IDENTITY, **cells})  # type: ignore[arg-type]


def call_record(**cells: object) -> CallRecord:
    """A calls.jsonl record of conversation c/p/m/1: the `cells` given, every other one unknown."""
    return CallRecord(**{**dict.fromkeys(f.name for f in fields(CallRecord)), **IDENTITY, **cells})  # type: ignore[arg-type]


def record_conversation(
    directory: Path,
    conversation: Conversation,
    registry: PolicyRegistry,
    models: Model | Models,
    counter: TokenCounter | None = None,
    **options: Any,
) -> Finished:
    """Replay one conversation into results folder `directory` as a batch records it: the run's
    manifest first, then its records; `options` are `run_conversation`'s (live=, ledger=, ...)."""
    from harness.policy.tokens import TokenCounter
    from harness.results.digests import sealed
    from harness.results.rows import FORMAT_VERSION
    from harness.results.writer import ResultsWriter
    from harness.run.replay import run_conversation

    manifest = sealed(
        Manifest(
            format_version=FORMAT_VERSION,
            run_id="t",
            repetitions=1,
            live=False,
            policies=[conversation.policy.as_record()],
        )
    )
    with ResultsWriter(directory) as sink:
        sink.manifest(manifest)
        return run_conversation(conversation, registry, models, counter or TokenCounter(), sink, **options)


def contents(messages: list[Message]) -> list[str]:
    return [m.content for m in messages]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch working directory with a `chronologies/` folder."""
    (tmp_path / "chronologies").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_through_cli(root: Path, files: list[Path], run_id: str, *options: str) -> Path:
    """Copy `files` into `root` and `harness run` them there (in process), with `options`
    (e.g. `--policy deployed`); return the results dir."""
    import shutil

    from click.testing import CliRunner

    from harness.cli.commands import main

    for path in files:
        shutil.copy(path, root / path.name)
    out = root / "results"
    args = [
        "run",
        str(root),
        "--out",
        str(out),
        "--reports",
        str(root / "reports"),
        "--run-id",
        run_id,
        "--quiet",
        *options,
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return out / run_id


RECORDED_AT = re.compile(r'"recorded_at": "[^"]*"')


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    """A results frame without what differs between two identical runs: latencies, and the
    wall-clock `recorded_at` of facts (also nested inside admissions and forgets)."""
    frame = frame.drop(columns=[c for c in ("latency_ms",) if c in frame.columns])
    nested = [c for c in frame.columns if frame[c].map(lambda v: isinstance(v, (list, dict))).any()]
    return frame.assign(**{c: frame[c].map(lambda v: RECORDED_AT.sub("", json.dumps(v))) for c in nested})


def assert_same_results(a: Path, b: Path) -> None:
    """Two results directories hold the same records, latencies and wall-clock times aside."""
    from harness.results.tables import load_results

    ra, rb = load_results(a), load_results(b)
    for name in ("turns", "probes", "calls", "facts", "messages", "views"):
        pd.testing.assert_frame_equal(comparable(getattr(ra, name)), comparable(getattr(rb, name)), obj=name)
