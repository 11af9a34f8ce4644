"""What an endpoint's reply says, read the same way whichever API sent it (`harness.models.openai`,
`harness.models.anthropic`): its error's short reason, its short fields, its usage as valid Unicode,
and how a failed call is described. Nothing here knows a provider's wire format beyond the
`error` object both providers' bodies carry."""

from __future__ import annotations

import json
from dataclasses import replace
from http import HTTPStatus

from harness.base import json_bounded
from harness.base.text import valid_unicode, visible
from harness.models.redaction import Redactor
from harness.models.retry import AttemptFailed, CallFailed
from harness.models.usage import Usage

MAX_REASON_CHARS = 300  # an endpoint's reason is quoted, never its whole body

REPLACED = "each was replaced by U+FFFD"


def replaced_note(count: int) -> str:
    """The note of a reply whose lone surrogates were replaced."""
    halves = f"{count} lone surrogate{'s' if count != 1 else ''}"
    return f"the endpoint's reply held {halves} (halves of UTF-16 pairs: not valid Unicode); " + REPLACED


def valid_usage(usage: Usage | None) -> tuple[Usage | None, int]:
    """`usage` with its raw invalid values as valid Unicode, and how many lone surrogates they held."""
    if usage is None or not usage.invalid:
        return usage, 0
    fixed = {name: valid_unicode(raw) for name, raw in usage.invalid.items()}
    invalid = {name: text for name, (text, _) in fixed.items()}
    return replace(usage, invalid=invalid), sum(n for _, n in fixed.values())


def error_body(answer: str) -> object:
    """What an error response says, as the openai client reads it: the JSON body's `error`
    object (the whole body when it has none), the text when the body is not JSON."""
    text = answer.strip()
    try:
        body = json_bounded.loads(text, what="the error body", max_depth=None)
    except json_bounded.JsonBounded as exc:
        return exc.msg
    except ValueError:
        return text
    return body.get("error", body) if isinstance(body, dict) else body


def said(value: object) -> str | None:
    """A short string field of a response as sent (shortened), None when absent or not a string."""
    return short(value) if isinstance(value, str) and value else None


def reason(body: object) -> str:
    """The endpoint's short reason: `error.message` (OpenAI, llama.cpp), `detail`, or the text."""
    text: object = body
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        text = error.get("message", error) if isinstance(error, dict) else error
        if not isinstance(text, str):
            text = json.dumps(text if text is not None else body, ensure_ascii=False)
    return short(text) if text else "no reason given"


def describe(failure: CallFailed) -> str:
    if failure.status is None:
        return failure.reason
    try:
        phrase = f" {HTTPStatus(failure.status).phrase}"
    except ValueError:
        phrase = ""
    return f"HTTP {failure.status}{phrase}: {failure.reason}"


def short(text: object) -> str:
    """What the endpoint said, on one line, its controls (and lone surrogates) shown as escapes, shortened."""
    flat = visible(" ".join(str(text).split()))
    return flat if len(flat) <= MAX_REASON_CHARS else flat[: MAX_REASON_CHARS - 1] + "…"


def loaded(content: bytes, redactor: Redactor) -> object:
    """A response body as JSON, the key redacted from every string in it; raise AttemptFailed
    (final) when it is not JSON."""
    try:
        return redactor.loads(content)
    except json_bounded.JsonBounded:  # nested beyond the interpreter's reach (long numbers are kept)
        raise AttemptFailed("malformed response: the body's JSON is nested too deeply to read") from None
    except ValueError:  # includes UnicodeDecodeError
        raise AttemptFailed(f"malformed response: the body is not JSON ({snippet(content, redactor)})") from None


def snippet(content: bytes, redactor: Redactor) -> str:
    """The start of a body that is not JSON; the whole body redacted before it is cut, so no part of the
    key is left: an escaped echo is up to six times the key's length, so a window cut before
    redacting could end inside a second echo that the first one's marker brings into view."""
    text = redactor.text(content.decode("utf-8", errors="replace"))[:80]
    return f"starts with {short(text)!r}" if text.strip() else "empty body"
