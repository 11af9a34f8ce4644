"""What a model states of itself (harness.base.capabilities): needing no server is what a literal
reader states, so no wing decides it by the model's name."""

from __future__ import annotations

from harness.base.capabilities import Capabilities


def test_a_literal_reader_is_offline_and_a_model_that_states_nothing_else_is_not() -> None:
    assert Capabilities(reader="literal").offline
    assert not Capabilities().offline and not Capabilities(deterministic=True, can_judge=False).offline
