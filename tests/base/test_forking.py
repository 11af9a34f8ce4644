"""Forked worker pools: the parent's heap out of the workers' collectors' reach while they live."""

from __future__ import annotations

import gc

import pytest

from harness.base.forking import forked_pool


def frozen_in_worker() -> int:
    return gc.get_freeze_count()


def test_the_heap_is_frozen_while_the_pool_lives_and_thawed_after() -> None:
    before = gc.get_freeze_count()
    inherited = [[] for _ in range(1000)]  # lists are tracked by the collector: frozen with the rest
    with forked_pool(1) as pool:
        assert gc.get_freeze_count() > before + len(inherited) // 2
        assert pool.submit(frozen_in_worker).result() > 0  # the worker inherited them frozen
    # Thawed: `gc.unfreeze` thaws everything, also what Python 3.12 keeps frozen from its start.
    assert gc.get_freeze_count() <= before
    del inherited


def test_the_heap_is_thawed_when_the_work_fails() -> None:
    before = gc.get_freeze_count()
    with pytest.raises(ZeroDivisionError), forked_pool(1) as pool:
        pool.submit(divmod, 1, 0).result()
    assert gc.get_freeze_count() <= before
