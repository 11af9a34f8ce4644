"""`harness merge OUT DIR...`: the N shard folders of one batch as the folder one machine writes.

Each shard folder holds its conversations grouped in plan order (`harness.run.batch`); the merge
copies every record file's records, byte for byte, grouped by conversation in the order of the
whole batch, so the merged folder is the one `harness run` without `--shard` writes, apart from
times (started/ended, latencies). Records are copied as spans, never held in memory together.

Folders are refused, before anything is written, unless they are every shard of one batch, each
once and each complete: same manifest apart from the fields a machine decides (`harness.run.manifest.comparison`:
times, run id, status, where the model servers are, concurrency, the cache's folder, and the
paths of the chronology and batch files, whose sha256 must agree), and
together every conversation of the batch exactly once. The merged manifest is shard 1's, with
the times spanning all shards, the conversation counts summed, and `shard` naming the shards.

What a manifest claims is checked before anything is built from it: the types and ranges of
its counts (`refuse_odd_types`: a shard K/N with N at most `MAX_SHARDS`, whole repetitions and
counts), then the batch they make (at most `MAX_CONVERSATIONS`) and its count of conversations
within that batch (`check_claims`). A manifest claiming 10¹² conversations is refused in a
line, not built.
"""

from __future__ import annotations

import copy
import os
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from harness.base.errors import InputError, RunInUse
from harness.base.files import create_new
from harness.base.identity import RunKey
from harness.base.locking import RunLock
from harness.results.digests import settings_digests
from harness.results.integrity import check, file_digests
from harness.results.order import record_spans
from harness.results.outputs import check_outside_runs
from harness.results.plan import check_plan_size, plan_order, plan_size
from harness.results.reader import RECORD_FILES, each_record, read_manifest
from harness.results.rows import DIGESTS_FROM, Manifest
from harness.results.rundir import claimed
from harness.results.writer import RUN_ID, write_json_atomic
from harness.run.manifest import comparison
from harness.run.shards import MAX_SHARDS

__all__ = ["merge_shards", "plan_keys"]


def merge_shards(out: Path, folders: Sequence[Path]) -> tuple[Path, Manifest]:
    """Merge the shard `folders` into the new folder `out`; return it and its manifest."""
    if not folders:
        raise InputError("harness merge OUT DIR...: give the shard folders to merge")
    if out.exists():
        raise InputError(f"{out} already exists; merge into a new folder (OUT names it)")
    check_outside_runs(out, "OUT")  # a merged run nested in another run's folder
    if not RUN_ID.fullmatch(out.name):
        raise InputError(
            f"{out}: the folder's name is the merged run's id: start it with a letter or digit, "
            "then use letters, digits, '.', '_' and '-' only"
        )
    with ExitStack() as stack:
        for folder in folders:
            hold(folder, stack)
        shards = ordered_shards(folders)
        check_whole(shards)
        order = {key: place for place, key in enumerate(plan_keys(shards[0][1]))}
        check_conversations(shards, order)
        with claimed(out.parent, out.name) as (run_id, directory), RunLock(directory, "merge"):
            for name in RECORD_FILES:
                copy_records(name, [folder for folder, _ in shards], directory, order)
            data = with_digests(merged_manifest(run_id, shards, directory), directory)
            write_json_atomic(directory / "manifest.json", data)
    return directory, read_manifest(directory)


def hold(folder: Path, stack: ExitStack) -> None:
    """Lock a shard folder while it is read, so no resume writes to it meanwhile; one that cannot
    be locked because it is read-only (collected from the machines) cannot be written either."""
    if not (folder / "manifest.json").is_file():
        read_manifest(folder)  # says what the folder is not
    try:
        stack.enter_context(RunLock(folder, "merge"))
    except RunInUse:
        raise
    except InputError:
        if os.access(folder, os.W_OK):
            raise


