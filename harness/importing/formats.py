"""The one entry point that runs a format `harness import` reads (`harness.importing.FORMATS`).

Items are converted one at a time and staged (`placing`); nothing is placed until every item is:
a bad item refuses the whole import, naming its line or item, the field, and what to do, unless
`--skip-invalid` (a `Skips` that is `enabled`) lists it and passes it over.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.importing import (
    FORMATS,
    compactbench,
    factconsolidation,
    locomo,
    longmemeval,
    mrcr,
    multichallenge,
    openai_chat,
    sharegpt,
)
from harness.importing.placing import place
from harness.importing.source import MAX_INPUT_BYTES, ImportRefused, Skips, licence_for, read_source
from harness.importing.turns import Item

__all__ = ["FORMATS", "ImportOptions", "import_file"]

_LOGS = ("openai-chat", "sharegpt")  # a user's own chat logs: --probe-last, --expect, --category


@dataclass(frozen=True)
class ImportOptions:
    """What `harness import` is told, beside the format, the input and the output folder."""

    accept_licence: str | None = None
    force: bool = False
    probe_last: bool = False  # openai-chat, sharegpt
    expect: Path | None = None  # openai-chat, sharegpt
    sessions: str = "joined"  # longmemeval
    facts_per_turn: int = factconsolidation.FACTS_PER_TURN  # factconsolidation
    max_input_bytes: int = MAX_INPUT_BYTES
    category: str | None = None  # openai-chat, sharegpt: every item's source.category


def import_file(
    format_name: str, src: Path, out: Path, options: ImportOptions, skips: Skips | None = None
) -> list[Path]:
    """Convert every item of `src` (in `format_name`) and write one chronology each into `out`.
    `skips` (`--skip-invalid`): where each item passed over is listed, with why."""
    if format_name not in FORMATS:
        raise ImportRefused(f"{format_name!r} is not a format harness import reads: {', '.join(FORMATS)}")
    _check_options(format_name, options)
    licence = licence_for(format_name, options.accept_licence)
    source = read_source(src, options.max_input_bytes, skips)
    items: Iterable[Item]  # converted one at a time as they are placed
    if format_name in _LOGS:
        expectations = (
            openai_chat.read_expectations(options.expect, options.max_input_bytes) if options.expect else None
        )
        log = openai_chat if format_name == "openai-chat" else sharegpt
        items = log.convert(source, licence, options.probe_last, expectations)
        if options.category is not None:
            items = categorised(items, options.category)
    elif format_name == "multichallenge":
        items = multichallenge.convert(source, licence)
    elif format_name == "longmemeval":
        items = longmemeval.convert(source, licence, options.sessions)
    elif format_name == "compactbench":
        items = compactbench.convert(source, licence)
    elif format_name == "factconsolidation":
        items = factconsolidation.convert(source, licence, options.facts_per_turn)
    elif format_name == "locomo":
        items = locomo.convert(source, licence)
    else:
        items = mrcr.convert(source, licence)
    return place(items, out, options.force, source.skips)


def categorised(items: Iterable[Item], category: str) -> Iterator[Item]:
    """The items with `category` as their source's (`--category`): the input names none."""
    for item in items:
        item.document["source"]["category"] = category
        yield item


def _check_options(format_name: str, options: ImportOptions) -> None:
    """An option of another format is a mistake, said as such rather than ignored."""
    given = {
        "--probe-last": options.probe_last,
        "--expect": options.expect is not None,
        "--category": options.category is not None,
        "--sessions": options.sessions != "joined",
        "--facts-per-turn": options.facts_per_turn != factconsolidation.FACTS_PER_TURN,
    }
    owner: dict[str, str | tuple[str, ...]] = {  # the format, or formats, an option applies to
        "--probe-last": _LOGS,
        "--expect": _LOGS,
        "--category": _LOGS,
        "--sessions": "longmemeval",
        "--facts-per-turn": "factconsolidation",
    }
    for option, present in given.items():
        owners = (owner[option],) if isinstance(owner[option], str) else owner[option]
        if present and format_name not in owners:
            raise ImportRefused(f"{option} applies to {' and '.join(owners)} imports, not {format_name}; drop it")
    if options.category is not None and not options.category.strip():
        raise ImportRefused("--category: give a category's name (empty text names none)")
    if options.sessions not in longmemeval.SESSION_MODES:
        raise ImportRefused(f"--sessions {options.sessions}: give separate or joined")
    if options.facts_per_turn < 1:
        raise ImportRefused(f"--facts-per-turn {options.facts_per_turn}: give a number of facts of at least 1")
