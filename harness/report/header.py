"""The report's opening: its one-line summary, what ran, and the caveats every reader needs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.base.capabilities import LITERAL, Capabilities
from harness.report.cells import plural
from harness.report.comparison import Comparison, unique
from harness.report.markdown import cell, table
from harness.report.token_figures import CALL_KINDS
from harness.report.tokenizer_fit import fit_caveats, ratios
from harness.report.totals import CallCounts
from harness.results.capabilities import recorded_capabilities
from harness.results.rows import Manifest
from harness.results.tables import Results

# The line naming the charts' matplotlib (the test of the committed example sets it aside).
CHARTS_NOTE = "Charts drawn with matplotlib "  # then its version: the PNG bytes depend on it
NO_CHARTS_NOTE = "Charts not drawn (`--no-charts`): tables only."

REFERENCE_CAVEAT = (
    "The `reference` model is a deterministic literal reader built into the harness: it answers "
    "only from its request view. It shows what each policy puts in front of a model; it qualifies "
    "no model, and its answers say nothing about how a real model would answer."
)
LOSSY_CAVEAT = (
    "`reference:lossy` is that reader degraded on purpose: its summarizer drops clauses, its fact writer "
    "omits declarations, its answers ignore older turns or give a corrected key's previous value, each drawn "
    "from a seed (its parameters are under What ran) and recorded per call in calls.jsonl `degraded`. Its "
    "failures are made, not observed: it is not a real model and says nothing about how one fails; it is "
    "there to try the harness and to test comparisons offline."
)
# The roles the built-in policies give the offline reference model, and what its stand-ins do.
IDEALIZED_ROLES = {
    "summarizer": (
        "its summarizer keeps every declaration and the last four other statements, within the cap its "
        "prompt states (declarations, then prohibitions, the most recent first, when they do not all fit)"
    ),
    "writer": "its fact writer proposes exactly the user's explicit declarations, which the store then admits",
}
TOKEN_CAVEAT = (
    "Token figures are kept apart and labelled: **estimate** is characters/4 (rounded up); "
    "**tiktoken** is a local tokenizer count (message contents plus 4 per message and 3 per request); "
    "**provider-reported** is what the provider returned. Neither the estimate nor the tiktoken count "
    "is billed tokens or cost. A provider-reported total over calls of which any reported nothing is "
    "`unknown`, with how many of how many calls reported; the token figures then give the sum over the calls "
    "that did report, as such, never as the total."
)
SCRIPTED_CAVEAT = (
    "Fixed replay: a turn with a scripted reply makes no answer call; its request-view size is what the "
    "policy would have sent. Token totals count only calls that were made."
)


def status_text(manifest: Manifest, writer: str | None = None) -> str:
    """The run's status in words; `writer`: the process still writing it (`Results.writer`), which
    a resume would only be refused by: the run is named as being written, not as stopped."""
    counts = dict(manifest.conversations)
    total = counts.pop("total", None)
    done = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    status = manifest.status
    if status != "complete":
        why = {
            "running": "still running, or killed",
            "interrupted": "interrupted (Ctrl-C)",
            "failed": f"failed ({manifest.error or 'no reason recorded'})",
        }.get(str(status), "not complete")
        todo = "`harness run --resume` finishes it"
        if writer is not None:
            why, todo = f"still being written by {writer}", "wait for it to end, then report it again"
        return f"status {status}: {why}, {done or 'none finished'} of {total} conversations; {todo}"
    return f"{total} conversations: {done}"


def run_status(run: Results) -> str:
    return status_text(run.manifest, run.writer)


def run_outline(run: Results) -> str:
    m = run.manifest
    return (
        f"{plural(len(m.chronologies), 'chronology', 'chronologies')} × "
        f"{plural(len(m.policies), 'policy', 'policies')} × {cell(', '.join(m.models))} × "
        f"{plural(m.repetitions, 'repetition')}{once_text(m)}, {cell(run_status(run))}"
    )


def run_once(manifest: Manifest) -> list[str]:
    """Models that ran one repetition of several requested: they are deterministic."""
    return [m for m, n in manifest.repetitions_run.items() if n < manifest.repetitions]


def once_text(manifest: Manifest) -> str:
    once = run_once(manifest)
    return f" ({', '.join(once)} once: deterministic)" if once else ""


def one_line(cmp: Comparison) -> str:
    """The report's summary sentence (also its line in `index.md`)."""
    if len(cmp.runs) == 1:
        return f"Run {cell(cmp.runs[0].run_id)}: {run_outline(cmp.runs[0])}."
    return "Side by side: " + "; ".join(f"run {cell(r.run_id)}: {run_outline(r)}" for r in cmp.runs) + "."


