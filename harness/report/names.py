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

`harness rejudge`'s verdicts are named by the run and the second prompt's file name
(`<run-id>-rejudged-<prompt>`), which is the user's text: a stem that is not a plain name of at
most `MAX_PROMPT_STEM` characters (a control character, a newline, a space, a 245-character name)
is replaced by `prompt~` and 16 hex digits of its SHA-256, so the name stays one safe file name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

__all__ = ["JOIN", "MAX_STEM", "paired_stem", "rejudged_stem", "side_by_side_stem"]

JOIN = "+"  # between run ids in a name: never in a run id (harness.results.writer.RUN_ID)
HASHED = "~"  # before the digest of a name too long to spell out: never in a run id, never joined
MAX_STEM = 150
MAX_PROMPT_STEM = 40  # a run id (at most 100) + `-rejudged-` + this stays within MAX_STEM
_PLAIN = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_PROMPT_STEM - 1}}}")


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


def rejudged_stem(run_id: str, prompt_stem: str) -> str:
    """`harness rejudge`'s default stem: `<run-id>-rejudged-<prompt>`, the prompt's file stem when
    it is plain, else `prompt~` and the digest of the stem."""
    if _PLAIN.fullmatch(prompt_stem) is None:
        digest = hashlib.sha256(prompt_stem.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        prompt_stem = f"prompt{HASHED}{digest}"
    return f"{run_id}-rejudged-{prompt_stem}"
