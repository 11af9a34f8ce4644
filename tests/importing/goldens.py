"""The importers' golden outputs: each fixture converted, compared byte for byte with what is
committed in tests/importing/golden/. After a deliberate change, regenerate and read the diff:

    python -m tests.importing.goldens
"""

from __future__ import annotations

from pathlib import Path

from harness.importing import (
    compactbench,
    factconsolidation,
    locomo,
    longmemeval,
    mrcr,
    multichallenge,
    openai_chat,
    sharegpt,
)
from harness.importing.emit import yaml_text
from harness.importing.source import OWN_LOGS, read_source
from harness.importing.turns import Item

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
GOLDEN = HERE / "golden"
REGENERATE = "python -m tests.importing.goldens"


def converted() -> dict[str, list[Item]]:
    """Every fixture converted as the golden files record it, by golden folder."""
    chat = read_source(FIXTURES / "chat.jsonl")
    tools = read_source(FIXTURES / "chat-tools.jsonl")
    expectations = openai_chat.read_expectations(FIXTURES / "chat-expect.yaml", 1 << 20)
    lme = read_source(FIXTURES / "longmemeval_oracle.json")
    return {
        "openai-chat": list(openai_chat.convert(chat, "own-logs", probe_last=True, expectations=expectations)),
        "openai-chat-no-probe": list(openai_chat.convert(chat, "own-logs", probe_last=False)),
        "openai-chat-tools": list(openai_chat.convert(tools, "own-logs", probe_last=True)),
        "openai-chat-tools-no-probe": list(openai_chat.convert(tools, "own-logs", probe_last=False)),
        "multichallenge": list(
            multichallenge.convert(read_source(FIXTURES / "benchmark_questions.jsonl"), "named-by-the-user")
        ),
        "longmemeval": list(longmemeval.convert(lme, "MIT", sessions="separate")),
        "longmemeval-joined": list(longmemeval.convert(lme, "MIT")),
        "factconsolidation": list(
            factconsolidation.convert(read_source(FIXTURES / "conflict_resolution.jsonl"), "MIT", facts_per_turn=2)
        ),
        "sharegpt": list(sharegpt.convert(read_source(FIXTURES / "sharegpt.json"), OWN_LOGS, probe_last=True)),
        "sharegpt-no-probe": list(
            sharegpt.convert(read_source(FIXTURES / "sharegpt.json"), OWN_LOGS, probe_last=False)
        ),
        "compactbench": list(compactbench.convert(read_source(FIXTURES / "compactbench_case.json"), "Apache-2.0")),
        "compactbench-jsonl": list(
            compactbench.convert(read_source(FIXTURES / "compactbench_cases.jsonl"), "Apache-2.0")
        ),
        "locomo": list(locomo.convert(read_source(FIXTURES / "locomo_sample.json"), "CC BY-NC 4.0")),
        "mrcr": list(mrcr.convert(read_source(FIXTURES / "needles.jsonl"), "MIT")),
    }


def texts() -> dict[Path, str]:
    """golden path -> the text the importers write today."""
    return {
        GOLDEN / folder / f"{item.stem}.yaml": yaml_text(item.document)
        for folder, items in converted().items()
        for item in items
    }


if __name__ == "__main__":
    for path, text in texts().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {path.relative_to(HERE)}")