RUN_FACTS: tuple[tuple[str, Callable[[Manifest], object]], ...] = (
    ("started (UTC)", lambda m: m.started_at or "unknown"),
    ("ended (UTC)", lambda m: m.ended_at or "not ended"),
    ("resumed (UTC)", lambda m: ", ".join(m.resumed_at) or "never"),
    ("harness version", lambda m: m.harness_version or "unknown"),
    ("Python", lambda m: m.python or "unknown"),
    ("models", lambda m: ", ".join(model_text(m, name) for name in m.models)),
    ("summarizer, writer", lambda m: aux_models(m.model_options, m)),
    ("judge", lambda m: m.model_options.get("judge_model") or "none (pattern checks only)"),
    ("repetitions", lambda m: repetitions_text(m)),
    ("seed", lambda m: m.seed),
    ("sampling", lambda m: sampling_text(m)),
    ("samples", lambda m: m.samples or "not recorded (a run before `samples`)"),
    ("replay", lambda m: "live: the model answered every turn" if m.live else "fixed: scripted replies kept"),
    ("concurrency", lambda m: m.concurrency),
    ("local tokenizer", lambda m: f"{m.tokenizer['encoding']} ({tokenizer_state(m)})"),
)


def repetitions_text(manifest: Manifest) -> str:
    """Requested repetitions, and the models that ran once because they are deterministic."""
    once = run_once(manifest)
    if not once:
        return str(manifest.repetitions)
    return (
        f"{manifest.repetitions} requested; {', '.join(once)} ran once: deterministic, more repetitions "
        "would repeat identical results"
    )


def sampling_text(manifest: Manifest) -> str:
    """Temperature, top-p and the generation cap per call kind, as the run asked for them."""
    options = manifest.model_options
    used = capabilities_used(manifest)
    if all(c.reader == LITERAL for c in used):
        lossy = (
            " (reference:lossy draws its degradations from its seed)"
            if any(c.degrades_on_purpose for c in used)
            else ""
        )
        return f"not used: the reference model does not sample{lossy}"
    s = options.get("sampling")
    if not s:
        return "not recorded (a run before sampling options): no token cap was sent"
    top_p = "not sent" if s["top_p"] is None else s["top_p"]
    caps = ", ".join(f"{kind}={n}" for kind, n in s["max_tokens"].items())
    return f"temperature {s['temperature']}, top-p {top_p}, max tokens per call kind: {caps}"


def aux_models(options: dict, manifest: Manifest | None = None) -> str:
    names = (options.get(f"{role}_model") for role in ("summarizer", "writer"))
    return ", ".join(
        model_text(manifest, name) if name and manifest else name or "the answering model" for name in names
    )


def model_text(manifest: Manifest, name: str) -> str:
    """A model's name, and for `reference:lossy` the parameters it ran with (the manifest's
    `model_settings`), every one, defaults and the seed included."""
    settings = (manifest.model_settings or {}).get(name)
    lossy = recorded_capabilities(manifest, name).degrades_on_purpose
    if not lossy or not isinstance(settings, dict) or not isinstance(settings.get("parameters"), dict):
        return name
    params = ", ".join(f"{k}={'off' if v is None else v}" for k, v in settings["parameters"].items())
    seed_from = " from --seed" if settings.get("seed_from") == "--seed" else ""
    return f"{name} ({params}{seed_from})"


def tokenizer_state(manifest: Manifest) -> str:
    return "available" if manifest.tokenizer["available"] else "unavailable: tiktoken counts unknown"


def what_ran(
    cmp: Comparison, charts_drawn: bool = True, listed: Sequence[str] | None = None, note: str = ""
) -> list[str]:
    """The section; `listed`: the chronologies the table names (default: all), `note` said after it."""
    rows = [["status"] + [run_status(r) for r in cmp.runs]]
    rows += [[label] + [value(r.manifest) for r in cmp.runs] for label, value in RUN_FACTS]
    lines = [
        "## What ran",
        "",
        table([""] + [r.run_id for r in cmp.runs], rows),
        "",
        *([chronology_table(cmp, listed), ""] if listed is None or listed else []),
        *([note, ""] if note else []),
        policy_table(cmp),
        "",
        f"{CHARTS_NOTE}{matplotlib_version()}." if charts_drawn else NO_CHARTS_NOTE,
        "",
    ]
    if len(cmp.runs) > 1 or len(cmp.runs[0].manifest.models) > 1:
        lines += ["Columns are named `policy · model @ run` (model and run only when there are several).", ""]
    return lines


