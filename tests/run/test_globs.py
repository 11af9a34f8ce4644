"""A batch file's globs: the standard library's syntax, expanded within bounds."""

from __future__ import annotations

import glob
import inspect
import os
import sys
from pathlib import Path

import pytest

from harness.run import globs
from harness.run.globs import GlobRefused, expand_glob

FILES = ["a/b/c.yaml", "a/x.yaml", "a/.h/z.yaml", "a/b/d/e.yml", "top.yaml", ".hid.yaml", "a/b/c.txt", "b/a/c.yaml"]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("title: t\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


PATTERNS = [
    "**/*.yaml",
    "a/**",
    "**",
    "a/*/c.yaml",
    "*.yaml",
    "a/**/*.y*ml",
    "[at]*",
    "a/**/",
    "**/b/*",
    ".*",
    "a/.*/*",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_glob_matches_what_the_standard_library_matches(tree: Path, pattern: str) -> None:
    for given in (pattern, str(tree / pattern)):
        assert expand_glob(given, [tree]) == sorted(glob.glob(given, recursive=True))


@pytest.mark.parametrize("pattern", ["/**/*.yaml", "/**", "../**/*.yaml", "/proc/**"])
def test_a_recursive_glob_outside_the_allowed_folders_is_refused_unwalked(tree: Path, pattern: str) -> None:
    with pytest.raises(GlobRefused, match="searches only below|never looks into"):
        expand_glob(pattern, [tree / "a", tree])


def test_the_kernel_s_and_devices_trees_are_never_looked_into(tree: Path) -> None:
    with pytest.raises(GlobRefused, match=r"never looks into /proc, /sys, /dev; name chronology files"):
        expand_glob("/proc/*/status", [tree])
    (tree / "a" / "kernel").symlink_to("/proc")
    assert expand_glob("a/*/self", [tree]) == [] and "a/kernel" not in expand_glob("a/**", [tree])


def test_a_recursive_glob_does_not_follow_a_link_to_a_folder(tree: Path) -> None:
    (tree / "a" / "b" / "up").symlink_to(tree)  # followed, `**` would never end
    assert expand_glob("**/*.yaml", [tree]) == ["a/b/c.yaml", "a/x.yaml", "b/a/c.yaml", "top.yaml"]


@pytest.mark.slow
def test_a_deep_tree_is_walked_without_deep_recursion(tree: Path) -> None:
    deep = Path("deep")
    deep.mkdir()
    for _ in range(300):
        deep = deep / "d"
        deep.mkdir()
    (deep / "f.yaml").write_text("title: t\n")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 100)  # a walk that recursed once per level would fail
    try:
        found = expand_glob("deep/**/*.yaml", [tree])
    finally:
        sys.setrecursionlimit(limit)
    assert found == [str(deep / "f.yaml")]


def test_past_the_entries_or_matches_bound_a_glob_stops_and_says_which(tree, monkeypatch) -> None:
    for i in range(20):
        (tree / f"many-{i}.yaml").write_text("title: t\n")
    monkeypatch.setattr(globs, "MAX_MATCHES", 10)
    with pytest.raises(GlobRefused, match=r"many-\*.yaml: matches more than 10 paths; narrow it, or split the batch"):
        expand_glob("many-*.yaml", [tree])
    monkeypatch.setattr(globs, "MAX_ENTRIES", 25)
    with pytest.raises(GlobRefused, match=r"\*\*/c.yaml: looked at more than 25 directory entries"):
        expand_glob("**/c.yaml", [tree])
    assert len(expand_glob("a/*", [tree])) == 2  # one folder's few entries: within both bounds


def test_an_unreadable_or_missing_folder_matches_nothing(tree: Path) -> None:
    assert expand_glob("nothing/**/*.yaml", [tree]) == [] and expand_glob("top.yaml/*", [tree]) == []
    if os.geteuid() != 0:  # root reads any folder
        (tree / "a").chmod(0)
        assert expand_glob("a/*", [tree]) == []
        (tree / "a").chmod(0o755)
