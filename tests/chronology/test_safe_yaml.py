"""Composing YAML within limits: what a chronology may use is kept, what would hang is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest
import yaml

from harness.chronology import safe_yaml
from harness.chronology.safe_yaml import (
    FAST_TEXT,
    MAX_DEPTH,
    MAX_TEXT,
    MAX_VALUES,
    YamlRefused,
    compose,
    compose_carefully,
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


# --- the fast way (libyaml composes, one walk measures) and the careful way agree -------------

LIBRARY = sorted((SHIPPED).glob("*.yaml"))


def laughs(levels: int) -> str:
    lines = ["l0: &l0 x"] + [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


EDGES = {
    "depth-at-limit": "[" * MAX_DEPTH + "]" * MAX_DEPTH,
    "depth-past-limit": "x: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH,
    "flow-5000-deep": "x: " + "[" * 5000 + "]" * 5000,
    "block-1000-deep": "".join(" " * i + f"k{i}:\n" for i in range(1000)),
    "block-300-deep": "".join(" " * i + f"k{i}:\n" for i in range(300)),  # within FAST_TEXT: the fast walk's depth
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
    "values-under-the-fast-limit": "x: {" + "a," * (FAST_TEXT // 2 - 5) + "}\n",
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


@pytest.mark.parametrize("path", LIBRARY, ids=[p.name for p in LIBRARY])
def test_the_fast_way_builds_the_library_as_the_careful_way_does(path: Path) -> None:
    text = path.read_text()
    assert len(text) <= FAST_TEXT  # so the fast way is taken
    assert outcome(compose, text) == outcome(compose_carefully, text)


LIBYAML = pytest.mark.skipif(not yaml.__with_libyaml__, reason="without libyaml both ways compose in Python")


@pytest.mark.parametrize("name", EDGES)
def test_the_fast_way_refuses_and_keeps_what_the_careful_way_does(name: str) -> None:
    assert outcome(compose, EDGES[name]) == outcome(compose_carefully, EDGES[name])


@LIBYAML
def test_a_text_within_the_limits_is_composed_once_by_libyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def careful(text: str) -> NoReturn:
        raise AssertionError("composed the careful way")

    monkeypatch.setattr(safe_yaml, "compose_carefully", careful)
    for path in LIBRARY:
        compose(path.read_text())
    compose(EDGES["laughs-kept"])
    with pytest.raises(AssertionError, match="composed the careful way"):  # a crossed limit: the careful way
        compose(EDGES["laughs-refused"])


@LIBYAML
def test_a_text_the_fast_way_may_compose_holds_no_more_nodes_than_characters() -> None:
    """Why `FAST_TEXT` bounds the work: the densest forms libyaml reads spend a character per node."""
    for unit, wrap in (("a,", "{%s}"), ("? ,", "{%s}"), ("-\n", "%s"), ("? \n", "%s"), ("a: ,", "[%s]")):
        text = wrap % (unit * 1000)
        node = yaml.CSafeLoader(text).get_single_node()
        assert count(node) <= len(text) + 1, unit


def count(node: yaml.Node) -> int:
    if isinstance(node, yaml.ScalarNode):
        return 1
    if isinstance(node, yaml.MappingNode):
        return 1 + sum(count(k) + count(v) for k, v in node.value)
    return 1 + sum(count(child) for child in node.value)
