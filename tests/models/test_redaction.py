"""Redaction of the key: in every form an endpoint's echo gives it, and nothing else."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus, unquote_plus

import pytest

from harness.models.redaction import MAX_DEPTH, Redactor

KEY = "sk-aB/c+D=e-0123456789"  # upper and lower case, and what URLs and base64 encode
MARK = "[redacted:K]"


def test_the_key_is_redacted_in_its_plain_encoded_and_escaped_forms() -> None:
    redact = Redactor(KEY, "OPENAI_API_KEY")
    text = f"{KEY} | sk-aB%2Fc%2BD%3De-0123456789 | sk-aB\\/c+D=e-0123456789 | x{KEY}y"
    assert redact.text(text) == " | ".join(["[redacted:OPENAI_API_KEY]"] * 3) + " | x[redacted:OPENAI_API_KEY]y"


def escaped(text: str, escape) -> str:
    return "".join(escape(c) for c in text)


# The key as an endpoint's echo may give it back: each is redacted whole, the text around it kept.
ECHOES = {
    "percent-encoded": quote(KEY, safe=""),
    "percent-encoded, lower-case hex": quote(KEY, safe="").lower(),
    "percent-encoded, '/' left as is": quote(KEY, safe="/"),
    "every character percent-encoded": escaped(KEY, lambda c: f"%{ord(c):02X}"),
    "percent-encoded twice": quote(quote(KEY, safe=""), safe=""),
    "form-encoded (+ for space)": quote_plus(KEY),
    "form-decoded (its + read as a space)": unquote_plus(KEY),
    "upper case": KEY.upper(),
    "lower case": KEY.lower(),
    "case swapped": KEY.swapcase(),
    "JSON \\u escapes, in text": escaped(KEY, lambda c: f"\\u{ord(c):04x}"),
    "JSON \\u escapes, upper-case hex": escaped(KEY, lambda c: f"\\u{ord(c):04X}"),
    "JSON escapes of / only": KEY.replace("/", "\\/"),
    "\\x escapes": escaped(KEY, lambda c: f"\\x{ord(c):02x}"),
    "backslash before punctuation": escaped(KEY, lambda c: c if c.isalnum() else "\\" + c),
    "HTML numeric entities": escaped(KEY, lambda c: c if c.isalnum() else f"&#{ord(c)};"),
    "HTML hex entities": escaped(KEY, lambda c: c if c.isalnum() else f"&#x{ord(c):X};"),
    "HTML named entities": KEY.replace("/", "&sol;").replace("+", "&plus;").replace("=", "&equals;"),
    "hex of its bytes": KEY.encode().hex(),
    "hex of its bytes, spaced": KEY.encode().hex(" "),
    "split by a line break": KEY[:9] + "\n    " + KEY[9:],
    "split by spaces": " ".join(KEY),
    "split by an escaped line break": KEY[:9] + "\\r\\n" + KEY[9:],
    "split by zero-width spaces": "\u200b".join(KEY),
    "split by soft hyphens": KEY[:5] + "\u00ad" + KEY[5:],
}


@pytest.mark.parametrize("echo", ECHOES.values(), ids=ECHOES.keys())
def test_the_key_is_redacted_in_every_form_an_echo_gives_it(echo: str) -> None:
    assert Redactor(KEY, "K").text(f"You sent: {echo}.") == f"You sent: {MARK}."


@pytest.mark.parametrize("before", [b"", b"Bearer ", b"user:"], ids=["offset 0", "offset 1", "offset 2"])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode], ids=["base64", "base64url"])
def test_the_key_is_redacted_in_base64_at_each_of_the_three_alignments(before: bytes, encode) -> None:
    """Base64 writes 3 bytes as 4 characters: the key's characters depend on where in a group of
    three it starts (a Basic auth header `user:KEY`, a `Bearer KEY` header, the key alone)."""
    encoded = encode(before + KEY.encode() + b" and after").decode()
    kept = Redactor(KEY, "K").text(encoded)
    assert MARK in kept
    # What survives are the characters of the text around the key (and at most one across each edge).
    assert len(kept) - len(MARK) <= len(encode(before).rstrip(b"=")) + len(encode(b" and after")) + 2


@pytest.mark.parametrize("wrapped", [76, 64], ids=["MIME lines", "PEM lines"])
def test_base64_wrapped_in_lines_is_redacted(wrapped: int) -> None:
    encoded = base64.b64encode(b"Authorization: Bearer " + KEY.encode()).decode()
    lines = "\n".join(encoded[i : i + wrapped] for i in range(0, len(encoded), wrapped))
    assert MARK in Redactor(KEY, "K").text(lines)


def test_the_key_inside_a_json_string_inside_json_is_redacted() -> None:
    """An error that quotes an upstream error body: the key escaped twice over."""
    inner = json.dumps({"error": f"bad key {KEY}"}, ensure_ascii=True).replace("/", "\\/")
    outer = json.dumps({"error": {"message": inner}})
    assert KEY not in json.dumps(Redactor(KEY, "K").loads(outer.encode()))
    assert MARK in json.dumps(Redactor(KEY, "K").loads(outer.encode()))


@pytest.mark.parametrize(
    "text",
    [
        KEY[:-1],  # one character short
        KEY[:-1] + "8",  # one character wrong
        f"The answer is 42; see {KEY[:6]} for details.",
        base64.b64encode(KEY.replace("456", "465").encode()).decode(),
    ],
)
def test_text_that_is_not_the_key_is_left_as_it_is(text: str) -> None:
    assert Redactor(KEY, "K").text(text) == text


@pytest.mark.parametrize(
    ("key", "text", "kept"),
    [
        ("local", "locally, Local, LOCAL and local.", f"locally, Local, LOCAL and {MARK}."),
        ("local", "l%6Fcal and l o c a l", f"{MARK} and l o c a l"),
        ("ollama", base64.b64encode(b"Bearer ollama").decode(), base64.b64encode(b"Bearer ollama").decode()),
    ],
)
def test_a_short_key_is_redacted_as_a_whole_word_in_its_own_case(key: str, text: str, kept: str) -> None:
    """A key under 8 characters (a local server's token) is no secret worth a word's readability."""
    assert Redactor(key, "K").text(text) == kept


def test_parsed_json_is_redacted_in_every_string_and_key() -> None:
    redacted = Redactor(KEY, "K").json({"a": [KEY, 1, None, {KEY: f"Bearer {KEY}"}]})
    assert redacted == {"a": [MARK, 1, None, {MARK: f"Bearer {MARK}"}]}


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
        f'"{quote(KEY, safe="")}"',
        f'{{"shout": "{KEY.upper()}"}}',
        f'{{"header": "{base64.b64encode(b"Bearer " + KEY.encode()).decode()}"}}',
        f'{{"wrapped": "{KEY[:9]}\\n{KEY[9:]}"}}',
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
