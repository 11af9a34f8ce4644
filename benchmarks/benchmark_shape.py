"""A benchmark's shape end to end: LongMemEval `_s`-sized items imported and replayed, peak memory
as the number of items grows.

LongMemEval's `_s` file holds 500 questions, each with a haystack of about 115,000 tokens (some
50 sessions of chat). This script writes a synthetic file of that shape (no real data: the text
is generated, one `has_answer` turn per item), then, for a small and a large item count, in child
processes of their own:

- `harness import longmemeval FILE --out DIR` (every item staged and validated, then written);
- `harness run DIR --policy P --no-charts --quiet` (the reference model: the harness's own work;
  `--policy default` runs the default plain comparison, every default policy, as `harness run`
  without `--policy` does), its report included;
- `harness report RESULTS --no-charts`: the report phase alone, of the run just made.

It prints wall time and peak memory (the largest process's RSS, `ru_maxrss`, and every
process's PSS summed, sampled: `tree_memory.py`) for each, and the ratios large / small. Flat
memory: each ratio within 1.10 while the work grows with the items.

    python benchmarks/benchmark_shape.py [--items 50 500] [--tokens 115000] [--policy full-history] [--policy default]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from peak_memory import HARNESS, Peak, peak_of  # noqa: E402

WORDS = (
    "invoice ledger module report export server region quota backup archive schedule deploy "
    "customer ticket release branch budget cluster latency window summary payment"
).split()
SESSION_TURNS = 10  # messages per haystack session, user and assistant alternating
CHARS_PER_TOKEN = 4  # the harness's own estimate, used here only to size the text


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def item(index: int, tokens: int, rng: random.Random) -> dict[str, object]:
    """One question with a haystack of about `tokens` tokens (chars/4), LongMemEval's fields."""
    chars = tokens * CHARS_PER_TOKEN
    per_message = 900
    sessions_count = max(1, chars // (per_message * SESSION_TURNS))
    evidence_session = rng.randrange(sessions_count)
    sessions, ids, dates = [], [], []
    for s in range(sessions_count):
        turns = []
        for t in range(SESSION_TURNS):
            role = "user" if t % 2 == 0 else "assistant"
            text = " ".join(sentence(rng, 12) for _ in range(per_message // 80))
            turn: dict[str, object] = {"role": role, "content": text}
            if s == evidence_session and t == 0:
                turn = {"role": "user", "content": f"I moved to Lisbon in spring. {text}", "has_answer": True}
            turns.append(turn)
        sessions.append(turns)
        ids.append(f"s{index}_{s}")
        dates.append(f"2023/05/{1 + s % 28:02d} (Mon) 10:{s % 60:02d}")
    return {
        "question_id": f"q{index:04d}",
        "question_type": "knowledge-update",
        "question": "Where do I live now?",
        "answer": "Lisbon",
        "question_date": "2023/06/30 (Fri) 09:00",
        "haystack_session_ids": ids,
        "haystack_dates": dates,
        "haystack_sessions": sessions,
    }


def write_items(path: Path, count: int, tokens: int) -> None:
    """The synthetic `_s`-shaped file, written item by item (never the whole file in memory)."""
    rng = random.Random(0)
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        for index in range(count):
            out.write(("," if index else "") + json.dumps(item(index, tokens, rng)))
        out.write("]")


DEFAULT = "default"  # `--policy default`: the default plain comparison (no `--policy` given to the run)
STEPS = ("import", "run", "report")


def measure(count: int, tokens: int, policies: list[str], work: Path) -> tuple[dict[str, Peak], int]:
    """Import, run (its report included) and report again alone, at `count` items: each step's peak."""
    source = work / f"longmemeval_s-{count}.json"
    write_items(source, count, tokens)
    chronologies = work / f"items-{count}"
    found = {"import": peak_of([*HARNESS, "import", "longmemeval", str(source), "--out", str(chronologies)], work)}
    options = [o for p in policies if p != DEFAULT for o in ("--policy", p)]
    run = [*HARNESS, "run", str(chronologies), *options, "--out", str(work / "results"), "--run-id", f"n{count}"]
    found["run"] = peak_of([*run, "--reports", str(work / "reports"), "--no-charts", "--quiet"], work)
    report = [*HARNESS, "report", str(work / "results" / f"n{count}"), "--reports", str(work / "again"), "--no-charts"]
    found["report"] = peak_of(report, work)
    return found, source.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, nargs=2, default=[50, 500], metavar=("SMALL", "LARGE"))
    parser.add_argument("--tokens", type=int, default=115_000, help="haystack size per item (chars/4)")
    parser.add_argument(
        "--policy", action="append", help="policies to run (default: full-history; `default`: every default policy)"
    )
    args = parser.parse_args()
    policies = args.policy or ["full-history"]
    print(f"LongMemEval _s shape: items {args.items[0]} and {args.items[1]}, ~{args.tokens:,} tokens each, {policies}")
    with tempfile.TemporaryDirectory() as tmp:
        found = {count: measure(count, args.tokens, policies, Path(tmp)) for count in args.items}
    small, large = (found[c] for c in args.items)
    print(f"{'step':<8}{'items':>7}{'input MB':>10}{'wall s':>9}{'RSS MB':>9}{'PSS MB':>9}")
    for count, (peaks, size) in found.items():
        for step in STEPS:
            peak = peaks[step]
            tree = f"{peak.tree_mb:9.0f}" if peak.tree_mb is not None else f"{'n/a':>9}"
            print(f"{step:<8}{count:>7}{size / 2**20:>10.0f}{peak.seconds:>9.1f}{peak.rss_mb:>9.0f}{tree}")
    verdicts = []
    for step in STEPS:
        ratio = large[0][step].rss_mb / small[0][step].rss_mb
        verdicts.append(ratio <= 1.10)
        print(
            f"{step}: peak RSS {args.items[1]} / {args.items[0]} items = {ratio:.2f}x {'PASS' if ratio <= 1.10 else 'FAIL'}"
        )
    print("flat memory" if all(verdicts) else "memory grows with the items")


if __name__ == "__main__":
    main()
