"""The plug-in registry: installed policies by entry point, each checked when it loads.

A policy decides what a model sees at each turn (the request view) and what it keeps between
turns (the retained state). Policies are discovered through the `harness.policies`
entry-point group, so a third party adds one with `pip install` and no edit to the harness.
Nothing is registered at import time: `PolicyRegistry.installed()` reads the entry points
each time it is called, and tests build a registry from a plain mapping
(`PolicyRegistry.from_mapping`). Either way every plug-in is checked when it loads
(`plugin_problem`): one that fails is kept apart as broken, with the reason and the fix, and
listed as such by `harness policies`; `harness run` refuses it. A plain `harness run` runs
every installed policy that loaded, except a plug-in that declares the set `opt_in`; a set's
name given to `--policy` selects the seed's comparison and the set's members (`seed` alone
selects exactly the seed's comparison).
"""

from __future__ import annotations

import difflib
import inspect
import typing
from collections.abc import Iterable, Mapping, Sequence

from harness.base.errors import InputError
from harness.base.messages import Message
from harness.base.params import INT_LIMIT
from harness.base.text import excerpt, shown
from harness.models import RESERVED_ROLES
from harness.policy.contract import PLACES, POLICY_METHODS, Param, Policy, PolicyFactory, PolicySpec
from harness.policy.delegated import OPENAI_RESPONSES

ENTRY_POINT_GROUP = "harness.policies"

# The seed's comparison: its six policies, bounded facts in both injection modes. A plain
# `harness run` runs these first, in this order; the named set `seed` selects exactly these.
SEED_SPECS = (
    "full-history",
    "last-turns",
    "summary",
    "bounded-facts",
    "bounded-facts:mode=provider",
    "request-compaction",
    "retained-reduction",
)
SEED_SET = "seed"  # the seed's comparison; a plug-in cannot join it (it would no longer be the seed's)
DEPLOYED_SET = "deployed"  # the policies people deploy: in a plain run right after the seed's
OPT_IN_SET = "opt_in"  # a plug-in in this set runs only when it or one of its sets is named
CONTROL_SET = "control"  # a control (`none`): in a plain run after every other policy, read beside them


def plugin_problem(entry_name: str, obj: object) -> str | None:
    """What makes a loaded plug-in unusable, saying how to fix it; None when it is usable.

    Checked: a class; its `name` equal to the entry point's name; a `description`; `params`
    a tuple of `Param` whose defaults are int or str (within their choices and minimum); the
    policy methods; a constructor taking `system` and each parameter, annotated (if at all)
    with its default's type.
    """
    if not isinstance(obj, type):
        return f"it is a {type(obj).__name__}, not a class; register the policy class itself"
    name = getattr(obj, "name", None)
    if name != entry_name:
        return (
            f"class {obj.__qualname__} calls itself {name!r} (its `name`) but its entry point is named "
            f"{entry_name!r}; make them agree (`--policy` takes the entry point's name)"
        )
    description = getattr(obj, "description", None)
    if not isinstance(description, str) or not description.strip():
        return "it has no `description` (a one-line str shown by `harness policies`); add one"
    methods = [m for m in POLICY_METHODS if not callable(getattr(obj, m, None))]
    if methods:
        plural = "s" if len(methods) > 1 else ""
        return f"it lacks the policy method{plural} {', '.join(methods)} (see harness.policy.Policy)"
    params = getattr(obj, "params", None)
    if not isinstance(params, tuple) or not all(isinstance(p, Param) for p in params):
        return "`params` must be a tuple of harness.policy.Param (`params = ()` when it takes none)"
    sets = getattr(obj, "sets", ())
    if not isinstance(sets, tuple) or not all(isinstance(s, str) and s.isidentifier() for s in sets):
        return '`sets` must be a tuple of set names (identifiers), e.g. `sets = ("deployed",)`'
    if SEED_SET in sets:
        return f"`sets` names {SEED_SET!r}, the seed's comparison, which no plug-in joins; name a set of your own"
    if not isinstance(getattr(obj, "shared_across_sessions", False), bool):
        return "`shared_across_sessions` must be True or False"
    place = getattr(obj, "history_place", "history")
    if not isinstance(place, str) or not place.strip() or place in tuple(PLACES.values()):
        *others, last = PLACES.values()
        return f"`history_place` must name what it calls its history (a word, not {', '.join(others)} or {last})"
    roles = getattr(obj, "roles", ())
    if not isinstance(roles, tuple) or not all(isinstance(r, str) and r.strip() for r in roles):
        return '`roles` must be a tuple of the roles its extra calls name, e.g. `roles = ("summarizer",)`'
    reserved = sorted(set(roles) & RESERVED_ROLES)
    if reserved:
        return f"`roles` names {', '.join(reserved)}, the harness's own calls; name the policy's own roles"
    return _params_problem(obj, params)


