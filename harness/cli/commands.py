"""The `harness` command line. Errors become one message and an exit status here, and only here."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from harness.base.errors import (
    ChronologyError,
    ConversationsFailed,
    HarnessError,
    InputError,
    RunComplete,
    RunFailed,
    os_error_text,
)
from harness.base.temporaries import sweep
from harness.base.text import not_utf8, path_shown, shown, terminal, visible
from harness.chronology.loading import chronologies_from, chronology_schema, discover, load_chronology
from harness.cli.folders import check_writable_folder
from harness.emulate.providers import PROVIDERS
from harness.importing import FORMATS
from harness.report.markdown import plural
from harness.results.outputs import check_outside_runs
from harness.run.interrupts import Cancelled, exit_status, terminations
from harness.run.options import DEFAULTS, SETTINGS, Setting

# The commands import what they run when they run (issue 11, fast start): `harness --help` and
# `harness validate` load neither the batch machinery, nor the models, nor the policies.
if TYPE_CHECKING:
    from harness.chronology import Chronology
    from harness.policy import PolicyRegistry
    from harness.results.rows import Manifest
    from harness.run.conversation import Planned
    from harness.run.spec import RunSpec


def echo(text: object, err: bool = False, nl: bool = True) -> None:
    """Print a message; its control characters are shown as escapes (`harness.base.text.terminal`):
    messages quote file names, chronology text and endpoints' errors, which must not drive the terminal."""
    click.echo(terminal(str(text)), err=err, nl=nl)


# OSErrors that say the machine failed (exit status 1); any other says a path is not what the
# command needs (a folder where a file goes, a file it may not read): bad input, exit status 2.
MACHINE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("ENOSPC", "EDQUOT", "EIO", "EROFS", "ENOMEM", "EMFILE", "ENFILE", "ESTALE", "EAGAIN", "EBUSY")
    if hasattr(errno, name)
)


class HarnessGroup(click.Group):
    """Turns every `HarnessError` into its message on stderr and its exit status; Ctrl-C,
    SIGTERM and SIGHUP into `interrupted` and 130, 143 or 129 (never click's `Aborted!`, 1)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Refuse an argument that is not UTF-8 text (its bad bytes would reach the results as lone
        surrogates, which no UTF-8 file holds): exit 2, naming it as escapes."""
        for arg in args:
            if (wrong := not_utf8(arg)) is not None:
                raise click.UsageError(
                    f"the argument {visible(arg)} is not UTF-8 text ({wrong}); give it as UTF-8", ctx
                )
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> object:
        try:
            with terminations():
                return super().invoke(ctx)
        except HarnessError as exc:
            say(f"error: {exc}")
            sys.exit(exc.exit_code)
        except BrokenPipeError:  # the reader of stdout went away (`harness policies | head`): nothing to say
            with contextlib.suppress(OSError, ValueError):  # the interpreter's flush at exit must not fail again
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except OSError as exc:
            say(f"error: {os_error_line(exc)}")
            sys.exit(HarnessError.exit_code if exc.errno in MACHINE_ERRNOS else InputError.exit_code)
        except KeyboardInterrupt as exc:  # a command that records nothing (a run says more: `guarded`)
            say("\ninterrupted")
            sys.exit(exit_status(exc))


def say(text: str) -> None:
    """One line on stderr; a terminal that is gone (SIGHUP) cannot stop the exit that follows."""
    try:
        click.echo(terminal(text), err=True)  # control characters shown as escapes, as `echo` does
    except OSError:
        pass


def os_error_line(exc: OSError) -> str:
    """An OSError as one line; a rename or link names its target (`reports/x.md: Is a directory`)."""
    if exc.filename2 is not None and exc.errno in (errno.EISDIR, errno.ENOTDIR, errno.EEXIST, errno.ENOTEMPTY):
        return f"{path_shown(exc.filename2)}: {exc.strerror or exc}; move it away, or give another folder"
    return os_error_text(exc)


reports_option = click.option(
    "--reports", default=Path("reports"), show_default=True, type=click.Path(path_type=Path), help="Reports root."
)
charts_option = click.option(
    "--charts/--no-charts",
    default=True,
    show_default=True,
    help="Draw the report's charts; --no-charts writes its tables only (faster on large batches).",
)


