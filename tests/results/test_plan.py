"""The plan order: the one definition a run, a merge and a report of what is missing follow."""

from __future__ import annotations

import pytest

from harness.base.errors import InputError
from harness.results.plan import MAX_CONVERSATIONS, plan_order


def test_the_one_definition_of_plan_order_builds_nothing_past_the_bound() -> None:
    with pytest.raises(InputError, match="the plan makes 1,000,001 conversations"):
        plan_order(["c"], ["m"], lambda model: MAX_CONVERSATIONS + 1, ["p"])
    assert len(plan_order(["c"], ["m"], lambda model: 3, ["p", "q"])) == 6
