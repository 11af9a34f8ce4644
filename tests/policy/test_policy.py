"""The policy contract: parameters, specs, and a registry that checks each plug-in when it loads."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.base.errors import InputError
from harness.cli.commands import main
from harness.policy import Param, PolicyRegistry, PolicySpec, plugin_problem
from harness.policy.history import HistoryPolicy
from policies.full_history import FullHistory
from policies.last_turns import LastTurns
from policies.retrieval import Retrieval
from policies.summary import Summary
from tests.conftest import BUILTIN_POLICIES, builtin_registry
from tests.paths import ROOT
from tests.plugins import install_plugin

# --- parameters and specs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("param", "text", "expected"),
    [
        (Param("turns", 3, "", minimum=0), "5", 5),
        (Param("mode", "message", "", choices=("message", "provider")), "provider", "provider"),
        (Param("name", "x", ""), "anything", "anything"),
    ],
)
def test_a_parameter_parses_to_its_defaults_type(param: Param, text: str, expected: object) -> None:
    assert param.parse(text) == expected


@pytest.mark.parametrize(
    ("param", "text", "message"),
    [
        (Param("turns", 3, "", minimum=1), "0", "at least 1"),
        (Param("turns", 3, ""), "many", "'many' is not a whole number"),
        (Param("turns", 3, ""), str(10**30), "must be at most 9,223,372,036,854,775,807"),  # 64 bits at most
        (Param("turns", 3, "", maximum=10), "11", "must be at most 10"),
        (Param("turns", 3, ""), "9" * 5000, "is 5000 characters long; give a whole number of at most 40"),
        (Param("share", 0.5, ""), "1e999", "must be a finite number"),
        (Param("mode", "message", "", choices=("message", "provider")), "both", "one of message, provider"),
    ],
)
def test_a_bad_parameter_value_says_what_is_expected(param: Param, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        param.parse(text)


def test_a_label_names_only_the_parameters_that_differ_from_the_defaults() -> None:
    registry = builtin_registry()
    assert registry.parse("last-turns:turns=3").label == "last-turns"
    assert registry.parse("last-turns: turns=5").label == "last-turns:turns=5"
    assert PolicySpec("x", {"a": 1}, {"a": 1}).as_record() == {"label": "x", "name": "x", "params": {"a": 1}}


# --- a registry of exactly what it is given ----------------------------------------------------------


def test_a_registry_from_a_mapping_holds_only_what_it_was_given() -> None:
    registry = PolicyRegistry.from_mapping({"last-turns": LastTurns})
    assert list(registry.factories) == ["last-turns"] and registry.broken == {}
    assert [s.label for s in registry.default_specs()] == ["last-turns"]
    with pytest.raises(InputError, match="unknown policy 'summary'; installed: last-turns"):
        registry.parse("summary")


def test_the_tests_builtin_mapping_is_what_pyproject_registers() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["harness.policies"]
    assert {name: f"{cls.__module__}:{cls.__qualname__}" for name, cls in BUILTIN_POLICIES.items()} == declared


def test_every_builtin_policy_passes_the_load_checks() -> None:
    assert {name: plugin_problem(name, cls) for name, cls in BUILTIN_POLICIES.items()} == dict.fromkeys(
        BUILTIN_POLICIES
    )


# --- broken plug-ins -----------------------------------------------------------------------------


def variant(**attributes: object) -> type:
    """A copy of FullHistory (entry point `full-history`) with some class attributes changed."""
    return type("Variant", (FullHistory,), attributes)


class NoSystem(FullHistory):
    def __init__(self) -> None:  # takes no `system`
        super().__init__(None)


class MistypedTurns(LastTurns):
    name = "mistyped"

    def __init__(self, system: object, turns: str = "3", pin: str = "false") -> None:
        super().__init__(None, int(turns), pin)


BROKEN = [
    (
        "full-history",
        variant(name="full"),
        "class Variant calls itself 'full' (its `name`) but its entry point is named 'full-history'; make them agree",
    ),
    ("full-history", lambda system: None, "it is a function, not a class"),
    ("full-history", variant(description=""), "no `description`"),
    ("full-history", variant(retained=None), "lacks the policy method retained"),
    ("full-history", variant(params=[Param("n", 1, "")]), "`params` must be a tuple of harness.policy.Param"),
    (
        "full-history",
        variant(params=(Param("flag", True, ""),)),
        "parameter flag: its default True must be an int, a float or a str",
    ),
    (
        "full-history",
        variant(params=(Param("m", "x", "", choices=("a", "b")),)),
        "its default 'x' is not among its choices",
    ),
    ("full-history", variant(params=(Param("n", 0, "", minimum=1),)), "its default 0 is below its minimum 1"),
    ("full-history", variant(params=(Param("n", 1, ""), Param("n", 2, ""))), "parameter 'n': names must be distinct"),
    (
        "last-turns",
        type("Variant", (LastTurns,), {"params": (Param("window", 3, ""),)}),
        "its constructor must take (system, window=...)",
    ),
    ("full-history", type("NoSystem", (NoSystem,), {}), "its constructor must take (system)"),
    ("mistyped", MistypedTurns, "parameter turns: the constructor annotates it str but its default 3 is int"),
    ("full-history", variant(roles="summarizer"), "`roles` must be a tuple of the roles its extra calls name"),
    ("full-history", variant(roles=("",)), "`roles` must be a tuple"),
    ("full-history", variant(roles=("judge",)), "`roles` names judge, the harness's own calls"),
    (
        "full-history",
        variant(params=(Param("n", 1, "", maximum=2**64),)),
        "its maximum 18446744073709551616 does not fit",
    ),
]


@pytest.mark.parametrize(("entry", "obj", "reason"), BROKEN)
def test_a_broken_plugin_is_kept_apart_with_the_reason(entry: str, obj: object, reason: str) -> None:
    registry = PolicyRegistry.from_mapping({entry: obj, "summary": Summary})
    assert list(registry.factories) == ["summary"]
    assert reason in registry.broken[entry] and registry.broken[entry].startswith(f"entry point {entry!r} (")


def test_run_refuses_a_broken_plugin_whether_named_or_by_default() -> None:
    registry = PolicyRegistry.from_mapping({"full-history": variant(name="full"), "last-turns": LastTurns})
    for ask in (lambda: registry.parse("full-history"), registry.default_specs):
        with pytest.raises(
            InputError,
            match=r"broken policy plug-in: entry point 'full-history' \(tests\.policy\.test_policy:Variant\)",
        ):
            ask()
    assert registry.parse("last-turns").name == "last-turns"  # the others stay usable by name


# --- an installed plug-in whose class calls itself otherwise: the CLI ---------------------------------

MISNAMED = """
from policies.full_history import FullHistory