def chronology_table(cmp: Comparison, listed: Sequence[str] | None = None) -> str:
    many = len(cmp.runs) > 1
    rows = []
    for name in cmp.chronologies if listed is None else listed:
        entries = cmp.entries(name)
        hashes = unique(c["sha256"] for _, c in entries)
        sha = hashes[0] if len(hashes) == 1 else "; ".join(f"{run}: {c['sha256']}" for run, c in entries)
        first = entries[0][1]
        rows.append([name, first["title"], first["path"], sha] + ([", ".join(r for r, _ in entries)] if many else []))
    return table(["chronology", "title", "file", "sha256"] + (["runs"] if many else []), rows)


def policy_table(cmp: Comparison) -> str:
    many = len(cmp.runs) > 1
    rows = []
    for policy in unique(c.policy for c in cmp.columns):
        for run in (r for r in cmp.runs if policy in r.policy_order):
            params = next(p["params"] for p in run.manifest.policies if p["label"] == policy)
            row = [policy, ", ".join(f"{k}={v}" for k, v in params.items()) or "none"]
            rows.append(row + ([run.run_id] if many else []))
    return table(["policy (declared order)", "parameters"] + (["run"] if many else []), rows)


def caveats(cmp: Comparison, listed: Sequence[str] | None = None) -> list[str]:
    """The section; a chronology that differs between runs is named when `listed` (default:
    all), and the others that differ are counted (imported items: each page says so)."""
    named = len(cmp.runs) > 1
    lines = ["## Caveats", ""]
    used = [c for r in cmp.runs for c in capabilities_used(r.manifest)]
    if any(c.reader == LITERAL for c in used):
        lines.append(f"- {REFERENCE_CAVEAT}")
    if any(c.degrades_on_purpose for c in used):
        lines.append(f"- {LOSSY_CAVEAT}")
    totals = {r.run_id: cmp.tables[r.run_id].run_totals() for r in cmp.runs}  # added up block by block
    none = CallCounts(0, 0, {}, 0, 0, 0, 0, 0, 0, 0)
    counts = {r.run_id: totals[r.run_id].calls or none for r in cmp.runs}

    def led(run: Results, text: str) -> str:  # a run's caveat, led by its run when several ran
        return f"- Run {cell(run.run_id)}: {text[0].lower()}{text[1:]}" if named else f"- {text}"

    lines += [led(r, text) for r in cmp.runs if (text := idealized_caveat(r, totals[r.run_id].roles))]
    lines += [led(r, text) for r in cmp.runs if (text := lossy_roles_caveat(r, totals[r.run_id].roles))]
    lines += [led(r, text) for r in cmp.runs if (text := samples_caveat(r.manifest))]
    lines.append(f"- {TOKEN_CAVEAT}")
    for caveat in (usage_caveat, cut_caveat, retries_caveat):
        lines += [led(r, text) for r in cmp.runs if (text := caveat(counts[r.run_id]))]
    lines += [led(r, text) for r in cmp.runs if (text := rate_limits_caveat(r, counts[r.run_id]))]
    lines += [led(r, text) for r in cmp.runs for text in tokenizer_caveats(cmp, r)]
    lines += [
        f"- Run {cell(r.run_id)}: the tiktoken encoding could not be loaded; every tiktoken figure is unknown."
        for r in cmp.runs
        if not r.manifest.tokenizer["available"]
    ]
    if any(not r.manifest.live for r in cmp.runs):
        lines.append(f"- {SCRIPTED_CAVEAT}")
    if any(r.manifest.repetitions > 1 for r in cmp.runs):
        lines.append(
            "- With repetitions, cells count across repetitions (k/n) and sizes show min–max when "
            "repetitions differ; nothing is averaged away."
        )
    lines += [
        f"- Chronology {cell(name)} differs between runs (sha256 differ): its columns replay different files."
        for name in (cmp.chronologies if listed is None else listed)
        if differs(cmp, name)
    ]
    unlisted = [] if listed is None else [n for n in cmp.chronologies if n not in set(listed) and differs(cmp, n)]
    if unlisted:
        lines.append(
            f"- {plural(len(unlisted), 'imported item')} {'differs' if len(unlisted) == 1 else 'differ'} between "
            "runs (sha256 differ): their columns "
            "replay different files; each item's page gives both."
        )
    return lines + [""]


