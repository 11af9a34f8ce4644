"""Composing YAML within limits: what a chronology may use is kept, what would hang is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.chronology.safe_yaml import (
    MAX_DEPTH,
    MAX_TEXT,
    MAX_VALUES,
    YamlRefused,
    compose,
)
from tests.paths import SHIPPED


def refusal(text: str) -> tuple[int | None, str]:
    with pytest.raises(YamlRefused) as caught:
        compose(text)
    return caught.value.line, caught.value.message


def test_aliases_share_text_and_build_the_same_values() -> None:
    _, value = compose("m: &m never restart production\nturns:\n  - user: *m\n  - user: *m\n")
    assert value == {"m": "never restart production", "turns": [{"user": "never restart production"}] * 2}


def test_nesting_up_to_the_limit_is_kept_one_more_level_is_refused() -> None:
    _, value = compose("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    for _ in range(MAX_DEPTH - 1):
        [value] = value
    assert value == []
    assert refusal("x: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH)[0] == 1  # the mapping is a level too


def test_expanded_values_are_counted_through_aliases() -> None:
    def text(uses: int) -> str:  # `a` is 11 values (a list of ten), `b` lists it `uses` times
        return "a: &a [" + ", ".join("x" * 10) + "]\nb: [" + ", ".join(["*a"] * uses) + "]\n"

    compose(text(MAX_VALUES // 11 - 1))  # 49,999 values in all: kept
    line, message = refusal(text(MAX_VALUES // 11 + 1))  # `b` alone is 50,007
    assert (line, message.split(";")[0]) == (
        2,
        f"aliases expand this value to more than {MAX_VALUES:,} keys and values",
    )


def test_expanded_characters_are_counted_through_aliases() -> None:
    text = f"s: &s {'x' * (MAX_TEXT // 4)}\nl: [*s, *s, *s, *s, *s]\n"
    assert refusal(text) == (
        2,
        f"aliases expand this value to more than {MAX_TEXT:,} characters; write it out, or use fewer aliases",
    )


def test_an_alias_to_a_finished_sibling_is_not_recursive() -> None:
    _, value = compose("a: &a [x]\nb: &b [*a, *a]\nc: [*b]\n")
    assert value["c"] == [[["x"], ["x"]]]


# --- edge and hostile texts: what each one becomes -----------------------------------------

LIBRARY = sorted((SHIPPED).glob("*.yaml"))


def laughs(levels: int) -> str:
    lines = ["l0: &l0 x"] + [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


EDGES = {
    "depth-at-limit": "[" * MAX_DEPTH + "]" * MAX_DEPTH,
    "depth-past-limit": "x: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH,
    "flow-5000-deep": "x: " + "[" * 5000 + "]" * 5000,
    "block-1000-deep": "".join(" " * i + f"k{i}:\n" for i in range(1000)),
    "block-300-deep": "".join(" " * i + f"k{i}:\n" for i in range(300)),
    "depth-through-aliases": "\n".join(["c0: &c0 x"] + [f"c{n}: &c{n} [*c{n - 1}]" for n in range(1, 40)]),
    "depth-through-aliases-at-limit": "\n".join(
        ["c0: &c0 x"] + [f"c{n}: &c{n} [*c{n - 1}]" for n in range(1, MAX_DEPTH - 1)]
    ),
    "laughs-kept": laughs(3),
    "laughs-refused": laughs(6),
    "merge-laughs": "m0: &m0 {a: x}\n"
    + "".join(f"m{n}: &m{n} {{<<: [{', '.join([f'*m{n - 1}'] * 10)}]}}\n" for n in range(1, 7)),
    "characters-through-aliases": f"s: &s {'x' * 9_000}\nl: [{', '.join(['*s'] * 120)}]\n",
    "recursive-sequence": "turns: &a [*a]\n",
    "recursive-mapping": "x: &a {k: *a}\n",
    "recursive-deep": "x: &a [[[{k: [*a]}]]]\n",
    "too-many-values": "x: [" + "1," * (MAX_VALUES + 10) + "]\n",
    "values-under-the-limit": "x: {" + "a," * (MAX_VALUES // 2 - 5) + "}\n",
    "undefined-alias": "x: *nowhere\n",
    "duplicate-anchor": "title: &a t\nx: &a u\n",
    "two-documents": "a: 1\n---\nb: 2\n",
    "tab": "turns:\n\t- user: a\n",
    "unhashable-key": "? [a, b]\n: c\n",
    "python-tag": "title: !!python/object/apply:os.system [ls]\n",
    "long-number": "x: " + "9" * 5000 + "\n",
    "bad-date": "x: 2024-02-30\n",
    "bad-bool": "x: !!bool maybe\n",
    "empty": "",
    "comment-only": "# nothing\n",
    "scalar": "just text\n",
}


def outcome(way: Callable[[str], tuple[yaml.Node | None, Any]], text: str) -> tuple[Any, ...]:
    """What a way of composing makes of `text`: its nodes (tag, value, place) and value, or its refusal."""
    try:
        node, value = way(text)
    except YamlRefused as exc:
        return ("refused", exc.message, exc.line)
    except yaml.YAMLError as exc:
        return ("invalid", str(exc))
    return ("built", shape(node, {}), value)


def shape(node: yaml.Node | None, seen: dict[int, int]) -> Any:
    """A node graph as plain data, each node with its tag and where it starts and ends."""
    if node is None:
        return None
    if id(node) in seen:
        return ("alias", seen[id(node)])
    seen[id(node)] = len(seen)
    where = (node.tag, node.start_mark.line, node.start_mark.column, node.end_mark.line, node.end_mark.column)
    if isinstance(node, yaml.ScalarNode):
        return (*where, node.value, node.style)
    if isinstance(node, yaml.MappingNode):
        return (*where, [(shape(k, seen), shape(v, seen)) for k, v in node.value])
    return (*where, [shape(child, seen) for child in node.value])


# What each text becomes: built; refused past a limit, at its line; or invalid YAML (PyYAML's own error).
EXPECTED = {
    "depth-at-limit": ("built", None),
    "depth-past-limit": ("refused", 1),
    "flow-5000-deep": ("invalid", None),
    "block-1000-deep": ("refused", 32),
    "block-300-deep": ("refused", 32),
    "depth-through-aliases": ("refused", 33),
    "depth-through-aliases-at-limit": ("built", None),
    "laughs-kept": ("built", None),
    "laughs-refused": ("refused", 6),
    "merge-laughs": ("refused", 6),
    "characters-through-aliases": ("refused", 2),
    "recursive-sequence": ("refused", 1),
    "recursive-mapping": ("refused", 1),
    "recursive-deep": ("refused", 1),
    "too-many-values": ("refused", 1),
    "values-under-the-limit": ("built", None),
    "undefined-alias": ("invalid", None),
    "duplicate-anchor": ("invalid", None),
    "two-documents": ("invalid", None),
    "tab": ("invalid", None),
    "unhashable-key": ("invalid", None),
    "python-tag": ("invalid", None),
    "long-number": ("refused", 1),
    "bad-date": ("refused", 1),
    "bad-bool": ("refused", 1),
    "empty": ("built", None),
    "comment-only": ("built", None),
    "scalar": ("built", None),
}


HEAVY = {"too-many-values", "values-under-the-limit"}  # texts at the value limit: a second or more of CPU each


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in HEAVY else []) for n in EDGES])
def test_each_edge_text_is_built_refused_at_its_line_or_invalid(name: str) -> None:
    found = outcome(compose, EDGES[name])
    assert (found[0], found[2] if found[0] == "refused" else None) == EXPECTED[name]


@pytest.mark.parametrize("path", LIBRARY, ids=[p.name for p in LIBRARY])
def test_the_library_composes_to_what_plain_pyyaml_builds(path: Path) -> None:
    """Within the limits, measuring changes nothing: the values are PyYAML's own."""
    text = path.read_text()
    assert outcome(compose, text)[2] == yaml.safe_load(text)
