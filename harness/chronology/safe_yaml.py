"""YAML text in, node tree and values out, within limits that no file can push past.

Left alone, PyYAML hangs or crashes on hostile text: aliases that expand a few hundred bytes
into billions of values ("billion laughs") stall every walk of the data; nesting 5,000 deep
exhausts Python's recursion; `2024-02-30` or a 5,000-digit number raise a bare `ValueError`.
So every node is measured before any value is built: nesting depth, values and characters,
all counted *as if aliases were expanded* (from the sizes of the nodes they name, so
measuring is one pass over the nodes), and an alias inside the node it names is refused.
The first limit crossed stops the parse at that node's line. Values are then built by
PyYAML's safe constructor, whose errors carry the line too. A message quotes a file's text only
through `shown` or `excerpt` (short and printable) or `clipped` (a parser's message, cut and escaped),
which live in `harness.base.text` for every other reader of outside input.

PyYAML's composer, in Python, measures each node as it completes, so a hostile text stops at
its first excess and is never composed whole; libyaml, when PyYAML has it, scans and parses the
text in C beneath it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import Composer

from harness.base.files import MAX_FILE_BYTES
from harness.base.text import MAX_SHOWN, clipped, excerpt, shown

__all__ = ["MAX_DEPTH", "MAX_SHOWN", "MAX_TEXT", "MAX_VALUES", "YamlRefused", "clipped", "compose", "excerpt", "shown"]

MAX_DEPTH = 32  # a chronology nests 6 deep (turns > turn > writer > item > field), 8 to a tool call's arguments
MAX_VALUES = 50_000  # keys and values, aliases expanded; a 5,000-turn chronology has 25,000
MAX_TEXT = MAX_FILE_BYTES  # characters, aliases expanded: no more than one file could spell out

_BASE: type = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
MAX_DIGITS = 100  # no field is a number; a longer one is refused before Python builds it
_INT_TAG = "tag:yaml.org,2002:int"
_TYPE_NAMES = {
    "bool": "a boolean",
    "int": "a number",
    "float": "a number",
    "timestamp": "a date",
    "binary": "binary data",
}


class YamlRefused(Exception):
    """The text crossed a limit, or holds a value YAML cannot build; `line` is 1-based."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message, self.line = message, line


@dataclass(frozen=True)
class _Size:
    """A node's size once every alias inside it is expanded."""

    values: int
    chars: int
    depth: int


class _Building(_BASE):  # type: ignore[misc, valid-type]
    """PyYAML's safe loader (libyaml's when PyYAML has it) whose constructor refuses with a line."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        line = node.start_mark.line + 1
        if node.tag == _INT_TAG and len(node.value) > MAX_DIGITS:  # Python refuses to print it back
            raise YamlRefused(
                f"YAML reads {shown(node.value)} as a number, longer than any a chronology uses; "
                "quote it if it is text",
                line,
            )
        try:
            return super().construct_object(node, deep)
        except (yaml.YAMLError, YamlRefused):
            raise
        except Exception as exc:  # the safe constructors' own slips: date(2024, 2, 30), `!!bool maybe` (KeyError)
            raise YamlRefused(_unbuildable(node, exc), line) from None


class _Loader(Composer, _Building):  # type: ignore[misc]
    """The careful way: PyYAML's composer in Python, measuring each node as it completes."""

    def __init__(self, text: str) -> None:
        _Building.__init__(self, text)  # the two bases take different arguments
        Composer.__init__(self)
        self._sizes: dict[int, _Size] = {}  # by id(node); every node stays alive in the tree
        self._open: set[str] = set()  # anchors of the nodes being composed
        self._composed = 0
        self._depth = 0  # of the node being composed, in the text (aliases are measured once complete)

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self._open:
                raise YamlRefused(
                    f"the alias *{event.anchor} is inside the value it names (a recursive alias); write the values out",
                    line,
                )
            return super().compose_node(parent, index)
        self._composed += 1
        if self._composed > MAX_VALUES:
            raise YamlRefused(f"more than {MAX_VALUES:,} keys and values; a chronology needs far fewer: split it", line)
        if self._depth >= MAX_DEPTH:
            raise _too_deep(line)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._open.add(anchor)
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            self._open.discard(anchor or "")
        if node is not None:
            self._measure(node, line)
        return node

    def _measure(self, node: yaml.Node, line: int) -> None:
        if isinstance(node, yaml.ScalarNode):
            size = _Size(1, len(node.value), 1)
        else:
            children = [self._sizes[id(child)] for child in _children(node)]
            size = _Size(
                1 + sum(c.values for c in children),
                sum(c.chars for c in children),
                1 + max((c.depth for c in children), default=0),
            )
        self._sizes[id(node)] = size
        if size.depth > MAX_DEPTH:
            raise _too_deep(line)
        if size.values > MAX_VALUES:
            raise YamlRefused(
                f"aliases expand this value to more than {MAX_VALUES:,} keys and values; "
                "write it out, or use fewer aliases",
                line,
            )
        if size.chars > MAX_TEXT:
            raise YamlRefused(
                f"aliases expand this value to more than {MAX_TEXT:,} characters; write it out, or use fewer aliases",
                line,
            )


def _too_deep(line: int) -> YamlRefused:
    return YamlRefused(
        f"values nest more than {MAX_DEPTH} deep (aliases included); a chronology needs 6 levels: flatten it", line
    )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value)


def _unbuildable(node: yaml.Node, exc: Exception) -> str:
    kind = str(node.tag).rsplit(":", 1)[-1]
    text = node.value if isinstance(node.value, str) else ""
    if isinstance(exc, (ValueError, OverflowError)):
        reason = clipped(str(exc).split(";")[0])
    else:  # KeyError from `!!bool maybe`, AttributeError from `!!timestamp x`
        reason = "not a form YAML knows"
    kind_name = _TYPE_NAMES.get(kind, kind)
    return f"YAML reads {shown(text)} as {kind_name} and cannot build it ({reason}); quote it if it is text"


def compose(text: str) -> tuple[yaml.Node | None, Any]:
    """The node of the single document in `text` (None when empty) and the value built from it.

    Raises `YamlRefused` past a limit or for an unbuildable value, `yaml.YAMLError` for invalid YAML.
    """
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return node, loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