def capabilities_used(manifest: Manifest) -> list[Capabilities]:
    """What each model a run named (answering, mapped to a role, judging) could do, as the run recorded it."""
    options = manifest.model_options
    named = {*manifest.models, *(options.get("model_roles") or {}).values(), options.get("judge_model")} - {None}
    return [recorded_capabilities(manifest, name) for name in named]


def played_by(run: Results, roles: set[tuple[Any, Any]], stood_in: Callable[[Capabilities], bool]) -> set[str]:
    """The call kinds of `roles` (the distinct (call_model, kind) of a run's calls) whose model,
    as `run` recorded it, is one `stood_in` accepts."""
    manifest = run.manifest
    return {
        str(kind)
        for model, kind in roles
        if model is not None and stood_in(recorded_capabilities(manifest, str(model)))
    }


def differs(cmp: Comparison, chronology: str) -> bool:
    return len(unique(c["sha256"] for _, c in cmp.entries(chronology))) > 1


def cut_caveat(counts: CallCounts) -> str | None:
    """How many replies the token cap cut (`finish_reason: length`); None when none was."""
    if not counts.cut:
        return None
    others = counts.cut - counts.cut_answers
    more = f", and {others} of {counts.calls - counts.answers} other calls," if others else ""
    return (
        f"{counts.cut_answers} of {counts.answers} answer calls{more} "
        "ended with `finish_reason: length`: cut by the token cap (`--max-tokens`). Their text is incomplete, "
        "and a check on it may fail for that reason; such answers are marked `[cut by the token cap]` under "
        '"Answers at probes".'
    )


def idealized_caveat(run: Results, roles: set[tuple[Any, Any]]) -> str | None:
    """Which policy roles the offline reference model played in the run (`roles`: the distinct
    (call_model, kind) of its calls), and that its stand-ins are idealized; None when it played
    none (a real model, or the chronology's scripted outputs)."""
    played = played_by(run, roles, lambda c: c.reader == LITERAL and not c.degrades_on_purpose) & set(IDEALIZED_ROLES)
    if not played:
        return None
    roles = "; ".join(f"{IDEALIZED_ROLES[role]}" for role in sorted(played))
    mapped = ", ".join(f"`--model-role {role}=MODEL`" for role in sorted(played))
    return (
        f"The offline `reference` model stood in for the policies' {' and '.join(sorted(played))} calls: "
        f"{roles}. These are idealized: the summary and fact-store columns show what those policies lose "
        f"with a perfect stand-in, not what a real model's summaries and extractions lose; map the role to a "
        f"real model to see that ({mapped})."
    )


def lossy_roles_caveat(run: Results, roles: set[tuple[Any, Any]]) -> str | None:
    """Which policy roles `reference:lossy` played in the run (`roles`: the distinct (call_model,
    kind) of its calls): the idealized stand-ins, degraded on purpose; None when it played none."""
    played = sorted(played_by(run, roles, lambda c: c.degrades_on_purpose) & set(IDEALIZED_ROLES))
    if not played:
        return None
    mapped = ", ".join(f"`--model-role {role}=MODEL`" for role in played)
    return (
        f"The offline `reference:lossy` model stood in for the policies' {' and '.join(played)} calls: the "
        "reference stand-ins degraded on purpose, as its seed drew (each clause dropped from a summary, each "
        "declaration a writer omitted, is in calls.jsonl `degraded`). They are not a real model's summaries and "
        f"extractions either; map the role to a real model to see those ({mapped})."
    )


def retries_caveat(counts: CallCounts) -> str | None:
    """How many retries the run's calls took; None when none did."""
    if not counts.retries:
        return None
    return (
        f"{plural(counts.retries, 'retry', 'retries')} in "
        f"{counts.retried} of {plural(counts.calls, 'model call')} (429, 5xx, timeouts and dropped connections "
        "asked again; a structured-output form the endpoint refused is not counted). Their latencies include the "
        "retries and the waits; each chronology's token figures show them per policy."
    )


def limits_text(record: dict[str, Any]) -> str | None:
    """`--max-rpm 60, --max-tpm none` as the manifest records them (`model_options.rate_limits`),
    with each shard's share when split; None when no limit was set (or a run before them)."""
    if record.get("max_rpm") is None and record.get("max_tpm") is None:
        return None
    said = f"--max-rpm {_figure(record.get('max_rpm'))}, --max-tpm {_figure(record.get('max_tpm'))}"
    shards = int(record.get("shards") or 1)
    if shards == 1:
        return said
    share = [f"{n:,} {unit}" for unit in ("rpm", "tpm") if (n := record.get(f"shard_{unit}")) is not None]
    return f"{said} for the batch; each of {shards} shards: {', '.join(share)}"


