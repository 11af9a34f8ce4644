"""`harness --help` starts without the heavy libraries: each is imported where it is used.

Not timed (benchmarks/start_time.py measures); this only holds the imports in place, so that a
new top-level import of one of them fails here instead of slowing every command down.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

from hypothesis import strategies as st

HEAVY = ("pandas", "matplotlib", "openai", "tiktoken", "scipy", "bm25s", "numpy", "pydantic", "httpx")


def imported_by(statement: str) -> set[str]:
    """The top-level packages among HEAVY that `statement` imports, run in a fresh interpreter."""
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1])) & set(HEAVY)


def test_the_command_line_module_imports_no_heavy_library() -> None:
    assert imported_by("import harness.cli") == set()


def test_loading_a_valid_chronology_needs_no_heavy_library_not_even_the_models() -> None:
    found = imported_by(
        "from harness.loading import load_chronology; load_chronology('chronologies/memory-drift.yaml')"
    )
    assert found == set()


def test_a_file_with_a_problem_is_explained_by_the_models() -> None:
    statement = (
        "import tempfile\nfrom harness.loading import load_chronology\n"
        "path = tempfile.mktemp(suffix='.yaml')\nopen(path, 'w').write('title: t\\nturns: []\\n')\n"
        "try:\n    load_chronology(path)\nexcept Exception as exc:\n    assert 'no turns' in str(exc), exc"
    )
    assert imported_by(statement) == {"pydantic"}


def as_plain(spec: object) -> object:
    """A spec (the models' or the quick one) as plain data, with the fields each turn wrote."""
    # Both kinds of spec read alike: pydantic models name their fields in `model_fields`,
    # the quick spec's dataclasses in their instance dict.
    if isinstance(spec, list):
        return [as_plain(item) for item in spec]
    if isinstance(spec, dict):
        return {key: as_plain(value) for key, value in spec.items()}
    if hasattr(spec, "model_fields_set") or hasattr(spec, "__dataclass_fields__"):
        names = [n for n in type(spec).__dict__.get("model_fields", {}) or vars(spec) if n != "model_fields_set"]
        plain = {name: as_plain(getattr(spec, name)) for name in names}
        if "forget" in names:  # a turn: the checks read which fields it wrote
            plain["written"] = sorted(spec.model_fields_set)
        return plain
    return spec


def test_a_plainly_valid_file_gets_the_spec_the_models_give() -> None:
    from pathlib import Path

    from harness.chronology_models import ChronologySpec, TurnSpec
    from harness.safe_yaml import compose
    from harness.validation import TURN_FIELDS, quick_spec

    assert tuple(TurnSpec.model_fields) == TURN_FIELDS
    files = sorted(Path("chronologies").glob("*.yaml"))
    assert files
    for path in files:
        _, value = compose(path.read_text(encoding="utf-8"))
        quick = quick_spec(value)
        assert quick is not None, path
        assert as_plain(quick) == as_plain(ChronologySpec.model_validate(value)), path


def test_anything_unusual_goes_to_the_models() -> None:
    from harness.validation import quick_spec

    turn = {"user": "hi"}
    assert quick_spec({"title": "t", "turns": [turn]}) is not None
    for bad in (
        {"title": "t", "turns": []},
        {"title": "", "turns": [turn]},
        {"title": "t", "turns": [turn], "extra": 1},
        {"title": "t", "turns": [{"user": "hi", "session": "no spaces"}]},
        {"title": "t", "turns": [{"user": None}]},
        {"title": "t", "turns": [{"user": 3}]},
        {"title": "t", "turns": [{"forget": "nothing"}]},
        {"title": "t", "turns": [turn], "sessions": ["a", "a"]},
        {"title": "t", "turns": [turn], "prohibitions": {"p": {"present": "(", "violated_by": "x"}}},
        {"title": "t", "turns": [{"user": "hi", "sets": {"unknown": "v"}}]},
        {"title": "t", "turns": [{"user": "hi", "writer": [{"key": 1}]}]},
    ):
        assert quick_spec(bad) is None, bad


_TEXT = ["hi", "", " ", "a b", "default", "no spaces", "key=value", "x" * 3]
_VALUE = st.sampled_from(_TEXT) | st.none() | st.integers(-1, 2) | st.booleans()
_LIKELY = st.sampled_from(["hi", "a b"]) | _VALUE  # half plain text, so the quick check accepts often enough
_KEY = st.sampled_from(["module", "database", "customer", "unknown"])  # fact keys, and one that is none


def _turns() -> st.SearchStrategy:
    item = st.sampled_from(["key", "value", "evidence", "other"])
    writer = st.lists(st.dictionaries(item, st.sampled_from(["hi", "module"]) | _VALUE), max_size=2)
    fields = {
        "user": _LIKELY,
        "assistant": _VALUE,
        "session": _VALUE,
        "probe": st.sampled_from(["p1", "restart"]) | _VALUE,
        "asks": st.lists(st.sampled_from(["p", "q"]) | _VALUE, max_size=2) | _VALUE,
        "sets": st.dictionaries(_KEY | st.sampled_from(["k"]), st.sampled_from(["Billing"]) | _VALUE, max_size=2)
        | _VALUE,
        "summary": _VALUE,
        "writer": writer | _VALUE,
        "forget": _KEY | st.just("all") | _VALUE,
        "extra": _VALUE,
    }
    return st.lists(st.fixed_dictionaries({}, optional=fields), max_size=3)


def test_whatever_the_quick_check_accepts_the_models_accept_alike() -> None:
    """The two readers of one file agree: the quick check either declines (the models decide) or
    gives exactly the spec the models give."""
    from hypothesis import given, settings
    from pydantic import ValidationError

    from harness.chronology_models import ChronologySpec
    from harness.validation import quick_spec

    document = st.fixed_dictionaries(
        {"title": _LIKELY, "turns": _turns()},
        optional={
            "description": _VALUE,
            "system": _VALUE,
            "sessions": st.lists(_VALUE, max_size=2) | _VALUE,
            "prohibitions": st.dictionaries(
                st.sampled_from(["p", "q"]),
                st.fixed_dictionaries(
                    {"present": st.sampled_from(["x", "(", "a b"]), "violated_by": st.sampled_from(["y", ""])},
                    optional={"required": _VALUE, "description": _VALUE},
                ),
                max_size=2,
            ),
        },
    )

    # Plainly valid documents too, with every kind of turn field, so that the comparison reaches
    # the fields where the two readers could differ (random values rarely pass both).
    valid_turn = st.fixed_dictionaries(
        {"user": st.sampled_from(["hi", "module=Billing", "restart now?"])},
        optional={
            "probe": st.sampled_from(["p1", "restart"]),
            "asks": st.lists(st.just("p"), min_size=1, max_size=1),
            "sets": st.dictionaries(st.sampled_from(["module", "database"]), st.sampled_from(["Billing", "SQL"])),
            "writer": st.lists(
                st.fixed_dictionaries({}, optional={"key": _KEY, "value": st.just("Billing"), "evidence": _LIKELY}),
                max_size=2,
            ),
            "summary": st.just("so far"),
        },
    )
    forget_turn = st.fixed_dictionaries({"forget": _KEY | st.just("all")})
    valid = st.fixed_dictionaries(
        {"title": st.just("t"), "turns": st.lists(valid_turn | forget_turn, min_size=1, max_size=4)},
        optional={"prohibitions": st.just({"p": {"present": "restart", "violated_by": "restarted"}})},
    )
    document = document | valid
    compared: Counter[str] = Counter()  # turn fields of the accepted documents, so the test is not vacuous

    @settings(max_examples=600, deadline=None)
    @given(document)
    def agree(data: dict) -> None:
        quick = quick_spec(data)
        if quick is None:
            return
        try:
            models = ChronologySpec.model_validate(data)
        except ValidationError as exc:
            raise AssertionError(f"the quick check accepted what the models refuse: {data}\n{exc}") from None
        assert as_plain(quick) == as_plain(models), data
        compared.update(name for turn in data["turns"] for name in turn)
        compared.update(["prohibitions"] if data.get("prohibitions") else [])

    agree()
    for field in ("user", "probe", "asks", "sets", "writer", "forget", "prohibitions"):
        assert compared[field] >= 3, (field, compared)  # each kind of field was compared in accepted files
