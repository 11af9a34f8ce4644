"""`full-history`: send everything, keep everything."""

from __future__ import annotations

from harness.policy.history import HistoryPolicy


class FullHistory(HistoryPolicy):
    """System, every earlier message of the session, and the current user message."""

    name = "full-history"
    description = (
        "Sends the whole session history every turn; keeps everything, corrections beside what they corrected."
    )
    params = ()
    roles = ()
