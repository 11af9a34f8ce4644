"""YAML text in, node tree and values out, within limits that no file can push past.

Left alone, PyYAML hangs or crashes on hostile text: aliases that expand a few hundred bytes
into billions of values ("billion laughs") stall every walk of the data; nesting 5,000 deep
exhausts Python's recursion; `2024-02-30` or a 5,000-digit number raise a bare `ValueError`.
So every node is measured before any value is built: nesting depth, values and characters,
all counted *as if aliases were expanded* (from the sizes of the nodes they name, so
measuring is one pass over the nodes), and an alias inside the node it names is refused.
The first limit crossed stops the parse at that node's line. Values are then built by
PyYAML's safe constructor, whose errors carry the line too.

Two ways lead to the same nodes, values and refusals:

- the fast way, for a text of at most `FAST_TEXT` characters (so at most about that many
  nodes: every node but an empty scalar spends a character of its own): libyaml's C composer
  builds the node graph, each alias a shared node, nothing expanded; one Python walk then
  measures it. If the walk finds a limit crossed, or libyaml refuses the text, the text is
  composed again the careful way, so every refusal keeps the careful way's message and line.
- the careful way, for longer texts and every refusal: PyYAML's composer in Python measures
  each node as it completes, so a hostile text stops at its first excess, never composed whole.

Without libyaml in PyYAML both ways compose in Python (ten times slower, the same limits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import Composer

from harness.base.files import MAX_FILE_BYTES

__all__ = ["FAST_TEXT", "MAX_DEPTH", "MAX_TEXT", "MAX_VALUES", "YamlRefused", "compose", "compose_carefully"]

MAX_DEPTH = 32  # a chronology nests 6 deep: turns > turn > writer > item > field
MAX_VALUES = 50_000  # keys and values, aliases expanded; a 5,000-turn chronology has 25,000
MAX_TEXT = MAX_FILE_BYTES  # characters, aliases expanded: no more than one file could spell out

FAST_TEXT = MAX_VALUES  # characters up to which libyaml composes (see the module docstring)

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
                f"YAML reads {_shown(node.value)} as a number, longer than any a chronology uses; "
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


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text):,} characters)"


def _unbuildable(node: yaml.Node, exc: Exception) -> str:
    kind = str(node.tag).rsplit(":", 1)[-1]
    text = node.value if isinstance(node.value, str) else ""
    if isinstance(exc, (ValueError, OverflowError)):
        reason = str(exc).split(";")[0]
    else:  # KeyError from `!!bool maybe`, AttributeError from `!!timestamp x`
        reason = "not a form YAML knows"
    kind_name = _TYPE_NAMES.get(kind, kind)
    return f"YAML reads {_shown(text)} as {kind_name} and cannot build it ({reason}); quote it if it is text"


class _Crossed(Exception):
    """The fast walk met a limit; the careful way says which, and where."""


_OPEN = (0, 0, 0)  # the size recorded for a node whose walk has not finished


def _fits(root: yaml.Node) -> bool:
    """Whether every node of the composed graph keeps within the limits, aliases counted expanded.

    Each node is measured once (memoised by identity: an alias is the node it names, so a
    billion laughs costs one visit per anchor); a node met again while still open is an alias
    inside the value it names. The walk recurses no deeper than `MAX_DEPTH`.
    """
    sizes: dict[int, tuple[int, int, int]] = {}

    def measure(node: yaml.Node, depth: int) -> tuple[int, int, int]:
        known = sizes.get(id(node))
        if known is not None:
            if known is _OPEN:
                raise _Crossed  # a recursive alias
            return known
        if depth > MAX_DEPTH:
            raise _Crossed
        if node.__class__ is yaml.ScalarNode:
            size = (1, len(node.value), 1)
            if size[1] > MAX_TEXT:
                raise _Crossed
        else:
            sizes[id(node)] = _OPEN
            values, chars, deepest = 1, 0, 0
            parts = node.value if node.__class__ is yaml.SequenceNode else [p for pair in node.value for p in pair]
            for part in parts:
                v, c, d = measure(part, depth + 1)
                values, chars, deepest = values + v, chars + c, max(deepest, d)
            size = (values, chars, deepest + 1)
            if values > MAX_VALUES or chars > MAX_TEXT or deepest >= MAX_DEPTH:
                raise _Crossed
        sizes[id(node)] = size
        return size

    try:
        measure(root, 1)  # every distinct node counts at least once in the root's values: within MAX_VALUES too
    except _Crossed:
        return False
    return True


def compose(text: str) -> tuple[yaml.Node | None, Any]:
    """The node of the single document in `text` (None when empty) and the value built from it.

    Raises `YamlRefused` past a limit or for an unbuildable value, `yaml.YAMLError` for invalid YAML.
    """
    fast = len(text) <= FAST_TEXT and _BASE is not yaml.SafeLoader
    loader = _Building(text) if fast else _Loader(text)
    try:
        try:
            node = loader.get_single_node()  # libyaml's composer on the fast way
        except yaml.YAMLError:
            if not fast:
                raise
            return compose_carefully(text)  # the same error, or a limit crossed before it
        if fast and node is not None and not _fits(node):
            return compose_carefully(text)  # the limit crossed first, with its line
        return node, loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


def compose_carefully(text: str) -> tuple[yaml.Node | None, Any]:
    """`compose` the careful way alone: PyYAML's composer in Python, measuring as it goes."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return node, loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
