"""Redaction of the key, and base URLs that carry no credential."""

from __future__ import annotations

import pytest

from harness.endpoint import has_credentials, public_url
from harness.redaction import Redactor

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
