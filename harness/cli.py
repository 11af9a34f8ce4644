"""The `harness` command line. Errors become one message and an exit status here, and only here."""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from harness.batch import BatchPlan, resolve_model, run_batch
from harness.chronology import Chronology
from harness.errors import HarnessError, InputError
from harness.loading import chronology_schema, load_chronologies
from harness.policy import PolicyRegistry
from harness.report import write_report
from harness.runner import Conversation

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class HarnessGroup(click.Group):
    """Turns every `HarnessError` into its message on stderr and its exit status."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except HarnessError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)


@click.group(cls=HarnessGroup)
@click.version_option(package_name="context-policy-harness")
def main() -> None:
    """Replay fixed conversations under context policies and show what each one loses."""


def default_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")


def run_directory(out: Path, run_id: str | None) -> tuple[str, Path]:
    run_id = run_id or default_run_id()
    if not RUN_ID.match(run_id):
        raise InputError(f"--run-id {run_id!r}: use letters, digits, '.', '_' and '-' only")
    directory = out / run_id
    if directory.exists():
        raise InputError(f"{directory} already exists; choose another --run-id or remove it")
    return run_id, directory


def chronologies_from(paths: tuple[Path, ...]) -> list[Chronology]:
    """The chronologies named (default: chronologies/); at least one, or an InputError."""
    given = list(paths) or [Path("chronologies")]
    found = load_chronologies(given)
    if not found:
        raise InputError(f"no chronology (*.yaml) found in {', '.join(map(str, given))}; give a file or a folder of them")
    return found


def print_progress(done: int, total: int, conversation: Conversation, status: str) -> None:
    c = conversation
    click.echo(f"[{done}/{total}] {c.chronology.name} · {c.policy.label} · {c.model} · "
               f"rep {c.repetition}: {status}", err=True)  # fmt: skip


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--policy", "policies", multiple=True, help="Policy spec, e.g. last-turns:turns=5 (repeatable; default: all).")
@click.option("--model", "models", multiple=True, help="Model to run (repeatable; default: reference).")
@click.option("--repetitions", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--concurrency", default=1, show_default=True, type=click.IntRange(min=1), help="Conversations run at once.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed passed to models that take one.")
@click.option("--live", is_flag=True, help="The model answers every turn instead of replaying scripted replies.")
@click.option("--out", default=Path("results"), show_default=True, type=click.Path(path_type=Path), help="Results root.")
@click.option("--reports", default=Path("reports"), show_default=True, type=click.Path(path_type=Path), help="Reports root.")
@click.option("--run-id", default=None, help="Name of the results folder (default: UTC time).")
@click.option("--quiet", is_flag=True, help="No progress lines.")
def run(paths: tuple[Path, ...], policies: tuple[str, ...], models: tuple[str, ...], repetitions: int,
        concurrency: int, seed: int, live: bool, out: Path, reports: Path, run_id: str | None, quiet: bool) -> None:  # fmt: skip
    """Replay chronologies (default: every file in chronologies/) under each policy and model."""
    chronologies = chronologies_from(paths)
    registry = PolicyRegistry.installed()
    specs = [registry.parse(p) for p in policies] or registry.default_specs()
    for name in models or ("reference",):
        resolve_model(name)
    plan = BatchPlan(chronologies, specs, models or ("reference",), repetitions, concurrency, seed, live)
    run_id, directory = run_directory(out, run_id)
    click.echo(f"running {len(plan.conversations())} conversations into {directory}", err=True)
    run_batch(plan, directory, run_id, registry, None if quiet else print_progress)
    report = write_report([directory], reports)
    click.echo(f"results: {directory}\nreport:  {report}")


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
def validate(paths: tuple[Path, ...]) -> None:
    """Check chronologies without running them (default: chronologies/)."""
    for chronology in chronologies_from(paths):
        click.echo(f"ok: {chronology.path} ({len(chronology.turns)} turns, {len(chronology.probes)} probes)")


@main.command()
def policies() -> None:
    """List the installed policies with their parameters."""
    registry = PolicyRegistry.installed()
    for name in sorted(registry.factories):
        factory = registry.factories[name]
        params = ", ".join(f"{p.name}={p.default}" for p in factory.params) or "no parameters"
        click.echo(f"{name}  ({params})\n    {factory.description}")
        for p in factory.params:
            choices = f" [{'|'.join(p.choices)}]" if p.choices else ""
            click.echo(f"    {p.name}: {p.description}{choices}")
    for name, problem in sorted(registry.broken.items()):
        click.echo(f"{name}  (failed to load: {problem})")


@main.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--reports", default=Path("reports"), show_default=True, type=click.Path(path_type=Path))
def report(results: tuple[Path, ...], reports: Path) -> None:
    """Rebuild the markdown report from results directories alone (no model calls)."""
    click.echo(write_report(list(results), reports))


@main.command()
def schema() -> None:
    """Print the JSON Schema of the chronology format."""
    click.echo(json.dumps(chronology_schema(), indent=2))
