"""Fuzzing the loader: whatever a file holds, loading it returns a chronology or raises the
harness's own `ChronologyError`, and takes well under a second."""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.base.errors import ChronologyError
from harness.chronology.loading import load_chronology

FIELDS = [
    "title",
    "description",
    "system",
    "sessions",
    "prohibitions",
    "turns",
    "user",
    "assistant",
    "session",
    "probe",
    "summary",
    "writer",
    "forget",
    "present",
    "violated_by",
    "required",
    "key",
    "value",
    "evidence",
]
YAML_TOKENS = FIELDS + [
    ": ",
    ":",
    "- ",
    "-",
    "\n",
    "\n  ",
    "\n    ",
    "  ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "? ",
    "&a ",
    "*a",
    "&b ",
    "*b",
    "<<: ",
    "!!int ",
    "!!str ",
    "!!bool ",
    "!!timestamp ",
    "!!binary ",
    "!!python/object ",
    "!!set ",
    "!tag ",
    "%YAML 1.1\n",
    "---\n",
    "...\n",
    "#",
    "'",
    '"',
    "''",
    "|",
    "|-",
    ">",
    ">-",
    "\t",
    "\\",
    "\\u",
    "\\ud800",
    "~",
    "null",
    "yes",
    "No",
    "3.10",
    "2024-02-30",
    "0x",
    "0o",
    "1:2",
    "9" * 120,
    "1e999",
    ".nan",
    "module=Billing",
    "never restart",
    "all",
    "main",
    "(a+)+$",
    "(?=x)",
    "\\1",
    "a{4294967296}",
    "[",
    "(?i)",
    "\x00",
    "\x07",
    "\ufeff",
    "é",
]
REGEX_ALPHABET = "ab()[]{}|*+?.^$\\-,0123456789:=!<>Piswbdz "

yamlish = st.lists(st.sampled_from(YAML_TOKENS) | st.text(max_size=4), max_size=60).map("".join)
regex_like = st.text(alphabet=REGEX_ALPHABET, max_size=30)
scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20) | st.sampled_from(FIELDS)
structures = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(FIELDS) | scalars, children, max_size=4)
    ),
    max_leaves=25,
)
turns = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            name: structures | st.text(max_size=30)
            for name in ("user", "assistant", "session", "probe", "summary", "writer", "forget")
        },
    ),
    max_size=6,
)
prohibitions = st.dictionaries(
    st.text(alphabet="abc-. ", max_size=5) | scalars,
    st.fixed_dictionaries(
        {},
        optional={"present": regex_like, "violated_by": regex_like, "required": regex_like, "description": structures},
    ),
    max_size=3,
)
chronology_like = st.fixed_dictionaries(
    {"title": st.text(max_size=10) | structures, "turns": turns},
    optional={
        "sessions": st.lists(st.text(max_size=6), max_size=3) | structures,
        "prohibitions": prohibitions,
        "description": structures,
        "system": structures,
        "extra": structures,
    },
)
# Mostly valid: every branch past the schema runs, with random patterns (RE2 must refuse or run them).
nearly_valid = st.fixed_dictionaries(
    {
        "title": st.text(min_size=1, max_size=10),
        "turns": st.lists(
            st.fixed_dictionaries(
                {"user": st.text(min_size=1, max_size=40) | regex_like}, optional={"probe": st.sampled_from(["p", "q"])}
            ),
            min_size=1,
            max_size=5,
        ),
    },
    optional={
        "prohibitions": st.dictionaries(
            st.sampled_from(["p", "q", "no-restart"]),
            st.fixed_dictionaries(
                {"present": regex_like, "violated_by": regex_like}, optional={"required": regex_like}
            ),
            max_size=3,
        )
    },
)

# The deadline is wall time, there for a hang only (`loads_or_refuses` bounds the CPU): generous, so that
# a busy machine never reaches it.
FUZZ = settings(max_examples=150, deadline=10_000, suppress_health_check=[HealthCheck.function_scoped_fixture])


def loads_or_refuses(path: Path, data: bytes) -> None:
    """Loading returns or raises ChronologyError, within a second of CPU time.

    CPU time, with the collector paused: on a shared machine neither other processes nor a
    collection of hypothesis's own garbage should count against the loader; the wall-clock
    deadline still bounds the whole example. A new file each time: ext4 writes a file truncated
    and rewritten to disk when it is closed (auto_da_alloc), a wait on the disk in every example.
    """
    path.unlink(missing_ok=True)
    path.write_bytes(data)
    gc.disable()
    started = time.process_time()
    try:
        load_chronology(path)
    except ChronologyError as exc:
        assert exc.problems and all(p.path == str(path) and p.message for p in exc.problems)
    finally:
        spent = time.process_time() - started
        gc.enable()
    assert spent < 1.0, f"{spent:.2f} s of CPU"


def dumped(value: Any) -> bytes:
    return yaml.safe_dump(value, allow_unicode=True, sort_keys=False).encode("utf-8", "surrogatepass")


@FUZZ
@given(text=yamlish)
@pytest.mark.slow
def test_yaml_ish_text_loads_or_is_refused(tmp_path: Path, text: str) -> None:
    loads_or_refuses(tmp_path / "fuzz.yaml", text.encode("utf-8", "surrogatepass"))


@FUZZ
@given(data=st.binary(max_size=200))
def test_random_bytes_load_or_are_refused(tmp_path: Path, data: bytes) -> None:
    loads_or_refuses(tmp_path / "fuzz.yaml", data)


@FUZZ
@given(value=structures)
def test_random_structures_load_or_are_refused(tmp_path: Path, value: Any) -> None:
    loads_or_refuses(tmp_path / "fuzz.yaml", dumped(value))


@FUZZ
@given(value=chronology_like)
@pytest.mark.slow
def test_chronology_shaped_structures_load_or_are_refused(tmp_path: Path, value: Any) -> None:
    loads_or_refuses(tmp_path / "fuzz.yaml", dumped(value))


@FUZZ
@given(value=nearly_valid)
def test_nearly_valid_chronologies_with_random_patterns_load_or_are_refused(tmp_path: Path, value: Any) -> None:
    loads_or_refuses(tmp_path / "fuzz.yaml", dumped(value))
