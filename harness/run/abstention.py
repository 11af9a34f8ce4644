"""What counts as an answer saying it does not know (`expect: {abstain: true}`): one set of
phrasings, matched anywhere in the answer, ignoring case (docs/chronologies.md, "Probes that
expect an answer", lists them).

A phrase anywhere counts: an answer that says "I'm not sure" and then guesses abstains by this
rule, and one that states a wrong value with confidence does not. The reference model's own
"Nothing in my context answers that." and "no KEY in my context" abstain.

At a probe (`abstains_from`), an abstention is an answer that states no value for the asked key
(SPEC section 10): the phrase must stand outside every known value the answer quotes (a
forgotten `symptom=I'm not sure, maybe the disk` quoted back is not "I'm not sure"), and the
answer must state no value of a key the question names.
"""

from __future__ import annotations

from harness.chronology.patterns import Pattern, compile_pattern
from harness.run.presence import Presence

_NOT = r"(?:not|n['’]t)"  # "do not", "don't", "don’t"

# One RE2 pattern per phrasing, each documented by the examples in tests/run/test_abstention.py.
PHRASINGS: tuple[str, ...] = (
    rf"\bI\s+(?:do\s*{_NOT}|did\s*{_NOT})\s+(?:know|recall|remember)\b",
    r"\bI\s*(?:am|['’]m)\s+(?:not\s+(?:sure|certain|aware)|unsure|unaware)\b",
    rf"\bI\s+(?:do\s*{_NOT}|did\s*{_NOT})\s+have\s+(?:any|enough|that|this|the|such)?\s*(?:information|details?|record)",
    rf"\bI\s+(?:have\s+no|have\s*{_NOT}\s+(?:any|got\s+any))\s+(?:information|details?|record|way\s+to\s+know)",
    r"\bI(?:\s+(?:cannot|can\s+not|can['’]t|am\s+unable\s+to|am\s+not\s+able\s+to)|['’]m\s+(?:unable|not\s+able)\s+to)"
    r"\s+(?:tell|say|know|determine|answer|find|recall|confirm|see)\b",
    r"\b(?:not\s+enough|insufficient)\s+information\b",
    r"\bno\s+information\s+(?:about|on|regarding|to|in|is|was|available|given|provided)\b",
    r"\b(?:cannot|can\s+not|can['’]t)\s+be\s+(?:determined|answered|known)\b",
    rf"\b(?:you|it)\s+(?:have|has|did|do|does)\s*{_NOT}\s+(?:mentioned|said|told\s+me|shared|specified|stated)\b",
    r"\byou\s+never\s+(?:mentioned|said|told\s+me|shared|specified)\b",
    r"\b(?:not|never)\s+(?:mentioned|stated|specified|provided)\s+(?:in|anywhere)\b",
    r"\bnothing\s+in\s+my\s+(?:context|memory|records?)\s+(?:answers|says|mentions|tells)\b",
    r"\bno\s+\w+\s+in\s+my\s+(?:context|memory|records?)\b",
    r"\bunanswerable\b",
)

ABSTENTION: tuple[Pattern, ...] = tuple(compile_pattern(f"(?i){phrasing}") for phrasing in PHRASINGS)


def abstains(answer: str) -> bool:
    """Whether the answer says it does not know (any of `PHRASINGS`)."""
    return any(pattern.search(answer) for pattern in ABSTENTION)


def abstains_from(presence: Presence, answer: str, question: str) -> bool:
    """Whether a probe's answer abstains: a phrasing (`abstains`) outside the values it quotes,
    and no value stated for a key the question asks about (module docstring)."""
    if not abstains(presence.without_values(answer)):
        return False
    asked = set(presence.asked(question))
    return not any(s.kind == "value" and s.name in asked for s in presence.of_answer(answer, question))