def _figure(value: int | None) -> str:
    return "none" if value is None else f"{value:,}"


def rate_limits_caveat(run: Results, counts: CallCounts) -> str | None:
    """What `--max-rpm`/`--max-tpm` and HTTP 429 did to the run's requests; None when no limit
    was set and no 429 came."""
    limits = limits_text(run.manifest.model_options.get("rate_limits") or {})
    paced = counts.pacing
    if not limits and not paced.http_429:
        return None
    head = f"Rate limits per model ({limits})" if limits else "Rate limits (none set)"
    if paced.waits:
        said = (
            f"requests waited {plural(paced.waits, 'time')} before being sent, {paced.waited_ms / 1000:,.1f} s in all"
        )
    else:
        said = "no request waited to be sent"
    if paced.http_429:
        said += (
            f"; the endpoint answered HTTP 429 (Too Many Requests) {plural(paced.http_429, 'time')}, each retried as "
            "--max-retries allows"
        )
    if paced.concurrency_low is not None:
        said += (
            f"; the calls in flight to a model fell to {paced.concurrency_low} after them (halved on a 429, one more "
            "after each run of successes)"
        )
    return f"{head}: {said}. Latencies include these waits; calls.jsonl has them per call."


def tokenizer_caveats(cmp: Comparison, run: Results) -> list[str]:
    """A sentence per model whose provider-reported prompt tokens are far from the tiktoken count."""
    if not run.manifest.tokenizer.get("available"):
        return []
    found = ratios(cmp.tables[run.run_id].run_totals().prompts)  # summed block by block
    return fit_caveats(found, run.manifest.tokenizer["encoding"])


def samples_caveat(manifest: Manifest) -> str | None:
    """Whether the policies' sampled answers are one draw or independent ones (the manifest's
    `samples`); None when nothing was sampled (temperature 0, deterministic models) or not recorded."""
    samples = manifest.samples or ""
    temperature = (manifest.model_options.get("sampling") or {}).get("temperature")
    if not temperature or not samples.startswith(("shared", "independent")):
        return None
    if all(c.reader == LITERAL for c in capabilities_used(manifest)):
        return None  # nothing sampled: reference:lossy draws from its seed (LOSSY_CAVEAT)
    if samples.startswith("shared"):
        return (
            f"Sampled answers (temperature {temperature}) are shared across policies within a repetition: "
            "policies that sent an identical request in the same repetition got one response from the response "
            "cache, so their answers there are one draw, not independent ones. Each policy's own figures hold, "
            "and comparisons between policies, paired by repetition, gain from it (common random numbers); "
            "`--independent-samples` gives each policy its own draw."
        )
    return (
        f"Sampled answers (temperature {temperature}) are independent per policy: each policy's calls were "
        f"requests of their own, each policy and repetition with a seed of its own (--seed {manifest.seed} plus "
        "its draw), so an endpoint that honours the seed draws anew."
    )


def usage_caveat(counts: CallCounts) -> str:
    if not counts.calls:
        return "Provider-reported usage: no model call was made."
    parts = [
        f"{kind} {counts.by_kind[kind][0]} of {counts.by_kind[kind][1]}"
        for kind in CALL_KINDS
        if kind in counts.by_kind
    ]
    reported, invalid, cached = counts.reported, counts.invalid, counts.cached
    returned = (
        "returned none"
        if not invalid
        else (
            f"returned none, or for {plural(invalid, 'call')} a value that is not a token count, kept raw in "
            "`calls.jsonl` as `invalid_reported_usage`"
        )
    )
    why = (
        ""
        if reported == counts.calls
        else (
            "; every provider-reported total that includes a call without usage is `unknown` (the model or "
            f"endpoint {returned}; it is never replaced by an estimate)"
        )
    )
    reuse = (
        ""
        if not cached
        else (
            f" {plural(cached, 'call')} came from the response cache (an identical request made before, in this "
            "run or an earlier one): no request was sent, and the provider-reported usage shown for them is "
            "the original response's."
        )
    )
    return (
        f"Provider-reported usage: {reported} of {counts.calls} model calls reported it "
        f"({', '.join(parts)}){why}.{reuse}"
    )


def matplotlib_version() -> str:
    """The version of the matplotlib that draws the charts (imported only when they are drawn)."""
    from harness.report.charts import VERSION

    return VERSION
