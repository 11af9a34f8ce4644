"""The markdown report: a view of results, built from results alone (no model calls).

- Policies appear in the order the run declared them (then runs in the order given, then
  models). Nothing is scored, nor ordered by an outcome.
- Every figure says what it is (estimate, tiktoken, provider-reported); an unknown figure says
  `unknown`, never 0. With repetitions, cells count (k/n) and sizes show their min–max spread.
- Chronology text is data: it reaches the markdown only through `harness.report.markdown`.
- Same results, same bytes: no clock is read and every order is explicit. The only times shown
  are the run's own (`ENVIRONMENT_ROWS`); latencies and facts' `recorded_at` are left out.

The names below are imported on first use: the report brings pandas and matplotlib, which the
command line loads only when it writes one.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "TITLE": "harness.report.document",
    "build_report": "harness.report.document",
    "write_index": "harness.report.document",
    "write_report": "harness.report.document",
    "CHARTS_NOTE": "harness.report.header",
    "ENVIRONMENT_ROWS": "harness.report.header",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
