"""The prompts of the auxiliary calls: the summarizer and the fact writer.

Both are recorded verbatim in `calls.jsonl`. The writer sees the user's message and nothing
else: no history, no facts block, no answer.
"""

from __future__ import annotations

from harness.facts import ALLOWED_KEYS, MAX_FACTS
from harness.messages import Message

SUMMARIZER_INSTRUCTIONS = (
    "You maintain the running summary of a conversation between a user and an assistant. "
    "Rewrite the previous summary so that it also covers the latest exchange. Keep every "
    "fact, correction and prohibition the user stated, as the user stated it; drop small talk. "
    "Reply with the summary text only, in at most {max_chars} characters."
)

WRITER_INSTRUCTIONS = (
    "Extract the explicit key=value declarations from the user's message. Allowed keys: "
    f"{', '.join(ALLOWED_KEYS)}. Reply with JSON only: "
    '{{"facts": [{{"key": "...", "value": "...", "evidence": "..."}}]}} with at most '
    f"{MAX_FACTS} facts, where evidence is an exact quotation of the user's message that "
    "contains the value. Never infer, never rephrase: a question or prose is not a "
    'declaration. Reply {{"facts": []}} when the message declares nothing.'
)


def summarizer_messages(previous: str | None, user: str, answer: str, max_chars: int) -> tuple[Message, ...]:
    """The summarizer's request: the previous summary and the latest exchange."""
    body = (
        f"Previous summary:\n{previous if previous is not None else '(none yet)'}\n\n"
        f"Latest exchange:\nUser: {user}\nAssistant: {answer}"
    )
    return (
        Message("system", SUMMARIZER_INSTRUCTIONS.format(max_chars=max_chars), origin="system"),
        Message("user", body, origin="current"),
    )


def writer_messages(user_text: str) -> tuple[Message, ...]:
    """The writer's request: its instructions and the user's original text only."""
    return (
        Message("system", WRITER_INSTRUCTIONS.format(), origin="system"),
        Message("user", user_text, origin="current"),
    )
