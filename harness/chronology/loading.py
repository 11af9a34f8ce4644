"""Load chronology files: the entry points, importing the validator only when a file is loaded.

Validation (`harness.chronology.validation`: PyYAML, RE2 and pydantic) costs a noticeable
part of a second at import; commands that load no chronology (`harness
--help`, `harness policies`, `harness report`) should not pay it. These functions import it on
their first call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harness.base.errors import InputError

if TYPE_CHECKING:
    from harness.chronology.types import Chronology

__all__ = [
    "chronologies_from",
    "chronology_schema",
    "discover",
    "load_chronologies",
    "load_chronology",
    "load_each",
    "summaries_from",
]

T = TypeVar("T")


def load_chronology(path: str | Path) -> Chronology:
    """Load and validate one chronology file; raise `ChronologyError` listing every problem in it."""
    from harness.chronology import validation

    return validation.load_chronology(path)


def load_chronologies(paths: Sequence[str | Path]) -> list[Chronology]:
    """Load every chronology the paths name (files, folders, .txt lists); all problems at once."""
    from harness.chronology import validation

    return validation.load_chronologies(paths)


def load_each(paths: Sequence[str | Path], keep: Callable[[Chronology], T]) -> list[T]:
    """`keep` of every chronology the paths name, each loaded in turn and dropped once read: a
    list of what `keep` returns, never every chronology at once; all problems at once."""
    from harness.chronology import validation

    return validation.load_each(paths, keep)


def discover(paths: Sequence[str | Path]) -> list[Path]:
    """Files as given; a folder stands for its *.yaml and *.yml files (not recursive), sorted."""
    from harness.chronology import validation

    return validation.discover(paths)


def chronology_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a chronology file, for `harness schema` and editors."""
    from harness.chronology import validation

    return validation.chronology_schema()


def chronologies_from(paths: Sequence[Path]) -> list[Chronology]:
    """The chronologies a command names (default: chronologies/); at least one, or an InputError."""
    return summaries_from(paths, lambda chronology: chronology)


def summaries_from(paths: Sequence[Path], keep: Callable[[Chronology], T]) -> list[T]:
    """`keep` of each chronology a command names (default: chronologies/), loaded one at a time
    (`load_each`); at least one, or an InputError."""
    if not paths and not Path("chronologies").is_dir():
        raise InputError(
            f"no chronologies/ folder in {Path.cwd()}: give chronology files or folders "
            "(harness run PATH...), or run from the project root that holds chronologies/"
        )
    given = list(paths) or [Path("chronologies")]
    found = load_each(given, keep)
    if not found:
        raise InputError(
            f"no chronology (*.yaml) found in {', '.join(map(str, given))}; give a file or a folder of them"
        )
    return found
