"""An endpoint's base URL (`--base-url`, or the `OPENAI_BASE_URL` the openai package reads): checked
before anything is sent or written, and shown without secrets.

A base URL must not carry credentials. `http://user:secret@host/v1` made the HTTP client send
`user:secret` as Basic auth instead of the API key, and the URL went into `manifest.json` as
given; a key in the query string (`?api_key=...`) would be recorded the same way. Such a URL is
refused with a message that does not repeat the secret: the key belongs in the environment
variable named by `--api-key-env`, which is sent as a bearer token and never recorded.
"""

from __future__ import annotations

import ipaddress
import os
import re
from urllib.parse import parse_qsl, urlsplit

from harness.base.errors import InputError

# A query parameter whose name contains one of these words holds a credential (api_key,
# access_token, X-Amz-Signature, client_secret, password...); `api-version` does not.
CREDENTIAL_WORDS = re.compile(r"key|token|secret|passw|signature|sig$|auth|credential", re.IGNORECASE)
USERINFO = re.compile(r"^([a-zA-Z][\w+.-]*://)[^/?#]*@")


def check_base_url(url: str | None, option: str = "--base-url") -> None:
    """Raise InputError unless `url` is None or an http(s) URL without credentials."""
    if url is None:
        return
    if not is_http_url(url):
        raise InputError(f"{option} {public_url(url)}: expected an http(s) URL such as http://127.0.0.1:8080/v1")
    if has_credentials(url):
        raise InputError(
            f"{option} {public_url(url)}: the URL carries credentials (user:password@ or a key in the query), "
            "which would be sent instead of the API key and recorded with the run; remove them and put the "
            "key in the environment variable named by --api-key-env (default OPENAI_API_KEY)"
        )


def has_credentials(url: str) -> bool:
    """True when `url` has a `user[:password]@` part or a query parameter named like a credential."""
    parts = urlsplit(url)
    named = any(CREDENTIAL_WORDS.search(name) for name, _ in parse_qsl(parts.query, keep_blank_values=True))
    return "@" in parts.netloc or named


def public_url(url: str | None) -> str | None:
    """`url` without its `user:password@` part and with credential query values replaced by `…`."""
    if not url:
        return url
    shown = USERINFO.sub(r"\1", url)
    return re.sub(
        r"([?&])([^=&#]*)=([^&#]*)", lambda m: f"{m[1]}{m[2]}=…" if CREDENTIAL_WORDS.search(m[2]) else m[0], shown
    )


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


def check_key(name: str, variable: str, base_url: str | None) -> None:
    """Raise InputError when model `name` needs a key that `variable` does not hold: only the OpenAI
    API does (no `--base-url`, no `OPENAI_BASE_URL`); a self-hosted endpoint that wants one answers
    401, and that error names the variable."""
    if os.environ.get(variable) or base_url or os.environ.get("OPENAI_BASE_URL"):
        return
    raise InputError(
        f"{name}: the environment variable {variable} is not set; set it to the API key of the OpenAI API "
        "(or name another variable with --api-key-env, or give --base-url for a self-hosted endpoint)"
    )
