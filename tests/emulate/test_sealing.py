"""Sealed content: opaque to a client, read back by any emulator, refused once altered."""

from __future__ import annotations

import base64

import pytest

from harness.emulate.sealing import seal, unseal

SUMMARY = "database=Billing\nNever truncate the orders table."


def test_sealed_text_is_read_back_and_the_same_text_seals_the_same_way() -> None:
    sealed = seal(SUMMARY, "compaction")
    assert unseal(sealed, "compaction") == SUMMARY
    assert seal(SUMMARY, "compaction") == sealed  # a run reproduces
    assert unseal(seal("", "compaction"), "compaction") == ""


def test_a_client_cannot_read_the_sealed_text() -> None:
    sealed = seal(SUMMARY, "compaction")
    assert "Billing" not in sealed and b"Billing" not in base64.b64decode(sealed)


@pytest.mark.parametrize(
    "altered",
    [
        lambda s: s[:-6] + ("AAAAAA" if not s.endswith("AAAAAA") else "BBBBBB"),  # a changed tag
        lambda s: s[:20],  # cut short
        lambda s: "not base64 at all!",
        lambda s: base64.b64encode(b"hs1" + base64.b64decode(s)[3:-1]).decode(),  # a byte removed
    ],
)
def test_altered_content_is_not_read(altered: object) -> None:
    assert unseal(altered(seal(SUMMARY, "compaction")), "compaction") is None  # type: ignore[operator]


def test_content_sealed_for_one_purpose_or_key_is_not_read_for_another() -> None:
    assert unseal(seal(SUMMARY, "compaction"), "reasoning") is None
    assert unseal(seal(SUMMARY, "compaction", key=b"another"), "compaction") is None
