"""Rules of the house that span the wings, read from the source (harness/ and policies/):
other libraries are used through their public API only, every package imported is declared,
and a library the harness builds on has one home, the module that speaks to it."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections import defaultdict
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path
from typing import Any

import pytest

from tests.paths import ROOT

SOURCES = sorted(path for folder in ("harness", "policies") for path in (ROOT / folder).rglob("*.py"))
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

# A private name read from outside its owner, allowed: a documented call of the standard library.
ALLOWED = {"os._exit"}

# Import names whose distribution is named otherwise, for a package not installed here (an
# installed one is looked up in its metadata).
DISTRIBUTIONS = {"yaml": "pyyaml", "re2": "google-re2", "llama_cpp": "llama-cpp-python", "genai_prices": "genai-prices"}
# An optional extra's packages may be imported by the module that runs them.
EXTRA_IN = {
    "harness/models/local.py": "local",
    "harness/models/anthropic.py": "anthropic",
    "harness/report/known_prices.py": "prices",
}

# One home per library that talks to the outside or draws: the only module that imports it.
HOMES = {
    "openai": "harness/models/openai.py",
    "anthropic": "harness/models/anthropic.py",
    "httpx2": "harness/models/deadline.py",
    "httpcore2": "harness/models/deadline.py",
    "tiktoken": "harness/policy/tokens.py",
    "matplotlib": "harness/report/charts.py",
    "duckdb": "harness/results/calls_in_bulk.py",
    "rich": "harness/cli/progress.py",
    "re2": "harness/chronology/patterns.py",
    "click": "harness/cli/commands.py",
}


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def trees() -> Iterator[tuple[str, ast.Module]]:
    for path in SOURCES:
        yield relative(path), ast.parse(path.read_text(), filename=str(path))


# A named tuple's documented methods: their underscore keeps them apart from its fields, not private.
NAMEDTUPLE_API = {"_asdict", "_fields", "_field_defaults", "_make", "_replace"}


def is_private(name: str) -> bool:
    """A leading underscore, and not a dunder (`__init__`, `__module__`: public by convention) nor
    a named tuple's documented method."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and name not in NAMEDTUPLE_API


def private_uses(tree: ast.Module) -> Iterator[tuple[int, str, str]]:
    """(line, name, the expression) of every private attribute read or assigned on anything but
    `self` or `cls`: `x._y`, `getattr(x, "_y")` (and `setattr`, `hasattr`, `delattr`), and a private
    module or name imported from outside harness/ and policies/ (`from lib._impl import f`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr) and not _on_self(node.value):
            yield node.lineno, node.attr, ast.unparse(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and is_private(node.args[1].value)
            and not _on_self(node.args[0])
        ):
            yield node.lineno, node.args[1].value, ast.unparse(node)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for module, name in _imported(node):
                if module.split(".")[0] in ("harness", "policies"):
                    continue  # the project's own names: its modules' business
                for part in [*module.split("."), name]:
                    if is_private(part):
                        yield node.lineno, part, ast.unparse(node)


def _on_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _imported(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    """(module, name) pairs an import statement reads; a relative import names its own package."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, ""
    elif node.level == 0 and node.module:
        for alias in node.names:
            yield node.module, alias.name if alias.name != "*" else ""


@pytest.mark.slow
def test_no_private_attribute_of_another_object_is_used() -> None:
    found = [
        f"{path}:{line}: {expression}"
        for path, tree in trees()
        for line, name, expression in private_uses(tree)
        if expression.split("(")[0] not in ALLOWED
    ]
    assert not found, "private attributes used from outside their owner:\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_private_use() -> None:
    source = (
        "import httpx2._utils\nfrom httpx2._utils import get_environment_proxies\n"
        "client._transport\nclient._mounts = {}\ngetattr(pool, '_network_backend', None)\n"
        "self._own\ncls._cache\nobject.__init__\nos._exit\ngetattr(x, 'public')\nkey._asdict()\n"
    )
    found = [(line, name) for line, name, _ in private_uses(ast.parse(source))]
    assert found == [(1, "_utils"), (2, "_utils"), (3, "_transport"), (4, "_mounts"), (5, "_network_backend")] + [
        (9, "_exit")
    ]


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(requirements: list[str]) -> set[str]:
    return {normalized(re.match(r"[A-Za-z0-9._-]+", requirement).group()) for requirement in requirements}