class Notes(FullHistory):
    name = "note"
"""


def test_a_name_mismatch_is_listed_as_broken_and_run_exits_2_naming_the_entry_point_and_the_class(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(
        tmp_path / "site", monkeypatch, "misnamed_notes", MISNAMED, "[harness.policies]\nnotes = misnamed_notes:Notes\n"
    )
    (project / "chronologies" / "c.yaml").write_text("title: t\nturns:\n  - user: hello\n")
    listed = CliRunner().invoke(main, ["policies"])
    assert "notes  (broken: not usable until fixed)" in listed.output
    assert "entry point 'notes' (misnamed_notes:Notes): class Notes calls itself 'note'" in listed.output
    for args in (["run", "--policy", "notes"], ["run"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, result.output
        assert "entry point 'notes' (misnamed_notes:Notes): class Notes calls itself 'note'" in result.stderr
        assert "KeyError" not in result.output
    assert not (project / "results").exists()


def test_a_policy_says_whether_every_session_shares_its_state() -> None:
    registry = PolicyRegistry.from_mapping(BUILTIN_POLICIES)
    shared = {name for name in BUILTIN_POLICIES if registry.shares_sessions(name)}
    assert shared == {"bounded-facts", "facts+window"}  # the one fact store every session reads


@pytest.mark.parametrize("place", ["", "  ", 3, "summary", "fact store", "pinned"])
def test_a_history_place_that_is_blank_not_text_or_another_places_name_is_refused_at_load(place: object) -> None:
    broken = type("Variant", (FullHistory,), {"history_place": place})
    assert plugin_problem("full-history", broken) == (
        "`history_place` must name what it calls its history (a word, not summary, fact store or pinned)"
    )


def test_a_policy_names_its_history_for_residue_or_it_is_the_history() -> None:
    registry = PolicyRegistry.from_mapping({"full-history": FullHistory, "retrieval": Retrieval})
    assert (registry.history_place("full-history"), registry.history_place("retrieval")) == ("history", "index")


def test_shared_across_sessions_that_is_not_a_bool_is_refused_at_load() -> None:
    broken = type("Variant", (FullHistory,), {"shared_across_sessions": "yes"})
    assert plugin_problem("full-history", broken) == "`shared_across_sessions` must be True or False"


# --- bounds and roles ---------------------------------------------------------------------------


def test_every_builtin_number_parameter_is_bounded_by_its_own_maximum() -> None:
    for cls in BUILTIN_POLICIES.values():
        for param in cls.params:
            if isinstance(param.default, int):
                assert param.maximum is not None, f"{cls.name}: {param.name}"
                with pytest.raises(ValueError, match="must be at most"):
                    param.parse(str(10**30))


def test_a_huge_parameter_is_refused_by_run_with_one_message() -> None:
    result = CliRunner().invoke(main, ["run", "--policy", f"last-turns:turns={10**30}"])
    assert result.exit_code == 2 and "turns: must be at most 100,000" in result.stderr
    assert "Traceback" not in result.output and result.stderr.count("\n") == 1


def test_every_builtin_policy_declares_the_roles_it_calls() -> None:
    registry = builtin_registry()
    declared = {name: registry.roles_of(name) for name in BUILTIN_POLICIES}
    calling = {name: roles for name, roles in declared.items() if roles}
    assert calling == {
        "summary": ("summarizer",),
        "summary-buffer": ("summarizer",),
        "compaction-pipeline": ("summarizer",),
        "bounded-facts": ("writer",),
        "facts+window": ("writer",),
        "anthropic-compaction": ("compaction",),
        "openai-compaction": ("compaction",),
    }
    assert all(roles == () for name, roles in declared.items() if name not in calling)


@pytest.mark.parametrize(
    ("policies", "role", "message"),
    [
        (["summary"], "summariser", "no policy of this run calls the role 'summariser' (did you mean summarizer?)"),
        (["full-history"], "summariser", "(did you mean summarizer?); the roles its policies call: none"),
        (["summary"], "writer", "the roles its policies call: summarizer (summary); bounded-facts, facts+window would"),
    ],
)
def test_a_role_no_policy_of_the_run_calls_is_refused(policies: list[str], role: str, message: str) -> None:
    registry = builtin_registry()
    with pytest.raises(InputError, match=re.escape(message)):
        registry.check_roles([role], [registry.parse(p) for p in policies])


def test_a_role_a_policy_calls_is_taken_and_any_is_taken_beside_a_policy_that_declares_none() -> None:
    registry = builtin_registry()
    registry.check_roles(["summarizer", "writer"], [registry.parse("summary"), registry.parse("bounded-facts")])
    # A plug-in written before `roles` existed may call any role: beside it, no role is refused.
    plain = type("Plain", (HistoryPolicy,), {"name": "plain", "description": "the history", "params": ()})
    with_plain = PolicyRegistry.from_mapping({**BUILTIN_POLICIES, "plain": plain})
    assert with_plain.roles_of("plain") is None
    with_plain.check_roles(["critic"], [with_plain.parse("summary"), with_plain.parse("plain")])
    with pytest.raises(InputError, match="'critic'"):
        with_plain.check_roles(["critic"], [with_plain.parse("summary")])
