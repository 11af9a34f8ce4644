"""`harness report` on about a million probe rows: wall time and peak memory against the targets
of issue 11 (under 15 s, under 1 GB).

The results folder is made from a real run: the shipped library replayed under every policy
with the `reference` model, then its records replicated with new identities, conversation by
conversation and in plan order, as a larger batch would have written them: each chronology
copied `--copies` times (`<name>-c<k>`, the same file and sha256) and each conversation repeated
`--repetitions` times. Every file is replicated (message bodies, views and facts included), so
the report reads what a real run of that size leaves; the manifest says what the batch was.

The report is timed in a fresh `harness report` process, with charts and with `--no-charts`
when the command has it: wall and CPU seconds, and its peak memory, judged as the larger of the
largest process's RSS (getrusage(RUSAGE_CHILDREN)) and the summed PSS of every process of the
report, sampled every 50 ms (`tree_memory.py`: the report forks chart drawers, which share most
of their pages with it).

    python benchmarks/report_scale.py                      # ~1.0 M probe rows (8 copies × 105 repetitions)
    python benchmarks/report_scale.py --copies 1 --repetitions 10 --keep /tmp/scale

Generating the default folder writes about 4 GB and takes a minute or two on 2 shared cores.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import tree_memory  # benchmarks/, beside this script

from harness.base.identity import RunKey
from harness.results.digests import TALLIED, Tallies, finished_record, settings_digests
from harness.results.integrity import file_digests
from harness.results.order import RecordFile, record_spans
from harness.results.reader import RECORD_FILES, read_records

ROOT = Path(__file__).resolve().parent.parent
SECONDS, PEAK_BYTES = 15.0, 1 << 30  # the targets: under 15 s, under 1 GB peak
Key = tuple[str, str, str, int]


def base_run(folder: Path) -> Path:
    """The shipped library under every policy, reference model, no report of interest."""
    command = ["harness", "run", "chronologies/library.txt", "--run-id", "base", "--out", str(folder)]
    subprocess.run([*command, "--reports", str(folder / "reports"), "--quiet"], cwd=ROOT, check=True)
    return folder / "base"


def csv_prefix(key: Key) -> bytes:
    """The identity cells a CSV record starts with, as the writer encodes them."""
    text = io.StringIO()
    csv.writer(text, lineterminator="").writerow(key)
    return text.getvalue().encode() + b","


def json_prefix(key: Key) -> bytes:
    """The identity keys a JSON record starts with (the record types put them first)."""
    chronology, policy, model, repetition = key
    identity = {"chronology": chronology, "policy": policy, "model": model, "repetition": repetition}
    return json.dumps(identity, ensure_ascii=False)[:-1].encode() + b", "


def replicate(base: Path, target: Path, copies: int, repetitions: int) -> int:
    """Write the replicated results into `target`; return the number of probe rows."""
    target.mkdir(parents=True)
    conversations = [RunKey.of(r) for r in read_records(base / "conversations.jsonl")]
    order = {key: n for n, key in enumerate(conversations)}
    chronologies = list(dict.fromkeys(key[0] for key in conversations))
    for name in RECORD_FILES:
        header, spans = record_spans(base / name, order)
        blocks: dict[Key, bytes] = {}
        with (base / name).open("rb") as source:
            for place, start, length in spans:
                source.seek(start)
                key = conversations[place]
                blocks[key] = blocks.get(key, b"") + source.read(length)
        prefix = csv_prefix if name.endswith(".csv") else json_prefix
        with (target / name).open("wb") as out:
            out.write(header)
            for copy in range(1, copies + 1):
                for chronology in chronologies:
                    keys = [k for k in conversations if k[0] == chronology]
                    for repetition in range(1, repetitions + 1):
                        for key in keys:
                            block = blocks.get(key)
                            if block is None:
                                continue
                            new = (f"{chronology}-c{copy}", key[1], key[2], repetition)
                            replaced = (b"\n" + block).replace(b"\n" + prefix(key), b"\n" + prefix(new))[1:]
                            out.write(replaced)
    with (target / "probes.csv").open("rb") as handle:
        rows = sum(1 for _ in handle) - 1
    seal_conversations(target)
    write_manifest(base, target, copies, repetitions, len(conversations))
    return rows


def seal_conversations(target: Path) -> None:
    """Each replicated conversation's record in conversations.jsonl with the digests of its own
    records (renamed, they are no longer the base's), as the writer takes them: the report checks
    them before it reads anything (harness.results.integrity)."""
    tallies = Tallies()
    for name in TALLIED:
        for record in RecordFile(target / name):
            if record.key is not None:
                tallies.add(record.key, name, record.data)
    path = target / "conversations.jsonl"
    sealed = [
        finished_record({k: v for k, v in r.items() if k not in ("records", "sha256")}, tallies.close(RunKey.of(r)))
        for r in read_records(path)
    ]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in sealed), encoding="utf-8")


def write_manifest(base: Path, target: Path, copies: int, repetitions: int, conversations: int) -> None:
    manifest = json.loads((base / "manifest.json").read_text(encoding="utf-8"))
    entries = manifest["chronologies"]
    manifest.update(
        run_id="scale",
        chronologies=[{**e, "name": f"{e['name']}-c{k}"} for k in range(1, copies + 1) for e in entries],
        repetitions=repetitions,
        repetitions_run={m: repetitions for m in manifest["models"]},
        conversations={"total": conversations * copies * repetitions, "complete": conversations * copies * repetitions},
    )
    manifest["settings_sha256"] = settings_digests(manifest)  # the batch these records are: sealed as a run seals it
    manifest["files"] = file_digests(target)
    (target / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def has_option(option: str) -> bool:
    shown = subprocess.run(
        [sys.executable, "-m", "harness", "report", "--help"], capture_output=True, text=True, check=True
    ).stdout
    return option in shown


@dataclass(frozen=True)
class Timed:
    """One timed `harness report`."""

    seconds: float  # wall
    cpu: float  # user + system, chart workers included
    largest: int  # bytes: ru_maxrss, the peak of the largest single process
    tree: int | None  # bytes: the peak of the summed PSS of every process of the report (sampled); None without /proc

    @property
    def peak(self) -> int:
        """The figure judged: the whole tree's, never less than its largest process's."""
        return max(self.largest, self.tree or 0)


def timed_report(results: Path, reports: Path, extra: list[str]) -> Timed:
    """One `harness report` in a fresh process (CPU seconds, chart workers included, say how
    much of the wall time was waiting on a shared machine).

    RUSAGE_CHILDREN holds the largest child so far, so each measurement runs in its own
    intermediate process, which reports its own children's peak; the report's whole process
    tree (it forks chart drawers) is sampled meanwhile (`tree_memory`)."""
    probe = (
        "import resource, subprocess, sys, time; start = time.perf_counter(); "
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
        "used = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(time.perf_counter() - start, used.ru_maxrss * 1024, used.ru_utime + used.ru_stime)"
    )
    command = [sys.executable, "-m", "harness", "report", str(results), "--reports", str(reports), *extra]
    # With bytecode cached, as an install has it: PYTHONDONTWRITEBYTECODE=1 (set where these
    # benchmarks ran) made every run compile every module it imports again (about 1 s here).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "harness", "--help"], env=env, capture_output=True, check=True)  # cache it
    with subprocess.Popen([sys.executable, "-c", probe, *command], stdout=subprocess.PIPE, text=True, env=env) as done:
        with tree_memory.TreeSampler(done.pid, below=True) as sampler:
            out, _ = done.communicate()
    if done.returncode:
        raise SystemExit(f"harness report failed (exit {done.returncode})")
    seconds, largest, cpu = out.split()
    return Timed(float(seconds), float(cpu), int(largest), sampler.peak)


def verdict(timed: Timed) -> str:
    ok = timed.seconds < SECONDS and timed.peak < PEAK_BYTES
    tree = f"{timed.tree / 2**20:.0f} MB" if timed.tree is not None else "unknown (no /proc)"
    return (
        f"{timed.seconds:6.1f} s ({timed.seconds / SECONDS:.2f}× the {SECONDS:.0f} s target; {timed.cpu:.1f} CPU s), "
        f"peak memory {timed.peak / 2**20:6.0f} MB ({timed.peak / PEAK_BYTES:.2f}× the 1 GB target; "
        f"every process's PSS summed, sampled: {tree}; the largest process's RSS: {timed.largest / 2**20:.0f} MB): "
        f"{'PASS' if ok else 'FAIL'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=8, help="copies of each chronology (default 8)")
    parser.add_argument("--repetitions", type=int, default=105, help="repetitions of each conversation (default 105)")
    parser.add_argument("--keep", type=Path, help="build the results here and keep them (default: a temporary folder)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="report-scale-")) if args.keep is None else args.keep
    try:
        results = work / "scale"
        if not (results / "manifest.json").exists():
            start = time.perf_counter()
            rows = replicate(base_run(work / "base-run"), results, args.copies, args.repetitions)
            size = sum(p.stat().st_size for p in results.iterdir())
            print(f"generated {rows:,} probe rows ({size / 2**30:.2f} GB) in {time.perf_counter() - start:.0f} s")
        else:
            print(f"reusing {results}")
        runs = [("with charts", [])] + ([("--no-charts", ["--no-charts"])] if has_option("--no-charts") else [])
        met = []
        for label, extra in runs:
            timed = timed_report(results, work / "reports", extra)
            print(f"harness report, {label:11}: {verdict(timed)}")
            met += [label] if timed.seconds < SECONDS and timed.peak < PEAK_BYTES else []
        print(f"targets met (under {SECONDS:.0f} s and 1 GB) by: {', '.join(met) if met else 'neither'}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
