"""An endpoint's base URL (`--base-url`, or the `OPENAI_BASE_URL` the openai package reads) and the
API key sent to it: both checked before anything is sent or written; the URL shown without secrets.

A base URL must not carry credentials. `http://user:secret@host/v1` made the HTTP client send
`user:secret` as Basic auth instead of the API key, and the URL went into `manifest.json` as
given; a key in the query string (`?api_key=...`) would be recorded the same way. Such a URL is
refused with a message that does not repeat the secret: the key belongs in the environment
variable named by `--api-key-env`, which is sent as a bearer token and never recorded. Refused:

- a `user[:password]@` part;
- a query parameter (separated by `&` or `;`), or a path parameter (`/v1;jsessionid=...`), whose
  name, read decoded and case-insensitively without `-`, `_`, `.` and spaces, contains one of
  `CREDENTIAL_PARTS`, ends with one of `CREDENTIAL_ENDINGS`, or is one of `CREDENTIAL_NAMES`;
  `api-version`, `deployment`, `model` are not;
- any fragment (`#access_token=...`): the HTTP client never sends it, so it can only be recorded;
- the key itself, in any form `harness.models.redaction` recognises, anywhere after the host
  (checked where the key is known, by `check_key`).

The key must be one an HTTP header can carry: printable ASCII, no spaces. A trailing line feed
(`echo KEY > file`), a carriage return, a zero-width character copied from a web page fail every
request (or the client itself) otherwise; `check_key` refuses such a key before anything is
sent, naming the variable and the offending character's kind and place, never the key.
"""

from __future__ import annotations

import ipaddress
import os
import re
import unicodedata
from urllib.parse import unquote_plus, urlsplit

from harness.base.errors import InputError
from harness.models.redaction import Redactor

# A parameter holds a credential when its name (lower-case, without - _ . and spaces) contains one of these...
CREDENTIAL_PARTS = (
    "key",  # api_key, apikey, x-api-key, subscription-key, AWSAccessKeyId
    "token",  # access_token, id_token, refresh_token, X-Amz-Security-Token
    "secret",  # client_secret
    "pass",  # pass, password, passwd, passphrase
    "pwd",
    "auth",  # auth, authorization, oauth
    "cred",  # credential, creds, X-Amz-Credential
    "signature",  # X-Amz-Signature, signature
    "session",  # session, sessionid, session_id, jsessionid
    "sessid",  # PHPSESSID
    "cookie",
    "jwt",
    "bearer",
    "hmac",
)
# ...or ends with one of these (short words that also occur inside ordinary ones: `side`, `signal`)...
CREDENTIAL_ENDINGS = ("sig", "sid")
# ...or is one of these.
CREDENTIAL_NAMES = frozenset({"code", "ticket", "otp", "pin", "sas"})
USERINFO = re.compile(r"^([a-zA-Z][\w+.-]*://)[^/?#]*@")
# A parameter, as separator, name, `=` and value: in a query (`a=1&b=2`, some servers also split
# at `;`), and in a path (`/v1;jsessionid=...`).
QUERY_PARAMETER = re.compile(r"(^|[&;])([^=&;]*)(=?)([^&;]*)")
PATH_PARAMETER = re.compile(r"(;)([^=;/]*)(=?)([^;/]*)")
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,255}")  # a POSIX environment variable's name
KEY_ADVICE = "put the key in the environment variable named by --api-key-env (default OPENAI_API_KEY)"


def check_base_url(url: str | None, option: str = "--base-url") -> None:
    """Raise InputError unless `url` is None or an http(s) URL without credentials."""
    if url is None:
        return
    if not is_http_url(url):
        raise InputError(f"{option} {public_url(url)}: expected an http(s) URL such as http://127.0.0.1:8080/v1")
    found = credentials_in(url)
    if found:
        raise InputError(
            f"{option} {public_url(url)}: the URL carries credentials ({found}), which would be sent instead "
            f"of the API key or recorded with the run; remove them and {KEY_ADVICE}"
        )


def credentials_in(url: str) -> str | None:
    """What in `url` is, or may be, a credential (without its value); None when nothing is."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        return "user:password@"
    for where, pattern, text in (("path", PATH_PARAMETER, parts.path), ("query", QUERY_PARAMETER, parts.query)):
        for match in pattern.finditer(text):
            if is_credential_name(match[2]):
                return f"the {where} parameter {_name(match[2])!r}"
    if "#" in url:
        return "a fragment, #…: never sent to the endpoint"
    return None


def is_credential_name(name: str) -> bool:
    """Whether a URL parameter's name (as written: percent-encoded or not) names a credential."""
    word = re.sub(r"[-_.\s]", "", unicodedata.normalize("NFKC", _name(name)).casefold())
    return (
        any(part in word for part in CREDENTIAL_PARTS) or word.endswith(CREDENTIAL_ENDINGS) or word in CREDENTIAL_NAMES
    )