def ordered_shards(folders: Sequence[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """The folders with their manifests, by shard index; refused unless all shards of one batch."""
    found: dict[int, tuple[Path, dict[str, Any]]] = {}
    count = None
    for folder in folders:
        data = read_manifest(folder).as_record()  # compared and merged as the JSON it is
        refuse_odd_types(folder, data)
        shard = data.get("shard")
        if not isinstance(shard, dict) or shard.get("index") is None:
            what = "a merge already" if isinstance(shard, dict) else "not a shard (run without --shard)"
            raise InputError(f"{folder}: {what}; merge takes the folders of `harness run --shard K/N`")
        check_claims(folder, data)
        index, n = shard["index"], shard["count"]
        if count is not None and n != count:
            raise InputError(f"{folder} is shard {index}/{n} but {folders[0]} is of {count}: give shards of one batch")
        count = n
        if index in found:
            raise InputError(f"shard {index}/{n} is given twice ({found[index][0]} and {folder}): give each once")
        if data.get("status") != "complete":
            raise InputError(
                f"{folder}: shard {index}/{n} is {data.get('status')}, not complete; "
                f"finish it with `harness run --resume {folder}`, then merge"
            )
        found[index] = (folder, data)
    assert count is not None
    missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in found]
    if missing:
        raise InputError(f"shard {', '.join(missing)} missing: give all {count} shard folders of the batch")
    shards = [found[k] for k in range(1, count + 1)]
    first_folder, first = shards[0]
    for folder, data in shards[1:]:
        where = first_difference(comparison(first), comparison(data))
        if where is not None:
            raise InputError(
                f"{folder} is not a shard of the same batch as {first_folder}: its manifest differs at {where}; "
                "shards must run the same chronologies (unchanged), policies, models and options"
            )
    return shards


def check_claims(folder: Path, data: dict[str, Any]) -> None:
    """The batch a shard's manifest claims (its counts' types checked by `refuse_odd_types`)
    within the bound, before anything is built from it, and its count of conversations within it."""
    runs = data["repetitions_run"]
    size = plan_size(len(data["chronologies"]), len(data["policies"]), [runs[model] for model in data["models"]])
    check_plan_size(size, f"{folder}: the batch its manifest claims")
    total = data["conversations"]["total"]
    if total > size:
        raise InputError(
            f"{folder / 'manifest.json'}: it claims {total:,} conversations of a batch of {size:,}; the manifest "
            "was changed after the harness wrote it: restore it, or run that shard again"
        )


def check_whole(shards: list[tuple[Path, dict[str, Any]]]) -> None:
    """Refuse a shard whose records are not as written (harness.results.integrity): a row
    deleted, a line duplicated, a file cut short. A shard of format version 2 recorded no
    digests: it merges unverified."""
    for folder, _ in shards:
        manifest = read_manifest(folder)
        verdict = check(folder, manifest, None)
        if verdict.mismatches:
            todo = (
                f"`harness run --resume {folder}` runs the conversations concerned again"
                if verdict.repairable
                else "restore it from a copy, or run that shard again"
            )
            raise InputError(
                f"{folder}: {verdict.summary()}: shard {manifest.shard['index']}/{manifest.shard['count']} was "
                f"changed after the harness wrote it; {todo}, then merge"
            )


def with_digests(data: dict[str, Any], directory: Path) -> dict[str, Any]:
    """The merged manifest with the digests of its settings (its `shard` is the merge's) and of
    the files just written; none for shards of format version 2, which recorded none."""
    if data["format_version"] < DIGESTS_FROM:
        return data
    data = {**data, "files": file_digests(directory)}
    return {**data, "settings_sha256": settings_digests(data)}


def refuse_odd_types(folder: Path, data: dict[str, Any]) -> None:
    """Refuse, with one message, a shard manifest whose fields the merge reads hold values of
    another type than the harness writes (an edited manifest: `"index": "1"`, a list of counts)."""
    problem = odd_type(data)
    if problem is not None:
        raise InputError(
            f"{folder / 'manifest.json'}: {problem}; the manifest was changed after the harness wrote it: "
            "restore it, or run that shard again"
        )


def odd_type(data: dict[str, Any]) -> str | None:
    """The first field a merge reads whose value is not what a shard's manifest holds, in words."""
    shard = data.get("shard")
    if isinstance(shard, dict) and shard.get("index") is not None:
        count = shard.get("count")
        if not whole(count, 1, MAX_SHARDS):
            return f"shard.count should be a whole number from 1 to {MAX_SHARDS:,}, not {short(count)}"
        if not whole(shard["index"], 1, count):
            return f"shard.index should be a whole number from 1 to {count}, not {short(shard['index'])}"
    for name in ("started_at", "ended_at"):
        if not isinstance(data.get(name), str):
            return f"{name} should be a UTC time, not {short(data.get(name))}"
    checks: list[tuple[str, Any, Callable[[Any], bool], str]] = [
        ("resumed_at", data.get("resumed_at"), lambda v: isinstance(v, str), "a UTC time"),
        ("models", data.get("models"), lambda v: isinstance(v, str), "a model's name"),
        ("chronologies", data.get("chronologies"), named("name", "sha256"), "an object with a name and a sha256"),
        ("policies", data.get("policies"), named("label"), "an object with a label"),
    ]
    for name, values, fits, what in checks:
        for i, value in enumerate(values or []):
            if not fits(value):
                return f"{name}[{i}] should be {what}, not {short(value)}"
    return odd_counts(data)


def odd_counts(data: dict[str, Any]) -> str | None:
    """Whether the counts a merge reads are whole numbers: repetitions per model, conversations per status."""
    runs = data.get("repetitions_run") or {}
    for model in data.get("models") or []:
        if not whole(runs.get(model), 1):
            return f"repetitions_run.{model} should be a whole number of at least 1, not {short(runs.get(model))}"
    counts = data.get("conversations") or {}
    if "total" not in counts:
        return "conversations.total is missing"
    odd = next((k for k, v in counts.items() if not whole(v, 0)), None)
    return None if odd is None else f"conversations.{odd} should be a whole number, not {short(counts[odd])}"


def whole(value: Any, low: int, high: Any = None) -> bool:
    """An int of JSON (never a bool, never 2.0) within low..high."""
    if type(value) is not int or value < low:
        return False
    return high is None or (type(high) is int and value <= high)


def named(*keys: str) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, dict) and all(isinstance(value.get(k), str) for k in keys)


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """The path of the first value that differs (`chronologies[0].sha256`), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            found = first_difference(a.get(key), b.get(key), f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return next((f for i, (x, y) in enumerate(zip(a, b)) if (f := first_difference(x, y, f"{where}[{i}]"))), None)
    return None if a == b else f"{where} ({short(a)} vs {short(b)})"


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def plan_keys(data: dict[str, Any]) -> list[RunKey]:
    """The conversations of the whole batch a manifest describes, in plan order (as
    `RunSpec.conversations`: chronology, model, repetition, then policies)."""
    runs = data["repetitions_run"]
    order = plan_order(data["chronologies"], data["models"], lambda model: int(runs[model]), data["policies"])
    return [RunKey.typed(c["name"], p["label"], m, r) for c, p, m, r in order]


def check_conversations(shards: list[tuple[Path, dict[str, Any]]], order: dict[RunKey, int]) -> None:
    """Every conversation of the batch finished in exactly one shard, and nothing else."""
    owner: dict[RunKey, Path] = {}
    for folder, data in shards:
        keys = [RunKey.of(r) for r in each_record(folder / "conversations.jsonl")]
        if len(keys) != data["conversations"]["total"]:
            raise InputError(
                f"{folder}: shard {data['shard']['index']}/{data['shard']['count']} planned "
                f"{data['conversations']['total']} conversations but records {len(keys)}; the folder is "
                "incomplete or was changed: run that shard again"
            )
        for key in keys:
            if key not in order:
                raise InputError(f"{folder}: conversation {key} is not in the batch")
            if key in owner:
                raise InputError(
                    f"conversation {key} is in both {owner[key]} and {folder}: "
                    "the folders are not the shards of one batch"
                )
            owner[key] = folder
    missing = [key for key in order if key not in owner]
    if missing:
        raise InputError(
            f"{len(missing)} conversations of the batch are in no shard (first: {missing[0]}); "
            "the shards ran different slices: run every shard with the same harness version"
        )


def copy_records(name: str, folders: list[Path], directory: Path, order: dict[RunKey, int]) -> None:
    """Write `directory/name` from the shards' files: records grouped in plan order, as written."""
    sources = [folder / name for folder in folders if (folder / name).exists()]
    if not sources:
        return
    headers, spans = set(), []
    for number, path in enumerate(sources):
        header, found = record_spans(path, order)
        headers.add(header)
        spans += [(place, number, start, length) for place, start, length in found]
    if len(headers) > 1:
        raise InputError(f"{name}: the shards' files have different columns; run every shard with one harness version")
    spans.sort(key=lambda span: (span[0], span[2]))  # plan order; file order within a conversation
    with ExitStack() as stack:
        handles = [stack.enter_context(path.open("rb")) for path in sources]
        target = stack.enter_context(create_new(directory / name, binary=True))  # in a folder just made
        target.write(headers.pop())
        for number, start, length in joined(spans):
            handles[number].seek(start)
            target.write(handles[number].read(length))