def third_party_imports() -> dict[str, dict[str, int]]:
    """Top-level import name -> {module: first line} of every import of a package that is neither the
    standard library's nor the project's own, at any depth (in functions, under TYPE_CHECKING)."""
    found: dict[str, dict[str, int]] = defaultdict(dict)
    for path, tree in trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for module, _ in _imported(node):
                    top = module.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in ("harness", "policies", "__future__"):
                        found[top].setdefault(path, node.lineno)
    return found


@pytest.mark.slow
def test_every_package_imported_is_declared() -> None:
    declared = requirement_names(PROJECT["dependencies"])
    extras = {name: requirement_names(found) for name, found in PROJECT["optional-dependencies"].items()}
    installed = packages_distributions()  # import name -> the distributions that provide it
    missing = []
    for name, where in sorted(third_party_imports().items()):
        candidates = {normalized(d) for d in installed.get(name, [])} or {normalized(DISTRIBUTIONS.get(name, name))}
        for path, line in where.items():
            allowed = declared | extras.get(EXTRA_IN.get(path, ""), set())
            if not candidates & allowed:
                missing.append(f"{path}:{line}: imports {name} ({' or '.join(sorted(candidates))}: not declared)")
    assert not missing, "packages imported but not in pyproject.toml's dependencies:\n" + "\n".join(missing)


@pytest.mark.slow
def test_each_library_has_one_home() -> None:
    imports = third_party_imports()
    homes = {library: sorted(imports.get(library, {})) for library in HOMES}
    assert homes == {library: [home] for library, home in HOMES.items()}


def test_every_module_of_harness_lives_in_a_wing() -> None:
    """harness/ holds only subpackages, its public API (`__init__`) and `python -m harness` (`__main__`)."""
    loose = sorted(p.name for p in (ROOT / "harness").glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert loose == []
    wings = sorted(p.name for p in (ROOT / "harness").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert all((ROOT / "harness" / wing / "__init__.py").is_file() for wing in wings)


def test_the_layer_contract_names_every_wing() -> None:
    """import-linter checks only the wings its contract names: a new wing must take its place there."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    [layers] = [c["layers"] for c in contracts if c["type"] == "layers"]
    named = {name.strip() for layer in layers for name in layer.split("|")}
    wings = {p.name for p in (ROOT / "harness").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert named == wings


def test_no_module_imports_itself_through_others() -> None:
    """No import circle between any two modules of the harness, TYPE_CHECKING imports and wing
    fronts (`__init__`) included: import-linter's contracts check the layers and each wing's
    siblings; this checks every module against every other."""
    import grimp

    graph = grimp.build_graph("harness", cache_dir=None)
    circles = [sorted(part) for part in strongly_connected(graph) if len(part) > 1]
    assert circles == []


def strongly_connected(graph: Any) -> list[set[str]]:
    """Tarjan's strongly connected components of the import graph (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                part = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    part.add(top)
                    if top == module:
                        break
                found.append(part)
    return found


def test_the_circle_check_finds_a_circle() -> None:
    class Graph:
        modules = {"a", "b", "c"}

        @staticmethod
        def find_modules_directly_imported_by(module: str) -> set[str]:
            return {"a": {"b"}, "b": {"a"}, "c": {"a"}}[module]

    assert sorted(map(sorted, strongly_connected(Graph()))) == [["a", "b"], ["c"]]


@pytest.mark.slow
def test_no_module_imports_a_private_name_of_another() -> None:
    """A name one module keeps private (`_Tree`) is not another module's to import: make it public."""
    found = [
        f"{path}:{node.lineno}: from {node.module} import {alias.name}"
        for path, tree in trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("harness", "policies")
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert not found, "\n".join(found)
