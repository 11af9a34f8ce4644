"""A report read whole: the main markdown, then each page beside it (every chronology's sections,
each imported item's and category's), in the order the report wrote them."""

from __future__ import annotations

from collections.abc import Sequence

from harness.report.document import report_pages
from harness.results.tables import Results


def whole_report(runs: Results | Sequence[Results], charts: bool = True) -> str:
    """The report and its pages as one text: what a reader of the folder reads."""
    text, pages = report_pages(runs, charts)
    return text + "".join("\n" + page for page in pages.values())


def pages_of(runs: Results | Sequence[Results], charts: bool = True) -> dict[str, str]:
    """The pages beside the report, by file name, as `write_report` writes them."""
    return report_pages(runs, charts)[1]