def joined(spans: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int]]:
    """(source, start, length) to copy: spans that follow each other in one source in one piece."""
    pieces: list[list[int]] = []
    for _, number, start, length in spans:
        if pieces and pieces[-1][0] == number and pieces[-1][1] + pieces[-1][2] == start:
            pieces[-1][2] += length
        else:
            pieces.append([number, start, length])
    return [(number, start, length) for number, start, length in pieces]


def merged_manifest(run_id: str, shards: list[tuple[Path, dict[str, Any]]], directory: Path) -> dict[str, Any]:
    """Shard 1's manifest, with the times of all shards, the counts of all, and `shard` naming them."""
    manifests = [data for _, data in shards]
    data = copy.deepcopy(manifests[0])
    statuses = Counter(r["status"] for r in each_record(directory / "conversations.jsonl"))
    data.update(
        run_id=run_id,
        status="complete",
        error=None,
        started_at=min(m["started_at"] for m in manifests),
        ended_at=max(m["ended_at"] for m in manifests),
        resumed_at=sorted(t for m in manifests for t in m.get("resumed_at", [])),
        conversations={"total": sum(statuses.values()), **dict(sorted(statuses.items()))},
        shard={
            "index": None,
            "count": len(shards),
            "merged_from": [
                {"index": m["shard"]["index"], "run_id": m["run_id"], "path": str(folder)} for folder, m in shards
            ],
        },
    )
    return data
