"""Opaque content an emulated provider hands out and reads back (OpenAI's `encrypted_content`).

A provider's compaction item is encrypted: its client cannot read what the summary kept, which is
why the harness records "in view: unknown" after one. The emulator does the same with the
standard library: the text is XORed with a SHA-256 keystream and tagged with an HMAC, then
base64-encoded. This hides the text from a client that does not hold the key and lets the
emulator refuse content a client altered; it is not cryptography to protect secrets with. The
nonce is derived from the text, so the same summary seals to the same bytes and a run reproduces.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

KEY = b"harness-emulate/sealing/v1"  # the emulators' own key: what one seals, another reads
VERSION = b"hs1"
NONCE_BYTES = 16
TAG_BYTES = 16


def _keystream(key: bytes, nonce: bytes, length: int) -> bytes:
    blocks = (hashlib.sha256(key + nonce + n.to_bytes(8, "big")).digest() for n in range((length + 31) // 32))
    return b"".join(blocks)[:length]


def _tag(key: bytes, purpose: str, nonce: bytes, sealed: bytes) -> bytes:
    return hmac.new(key, purpose.encode() + b"\0" + nonce + sealed, hashlib.sha256).digest()[:TAG_BYTES]


def seal(text: str, purpose: str, key: bytes = KEY) -> str:
    """`text` made opaque for `purpose` (e.g. `compaction`): base64 text only `unseal` reads."""
    plain = text.encode()
    nonce = hmac.new(key, purpose.encode() + b"\0" + plain, hashlib.sha256).digest()[:NONCE_BYTES]
    sealed = bytes(a ^ b for a, b in zip(plain, _keystream(key, nonce, len(plain)), strict=True))
    return base64.b64encode(VERSION + nonce + sealed + _tag(key, purpose, nonce, sealed)).decode("ascii")


def unseal(token: str, purpose: str, key: bytes = KEY) -> str | None:
    """The text `seal` made opaque for `purpose`; None when `token` is not such content (altered,
    cut, sealed for another purpose or with another key)."""
    try:
        raw = base64.b64decode(token.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        return None
    head = len(VERSION) + NONCE_BYTES
    if len(raw) < head + TAG_BYTES or not raw.startswith(VERSION):
        return None
    nonce, sealed, tag = raw[len(VERSION) : head], raw[head:-TAG_BYTES], raw[-TAG_BYTES:]
    if not hmac.compare_digest(tag, _tag(key, purpose, nonce, sealed)):
        return None
    plain = bytes(a ^ b for a, b in zip(sealed, _keystream(key, nonce, len(sealed)), strict=True))
    try:
        return plain.decode()
    except UnicodeDecodeError:
        return None
