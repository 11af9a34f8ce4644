"""`harness.policy.sequences`, as plug-ins written for earlier versions import it: the message
lists that share storage live in `harness.base.sequences`, below `results`, which stores views by
them."""

from harness.base.sequences import Joined, Log, common_prefix, common_suffix

__all__ = ["Joined", "Log", "common_prefix", "common_suffix"]
