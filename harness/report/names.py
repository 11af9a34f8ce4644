"""The stems of the files a report or a comparison is written to, made so that two different
reports never share one.

A run's report is named by its run id (`harness.results.rundir` refuses the ids `index` and
`README`, which would name the reports folder's own files). Several runs are joined with `+`, a
character no run id holds, so the runs can be read back from the name: `compare-a-b+c` (runs
`a-b` and `c`) is not `compare-a+b-c` (runs `a` and `b-c`), and no single run's report is named
like a comparison. A joined name longer than `MAX_STEM` characters (a dozen long run ids: a file
name has at most 255 bytes, and a temporary beside it adds some) is replaced by the number of runs
and 16 hex digits of the SHA-256 of the joined ids, after a `~`, another character no run id holds
and no joined name uses: `compare-12-runs~3f9a…`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = ["JOIN", "MAX_STEM", "paired_stem", "side_by_side_stem"]

JOIN = "+"  # between run ids in a name: never in a run id (harness.results.writer.RUN_ID)
HASHED = "~"  # before the digest of a name too long to spell out: never in a run id, never joined
MAX_STEM = 150


def side_by_side_stem(ids: Sequence[str]) -> str:
    """The report's stem: the run id of one run, `compare-<id>+<id>...` of several."""
    return ids[0] if len(ids) == 1 else _bounded("compare", ids)


def paired_stem(a: str, b: str) -> str:
    """`harness compare`'s stem: `paired-<A>+<B>` (A the first run given)."""
    return _bounded("paired", (a, b))


def _bounded(kind: str, ids: Sequence[str]) -> str:
    joined = f"{kind}-{JOIN.join(ids)}"
    if len(joined) <= MAX_STEM:
        return joined
    digest = hashlib.sha256(JOIN.join(ids).encode("utf-8")).hexdigest()[:16]
    return f"{kind}-{len(ids)}-runs{HASHED}{digest}"
