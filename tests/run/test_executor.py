"""The run's executor seam (`harness.run.executor`): whatever runs the conversations, the results are the batch's."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from harness.run.batch import Runtime, run_batch
from harness.run.dispatch import Dispatch
from harness.run.executor import Work
from tests.conftest import assert_same_results, builtin_registry
from tests.conftest import shipped_plan as plan

REGISTRY = builtin_registry()


class InTurn:
    """An executor that runs the conversations in the calling thread, one after the other, in
    the order the dispatch gives."""

    def __init__(self) -> None:
        self.told: list[int] = []

    def run(self, dispatch: Dispatch, concurrency: int, work: Work) -> None:
        with ExitStack() as stack:
            run_one = work.open(stack)
            work.begin()
            while (index := dispatch.take()) is not None:
                conversation = dispatch.todo[index]
                finished = run_one(conversation, dispatch.events(index, work.progress))
                work.ended(len(self.told), conversation, finished)
                self.told.append(index)


@pytest.mark.slow
def test_another_executor_leaves_the_results_threads_leave(tmp_path: Path) -> None:
    executor = InTurn()
    run_batch(plan(concurrency=4), tmp_path / "threads", "threads", Runtime(REGISTRY))
    run_batch(plan(concurrency=4), tmp_path / "in-turn", "in-turn", Runtime(REGISTRY, executor=executor))
    assert_same_results(tmp_path / "threads", tmp_path / "in-turn")
    assert sorted(executor.told) == list(range(len(plan().conversations())))