def _params_problem(cls: type, params: tuple[Param, ...]) -> str | None:
    """The parameters' own problems, then whether the constructor takes them as declared."""
    names = [p.name for p in params]
    for param in params:
        default = param.default
        if isinstance(default, bool) or not isinstance(default, (int, float, str)):
            return (
                f"parameter {param.name}: its default {default!r} must be an int, a float or a str (it fixes the type)"
            )
        if param.choices and default not in param.choices:
            return f"parameter {param.name}: its default {default!r} is not among its choices {list(param.choices)}"
        if param.minimum is not None and isinstance(default, (int, float)) and default < param.minimum:
            return f"parameter {param.name}: its default {default} is below its minimum {param.minimum}"
        if param.maximum is not None and isinstance(default, (int, float)) and default > param.maximum:
            return f"parameter {param.name}: its default {default} is above its maximum {param.maximum}"
        if isinstance(default, int) and param.upper is not None and param.upper > INT_LIMIT:
            return (
                f"parameter {param.name}: its maximum {param.maximum} does not fit in 64 bits; use at most {INT_LIMIT}"
            )
        if not param.name.isidentifier() or names.count(param.name) > 1:
            return f"parameter {param.name!r}: names must be distinct Python identifiers"
    try:
        inspect.signature(cls).bind(None, **{p.name: p.default for p in params})
    except TypeError as exc:
        taken = ", ".join(["system", *(f"{n}=..." for n in names)])
        return f"its constructor must take ({taken}): {exc}"
    return _annotation_problem(cls, params)


def _annotation_problem(cls: type, params: tuple[Param, ...]) -> str | None:
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # unresolvable annotations are the plug-in's business, not a wrong type
        return None
    for param in params:
        hint = hints.get(param.name)
        if hint in (int, float, str) and not isinstance(param.default, hint):
            return (
                f"parameter {param.name}: the constructor annotates it {hint.__name__} but its default "
                f"{param.default!r} is {type(param.default).__name__}; make them agree"
            )
    return None


