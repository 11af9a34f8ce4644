"""`mrcr`: OpenAI MRCR (multi-round co-reference resolution; Hugging Face `openai/mrcr`, MIT
License), its rows saved as JSON Lines or a JSON list (the published files are parquet, which the
harness does not read: `datasets`' `to_json` writes these rows). One chronology per row.

A row's `prompt` is a conversation (a JSON list of `{role, content}`, as a string) in which the user
asks for pieces of writing, some asks repeated (the needles), and whose final user message asks for
one of them again, the reply to start with a random string: `Prepend aYooSG8CQg to the 2nd (1
indexed) poem about tapirs. Do not include any other text in your response.` The messages become
turns with their recorded replies; the final user message is the probe `recall`; the reply that
is the answer (`desired_msg_index`) is its `evidence:`.

MRCR grades an answer by its published rule: 0 unless it starts with `random_string_to_prepend`;
otherwise `difflib.SequenceMatcher` ratio of the answer and `answer`, the prefix removed from both.
The harness checks offline what needs no ratio, that the answer starts with the prefix (`expect:
pattern: ^PREFIX`), and records what the grade needs in the probe's `reference:` (the answer and
the prefix); the needle count is the source's category (`2 needles`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from harness.base.names import file_stem
from harness.base.text import shown
from harness.importing.literal import literal
from harness.importing.source import Source, text_field
from harness.importing.turns import Item, Said, converted, message_list, recorded_turns, source_of

__all__ = ["DATASET", "PROBE", "convert"]

DATASET = "mrcr"  # every item's source.dataset
PROBE = "recall"
_COUNTS = ("n_needles", "desired_msg_index", "total_messages", "n_chars")


def convert(source: Source, licence: str) -> Iterator[Item]:
    # Rows carry no id: an item is its file's name and its row's number there (`2needle-17`), so the
    # three published files' rows, imported into one folder, keep apart.
    # A row's number counts the rows passed over by --skip-invalid, so skipping renumbers none.
    stem = source.path.stem
    return converted(
        source, lambda record: _item(source, record.where, record.value, f"{stem}-{record.ordinal}", licence)
    )


def _item(source: Source, where: str, row: dict[str, Any], item_id: str, licence: str) -> Item:
    _, answer = text_field(source, where, row, "answer")
    _, prefix = text_field(source, where, row, "random_string_to_prepend")
    counts = {name: _count(source, where, row, name) for name in _COUNTS}
    needles, desired = counts["n_needles"], counts["desired_msg_index"]
    said = _messages(source, where, row)
    if said[-1].role != "user":
        raise source.refuse(where, said[-1].field, "the prompt ends with a reply; its final user message is the ask")
    if not 0 <= desired < len(said) - 1 or said[desired].role != "assistant":
        raise source.refuse(
            where,
            "desired_msg_index",
            f"{desired} is not a reply of the prompt's {len(said)} messages; it names the reply that is the answer",
        )
    said[desired] = Said("assistant", said[desired].text, said[desired].field, (PROBE,))
    turns = recorded_turns(source, where, said)
    probe = turns[-1]
    probe.update(
        probe=PROBE,
        asks=[],
        reference={"answer": answer, "prefix": prefix},
        expect=[{"pattern": f"^{literal(prefix)}"}],
    )
    category = f"{needles} needle{'s' if needles != 1 else ''}"
    document: dict[str, Any] = {
        "title": f"MRCR {item_id} ({category})",
        "description": (
            f"OpenAI MRCR, {category}: the ask is answered by message {desired} of {counts['total_messages']} "
            f"({counts['n_chars']:,} characters). The answer must start with {prefix}; MRCR grades the rest by "
            "its SequenceMatcher ratio against the reference (the probe's reference:)."
        ),
        "source": {**source_of(DATASET, item_id, source, licence), "category": category},
        "turns": turns,
    }
    return Item(item_id, file_stem(DATASET, item_id), document)


def _count(source: Source, where: str, row: dict[str, Any], name: str) -> int:
    value = row.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        got = "missing" if value is None else shown(value)
        raise source.refuse(where, name, f"{got}, not a whole number; every MRCR row has one")
    return value


def _messages(source: Source, where: str, row: dict[str, Any]) -> list[Said]:
    """The prompt's messages: a JSON string of a list (as published), or the list itself."""
    value = row.get("prompt")
    if value is None:
        raise source.refuse(where, "prompt", "missing; every row holds its conversation")
    return message_list(source, where, "prompt", value)