def _name(written: str) -> str:
    """A parameter's name decoded, as often as it was percent-encoded (at most three times)."""
    name = written
    for _ in range(3):
        decoded = unquote_plus(name)
        if decoded == name:
            break
        name = decoded
    return name


def public_url(url: str | None) -> str | None:
    """`url` without its `user:password@` part, credential parameters' values replaced by `…`, and
    its fragment by `#…`."""
    if not url:
        return url
    shown, hash_, _ = USERINFO.sub(r"\1", url).partition("#")
    head, question, query = shown.partition("?")
    return PATH_PARAMETER.sub(_masked, head) + question + QUERY_PARAMETER.sub(_masked, query) + ("#…" if hash_ else "")


def _masked(parameter: re.Match[str]) -> str:
    """A parameter as written, its value replaced by `…` when its name is a credential's."""
    separator, name, equals, _ = parameter.groups()
    return f"{separator}{name}{equals}…" if equals and is_credential_name(name) else parameter[0]


def is_http_url(url: str) -> bool:
    """An http(s) URL with a host and, if any, a numeric port."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError when the port is not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def is_loopback(url: str | None) -> bool:
    """True when `url` names this machine (localhost, 127.0.0.0/8, ::1)."""
    host = urlsplit(url).hostname if url else None
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_key(
    name: str,
    variable: str,
    base_url: str | None,
    provider: str = "the OpenAI API",
    url_variable: str | None = "OPENAI_BASE_URL",
) -> None:
    """Raise InputError when model `name` needs a key that `variable` does not hold (only the
    provider's own API does: no `--base-url`, no `url_variable` set (the openai package reads
    `OPENAI_BASE_URL`; None: the client reads no such variable); a self-hosted endpoint that wants
    one answers 401, and that error names the variable), when the key it holds cannot be sent in
    an HTTP header, or when `base_url` (or `url_variable`) holds it."""
    env_url = os.environ.get(url_variable) if url_variable else None
    key = os.environ.get(variable)
    if key:
        check_key_text(variable, key)
        for option, url in (("--base-url", base_url), (url_variable, env_url)):
            if url and _holds_key(url, key, variable):
                shown = Redactor(key, variable).text(public_url(url) or "")
                raise InputError(
                    f"{option} {shown}: the URL holds the API key from {variable}, and would be recorded "
                    f"with the run; remove it: the key is sent from the variable as a bearer token"
                )
        return
    if base_url or env_url:
        return
    raise InputError(
        f"{name}: the environment variable {variable} is not set; set it to the API key of {provider} "
        "(or name another variable with --api-key-env, or give --base-url for a self-hosted endpoint)"
    )


def check_key_variable(name: str, option: str = "--api-key-env") -> None:
    """Raise InputError unless `name` is an environment variable's name: it is printed, recorded in
    the manifest and written into every `[redacted:NAME]` marker."""
    if not VARIABLE_NAME.fullmatch(name):
        raise InputError(
            f"{option} {name!a}: not an environment variable's name; use letters, digits and _ (not first a "
            "digit), e.g. OPENAI_API_KEY"
        )


def check_key_text(variable: str, key: str) -> None:
    """Raise InputError, naming `variable` and never the key, unless `key` is printable ASCII without
    spaces (what an HTTP header carries as a bearer token)."""
    for index, c in enumerate(key):
        if "!" <= c <= "~":
            continue
        place = ", its start" if index == 0 else ", its end" if index == len(key) - 1 else ""
        raise InputError(
            f"{variable}: the API key in this variable has {_kind(c)} at character {index + 1} of {len(key)}"
            f"{place}; a key is printable ASCII without spaces (an HTTP header cannot carry it otherwise): "
            "set the variable again without it"
        )


def _kind(c: str) -> str:
    """What a character a key cannot hold is, shown without revealing a character of the key: a
    letter outside ASCII (a look-alike typed in place of the key's own) is not named."""
    named = {"\n": "a line feed", "\r": "a carriage return", "\t": "a tab", " ": "a space"}
    code = f"U+{ord(c):04X}"
    if c in named:
        return f"{named[c]} ({code})"
    category = unicodedata.category(c)
    name = unicodedata.name(c, "")
    if category == "Cc":
        return f"a control character ({code})"
    if category.startswith("Z"):
        return f"a space ({name}, {code})"
    if category in ("Cf", "Mn", "Me") or not c.isprintable():
        return f"an invisible character ({name or 'unnamed'}, {code})"
    return "a character outside ASCII (not shown)"


def _holds_key(url: str, key: str, variable: str) -> bool:
    """Whether the part of `url` after its host holds `key` (in any form redaction recognises)."""
    parts = urlsplit(url)
    after_host = url[url.find(parts.netloc) + len(parts.netloc) :] if parts.netloc else url
    userinfo = parts.netloc.rpartition("@")[0]
    redactor = Redactor(key, variable)
    return any(redactor.text(text) != text for text in (after_host, userinfo) if text)
