"""Redaction of the API key from everything an endpoint sends back, before the harness keeps it.

An endpoint can echo the key anywhere: in an error body ("Incorrect API key provided: sk-...",
a proxy quoting the Authorization header) or inside a successful answer. Whatever comes back
is redacted before it is parsed further, shortened, cached, recorded or put into the next
request, so no file (calls, views, facts, report, response cache) can hold the key, nor a
prefix of it cut off by a shortened message. Each occurrence becomes `[redacted:VARIABLE]`,
naming the environment variable the key came from, so a reader sees that the text was changed.

A key of `MIN_SUBSTRING_CHARS` or more is redacted wherever it occurs, also inside a longer
word, and in its percent-encoded and JSON-escaped forms. A shorter key (a local server's
`local`, `ollama`) is redacted only where it stands as a whole word, so that answers
mentioning "locally" stay readable.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

MIN_SUBSTRING_CHARS = 8
MAX_DEPTH = 64  # a chat-completions body nests about 5 levels; deeper values are not kept
TOO_DEEP = f"[not kept: nested deeper than {MAX_DEPTH} levels]"


class Redactor:
    """Replaces a secret in texts and in parsed JSON; with no secret, returns them unchanged."""

    def __init__(self, secret: str | None, label: str) -> None:
        self.marker = f"[redacted:{label}]"
        self._pattern = _pattern(secret) if secret else None

    def text(self, value: str) -> str:
        """`value` with every occurrence of the secret replaced by the marker."""
        return self._pattern.sub(self.marker, value) if self._pattern else value

    def json(self, value: Any, depth: int = 0) -> Any:
        """A parsed JSON value with the secret redacted from every string in it, keys included.

        A list or object nested deeper than MAX_DEPTH is replaced by a note: a hostile body
        must not exhaust the interpreter's recursion, and what is not checked is not kept.
        """
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (list, dict)) and depth >= MAX_DEPTH:
            return TOO_DEEP
        if isinstance(value, list):
            return [self.json(v, depth + 1) for v in value]
        if isinstance(value, dict):
            return {self.text(str(k)): self.json(v, depth + 1) for k, v in value.items()}
        return value

    def loads(self, content: bytes) -> Any:
        """A JSON body parsed, with the secret redacted as `json` does (ValueError or
        RecursionError when it is not JSON). A body whose text holds no backslash (so each of
        its strings is its raw text), no match of the secret, and fewer brackets than MAX_DEPTH
        (so nothing nests that deep) is returned as parsed: walking it would change nothing.
        That is every ordinary answer, and the walk cost a tenth of a call's own work.
        The body is decoded once, as `json.loads` decodes bytes (UTF-8, -16 or -32, by their
        first bytes), and that one text is both parsed and searched: a UTF-16 body read as UTF-8
        would hide the secret between its NUL bytes."""
        text = content.decode(json.detect_encoding(content), "surrogatepass")  # a ValueError when it cannot
        value = json.loads(text)
        plain = "\\" not in text and text.count("{") + text.count("[") < MAX_DEPTH
        if plain and (self._pattern is None or self._pattern.search(text) is None):
            return value
        return self.json(value)


def _pattern(secret: str) -> re.Pattern[str]:
    escaped = json.dumps(secret)[1:-1]  # as it appears inside a JSON string; some encoders also escape "/"
    forms = sorted({secret, quote(secret, safe=""), escaped, escaped.replace("/", "\\/")}, key=len, reverse=True)
    alternatives = "|".join(re.escape(f) for f in forms)
    if len(secret) >= MIN_SUBSTRING_CHARS:
        return re.compile(alternatives)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")
