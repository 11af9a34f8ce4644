"""Redaction of the key, and base URLs that carry no credential."""

from __future__ import annotations

import json

import pytest

from harness.models.endpoint import has_credentials, public_url
from harness.models.redaction import MAX_DEPTH, Redactor

KEY = "sk-a/b+c=d-0123456789"


def test_the_key_is_redacted_in_its_plain_encoded_and_escaped_forms() -> None:
    redact = Redactor(KEY, "OPENAI_API_KEY")
    text = f"{KEY} | sk-a%2Fb%2Bc%3Dd-0123456789 | sk-a\\/b+c=d-0123456789 | x{KEY}y"
    assert redact.text(text) == " | ".join(["[redacted:OPENAI_API_KEY]"] * 3) + " | x[redacted:OPENAI_API_KEY]y"


def test_parsed_json_is_redacted_in_every_string_and_key() -> None:
    redacted = Redactor(KEY, "K").json({"a": [KEY, 1, None, {KEY: f"Bearer {KEY}"}]})
    assert redacted == {"a": ["[redacted:K]", 1, None, {"[redacted:K]": "Bearer [redacted:K]"}]}


def test_without_a_key_nothing_changes() -> None:
    assert Redactor(None, "K").text("Bearer unused") == "Bearer unused"


DEEP = "[" * (MAX_DEPTH + 2) + "1" + "]" * (MAX_DEPTH + 2)
ESCAPED = "".join(f"\\u{ord(c):04x}" for c in KEY)  # the key as JSON \u escapes: no plain form in the text


@pytest.mark.parametrize(
    "body",
    [
        '{"choices": [{"message": {"content": "No."}}], "usage": {"prompt_tokens": 10}}',
        f'{{"choices": [{{"message": {{"content": "Your key is {KEY}."}}}}]}}',
        f'{{"error": {{"{KEY}": "x"}}}}',
        f'{{"echo": "{ESCAPED}"}}',
        '{"text": "a\\nb \\"quoted\\""}',
        DEEP,
        f'{{"deep": {DEEP}, "key": "{KEY}"}}',
        '"sk-a%2Fb%2Bc%3Dd-0123456789"',
    ],
)
@pytest.mark.parametrize("secret", [KEY, "local", None])
def test_loads_is_the_walk_of_the_parsed_body(body: str, secret: str | None) -> None:
    """`loads` skips the walk only where it would change nothing: every body redacts as walked."""
    redact = Redactor(secret, "K")
    # json.loads reads bytes in any of these; without a BOM, UTF-16 also decodes as UTF-8 (NUL bytes)
    for encoding in ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"):
        content = body.encode(encoding)
        assert redact.loads(content) == redact.json(json.loads(content)), encoding
    if secret == KEY and KEY in json.dumps(json.loads(body), ensure_ascii=False):
        assert KEY not in json.dumps(redact.loads(body.encode()), ensure_ascii=False)


def test_loads_refuses_what_is_not_json() -> None:
    with pytest.raises(ValueError):
        Redactor(KEY, "K").loads(b"<html>")


@pytest.mark.parametrize(
    ("url", "shown", "credentials"),
    [
        ("http://user:secret@host:8080/v1", "http://host:8080/v1", True),
        ("http://127.0.0.1:8080/v1?api-version=2024-06-01", "http://127.0.0.1:8080/v1?api-version=2024-06-01", False),
        ("https://host/v1?api-version=1&api_key=secret&x=1", "https://host/v1?api-version=1&api_key=…&x=1", True),
        ("https://host/v1?sig=secret", "https://host/v1?sig=…", True),
        ("https://host/v1@mirror", "https://host/v1@mirror", False),  # an @ in the path is no userinfo
    ],
)
def test_a_base_url_is_shown_without_its_credentials(url, shown, credentials) -> None:
    assert (public_url(url), has_credentials(url)) == (shown, credentials)