@click.group(cls=HarnessGroup)
@click.version_option(package_name="context-policy-harness")
def main() -> None:
    """Replay fixed conversations under context policies and show what each one loses."""


RUN_WARNINGS = 20  # what `run` prints before its progress; `validate` prints every one


def echo_warnings(chronologies: list[Chronology | Planned], cap: int | None = None) -> None:
    """What validation warns about (the files are valid), one line each on stderr; past `cap`,
    one line saying how many more there are and where to read them (a run of 500 imported items
    may warn thousands of times, which would bury its progress)."""
    found = (w for c in chronologies for w in c.warnings)
    for count, warning in enumerate(found):
        if cap is not None and count == cap:
            more = 1 + sum(1 for _ in found)
            echo(
                f"… and {more:,} more warning{'s' if more > 1 else ''}; `harness validate` on these "
                "chronologies lists every one",
                err=True,
            )
            return
        echo(str(warning), err=True)


F = TypeVar("F", bound=Callable[..., Any])


class Seconds(click.ParamType):
    """A finite number of seconds within bounds: `nan` and `inf` are not timeouts."""

    name = "seconds"

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            seconds = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            self.fail(f"{shown(value)} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or not self.low <= seconds <= self.high:
            self.fail(f"{value} is not a number of seconds from {self.low:g} to {self.high:g}", param, ctx)
        return seconds


def setting_param(setting: Setting) -> Callable[[F], F]:
    """The option of `harness run` that gives `setting` (harness.run.options.SETTINGS)."""
    if not setting.flags:
        return click.argument(setting.name, nargs=-1, type=click.Path(path_type=Path))
    default = getattr(DEFAULTS, setting.name)
    low, high = setting.within
    kind = {
        "int": click.IntRange(min=low, max=high) if (low, high) != (None, None) else int,
        "float": click.FloatRange(min=low, max=high),
        "seconds": Seconds(low or 0, high or math.inf),
        "path": click.Path(path_type=Path),
    }.get(setting.kind)
    return click.option(
        *setting.decls,
        setting.name,
        default=default,
        show_default=not (default is None or default is False or default == ()),  # 0 is shown
        type=kind,
        is_flag=setting.kind == "flag",
        multiple=setting.multiple,
        metavar=setting.metavar,
        help=setting.help,
    )


def setting_options(first: str, last: str) -> Callable[[F], F]:
    """The options of the settings from `first` to `last`, in the table's order."""
    names = [s.name for s in SETTINGS]
    chosen = SETTINGS[names.index(first) : names.index(last) + 1]

    def decorate(command: F) -> F:
        for setting in reversed(chosen):
            command = setting_param(setting)(command)
        return command

    return decorate


@main.command()
@setting_options("paths", "independent_samples")
@click.option(
    "--out", default=Path("results"), show_default=True, type=click.Path(path_type=Path), help="Results root."
)
@reports_option
@click.option("--run-id", default=None, help="Name of the results folder (default: UTC time and random hex digits).")
@click.option(
    "--resume",
    "resume",
    default=None,
    type=click.Path(path_type=Path),
    help="Finish an interrupted run in RESULTS_DIR (its report too).",
)
@click.option(
    "--quiet", is_flag=True, help="No progress display, progress lines or warnings on stderr (errors still show)."
)
@charts_option
@setting_options("shard", "shard")
@click.option(
    "--batch",
    "batch",
    default=None,
    type=click.Path(path_type=Path),
    help="A YAML batch file naming chronologies, policies, models and options (see batches/).",
)
@setting_options("temperature", "local_port")
def run(resume: Path | None, batch: Path | None, **options: Any) -> None:
    """Replay chronologies (default: every file in chronologies/) under each policy and model."""
    from harness.policy import PolicyRegistry
    from harness.run.spec import RunOptions, build

    output = Output.of(options)
    registry = PolicyRegistry.installed()
    check_writable_folder(output.reports, "--reports")
    if resume is not None:
        return resume_run(resume, output.reports, registry, output.quiet, output.charts)
    record = None
    if batch is None:
        given = RunOptions.of(options)
    else:  # the file says what runs (harness.run.batchfile)
        from harness.run.batchfile import batch_options

        given, record = batch_options(batch, given_options(), registry)
    spec = build(given, registry, record)
    if not output.quiet:
        echo_warnings(list(spec.chronologies), RUN_WARNINGS)
    if spec.cache_dir is not None:
        check_writable_folder(spec.cache_dir, "--cache-dir")
    check_writable_folder(output.out, "--out")
    start(spec, registry, output)


@dataclass(frozen=True)
class Output:
    """Where `harness run` writes and what it shows: the results root, the reports root, the run's
    id (None: a new one), whether the report draws charts, whether progress is shown."""

    out: Path
    reports: Path
    run_id: str | None
    charts: bool
    quiet: bool

    @classmethod
    def of(cls, params: dict[str, Any]) -> Output:
        """Taken out of a command's parameters (what is left are the run's options)."""
        return cls(*(params.pop(f.name) for f in fields(cls)))


def start(spec: RunSpec, registry: PolicyRegistry, output: Output) -> None:
    """Run `spec` into a new folder of `output.out` and write its report."""
    from harness.base.locking import RunLock
    from harness.cli.progress import watching
    from harness.models.catalog import model_factory
    from harness.results.rundir import claimed
    from harness.run.batch import Runtime, run_batch

    quiet = output.quiet
    if spec.run_once() and not quiet:
        echo(
            f"note: {', '.join(spec.run_once())} is deterministic: --repetitions {spec.repetitions} would repeat "
            "identical results, so it runs once (other models run every repetition)",
            err=True,
        )
    factory = model_factory(spec.options, spec.seed)  # refuses a bad --base-url before anything is written
    with (
        claimed(output.out, output.run_id) as (run_id, directory),
        RunLock(directory, "run"),
    ):  # held until the report is written
        if not spec.shard:  # a report that could not be written is refused before the run, not after it
            from harness.report.document import check_report_place

            check_report_place(output.reports, run_id, force=False, run_folder=directory)
        if not quiet:
            of = f" (shard {spec.shard.label} of the batch)" if spec.shard else ""
            echo(f"running {plural(len(spec.conversations()), 'conversation')}{of} into {directory}", err=True)
            if spec.options.rate_limits.any:
                echo(f"rate limits per model: {spec.options.rate_limits.describe()}", err=True)
        with guarded(directory), watching(quiet) as progress:
            runtime = Runtime(registry, factory, progress, notice)
            data = run_batch(spec, directory, run_id, runtime)
        conclude(directory, data, output.reports, output.charts)


def notice(text: str) -> None:
    """A batch's notice (Ctrl-C), on stderr beside the progress lines."""
    echo(text, err=True)


def given_options() -> dict[str, object]:
    """The parameters of the current command typed on the command line (not left at their defaults)."""
    ctx = click.get_current_context()
    typed = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    return {name: value for name, value in ctx.params.items() if ctx.get_parameter_source(name) in typed}


def resume_run(directory: Path, reports: Path, registry: PolicyRegistry, quiet: bool, charts: bool = True) -> None:
    """Finish an interrupted run and its report; of a complete run, finish only the report.
    Options given beside `--resume` must repeat the run's own (harness.run.resume)."""
    from harness.base.locking import RunLock
    from harness.cli.progress import watching
    from harness.models.catalog import model_factory
    from harness.results.reader import read_manifest
    from harness.run.batch import Runtime, resume_batch
    from harness.run.manifest import options_of
    from harness.run.resume import refuse_conflicts

    recorded = read_manifest(directory)
    refuse_conflicts(directory, recorded, given_options(), registry)
    if recorded.cache_dir:
        check_writable_folder(Path(recorded.cache_dir), "the run's --cache-dir")
    with RunLock(directory, "resume"):  # held until the report is written
        for note in sweep(directory):  # what the run left, killed mid-write (the lock is ours now)
            echo(note, err=True)
        with guarded(directory), watching(quiet) as progress:
            try:
                factory = model_factory(options_of(recorded), recorded.seed)
                runtime = Runtime(registry, factory, progress, notice)
                data = resume_batch(directory, runtime)
            except RunComplete:
                echo(f"{directory}: the run was already complete; writing its report", err=True)
                data = read_manifest(directory)
        conclude(directory, data, reports, charts)


def conclude(directory: Path, data: Manifest, reports: Path, charts: bool = True) -> None:
    """Write the report, print where things are, and exit 3 when conversations ended in errors.

    A shard's report would show a slice of the comparison: its report waits for `harness merge`."""
    shard = data.shard or {}
    if shard.get("index") is not None:
        echo(
            f"results: {directory} (shard {shard['index']}/{shard['count']})\n"
            f"when every shard is done: harness merge OUT SHARD_FOLDER... (all {shard['count']})"
        )
    else:
        with guarded(directory, report=True):
            from harness.report.document import write_report  # pandas and matplotlib: only when a report is written

            path = write_report([directory], reports, charts, notice)
        echo(f"results: {directory}\nreport:  {path}")
    counts = data.conversations
    failed = counts.get("error", 0)
    if failed:
        raise ConversationsFailed(
            f"{failed} of {counts['total']} conversations ended in an error (the report's "
            f"'Policy stops and errors' says where and why); results and report are written"
        )


@contextmanager
def guarded(directory: Path, report: bool = False) -> Iterator[None]:
    """Faults once a run's records exist: say they are kept and how to finish the run."""
    try:
        yield
    except KeyboardInterrupt as exc:
        if (directory / "manifest.json").exists():
            say(
                f"\ninterrupted: the finished conversations are kept in {directory}; "
                f"finish with: harness run --resume {directory}"
            )
        else:
            say("\ninterrupted before anything was recorded")
        if isinstance(exc, Cancelled):  # threads stuck in calls would hold up a normal exit
            with contextlib.suppress(OSError):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(exit_status(exc))
        sys.exit(exit_status(exc))
    except (HarnessError, OSError) as exc:
        if isinstance(exc, InputError) or not (directory / "manifest.json").exists():
            raise
        step = "its report failed" if report else "the run stopped"
        text = os_error_text(exc) if isinstance(exc, OSError) else str(exc)
        raise RunFailed(
            f"{text}; {step}: the records so far are kept in {directory} (see its manifest.json); "
            f"fix the cause, then: harness run --resume {directory}"
        ) from exc


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
def validate(paths: tuple[Path, ...]) -> None:
    """Check chronologies without running them (default: chronologies/): one line per file."""
    problems = []
    files = discover(list(paths) or [Path("chronologies")])
    for path in files:
        try:
            c = load_chronology(path)
        except ChronologyError as exc:
            problems += exc.problems
            continue
        echo(f"ok: {visible(str(c.path))} ({plural(len(c.turns), 'turn')}, {plural(len(c.probes), 'probe')})")
        echo_warnings([c])
    if problems or not files:
        chronologies_from(paths)  # the same single report of every problem as `harness run`


@main.command()
def policies() -> None:
    """List the installed policies with their parameters, in the order a plain `harness run` uses."""
    from harness.policy import PolicyRegistry

    registry = PolicyRegistry.installed()
    defaults = registry.working_default_specs()
    echo("A plain `harness run` compares: " + ", ".join(s.label for s in defaults))
    for set_name, members in registry.named_sets().items():  # `seed` first: the others extend it
        if set_name == "seed":
            seed = ", ".join(s.label for s in registry.seed_specs())
            echo(f"--policy seed selects exactly the seed's comparison: {seed}")
        else:
            echo(f"--policy {set_name} selects the seed's comparison, then {', '.join(members)}")
    echo("")
    for name in [
        *dict.fromkeys(s.name for s in defaults),
        *sorted(set(registry.factories) - {s.name for s in defaults}),
    ]:
        factory = registry.factories[name]
        params = ", ".join(f"{p.name}={p.default}" for p in factory.params) or "no parameters"
        echo(f"{name}  ({params})\n    {factory.description}")
        sets = ", ".join(registry.sets_of(name)) or "none"
        runs = "runs in a plain run" if registry.runs_by_default(name) else "runs only when named or with its set"
        echo(f"    sets: {sets}; {runs}")
        for p in factory.params:
            choices = f" [{'|'.join(p.choices)}]" if p.choices else ""
            echo(f"    {p.name}: {p.description}{choices}")
    for name, problem in sorted(registry.broken.items()):
        echo(f"{name}  (broken: not usable until fixed)\n    {problem}")


@main.command()
@click.argument("provider", type=click.Choice(sorted(PROVIDERS)))
@click.option(
    "--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="Port on 127.0.0.1 (0: a free one)."
)
@click.option(
    "--model",
    default="reference",
    show_default=True,
    help="The offline model answering: reference or reference:lossy[:k=v,...].",
)
@click.option(
    "--context-window",
    default=None,
    type=click.IntRange(min=1),
    help="The emulated model's context window, in estimated tokens (default: the emulator's, 128,000 for openai).",
)
@click.option(
    "--fault",
    "faults",
    multiple=True,
    metavar="NAME[:N]",
    help="Reproduce a documented failure, on every request or the first N (repeatable; docs/models.md lists them).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of reference:lossy's draws.")
def emulate(
    provider: str, port: int, model: str, context_window: int | None, faults: tuple[str, ...], seed: int
) -> None:
    """Serve a provider's API on 127.0.0.1, emulated offline, until Ctrl-C or SIGTERM; prints the base URL first."""
    import time

    from harness.emulate.providers import open_emulator
    from harness.emulate.server import serve

    emulator = open_emulator(provider, model, faults=faults, seed=seed, context_window=context_window)
    with contextlib.ExitStack() as stack:
        try:
            root = stack.enter_context(serve(emulator, port))
        except OSError as exc:  # the port is taken, or not ours to bind
            raise InputError(
                f"--port {port}: cannot serve on 127.0.0.1:{port} ({os_error_text(exc)}); "
                "give another port, or 0 for a free one"
            ) from exc
        echo(f"{root}{emulator.base_path}")
        sys.stdout.flush()  # the first line is what a script waiting for the server reads
        say(f"emulating {provider} with the offline model {model} on 127.0.0.1 only; Ctrl-C or SIGTERM stops it")
        while True:  # a signal ends the wait (interrupts.terminations raises in the main thread)
            time.sleep(3600)


@main.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@reports_option
@charts_option
@click.option("--force", is_flag=True, help="Replace a markdown file of the report's name the harness did not write.")
@click.option(
    "--prices",
    "prices_file",
    type=click.Path(path_type=Path),
    help="YAML prices per million tokens per model: the report shows what each policy's calls cost.",
)
@click.option(
    "--known-prices", is_flag=True, help="Price known model names with the genai-prices package (extra `prices`)."
)
def report(
    results: tuple[Path, ...], reports: Path, charts: bool, force: bool, prices_file: Path | None, known_prices: bool
) -> None:
    """Rebuild the report from results alone (no model calls); several RESULTS: side by side."""
    check_writable_folder(reports, "--reports")
    note_shards(results, "report")
    from harness.report.document import write_report  # pandas and matplotlib: only when a report is written
    from harness.report.known_prices import with_known
    from harness.report.prices import read_prices

    prices = read_prices(prices_file) if prices_file is not None else None  # checked before anything is written
    prices = with_known(prices) if known_prices else prices
    echo(write_report(list(results), reports, charts, notice, force, prices))


class FailOn(click.ParamType):
    """A `--fail-on` condition (harness.report.gate); a malformed one is a usage error."""

    name = "condition"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from harness.report.gate import Condition, parse_condition

        if isinstance(value, Condition):
            return value
        try:
            return parse_condition(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


@main.command()
@click.argument("run_a", type=click.Path(path_type=Path))
@click.argument("run_b", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "form",
    default="md",
    show_default=True,
    type=click.Choice(["md", "csv", "json"]),
    help="md: the comparison's sections; csv: one row per check of either run; json: every section as data.",
)
@click.option(
    "--reports",
    default=None,
    type=click.Path(path_type=Path),
    help="Write it to DIR/paired-<A>+<B>.<format> instead of printing it.",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    type=FailOn(),
    metavar="CONDITION",
    help='Exit 1 when a condition on passed→failed holds: "failed>=N" (flips) or "p<X" (a policy and check '
    "kind's Holm-adjusted p-value over conversations); repeatable.",
)
@click.option(
    "--allow-incomplete",
    is_flag=True,
    help="Compare a run that is interrupted or still being written: its finished conversations, saying what is "
    "missing.",
)
@click.option("--force", is_flag=True, help="With --reports: replace a file of that name the harness did not write.")
def compare(
    run_a: Path,
    run_b: Path,
    form: str,
    reports: Path | None,
    fail_on: tuple[Any, ...],
    allow_incomplete: bool,
    force: bool,
) -> None:
    """Pair each check of RUN_A with the same check of RUN_B: flips, a sign test over conversations, tokens."""
    from harness.base.files import write_atomic
    from harness.report.compare import compare_runs, file_name
    from harness.report.compare_render import render
    from harness.report.gate import verdict
    from harness.results.outputs import check_output, starts_as

    if reports is not None:
        check_writable_folder(reports, "--reports")
    note_shards((run_a, run_b), "comparison")
    comparison = compare_runs(run_a, run_b, notice, allow_incomplete)
    text = render(comparison, form)
    if reports is None:
        echo(text, nl=False)
    else:
        path = reports / file_name(comparison, form)
        head = "".join(
            text.splitlines(keepends=True)[: 3 if form == "json" else 1]
        )  # what only such a file starts with
        check_output(path, "--reports", force, lambda found: starts_as(found, head))
        if form == "md":
            from harness.report.document import check_index

            check_index(reports, force, "give another --reports folder, or replace it with --force")
        reports.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
        if form == "md":
            from harness.report.document import write_index

            write_index(reports)
        echo(path)
    failed = verdict(list(fail_on), comparison.passed_to_failed, comparison.statistics, comparison.adjusted)
    if failed:
        say(failed)
        sys.exit(1)


def note_shards(folders: tuple[Path, ...], what: str) -> None:
    """A shard's results are a slice of its batch: say how to get the whole."""
    from harness.results.reader import read_manifest

    for folder in folders:
        shard = read_manifest(folder).shard or {}
        if shard.get("index") is not None:
            echo(
                f"note: {folder} is shard {shard['index']}/{shard['count']} of a batch; for the batch's {what}, "
                "merge its shards: harness merge OUT SHARD_FOLDER...",
                err=True,
            )


@main.command()
@click.argument("out", type=click.Path(path_type=Path))
@click.argument("shards", nargs=-1, required=True, type=click.Path(path_type=Path))
@reports_option
@charts_option
def merge(out: Path, shards: tuple[Path, ...], reports: Path, charts: bool) -> None:
    """Merge the shard folders of one batch (`harness run --shard K/N`) into the new results folder
    OUT, as one machine would have written it, and write its report."""
    check_writable_folder(reports, "--reports")
    from harness.run.merge import merge_shards

    directory, data = merge_shards(out, list(shards))
    conclude(directory, data, reports, charts)


@main.command()
def schema() -> None:
    """Print the JSON Schema of the chronology format."""
    echo(json.dumps(chronology_schema(), indent=2))


@main.command()
@click.argument("name")
@click.option("--agent", is_flag=True, help="Scaffold an agent chronology: turns with tool calls and results.")
def new(name: str, agent: bool) -> None:
    """Scaffold chronologies/NAME.yaml, commented.

    The scaffold validates and runs as it is; an existing file is never overwritten.
    """
    # Imported here so that this command stays self-contained at the end of the module.
    from harness.chronology.scaffold import write_scaffold

    path = write_scaffold(name, Path("chronologies"), agent)
    echo(f"wrote {path}\nnext: edit it, then `harness validate {path}` and `harness run {path}`")


@main.command("import")
@click.argument("format_name", metavar="FORMAT", type=click.Choice(FORMATS))
@click.argument("src", type=click.Path(path_type=Path))
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Folder the chronologies are written into.")
@click.option(
    "--accept-licence",
    default=None,
    metavar="NAME",
    help="Import a source whose licence is non-commercial (name it) or unknown (the name is recorded).",
)
@click.option("--force", is_flag=True, help="Replace chronologies of the same names in --out.")
@click.option("--probe-last", is_flag=True, help="openai-chat, sharegpt: the final user message is a probe.")
@click.option(
    "--expect",
    "expect_file",
    default=None,
    type=click.Path(path_type=Path),
    help="openai-chat, sharegpt: expectations by item id (JSONL, JSON or YAML).",
)
@click.option(
    "--category",
    default=None,
    metavar="TEXT",
    help="openai-chat, sharegpt: every item's category (source.category), by which the report groups items.",
)
@click.option(
    "--sessions",
    default="joined",
    show_default=True,
    type=click.Choice(["joined", "separate"]),
    help="longmemeval: every history session and the question in one history, or each its own.",
)
@click.option(
    "--facts-per-turn",
    default=50,
    show_default=True,
    type=click.IntRange(min=1),
    help="factconsolidation: numbered facts in one user turn.",
)
@click.option(
    "--max-input-bytes",
    default=1024**3,
    show_default=True,
    type=click.IntRange(min=1),
    help="The largest input file read.",
)
@click.option(
    "--skip-invalid",
    is_flag=True,
    help="Import the valid items; list each item passed over, and why, on stderr (default: one refuses all).",
)
def import_(
    format_name: str,
    src: Path,
    out: Path,
    accept_licence: str | None,
    force: bool,
    probe_last: bool,
    expect_file: Path | None,
    category: str | None,
    sessions: str,
    facts_per_turn: int,
    max_input_bytes: int,
    skip_invalid: bool,
) -> None:
    """Turn a chat log or a benchmark's file (FORMAT: openai-chat, sharegpt, multichallenge,
    longmemeval, factconsolidation, compactbench) into one chronology per item in --out; all are
    written, or none (with --skip-invalid: every valid one, each other listed)."""
    from harness.importing.formats import ImportOptions, import_file  # imported here: only this command needs it
    from harness.importing.source import Skips

    options = ImportOptions(
        accept_licence, force, probe_last, expect_file, sessions, facts_per_turn, max_input_bytes, category
    )
    skips = Skips(enabled=skip_invalid)
    check_outside_runs(out, "--out")  # chronologies written among a run's records
    for note in sweep(out):  # what an import into this folder left, killed mid-way
        echo(note, err=True)
    try:
        written = import_file(format_name, src, out, options, skips)
    except (
        OSError
    ) as exc:  # a write failed without its file's name (a full disk): say where, and that it was all or none
        if exc.errno not in MACHINE_ERRNOS or exc.filename is not None:
            raise
        raise HarnessError(
            f"--out {path_shown(out)}: {exc.strerror or exc}; nothing of this import was written (an import is "
            "all or none): free space there, or import into another --out folder"
        ) from None
    for reason in skips.reasons:
        echo(f"skipped {reason}", err=True)
    if skips.reasons:
        echo(f"skipped {plural(len(skips.reasons), 'item')} (--skip-invalid); each is listed above", err=True)
    echo(f"wrote {plural(len(written), 'chronology', 'chronologies')} into {visible(str(out))}")
    echo(f"next: `harness validate {visible(str(out))}` and `harness run {visible(str(out))}`")


@main.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.option("--chronology", required=True, help="Chronology name (its file name without .yaml).")
@click.option("--turn", required=True, type=int, help="Turn number, as in the report.")
@click.option("--policy", default=None, help="One policy (default: every policy of the run, in declared order).")
@click.option(
    "--diff", nargs=2, default=None, metavar="P1 P2", help="What each policy's view has that the other's lacks."
)
@click.option("--model", default=None, help="Model (default: the run's first).")
@click.option("--repetition", default=1, show_default=True, type=int, help="Which repetition to show.")
def show(
    results: Path,
    chronology: str,
    turn: int,
    policy: str | None,
    diff: tuple[str, str] | None,
    model: str | None,
    repetition: int,
) -> None:
    """Print exactly what the model was sent at one turn, and what each policy kept after it."""
    from harness.report.show import show_text  # imported here to keep this command self-contained

    echo(show_text(results, chronology, turn, policy, diff, model, repetition), nl=False)


@main.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "format_name",
    required=True,
    type=click.Choice(["longmemeval", "otel"]),
    help="longmemeval: the benchmark scorer's file (question_id and hypothesis per line); "
    "otel: OpenTelemetry traces (OTLP/JSON, a trace per conversation).",
)
@click.option("--out", required=True, type=click.Path(path_type=Path), help="The file to write (JSON Lines).")
@click.option(
    "--include-content",
    is_flag=True,
    help="otel: also the messages sent and the replies (gen_ai.input.messages, gen_ai.output.messages).",
)
@click.option("--policy", default=None, help="The policy whose answers to write; needed when the run has several.")
@click.option("--model", default=None, help="The answering model whose answers to write; needed when it has several.")
@click.option(
    "--repetition", default=1, show_default=True, type=click.IntRange(min=1), help="Which repetition's answers."
)
@click.option("--force", is_flag=True, help="Replace a file already at --out (never one in a results folder).")
def export(
    results: Path,
    format_name: str,
    out: Path,
    include_content: bool,
    policy: str | None,
    model: str | None,
    repetition: int,
    force: bool,
) -> None:
    """Write a run, from the results alone, as another tool reads it: one policy's answers as a
    benchmark's own scorer reads them (LongMemEval's hypothesis file: one {question_id,
    hypothesis} per item), or the whole run as OpenTelemetry traces for a trace viewer."""
    from harness.report.document import check_whole
    from harness.report.export import longmemeval
    from harness.results.outputs import check_output, write_output
    from harness.results.tables import load_results

    if format_name != "otel" and include_content:
        raise InputError("--include-content is for --format otel (a scorer's file holds the answers already)")
    if format_name == "otel" and (policy is not None or model is not None or repetition != 1):
        raise InputError(
            "--format otel writes every conversation of the run: leave out --policy, --model, --repetition"
        )
    check_output(out, "--out", force)  # never into a run, never over a file unasked
    check_writable_folder(out.parent, "--out's folder")
    loaded = load_results(results)
    check_whole(loaded, notice)  # as `report` does: answers of edited records would be scored as the run's
    if format_name == "otel":
        from harness.report.otel import otel_lines

        lines = list(otel_lines(loaded, include_content))
        write_output(out, "".join(line + "\n" for line in lines), "--out", force)
        content = " with message content" if include_content else " (no message content: --include-content adds it)"
        echo(f"{plural(len(lines), 'trace')} (one per conversation) written to {out} as OTLP/JSON{content}")
        return
    found = longmemeval(loaded, policy, model, repetition)
    write_output(out, found.text, "--out", force)
    missing = f"; {plural(len(found.unanswered), 'item')} without an answer left out" if found.unanswered else ""
    echo(f"{plural(found.written, 'hypothesis', 'hypotheses')} written to {out}{missing}")


@main.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.option(
    "--judge-prompt",
    "prompt",
    required=True,
    type=click.Path(path_type=Path),
    help="A second rubric prompt, with {question}, {answer} and {rubric} where they go.",
)
@click.option(
    "--out",
    default=None,
    type=click.Path(path_type=Path),
    help="Where the new verdicts go (JSON Lines); default: reports/RUN-ID-rejudged-PROMPT.jsonl.",
)
@click.option("--force", is_flag=True, help="Replace a file already at --out (never one in a results folder).")
def rejudge(results: Path, prompt: Path, out: Path | None, force: bool) -> None:
    """Ask the run's judge again about each rubric it judged, through a second prompt, and print how
    the two prompts' verdicts agree (plain agreement and Cohen's kappa). The run is not changed."""
    from harness.models.catalog import model_factory
    from harness.report.document import check_whole
    from harness.report.names import rejudged_stem
    from harness.results.outputs import check_output, write_output
    from harness.results.reader import read_manifest
    from harness.results.tables import load_results
    from harness.run.manifest import options_of
    from harness.run.rejudge import agreement, failed_calls, read_prompt, recorded_chronologies, records, rejudge

    text = read_prompt(prompt)
    loaded = load_results(results)
    check_whole(loaded, notice)  # as `report` does: verdicts of edited records would be compared as the run's
    recorded = read_manifest(results)
    options = options_of(recorded)
    if options.judge is None:
        raise InputError(f"{results}: the run had no --judge, so no rubric was judged; run again with --judge MODEL")
    chronologies = recorded_chronologies(recorded.chronologies)
    target = out or Path("reports") / f"{rejudged_stem(recorded.run_id, prompt.stem)}.jsonl"
    check_output(target, "--out", force)  # before any judge call: never into a run, never over a file unasked
    check_writable_folder(target.parent, "--out's folder")
    with contextlib.ExitStack() as stack:
        judge = model_factory(options, recorded.seed or 0)(options.judge, stack)
        found = rejudge(loaded, chronologies, judge, text)
    write_output(target, records(found), "--out", force)
    echo(f"{len(found)} rubric verdicts asked again of {options.judge} with {prompt}: {agreement(found).text()}")
    echo(f"verdicts: {target}")
    if failed := failed_calls(found):  # as `run` exits 3 when conversations ended in errors
        raise ConversationsFailed(
            f"{failed} of {len(found)} judge calls failed after their retries (each record's note says why); "
            f"the verdicts are written to {target}"
        )
