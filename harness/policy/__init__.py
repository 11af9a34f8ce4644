"""The policy wing: the contract a plug-in implements, the registry that finds and checks
plug-ins, and the machinery the built-in policies (`policies/`) are made of.

What a plug-in imports comes from here: `Policy`, `PolicyFactory`, `Param`, `Outcome`,
`Drop`, `AuxCalls`, `Message`. The machinery is shared by the built-in policies and free to
use: `history` (per-session histories), `compaction` (MAF's sliding window), `facts` (the
seed's fact memory), `tokens` (the estimate and the tiktoken count), `counters` (what a token
trigger counts with: the `counter` parameter and `TriggerCounter`), `bm25`, `groups` (tool
calls kept with their results), `pinning` (statements the chronology pins, copied into every
view under `pin=true`), `delegated` (what the policies that delegate to a provider share: their
design, the `compaction` call's role, the emulated provider's usage); and, below this wing,
`harness.base.sequences` (message lists that share storage).
"""

from harness.base.messages import Message
from harness.policy.contract import (
    PLACES,
    POLICY_METHODS,
    VIEW_CAUSES,
    AnswerUsage,
    AuxCalls,
    Cause,
    Drop,
    Outcome,
    Param,
    Policy,
    PolicyFactory,
    PolicySpec,
    TriggerCount,
)
from harness.policy.registry import ENTRY_POINT_GROUP, SEED_SPECS, PolicyRegistry, plugin_problem

__all__ = [
    "SEED_SPECS",
    "ENTRY_POINT_GROUP",
    "PLACES",
    "POLICY_METHODS",
    "VIEW_CAUSES",
    "AnswerUsage",
    "AuxCalls",
    "Cause",
    "Drop",
    "Message",
    "Outcome",
    "Param",
    "Policy",
    "PolicyFactory",
    "PolicyRegistry",
    "PolicySpec",
    "TriggerCount",
    "plugin_problem",
]