class PolicyRegistry:
    """Installed policies by name; `broken` holds, by entry-point name, why a plug-in is unusable."""

    def __init__(self, factories: Mapping[str, PolicyFactory], broken: Mapping[str, str] | None = None):
        self.factories = dict(factories)
        self.broken = dict(broken or {})

    @classmethod
    def from_mapping(cls, plugins: Mapping[str, object]) -> PolicyRegistry:
        """Exactly these plug-ins (entry-point name -> class), checked as installed ones are."""
        registry = cls({})
        for name, obj in plugins.items():
            registry.admit(name, f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', obj)}", obj)
        return registry

    @classmethod
    def installed(cls) -> PolicyRegistry:
        """Read the `harness.policies` entry points now (no caching, no import side effects)."""
        registry = cls({})
        seen: dict[str, str] = {}
        from importlib.metadata import entry_points  # imported when used: it is slow to import

        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in seen and seen[ep.name] != ep.value:
                registry.factories.pop(ep.name, None)
                registry.broken[ep.name] = (
                    f"two plug-ins register the entry point {ep.name!r} ({seen[ep.name]} and {ep.value}); uninstall one"
                )
                continue
            seen[ep.name] = ep.value
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plug-in must not hide the others
                reason = f"cannot be loaded: {type(exc).__name__}: {exc}"
                registry.broken[ep.name] = f"entry point {ep.name!r} ({ep.value}) {reason}"
                continue
            registry.admit(ep.name, ep.value, obj)
        return registry

    def admit(self, name: str, target: str, obj: object) -> None:
        """Register `obj` under `name`, or keep it apart as broken with the reason."""
        problem = plugin_problem(name, obj)
        if problem is None:
            self.factories[name] = obj  # type: ignore[assignment]  # checked above
        else:
            self.broken[name] = f"entry point {name!r} ({target}): {problem}"

    def refuse_broken(self, names: Iterable[str] | None = None) -> None:
        """Raise InputError naming each broken plug-in among `names` (default: all)."""
        chosen = self.broken if names is None else {n: self.broken[n] for n in names if n in self.broken}
        if chosen:
            lines = [f"broken policy plug-in: {reason}" for _, reason in sorted(chosen.items())]
            raise InputError("\n".join(lines) + "\n(fix or uninstall it; `harness policies` lists what is installed)")

    def default_specs(self) -> list[PolicySpec]:
        """What a plain `harness run` compares: every installed policy except those in the set
        `opt_in` (`working_default_specs` gives the order).

        A broken plug-in is refused (InputError): it is installed, so a full run would lack it.
        """
        self.refuse_broken()
        return self.working_default_specs()

    def working_default_specs(self) -> list[PolicySpec]:
        """The plain run's specs among the policies that loaded (what `harness policies` lists
        first): the seed's comparison in its declared order, then the set `deployed` by name, then
        the other policies by name, then the set `control` by name; a policy in the set `opt_in` is
        left out."""
        seed = self.seed_specs()
        seeded = {s.name for s in seed}
        rest = [n for n in sorted(self.factories) if n not in seeded and OPT_IN_SET not in self.sets_of(n)]
        # stable: by name within each group
        rest.sort(key=lambda n: (DEPLOYED_SET not in self.sets_of(n), CONTROL_SET in self.sets_of(n)))
        return seed + [self.parse(n) for n in rest]

    def seed_specs(self) -> list[PolicySpec]:
        """The seed's comparison (the set `seed`), among the policies installed."""
        return [self.parse(s) for s in SEED_SPECS if s.split(":")[0] in self.factories]

    def sets_of(self, name: str) -> tuple[str, ...]:
        """The named sets an installed policy belongs to: `seed` for the seed's policies, then
        those its class declares (its `sets`)."""
        seed = (SEED_SET,) if name in {s.split(":")[0] for s in SEED_SPECS} else ()
        return seed + tuple(getattr(self.factories[name], "sets", ()))

    def runs_by_default(self, name: str) -> bool:
        """Whether a plain `harness run` runs an installed policy (it is not in the set `opt_in`)."""
        return OPT_IN_SET not in self.sets_of(name)

    def shares_sessions(self, name: str) -> bool:
        """Whether an installed policy keeps one state for every session (its class's
        `shared_across_sessions`, False when absent): a shared store's drops explain a loss in
        any session, where a per-session history's never do."""
        return getattr(self.factories[name], "shared_across_sessions", False) is True

    def history_place(self, name: str) -> str:
        """What an installed policy calls its retained history (its class's `history_place`,
        `history` when absent), the place residue.csv names where it keeps an old value."""
        return str(getattr(self.factories[name], "history_place", "history"))

    def roles_of(self, name: str) -> tuple[str, ...] | None:
        """The roles of an installed policy's extra calls (its class's `roles`); None when it
        does not declare them (it may call any)."""
        roles = getattr(self.factories[name], "roles", None)
        return tuple(roles) if roles is not None else None

    def check_offline(self, models: Iterable[str], specs: Sequence[PolicySpec]) -> None:
        """Refuse a policy that delegates to a provider (its class names the API in `provider`,
        `harness.policy.delegated`) in a run with a model that is neither offline (the in-process
        emulator answers) nor of that provider's own API (the class's `model_prefix`, `openai:` or
        `anthropic:`): another API would not be the provider's context management (`local` speaks
        chat completions only). The OpenAI Responses API is never reached both ways in one run: a
        compaction item of the emulator is refused by a real endpoint, and the other way round."""
        from harness.models.catalog import capabilities_named  # the catalog is read only for this check

        names = list(models)
        offline = {name: capabilities_named(name).offline for name in names}
        for spec in specs:
            factory = self.factories.get(spec.name)
            provider = getattr(factory, "provider", None)
            if provider is None:
                continue
            prefix = getattr(factory, "model_prefix", None)
            foreign = [n for n in names if not offline[n] and not (prefix and n.startswith(prefix))]
            if foreign:
                wired = f" or at a real endpoint ({prefix}NAME)" if prefix else " only"
                raise InputError(
                    f"--policy {spec.name}: it delegates to the {provider}, which the harness reaches through its "
                    f"offline emulator (--model reference or reference:lossy){wired}, every role too; "
                    f"{excerpt(foreign[0])} cannot reach it. Run it with one of those, or leave it out "
                    '(docs/models.md, "Emulated providers")'
                )
            online, emulated = [n for n in names if not offline[n]], [n for n in names if offline[n]]
            if provider == OPENAI_RESPONSES and online and emulated:
                raise InputError(
                    f"--policy {spec.name}: its models mix the offline emulator ({excerpt(emulated[0])}) and a real "
                    f"endpoint ({excerpt(online[0])}): a compaction item of one is refused by the other. Run each "
                    'in a run of its own (docs/models.md, "Emulated providers")'
                )

    def check_roles(self, roles: Iterable[str], specs: Sequence[PolicySpec]) -> None:
        """Refuse a role mapped to a model (`--model-role ROLE=MODEL`) that no policy of `specs`
        calls: a misspelt role would map nothing, and the calls would go to the answering model.
        A policy that does not declare its roles may call any, so then every role is taken."""
        declared = {spec.name: self.roles_of(spec.name) for spec in specs}
        if any(found is None for found in declared.values()):
            return
        used = {
            role: sorted(name for name, found in declared.items() if role in (found or ())) for role in self.roles()
        }
        used = {role: names for role, names in used.items() if names}
        for role in roles:
            if role not in used:
                raise InputError(self._unused_role(role, used))

    def roles(self) -> list[str]:
        """Every role an installed policy declares, sorted."""
        return sorted({role for name in self.factories for role in self.roles_of(name) or ()})

    def _unused_role(self, role: str, used: Mapping[str, list[str]]) -> str:
        close = difflib.get_close_matches(role, self.roles(), n=1, cutoff=0.7)
        hint = f" (did you mean {close[0]}?)" if close and close[0] != role else ""
        in_run = "; ".join(f"{r} ({', '.join(names)})" for r, names in used.items()) or "none"
        callers = [name for name in sorted(self.factories) if role in (self.roles_of(name) or ())]
        fix = f"{', '.join(callers)} would call it: add it with --policy, or drop" if callers else "drop"
        return (
            f"--model-role {excerpt(role)}=...: no policy of this run calls the role {shown(role)}{hint}; the roles its "
            f"policies call: {in_run}; {fix} the option (each policy declares its roles: `harness policies`)"
        )

    def named_sets(self) -> dict[str, list[str]]:
        """Set name -> its member policies, by name: `seed` (the seed's policies, in their
        declared order), then the sets the installed plug-ins declare."""
        found: dict[str, list[str]] = {SEED_SET: list(dict.fromkeys(s.name for s in self.seed_specs()))}
        for name in sorted(self.factories):
            for set_name in getattr(self.factories[name], "sets", ()):
                found.setdefault(set_name, []).append(name)
        return found

    def set_specs(self, set_name: str) -> list[PolicySpec]:
        """A named set: `seed` is exactly the seed's comparison; any other, the seed's comparison
        then the set's members by name. A broken plug-in is refused (for `seed`, a broken seed
        policy), since it might belong to the set."""
        if set_name == SEED_SET:
            self.refuse_broken(s.split(":")[0] for s in SEED_SPECS)
            return self.seed_specs()
        self.refuse_broken()
        members = self.named_sets()[set_name]
        return self.seed_specs() + [self.parse(n) for n in members]

    def parse(self, text: str) -> PolicySpec:
        """Parse `name` or `name:key=value,key=value`; raise InputError saying what to fix."""
        name, _, rest = text.partition(":")
        self.refuse_broken([name.strip()])
        factory = self.factories.get(name.strip())
        if factory is None:
            known = ", ".join(sorted(self.factories)) or "none"
            raise InputError(
                f"--policy {excerpt(text)}: unknown policy {shown(name)}; installed: {known} (see `harness policies`)"
            )
        declared = {p.name: p for p in factory.params}
        values = {p.name: p.default for p in factory.params}
        for item in filter(None, (s.strip() for s in rest.split(","))):
            key, eq, raw = item.partition("=")
            if key not in declared or not eq:
                allowed = ", ".join(declared) or "none"
                raise InputError(f"--policy {excerpt(text)}: unknown parameter {shown(item)}; {name} takes: {allowed}")
            try:
                values[key] = declared[key].parse(raw.strip())
            except ValueError as exc:
                raise InputError(f"--policy {excerpt(text)}: {key}: {exc}") from None
        return PolicySpec(factory.name, values, {p.name: p.default for p in factory.params})

    def parse_all(self, texts: Iterable[str]) -> list[PolicySpec]:
        """Parse every `--policy` (a set name stands for its specs); two that name the same
        policy and parameters are refused."""
        specs: dict[str, tuple[str, PolicySpec]] = {}
        sets = self.named_sets()
        for text in texts:
            name = text.strip()
            found = self.set_specs(name) if name in sets and name not in self.factories else [self.parse(text)]
            for spec in found:
                self._add_once(specs, text, spec)
        return [spec for _, spec in specs.values()]

    @staticmethod
    def _add_once(specs: dict[str, tuple[str, PolicySpec]], text: str, spec: PolicySpec) -> None:
        if spec.label in specs:
            first = specs[spec.label][0]
            raise InputError(
                f"--policy {excerpt(first)} and --policy {excerpt(text)} are the same policy ({spec.label}); "
                "results would mix them under one label: give each once"
            )
        specs[spec.label] = (text, spec)

    def create(self, spec: PolicySpec, system: Message | None) -> Policy:
        """A fresh policy instance for one conversation."""
        return self.factories[spec.name](system, **dict(spec.params))
