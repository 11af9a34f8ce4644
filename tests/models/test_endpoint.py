"""A base URL carries no credential, and a key is one an HTTP header can carry, before anything is sent."""

from __future__ import annotations

import pytest

from harness.base.errors import InputError
from harness.models.endpoint import check_base_url, check_key, check_key_variable, credentials_in, public_url


@pytest.mark.parametrize(
    ("url", "shown", "credentials"),
    [
        ("http://user:secret@host:8080/v1", "http://host:8080/v1", True),
        ("http://127.0.0.1:8080/v1?api-version=2024-06-01", "http://127.0.0.1:8080/v1?api-version=2024-06-01", False),
        ("https://host/v1?api-version=1&api_key=secret&x=1", "https://host/v1?api-version=1&api_key=…&x=1", True),
        ("https://host/v1?sig=secret", "https://host/v1?sig=…", True),
        ("https://host/v1@mirror", "https://host/v1@mirror", False),  # an @ in the path is no userinfo
        ("https://host/v1;jsessionid=secret?pwd=secret", "https://host/v1;jsessionid=…?pwd=…", True),
        ("https://host/v1#access_token=secret", "https://host/v1#…", True),
        ("https://host/v1?x=1;token=secret", "https://host/v1?x=1;token=…", True),
    ],
)
def test_a_base_url_is_shown_without_its_credentials(url, shown, credentials) -> None:
    assert (public_url(url), credentials_in(url) is not None) == (shown, credentials)


# A parameter's name in any case and spelling a credential is given under.
CREDENTIAL_URLS = [
    "http://127.0.0.1:9/v1?pass=secret",
    "http://127.0.0.1:9/v1?Password=secret",
    "http://127.0.0.1:9/v1?passwd=secret",
    "http://127.0.0.1:9/v1?pwd=secret",
    "http://127.0.0.1:9/v1?sessionid=secret",
    "http://127.0.0.1:9/v1?session_id=secret",
    "http://127.0.0.1:9/v1?PHPSESSID=secret",
    "http://127.0.0.1:9/v1?sid=secret",
    "http://127.0.0.1:9/v1?token=secret",
    "http://127.0.0.1:9/v1?id_token=secret",
    "http://127.0.0.1:9/v1?apikey=secret",
    "http://127.0.0.1:9/v1?code=secret",  # an Azure Functions key
    "http://127.0.0.1:9/v1?jwt=secret",
    "http://127.0.0.1:9/v1?cookie=secret",
    "http://127.0.0.1:9/v1?X-Amz-Credential=secret",
    "http://127.0.0.1:9/v1?p%61ss=secret",  # percent-encoded names are read decoded
    "http://127.0.0.1:9/v1?p%2561ss=secret",  # twice
    "http://127.0.0.1:9/v1?api-version=1;token=secret",  # `;` separates parameters for some servers
    "http://127.0.0.1:9/v1;jsessionid=secret",  # a path parameter
    "http://127.0.0.1:9/v1#access_token=secret",  # a fragment: never sent, yet recorded
    "http://127.0.0.1:9/v1#secret",
    "http://user:secret@127.0.0.1:9/v1",
    "http://secret@127.0.0.1:9/v1",
]


@pytest.mark.parametrize("url", CREDENTIAL_URLS)
def test_a_base_url_with_a_credential_is_refused_saying_where_a_key_goes(url) -> None:
    with pytest.raises(InputError, match="carries credentials") as caught:
        check_base_url(url)
    assert "secret" not in str(caught.value) and "--api-key-env" in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/v1",
        "https://api.example.com/openai/v1?api-version=2024-06-01",
        "http://127.0.0.1:9/v1?side=left&consider=1&deployment=gpt",
        "http://gpu-1.lan:8000/v1/",
    ],
)
def test_a_base_url_without_credentials_is_accepted(url) -> None:
    check_base_url(url)


# --- the key's characters -------------------------------------------------------------------

KEY = "sk-loopback-0123456789abcdef"


@pytest.mark.parametrize(
    ("key", "says"),
    [
        (KEY + "\n", "a line feed (U+000A) at character 29 of 29, its end"),
        (KEY + "\r\n", "a carriage return (U+000D) at character 29 of 30"),
        (" " + KEY, "a space (U+0020) at character 1 of 29, its start"),
        (KEY[:6] + "\u200b" + KEY[6:], "an invisible character (ZERO WIDTH SPACE, U+200B) at character 7 of 29"),
        (KEY[:6] + "\u00a0" + KEY[6:], "a space (NO-BREAK SPACE, U+00A0) at character 7 of 29"),
        (KEY[:6] + "\x07" + KEY[6:], "a control character (U+0007) at character 7 of 29"),
        (KEY[:6] + "\u0456" + KEY[6:], "a character outside ASCII (not shown) at character 7 of 29"),
        (KEY[:6] + "\t" + KEY[6:], "a tab (U+0009) at character 7 of 29"),
    ],
)
def test_a_key_an_http_header_cannot_carry_is_refused_naming_the_variable_not_the_key(monkeypatch, key, says) -> None:
    monkeypatch.setenv("HARNESS_TEST_API_KEY", key)
    with pytest.raises(InputError) as caught:
        check_key("openai:m", "HARNESS_TEST_API_KEY", "http://127.0.0.1:9/v1")
    message = str(caught.value)
    assert says in message and "HARNESS_TEST_API_KEY" in message, message
    assert KEY[3:12] not in message and "\u0456" not in message


def test_a_key_of_printable_ascii_is_accepted(monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_TEST_API_KEY", "sk-A/b+c=d_e.f~g!#$%&'*^`|" + KEY)
    check_key("openai:m", "HARNESS_TEST_API_KEY", None)


@pytest.mark.parametrize(
    "url",
    [
        f"http://127.0.0.1:9/v1/{KEY}",
        f"http://127.0.0.1:9/v1?model=x&user={KEY}",
        f"http://127.0.0.1:9/v1/{KEY.upper()}",
    ],
)
def test_a_base_url_holding_the_key_itself_is_refused(monkeypatch, url) -> None:
    """Whatever the parameter is called: the key's own value is looked for in the URL."""
    monkeypatch.setenv("HARNESS_TEST_API_KEY", KEY)
    with pytest.raises(InputError, match="holds the API key") as caught:
        check_key("openai:m", "HARNESS_TEST_API_KEY", url)
    assert KEY.upper() not in str(caught.value).upper() and "[redacted:HARNESS_TEST_API_KEY]" in str(caught.value)


@pytest.mark.parametrize("name", ["", "1KEY", "MY KEY", "KEY\x1b[2J", "KEY=x", "KEY\n", "KÉY"])
def test_a_key_variable_must_be_an_environment_variable_s_name(name) -> None:
    """The name is printed, recorded and put in every redaction marker: it is a plain name."""
    with pytest.raises(InputError, match="not an environment variable's name") as caught:
        check_key_variable(name)
    assert "\x1b" not in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "_key", "Groq_API_KEY2"])
def test_a_plain_variable_name_is_accepted(name) -> None:
    check_key_variable(name)
